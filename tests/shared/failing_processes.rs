//! SPEC §9's `rate` in strict mode across OS processes (the test binary
//! again, as children), on every server store the machine has: four
//! processes on one key, `rate` at 5 % with a quorum of 2; two of them
//! take healthy calls, then a third fails every call (alone, it cannot
//! open the circuit), then the fourth too. The circuit opens in every
//! run, no verdict is lost, and a failure's verdict is acknowledged about
//! as fast as a success's under the same load (the medians of every run's
//! verdicts, from the third process's start on): a failure that does not
//! open the circuit is an increment the store applies as it applies a
//! success's (only the opening is a conditional write), so it never loses
//! a race to the successes landing meanwhile.
//!
//! The children live through every run of a store: each says it is
//! ready, then runs on the parent's `go NAME`, calls until the circuit
//! rejects them or `RUN` passes, and reports its verdicts' median
//! acknowledgement time. `FUSE_TEST_FAILING_RUNS` sets the number of runs
//! per store (default 10).
//!
//! It compares latencies, which the other tests of this binary running
//! beside it would distort: it is ignored by default and run alone,
//!
//! ```sh
//! scripts/with-servers cargo test --all-features --test shared \
//!   failing_processes -- --ignored --exact --nocapture \
//!   failing_processes::two_failing_processes_of_four_open_a_strict_rate_circuit_every_time
//! ```

use std::process::Child;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use fuse_breaker::{Config, State, config::Policy};

use super::children::{self, Output, say};
use super::{open_url as open, runtime, server_urls as urls, unique};

/// How long a run's failing processes fail, at most.
const RUN: Duration = Duration::from_secs(3);
/// How long the healthy processes call before the failing ones start.
const WARM: Duration = Duration::from_millis(300);
/// How long the first failing process fails alone (the quorum of two
/// holds the circuit closed: its failures are plain increments) before
/// the second starts.
const ALONE: Duration = Duration::from_millis(300);
/// Concurrent callers in each process.
const TASKS: usize = 8;

/// `rate` at 5 % over a 2 s window of 20 buckets, at least 50 calls, two
/// reporters; open a minute (no run lasts that long).
fn config() -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(5)
        .minimum_calls(50)
        .failure_window(Duration::from_secs(2))
        .window_buckets(20)
        .min_reporters(2)
        .open_duration(Duration::from_mins(1))
        .build()
        .expect("a valid configuration")
}

fn runs() -> usize {
    std::env::var("FUSE_TEST_FAILING_RUNS")
        .ok()
        .and_then(|runs| runs.parse().ok())
        .unwrap_or(10)
}

/// A child: on `go NAME`, `TASKS` tasks call the circuit `NAME` until it
/// rejects them or `RUN` passes (`fail`: every call fails; `heal`: every
/// call succeeds, its verdicts timed from `WARM` on, when the failing
/// processes start), then it prints `child: verdicts LOST US,US,...` (LOST:
/// verdicts the store did not take; then how long each verdict it took
/// waited for the store, in µs) and `child: done`; on `end`, it exits.
#[test]
#[ignore = "a child process of the failing-processes test"]
fn child() {
    let var = |name: &str| std::env::var(name).expect("run by the failing-processes test");
    let (role, url) = (var("FUSE_FAILING_ROLE"), var("FUSE_FAILING_URL"));
    runtime().block_on(async {
        let store = open(&url);
        println!("\nchild: ready");
        loop {
            let word = tokio::task::spawn_blocking(|| {
                let mut word = String::new();
                std::io::stdin().read_line(&mut word).unwrap();
                word.trim().to_owned()
            })
            .await
            .unwrap();
            let Some(name) = word.strip_prefix("go ") else {
                assert_eq!(word, "end");
                return;
            };
            let fuse = Arc::new(
                fuse_breaker::Fuse::builder(name)
                    .store(store.clone())
                    .config(config())
                    .build(),
            );
            let times = Arc::new(Mutex::new(Vec::new()));
            let until = Instant::now() + RUN;
            // A healthy process's verdicts count from when the failing
            // ones start (the same load).
            let from = Instant::now() + if role == "fail" { Duration::ZERO } else { WARM };
            let tasks = (0..TASKS).map(|_| {
                let (fuse, times, role) = (fuse.clone(), times.clone(), role.clone());
                tokio::spawn(async move {
                    while Instant::now() < until {
                        let Ok(permit) = fuse.try_acquire().await else {
                            break;
                        };
                        // The dependency answered: the verdict's time is
                        // from here to the store's acknowledgement.
                        let answered = Instant::now();
                        let verdict = if role == "fail" {
                            permit.failure().await
                        } else {
                            permit.success().await
                        };
                        // A verdict the store did not take (a step that
                        // lost every race) counts as `u64::MAX` µs.
                        if let Err(err) = &verdict {
                            eprintln!("child: lost a verdict: {err}");
                        }
                        let took = verdict.map_or(Duration::MAX, |()| answered.elapsed());
                        if answered >= from || took == Duration::MAX {
                            times.lock().unwrap().push(took);
                        }
                    }
                })
            });
            for task in futures::future::join_all(tasks).await {
                task.unwrap();
            }
            let times = times.lock().unwrap().clone();
            let lost = times.iter().filter(|&&took| took == Duration::MAX).count();
            let micros: Vec<String> = times
                .iter()
                .filter(|&&took| took != Duration::MAX)
                .map(|took| took.as_micros().to_string())
                .collect();
            println!("child: verdicts {lost} {}", micros.join(","));
            println!("child: done");
        }
    });
}

