//! A fleet on one circuit key, measured: what the key costs the store as
//! the fleet grows, and how soon an opening reaches every process.
//!
//! ```sh
//! cargo run --release --example fleet_sim --features redis -- redis://127.0.0.1:6379
//! cargo run --release --example fleet_sim --features redis -- --quick
//! ```
//!
//! The URL is opened with `fuse_breaker::store::open` (`FUSE_TEST_REDIS_URL`
//! when none is given). The example runs itself as P child processes (1,
//! 2, 4, 8 and 16; `--processes 1,4` to choose), each with its own runtime,
//! connection and `--tasks T` tasks (8 by default), all on one key (a new
//! key per row, unique to the run), started together once every one is
//! ready and run for `--seconds S` (2 by default).
//!
//! Load rows, strict and cached (100 ms staleness), with no failures, 1 %
//! and 50 % (spread evenly over each process's calls; the `rate` policy
//! opening at 25 % over 100 calls, open for 500 ms): calls per second of
//! the fleet and per process, the share rejected, round trips per call
//! (counted by each process's `Counting` store), and from the server's
//! `INFO`, read before and after the row and summed over every primary of
//! a cluster: scripts run (each round trip of the crate's store is one
//! `EVALSHA`), commands processed (those the scripts run included), and
//! the server's CPU time over the row's time. The processes' own CPU is
//! reported too: more processes than cores make the fleet wait for CPU,
//! not only for the store.
//!
//! Spread rows (cached, P of 2 and more): one process opens the circuit
//! (`force_open`) and closes it again, `--openings N` times (200 by
//! default), each change once every other process has seen the one
//! before; every other process looks at its mirror every 200 µs (an
//! admission the mirror decides, dropped unused: no round trip; its
//! staleness, 5 s, is longer than a row takes, so only the read each
//! announcement asks for changes it) and tells when it first saw each
//! change. The delay of an opening
//! runs from just before its write was sent to the moment a process saw
//! it, both read on the system's clock, which every process on the
//! machine reads alike; its percentiles are given for every other process
//! (the last of them to see it) and for one.
//!
//! `--quick` runs P of 1 and 4 only, 1 s per row and 100 openings (under
//! 30 s); `--spread-only` runs the spread rows alone.

#[path = "../common/load.rs"]
#[allow(dead_code)]
mod load;
mod server;
mod spread;
mod worker;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use server::Counters;

/// The shares of failing calls, per thousand, each row runs at.
const FAILURES: [u64; 3] = [0, 10, 500];

/// How often a spread row's watchers look at their mirror.
const POLL: Duration = Duration::from_micros(200);

struct Options {
    url: String,
    seconds: f64,
    tasks: usize,
    processes: Vec<usize>,
    openings: usize,
    /// The spread rows alone (no load rows).
    spread_only: bool,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = if args.first().map(String::as_str) == Some("--worker") {
        run_worker(&args[1..])
    } else {
        options(args).and_then(|options| parent(&options))
    };
    if let Err(e) = result {
        eprintln!("fleet_sim: {e}");
        std::process::exit(1);
    }
}

