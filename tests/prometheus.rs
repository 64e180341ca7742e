//! The dashboards against a real Prometheus: the `metrics_server` example
//! runs twice, under the crate's names and under resilience4j's, scraped
//! every second by the Prometheus `.ci/servers.sh` starts
//! (`FUSE_TEST_PROMETHEUS_URL`; each run adds its targets as files in
//! `FUSE_TEST_PROMETHEUS_TARGETS`).
//!
//! - Every query of `docs/grafana/fuse-dashboard.json` returns data for the
//!   server under the crate's names.
//! - Every circuit-breaker panel of resilience4j's Grafana dashboard
//!   (`tests/fixtures/resilience4j-dashboard-queries.txt`) has a query that
//!   returns data for the server under resilience4j's names, but those of
//!   [`NOT_PUBLISHED`], which must return none.
//! - Under resilience4j's names, a circuit's `state="open"` series was 1
//!   at one scrape and 0 at another.
//!
//! The example comes from `cargo test --all-features`, which builds it
//! beside the test binaries (`target/<profile>/examples/metrics_server`).
//! Without `FUSE_TEST_PROMETHEUS_URL` the test says so and passes, unless
//! `CI=true`.
// `serde_json` (the dashboard's JSON, Prometheus's answers) comes with
// `persist`, as with `admin` and `store`.
#![cfg(all(feature = "metrics", feature = "persist"))]

#[path = "common/mod.rs"]
mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The panels of resilience4j's dashboard that read series the crate does
/// not publish yet, by title: each of their queries must return nothing.
/// When one of them starts returning data, the test fails: take its panel
/// off this list. (Call durations, `_seconds_sum` and `_seconds_bucket`,
/// are published since durations were timed: the list is empty.)
const NOT_PUBLISHED: &[&str] = &[];

/// How long the servers are given to show every series.
const PATIENCE: Duration = Duration::from_secs(75);

/// The crate's dashboard and the list of resilience4j's queries.
fn file(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(path)
}

/// The `metrics_server` example, built beside this test's binary.
fn example() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's own path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary in target/<profile>/deps");
    let example = profile
        .join("examples")
        .join(format!("metrics_server{}", std::env::consts::EXE_SUFFIX));
    assert!(
        example.is_file(),
        "{} is not built: `cargo test --all-features` builds it, or \
         `cargo build --example metrics_server --features metrics`",
        example.display()
    );
    example
}

/// One running `metrics_server` and its target file; both go on drop.
struct Server {
    child: Child,
    addr: String,
    target: PathBuf,
    /// Its output after the first line (transitions), for a failure's report.
    output: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Starts the example under `names`, and lists it for Prometheus in
    /// `targets`, labelled `scheme` (`names`) and `run`.
    fn start(example: &Path, names: &str, targets: &Path, run: &str) -> Server {
        let mut child = Command::new(example)
            .args(["--names", names, "--seconds", "120"])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the example starts");
        let mut lines = BufReader::new(child.stdout.take().expect("its stdout")).lines();
        let first = lines
            .next()
            .and_then(Result::ok)
            .unwrap_or_else(|| panic!("the example under {names} printed nothing"));
        let addr = first
            .strip_prefix("listening on ")
            .unwrap_or_else(|| panic!("the example's first line: {first:?}"))
            .to_owned();
        // Read on, so that its prints never block.
        let output = Arc::new(Mutex::new(Vec::new()));
        let kept = output.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let target = targets.join(format!("{run}-{names}.json"));
        let listed = serde_json::json!([{
            "targets": [addr],
            "labels": { "scheme": names, "run": run },
        }]);
        // Written aside and renamed: Prometheus never reads half a file.
        let partial = targets.join(format!(".{run}-{names}.partial"));
        std::fs::write(&partial, listed.to_string()).expect("the target file is written");
        std::fs::rename(&partial, &target).expect("the target file is in place");
        Server {
            child,
            addr,
            target,
            output,
        }
    }

