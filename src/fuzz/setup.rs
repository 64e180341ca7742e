//! What a differential history runs under: a small configuration of
//! either policy decoded from bytes, and the clock advances a history
//! takes, chosen to land on the edges the rules turn on (a window, an open
//! duration, a bucket's edge, a slow call's duration).

use std::time::Duration;

use quanta::Mock;

use crate::Policy;
use crate::config::Config;

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
/// `minimum_calls` 1..=6 and rates on their edges.
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
    builder.build().expect("the decoded configuration is valid")
}

/// Advances the clock by a step the next byte chooses: zero, a few
/// nanoseconds, a window, an open duration, a window and one, up to 2^16
/// or 2^32 nanoseconds, a huge step, to the next bucket edge (`now` a
/// multiple of `failure_window / window_buckets`) or one before it, a slow
/// call's duration or one less.
pub(super) fn advance(mock: &Mock, config: &Config, bytes: &mut Bytes<'_>) {
    let window = config.window_nanos();
    let width = (window / u64::from(config.window_buckets())).max(1);
    let slow = config
        .slow_call_duration()
        .map_or(window, crate::config::nanos);
    let to_edge = width - mock.value() % width;
    let step = match bytes.u8() % 12 {
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
        _ => slow - 1,
    };
    mock.increment(step);
}
