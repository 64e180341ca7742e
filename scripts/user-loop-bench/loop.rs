//! The closed and open paths in a user's own loop, for this checkout and
//! earlier revisions of the crate in one criterion run (see
//! `scripts/user-loop`). `versions!` names each version's crate; the script
//! writes that line.

use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};

type E = io::Error;

// `versions!()`, written by the script: `cases!("name" => crate, ...)`.
include!("versions.rs");

fn looped<R>(n: u64, mut one: impl FnMut() -> R) -> Duration {
    let start = Instant::now();
    for _ in 0..n {
        black_box(one());
    }
    start.elapsed()
}

/// Two threads after a barrier; the slower thread's time.
fn two_threads(n: u64, one: &(impl Fn() + Sync)) -> Duration {
    let barrier = Barrier::new(2);
    std::thread::scope(|s| {
        let threads: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = Instant::now();
                    for _ in 0..n {
                        one();
                    }
                    start.elapsed()
                })
            })
            .collect();
        threads.into_iter().map(|t| t.join().unwrap()).max().unwrap()
    })
}

macro_rules! cases {
    ($($name:literal => $krate:ident),* $(,)?) => {
        fn closed(c: &mut Criterion) {
            let mut g = c.benchmark_group("closed_run_with");
            g.bench_function("baseline/closure", |b| b.iter_custom(|n| looped(n, || Ok::<u64, E>(black_box(1)))));
            let word = AtomicU64::new(0);
            g.bench_function("baseline/closure_2_loads", |b| b.iter_custom(|n| looped(n, || {
                let before = word.load(Ordering::Acquire);
                let out = Ok::<u64, E>(black_box(1));
                black_box((before, word.load(Ordering::Acquire)));
                out
            })));
            $(
                let fuse = $krate::Fuse::new("bench", $krate::Config::default());
                g.bench_function($name, |b| b.iter_custom(|n| looped(n, || fuse.run_with(|| Ok::<u64, E>(black_box(1)), |_| true, |_| true))));
            )*
            g.finish();
        }

        fn threads(c: &mut Criterion) {
            let mut g = c.benchmark_group("closed_run_with_2_threads");
            $(
                let fuse = Arc::new($krate::Fuse::new("bench", $krate::Config::default()));
                g.bench_function($name, |b| b.iter_custom(|n| two_threads(n, &|| {
                    let _ = black_box(fuse.run_with(|| Ok::<u64, E>(black_box(1)), |_| true, |_| true));
                })));
            )*
            g.finish();
        }

        fn open(c: &mut Criterion) {
            let mut g = c.benchmark_group("open_run_with");
            let long = Duration::from_secs(3600);
            $(
                let config = $krate::Config::builder().open_duration(long).build().unwrap();
                let fuse = $krate::Fuse::new("bench", config.clone());
                fuse.force_open();
                g.bench_function($name, |b| b.iter_custom(|n| looped(n, || fuse.run_with(|| Ok::<u64, E>(black_box(1)), |_| true, |_| true))));
                let coarse = $krate::Fuse::builder("bench").config(config).coarse_clock(true).build();
                coarse.force_open();
                g.bench_function(concat!($name, "/coarse"), |b| b.iter_custom(|n| looped(n, || coarse.run_with(|| Ok::<u64, E>(black_box(1)), |_| true, |_| true))));
            )*
            g.finish();
        }
    };
}

versions!();

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .without_plots();
    targets = closed, threads, open
}
criterion_main!(benches);
