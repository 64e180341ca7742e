//! The hot paths as plain loops, for counting instructions under valgrind's
//! callgrind (`scripts/instructions` runs each case at two lengths and
//! divides the difference, so everything outside the loop cancels out).
//! Not a criterion bench: `instructions CASE CALLS` runs `CALLS` calls of
//! one case and exits.
//!
//! Each call is what a user's loop does: the whole result through
//! `black_box`, on the real clock unless the case needs a mock one.

use std::hint::black_box;
use std::io;
use std::time::Duration;

use fuse_breaker::{Config, Fuse};

#[path = "compare/metered.rs"]
mod metered;

/// The call the closed cases protect.
#[allow(clippy::unnecessary_wraps)] // a protected call's shape
fn succeed() -> Result<u64, io::Error> {
    Ok(black_box(1))
}

/// A circuit that never opens however many calls fail: the largest
/// threshold and a window of 1 ns, so every earlier failure is out of the
/// window when the next one is recorded.
fn never_trips() -> Config {
    Config::builder()
        .failure_threshold(fuse_breaker::config::MAX_FAILURE_THRESHOLD)
        .failure_window(Duration::from_nanos(1))
        .build()
        .expect("a valid configuration")
}

/// A circuit of `builder` with one probe on a mock clock, opened and
/// closed again by its probe: its ramp (SPEC §11) starts now.
fn ramping(
    builder: fuse_breaker::config::ConfigBuilder,
) -> (Fuse, std::sync::Arc<fuse_breaker::quanta::Mock>) {
    let (clock, mock) = fuse_breaker::quanta::Clock::mock();
    let config = builder
        .half_open_probes(1)
        .build()
        .expect("a valid configuration");
    let fuse = Fuse::builder("bench").clock(clock).config(config).build();
    fuse.force_open();
    mock.increment(Duration::from_secs(30));
    if let Ok(probe) = fuse.try_acquire() {
        probe.success();
    }
    (fuse, mock)
}

