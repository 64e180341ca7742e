//! SPEC §10 for a fleet: three OS processes (the test binary again, as
//! children) on one key, on every server store the machine has (Redis,
//! PostgreSQL, SQLite). The processes decide at store times the test sets
//! (see [`Frozen`]), the same for all three at each step, so their answers
//! are compared to the nanosecond:
//!
//! - with `open_backoff` 2, `open_jitter` 0.5 and a `max_open_duration`,
//!   one process draws each opening for the fleet: every process's
//!   snapshot shows the same `open_for`, every process's rejection the same
//!   `retry_after`, a cached circuit's mirror rejects until that opening's
//!   end, and a failed probe's next opening is the backoff's;
//! - a probe granted and never concluded holds its slot only until
//!   `probe_timeout`: the next admission after it, from another process,
//!   is a new probe in a new half-open epoch, two successful new probes
//!   close the circuit, and the hung probes' verdicts are stale.
//!
//! - with `ramp_up` (SPEC §11), a probe's success starts one ramp for the
//!   fleet at the store's time of the closing: at each time, every
//!   process (strict and cached) admits the same share, draw for draw,
//!   and a relapse within the ramp is the next opening in a row for all.
//!
//! Each child reads commands on its standard input (`COMMAND AT [ARGS]`,
//! `AT` the store's time in nanoseconds since the Unix epoch) and answers
//! each with one line `child: ...`.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuse_breaker::store::{SharedFuse, SharedPermit};
use fuse_breaker::{Config, State};

use super::frozen::Frozen;
use super::{open_url as open, runtime, server_urls as urls, unique};

/// The staleness of each child's cached circuit.
const STALENESS: Duration = Duration::from_millis(20);

/// One probe, opened for 2 s doubling up to 16 s, cut by up to half.
fn backoff() -> Config {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_secs(2))
        .open_backoff(2.0)
        .open_jitter(0.5)
        .max_open_duration(Duration::from_secs(16))
        .build()
        .expect("a valid configuration")
}

/// Two probes, opened for 1 s, half-open for at most 5 s.
fn timeout() -> Config {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(2)
        .open_duration(Duration::from_secs(1))
        .probe_timeout(Duration::from_secs(5))
        .build()
        .expect("a valid configuration")
}

/// One probe, opened for 2 s, ramping up over 10 s from 10 %.
fn ramp() -> Config {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_secs(2))
        .open_backoff(2.0)
        .max_open_duration(Duration::from_secs(16))
        .ramp_up(Duration::from_secs(10))
        .build()
        .expect("a valid configuration")
}

fn config(name: &str) -> Config {
    match name {
        "backoff" => backoff(),
        "timeout" => timeout(),
        "ramp" => ramp(),
        other => panic!("no configuration {other}"),
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).expect("64 bits")
}

/// A child: a strict circuit and a cached one on the key, on a store at
/// the times the parent sets; answers the parent's commands (see
/// [`answer`]) until its standard input ends.
#[test]
#[ignore = "a child process of the recovery fleet tests"]
fn child() {
    let var = |name: &str| std::env::var(name).expect("run by the recovery fleet tests");
    let (url, key, config) = (
        var("FUSE_RECOVERY_URL"),
        var("FUSE_RECOVERY_KEY"),
        config(&var("FUSE_RECOVERY_CONFIG")),
    );
    let lease = std::env::var("FUSE_RECOVERY_LEASE_MS")
        .ok()
        .map(|ms| Duration::from_millis(ms.parse().expect("milliseconds")));
    runtime().block_on(async {
        let store = Arc::new(Frozen::new(open(&url)));
        let builder = || {
            let builder = fuse_breaker::Fuse::builder(&key)
                .store(store.clone())
                .config(config.clone());
            match lease {
                Some(lease) => builder.lease(lease),
                None => builder,
            }
        };
        let strict = builder().build();
        let cached = builder().cached(STALENESS).build();
        println!("\nchild: ready {}", nanos(strict.lease()));
        let mut held = Vec::new();
        let mut line = String::new();
        loop {
            line.clear();
            if std::io::stdin().read_line(&mut line).unwrap() == 0 {
                break;
            }
            let words: Vec<&str> = line.split_whitespace().collect();
            store.set(Duration::from_nanos(words[1].parse().unwrap()));
            let answer = answer(&strict, &cached, &mut held, &words).await;
            println!("child: {answer}");
        }
    });
}

