//! SPEC §9 "In a shared store the window is the fleet's": three OS
//! processes (the test binary again, as children) on one key under `rate`
//! at 50 %, on every server store the machine has, in strict mode and in
//! cached mode. One process failing every call and two succeeding: the
//! fleet's rate is a third, and the circuit stays closed; all three
//! failing: it opens, once.
//!
//! The children start together (each says it is ready, connected to its
//! store, and waits for the parent's word) and pace their calls (one every
//! `TICK`, a failing one every two), so that their verdicts interleave as
//! a fleet's do.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fuse_breaker::store::SharedFuse;
use fuse_breaker::{Config, State, config::Policy, events::Reason, events::Transition};

use super::children;
use super::{open_url as open, runtime, server_urls as urls, unique};

const CALLS: u32 = 120;
const TICK: Duration = Duration::from_millis(4);
const STALENESS: Duration = Duration::from_millis(20);

/// 50 % over at least 90 calls (a quarter of the fleet's), in a minute of 10 buckets; open a minute
/// (the test ends long before it would probe).
fn config() -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(50)
        .minimum_calls(90)
        .open_duration(Duration::from_mins(1))
        .build()
        .expect("a valid configuration")
}

fn circuit(url: &str, name: &str, cached: bool) -> SharedFuse {
    let builder = fuse_breaker::Fuse::builder(name)
        .store(open(url))
        .config(config());
    if cached {
        builder.cached(STALENESS).build()
    } else {
        builder.build()
    }
}

