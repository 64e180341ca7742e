//! SPEC §11 "under throttling `requests` and `accepts` are the fleet's, so
//! every process sheds the same share": three OS processes (the test
//! binary again, as children) on one key, on every server store the
//! machine has, in strict mode and in cached mode, calling a dependency of
//! fixed capacity (a loopback server in the test process that accepts
//! [`CAPACITY`] calls a second, in slots of [`SLOT`], and answers the rest
//! busy: a failure).
//!
//! One process's route to the dependency is broken: every call it makes
//! fails. By its own counts alone it would shed the most it may
//! (`max_throttle`); in the fleet it sheds what the others do, the formula
//! on the fleet's window. Each child samples the share its throttle sheds
//! (`SharedFuse::throttling`) every `SAMPLE` of the measured span and
//! counts the calls it shed; the parent compares them.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use fuse_breaker::store::SharedFuse;
use fuse_breaker::{Config, Grading, config::Policy};

use super::children;
use super::{open_url as open, runtime, server_urls as urls, unique};

/// The dependency's capacity, in calls a second, and how long a slot of
/// it lasts: it accepts `CAPACITY * SLOT` calls in a slot and answers the
/// rest busy. A fleet of three children calls at most `3 / TICK` times a
/// second, 300; one on SQLite, whose writers take turns on one file,
/// about half of that on a loaded machine while its throttle sheds
/// nothing. Either way the fleet asks for more than K x CAPACITY (50), and
/// its share to shed, 1 - 50 / requests a second, stays between a half
/// and `MAX_THROTTLE`.
const CAPACITY: u32 = 25;
const SLOT: Duration = Duration::from_millis(200);
/// How often each child calls (at most: a call that takes longer delays
/// the next).
const TICK: Duration = Duration::from_millis(10);
/// How long the children call before the measured span, and how long it
/// lasts.
const WARM: Duration = Duration::from_secs(2);
const MEASURED: Duration = Duration::from_secs(4);
/// How often a child samples the share its throttle sheds.
const SAMPLE: Duration = Duration::from_millis(50);
const STALENESS: Duration = Duration::from_millis(20);
const MAX_THROTTLE: u32 = 100;

/// `rate` at 100 % (the fleet never fails every call: it stays closed),
/// throttling with K = 2 over a window of two seconds in ten buckets.
fn config() -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(100)
        .minimum_calls(50)
        .failure_window(Duration::from_secs(2))
        .window_buckets(10)
        .throttle_k(2.0)
        .max_throttle(MAX_THROTTLE)
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

