//! Fuse with its coarse clock in the two cases where its time must move:
//! its time advances in ticks of a millisecond, not on a mock, so the
//! circuit work is timed and the waits for a tick are not.

use super::{
    Bencher, BenchmarkGroup, Breaker, Config, Duration, Fuse, Instant, State, WallTime, black_box,
    fail, succeed, thread, timed,
};
use crate::cases::fuse_coarse;

/// Failures recorded between two resets of the circuit: one short of the
/// threshold, so that the circuit never opens.
const CHUNK: u64 = fuse_breaker::config::MAX_FAILURE_THRESHOLD as u64 - 1;

/// `closed_failure/fuse_coarse`: counted failures on a closed circuit with
/// the largest threshold and the default 60 s window, in chunks of 4095
/// with a `force_closed` (untimed) between chunks. Every failure is in the
/// window (the precise row's 1 ns window does not work on a clock that
/// moves in ticks), so each chunk records 4095 failures that cannot reach
/// the threshold: the ring slot write and the state-word compare-and-swap,
/// without the in-window count the precise row's full ring adds (one slot
/// read).
pub(crate) fn closed_failure(group: &mut BenchmarkGroup<'_, WallTime>) {
    let config = Config::builder()
        .failure_threshold(fuse_breaker::config::MAX_FAILURE_THRESHOLD)
        .build()
        .expect("config");
    let fuse = fuse_coarse("closed-failure-coarse").config(config).build();
    group.bench_function("fuse_coarse", |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let chunk = left.min(CHUNK);
                fuse.force_closed();
                total += timed(&mut &fuse, fail, chunk);
                assert_eq!(fuse.state(), State::Closed, "fuse_coarse: opened");
                left -= chunk;
            }
            total
        });
    });
}

/// Circuits cycled between two ticks of the coarse clock.
const CIRCUITS: usize = 4096;

/// How long to wait for the coarse time to pass every opening of a round
/// (two ticks).
const TICKS: Duration = Duration::from_millis(2);

/// `half_open_cycle/fuse_coarse`: the cycle of the precise row (threshold
/// 1, one probe) with a cooldown of 1 ns, on 4096 circuits in turn: after a
/// wait of two ticks (untimed) every circuit is due for its probe, and one
/// round times the probe that closes each circuit and the failure that
/// opens it again. A probe that finds its cooldown not over (an upkeep
/// thread late by more than a tick) is retried, and timed.
pub(crate) fn half_open_cycle(group: &mut BenchmarkGroup<'_, WallTime>) {
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_nanos(1))
        .build()
        .expect("config");
    let circuits: Vec<Fuse> = (0..CIRCUITS)
        .map(|n| {
            fuse_coarse(&format!("half-open-coarse-{n}"))
                .config(config.clone())
                .build()
        })
        .collect();
    for fuse in &circuits {
        fuse.force_open();
    }
    group.bench_function("fuse_coarse", |bencher: &mut Bencher<'_>| {
        bencher.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                thread::sleep(TICKS);
                let round =
                    &circuits[..usize::try_from(left).map_or(CIRCUITS, |n| n.min(CIRCUITS))];
                let start = Instant::now();
                for mut fuse in round {
                    while black_box(fuse.call(succeed)).is_none() {
                        std::hint::spin_loop();
                    }
                    black_box(fuse.call(fail));
                }
                total += start.elapsed();
                assert_eq!(round[0].state(), State::Open, "fuse_coarse: not open again");
                left -= round.len() as u64;
            }
            total
        });
    });
}