/// A child: `CALLS` calls, one per `TICK` from the parent's word, each
/// failing or succeeding as its role says; prints `child: transitions N`
/// (openings it reported) and `child: rejected N`.
#[test]
#[ignore = "a child process of the fleet tests"]
fn child() {
    let var = |name: &str| std::env::var(name).expect("run by the fleet tests");
    let (role, url, name) = (
        var("FUSE_FLEET_ROLE"),
        var("FUSE_FLEET_URL"),
        var("FUSE_FLEET_KEY"),
    );
    let cached = var("FUSE_FLEET_CACHED") == "1";
    runtime().block_on(async {
        let fuse = circuit(&url, &name, cached);
        let opened = Arc::new(AtomicUsize::new(0));
        let count = opened.clone();
        fuse.on_transition(move |t: &Transition| {
            if t.reason == Reason::ThresholdReached {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        // Connected (the key read once), ready; then the parent's word.
        fuse.state().await.unwrap();
        println!("\nchild: ready");
        let mut word = String::new();
        std::io::stdin().read_line(&mut word).unwrap();
        let mut rejected = 0;
        // A failing process calls half as often, and never catches up
        // after a stall (a succeeding one does): however the machine's
        // load delays the processes, the failures never run so far ahead
        // of the successes that the window's rate reaches 50 % before the
        // fleet's share of a third is in.
        let mut tick = if role == "fail" {
            let mut tick = tokio::time::interval(2 * TICK);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            tick
        } else {
            tokio::time::interval(TICK)
        };
        // Calls the local fallback decided (the store did not answer in
        // time, as it may not on a loaded machine): their verdicts stay in
        // this process, as SPEC §8 says.
        let (mut local_calls, mut local_failed) = (0, 0);
        for _ in 0..CALLS {
            tick.tick().await;
            match fuse.try_acquire().await {
                Ok(permit) if !permit.from_store() => {
                    local_calls += 1;
                    if role == "fail" {
                        local_failed += 1;
                        permit.failure().await.unwrap();
                    } else {
                        permit.success().await.unwrap();
                    }
                }
                Ok(permit) if role == "fail" => permit.failure().await.unwrap(),
                Ok(permit) => permit.success().await.unwrap(),
                Err(refusal) => {
                    assert!(refusal.open_error().is_some(), "{refusal}");
                    rejected += 1;
                }
            }
        }
        // A cached process's last successes go with the circuit's task,
        // once per staleness: it waits until they are sent (a step that
        // carries them counts them as unsent until it is over).
        if cached {
            let waited = std::time::Instant::now();
            while fuse.unsent() > 0 {
                assert!(
                    waited.elapsed() < Duration::from_secs(30),
                    "{} successes never sent",
                    fuse.unsent()
                );
                tokio::time::sleep(TICK).await;
            }
        }
        println!("\nchild: transitions {}", opened.load(Ordering::SeqCst));
        println!("child: rejected {rejected}");
        println!("child: local_calls {local_calls}");
        println!("child: local_failed {local_failed}");
        println!("child: lost {}", fuse.lost());
    });
}

/// What a fleet's children printed, summed.
#[derive(Debug, Default)]
struct Printed {
    transitions: usize,
    rejected: usize,
    /// Calls, and failed calls, the children's local fallbacks decided.
    local_calls: u64,
    local_failed: u64,
    /// Successes lost with a cached step the store did not answer in
    /// time (it may have written them).
    lost: u64,
}

/// Runs one child per role on `url` and key `name`; the sums of what they
/// printed.
fn run(url: &str, name: &str, roles: [&str; 3], cached: bool) -> Printed {
    let cached = if cached { "1" } else { "0" };
    let (mut children, mut outputs): (Vec<_>, Vec<_>) = roles
        .iter()
        .map(|role| {
            children::spawn(
                "fleet::child",
                &[
                    ("FUSE_FLEET_ROLE", role),
                    ("FUSE_FLEET_URL", url),
                    ("FUSE_FLEET_KEY", name),
                    ("FUSE_FLEET_CACHED", cached),
                ],
            )
        })
        .unzip();
    // Every child ready before any starts.
    for child in &mut children {
        children::say(child, "go");
    }
    let mut printed = Printed::default();
    for (child, lines) in children.iter_mut().zip(&mut outputs) {
        let lines: Vec<String> = lines.map_while(Result::ok).collect();
        let status = child.wait().unwrap();
        assert!(status.success(), "a child failed: {lines:?}");
        for line in lines {
            let number = |prefix: &str| {
                line.strip_prefix(prefix)
                    .and_then(|n| n.parse::<usize>().ok())
            };
            if let Some(n) = number("child: transitions ") {
                printed.transitions += n;
            }
            if let Some(n) = number("child: rejected ") {
                printed.rejected += n;
            }
            if let Some(n) = number("child: local_calls ") {
                printed.local_calls += n as u64;
            }
            if let Some(n) = number("child: local_failed ") {
                printed.local_failed += n as u64;
            }
            if let Some(n) = number("child: lost ") {
                printed.lost += n as u64;
            }
        }
    }
    printed
}

#[test]
fn one_sick_process_cannot_open_the_fleet_s_circuit_all_three_open_it_once() {
    for url in urls() {
        for cached in [false, true] {
            let mode = if cached { "cached" } else { "strict" };
            let name = unique("fleet-one-sick");
            let printed = run(&url, &name, ["fail", "succeed", "succeed"], cached);
            let (transitions, rejected) = (printed.transitions, printed.rejected);
            let snapshot =
                runtime().block_on(async { circuit(&url, &name, false).snapshot().await.unwrap() });
            println!(
                "fleet {url} {mode}: 1 failing + 2 succeeding, {CALLS} calls each: {:?}, \
                 window calls {} failed {}, openings {transitions}, rejected {rejected}, \
                 decided locally {}, lost {}",
                snapshot.state, snapshot.calls, snapshot.failed, printed.local_calls, printed.lost
            );
            assert_eq!(snapshot.state, State::Closed, "{url} {mode}");
            assert_eq!((transitions, rejected), (0, 0), "{url} {mode}");
            let calls = u64::from(3 * CALLS);
            // Every verdict is in the store, but those of calls a local
            // fallback decided, and (cached) successes lost with a step the
            // store did not answer in time on a loaded machine (which it
            // may have written).
            let stored = snapshot.calls + printed.local_calls;
            assert!(
                stored <= calls && calls <= stored + printed.lost,
                "{url} {mode}: every process's verdicts: {stored} of {calls} ({printed:?})"
            );
            assert_eq!(
                snapshot.failed + printed.local_failed,
                u64::from(CALLS),
                "{url} {mode}: {printed:?}"
            );

            let name = unique("fleet-all-sick");
            let Printed {
                transitions,
                rejected,
                ..
            } = run(&url, &name, ["fail", "fail", "fail"], cached);
            let state =
                runtime().block_on(async { circuit(&url, &name, false).state().await.unwrap() });
            println!(
                "fleet {url} {mode}: 3 failing, {CALLS} calls each: {state:?}, \
                 openings {transitions}, rejected {rejected}"
            );
            assert_eq!((state, transitions), (State::Open, 1), "{url} {mode}: once");
            assert!(
                rejected > 0,
                "{url} {mode}: the open circuit rejected calls"
            );
        }
    }
}
