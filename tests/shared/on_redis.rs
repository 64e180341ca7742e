//! Redis only: what is under a key when it is not ours, several OS
//! processes on one key, a process killed mid-probe, and the server
//! stopped and restarted under load.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::store::{Fallback, RedisStore, Refusal, SharedFuse, Store};
use fuse_breaker::{Config, Reason, State, Transition, Verdict};

use super::{redis_url, runtime, unique};

pub(super) async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

fn shared(url: &str, name: &str, config: Config) -> SharedFuse {
    let store = Arc::new(RedisStore::open(url).expect("a Redis URL"));
    SharedFuse::builder(name, store).config(config).build()
}

fn config(threshold: u32, probes: u32, open: Duration) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .open_duration(open)
        .build()
        .expect("a valid configuration")
}

#[test]
fn what_else_is_under_a_key_is_a_named_error_or_milon_s_circuit() {
    let Some(url) = redis_url() else { return };
    runtime().block_on(async {
        let mut redis = raw(&url).await;
        let name = unique("foreign");
        let key = format!("fuse:{name}");
        let fuse = shared(&url, &name, Config::default());

        let _: () = redis::cmd("RPUSH").arg(&key).arg("x").query_async(&mut redis).await.unwrap();
        let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
            panic!("a list under the key is not refused by the store");
        };
        assert_eq!(err.payload_error().expect("named").key(), key, "{err}");

        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut redis).await.unwrap();
        let _: () = redis::cmd("SET").arg(&key).arg("{\"state\":").query_async(&mut redis).await.unwrap();
        let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
            panic!("a corrupt payload is not refused by the store");
        };
        assert!(err.to_string().contains(&key), "{err}");

        // milon/fuse's five fields: open ten seconds ago.
        let (seconds, _): (u64, u64) = redis::cmd("TIME").query_async(&mut redis).await.unwrap();
        let milon = format!(
            r#"{{"state":"open","opened_at":{},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#,
            seconds - 10
        );
        let _: () = redis::cmd("SET").arg(&key).arg(milon).query_async(&mut redis).await.unwrap();
        let open = fuse.try_acquire().await.unwrap_err();
        let retry = open.open_error().expect("open").retry_after();
        assert!(retry > Duration::from_secs(18) && retry <= Duration::from_secs(20), "{retry:?}");
        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut redis).await.unwrap();
    });
}

#[test]
fn an_idle_circuit_expires_on_the_server() {
    let Some(url) = redis_url() else { return };
    runtime().block_on(async {
        let mut redis = raw(&url).await;
        let name = unique("ttl");
        let fuse = shared(&url, &name, config(3, 1, Duration::from_secs(30)));
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("fuse:{name}"))
            .query_async(&mut redis)
            .await
            .unwrap();
        // 2 x max(window 60 s, open 30 s).
        assert!(ttl > 119_000 && ttl <= 120_000, "{ttl} ms");
    });
}

