//! How long an opening takes to reach every other process's mirror: the
//! opener's times matched to the watchers', and their percentiles.

/// The delays of a spread row, in nanoseconds.
pub(crate) struct Spread {
    /// Per opening every watcher saw: until the last of them saw it.
    pub(crate) all: Vec<u64>,
    /// Per opening and watcher that saw it: until it did.
    pub(crate) each: Vec<u64>,
    /// Openings some watcher did not see while they lasted.
    pub(crate) missed: usize,
}

/// Matches each time in `seen` (one list per watcher, each in the order
/// seen) to the last opening in `opened` begun at or before it: the
/// opening it saw, if it saw it before the next one began.
pub(crate) fn spread(opened: &[u64], seen: &[Vec<u64>]) -> Spread {
    let mut result = Spread {
        all: Vec::with_capacity(opened.len()),
        each: Vec::new(),
        missed: 0,
    };
    for (i, &at) in opened.iter().enumerate() {
        let until = opened.get(i + 1).copied().unwrap_or(u64::MAX);
        let mut last = Some(0);
        for times in seen {
            let first = times.partition_point(|&t| t < at);
            match times.get(first).filter(|&&t| t < until) {
                Some(&t) => {
                    result.each.push(t - at);
                    last = last.map(|last: u64| last.max(t - at));
                }
                None => last = None,
            }
        }
        match last {
            Some(delay) => result.all.push(delay),
            None => result.missed += 1,
        }
    }
    result.all.sort_unstable();
    result.each.sort_unstable();
    result
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

/// The times in a worker's `name=t,t,t` field.
pub(crate) fn times(line: &str, name: &str) -> Vec<u64> {
    crate::field(line, name)
        .unwrap_or_default()
        .split(',')
        .filter_map(|t| t.parse().ok())
        .collect()
}
