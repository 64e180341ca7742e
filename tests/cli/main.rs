//! The `fuse` command against a real Redis (`FUSE_TEST_REDIS_URL`), a real
//! PostgreSQL (`FUSE_TEST_DATABASE_URL`) and SQLite (a file of the test's
//! own); under `CI=true` a missing server fails the run.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

mod api;
#[path = "../common/mod.rs"]
mod common;
mod graded;
mod listing;
mod openings;
mod quorum;
mod rate;
mod safety;
mod settings;
mod status;

use common::server;

/// A store to run the command on: its flag and URL.
struct Target {
    flag: &'static str,
    url: String,
}

/// Every store the machine has, SQL tables made.
fn targets() -> Vec<Target> {
    let mut targets = Vec::new();
    if let Some(url) = server("FUSE_TEST_REDIS_URL", "fuse command's Redis") {
        targets.push(Target {
            flag: "--redis",
            url,
        });
    }
    let sqlite = format!(
        "sqlite://{}/cli-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    );
    for url in std::iter::once(sqlite).chain(server(
        "FUSE_TEST_DATABASE_URL",
        "fuse command's PostgreSQL",
    )) {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let store = fuse_breaker::store::SqlStore::open(&url).unwrap();
                store.ensure_schema().await.unwrap();
            });
        targets.push(Target {
            flag: "--database-url",
            url,
        });
    }
    targets
}

/// Runs `fuse` with `args` on `target`, under the app `app`.
fn fuse(target: &Target, app: &str, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_fuse"))
        .args([target.flag, &target.url, "--app", app])
        .args(args)
        .env_remove("FUSE_REDIS_URL")
        .env_remove("FUSE_DATABASE_URL")
        .env_remove("FUSE_DATABASE_TABLE")
        .env_remove("FUSE_ADMIN_URL")
        .env_remove("FUSE_ADMIN_TOKEN")
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

/// Writes `payload` under `key` as another program would.
fn put(target: &Target, key: &str, payload: &str) {
    if target.flag == "--redis" {
        let mut redis = redis::Client::open(target.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let () = redis::cmd("SET")
            .arg(key)
            .arg(payload)
            .query(&mut redis)
            .unwrap();
        return;
    }
    let url = target.url.clone();
    let (key, payload) = (key.to_owned(), payload.to_owned());
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move {
            if url.starts_with("sqlite:") {
                let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
                sqlx::query("INSERT INTO fuse_circuits (key, payload) VALUES (?1, ?2)")
                    .bind(key)
                    .bind(payload)
                    .execute(&pool)
                    .await
                    .unwrap();
            } else {
                let pool = sqlx::PgPool::connect(&url).await.unwrap();
                sqlx::query("INSERT INTO fuse_circuits (key, payload) VALUES ($1, $2::json)")
                    .bind(key)
                    .bind(payload)
                    .execute(&pool)
                    .await
                    .unwrap();
            }
        });
}

/// `admin` with the token `s3cret`, nested under `/ops/fuse` and served on
/// loopback by `runtime`: the command's target.
fn serve_admin(runtime: &tokio::runtime::Runtime, admin: fuse_breaker::admin::Admin) -> Target {
    let router = axum::Router::new().nest("/ops/fuse", admin.token("s3cret").router().unwrap());
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, router).await });
    Target {
        flag: "--url",
        url: format!("http://{addr}/ops/fuse"),
    }
}

/// A payload with milon/fuse's five fields: a closed circuit.
const CLOSED: &str = r#"{"state":"closed","opened_at":null,"failures":[],"half_open_successes":0,"half_open_inflight":0}"#;

/// The command with nothing of the environment's stores or API.
fn command() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuse"));
    for var in [
        "FUSE_REDIS_URL",
        "FUSE_DATABASE_URL",
        "FUSE_DATABASE_TABLE",
        "FUSE_ADMIN_URL",
        "FUSE_ADMIN_TOKEN",
        "FUSE_APP",
        "FUSE_KEY_PREFIX",
    ] {
        command.env_remove(var);
    }
    command
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// Writes `payload` under the key of bytes `key` (Redis and SQLite: any
/// bytes; PostgreSQL: UTF-8 only) as another program would.
fn put_bytes(target: &Target, key: &[u8], payload: &str) {
    put_many(target, &[key.to_vec()], payload);
}

