//! Loom models of the concurrency contract of `fuse-breaker` (SPEC §7).
//!
//! The models are in `tests/`, one file per subject (`models.rs`: the
//! state machine, SPEC §3 and §7; `rate.rs`: the `rate` window, §9;
//! `recovery.rs`: backoff and probe timeouts, §10; `graded.rs`: graded
//! admission, §11), and only exist in a loom build:
//!
//! ```sh
//! RUSTFLAGS="--cfg fuse_loom" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p fuse-loom-tests --release
//! ```
//!
//! With `--cfg fuse_loom`, the crate's `sync` module swaps its atomics for
//! loom's, so every interleaving of admissions, verdicts and manual changes
//! of the models is explored (up to the preemption bound).
