//! Graded admission (SPEC §11), second by second: a ramp after recovery,
//! and an overloaded dependency throttled to about K times what it
//! accepts.
//!
//! Run it with `cargo run --example graded` (add `-- --svg docs/graded.svg`
//! to draw both curves). It simulates 70 s of traffic on a mock clock in a
//! fraction of a second, with this thread's draws seeded, so every run
//! prints the same figures.
//!
//! 1. **Ramp-up.** A dependency is down, the circuit opens, and once the
//!    dependency is back one probe closes it. With `ramp_up` 10 s and a
//!    floor of 10 %, the circuit then admits a growing share of the 1,000
//!    calls a second offered to it: `max(10 %, t / 10 s)`; the rest are
//!    shed at once (an `OpenError` whose `throttled()` is `ramp_up`,
//!    nothing to wait for). The table shows each second's admitted share
//!    beside the rule's.
//! 2. **Adaptive throttling.** A dependency that can serve 200 calls a
//!    second (it fails the rest: overload, not a fault) is offered 1,000 a
//!    second. With `throttle_k` 2, the circuit sheds
//!    `(requests - 2 * accepts) / (requests + 1)` of the calls over its
//!    window (10 s in 1 s buckets), so it lets through about 2 x 200 a
//!    second: enough to keep the dependency busy and to notice when it can
//!    take more, never the whole flood. At 30 s the capacity returns, and
//!    the circuit admits every call again once the window has seen it.
//!    The circuit itself (`rate`, 100 %) never opens: shedding is not
//!    opening.

use std::fmt::Write as _;
use std::time::Duration;

use fuse_breaker::quanta::{Clock, Mock};
use fuse_breaker::{Config, Fuse, Grading, config::Policy};

/// Calls offered each second, one a millisecond.
const OFFERED: u32 = 1_000;

/// One second of traffic on `fuse` from `second`, one call a millisecond;
/// `serve` answers each admitted call (true: a success). The calls
/// admitted, and those shed by `why`.
fn second(
    fuse: &Fuse,
    sim: &Sim,
    second: u64,
    why: Grading,
    mut serve: impl FnMut() -> bool,
) -> (u32, u32) {
    let (mut admitted, mut shed) = (0, 0);
    for ms in 0..u64::from(OFFERED) {
        set(sim, Duration::from_secs(second) + Duration::from_millis(ms));
        match fuse.try_acquire() {
            Ok(permit) if serve() => {
                admitted += 1;
                permit.success();
            }
            Ok(permit) => {
                admitted += 1;
                permit.failure();
            }
            Err(err) => {
                assert_eq!(err.throttled(), Some(why), "{err}");
                shed += 1;
            }
        }
    }
    (admitted, shed)
}

/// A circuit's mock clock and the time it shows.
struct Sim {
    mock: std::sync::Arc<Mock>,
    now: std::cell::Cell<Duration>,
}

/// Moves the mock clock to `t` (it only moves forward here).
fn set(sim: &Sim, t: Duration) {
    sim.mock.increment(t.saturating_sub(sim.now.get()));
    sim.now.set(sim.now.get().max(t));
}

fn circuit(name: &str, config: Config) -> (Fuse, Sim) {
    let (clock, mock) = Clock::mock();
    let sim = Sim {
        mock,
        now: std::cell::Cell::new(Duration::ZERO),
    };
    (Fuse::builder(name).clock(clock).config(config).build(), sim)
}

/// The ramp: (second, admitted share, the rule's share) for each second
/// of it and one after.
fn ramp() -> Vec<(u64, f64, f64)> {
    let config = Config::builder()
        .half_open_probes(1)
        .open_duration(Duration::from_secs(2))
        .ramp_up(Duration::from_secs(10))
        .ramp_up_floor(10)
        .build()
        .expect("a valid configuration");
    let (fuse, sim) = circuit("inventory", config);
    // Down: the circuit opens (forced here; counted failures open it the
    // same way), and at the end of the opening a probe finds the
    // dependency back.
    fuse.force_open();
    set(&sim, Duration::from_secs(2));
    fuse.try_acquire().expect("a probe").success();
    println!("ramp-up: closed at 2 s by its probe; 1,000 calls a second offered");
    println!("  second | admitted | shed | admitted share | max(10 %, t / 10 s)");
    let mut rows = Vec::new();
    for s in 2..14u64 {
        let (admitted, shed) = second(&fuse, &sim, s, Grading::RampUp, || true);
        let share = f64::from(admitted) / f64::from(OFFERED);
        // The rule's mean over the second.
        #[allow(clippy::cast_precision_loss)]
        let rule = (0..1_000)
            .map(|ms| ((s - 2) as f64 + f64::from(ms) / 1_000.0) / 10.0)
            .map(|t: f64| t.clamp(0.10, 1.0))
            .sum::<f64>()
            / 1_000.0;
        println!(
            "  {s:>6} | {admitted:>8} | {shed:>4} | {:>13.1} % | {:>6.1} %",
            share * 100.0,
            rule * 100.0
        );
        rows.push((s, share, rule));
    }
    rows
}