/// Writes `payload` under each of `keys`, in one round trip or transaction.
fn put_many(target: &Target, keys: &[Vec<u8>], payload: &str) {
    if target.flag == "--redis" {
        let mut redis = redis::Client::open(target.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let mut pipe = redis::pipe();
        for key in keys {
            pipe.cmd("SET").arg(key).arg(payload).ignore();
        }
        let () = pipe.query(&mut redis).unwrap();
        return;
    }
    let url = target.url.clone();
    block_on(async move {
        if url.starts_with("sqlite:") {
            let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
            let mut tx = pool.begin().await.unwrap();
            for key in keys {
                // Text where it is UTF-8, as a writer would; a blob otherwise.
                let insert = "INSERT INTO fuse_circuits (key, payload) VALUES (?1, ?2)";
                let query = match std::str::from_utf8(key) {
                    Ok(text) => sqlx::query(insert).bind(text.to_owned()),
                    Err(_) => sqlx::query(insert).bind(key.clone()),
                };
                query.bind(payload).execute(&mut *tx).await.unwrap();
            }
            tx.commit().await.unwrap();
        } else {
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            let keys: Vec<String> = keys
                .iter()
                .map(|key| String::from_utf8(key.clone()).unwrap())
                .collect();
            sqlx::query(
                "INSERT INTO fuse_circuits (key, payload) SELECT unnest($1::text[]), $2::json",
            )
            .bind(keys)
            .bind(payload)
            .execute(&pool)
            .await
            .unwrap();
        }
    });
}

/// Deletes every key that starts with `prefix` (letters, digits and `:`).
fn remove_under(target: &Target, prefix: &str) {
    if target.flag == "--redis" {
        let mut redis = redis::Client::open(target.url.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let keys: Vec<Vec<u8>> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query(&mut redis)
            .unwrap();
        for chunk in keys.chunks(1000) {
            let _: i64 = redis::cmd("DEL").arg(chunk).query(&mut redis).unwrap();
        }
        return;
    }
    let (url, pattern) = (target.url.clone(), format!("{prefix}%"));
    block_on(async move {
        let delete = "DELETE FROM fuse_circuits WHERE key LIKE $1";
        if url.starts_with("sqlite:") {
            let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
            sqlx::query(delete)
                .bind(pattern)
                .execute(&pool)
                .await
                .unwrap();
        } else {
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            sqlx::query(delete)
                .bind(pattern)
                .execute(&pool)
                .await
                .unwrap();
        }
    });
}

/// The line of the table that starts with `key`.
fn line_of<'a>(table: &'a str, key: &str) -> &'a str {
    table
        .lines()
        .find(|line| line.split_whitespace().next() == Some(key))
        .unwrap_or_else(|| panic!("no line for {key:?} in:\n{table}"))
}

/// Whether `bytes` hold a control character a terminal acts on (C0 but
/// the line break, DEL, or C1 in UTF-8).
fn has_control(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .chars()
        .any(|c| c != '\n' && c.is_control())
}

/// An admin API on loopback that answers every `GET /circuits` with
/// `page(n)` (n from 0), at most `most` times (then 500): how many it
/// answered.
fn fake_api(
    most: usize,
    page: impl Fn(usize) -> String + Send + 'static,
) -> (String, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
    use std::io::{BufRead, BufReader, Write};
    use std::sync::atomic::{AtomicUsize, Ordering};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/fuse", listener.local_addr().unwrap());
    let served = std::sync::Arc::new(AtomicUsize::new(0));
    let count = served.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let n = count.fetch_add(1, Ordering::SeqCst);
            let (status, body) = if n < most {
                ("200 OK", page(n))
            } else {
                ("500 Internal Server Error", "{}".to_owned())
            };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\ncontent-type: application/json\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, served)
}

/// A circuit of the admin API as JSON, with this key and state.
fn view(key: &str, state: &str) -> serde_json::Value {
    serde_json::json!({
        "key": key, "name": "n", "operation": null, "shared": false, "state": state,
        "failures": 0, "failure_ages_ms": [], "probes_in_flight": 0, "probes_allowed": 2,
        "probe_successes": 0, "opened_at": null, "half_open_in_ms": null,
        "config": {"failure_threshold": 8, "failure_window_ms": 60000,
                   "open_duration_ms": 30000, "half_open_probes": 2},
        "store_error": null,
    })
}

/// A rate circuit of an admin API as JSON: its window and its rule.
fn rate_view(key: &str, calls: u64, failed: u64, slow: u64) -> serde_json::Value {
    let mut view = view(key, "closed");
    view["calls"] = calls.into();
    view["failed"] = failed.into();
    view["slow"] = slow.into();
    let config = &mut view["config"];
    config["policy"] = "rate".into();
    config["failure_rate"] = 50.into();
    config["minimum_calls"] = 20.into();
    config["window_buckets"] = 10.into();
    config["slow_call_duration_ms"] = 2000.into();
    config["slow_call_rate"] = 100.into();
    view
}
