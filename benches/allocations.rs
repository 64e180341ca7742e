//! Heap allocations per call, counted by dhat's global allocator: a
//! circuit of this process, and a shared circuit in cached mode (the
//! mirror decides) and in strict mode (a round trip for the permit and one
//! for the verdict), on a `MemoryStore` and, when `FUSE_TEST_REDIS_URL`
//! names a server, on Redis. Counts, not times: the same on any machine for a
//! given build, so it prints them rather than timing anything.
//!
//! ```sh
//! cargo bench --bench allocations --features redis
//! FUSE_TEST_REDIS_URL=redis://127.0.0.1:6379 cargo bench --bench allocations --features redis
//! ```

use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{MemoryStore, SharedFuse, Store};
use fuse_breaker::{Config, Fuse};

#[global_allocator]
static ALLOCATOR: dhat::Alloc = dhat::Alloc;

/// Calls in each measurement, after as many to warm up.
const CALLS: u64 = 1_000;

/// Allocations per call of `call`, over [`CALLS`] calls after a warm-up.
fn per_call(mut call: impl FnMut()) -> f64 {
    for _ in 0..CALLS {
        call();
    }
    let before = dhat::HeapStats::get().total_blocks;
    for _ in 0..CALLS {
        call();
    }
    let made = dhat::HeapStats::get().total_blocks - before;
    #[allow(clippy::cast_precision_loss)] // counts far below 2^52
    let per = made as f64 / CALLS as f64;
    per
}

fn report(case: &str, per: f64) {
    println!("{case:<40} {per:>6.2} allocations per call");
}

/// A shared circuit named `name` on `store`, strict or cached.
fn shared(store: Arc<dyn Store>, name: &str, cached: bool) -> SharedFuse {
    let builder = Fuse::builder(name).store(store);
    if cached {
        builder.cached(Duration::from_mins(1)).build()
    } else {
        builder.build()
    }
}

/// A closed success through `fuse`, on `runtime`.
fn success(runtime: &tokio::runtime::Runtime, fuse: &SharedFuse) {
    let outcome = runtime.block_on(fuse.run_async(async { Ok::<_, std::io::Error>(7_u64) }));
    black_box(outcome.is_ok());
}

fn main() {
    // Counts every allocation; writes no profile.
    let _profiler = dhat::Profiler::builder().testing().build();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");

    let fuse = Fuse::new("allocations", Config::default());
    report(
        "in_process/run",
        per_call(|| {
            black_box(fuse.run(|| Ok::<_, std::io::Error>(7_u64)).is_ok());
        }),
    );

    #[cfg_attr(not(feature = "redis"), allow(unused_mut))]
    let mut stores: Vec<(String, Arc<dyn Store>)> =
        vec![("memory".to_owned(), Arc::new(MemoryStore::new()))];
    #[cfg(feature = "redis")]
    if let Ok(url) = std::env::var("FUSE_TEST_REDIS_URL") {
        let store = runtime
            .block_on(async { fuse_breaker::store::open(&url) })
            .expect("the Redis URL opens");
        stores.push(("redis".to_owned(), store));
    }
    for (name, store) in stores {
        for (mode, cached) in [("cached", true), ("strict", false)] {
            let key = format!("allocations-{mode}-{}", std::process::id());
            let fuse = shared(store.clone(), &key, cached);
            report(
                &format!("{name}/{mode}/run_async_success"),
                per_call(|| success(&runtime, &fuse)),
            );
            runtime
                .block_on(fuse.reset())
                .expect("the store takes the reset");
        }
    }
}
