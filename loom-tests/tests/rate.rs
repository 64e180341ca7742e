//! Every interleaving (up to `LOOM_MAX_PREEMPTIONS`) of small scenarios on
//! one circuit under the `rate` policy (SPEC §9's concurrency contract),
//! through the public API, on a mock clock.
#![cfg(fuse_loom)]

use std::time::Duration;

use fuse_breaker::{Config, Fuse, State, config::Policy};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use loom::thread;

const OPEN: Duration = Duration::from_secs(30);
/// Bucket width: a window of two buckets of 100 ns.
const WIDTH: Duration = Duration::from_nanos(100);

fn rate(minimum: u32, percent: u32) -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_window(WIDTH * 2)
        .window_buckets(2)
        .minimum_calls(minimum)
        .failure_rate(percent)
        .half_open_probes(1)
        .open_duration(OPEN)
        .build()
        .expect("a valid configuration")
}

/// Runs `model` under every interleaving with at most two preemptions
/// (each model reads every cell of every lane: three preemptions take
/// minutes).
fn model(model: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(model);
}

fn circuit(config: Config) -> (Arc<Fuse>, std::sync::Arc<quanta::Mock>) {
    let (clock, mock) = quanta::Clock::mock();
    let fuse = Fuse::builder("loom").config(config).clock(clock).build();
    (Arc::new(fuse), mock)
}

/// 1. Verdicts racing across a bucket boundary: thread A succeeds in bucket
///    0, moves the clock to bucket 3 (bucket 0 leaves the two-bucket
///    window) and succeeds again, which moves its lane's cell of bucket 0
///    on to bucket 3; thread B fails at whatever time it reads. Minimum 2
///    calls, rate 50 %. Every end is one that some sequential order of the
///    four events gives: closed with A's second success alone in the
///    window (B before A's first success, or B's evaluation at bucket 3
///    after A's lane reached it), open (B with A's first or second
///    success), or closed with A's second success and B's failure (B in
///    bucket 3 before A's second success). A verdict lost from a live
///    bucket, or counted twice, gives another end.
#[test]
fn verdicts_racing_across_a_bucket_boundary_are_counted_once() {
    model(|| {
        let (fuse, mock) = circuit(rate(2, 50));
        let a = {
            let (fuse, mock) = (fuse.clone(), mock.clone());
            thread::spawn(move || {
                if let Ok(permit) = fuse.try_acquire() {
                    permit.success();
                }
                mock.increment(WIDTH * 3);
                if let Ok(permit) = fuse.try_acquire() {
                    permit.success();
                }
            })
        };
        let b = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                if let Ok(permit) = fuse.try_acquire() {
                    permit.failure();
                }
            })
        };
        a.join().unwrap();
        b.join().unwrap();
        let snap = fuse.snapshot();
        match (snap.state, snap.calls, snap.failed) {
            (State::Closed, 1, 0) | (State::Open, 0, 0) | (State::Closed, 2, 1) => {}
            _ => panic!("no sequential order ends in {snap:?}"),
        }
    });
}

/// 2. Two failures that together reach the rate (minimum 2 calls, rate
///    100 %): exactly one of them opens the circuit (one transition is
///    reported), and it is open when the later of the two returns.
#[test]
fn two_failures_that_reach_the_rate_together_open_the_circuit_once() {
    model(|| {
        let (fuse, _mock) = circuit(rate(2, 100));
        // Listeners run outside the modelled atomics: a plain counter,
        // read after the threads are joined.
        let openings = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counted = openings.clone();
        fuse.on_transition(move |transition: &fuse_breaker::events::Transition| {
            if transition.to == State::Open {
                counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
        let finished = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|_| {
                let (fuse, finished) = (fuse.clone(), finished.clone());
                thread::spawn(move || {
                    let permit = fuse.try_acquire().expect("closed until the second failure");
                    permit.failure();
                    if finished.fetch_add(1, SeqCst) == 1 {
                        assert_eq!(fuse.state(), State::Open, "the later failure returned");
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert_eq!(fuse.state(), State::Open);
        assert_eq!(openings.load(std::sync::atomic::Ordering::SeqCst), 1);
    });
}

/// 3. A success racing the opening: the success's permit is of the closed
///    epoch that a failure (minimum 1, rate 100 %) ends. Either the
///    success counts first (the failure is then 1 of 2, below the rate,
///    and the circuit stays closed with both in its window), or the
///    failure opens the circuit and the success, of a past epoch, changes
///    nothing: the window of the closed epoch after the probe holds only
///    what that epoch recorded.
#[test]
fn a_success_of_an_epoch_that_ended_changes_nothing() {
    model(|| {
        let (fuse, mock) = circuit(rate(1, 100));
        let early = fuse.try_acquire_owned().expect("closed");
        let failing = {
            let fuse = fuse.clone();
            thread::spawn(move || fuse.try_acquire().expect("closed").failure())
        };
        let succeeding = thread::spawn(move || early.success());
        failing.join().unwrap();
        succeeding.join().unwrap();
        let snap = fuse.snapshot();
        match snap.state {
            State::Closed => assert_eq!((snap.calls, snap.failed), (2, 1), "{snap:?}"),
            State::Open => {
                mock.increment(OPEN);
                fuse.try_acquire().expect("the probe").success();
                let closed = fuse.snapshot();
                assert_eq!(closed.state, State::Closed);
                assert_eq!(closed.calls, 0, "the late success is stale: {closed:?}");
            }
            State::HalfOpen => panic!("no cooldown passed: {snap:?}"),
        }
    });
}

/// 4. A snapshot read while a thread adds a quick success and then a slow
///    failure to its cell never shows a slow failure without its failure
///    and its slowness, nor either without its call (resilience4j's slow
///    calls by kind are read from these counts); once the thread is done
///    it shows both calls.
#[test]
fn a_snapshot_never_shows_a_slow_failure_without_its_counts() {
    model(|| {
        let config = Config::builder()
            .policy(Policy::Rate)
            .failure_window(WIDTH * 2)
            .window_buckets(2)
            .minimum_calls(10)
            .slow_call_duration(WIDTH / 2)
            .build()
            .expect("a valid configuration");
        let (fuse, mock) = circuit(config);
        let writer = {
            let fuse = fuse.clone();
            thread::spawn(move || {
                fuse.try_acquire().expect("closed").success();
                let permit = fuse.try_acquire().expect("closed");
                mock.increment(WIDTH * 3 / 5);
                permit.failure();
            })
        };
        for _ in 0..2 {
            let snap = fuse.snapshot();
            let slow_failed = snap.slow_failed.expect("an in-process window");
            assert!(
                slow_failed <= snap.failed.min(snap.slow)
                    && snap.failed.max(snap.slow) <= snap.calls
                    && snap.calls <= 2,
                "counts no order of the writer's stores gives: {snap:?}"
            );
        }
        writer.join().unwrap();
        let snap = fuse.snapshot();
        assert_eq!(
            (snap.calls, snap.failed, snap.slow, snap.slow_failed),
            (2, 1, 1, Some(1))
        );
    });
}
