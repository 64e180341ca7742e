//! Adaptive throttling (SPEC §11): over the policy window, `requests`
//! counts the calls that asked while closed (admitted or throttled) and
//! `accepts` the admitted calls whose verdict was a success; a closed
//! circuit sheds `min(max_throttle / 100, max(0, (requests - K * accepts)
//! / (requests + 1)))` of its calls once `requests >= minimum_calls`.

use super::Shed;
use crate::config::Config;

/// The throttle's counts over a window.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct Asked {
    /// Calls that asked while closed: admitted ones with a success or
    /// failure verdict, and throttled ones.
    pub(crate) requests: u64,
    /// Admitted calls whose verdict was a success.
    pub(crate) accepts: u64,
}

/// The share the throttle sheds for `asked`; nothing without `throttle_k`.
pub(crate) fn shed(config: &Config, asked: Asked) -> Shed {
    Shed::of(probability(config, asked))
}

/// The throttling probability for `asked` (SPEC §11's formula).
#[allow(clippy::cast_precision_loss)] // counts: 2^-52 is plenty
pub(crate) fn probability(config: &Config, asked: Asked) -> f64 {
    let Some(k) = config.throttle_k() else {
        return 0.0;
    };
    if asked.requests < u64::from(config.minimum_calls()) {
        return 0.0;
    }
    let requests = asked.requests as f64;
    let excess = requests - k.to_f64() * asked.accepts as f64;
    let max = f64::from(config.max_throttle()) / 100.0;
    (excess / (requests + 1.0)).clamp(0.0, max)
}
