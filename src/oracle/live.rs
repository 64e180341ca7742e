//! §12 in the oracle: a running circuit's settings replaced.

use super::{Oracle, RateSettings, Recovery};
use crate::config::Config;

impl Oracle {
    /// §12: "A running circuit's settings can be replaced ... It keeps its
    /// state, epoch, permits in flight, its current opening ... and its
    /// half-open progress; nothing transitions at the moment of the
    /// change ... a `count` window keeps the failures still inside the new
    /// `failure_window`, the newest first, at most the new
    /// `failure_threshold` - 1 of them". The failures kept are those this circuit counts: it
    /// never needed more than the old threshold of them, so no more than
    /// that comes back. Only settings of the same policy and window shape,
    /// ramp and throttle are given here.
    pub(crate) fn reconfigure(&mut self, config: &Config, now: u64) {
        let fresh = Oracle::new(config);
        // "a changed `policy`, `failure_window` or `window_buckets` under
        // `rate` ... starts an empty window".
        // The settings, not the bucket's width they give: two windows a
        // few nanoseconds apart may have buckets of one width.
        let window_of = |oracle: &Oracle| {
            (oracle.rate.as_ref()).map(|rate: &RateSettings| (oracle.window, rate.buckets))
        };
        if self.rate.is_some() != fresh.rate.is_some() {
            self.failures.clear();
            self.calls.clear();
        } else if window_of(self) != window_of(&fresh) {
            self.calls.clear();
        }
        let old = self.threshold;
        // "still inside": a failure that had left the old window is gone.
        let old_window = self.window;
        self.failures
            .retain(|&t| now.saturating_sub(t) <= old_window);
        self.threshold = fresh.threshold;
        self.window = fresh.window;
        self.open = fresh.open;
        self.probes = fresh.probes;
        self.recovery = Recovery {
            seed: self.recovery.seed,
            ..fresh.recovery
        };
        self.rate = fresh.rate;
        if self.rate.is_none() {
            let keep = old.min(self.threshold - 1);
            let extra = self.failures.len().saturating_sub(keep);
            self.failures.drain(..extra);
        }
    }
}