fn options(args: Vec<String>) -> Result<Options, String> {
    let mut options = Options {
        url: std::env::var("FUSE_TEST_REDIS_URL").unwrap_or_default(),
        seconds: 2.0,
        tasks: 8,
        processes: vec![1, 2, 4, 8, 16],
        openings: 200,
        spread_only: false,
    };
    let mut args = args.into_iter();
    let mut quick = false;
    while let Some(arg) = args.next() {
        let mut value = |what: &str| args.next().ok_or_else(|| format!("{arg} takes {what}"));
        match arg.as_str() {
            "--quick" => quick = true,
            "--spread-only" => options.spread_only = true,
            "--seconds" => options.seconds = number(&value("a number of seconds")?)?,
            "--tasks" => options.tasks = number(&value("a number of tasks")?)?,
            "--openings" => options.openings = number(&value("a number of openings")?)?,
            "--processes" => {
                options.processes = value("a list like 1,4")?
                    .split(',')
                    .map(number)
                    .collect::<Result<_, _>>()?;
            }
            _ if arg.starts_with("--") => return Err(format!("unknown option {arg}")),
            _ => options.url = arg,
        }
    }
    if quick {
        options.processes = vec![1, 4];
        options.seconds = 1.0;
        options.openings = 100;
    }
    if options.url.is_empty() {
        return Err(
            "usage: fleet_sim [redis://host:port] [--quick] [--seconds S] [--tasks T] \
             [--processes 1,2,4] [--openings N] [--spread-only] (or FUSE_TEST_REDIS_URL)"
                .to_owned(),
        );
    }
    if options.processes.contains(&0) || options.tasks == 0 {
        return Err("processes and tasks must be more than 0".to_owned());
    }
    if !(options.seconds > 0.0 && options.seconds <= 3600.0) {
        return Err(format!(
            "--seconds takes more than 0 and at most 3600, not {}",
            options.seconds
        ));
    }
    Ok(options)
}

fn number<T: std::str::FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a number"))
}

/// A child process's work, from its arguments.
fn run_worker(args: &[String]) -> Result<(), String> {
    let arg = |i: usize| {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("a worker needs argument {i}"))
    };
    match arg(0)? {
        "load" => worker::Load {
            url: arg(1)?.to_owned(),
            name: arg(2)?.to_owned(),
            cached: arg(3)? == "cached",
            per_mille: number(arg(4)?)?,
            tasks: number(arg(5)?)?,
            seconds: number(arg(6)?)?,
        }
        .run(),
        "open" => worker::opener(arg(1)?, arg(2)?),
        "watch" => worker::watcher(arg(1)?, arg(2)?, Duration::from_micros(number(arg(3)?)?)),
        other => Err(format!("no worker {other:?}")),
    }
}

/// The value of `name=` in a worker's line.
fn field<'a>(line: &'a str, name: &str) -> Option<&'a str> {
    line.split(' ')
        .find_map(|field| field.strip_prefix(name)?.strip_prefix('='))
}

/// A number in a worker's line (0 when absent).
fn count<T: std::str::FromStr + Default>(line: &str, name: &str) -> T {
    field(line, name)
        .and_then(|value| value.parse().ok())
        .unwrap_or_default()
}

/// The child processes of one row.
struct Fleet {
    children: Vec<(Child, Option<ChildStdin>, BufReader<ChildStdout>)>,
}

impl Fleet {
    fn spawn(workers: &[Vec<String>]) -> Result<Fleet, String> {
        let exe = std::env::current_exe().map_err(|e| format!("this program's path: {e}"))?;
        let mut children = Vec::with_capacity(workers.len());
        for args in workers {
            let mut child = Command::new(&exe)
                .arg("--worker")
                .args(args)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| format!("a child process: {e}"))?;
            let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
            let stdout = stdout.ok_or("a child's stdout")?;
            children.push((child, stdin, BufReader::new(stdout)));
        }
        Ok(Fleet { children })
    }

    /// The next line of child `i`.
    fn read(&mut self, i: usize) -> Result<String, String> {
        let (_, _, stdout) = &mut self.children[i];
        let mut line = String::new();
        match stdout.read_line(&mut line) {
            Ok(0) => Err(format!(
                "child {i} ended without a word (see its error above)"
            )),
            Ok(_) => Ok(line.trim_end().to_owned()),
            Err(e) => Err(format!("child {i}: {e}")),
        }
    }

    /// The next line of every child in `range`.
    fn read_all(&mut self, range: std::ops::Range<usize>) -> Result<Vec<String>, String> {
        range.map(|i| self.read(i)).collect()
    }

    /// Waits for every child to say it is ready.
    fn ready(&mut self) -> Result<(), String> {
        for line in self.read_all(0..self.children.len())? {
            if line != "ready" {
                return Err(format!("a child said {line:?}, not ready"));
            }
        }
        Ok(())
    }

    /// Tells `line` to every child in `range`.
    fn tell(&mut self, range: std::ops::Range<usize>, line: &str) -> Result<(), String> {
        for (child, stdin, _) in &mut self.children[range] {
            let stdin = stdin.as_mut().ok_or("a child's stdin")?;
            writeln!(stdin, "{line}")
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("child {}: {e}", child.id()))?;
        }
        Ok(())
    }

    fn wait(mut self) -> Result<(), String> {
        for (child, stdin, _) in &mut self.children {
            drop(stdin.take());
            let status = child.wait().map_err(|e| e.to_string())?;
            if !status.success() {
                return Err(format!("child {} ended with {status}", child.id()));
            }
        }
        Ok(())
    }
}

