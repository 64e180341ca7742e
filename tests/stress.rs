//! Many threads mixing every operation on one circuit, on the real clock,
//! while a checker thread validates every snapshot it reads.
//!
//! Ignored by default; CI runs it in release for a bounded time:
//!
//! ```sh
//! FUSE_STRESS_SECS=20 cargo test --release --test stress -- --ignored --nocapture
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use fuse_breaker::{Config, Fuse, Permit, Snapshot, State};

const THRESHOLD: u32 = 3;
const PROBES: u32 = 2;

/// A small, fast, good-enough generator (xorshift64*), seeded per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The invariants every snapshot must satisfy, whatever races produced it.
fn check(snap: &Snapshot) -> Result<(), String> {
    let fail = |why: &str| Err(format!("{why}: {snap:?}"));
    match snap.state {
        State::Closed => {
            if snap.opened_at.is_some() {
                return fail("closed with an opening time");
            }
            if snap.half_open_successes != 0 || snap.half_open_inflight != 0 {
                return fail("closed with probe counters");
            }
            if snap.failures.len() > THRESHOLD as usize {
                return fail("more failures than the threshold");
            }
            if !snap.failures.is_sorted() {
                return fail("failures not oldest first");
            }
        }
        State::Open => {
            if snap.opened_at.is_none() {
                return fail("open without an opening time");
            }
            if !snap.failures.is_empty() {
                return fail("open with failures");
            }
            if snap.half_open_successes != 0 || snap.half_open_inflight != 0 {
                return fail("open with probe counters");
            }
        }
        State::HalfOpen => {
            if snap.opened_at.is_none() {
                return fail("half-open without an opening time");
            }
            if !snap.failures.is_empty() {
                return fail("half-open with failures");
            }
            if snap.half_open_inflight > PROBES {
                return fail("more probes in flight than allowed");
            }
            if snap.half_open_successes >= PROBES {
                return fail("half-open with enough successes to be closed");
            }
        }
    }
    Ok(())
}

fn worker(fuse: &Fuse, seed: u64, stop: &AtomicBool, ops: &AtomicU64) {
    let mut rng = Rng(seed | 1);
    let mut held: Vec<Permit<'_>> = Vec::new();
    let mut done = 0u64;
    while !stop.load(Relaxed) {
        match rng.below(1000) {
            0..=449 => {
                if let Ok(permit) = fuse.try_acquire() {
                    held.push(permit);
                }
            }
            450..=989 if !held.is_empty() => {
                let index = usize::try_from(rng.below(held.len() as u64)).unwrap_or(0);
                let permit = held.swap_remove(index);
                match rng.below(10) {
                    0..=3 => permit.success(),
                    4..=6 => permit.failure(),
                    7..=8 => permit.ignore(),
                    _ => drop(permit),
                }
            }
            990..=993 => fuse.force_open(),
            994..=997 => fuse.force_closed(),
            998..=999 => fuse.reset(),
            _ => {}
        }
        // Never hold many permits: most calls are short.
        if held.len() > 4 {
            held.swap_remove(0).ignore();
        }
        done += 1;
    }
    ops.fetch_add(done, Relaxed);
}

#[test]
#[ignore = "stress test: run in release with --ignored (FUSE_STRESS_SECS bounds it)"]
fn many_threads_mixing_every_operation_keep_every_snapshot_consistent() {
    let secs = std::env::var("FUSE_STRESS_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2);
    let window = Duration::from_micros(200);
    let config = Config::builder()
        .failure_threshold(THRESHOLD)
        .half_open_probes(PROBES)
        .failure_window(window)
        .open_duration(Duration::from_micros(50))
        .build()
        .expect("a valid configuration");
    let fuse = Fuse::new("stress", config);
    let workers = thread::available_parallelism()
        .map_or(4, |n| n.get() * 2)
        .max(4);
    let stop = AtomicBool::new(false);
    let ops = AtomicU64::new(0);
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut snapshots = 0u64;
    let mut seen = [0u64; 3];

    thread::scope(|s| {
        for seed in 0..workers as u64 {
            let (fuse, stop, ops) = (&fuse, &stop, &ops);
            s.spawn(move || worker(fuse, seed.wrapping_mul(0x9E37_79B9_7F4A_7C15), stop, ops));
        }
        while Instant::now() < deadline {
            let snap = fuse.snapshot();
            if let Err(why) = check(&snap) {
                stop.store(true, Relaxed);
                panic!("{why}");
            }
            seen[snap.state as usize] += 1;
            snapshots += 1;
        }
        stop.store(true, Relaxed);
    });

    // Every permit has ended: nothing is in flight any more.
    let snap = fuse.snapshot();
    check(&snap).unwrap();
    assert_eq!(snap.half_open_inflight, 0, "{snap:?}");
    println!(
        "{workers} workers, {} operations, {snapshots} snapshots checked \
         (closed {}, open {}, half-open {})",
        ops.load(Relaxed),
        seen[0],
        seen[1],
        seen[2]
    );
    assert!(
        seen.iter().all(|&n| n > 0),
        "every state was seen: {seen:?}"
    );
}