/// The dependency, started once per test process: its address.
fn dependency() -> SocketAddr {
    static ADDRESS: OnceLock<SocketAddr> = OnceLock::new();
    *ADDRESS.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let address = listener.local_addr().unwrap();
        let slot = std::sync::Arc::new(Mutex::new((Instant::now(), 0_u32)));
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                let slot = slot.clone();
                std::thread::spawn(move || {
                    let mut lines = BufReader::new(stream.try_clone().unwrap()).lines();
                    let mut answers = stream;
                    while let Some(Ok(_)) = lines.next() {
                        let accepted = {
                            let mut slot = slot.lock().unwrap();
                            if slot.0.elapsed() >= SLOT {
                                *slot = (Instant::now(), 0);
                            }
                            slot.1 += 1;
                            f64::from(slot.1) <= f64::from(CAPACITY) * SLOT.as_secs_f64()
                        };
                        let answer: &[u8] = if accepted { b"ok\n" } else { b"busy\n" };
                        if answers.write_all(answer).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        address
    })
}

/// A child: calls every `TICK` for `WARM` and `MEASURED` from the parent's
/// word, then prints what it asked, shed and sampled in the measured span.
#[test]
#[ignore = "a child process of the throttle tests"]
fn child() {
    let var = |name: &str| std::env::var(name).expect("run by the throttle tests");
    let (role, url, name) = (
        var("FUSE_THROTTLE_ROLE"),
        var("FUSE_THROTTLE_URL"),
        var("FUSE_THROTTLE_KEY"),
    );
    let cached = var("FUSE_THROTTLE_CACHED") == "1";
    let mut route = (role == "well").then(|| {
        let stream = TcpStream::connect(var("FUSE_THROTTLE_DEPENDENCY")).unwrap();
        stream.set_nodelay(true).unwrap();
        (BufReader::new(stream.try_clone().unwrap()).lines(), stream)
    });
    runtime().block_on(async {
        let fuse = std::sync::Arc::new(circuit(&url, &name, cached));
        fuse.state().await.unwrap();
        println!("\nchild: ready");
        let mut word = String::new();
        std::io::stdin().read_line(&mut word).unwrap();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let start = tokio::time::Instant::now();
        // The share in use, every `SAMPLE` of the measured span, however
        // slowly the calls go.
        let sampling = {
            let fuse = fuse.clone();
            tokio::spawn(async move {
                let mut samples = Vec::new();
                let mut every = tokio::time::interval_at(start + WARM, SAMPLE);
                while start.elapsed() < WARM + MEASURED {
                    every.tick().await;
                    samples.push(fuse.throttling());
                }
                samples
            })
        };
        let (mut asked, mut shed, mut other) = (0_u64, 0_u64, 0_u64);
        while start.elapsed() < WARM + MEASURED {
            tick.tick().await;
            let measured = start.elapsed() >= WARM;
            match fuse.try_acquire().await {
                Ok(permit) => {
                    let accepted = route.as_mut().is_some_and(|(answers, calls)| {
                        calls.write_all(b"call\n").unwrap();
                        answers.next().unwrap().unwrap() == "ok"
                    });
                    if accepted {
                        permit.success().await.unwrap();
                    } else {
                        permit.failure().await.unwrap();
                    }
                }
                Err(refusal) => {
                    let throttled = refusal
                        .open_error()
                        .and_then(fuse_breaker::OpenError::throttled);
                    match throttled {
                        Some(Grading::Throttle) if measured => shed += 1,
                        Some(Grading::Throttle) => {}
                        _ => other += 1,
                    }
                }
            }
            if measured {
                asked += 1;
            }
        }
        let samples = sampling.await.unwrap();
        #[allow(clippy::cast_precision_loss)]
        let mean = samples.iter().sum::<f64>() / samples.len().max(1) as f64;
        println!("\nchild: {role} {asked} {shed} {other} {mean:.4}");
    });
}

/// What one child printed.
#[derive(Debug)]
struct Printed {
    role: String,
    asked: u64,
    shed: u64,
    other: u64,
    share: f64,
}

fn run(url: &str, key: &str, cached: bool) -> Vec<Printed> {
    let dependency = dependency().to_string();
    // On SQLite, a file of this run's own: the other tests of this process
    // write theirs while it runs, and one file takes one writer at a time.
    let url = if url.starts_with("sqlite") {
        let own = format!(
            "sqlite://{}/fuse-throttle-{}-{key}.db",
            env!("CARGO_TARGET_TMPDIR"),
            std::process::id()
        );
        runtime().block_on(async { drop(open(&own)) });
        own
    } else {
        url.to_owned()
    };
    let url = url.as_str();
    let cached = if cached { "1" } else { "0" };
    let (mut children, mut outputs): (Vec<_>, Vec<_>) = ["sick", "well", "well"]
        .iter()
        .map(|role| {
            children::spawn(
                "throttle::child",
                &[
                    ("FUSE_THROTTLE_ROLE", role),
                    ("FUSE_THROTTLE_URL", url),
                    ("FUSE_THROTTLE_KEY", key),
                    ("FUSE_THROTTLE_CACHED", cached),
                    ("FUSE_THROTTLE_DEPENDENCY", &dependency),
                ],
            )
        })
        .unzip();
    // Every child ready before any starts.
    for child in &mut children {
        children::say(child, "go");
    }
    let printed = children
        .iter_mut()
        .zip(&mut outputs)
        .map(|(child, lines)| {
            let lines: Vec<String> = lines.map_while(Result::ok).collect();
            assert!(child.wait().unwrap().success(), "a child failed: {lines:?}");
            let line = lines
                .iter()
                .find_map(|line| line.strip_prefix("child: "))
                .unwrap_or_else(|| panic!("no counts: {lines:?}"));
            let words: Vec<&str> = line.split(' ').collect();
            Printed {
                role: words[0].to_owned(),
                asked: words[1].parse().unwrap(),
                shed: words[2].parse().unwrap(),
                other: words[3].parse().unwrap(),
                share: words[4].parse().unwrap(),
            }
        })
        .collect();
    if let Some(file) = url.strip_prefix("sqlite://") {
        for end in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{file}{end}"));
        }
    }
    printed
}