/// A child of `role` on `url`, ready, and its output.
fn spawn(url: &str, role: &str) -> (Child, Output) {
    children::spawn(
        "failing_processes::child",
        &[("FUSE_FAILING_ROLE", role), ("FUSE_FAILING_URL", url)],
    )
}

/// A child's `child: verdicts LOST US,US,...` (how many verdicts it lost,
/// and how long the others took), and its `child: done`.
fn verdicts(lines: &mut Output) -> (usize, Vec<u64>) {
    let line = lines
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("child: verdicts ").map(str::to_owned))
        .expect("a child's verdicts");
    let (lost, times) = line.split_once(' ').unwrap_or((&line, ""));
    let times = times
        .split(',')
        .filter(|time| !time.is_empty())
        .map(|time| time.parse().unwrap())
        .collect();
    let done = lines.any(|line| line.is_ok_and(|line| line == "child: done"));
    assert!(done, "a child did not finish");
    (lost.parse().unwrap(), times)
}

/// The median of `times` (0 for none).
fn median(times: &mut [u64]) -> u64 {
    times.sort_unstable();
    times.get(times.len() / 2).copied().unwrap_or(0)
}

#[test]
#[ignore = "compares latencies: run alone (CI runs it with --ignored, see .ci/run)"]
fn two_failing_processes_of_four_open_a_strict_rate_circuit_every_time() {
    for url in urls() {
        let started = Instant::now();
        let parent = runtime();
        // The parent's store (a SQL table made before the children start).
        let store = parent.block_on(async { open(&url) });
        let mut healthy: Vec<_> = (0..2).map(|_| spawn(&url, "heal")).collect();
        let mut failing: Vec<_> = (0..2).map(|_| spawn(&url, "fail")).collect();
        let (mut failures, mut successes) = (Vec::new(), Vec::new());
        for run in 0..runs() {
            let name = unique(&format!("failing-processes-{run}"));
            for (child, _) in &mut healthy {
                say(child, &format!("go {name}"));
            }
            std::thread::sleep(WARM);
            for (at, (child, _)) in failing.iter_mut().enumerate() {
                if at > 0 {
                    std::thread::sleep(ALONE);
                }
                say(child, &format!("go {name}"));
            }
            let failed: Vec<_> = failing.iter_mut().map(|(_, l)| verdicts(l)).collect();
            let healed: Vec<_> = healthy.iter_mut().map(|(_, l)| verdicts(l)).collect();
            let snapshot = parent.block_on(async {
                fuse_breaker::Fuse::builder(&name)
                    .store(store.clone())
                    .config(config())
                    .build()
                    .snapshot()
                    .await
                    .unwrap()
            });
            let lost: usize = failed.iter().chain(&healed).map(|(lost, _)| lost).sum();
            let mut failed: Vec<u64> = failed.into_iter().flat_map(|(_, times)| times).collect();
            let mut healed: Vec<u64> = healed.into_iter().flat_map(|(_, times)| times).collect();
            println!(
                "failing processes {url} run {run}: {:?}; {} failures, median {} us; \
                 {} successes, median {} us; {lost} lost",
                snapshot.state,
                failed.len(),
                median(&mut failed),
                healed.len(),
                median(&mut healed),
            );
            assert_eq!(lost, 0, "{url} run {run}: verdicts the store did not take");
            assert_eq!(snapshot.state, State::Open, "{url} run {run}: not opened");
            failures.extend(failed);
            successes.extend(healed);
        }
        for (child, _) in healthy.iter_mut().chain(&mut failing) {
            say(child, "end");
            assert!(child.wait().unwrap().success(), "{url}: a child failed");
        }
        let (failure, success) = (median(&mut failures), median(&mut successes));
        println!(
            "failing processes {url}: {} runs in {:?}; failures' median {failure} us, \
             successes' {success} us",
            runs(),
            started.elapsed()
        );
        assert!(
            failure <= 2 * success,
            "{url}: a failure's median acknowledgement, {failure} us, above twice a \
             success's, {success} us"
        );
    }
}
