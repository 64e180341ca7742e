//! How long an opening takes to reach every other process's mirror, and
//! the percentiles of those delays.

/// The delays of a spread row, in nanoseconds.
#[derive(Default)]
pub(crate) struct Spread {
    /// Per opening: until the last of the other processes saw it.
    pub(crate) all: Vec<u64>,
    /// Per opening and other process: until it saw it.
    pub(crate) each: Vec<u64>,
}

impl Spread {
    /// An opening whose write began at `at`, seen at the times `seen` (one
    /// per other process), all on the system's clock.
    pub(crate) fn add(&mut self, at: u64, seen: &[u64]) {
        let delays = seen.iter().map(|&t| t.saturating_sub(at));
        self.each.extend(delays.clone());
        self.all.push(delays.max().unwrap_or(0));
    }

    /// Sorted, for [`quantile`].
    pub(crate) fn sort(&mut self) {
        self.all.sort_unstable();
        self.each.sort_unstable();
    }
}

/// The `q` quantile of `sorted` (nearest rank), in milliseconds; `-`
/// when empty.
pub(crate) fn quantile(sorted: &[u64], q: f64) -> String {
    if sorted.is_empty() {
        return "-".to_owned();
    }
    #[allow(
        clippy::cast_precision_loss,
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss
    )]
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    #[allow(clippy::cast_precision_loss)]
    let millis = sorted[rank - 1] as f64 / 1e6;
    format!("{millis:.2}")
}