#[test]
fn every_process_of_a_fleet_sheds_the_same_share_from_the_fleet_s_window() {
    for url in urls() {
        for cached in [false, true] {
            let key = unique("throttle");
            let printed = run(&url, &key, cached);
            let mode = if cached { "cached" } else { "strict" };
            println!("throttle {url} {mode}: {printed:?}");
            let shares: Vec<f64> = printed.iter().map(|p| p.share).collect();
            let (low, high) = shares
                .iter()
                .fold((f64::MAX, f64::MIN), |(l, h), &s| (l.min(s), h.max(s)));
            assert!(
                high - low <= 0.02,
                "{url} {mode}: shares in use {shares:?} differ by more than 2 points"
            );
            assert!(low > 0.4, "{url} {mode}: the fleet sheds {shares:?}");
            for child in &printed {
                assert_eq!(child.other, 0, "{url} {mode}: {child:?}");
                // By its own counts the sick process would shed the most.
                assert!(
                    child.share < f64::from(MAX_THROTTLE) / 100.0 - 0.03,
                    "{url} {mode}: {child:?} sheds as if alone"
                );
                // What it shed, against the share it sampled: within five
                // points, or four standard deviations of so few draws.
                #[allow(clippy::cast_precision_loss)]
                let (seen, draws) = (
                    child.shed as f64 / child.asked.max(1) as f64,
                    child.asked.max(1) as f64,
                );
                let spread = (child.share * (1.0 - child.share) / draws).sqrt();
                assert!(
                    (seen - child.share).abs() < (4.0 * spread).max(0.05),
                    "{url} {mode}: {child:?} shed {seen} of its calls"
                );
            }
            assert_eq!(printed[0].role, "sick");
        }
    }
}

/// Two circuits on one key of a memory store, one whose calls all fail
/// and one whose calls all succeed: both shed the share of their common
/// window, and the snapshot shows its counts.
#[test]
fn two_handles_on_one_key_shed_the_share_of_their_common_window() {
    use std::sync::Arc;

    use fuse_breaker::store::{MemoryStore, THROTTLE_SUFFIX};
    let config = Config::builder()
        .failure_window(Duration::from_secs(2))
        .window_buckets(10)
        .failure_threshold(1_000)
        .minimum_calls(10)
        .throttle_k(2.0)
        .build()
        .unwrap();
    let store = Arc::new(MemoryStore::new());
    let handle = || {
        fuse_breaker::Fuse::builder("billing")
            .store(store.clone())
            .config(config.clone())
            .build()
    };
    runtime().block_on(async {
        let (sick, well) = (handle(), handle());
        for _ in 0..20 {
            sick.try_acquire().await.unwrap().failure().await.unwrap();
        }
        for _ in 0..10 {
            well.try_acquire().await.unwrap().success().await.unwrap();
        }
        // Two of the throttle's sendings (every 100 ms).
        tokio::time::sleep(Duration::from_millis(300)).await;
        // 30 requests, 10 accepts: (30 - 2 x 10) / 31.
        let expected = 10.0 / 31.0;
        for fuse in [&sick, &well] {
            assert!(
                (fuse.throttling() - expected).abs() < 1e-6,
                "{}",
                fuse.throttling()
            );
        }
        let snapshot = well.snapshot().await.unwrap();
        assert_eq!((snapshot.requests, snapshot.accepts), (30, 10));
        assert_eq!(snapshot.graded_by, Some(Grading::Throttle));
        assert!((snapshot.admission.to_f64() - (1.0 - expected)).abs() < 1e-6);
        let record =
            fuse_breaker::store::Store::load(&*store, &format!("fuse:billing{THROTTLE_SUFFIX}"))
                .await
                .unwrap();
        assert!(record.payload.is_some());
        // Of 1,000 calls, a third are shed or more (each shed call is a
        // request with no accept: the share grows as they reach the
        // window), and each counts as a request.
        let mut shed = 0;
        for _ in 0..1_000 {
            match sick.try_acquire().await {
                Ok(permit) => permit.ignore().await.unwrap(),
                Err(refusal) => {
                    let open = refusal.open_error().unwrap();
                    assert_eq!(open.throttled(), Some(Grading::Throttle));
                    assert_eq!(open.retry_after(), Duration::ZERO);
                    shed += 1;
                }
            }
        }
        assert!((250..900).contains(&shed), "{shed} of 1,000 shed");
        tokio::time::sleep(Duration::from_millis(300)).await;
        let snapshot = well.snapshot().await.unwrap();
        assert_eq!((snapshot.requests, snapshot.accepts), (30 + shed, 10));
    });
}