/// The throttle: (second, admitted, accepted) for each second.
fn throttle() -> Vec<(u64, u32, u32)> {
    let config = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(100)
        .failure_window(Duration::from_secs(10))
        .window_buckets(10)
        .throttle_k(2.0)
        .max_throttle(100)
        .build()
        .expect("a valid configuration");
    let (fuse, sim) = circuit("search", config);
    println!();
    println!(
        "adaptive throttling (K = 2): a dependency that serves 200 calls a second until 30 s, \
         then all; 1,000 calls a second offered"
    );
    println!("  second | admitted | accepted | shed | admission in use");
    let mut rows = Vec::new();
    for s in 0..40u64 {
        let capacity = if s < 30 { 200 } else { u32::MAX };
        let mut served = 0;
        let (admitted, shed) = second(&fuse, &sim, s, Grading::Throttle, || {
            served += 1;
            served <= capacity
        });
        let accepted = admitted.min(capacity);
        let shown = fuse.snapshot();
        println!(
            "  {s:>6} | {admitted:>8} | {accepted:>8} | {shed:>4} | {:>13.1} %",
            shown.admission.to_f64() * 100.0
        );
        assert_eq!(shown.state, fuse_breaker::State::Closed);
        rows.push((s, admitted, accepted));
    }
    let overloaded: u32 = rows[10..30].iter().map(|&(_, admitted, _)| admitted).sum();
    println!(
        "  from 10 s to 30 s: {} calls admitted a second on average, for 200 accepted (K x 200 = 400)",
        overloaded / 20
    );
    rows
}

/// One curve of a panel: its label, its colour and its points (each
/// coordinate from 0 to 1).
type Line<'a> = (&'a str, &'a str, Vec<(f64, f64)>);

/// Both curves as an SVG: the ramp's admitted share against the rule, and
/// the throttle's admitted and accepted calls a second.
fn svg(ramp: &[(u64, f64, f64)], throttle: &[(u64, u32, u32)]) -> String {
    let mut out = String::new();
    let (w, h) = (420.0, 220.0);
    let _ = write!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"880\" height=\"290\" \
         font-family=\"sans-serif\" font-size=\"12\">"
    );
    let panel = |out: &mut String, x0: f64, title: &str, axes: [&str; 3], lines: &[Line<'_>]| {
        let [top, left, right] = axes;
        let _ = write!(
            out,
            "<g transform=\"translate({x0},30)\"><text x=\"0\" y=\"-10\" font-weight=\"bold\">{title}</text>\
             <rect width=\"{w}\" height=\"{h}\" fill=\"none\" stroke=\"#999\"/>\
             <text x=\"{}\" y=\"12\" text-anchor=\"end\" fill=\"#666\">{top}</text>\
             <text x=\"0\" y=\"{}\" fill=\"#666\">{left}</text>\
             <text x=\"{w}\" y=\"{}\" text-anchor=\"end\" fill=\"#666\">{right}</text>",
            w - 4.0,
            h + 16.0,
            h + 16.0
        );
        for (i, (label, color, points)) in lines.iter().enumerate() {
            let path: Vec<String> = points
                .iter()
                .map(|(x, y)| format!("{:.1},{:.1}", x * w, h - y * h))
                .collect();
            let _ = write!(
                out,
                "<polyline fill=\"none\" stroke=\"{color}\" stroke-width=\"2\" points=\"{}\"/>\
                 <text x=\"{}\" y=\"{}\" fill=\"{color}\">{label}</text>",
                path.join(" "),
                10,
                18 + 16 * i
            );
        }
        out.push_str("</g>");
    };
    #[allow(clippy::cast_precision_loss)]
    let ramp_x = |s: u64| (s - 2) as f64 / 12.0;
    panel(
        &mut out,
        10.0,
        "ramp-up: share of calls admitted, per second since closing",
        ["100 %", "0 s", "12 s"],
        &[
            (
                "admitted",
                "#1f77b4",
                ramp.iter()
                    .map(|&(s, share, _)| (ramp_x(s), share))
                    .collect(),
            ),
            (
                "max(10 %, t / ramp_up)",
                "#ff7f0e",
                ramp.iter().map(|&(s, _, rule)| (ramp_x(s), rule)).collect(),
            ),
        ],
    );
    #[allow(clippy::cast_precision_loss)]
    let t_x = |s: u64| s as f64 / 40.0;
    let per_second = |n: u32| f64::from(n) / f64::from(OFFERED);
    panel(
        &mut out,
        450.0,
        "throttle (K = 2): calls a second of 1,000 offered",
        ["1,000/s", "0 s", "40 s"],
        &[
            (
                "admitted",
                "#1f77b4",
                throttle
                    .iter()
                    .map(|&(s, admitted, _)| (t_x(s), per_second(admitted)))
                    .collect(),
            ),
            (
                "accepted (capacity 200/s until 30 s)",
                "#2ca02c",
                throttle
                    .iter()
                    .map(|&(s, _, accepted)| (t_x(s), per_second(accepted)))
                    .collect(),
            ),
        ],
    );
    out.push_str("</svg>\n");
    out
}

fn main() {
    let svg_path = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => None,
        [flag, path] if flag == "--svg" => Some(path.clone()),
        other => {
            eprintln!("usage: graded [--svg PATH] (got {other:?})");
            std::process::exit(2);
        }
    };
    fastrand::seed(2026);
    let ramp = ramp();
    let throttle = throttle();
    if let Some(path) = svg_path {
        std::fs::write(&path, svg(&ramp, &throttle)).expect("the SVG is written");
        println!("\nwrote {path}");
    }
}