/// One case: its name, and the loop that makes that many calls.
type Case = (&'static str, fn(u64));

/// The cases.
const CASES: &[Case] = &[
    ("bare_closure", |calls| {
        for _ in 0..calls {
            let _ = black_box(succeed());
        }
    }),
    ("closed_permit", |calls| {
        let fuse = Fuse::new("bench", Config::default());
        for _ in 0..calls {
            if let Ok(permit) = black_box(fuse.try_acquire()) {
                permit.success();
            }
        }
    }),
    ("closed_run_with", |calls| {
        let fuse = Fuse::new("bench", Config::default());
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("throttle_closed_run_with", |calls| {
        // SPEC §11: a `count` circuit that throttles, sheds nothing (every
        // call succeeds): one more load to admit, an accept added to this
        // thread's lane of the throttle's window.
        let config = Config::builder().throttle_k(2.0).build();
        let fuse = Fuse::new("bench", config.expect("a valid configuration"));
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("ramp_over_closed_run_with", |calls| {
        // SPEC §11: a circuit with `ramp_up` whose ramp is over (found
        // over and cleared by the first admission after it): the closed
        // path of any circuit.
        let (fuse, mock) = ramping(Config::builder().ramp_up(Duration::from_secs(1)));
        mock.increment(Duration::from_secs(1));
        drop(fuse.try_acquire());
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("ramp_shed", |calls| {
        // SPEC §11: a ramp at its floor of 1 %, at its start: 99 calls in
        // 100 shed (the ramp's start and the clock read, the draw).
        let builder = Config::builder()
            .ramp_up(Duration::from_hours(1))
            .ramp_up_floor(1);
        let (fuse, _mock) = ramping(builder);
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("rate_closed_run_with", |calls| {
        // The `rate` policy's closed success: a call added to this
        // thread's lane of the window.
        let config = Config::builder()
            .policy(fuse_breaker::config::Policy::Rate)
            .build();
        let fuse = Fuse::new("bench", config.expect("a valid configuration"));
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("rate_throttle_closed_run_with", |calls| {
        // SPEC §11 under `rate`: a throttling `rate` circuit that sheds
        // nothing; its throttle reads the `rate` window, so a success is
        // counted once, as `rate_closed_run_with`'s is.
        let config = Config::builder()
            .policy(fuse_breaker::config::Policy::Rate)
            .throttle_k(2.0)
            .build();
        let fuse = Fuse::new("bench", config.expect("a valid configuration"));
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("rate_counted_failure", |calls| {
        // Every call a counted failure on a `rate` circuit the minimum
        // keeps closed, re-closed before the window could ever hold it.
        let config = Config::builder()
            .policy(fuse_breaker::config::Policy::Rate)
            .minimum_calls(fuse_breaker::config::MAX_MINIMUM_CALLS)
            .build();
        let fuse = Fuse::new("bench", config.expect("a valid configuration"));
        let chunk = u64::from(fuse_breaker::config::MAX_MINIMUM_CALLS) - 1;
        for call in 0..calls {
            if call % chunk == 0 {
                fuse.force_closed();
            }
            let _ = black_box(fuse.run_with(
                || Err::<u64, io::Error>(io::ErrorKind::TimedOut.into()),
                |_| true,
                |_| true,
            ));
        }
    }),
    ("open_rejected", |calls| {
        let config = Config::builder()
            .open_duration(Duration::from_hours(1))
            .build();
        let fuse = Fuse::new("bench", config.expect("a valid configuration"));
        fuse.force_open();
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("open_rejected_coarse", |calls| {
        // The clock read coarsely: one load of a time an upkeep thread
        // keeps (whose own instructions, a few per millisecond, are
        // counted too).
        let config = Config::builder()
            .open_duration(Duration::from_hours(1))
            .build();
        let fuse = Fuse::builder("bench")
            .config(config.expect("a valid configuration"))
            .coarse_clock(true)
            .build();
        fuse.force_open();
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
        }
    }),
    ("counted_failure", |calls| {
        let fuse = Fuse::new("bench", never_trips());
        for _ in 0..calls {
            let _ = black_box(fuse.run_with(
                || Err::<u64, io::Error>(io::ErrorKind::TimedOut.into()),
                |_| true,
                |_| true,
            ));
        }
    }),
    ("half_open_cycle", |calls| {
        // One probe closes the circuit and one failure opens it again: a
        // whole recovery per call, on a mock clock moved past the cooldown.
        let (clock, mock) = fuse_breaker::quanta::Clock::mock();
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .build()
            .expect("a valid configuration");
        let fuse = Fuse::builder("bench").config(config).clock(clock).build();
        let cooldown = fuse.config().open_duration();
        fuse.force_open();
        for _ in 0..calls {
            mock.increment(cooldown);
            let _ = black_box(fuse.run_with(succeed, |_| true, |_| true));
            let _ = black_box(fuse.run_with(
                || Err::<u64, io::Error>(io::ErrorKind::TimedOut.into()),
                |_| true,
                |_| true,
            ));
        }
    }),
];

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(case), Some(calls)) = (args.next(), args.next()) else {
        eprintln!("usage: instructions CASE CALLS (cases: {})", names());
        std::process::exit(2);
    };
    let Ok(calls) = calls.parse::<u64>() else {
        eprintln!("instructions: CALLS must be a whole number, not {calls:?}");
        std::process::exit(2);
    };
    let Some((_, run)) = CASES.iter().find(|(name, _)| *name == case) else {
        eprintln!("instructions: no case {case:?} (cases: {})", names());
        std::process::exit(2);
    };
    let _ = metered::install();
    run(calls);
}

fn names() -> String {
    CASES
        .iter()
        .map(|(name, _)| *name)
        .collect::<Vec<_>>()
        .join(", ")
}
