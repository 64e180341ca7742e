//! Several OS processes on one key, on every server store the machine has
//! (Redis, PostgreSQL, SQLite): each process runs many tasks (the test
//! binary again, as a child); the threshold opens exactly and once, no
//! counted failure is lost, the probe limit holds across processes, and a
//! process killed mid-probe frees its slot when the lease ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::store::SharedFuse;
use fuse_breaker::{Config, State, events::Reason, events::Transition};

use super::{open_url as open, runtime, server_urls as urls, unique};

/// A circuit named `name` on a store of its own on `url`.
pub(super) fn shared(url: &str, name: &str, config: Config) -> SharedFuse {
    fuse_breaker::Fuse::builder(name)
        .store(open(url))
        .config(config)
        .build()
}

/// A configuration of the given threshold, probes and open duration, and
/// a probe timeout longer than any test here: a half-open epoch stays the
/// one its probes were granted in (after the timeout, SPEC §10 admits new
/// probes beside the old ones, whose verdicts are stale, and a lease no
/// longer decides when a slot is free).
pub(super) fn config(threshold: u32, probes: u32, open: Duration) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .open_duration(open)
        .probe_timeout(Duration::from_mins(1))
        .build()
        .expect("a valid configuration")
}

/// What a child process does, from `FUSE_TEST_CHILD`: `failures` (each
/// task records one counted failure) or `probes` (each task takes probes
/// for a while and prints when each ran, as `probe START END` in
/// nanoseconds of the machine's clock), or `hold` (take a probe and never
/// end it). It prints `transitions N` (those it reported) and, for probes,
/// `granted N`.
#[test]
#[ignore = "a child process of the multi-process tests"]
fn child() {
    let (Ok(role), Ok(url), Ok(name)) = (
        std::env::var("FUSE_TEST_CHILD"),
        std::env::var("FUSE_TEST_STORE_URL"),
        std::env::var("FUSE_TEST_KEY_NAME"),
    ) else {
        panic!("run by the multi-process tests, with FUSE_TEST_CHILD and the key's name");
    };
    let threshold: u32 = std::env::var("FUSE_TEST_THRESHOLD")
        .unwrap()
        .parse()
        .unwrap();
    runtime().block_on(async {
        let fuse = Arc::new(shared(&url, &name, config(threshold, PROBES, OPEN)));
        let transitions = Arc::new(AtomicUsize::new(0));
        let count = transitions.clone();
        fuse.on_transition(move |t: &Transition| {
            if matches!(t.reason, Reason::ThresholdReached | Reason::CooldownEnded) {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        let granted = Arc::new(AtomicUsize::new(0));
        match role.as_str() {
            "hold" => {
                // A lease long enough that the parent sees it held however
                // slowly a loaded machine runs the two processes.
                let fuse = fuse_breaker::Fuse::builder(&name)
                    .store(open(&url))
                    .config(config(threshold, PROBES, OPEN))
                    .lease(HOLD_LEASE)
                    .build();
                let permit = fuse.try_acquire().await.expect("a probe");
                assert!(permit.is_probe());
                println!("\nchild: probing");
                std::mem::forget(permit);
                tokio::time::sleep(Duration::from_mins(1)).await;
            }
            "failures" | "probes" => {
                let mut tasks = Vec::new();
                for _ in 0..TASKS {
                    let (fuse, granted) = (fuse.clone(), granted.clone());
                    let role = role.clone();
                    tasks.push(tokio::spawn(async move {
                        if role == "failures" {
                            fuse.try_acquire().await.unwrap().failure().await.unwrap();
                            return;
                        }
                        let until = Instant::now() + Duration::from_millis(600);
                        while Instant::now() < until {
                            let Ok(permit) = fuse.try_acquire().await else {
                                tokio::time::sleep(Duration::from_millis(1)).await;
                                continue;
                            };
                            assert!(permit.is_probe());
                            granted.fetch_add(1, Ordering::SeqCst);
                            let start = unix_nanos();
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            println!("child: probe {start} {}", unix_nanos());
                            permit.ignore().await.unwrap();
                        }
                    }));
                }
                for task in tasks {
                    task.await.expect("a task");
                }
            }
            other => panic!("no child role {other}"),
        }
        // On lines of their own, after the test harness's own words.
        println!(
            "\nchild: transitions {}",
            transitions.load(Ordering::SeqCst)
        );
        println!("child: granted {}", granted.load(Ordering::SeqCst));
    });
}

const PROCESSES: usize = 3;
const TASKS: usize = 16;
const PROBES: u32 = 3;
const OPEN: Duration = Duration::from_millis(300);
/// The lease of the probe a killed child holds.
const HOLD_LEASE: Duration = Duration::from_secs(3);

fn spawn_child(url: &str, role: &str, name: &str, threshold: usize) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "processes::child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FUSE_TEST_CHILD", role)
        .env("FUSE_TEST_STORE_URL", url)
        .env("FUSE_TEST_KEY_NAME", name)
        .env("FUSE_TEST_THRESHOLD", threshold.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the test binary")
}

/// Waits for `children` and sums each `word N` line they printed; `most`:
/// how many of their probes ran at once at most.
fn totals(children: Vec<Child>) -> std::collections::HashMap<String, usize> {
    let mut sums = std::collections::HashMap::new();
    let mut probes = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a child failed: {out:?}");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((start, end)) = line
                .strip_prefix("child: probe ")
                .and_then(|rest| rest.split_once(' '))
            {
                probes.push((start.parse::<u128>().unwrap(), end.parse::<u128>().unwrap()));
                continue;
            }
            if let Some((word, n)) = line
                .strip_prefix("child: ")
                .and_then(|rest| rest.split_once(' '))
                && let Ok(n) = n.parse::<usize>()
            {
                *sums.entry(word.to_owned()).or_insert(0) += n;
            }
        }
    }
    sums.insert("most".to_owned(), most_at_once(&probes));
    sums
}