    fn transitions(&self) -> String {
        self.output.lock().unwrap().join("\n")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.target);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Prometheus's HTTP API.
struct Prometheus {
    url: String,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Prometheus {
    /// The result of the instant query `query`: its series, or the error
    /// Prometheus gave.
    fn query(&self, query: &str) -> Result<Vec<Value>, String> {
        let url = reqwest::Url::parse_with_params(
            &format!("{}/api/v1/query", self.url),
            &[("query", query)],
        )
        .map_err(|err| err.to_string())?;
        let text = self.runtime.block_on(async {
            let answer = self
                .client
                .get(url)
                .timeout(Duration::from_secs(10))
                .send()
                .await
                .map_err(|err| err.to_string())?;
            answer.text().await.map_err(|err| err.to_string())
        })?;
        let answer: Value = serde_json::from_str(&text).map_err(|err| format!("{err}: {text}"))?;
        if answer["status"] != "success" {
            return Err(format!("{query}: {text}"));
        }
        Ok(answer["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default())
    }
}

/// `text` as a Prometheus regular expression matching it alone.
fn literal(text: &str) -> String {
    text.replace('.', "\\\\.")
}

/// `expr` with Grafana's variables given values; a variable left over
/// fails the test, naming it.
fn substitute(expr: &str, values: &[(&str, &str)]) -> String {
    let mut query = expr.to_owned();
    // Longest names first, so that no name is replaced inside a longer one.
    let mut values = values.to_vec();
    values.sort_by_key(|(name, _)| std::cmp::Reverse(name.len()));
    for (name, value) in values {
        query = query.replace(name, value);
    }
    assert!(
        !query.contains('$'),
        "a template variable the test gives no value: {expr}"
    );
    query
}

/// Every query of the crate's dashboard (every panel's `targets[].expr`),
/// with its panel's title.
fn fuse_dashboard() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(file("docs/grafana/fuse-dashboard.json"))
        .expect("docs/grafana/fuse-dashboard.json");
    let dashboard: Value = serde_json::from_str(&text).expect("the dashboard is JSON");
    let mut queries = Vec::new();
    let mut panels: Vec<&Value> = dashboard["panels"]
        .as_array()
        .expect("panels")
        .iter()
        .collect();
    while let Some(panel) = panels.pop() {
        if let Some(inner) = panel["panels"].as_array() {
            panels.extend(inner);
        }
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().expect("a target's expr");
            let title = panel["title"].as_str().unwrap_or_default();
            queries.push((title.to_owned(), expr.to_owned()));
        }
    }
    assert!(queries.len() >= 10, "the dashboard's queries: {queries:?}");
    queries
}

/// resilience4j's circuit-breaker panels: each title and its queries.
fn resilience4j_dashboard() -> Vec<(String, Vec<String>)> {
    let text = std::fs::read_to_string(file("tests/fixtures/resilience4j-dashboard-queries.txt"))
        .expect("tests/fixtures/resilience4j-dashboard-queries.txt");
    let mut panels: Vec<(String, Vec<String>)> = Vec::new();
    for line in text.lines().map(str::trim) {
        if let Some(title) = line.strip_prefix("# panel: ") {
            panels.push((title.to_owned(), Vec::new()));
        } else if !line.is_empty() && !line.starts_with('#') {
            panels
                .last_mut()
                .expect("a query after its panel's title")
                .1
                .push(line.to_owned());
        }
    }
    assert!(panels.len() >= 5, "resilience4j's panels: {panels:?}");
    for title in NOT_PUBLISHED {
        assert!(
            panels.iter().any(|(panel, _)| panel == title),
            "{title:?} is not a panel of the fixture"
        );
    }
    panels
}

/// What is still missing, one line each; empty once everything is there.
fn missing(
    prometheus: &Prometheus,
    fuse: &[(String, String)],
    resilience4j: &[(String, Vec<String>)],
    open: &str,
) -> Vec<String> {
    let mut missing = Vec::new();
    for (panel, query) in fuse {
        match prometheus.query(query) {
            Ok(series) if !series.is_empty() => {}
            Ok(_) => missing.push(format!("fuse dashboard, {panel}: no data for {query}")),
            Err(err) => missing.push(format!("fuse dashboard, {panel}: {err}")),
        }
    }
    for (panel, queries) in resilience4j {
        if NOT_PUBLISHED.contains(&panel.as_str()) {
            continue;
        }
        let mut answered = false;
        let mut errors = Vec::new();
        for query in queries {
            match prometheus.query(query) {
                Ok(series) => answered |= !series.is_empty(),
                Err(err) => errors.push(err),
            }
        }
        if !answered {
            missing.push(format!(
                "resilience4j dashboard, {panel}: no query returned data {queries:?} {errors:?}"
            ));
        }
    }
    match prometheus.query(open) {
        Ok(series) if !series.is_empty() => {}
        Ok(_) => missing.push(format!("no circuit both open and not open: {open}")),
        Err(err) => missing.push(err),
    }
    missing
}

#[test]
fn the_dashboards_queries_return_data() {
    let Some(url) = common::server("FUSE_TEST_PROMETHEUS_URL", "Prometheus dashboard") else {
        return;
    };
    let targets = PathBuf::from(
        std::env::var("FUSE_TEST_PROMETHEUS_TARGETS")
            .expect("FUSE_TEST_PROMETHEUS_TARGETS names the directory of its file_sd targets"),
    );
    let example = example();
    let run = common::unique("prometheus");
    let prometheus = Prometheus {
        url: url.trim_end_matches('/').to_owned(),
        client: reqwest::Client::new(),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime"),
    };
    let started = Instant::now();
    let fuse = Server::start(&example, "fuse", &targets, &run);
    let resilience4j = Server::start(&example, "resilience4j", &targets, &run);

    let fuse_queries: Vec<(String, String)> = fuse_dashboard()
        .into_iter()
        .map(|(panel, expr)| {
            let query = substitute(
                &expr,
                &[
                    ("$instance", &literal(&fuse.addr)),
                    ("$key", ".+"),
                    ("$__rate_interval", "1m"),
                    ("$__range", "5m"),
                ],
            );
            (panel, query)
        })
        .collect();
    let panels: Vec<(String, Vec<String>)> = resilience4j_dashboard()
        .into_iter()
        .map(|(panel, queries)| {
            let values = [
                ("$instance", literal(&resilience4j.addr)),
                ("$circuitbreaker_name", ".+".to_owned()),
                ("$application", ".*".to_owned()),
            ];
            let values: Vec<(&str, &str)> = values.iter().map(|(n, v)| (*n, v.as_str())).collect();
            let queries = queries.iter().map(|q| substitute(q, &values)).collect();
            (panel, queries)
        })
        .collect();

    let mut left = Vec::new();
    while started.elapsed() < PATIENCE {
        std::thread::sleep(Duration::from_secs(2));
        // The state series over the run so far: 1 at one scrape, 0 at another.
        let series = format!(
            "resilience4j_circuitbreaker_state{{state=\"open\",instance=\"{}\",run=\"{run}\"}}[{}s]",
            resilience4j.addr,
            started.elapsed().as_secs() + 1
        );
        let open = format!("(max_over_time({series}) == 1) and (min_over_time({series}) == 0)");
        left = missing(&prometheus, &fuse_queries, &panels, &open);
        if left.is_empty() {
            break;
        }
    }
    assert!(
        left.is_empty(),
        "after {:?}, still missing:\n{}\n\nunder the crate's names:\n{}\n\nunder resilience4j's:\n{}",
        started.elapsed(),
        left.join("\n"),
        fuse.transitions(),
        resilience4j.transitions()
    );

    // The panels of series not published yet read nothing, even now that
    // every other panel does.
    for (panel, queries) in &panels {
        if !NOT_PUBLISHED.contains(&panel.as_str()) {
            continue;
        }
        for query in queries {
            let series = prometheus.query(query).expect("the query runs");
            assert!(
                series.is_empty(),
                "{panel:?} reads data now ({query}: {series:?}): take it off NOT_PUBLISHED"
            );
        }
    }
    eprintln!(
        "{} queries of the crate's dashboard and {} panels of resilience4j's answered in {:?}",
        fuse_queries.len(),
        panels.len() - NOT_PUBLISHED.len(),
        started.elapsed()
    );
}
