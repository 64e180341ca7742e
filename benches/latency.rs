//! Decision latency under a mixed load, and the bytes per circuit.
//!
//! ```sh
//! cargo bench --bench latency            # about 3 s of load
//! FUSE_LATENCY_SECS=10 cargo bench --bench latency
//! ```
//!
//! Not a criterion bench: a plain `main` (`harness = false`).
//!
//! **Footprint.** What a circuit costs, measured: the growth of the
//! process's data segment over many circuits built at once, divided by
//! their number (the handle, the slot with the state word on cache lines of
//! its own, the ring of failure slots, the names, the listeners and the
//! allocator's overhead). Beside it, the ring alone: the threshold rounded
//! up to a power of two, 16 bytes each (a 128-bit atomic). Configurations
//! are stored once per distinct configuration, not per circuit.
//!
//! **Latency.** Two threads share one circuit for `FUSE_LATENCY_SECS`
//! seconds (default 3). Each call is `try_acquire` and then the verdict
//! (`success`, or `failure` for 1 % of the calls, chosen by a per-thread
//! xorshift generator), timed as one span with `quanta::Clock::raw` before
//! and after (the raw counter, scaled to nanoseconds after the fact) and
//! recorded into an HDR histogram, one per thread and kind, merged at the
//! end. The circuit uses the default configuration (threshold 8, window
//! 60 s) and is expected to stay closed: a success clears the failures, so
//! opening would take 8 failures with no success between them, which a 1 %
//! failure rate practically never produces (the rejected calls are counted
//! and printed; they should be 0). The load therefore mixes the three
//! closed paths: a success with no failures (loads only), a failure (ring
//! write and compare-and-swap) and the success that clears it
//! (compare-and-swap). The cost of the timing itself, the same two clock
//! reads around nothing, is measured the same way and printed first.

use std::sync::Barrier;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

use fuse_breaker::{Config, Fuse};
use hdrhistogram::Histogram;

/// One in this many calls fails.
const FAILURE_ONE_IN: u64 = 100;

fn main() {
    footprint();
    println!();
    latency();
}

// --------------------------------------------------------------- footprint

/// The size of the process's data segment (heap and anonymous mappings),
/// in bytes: `VmData` of `/proc/self/status`. Unlike resident memory it
/// counts allocated pages that were never touched (a zeroed ring may be
/// handed out as fresh pages).
fn data_bytes() -> Option<usize> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmData:"))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Heap growth per circuit over enough circuits of this configuration to
/// allocate about 32 MiB; the circuits are kept (returned) so that the next
/// measurement cannot reuse their memory.
fn measured_heap(config: &Config, ring: usize) -> (Option<usize>, Vec<Fuse>) {
    let count = (32 << 20) / (ring + 512);
    let mut circuits = Vec::with_capacity(count);
    let before = data_bytes();
    for n in 0..count {
        circuits.push(Fuse::new(format!("footprint-{n}"), config.clone()));
    }
    let after = data_bytes();
    let per_circuit = before
        .zip(after)
        .map(|(before, after)| after.saturating_sub(before) / count);
    (per_circuit, circuits)
}

fn footprint() {
    println!("## Bytes per circuit");
    println!();
    println!(
        "measured = growth of VmData over many circuits (named footprint-N) / their number, allocator overhead included; size_of::<Fuse>() = {} bytes (a handle)",
        size_of::<Fuse>()
    );
    println!();
    println!("| failure_threshold | ring slots | ring bytes | measured per circuit |");
    println!("| ---: | ---: | ---: | ---: |");
    let mut kept = Vec::new();
    for threshold in [1, 8, 64, 1024, 4096] {
        let config = Config::builder()
            .failure_threshold(threshold)
            .build()
            .expect("valid threshold");
        let slots = threshold.next_power_of_two() as usize;
        let ring = slots * size_of::<u128>();
        let (measured, circuits) = measured_heap(&config, ring);
        kept.push(circuits);
        let measured = measured.map_or_else(|| "n/a".to_owned(), |bytes| bytes.to_string());
        println!("| {threshold} | {slots} | {ring} | {measured} |");
    }
}

// ----------------------------------------------------------------- latency