/// What a child process does, from `FUSE_TEST_CHILD`: `failures` (each
/// task records one counted failure) or `probes` (each task takes probes
/// for a while, counting them in a Redis counter as the protected
/// dependency would), or `hold` (take a probe and never end it).
/// It prints `transitions N` (those it reported) and, for probes,
/// `most N` and `granted N`.
#[test]
#[ignore = "a child process of the multi-process tests"]
fn child() {
    let (Ok(role), Ok(url), Ok(name)) = (
        std::env::var("FUSE_TEST_CHILD"),
        std::env::var("FUSE_TEST_REDIS_URL"),
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
        let most = Arc::new(AtomicUsize::new(0));
        let granted = Arc::new(AtomicUsize::new(0));
        match role.as_str() {
            "hold" => {
                // A lease long enough that the parent sees it held however
                // slowly a loaded machine runs the two processes.
                let store = Arc::new(RedisStore::open(&url).expect("a Redis URL"));
                let fuse = SharedFuse::builder(&name, store)
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
                    let (fuse, most, granted) = (fuse.clone(), most.clone(), granted.clone());
                    let (url, counter) = (url.clone(), format!("{name}:running"));
                    let role = role.clone();
                    tasks.push(tokio::spawn(async move {
                        if role == "failures" {
                            fuse.try_acquire().await.unwrap().failure().await.unwrap();
                            return;
                        }
                        let mut redis = raw(&url).await;
                        let until = Instant::now() + Duration::from_millis(600);
                        while Instant::now() < until {
                            let Ok(permit) = fuse.try_acquire().await else {
                                tokio::time::sleep(Duration::from_millis(1)).await;
                                continue;
                            };
                            assert!(permit.is_probe());
                            granted.fetch_add(1, Ordering::SeqCst);
                            let now: usize = redis::cmd("INCR")
                                .arg(&counter)
                                .query_async(&mut redis)
                                .await
                                .unwrap();
                            most.fetch_max(now, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(2)).await;
                            let _: i64 = redis::cmd("DECR")
                                .arg(&counter)
                                .query_async(&mut redis)
                                .await
                                .unwrap();
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
        println!("child: most {}", most.load(Ordering::SeqCst));
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
            "on_redis::child",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("FUSE_TEST_CHILD", role)
        .env("FUSE_TEST_REDIS_URL", url)
        .env("FUSE_TEST_KEY_NAME", name)
        .env("FUSE_TEST_THRESHOLD", threshold.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the test binary")
}

/// Waits for `children` and sums each `word N` line they printed.
fn totals(children: Vec<Child>) -> std::collections::HashMap<String, usize> {
    let mut sums = std::collections::HashMap::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "a child failed: {out:?}");
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            if let Some((word, n)) = line
                .strip_prefix("child: ")
                .and_then(|rest| rest.split_once(' '))
                && let Ok(n) = n.parse::<usize>()
            {
                let sum = sums.entry(word.to_owned()).or_insert(0);
                if word == "most" {
                    *sum = (*sum).max(n);
                } else {
                    *sum += n;
                }
            }
        }
    }
    sums
}

#[test]
fn processes_on_one_key_lose_no_failure_and_one_of_them_opens_it() {
    let Some(url) = redis_url() else { return };
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
    let Some(url) = redis_url() else { return };
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
    let Some(url) = redis_url() else { return };
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
        let probe = fuse.try_acquire().await.expect("the slot came back");
        assert!(probe.is_probe());
        probe.success().await.unwrap();
        assert_eq!(fuse.state().await.unwrap(), State::Closed);
    });
}

/// A redis-server of the test's own, stopped when dropped (a failing test
/// leaves none behind).
struct Server(Child);

impl Server {
    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A redis-server of the test's own on `port`, to stop and restart.
fn own_server(port: u16, dir: &std::path::Path) -> Server {
    let child = Command::new("redis-server")
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (the tests that need Redis install it)");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Server(child)
}

#[test]
fn the_server_stopped_and_restarted_under_load() {
    if redis_url().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(unique("redis-restart"));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("redis://127.0.0.1:{port}");
    let mut server = own_server(port, &dir);
    runtime().block_on(async {
        let store = Arc::new(RedisStore::open(&url).unwrap());
        let fuse = Arc::new(
            SharedFuse::builder("restart", store.clone())
                .config(config(1000, 1, OPEN))
                .fallback(Fallback::Local)
                .build(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (local, from_store, down) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let mut load = Vec::new();
        for _ in 0..8 {
            let (fuse, stop) = (fuse.clone(), stop.clone());
            let (local, from_store, down) = (local.clone(), from_store.clone(), down.clone());
            load.push(tokio::spawn(async move {
                // A failure then a success, again and again: writes that
                // never open the circuit (each success clears).
                let mut fail = false;
                while !stop.load(Ordering::Relaxed) {
                    fail = !fail;
                    match fuse.try_acquire().await {
                        Ok(permit) => {
                            let counter = if permit.from_store() {
                                &from_store
                            } else {
                                &local
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                            let verdict = if fail {
                                Verdict::Failure
                            } else {
                                Verdict::Success
                            };
                            if permit.conclude(verdict).await.is_err() {
                                down.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(refusal) => panic!("refused: {refusal}"),
                    }
                    if !fuse.store_reachable() {
                        down.fetch_add(1, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.stop();
        tokio::time::sleep(Duration::from_millis(700)).await;
        let local_during = local.load(Ordering::Relaxed);
        server = own_server(port, &dir);
        // Back to the store within two of the longest backoffs (the try
        // that finds the connection being remade fails, the next succeeds).
        let started = Instant::now();
        let before = from_store.load(Ordering::Relaxed);
        while from_store.load(Ordering::Relaxed) < before + 20 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the store was not used again"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.store(true, Ordering::Relaxed);
        for task in load {
            task.await.expect("no task panicked");
        }
        assert!(
            local_during > 0,
            "the local circuit decided while the server was down"
        );
        assert!(down.load(Ordering::Relaxed) > 0, "the outage was seen");
        assert!(fuse.store_reachable());
        // The key is readable: no corrupt payload was left.
        let snapshot = fuse.snapshot().await.expect("a readable circuit");
        assert_eq!(snapshot.state, State::Closed);
        assert!(
            snapshot.failures.len() <= 8,
            "at most one failure per task: {snapshot:?}"
        );
        assert!(store.load("fuse:restart").await.is_ok());
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
