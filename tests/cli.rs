//! The `fuse` command against a real Redis (`FUSE_TEST_REDIS_URL`; under
//! `CI=true` a missing server fails the run).
#![cfg(feature = "cli")]

use std::process::{Command, Output};

fn redis_url() -> Option<String> {
    match std::env::var("FUSE_TEST_REDIS_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and no FUSE_TEST_REDIS_URL: the fuse command's tests cannot be skipped"
            );
            eprintln!("FUSE_TEST_REDIS_URL is not set: the fuse command's tests skipped");
            None
        }
    }
}

/// Runs `fuse` with `args` on the server at `url`, under the app `app`.
fn fuse(url: &str, app: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuse"))
        .args(["--redis", url, "--app", app])
        .args(args)
        .env_remove("FUSE_REDIS_URL")
        .output()
        .expect("the fuse binary")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn app() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    format!("cli{}x{nanos}", std::process::id())
}

#[test]
fn open_close_and_reset_show_in_the_status() {
    let Some(url) = redis_url() else { return };
    let app = app();
    stdout(&fuse(&url, &app, &["open", "billing:charge"]));
    stdout(&fuse(&url, &app, &["open", "search"]));
    let table = stdout(&fuse(&url, &app, &["status"]));
    let key = format!("fuse:{app}:billing:charge");
    let line = table
        .lines()
        .find(|line| line.starts_with(&key))
        .expect(&table);
    assert!(line.contains(" open "), "{line}");
    assert!(line.contains("0/2"), "{line}");
    assert!(
        line.trim_end().ends_with('s'),
        "time until half-open: {line}"
    );
    assert!(table.contains(&format!("fuse:{app}:search")), "{table}");

    let json = stdout(&fuse(&url, &app, &["status", "billing:charge", "--json"]));
    let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(value["key"], key.as_str());
    assert_eq!(value["state"], "open");
    assert!(value["half_open_in_ms"].as_u64().unwrap() <= 30_000);

    stdout(&fuse(&url, &app, &["close", "billing:charge"]));
    let json = stdout(&fuse(&url, &app, &["status", "billing:charge", "--json"]));
    assert!(json.contains("\"state\":\"closed\""), "{json}");
    stdout(&fuse(&url, &app, &["reset", "search"]));
    let json = stdout(&fuse(&url, &app, &["status", "search", "--json"]));
    assert!(json.contains("\"state\":\"closed\""), "{json}");
}

#[test]
fn a_corrupt_payload_and_an_unreachable_server_are_clear_errors() {
    let Some(url) = redis_url() else { return };
    let app = app();
    let key = format!("fuse:{app}:billing");
    let mut redis = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    let () = redis::cmd("SET")
        .arg(&key)
        .arg("{not json")
        .query(&mut redis)
        .unwrap();
    let out = fuse(&url, &app, &["status", "billing"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(&key) && err.contains("not a circuit"), "{err}");
    let () = redis::cmd("DEL").arg(&key).query(&mut redis).unwrap();

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = fuse(&format!("redis://127.0.0.1:{port}"), &app, &["status"]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unreachable") && err.contains(&port.to_string()),
        "{err}"
    );
}