/// The answer to one command:
/// - `acquire AT`: `probe` or `closed` (the permit is kept, unconcluded,
///   until an `end`), or `rejected RETRY_AFTER`;
/// - `end AT I VERDICT`: concludes the `I`-th permit kept (`success`,
///   `failure`); `ended`;
/// - `force_open AT`: `forced`;
/// - `look AT`: `STATE OPENINGS INFLIGHT OPENED_AT OPEN_FOR` from the
///   snapshot, and while open the strict circuit's `RETRY_AFTER`, the
///   cached circuit's from the store and then from its mirror, and the
///   time the two cached admissions took (`-` for what does not apply).
async fn answer<'a>(
    strict: &'a SharedFuse,
    cached: &'a SharedFuse,
    held: &mut Vec<SharedPermit<'a>>,
    words: &[&str],
) -> String {
    let retry_after = |fuse: &'a SharedFuse| async move {
        match fuse.try_acquire().await {
            Ok(permit) => panic!("an open circuit granted a permit: {permit:?}"),
            Err(refusal) => nanos(refusal.open_error().expect("open").retry_after()),
        }
    };
    match words[0] {
        "acquire" => match strict.try_acquire().await {
            Ok(permit) => {
                let kind = if permit.is_probe() { "probe" } else { "closed" };
                held.push(permit);
                kind.to_owned()
            }
            Err(refusal) => {
                let open = refusal.open_error().expect("rejected as open");
                match open.throttled() {
                    Some(why) => format!("shed {why}"),
                    None => format!("rejected {}", nanos(open.retry_after())),
                }
            }
        },
        "shed" => {
            // Of N calls of the strict circuit, then of the cached one,
            // each from the same seeded draws: how many were admitted (each
            // admitted call is ignored), and the admission the snapshot
            // shows (millionths).
            let calls: u32 = words[2].parse().unwrap();
            let mut admitted = Vec::new();
            for fuse in [strict, cached] {
                fastrand::seed(7);
                let mut count = 0;
                for _ in 0..calls {
                    if let Ok(permit) = fuse.try_acquire().await {
                        count += 1;
                        permit.ignore().await.unwrap();
                    }
                }
                admitted.push(count);
            }
            let snapshot = strict.snapshot().await.unwrap();
            format!(
                "{} {} {}",
                admitted[0],
                admitted[1],
                snapshot.admission.millionths()
            )
        }
        "end" => {
            let permit = held.remove(words[2].parse().unwrap());
            match words[3] {
                "success" => permit.success().await.unwrap(),
                "failure" => permit.failure().await.unwrap(),
                other => panic!("no verdict {other}"),
            }
            "ended".to_owned()
        }
        "force_open" => {
            strict.force_open().await.unwrap();
            "forced".to_owned()
        }
        "look" => {
            let snapshot = strict.snapshot().await.unwrap();
            let time = |t: Option<Duration>| t.map_or("-".to_owned(), |t| nanos(t).to_string());
            let rejections = if snapshot.state == State::Open {
                let strict = retry_after(strict).await;
                // The cached circuit's mirror is stale: its admission reads
                // the key again and the fresh mirror rejects it; the next
                // one is the mirror's too.
                tokio::time::sleep(2 * STALENESS).await;
                let asked = Instant::now();
                let from_store = retry_after(cached).await;
                let from_mirror = retry_after(cached).await;
                let took = nanos(asked.elapsed());
                format!("{strict} {from_store} {from_mirror} {took}")
            } else {
                "- - - -".to_owned()
            };
            format!(
                "{:?} {} {} {} {} {rejections}",
                snapshot.state,
                snapshot.openings,
                snapshot.half_open_inflight,
                time(snapshot.opened_at),
                time(snapshot.open_for),
            )
        }
        other => panic!("no command {other}"),
    }
}

/// A child process and its lines.
struct Child {
    process: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
    /// Its probes' lease, in nanoseconds.
    lease: u64,
}