impl Drop for Fleet {
    fn drop(&mut self) {
        for (child, _, _) in &mut self.children {
            // Ended already when the row went well; killed when it did not.
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// One load row, summed over its processes.
#[derive(Default)]
struct LoadRow {
    per_second: f64,
    calls: u64,
    rejected: u64,
    errors: u64,
    unreachable: u64,
    trips: u64,
    client_cpu: f64,
    seconds: f64,
    store: Counters,
    wall: f64,
}

fn load_row(
    options: &Options,
    nodes: &[redis::Client],
    name: &str,
    processes: usize,
    cached: bool,
    per_mille: u64,
) -> Result<LoadRow, String> {
    let mode = if cached { "cached" } else { "strict" };
    let args: Vec<String> = [
        "load",
        &options.url,
        name,
        mode,
        &per_mille.to_string(),
        &options.tasks.to_string(),
        &options.seconds.to_string(),
    ]
    .map(str::to_owned)
    .to_vec();
    let mut fleet = Fleet::spawn(&vec![args; processes])?;
    fleet.ready()?;
    let before = server::counters(nodes)?;
    let started = Instant::now();
    fleet.tell(0..processes, "go")?;
    let lines = fleet.read_all(0..processes)?;
    let wall = started.elapsed().as_secs_f64();
    let after = server::counters(nodes)?;
    fleet.wait()?;
    let mut row = LoadRow {
        store: before.until(after, nodes.len()),
        wall,
        ..LoadRow::default()
    };
    for line in &lines {
        let (calls, seconds): (u64, f64) = (count(line, "calls"), count(line, "seconds"));
        #[allow(clippy::cast_precision_loss)]
        let rate = calls as f64 / seconds.max(1e-9);
        row.per_second += rate;
        row.calls += calls;
        row.rejected += count::<u64>(line, "rejected");
        row.errors += count::<u64>(line, "errors");
        row.unreachable += count::<u64>(line, "unreachable");
        row.trips += count::<u64>(line, "trips");
        row.client_cpu += count::<f64>(line, "cpu");
        row.seconds = row.seconds.max(seconds);
    }
    Ok(row)
}

/// One spread row: `processes` processes, one of them opening the
/// circuit and closing it `openings` times, each change made once every
/// other process saw the one before; the delays, and the round trips the
/// others made.
fn spread_row(
    options: &Options,
    name: &str,
    processes: usize,
) -> Result<(spread::Spread, u64), String> {
    let opener = ["open", &options.url, name].map(str::to_owned).to_vec();
    let poll = POLL.as_micros().to_string();
    let watcher = ["watch", &options.url, name, &poll]
        .map(str::to_owned)
        .to_vec();
    let mut workers = vec![opener];
    workers.extend(std::iter::repeat_n(watcher, processes - 1));
    let mut fleet = Fleet::spawn(&workers)?;
    fleet.ready()?;
    let mut spread = spread::Spread::default();
    let seen = |fleet: &mut Fleet, what: &str| -> Result<Vec<u64>, String> {
        let lines = fleet.read_all(1..processes)?;
        lines
            .iter()
            .map(|line| {
                field(line, what)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| format!("a watcher said {line:?}, not {what}="))
            })
            .collect()
    };
    for _ in 0..options.openings {
        fleet.tell(0..1, "open")?;
        let at = count(&fleet.read(0)?, "at");
        spread.add(at, &seen(&mut fleet, "open")?);
        fleet.tell(0..1, "close")?;
        fleet.read(0)?;
        seen(&mut fleet, "closed")?;
    }
    fleet.tell(1..processes, "stop")?;
    let trips = fleet
        .read_all(1..processes)?
        .iter()
        .map(|line| count::<u64>(line, "trips"))
        .sum();
    fleet.wait()?;
    spread.sort();
    Ok((spread, trips))
}

#[allow(clippy::cast_precision_loss)]
fn ratio(part: u64, whole: u64) -> f64 {
    part as f64 / whole.max(1) as f64
}

fn parent(options: &Options) -> Result<(), String> {
    let nodes = server::primaries(&options.url)?;
    let run = load::unique("fleet");
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    println!(
        "Store {} ({} primar{}), {} core(s) here, {} task(s) per process, {} s per row, \
         key {run}-N\n",
        fuse_breaker::redact::url(&options.url),
        nodes.len(),
        if nodes.len() == 1 { "y" } else { "ies" },
        cores,
        options.tasks,
        options.seconds,
    );
    println!(
        "| mode | failures | processes | calls/s (fleet) | calls/s per process | rejected | \
         round trips per call | store requests/s | requests per call | store commands/s | \
         store CPU | requests per store CPU-second | client CPU (cores) |"
    );
    println!(
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    let mut rows = 0;
    let loads: &[bool] = if options.spread_only {
        &[]
    } else {
        &[false, true]
    };
    for &cached in loads {
        for per_mille in FAILURES {
            for &processes in &options.processes {
                rows += 1;
                let name = format!("{run}-{rows}");
                let row = load_row(options, &nodes, &name, processes, cached, per_mille)?;
                print_load(cached, per_mille, processes, &row);
            }
        }
    }
    println!(
        "\n| processes | openings | seen by every other process: p50 (ms) | p99 (ms) | max (ms) | \
         by one process: p50 (ms) | p99 (ms) | watchers' round trips |"
    );
    println!("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
    for &processes in options.processes.iter().filter(|&&p| p > 1) {
        rows += 1;
        let (spread, trips) = spread_row(options, &format!("{run}-{rows}"), processes)?;
        println!(
            "| {processes} | {} | {} | {} | {} | {} | {} | {trips} |",
            options.openings,
            spread::quantile(&spread.all, 0.5),
            spread::quantile(&spread.all, 0.99),
            spread::quantile(&spread.all, 1.0),
            spread::quantile(&spread.each, 0.5),
            spread::quantile(&spread.each, 0.99),
        );
    }
    Ok(())
}

#[allow(clippy::cast_precision_loss)]
fn print_load(cached: bool, per_mille: u64, processes: usize, row: &LoadRow) {
    let mode = if cached { "cached" } else { "strict" };
    let failures = format!("{} %", per_mille as f64 / 10.0);
    let mut errors = Vec::new();
    if row.errors != 0 {
        errors.push(format!(" ({} store errors)", row.errors));
    }
    if row.unreachable != 0 {
        errors.push(format!(" ({} with the store unreachable)", row.unreachable));
    }
    let errors = errors.concat();
    let store = &row.store;
    println!(
        "| {mode} | {failures} | {processes} | {:.0} | {:.0} | {:.1} %{errors} | {:.3} | {:.0} | \
         {:.5} | {:.0} | {:.0} % | {:.0} | {:.2} |",
        row.per_second,
        row.per_second / processes as f64,
        100.0 * ratio(row.rejected, row.calls),
        ratio(row.trips, row.calls),
        store.scripts as f64 / row.wall,
        ratio(store.scripts, row.calls),
        store.commands as f64 / row.wall,
        100.0 * store.cpu / row.wall,
        store.scripts as f64 / store.cpu.max(1e-9),
        row.client_cpu / row.seconds.max(1e-9),
    );
}
