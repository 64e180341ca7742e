//! `fuse status` of a row milon/fuse wrote: an open row shows the failures
//! it keeps (those that opened it), and its durations, which the row does
//! not carry, are marked as assumed from this process's
//! `FUSE_OPEN_DURATION`; an opening of the crate's own is shown as it is.
//! On SQLite, in a file of the test's own.
#![cfg(feature = "cli")]

use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::Config;
use fuse_breaker::store::{SqlStore, Store};

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// Runs `fuse` on the database at `url` with `args`, under a local open
/// duration of 45 s.
fn fuse(url: &str, args: &[&str]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuse"));
    for (var, _) in std::env::vars() {
        if var.starts_with("FUSE_") {
            command.env_remove(var);
        }
    }
    command
        .env("FUSE_OPEN_DURATION", "45s")
        .args(["--database-url", url])
        .args(args)
        .output()
        .expect("the fuse binary")
}

#[test]
fn an_open_row_milon_wrote_shows_its_failures_and_an_assumed_duration() {
    let url = format!(
        "sqlite://{}/cli-milon-rows-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    );
    block_on(async {
        let store = SqlStore::open(&url).unwrap();
        store.ensure_schema().await.unwrap();
        let now = store.load("fuse:clock").await.unwrap().now.as_secs();
        // milon/fuse opened `billing` a second ago, with its 8 failures
        // (its open duration, 2 s, is in its config, not in the row).
        let failures: Vec<String> = (0..8).map(|i| (now - 8 + i).to_string()).collect();
        let milon = format!(
            r#"{{"state":"open","opened_at":{},"failures":[{}],"half_open_successes":0,"half_open_inflight":0}}"#,
            now - 1,
            failures.join(",")
        );
        store
            .swap(
                "fuse:billing",
                None,
                milon.as_bytes(),
                Duration::from_mins(2),
                false,
            )
            .await
            .unwrap();
        // The crate opens `search` by two failures: its end is known.
        let config = Config::builder()
            .failure_threshold(2)
            .open_duration(Duration::from_secs(45))
            .build()
            .unwrap();
        let search = fuse_breaker::Fuse::builder("search")
            .store(Arc::new(store))
            .config(config)
            .build();
        for _ in 0..2 {
            search.try_acquire().await.unwrap().failure().await.unwrap();
        }
    });

    let out = fuse(&url, &["status"]);
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{table}");
    let line = |key: &str| {
        table
            .lines()
            .find(|line| line.starts_with(key))
            .unwrap_or_else(|| panic!("no {key} in {table}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    let billing = line("fuse:billing");
    assert_eq!(billing[1..3], ["open", "8"], "{table}");
    assert_eq!(billing[5], "45.0s*", "{table}");
    assert!(billing[6].ends_with("s*"), "{table}");
    let search = line("fuse:search");
    assert_eq!(search[1..3], ["open", "2"], "{table}");
    assert_eq!(search[5], "45.0s", "{table}");
    assert!(
        table.contains("* assumed from this process's open duration (FUSE_OPEN_DURATION)"),
        "{table}"
    );

    let out = fuse(&url, &["status", "billing", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["failures"], 8, "{json}");
    assert_eq!(
        json["failures_at"].as_array().map(Vec::len),
        Some(8),
        "{json}"
    );
    assert_eq!(json["open_for_assumed"], true, "{json}");
    assert_eq!(json["open_for_ms"], 45_000, "{json}");
    let out = fuse(&url, &["status", "search", "--json"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(json["open_for_assumed"], false, "{json}");
}
