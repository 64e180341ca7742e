//! SPEC §8's quorum across OS processes (the test binary again, as
//! children), on every server store the machine has: three processes on
//! one key with `min_reporters` 2. One process failing every call leaves
//! the circuit closed, and its own calls still run; once a second process
//! fails, the circuit opens, once.
//!
//! The parent orders the phases: each child says it is ready, connected
//! to its store, and waits for the parent's word; a failing child runs its
//! calls on `go` and says `done`; every child reports on `end`.

use std::process::Child;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use fuse_breaker::store::SharedFuse;
use fuse_breaker::{Config, State, events::Reason, events::Transition};

use super::children::{self, Output, say};
use super::{open_url as open, runtime, server_urls as urls, unique};

const CALLS: u32 = 20;
const TICK: Duration = Duration::from_millis(4);
const THRESHOLD: u32 = 3;

/// 3 failures in a minute from 2 processes; open a minute (the test ends
/// long before it would probe).
fn config() -> Config {
    Config::builder()
        .failure_threshold(THRESHOLD)
        .min_reporters(2)
        .open_duration(Duration::from_mins(1))
        .build()
        .expect("a valid configuration")
}

fn circuit(url: &str, name: &str) -> SharedFuse {
    fuse_breaker::Fuse::builder(name)
        .store(open(url))
        .config(config())
        .build()
}

/// A child: as `fail`, `CALLS` failed calls, one per `TICK`, from the
/// parent's `go`, then `child: ran N` and `child: rejected N`, `child:
/// done`; as `watch`, nothing but being there. On the parent's `end`,
/// `child: transitions N` (openings it reported).
#[test]
#[ignore = "a child process of the quorum tests"]
fn child() {
    let var = |name: &str| std::env::var(name).expect("run by the quorum tests");
    let (role, url, name) = (
        var("FUSE_QUORUM_ROLE"),
        var("FUSE_QUORUM_URL"),
        var("FUSE_QUORUM_KEY"),
    );
    runtime().block_on(async {
        let fuse = circuit(&url, &name);
        let opened = Arc::new(AtomicUsize::new(0));
        let count = opened.clone();
        fuse.on_transition(move |t: &Transition| {
            if t.reason == Reason::ThresholdReached {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        fuse.state().await.unwrap();
        println!("\nchild: ready");
        let word = || {
            let mut word = String::new();
            std::io::stdin().read_line(&mut word).unwrap();
            word.trim().to_owned()
        };
        if role == "fail" {
            assert_eq!(word(), "go");
            let (mut ran, mut rejected) = (0, 0);
            let mut tick = tokio::time::interval(TICK);
            for _ in 0..CALLS {
                tick.tick().await;
                match fuse.try_acquire().await {
                    Ok(permit) => {
                        ran += 1;
                        permit.failure().await.unwrap();
                    }
                    Err(refusal) => {
                        assert!(refusal.open_error().is_some(), "{refusal}");
                        rejected += 1;
                    }
                }
            }
            println!("child: ran {ran}");
            println!("child: rejected {rejected}");
            println!("child: done");
        }
        assert_eq!(word(), "end");
        println!("child: transitions {}", opened.load(Ordering::SeqCst));
    });
}

/// A child of `role` on `url` and key `name`, ready, and its output.
fn spawn(url: &str, name: &str, role: &str) -> (Child, Output) {
    children::spawn(
        "quorum_processes::child",
        &[
            ("FUSE_QUORUM_ROLE", role),
            ("FUSE_QUORUM_URL", url),
            ("FUSE_QUORUM_KEY", name),
        ],
    )
}

/// The number a child printed after `prefix`, reading its output up to
/// that line.
fn number(lines: &mut Output, prefix: &str) -> usize {
    lines
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix(prefix).map(str::to_owned))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix:?} from a child"))
}

#[test]
fn one_failing_process_leaves_the_circuit_closed_a_second_opens_it_once() {
    for url in urls() {
        let name = unique("quorum-processes");
        let mut children: Vec<_> = ["fail", "fail", "watch"]
            .iter()
            .map(|role| spawn(&url, &name, role))
            .collect();

        // The first process fails every call: all of them run, and the
        // circuit stays closed with one reporter.
        let (first, lines) = &mut children[0];
        say(first, "go");
        let (ran, rejected) = (
            number(lines, "child: ran "),
            number(lines, "child: rejected "),
        );
        finished(lines);
        let snapshot = read(&url, &name);
        println!(
            "quorum {url}: one process failing {CALLS} calls: {:?}, ran {ran}, rejected \
             {rejected}, reporters {}",
            snapshot.state, snapshot.reporters
        );
        assert_eq!((ran, rejected), (CALLS as usize, 0), "{url}: its calls ran");
        assert_eq!(
            (snapshot.state, snapshot.reporters, snapshot.failures.len()),
            (State::Closed, 1, THRESHOLD as usize),
            "{url}"
        );

        // A second process fails: the circuit opens, and rejects the rest
        // of its calls.
        let (second, lines) = &mut children[1];
        say(second, "go");
        let (ran, rejected) = (
            number(lines, "child: ran "),
            number(lines, "child: rejected "),
        );
        finished(lines);
        let state = read(&url, &name).state;
        println!("quorum {url}: a second process: {state:?}, ran {ran}, rejected {rejected}");
        assert_eq!(state, State::Open, "{url}: two reporters");
        assert_eq!(
            (ran, rejected),
            (1, CALLS as usize - 1),
            "{url}: its first failure opened it"
        );

        let mut transitions = 0;
        for (child, lines) in &mut children {
            say(child, "end");
            transitions += number(lines, "child: transitions ");
            assert!(child.wait().unwrap().success(), "{url}: a child failed");
        }
        assert_eq!(transitions, 1, "{url}: opened once");
    }
}

/// The circuit under `name` on `url`, as this process reads it.
fn read(url: &str, name: &str) -> fuse_breaker::Snapshot {
    runtime().block_on(async { circuit(url, name).snapshot().await.unwrap() })
}

/// Reads a failing child's output up to its `child: done`.
fn finished(lines: &mut Output) {
    let done = lines.any(|line| line.is_ok_and(|line| line == "child: done"));
    assert!(done, "a child did not finish its calls");
}