/// The histograms of one thread: nanoseconds per call.
struct Recorded {
    success: Histogram<u64>,
    failure: Histogram<u64>,
    rejected: u64,
}

fn histogram() -> Histogram<u64> {
    // 1 ns to 10 s, three significant digits.
    Histogram::new_with_bounds(1, 10_000_000_000, 3).expect("histogram bounds")
}

/// A per-thread xorshift64 generator: cheap, and not periodic in the call
/// count the way `i % 100` would be.
fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

/// One thread's load: calls until `stop`, each timed and recorded.
fn load(fuse: &Fuse, clock: &quanta::Clock, seed: u64, stop: &AtomicBool) -> Recorded {
    let mut rng = seed;
    let mut out = Recorded {
        success: histogram(),
        failure: histogram(),
        rejected: 0,
    };
    while !stop.load(Ordering::Relaxed) {
        for _ in 0..256 {
            let fails = xorshift(&mut rng).is_multiple_of(FAILURE_ONE_IN);
            let start = clock.raw();
            let admitted = match fuse.try_acquire() {
                Ok(permit) => {
                    if fails {
                        permit.failure();
                    } else {
                        permit.success();
                    }
                    true
                }
                Err(_) => false,
            };
            let end = clock.raw();
            let nanos = clock.delta_as_nanos(start, end);
            if !admitted {
                out.rejected += 1;
            } else if fails {
                out.failure.saturating_record(nanos);
            } else {
                out.success.saturating_record(nanos);
            }
        }
    }
    out
}

/// The timing alone: two raw clock reads around nothing.
fn timer_overhead(clock: &quanta::Clock, calls: u64) -> Histogram<u64> {
    let mut hist = histogram();
    for _ in 0..calls {
        let start = clock.raw();
        let end = clock.raw();
        hist.saturating_record(clock.delta_as_nanos(start, end));
    }
    hist
}

fn row(name: &str, hist: &Histogram<u64>) {
    let q = |quantile: f64| hist.value_at_quantile(quantile);
    println!(
        "| {name} | {} | {} | {} | {} | {} | {} | {} |",
        hist.len(),
        q(0.5),
        q(0.9),
        q(0.99),
        q(0.999),
        q(0.9999),
        hist.max()
    );
}

fn latency() {
    const THREADS: u64 = 2;
    let secs: f64 = std::env::var("FUSE_LATENCY_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3.0);
    let clock = quanta::Clock::new();
    let fuse = Fuse::new("latency", Config::default());
    let stop = AtomicBool::new(false);
    let barrier = Barrier::new(usize::try_from(THREADS).unwrap_or(2) + 1);

    let overhead = timer_overhead(&clock, 10_000_000);
    let recorded: Vec<Recorded> = thread::scope(|s| {
        let threads: Vec<_> = (0..THREADS)
            .map(|i| {
                let (fuse, clock, stop, barrier) = (&fuse, &clock, &stop, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    load(fuse, clock, 0x9E37_79B9_7F4A_7C15 ^ (i + 1), stop)
                })
            })
            .collect();
        barrier.wait();
        thread::sleep(Duration::from_secs_f64(secs));
        stop.store(true, Ordering::Relaxed);
        threads
            .into_iter()
            .map(|t| t.join().expect("load thread"))
            .collect()
    });

    let mut success = histogram();
    let mut failure = histogram();
    let mut rejected = 0;
    for r in &recorded {
        success.add(&r.success).expect("same bounds");
        failure.add(&r.failure).expect("same bounds");
        rejected += r.rejected;
    }
    let mut all = success.clone();
    all.add(&failure).expect("same bounds");

    println!(
        "## Decision latency: {THREADS} threads, one circuit, {secs} s, 1 call in {FAILURE_ONE_IN} a counted failure"
    );
    println!();
    println!("try_acquire + verdict, ns (timer overhead included; see its own row)");
    println!();
    println!("| calls | count | p50 | p90 | p99 | p99.9 | p99.99 | max |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    row("timer overhead (2 raw reads)", &overhead);
    row("all admitted", &all);
    row("success", &success);
    row("failure", &failure);
    println!();
    println!(
        "rejected calls: {rejected} (the circuit is expected to stay closed); final state: {:?}",
        fuse.state()
    );
}