impl Child {
    fn spawn(url: &str, key: &str, config: &str, lease: Option<Duration>) -> Self {
        let mut command = Command::new(std::env::current_exe().unwrap());
        command
            .args([
                "--exact",
                "recovery::child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("FUSE_RECOVERY_URL", url)
            .env("FUSE_RECOVERY_KEY", key)
            .env("FUSE_RECOVERY_CONFIG", config)
            .env_remove("FUSE_RECOVERY_LEASE_MS")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped());
        if let Some(lease) = lease {
            command.env("FUSE_RECOVERY_LEASE_MS", lease.as_millis().to_string());
        }
        let mut process = command.spawn().expect("the test binary");
        let stdin = process.stdin.take();
        let lines = BufReader::new(process.stdout.take().unwrap()).lines();
        let mut child = Child {
            process,
            stdin,
            lines,
            lease: 0,
        };
        let ready = child.next_answer();
        let lease = ready.strip_prefix("ready ").expect("ready first");
        child.lease = lease.parse().unwrap();
        child
    }

    fn next_answer(&mut self) -> String {
        for line in self.lines.by_ref() {
            if let Some(answer) = line.unwrap().strip_prefix("child: ") {
                return answer.to_owned();
            }
        }
        let status = self.process.wait().unwrap();
        panic!("a child ended without answering: {status}");
    }

    /// Sends `command` at the store's time `at` (with `args`), and returns
    /// the answer.
    fn ask(&mut self, command: &str, at: u64, args: &str) -> String {
        let stdin = self.stdin.as_mut().expect("running");
        writeln!(stdin, "{command} {at} {args}").unwrap();
        stdin.flush().unwrap();
        self.next_answer()
    }

    fn look(&mut self, at: u64) -> Look {
        Look::parse(&self.ask("look", at, ""))
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        // End of input: the child ends.
        drop(self.stdin.take());
        let status = self.process.wait().unwrap();
        if !std::thread::panicking() {
            assert!(status.success(), "a child failed: {status}");
        }
    }
}

/// What a child saw in a `look`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Look {
    state: String,
    openings: u32,
    inflight: u32,
    opened_at: Option<u64>,
    open_for: Option<u64>,
    /// While open: the strict circuit's `retry_after`, the cached circuit's
    /// from the store and from its mirror, and how long the two cached
    /// admissions took.
    rejections: Option<[u64; 4]>,
}

impl Look {
    fn parse(answer: &str) -> Self {
        let words: Vec<&str> = answer.split(' ').collect();
        let number = |word: &str| (word != "-").then(|| word.parse::<u64>().unwrap());
        let rejections: Vec<Option<u64>> = words[5..9].iter().map(|w| number(w)).collect();
        Look {
            state: words[0].to_owned(),
            openings: words[1].parse().unwrap(),
            inflight: words[2].parse().unwrap(),
            opened_at: number(words[3]),
            open_for: number(words[4]),
            rejections: rejections
                .iter()
                .copied()
                .collect::<Option<Vec<u64>>>()
                .map(|r| [r[0], r[1], r[2], r[3]]),
        }
    }
}

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000_000_000;

/// The store's time the test starts at: now, in whole microseconds.
fn start() -> u64 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    nanos(now) / 1_000 * 1_000
}

/// Every child looks at `at`; they all see one opening, the `openings`-th
/// in a row, since `opened_at`, and reject until its end: the same
/// duration and the same `retry_after` to the nanosecond in every
/// process, and in a cached circuit's mirror no later than its end. Its
/// duration.
fn one_opening(fleet: &mut [Child], at: u64, openings: u32, opened_at: u64, url: &str) -> u64 {
    let looks: Vec<Look> = fleet.iter_mut().map(|child| child.look(at)).collect();
    let first = &looks[0];
    let open_for = first.open_for.expect("open");
    println!(
        "recovery {url}: opening {openings} from {opened_at}: open_for {open_for} ns in every \
         process; rejections (strict, cached from the store, cached from its mirror, took) {:?}",
        looks.iter().map(|look| look.rejections).collect::<Vec<_>>()
    );
    for look in &looks {
        assert_eq!(look.state, "Open", "{url}: {looks:?}");
        assert_eq!(look.openings, openings, "{url}: {looks:?}");
        assert_eq!(look.opened_at, Some(opened_at), "{url}: {looks:?}");
        assert_eq!(
            look.open_for,
            Some(open_for),
            "{url}: one duration: {looks:?}"
        );
        let [strict, from_store, from_mirror, took] = look.rejections.expect("rejected");
        assert_eq!(strict, opened_at + open_for - at, "{url}: until its end");
        assert!(
            from_store <= strict && strict - from_store <= took,
            "{url}: a cached circuit's, read again: {strict} {from_store} (took {took})"
        );
        assert!(
            from_mirror <= strict && strict - from_mirror <= took,
            "{url}: the mirror's, from the opening's end: {strict} {from_mirror} (took {took})"
        );
    }
    open_for
}