/// How many of the intervals `(start, end)` overlap at most (one that ends
/// where another starts does not overlap it).
fn most_at_once(intervals: &[(u128, u128)]) -> usize {
    let mut edges: Vec<(u128, i32)> = intervals
        .iter()
        .flat_map(|&(start, end)| [(start, 1), (end, -1)])
        .collect();
    // Ends before starts at the same instant.
    edges.sort_unstable();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, step) in edges {
        now += step;
        most = most.max(now);
    }
    usize::try_from(most).unwrap_or(0)
}

fn unix_nanos() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

#[test]
fn processes_on_one_key_lose_no_failure_and_one_of_them_opens_it() {
    for url in urls() {
        lose_no_failure(&url);
    }
}

fn lose_no_failure(url: &str) {
    let url = url.to_owned();
    let name = unique("processes");
    let total = PROCESSES * TASKS;
    let children = (0..PROCESSES)
        .map(|_| spawn_child(&url, "failures", &name, total))
        .collect();
    let sums = totals(children);
    assert_eq!(
        sums["transitions"], 1,
        "exactly one process reported the opening"
    );
    runtime().block_on(async {
        let fuse = shared(
            &url,
            &name,
            config(u32::try_from(total).unwrap(), PROBES, OPEN),
        );
        assert_eq!(
            fuse.state().await.unwrap(),
            State::Open,
            "the threshold opened it"
        );
    });

    // One short of the threshold: every failure is there.
    let name = unique("processes-short");
    let children = (0..PROCESSES)
        .map(|_| spawn_child(&url, "failures", &name, total + 1))
        .collect();
    let sums = totals(children);
    assert_eq!(sums["transitions"], 0);
    runtime().block_on(async {
        let fuse = shared(
            &url,
            &name,
            config(u32::try_from(total + 1).unwrap(), PROBES, OPEN),
        );
        let snapshot = fuse.snapshot().await.unwrap();
        assert_eq!(snapshot.state, State::Closed);
        assert_eq!(snapshot.failures.len(), total, "no counted failure lost");
    });
}

#[test]
fn processes_on_one_key_never_exceed_the_probe_limit() {
    for url in urls() {
        never_exceed_the_probe_limit(&url);
    }
}

fn never_exceed_the_probe_limit(url: &str) {
    let url = url.to_owned();
    let name = unique("probes");
    runtime().block_on(async {
        let fuse = shared(&url, &name, config(1, PROBES, OPEN));
        fuse.force_open().await.unwrap();
    });
    std::thread::sleep(OPEN);
    let children = (0..PROCESSES)
        .map(|_| spawn_child(&url, "probes", &name, 1))
        .collect();
    let sums = totals(children);
    assert!(
        sums["most"] <= PROBES as usize,
        "{} probes at once",
        sums["most"]
    );
    assert!(
        sums["granted"] >= PROBES as usize,
        "probes ran: {}",
        sums["granted"]
    );
    assert_eq!(
        sums["transitions"], 1,
        "exactly one process moved it to half-open"
    );
}

#[test]
fn a_process_killed_mid_probe_frees_its_slot_when_the_lease_ends() {
    for url in urls() {
        killed_mid_probe(&url);
    }
}

fn killed_mid_probe(url: &str) {
    let url = url.to_owned();
    let name = unique("killed");
    runtime().block_on(async {
        shared(&url, &name, config(1, 1, OPEN))
            .force_open()
            .await
            .unwrap();
    });
    std::thread::sleep(OPEN);
    let mut child = spawn_child(&url, "hold", &name, 1);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let probing = lines.any(|line| line.is_ok_and(|line| line == "child: probing"));
    assert!(probing, "the child took its probe");
    child.kill().unwrap();
    child.wait().unwrap();
    let killed = std::time::Instant::now();
    runtime().block_on(async {
        // The slot is held until the lease ends.
        let fuse = shared(&url, &name, config(1, 1, OPEN));
        assert!(
            fuse.try_acquire().await.is_err(),
            "the dead process's probe holds the slot"
        );
        tokio::time::sleep(HOLD_LEASE.saturating_sub(killed.elapsed())).await;
        // A store slow to answer on a loaded machine lets the fallback
        // decide one call: ask again (bounded) until the store does.
        let mut tries = 0;
        let probe = loop {
            let permit = fuse.try_acquire().await.expect("the slot came back");
            tries += 1;
            if permit.from_store() || tries == 20 {
                break permit;
            }
            drop(permit);
            tokio::time::sleep(Duration::from_millis(50)).await;
        };
        assert!(probe.from_store(), "{url}: the store never answered");
        assert!(probe.is_probe(), "{url}: the freed slot is a probe's");
        probe.success().await.unwrap();
        assert_eq!(fuse.state().await.unwrap(), State::Closed);
    });
}
