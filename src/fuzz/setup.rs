//! What a differential history runs under: a small configuration of
//! either policy decoded from bytes, and the clock advances a history
//! takes, chosen to land on the edges the rules turn on (a window, an open
//! duration, a bucket's edge, a slow call's duration, a probe timeout, the
//! longest opening, a ramp-up's end).

use std::time::Duration;

use quanta::Mock;

use crate::config::Config;
use crate::config::Policy;

use super::Bytes;

/// Rates on which a share of a few calls turns (and the bounds).
const RATES: [u32; 8] = [1, 20, 25, 33, 34, 50, 67, 100];

/// A percent: half the time one of [`RATES`], otherwise any of 1..=100.
fn percent(bytes: &mut Bytes<'_>) -> u32 {
    let byte = bytes.u8();
    if byte < 128 {
        RATES[usize::from(byte % 8)]
    } else {
        1 + u32::from(byte % 100)
    }
}

/// A configuration from the first bytes of a history: `count` or `rate`
/// (half each), threshold 1..=5, probes 1..=3, open duration 1 ns to 10 µs;
/// under either policy a `slow_call_duration` two times in three (none
/// else), of 1 ns to twice the window. The window is 1 ns to 10 µs under
/// `count`; under `rate` it is 1..=4 buckets of 1 ns to 2.5 µs each plus a
/// remainder below a bucket (so that the bucket width is truncated), with
/// `minimum_calls` 1..=6 and rates on their edges. Then SPEC §10's
/// settings (see [`recovery`]) and §11's (see [`grading`]).
pub(super) fn config(bytes: &mut Bytes<'_>) -> Config {
    let rate = bytes.u8() % 2 == 1;
    let builder = Config::builder()
        .failure_threshold(1 + u32::from(bytes.u8() % 5))
        .half_open_probes(1 + u32::from(bytes.u8() % 3))
        .open_duration(Duration::from_nanos(1 + u64::from(bytes.u16() % 10_000)));
    let (builder, window) = if rate {
        let buckets = 1 + u32::from(bytes.u8() % 4);
        let width = 1 + u64::from(bytes.u16() % 2_500);
        let window = width * u64::from(buckets) + u64::from(bytes.u8()) % u64::from(buckets);
        let builder = builder
            .policy(Policy::Rate)
            .window_buckets(buckets)
            .minimum_calls(1 + u32::from(bytes.u8() % 6))
            .failure_rate(percent(bytes))
            .slow_call_rate(percent(bytes));
        (builder, window)
    } else {
        (builder, 1 + u64::from(bytes.u16() % 10_000))
    };
    let builder = builder.failure_window(Duration::from_nanos(window));
    let builder = match bytes.u8() % 3 {
        0 => builder,
        _ => builder.slow_call_duration(Duration::from_nanos(
            1 + u64::from(bytes.u16()) % (2 * window),
        )),
    };
    let builder = recovery(builder, bytes);
    grading(builder, bytes, rate)
        .build()
        .expect("the decoded configuration is valid")
}

/// Settings to replace `base`'s while the circuit runs (SPEC §12): a new
/// threshold 1..=5, probes 1..=3 and open duration 1 ns to 10 µs; under
/// `count` without throttling a new window of 1 ns to 10 µs; under `rate`
/// new rates, a new `minimum_calls` without throttling, and a new
/// slow-call duration if it has one. Without throttling, a quarter of
/// the time, another shape too: the other policy, or under `rate` a window
/// of another width (1 ns to 10 µs) and buckets (1..=5), or timing
/// switched. SPEC §10's and §11's settings are kept.
pub(super) fn reconfigured(base: &Config, bytes: &mut Bytes<'_>) -> Config {
    let config = kept_shape(base, bytes);
    if config.throttle_k().is_some() || !bytes.u8().is_multiple_of(4) {
        return config;
    }
    let mut shape = crate::config::Overrides::default();
    // A window of 1 to 5 buckets, each 1 ns to 2 µs wide.
    let window = |shape: &mut crate::config::Overrides, bytes: &mut Bytes<'_>| {
        let buckets = 1 + u32::from(bytes.u8() % 5);
        let width = 1 + u64::from(bytes.u16() % 2_000);
        shape.window_buckets = Some(buckets);
        shape.failure_window = Some(Duration::from_nanos(u64::from(buckets) * width));
    };
    match (config.policy(), bytes.u8() % 3) {
        (Policy::Count, _) => {
            shape.policy = Some(Policy::Rate);
            window(&mut shape, bytes);
            shape.minimum_calls = Some(1 + u32::from(bytes.u8() % 6));
        }
        (Policy::Rate, 0) => shape.policy = Some(Policy::Count),
        (Policy::Rate, 1) => window(&mut shape, bytes),
        (Policy::Rate, _) => {
            shape.slow_call_duration = Some(match config.slow_call_duration() {
                Some(_) => None,
                None => Some(Duration::from_nanos(1 + u64::from(bytes.u16() % 10_000))),
            });
        }
    }
    shape.apply(&config).unwrap_or(config)
}