/// The n-th opening in a row of [`backoff`] lasts `2 s * 2^n`, up to
/// 16 s, less up to half of it.
fn backoff_s(n: u32, open_for: u64, url: &str) {
    let base = ((2 * SEC) << n).min(16 * SEC);
    assert!(
        base / 2 < open_for && open_for <= base,
        "{url}: opening n = {n} of {open_for} ns, not within ({}, {base}]",
        base / 2
    );
}

#[test]
fn a_fleet_sees_one_opening_of_the_backoff_s_duration_drawn_by_one_process() {
    for url in urls() {
        let key = unique("recovery-backoff");
        let mut fleet: Vec<Child> = (0..3)
            .map(|_| Child::spawn(&url, &key, "backoff", None))
            .collect();
        for child in &fleet {
            assert_eq!(
                child.lease,
                2 * SEC,
                "{url}: the lease is the probe timeout"
            );
        }
        // The first opening, from closed.
        let t0 = start();
        assert_eq!(fleet[0].ask("acquire", t0, ""), "closed");
        assert_eq!(fleet[0].ask("end", t0, "0 failure"), "ended");
        let d0 = one_opening(&mut fleet, t0 + MS, 1, t0, &url);
        backoff_s(0, d0, &url);
        // It rejects until its end, to the microsecond, and then a probe
        // from another process fails: the second opening in a row.
        let end = t0 + d0;
        assert_eq!(fleet[2].ask("acquire", end - 1_000, ""), "rejected 1000");
        assert_eq!(fleet[1].ask("acquire", end, ""), "probe");
        assert_eq!(fleet[1].ask("end", end, "0 failure"), "ended");
        let d1 = one_opening(&mut fleet, end + MS, 2, end, &url);
        backoff_s(1, d1, &url);
        // And the third.
        let end = end + d1;
        assert_eq!(fleet[0].ask("acquire", end, ""), "probe");
        assert_eq!(fleet[0].ask("end", end, "0 failure"), "ended");
        let d2 = one_opening(&mut fleet, end + MS, 3, end, &url);
        backoff_s(2, d2, &url);
        // A successful probe closes it; the next opening is a first one.
        let end = end + d2;
        assert_eq!(fleet[2].ask("acquire", end, ""), "probe");
        assert_eq!(fleet[2].ask("end", end, "0 success"), "ended");
        let closed = fleet[1].look(end);
        assert_eq!((closed.state.as_str(), closed.openings), ("Closed", 0));
        assert_eq!(fleet[1].ask("acquire", end + MS, ""), "closed");
        assert_eq!(fleet[1].ask("end", end + MS, "0 failure"), "ended");
        let d = one_opening(&mut fleet, end + 2 * MS, 1, end + MS, &url);
        backoff_s(0, d, &url);
    }
}

#[test]
fn a_fleet_ramps_up_from_one_instant_and_relapses_as_the_next_opening() {
    for url in urls() {
        let key = unique("recovery-ramp");
        let mut fleet: Vec<Child> = (0..3)
            .map(|_| Child::spawn(&url, &key, "ramp", None))
            .collect();
        let t0 = start();
        assert_eq!(fleet[0].ask("force_open", t0, ""), "forced");
        let d0 = one_opening(&mut fleet, t0 + MS, 1, t0, &url);
        // Another process's probe closes it: the ramp starts then.
        let closed = t0 + d0;
        assert_eq!(fleet[1].ask("acquire", closed, ""), "probe");
        assert_eq!(fleet[1].ask("end", closed, "0 success"), "ended");
        for (into, share) in [(0, 0.10), (5 * SEC, 0.5), (8 * SEC, 0.8)] {
            let answers: Vec<String> = fleet
                .iter_mut()
                .map(|child| child.ask("shed", closed + into, "400"))
                .collect();
            println!(
                "ramp {url}: {into} ns into the ramp, admitted (strict cached admission): {answers:?}"
            );
            let first: Vec<u64> = answers[0].split(' ').map(|w| w.parse().unwrap()).collect();
            for answer in &answers {
                assert_eq!(
                    answer, &answers[0],
                    "{url}: one ramp, draw for draw: {answers:?}"
                );
            }
            #[allow(clippy::cast_precision_loss)]
            let shown = first[2] as f64 / 1e6;
            assert!(
                (shown - share).abs() < 1e-3,
                "{url}: admission {shown}, expected {share}"
            );
            #[allow(clippy::cast_precision_loss)]
            let admitted = first[0] as f64 / 400.0;
            assert!(
                (admitted - share).abs() < 0.1,
                "{url}: admitted {admitted} of {share}"
            );
        }
        // A relapse within the ramp, in a third process: the second
        // opening in a row for every process, with the backoff's length.
        let relapse = closed + 8 * SEC + MS;
        let mut tries = 0;
        loop {
            tries += 1;
            assert!(tries < 100, "{url}: 100 calls shed at 80 %");
            match fleet[2].ask("acquire", relapse, "").as_str() {
                "closed" => break,
                "shed ramp_up" => {}
                other => panic!("{url}: {other}"),
            }
        }
        assert_eq!(fleet[2].ask("end", relapse, "0 failure"), "ended");
        let d1 = one_opening(&mut fleet, relapse + MS, 2, relapse, &url);
        backoff_s(1, d1, &url);
    }
}

