//! Live settings (SPEC §12): a circuit whose settings were replaced while
//! it ran, beside one built with them, on the three paths a user's call
//! meets most (a closed success, an open rejection, a counted failure),
//! in one group so that one run compares them.

use std::time::Duration;

use criterion::Criterion;
use fuse_breaker::{Config, Fuse};

use super::cases::{assert_rejects, bench_calls, fuse_config, still_closed};
use super::{fail, succeed};

pub(crate) fn reconfigured(c: &mut Criterion) {
    let mut group = c.benchmark_group("reconfigured");
    // A closed success: built with the defaults, or raised to a threshold
    // above its ring (grown) with another open duration.
    let raised = Config::builder()
        .failure_threshold(100)
        .open_duration(Duration::from_mins(1))
        .build()
        .expect("config");
    let built = Fuse::new("success-built", raised.clone());
    bench_calls(
        &mut group,
        "closed_success/built",
        &built,
        succeed,
        still_closed("built"),
    );
    let changed = Fuse::new("success-changed", Config::default());
    changed.reconfigure(raised).expect("in place");
    bench_calls(
        &mut group,
        "closed_success/reconfigured",
        &changed,
        succeed,
        still_closed("changed"),
    );
    // An open rejection.
    let force = |b: &mut &Fuse| {
        b.force_open();
        assert_rejects(b, "fuse");
    };
    let built = Fuse::new("open-built", fuse_config().build().expect("config"));
    bench_calls(&mut group, "open_rejected/built", &built, succeed, force);
    let changed = Fuse::new("open-changed", Config::default());
    changed
        .reconfigure(fuse_config().build().expect("config"))
        .expect("in place");
    bench_calls(
        &mut group,
        "open_rejected/reconfigured",
        &changed,
        succeed,
        force,
    );
    // A counted failure that never trips (threshold 4096, window 1 ns),
    // built so or raised from the default threshold (its ring grown from
    // 8 to 4096).
    let never = Config::builder()
        .failure_threshold(fuse_breaker::config::MAX_FAILURE_THRESHOLD)
        .failure_window(Duration::from_nanos(1))
        .build()
        .expect("config");
    let built = Fuse::new("failure-built", never.clone());
    bench_calls(
        &mut group,
        "closed_failure/built",
        &built,
        fail,
        still_closed("built"),
    );
    let changed = Fuse::new("failure-changed", Config::default());
    changed.reconfigure(never).expect("in place");
    bench_calls(
        &mut group,
        "closed_failure/reconfigured",
        &changed,
        fail,
        still_closed("changed"),
    );
    group.finish();
}
