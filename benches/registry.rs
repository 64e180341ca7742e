//! What a registry costs as it grows: looking up an existing circuit and
//! creating a new one, with 1,000, 100,000 and 1,000,000 circuits in it,
//! and the resident memory per circuit.
//!
//! ```sh
//! cargo bench --bench registry
//! ```
//!
//! - `registry_lookup/N`: `Registry::get` of an existing name, cycling
//!   through all N (the `Arc` it returns is dropped at once).
//! - `registry_create/N`: `Registry::get` of a name never seen, each
//!   iteration a new circuit; the registry holds N circuits when a sample
//!   starts and grows by the circuits the samples create.
//!
//! Before the groups run, each registry's resident memory (from
//! `/proc/self/status`) is printed as bytes per circuit.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion};
use fuse_breaker::{Config, Registry};

const SIZES: [usize; 3] = [1_000, 100_000, 1_000_000];

fn name(n: usize) -> String {
    format!("dependency-{n}")
}

/// This process's resident memory in bytes (Linux), or `None`.
fn resident() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// A registry with `n` circuits, and the resident bytes they added.
fn filled(n: usize) -> (Registry, Option<u64>) {
    let before = resident();
    // Room for every circuit the groups make (the default capacity is
    // 10,000).
    let registry = Registry::builder()
        .defaults(Config::default())
        .max_circuits(4 * n.max(100_000))
        .build()
        .expect("a valid registry");
    for i in 0..n {
        registry.get(&name(i));
    }
    let added = before.zip(resident()).map(|(a, b)| b.saturating_sub(a));
    (registry, added)
}

fn registry(c: &mut Criterion) {
    let registries: Vec<(usize, Registry)> = SIZES
        .iter()
        .map(|&n| {
            let started = Instant::now();
            let (registry, added) = filled(n);
            let per = added.map_or_else(|| "unknown".to_owned(), |b| (b / n as u64).to_string());
            println!(
                "{n} circuits: created in {:?}, {per} resident bytes per circuit",
                started.elapsed()
            );
            (n, registry)
        })
        .collect();

    let mut lookup = c.benchmark_group("registry_lookup");
    for (n, registry) in &registries {
        let names: Vec<String> = (0..*n).map(name).collect();
        let mut next = 0;
        lookup.bench_with_input(BenchmarkId::from_parameter(n), &names, |b, names| {
            b.iter(|| {
                next = (next + 1) % names.len();
                black_box(registry.get(&names[next]))
            });
        });
    }
    lookup.finish();

    let mut create = c.benchmark_group("registry_create");
    for (n, registry) in &registries {
        let mut fresh = *n;
        create.bench_with_input(BenchmarkId::from_parameter(n), registry, |b, registry| {
            b.iter_custom(|iters| {
                let count = usize::try_from(iters).expect("iterations fit in usize");
                let names: Vec<String> = (fresh..fresh + count).map(name).collect();
                fresh += count;
                let start = Instant::now();
                for name in &names {
                    black_box(registry.get(name));
                }
                start.elapsed()
            });
        });
    }
    create.finish();
}

fn main() {
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20)
        .configure_from_args();
    registry(&mut criterion);
    criterion.final_summary();
}