#[test]
fn a_probe_that_never_ends_holds_a_fleet_s_circuit_half_open_only_until_the_probe_timeout() {
    for url in urls() {
        // Leases that outlast the probe timeout, and the default (the
        // probe timeout itself).
        for lease in [Some(Duration::from_hours(1)), None] {
            probe_timeout(&url, lease);
        }
    }
}

fn probe_timeout(url: &str, lease: Option<Duration>) {
    let key = unique("recovery-timeout");
    let mut fleet: Vec<Child> = (0..3)
        .map(|_| Child::spawn(url, &key, "timeout", lease))
        .collect();
    let expected = lease.map_or(5 * SEC, nanos);
    assert_eq!(fleet[0].lease, expected, "{url}");
    let t0 = start();
    assert_eq!(fleet[0].ask("force_open", t0, ""), "forced");
    // Two probes that never end (their permits kept alive, unconcluded).
    let since = t0 + SEC;
    assert_eq!(fleet[0].ask("acquire", since, ""), "probe");
    assert_eq!(fleet[1].ask("acquire", since + MS, ""), "probe");
    let timeout = since + 5 * SEC;
    assert_eq!(fleet[2].ask("acquire", since + 2 * MS, ""), "rejected 0");
    assert_eq!(fleet[2].ask("acquire", timeout - 1_000, ""), "rejected 0");
    let hung = fleet[2].look(timeout - 1_000);
    assert_eq!(
        (hung.state.as_str(), hung.inflight),
        ("HalfOpen", 2),
        "{url}"
    );
    // At the probe timeout, another process's admission is a new probe,
    // and so is a third's.
    assert_eq!(fleet[1].ask("acquire", timeout, ""), "probe");
    let restarted = fleet[0].look(timeout);
    assert_eq!(
        (
            restarted.state.as_str(),
            restarted.inflight,
            restarted.openings
        ),
        ("HalfOpen", 1, 1),
        "{url}: a new half-open epoch of the same opening"
    );
    assert_eq!(fleet[2].ask("acquire", timeout, ""), "probe");
    assert_eq!(fleet[0].ask("acquire", timeout, ""), "rejected 0");
    // Two successful new probes close it.
    assert_eq!(fleet[1].ask("end", timeout + MS, "1 success"), "ended");
    assert_eq!(fleet[2].ask("end", timeout + MS, "0 success"), "ended");
    let closed = fleet[2].look(timeout + MS);
    assert_eq!(closed.state, "Closed", "{url}");
    // The hung probes' verdicts are stale.
    assert_eq!(fleet[0].ask("end", timeout + 2 * MS, "0 failure"), "ended");
    assert_eq!(fleet[1].ask("end", timeout + 2 * MS, "0 failure"), "ended");
    let after = fleet[1].look(timeout + 2 * MS);
    assert_eq!(after.state, "Closed", "{url}: stale verdicts");
    println!(
        "recovery {url}: lease {expected} ns: two probes hung from {since}; at {timeout} \
         (probe timeout 5 s) another process's admission was a new probe, two new probes \
         closed it, the hung ones' failures were stale"
    );
}