/// [`reconfigured`]'s settings of the same shape.
fn kept_shape(base: &Config, bytes: &mut Bytes<'_>) -> Config {
    let mut changed = crate::config::Overrides {
        failure_threshold: Some(1 + u32::from(bytes.u8() % 5)),
        half_open_probes: Some(1 + u32::from(bytes.u8() % 3)),
        open_duration: Some(Duration::from_nanos(1 + u64::from(bytes.u16() % 10_000))),
        ..crate::config::Overrides::default()
    };
    let window = base.window_nanos();
    if base.policy() == Policy::Rate {
        // Throttling's share in use is recomputed a bucket at a time, from
        // `minimum_calls` too: kept with the rest of SPEC §11's settings.
        if base.throttle_k().is_none() {
            changed.minimum_calls = Some(1 + u32::from(bytes.u8() % 6));
        }
        changed.failure_rate = Some(percent(bytes));
        changed.slow_call_rate = Some(percent(bytes));
        if base.slow_call_duration().is_some() {
            let slow = 1 + u64::from(bytes.u16()) % (2 * window);
            changed.slow_call_duration = Some(Some(Duration::from_nanos(slow)));
        }
    } else if base.throttle_k().is_none() {
        changed.failure_window = Some(Duration::from_nanos(1 + u64::from(bytes.u16() % 10_000)));
    }
    changed.apply(base).unwrap_or_else(|_| base.clone())
}

/// SPEC §10's settings, half the time: a backoff of 1 to 5.75 in quarters,
/// the longest opening 1 to 8 open durations, a jitter of 0 to 0.8 in
/// fifths, a probe timeout of 1 ns to 10 µs. The defaults otherwise.
fn recovery(
    builder: crate::config::ConfigBuilder,
    bytes: &mut Bytes<'_>,
) -> crate::config::ConfigBuilder {
    if bytes.u8().is_multiple_of(2) {
        return builder;
    }
    let open = builder.clone().build().map_or(1, |c| c.open_nanos());
    builder
        .open_backoff(1.0 + f64::from(bytes.u8() % 20) * 0.25)
        .max_open_duration(Duration::from_nanos(open * (1 + u64::from(bytes.u8() % 8))))
        .open_jitter(f64::from(bytes.u8() % 5) * 0.2)
        .probe_timeout(Duration::from_nanos(1 + u64::from(bytes.u16() % 10_000)))
}

/// SPEC §11's settings: a ramp-up and throttling, a quarter of the
/// histories each, a quarter both, a quarter neither. A ramp lasts 1 ns to
/// four times the longer of the window and the open duration, with a floor
/// of one of [`RATES`] or any percent; throttling's K is 1 to 10 in
/// quarters or in any millionths, its maximum a percent likewise, and
/// under `count` its `minimum_calls` is 1..=6 (as `rate`'s already is) and
/// its window one of 1..=10 buckets half the time (the default 10 else,
/// whose width may round down to nothing and is then 1 ns).
fn grading(
    builder: crate::config::ConfigBuilder,
    bytes: &mut Bytes<'_>,
    rate: bool,
) -> crate::config::ConfigBuilder {
    let choice = bytes.u8();
    let mut builder = builder;
    if choice & 1 != 0 {
        let longest = builder
            .clone()
            .build()
            .map_or(1, |c| c.window_nanos().max(c.open_nanos()));
        builder = builder
            .ramp_up(Duration::from_nanos(
                1 + u64::from(bytes.u16()) % (4 * longest),
            ))
            .ramp_up_floor(percent(bytes));
    }
    if choice & 2 != 0 {
        let byte = bytes.u8();
        let k = if byte < 128 {
            1.0 + f64::from(byte % 37) * 0.25
        } else {
            f64::from(1_000_000 + bytes.u32() % 9_000_001) / 1_000_000.0
        };
        builder = builder.throttle_k(k).max_throttle(percent(bytes));
        if !rate {
            builder = builder.minimum_calls(1 + u32::from(bytes.u8() % 6));
            if choice & 4 != 0 {
                builder = builder.window_buckets(1 + u32::from(bytes.u8() % 10));
            }
        }
    }
    builder
}

/// A hint of the server's for a failure: 0 to about 4 open durations, or
/// beyond any opening.
pub(super) fn hint(config: &Config, bytes: &mut Bytes<'_>) -> u64 {
    match bytes.u8() % 4 {
        0 => u64::MAX / 2,
        choice => config.open_nanos() * u64::from(choice) + u64::from(bytes.u8()),
    }
}

/// Advances the clock by a step the next byte chooses: zero, a few
/// nanoseconds, a window, an open duration, a window and one, up to 2^16
/// or 2^32 nanoseconds, a huge step, to the next bucket edge (`now` a
/// multiple of `failure_window / window_buckets`) or one before it, a slow
/// call's duration or one less, a probe timeout, the longest opening, a
/// ramp-up (the window without one), one less, or a quarter of it.
pub(super) fn advance(mock: &Mock, config: &Config, bytes: &mut Bytes<'_>) {
    let window = config.window_nanos();
    let width = (window / u64::from(config.window_buckets())).max(1);
    let slow = config
        .slow_call_duration()
        .map_or(window, crate::config::nanos);
    let ramp = config.ramp_up().map_or(window, crate::config::nanos);
    let to_edge = width - mock.value() % width;
    let step = match bytes.u8() % 17 {
        0 => 0,
        1 => u64::from(bytes.u8() % 4),
        2 => window,
        3 => config.open_nanos(),
        4 => window + 1,
        5 => u64::from(bytes.u16()),
        6 => u64::from(bytes.u32()),
        7 => u64::from(u32::MAX) << 8,
        8 => to_edge,
        9 => to_edge - 1,
        10 => slow,
        11 => slow - 1,
        12 => config.probe_timeout_nanos(),
        13 => crate::config::nanos(config.max_open_duration()),
        14 => ramp,
        15 => ramp - 1,
        _ => ramp / 4,
    };
    mock.increment(step);
}
