//! The `fuse` command against a real Redis (`FUSE_TEST_REDIS_URL`), a real
//! PostgreSQL (`FUSE_TEST_DATABASE_URL`) and SQLite (a file of the test's
//! own); under `CI=true` a missing server fails the run.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

#[path = "common/mod.rs"]
mod common;

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

#[test]
fn open_close_and_reset_show_in_the_status() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        stdout(&fuse(&target, &app, &["open", "billing:charge"]));
        stdout(&fuse(&target, &app, &["open", "search"]));
        let table = stdout(&fuse(&target, &app, &["status"]));
        let key = format!("fuse:{app}:billing:charge");
        let line = table
            .lines()
            .find(|line| line.starts_with(&key))
            .unwrap_or_else(|| panic!("{at}: {table}"));
        assert!(line.contains(" open "), "{at}: {line}");
        assert!(line.contains("0/2"), "{at}: {line}");
        assert!(
            line.trim_end().ends_with('s'),
            "{at}: time until half-open: {line}"
        );
        assert!(
            table.contains(&format!("fuse:{app}:search")),
            "{at}: {table}"
        );

        let json = stdout(&fuse(
            &target,
            &app,
            &["status", "billing:charge", "--json"],
        ));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(value["key"], key.as_str(), "{at}");
        assert_eq!(value["state"], "open", "{at}");
        assert!(value["half_open_in_ms"].as_u64().unwrap() <= 30_000, "{at}");

        stdout(&fuse(&target, &app, &["close", "billing:charge"]));
        let json = stdout(&fuse(
            &target,
            &app,
            &["status", "billing:charge", "--json"],
        ));
        assert!(json.contains("\"state\":\"closed\""), "{at}: {json}");
        stdout(&fuse(&target, &app, &["reset", "search"]));
        let json = stdout(&fuse(&target, &app, &["status", "search", "--json"]));
        assert!(json.contains("\"state\":\"closed\""), "{at}: {json}");
    }
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

#[test]
fn a_corrupt_payload_and_an_unreachable_server_are_clear_errors() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let key = format!("fuse:{app}:billing");
        // JSON that is not a circuit (all a `json` column takes).
        put(&target, &key, "[1, 2]");
        let out = fuse(&target, &app, &["status", "billing"]);
        assert!(!out.status.success(), "{at}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&key) && err.contains("not a circuit"),
            "{at}: {err}"
        );
    }

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = [
        ("--redis", format!("redis://127.0.0.1:{port}")),
        (
            "--database-url",
            format!("postgres://fuse@127.0.0.1:{port}/fuse"),
        ),
    ];
    for (flag, url) in nowhere {
        let target = Target { flag, url };
        let out = fuse(&target, &app(), &["status"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("unreachable") && err.contains(&port.to_string()),
            "{flag}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fuse"))
        .args(["status"])
        .env_remove("FUSE_REDIS_URL")
        .env_remove("FUSE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--redis") && err.contains("--database-url"),
        "{err}"
    );
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

/// `fuse --url`: the same commands through a service's admin API, nested
/// under a prefix, with the token for the writes.
#[test]
fn the_command_talks_to_a_service_s_admin_api() {
    use fuse_breaker::admin::Admin;
    use fuse_breaker::{Registry, State};
    use std::sync::Arc;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = Arc::new(Registry::builder().app("shop").build().unwrap());
    let charge = registry.get_operation("billing", "charge");
    registry.get("search");
    registry.get("elsewhere");
    let target = serve_admin(&runtime, Admin::new().registry(registry.clone()));

    let table = stdout(&fuse(&target, "shop", &["status"]));
    let keys: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        keys,
        [
            "fuse:shop:billing:charge",
            "fuse:shop:elsewhere",
            "fuse:shop:search"
        ],
        "{table}"
    );

    let refused = fuse(&target, "shop", &["open", "billing:charge"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("unauthorized"), "{err}");
    assert_eq!(charge.state(), State::Closed);

    stdout(&fuse(
        &target,
        "shop",
        &["--token", "s3cret", "open", "billing:charge"],
    ));
    assert_eq!(charge.state(), State::Open);
    let json = stdout(&fuse(
        &target,
        "shop",
        &["status", "billing:charge", "--json"],
    ));
    let view: fuse_breaker::admin::CircuitView = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        (view.key.as_str(), view.state.as_str()),
        ("fuse:shop:billing:charge", "open")
    );
    assert!(view.half_open_in_ms.is_some());
    stdout(&fuse(
        &target,
        "shop",
        &["--token", "s3cret", "close", "billing:charge"],
    ));
    assert_eq!(charge.state(), State::Closed);

    let missing = fuse(&target, "shop", &["status", "nothing"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        !missing.status.success() && err.contains("not_found"),
        "{err}"
    );

    drop(runtime);
    let gone = fuse(&target, "shop", &["status"]);
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(
        !gone.status.success() && err.contains("unreachable"),
        "{err}"
    );
    let bad = fuse(
        &Target {
            flag: "--url",
            url: "ftp://x".into(),
        },
        "shop",
        &["status"],
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--url takes"),
        "{err}"
    );
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

#[test]
fn every_key_is_listed_and_the_unreadable_ones_marked() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        stdout(&fuse(&target, &app, &["open", "good"]));
        put(&target, &format!("fuse:{app}:corrupt"), "[1, 2]");
        let mut bad = vec![format!("fuse:{app}:corrupt")];
        if target.flag == "--redis" {
            let mut redis = redis::Client::open(target.url.as_str())
                .unwrap()
                .get_connection()
                .unwrap();
            let _: i64 = redis::cmd("RPUSH")
                .arg(format!("fuse:{app}:alist"))
                .arg("x")
                .query(&mut redis)
                .unwrap();
            bad.push(format!("fuse:{app}:alist"));
        }
        if !target.url.starts_with("postgres") {
            let mut key = format!("fuse:{app}:").into_bytes();
            key.extend_from_slice(b"\xff\xfe");
            put_bytes(&target, &key, CLOSED);
            bad.push(format!("fuse:{app}:\\xff\\xfe"));
        }

        let out = fuse(&target, &app, &["status"]);
        let table = stdout(&out);
        let errors = String::from_utf8_lossy(&out.stderr);
        assert!(
            line_of(&table, &format!("fuse:{app}:good")).contains(" open "),
            "{at}: {table}"
        );
        for key in &bad {
            assert!(
                line_of(&table, key).contains(" unreadable "),
                "{at}: {key}: {table}"
            );
            assert!(errors.contains(key.as_str()), "{at}: {key}: {errors}");
        }
        assert!(errors.contains("not a circuit"), "{at}: {errors}");

        let json = stdout(&fuse(&target, &app, &["status", "--json"]));
        let lines: Vec<serde_json::Value> = json
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        assert_eq!(lines.len(), bad.len() + 1, "{at}: {json}");
        let errors = lines.iter().filter(|line| line["error"].is_string());
        assert_eq!(errors.count(), bad.len(), "{at}: {json}");
        assert!(
            lines
                .iter()
                .any(|line| line["key"] == format!("fuse:{app}:good") && line["state"] == "open"),
            "{at}: {json}"
        );
    }
}

#[test]
fn more_than_ten_thousand_circuits_are_all_listed() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let keys: Vec<Vec<u8>> = (0..10_050)
            .map(|n| format!("fuse:{app}:c{n:05}").into_bytes())
            .collect();
        put_many(&target, &keys, CLOSED);
        let json = stdout(&fuse(&target, &app, &["status", "--json"]));
        remove_under(&target, &format!("fuse:{app}:"));
        let mut listed: Vec<String> = json
            .lines()
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                value["key"].as_str().unwrap().to_owned()
            })
            .collect();
        listed.sort();
        listed.dedup();
        assert_eq!(listed.len(), keys.len(), "{at}");
    }
}

/// Whether `bytes` hold a control character a terminal acts on (C0 but
/// the line break, DEL, or C1 in UTF-8).
fn has_control(bytes: &[u8]) -> bool {
    String::from_utf8_lossy(bytes)
        .chars()
        .any(|c| c != '\n' && c.is_control())
}

#[test]
fn control_characters_in_keys_never_reach_the_terminal() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let title = format!("fuse:{app}:\x1b]0;pwned\x07");
        let clear = format!("fuse:{app}:\x1b[2J\u{9b}2J");
        put(&target, &title, CLOSED);
        put(&target, &clear, CLOSED);
        put(&target, &format!("fuse:{app}:\x1b[31mred"), "[1]");
        for args in [&["status"][..], &["status", "--json"]] {
            let out = fuse(&target, &app, args);
            assert!(!has_control(&out.stdout), "{at}: {args:?}: {out:?}");
            assert!(!has_control(&out.stderr), "{at}: {args:?}: {out:?}");
        }
        let table = stdout(&fuse(&target, &app, &["status"]));
        line_of(&table, &format!("fuse:{app}:\\x1b]0;pwned\\x07"));
        line_of(&table, &format!("fuse:{app}:\\x1b[2J\\u{{9b}}2J"));
        // The unreadable key's reason, on stderr, names it escaped.
        let out = fuse(&target, &app, &["status"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("\\x1b[31mred"), "{at}: {err}");
        // A circuit named with a control character has it escaped in its
        // key, so the command never sends one to the store either.
        let out = fuse(&target, &app, &["status", "\x1b[31mred"]);
        assert!(out.status.success(), "{at}: {out:?}");
        assert!(!has_control(&out.stdout), "{at}: {out:?}");
        assert!(!has_control(&out.stderr), "{at}: {out:?}");
    }
}

/// An app's listing holds the keys under that app as written, whatever
/// its characters mean to Redis's `MATCH`, `LIKE` or `GLOB`.
#[test]
fn an_app_is_a_literal_prefix_on_every_store() {
    for target in targets() {
        let at = &target.url;
        let base = app();
        let apps: Vec<String> = ["*", "ping", "[b]", "b", "\\*", "_", "%", "x", "?", "\\"]
            .iter()
            .map(|tail| format!("{base}{tail}"))
            .collect();
        for app in &apps {
            stdout(&fuse(&target, app, &["open", "n"]));
        }
        for app in &apps {
            let json = stdout(&fuse(&target, app, &["status", "--json"]));
            let keys: Vec<String> = json
                .lines()
                .map(|line| {
                    let value: serde_json::Value = serde_json::from_str(line).unwrap();
                    value["key"].as_str().unwrap().to_owned()
                })
                .collect();
            assert_eq!(keys, [format!("fuse:{app}:n")], "{at}: --app {app:?}");
        }
    }
}

#[test]
fn a_misspelt_setting_in_the_environment_is_refused_with_the_right_name() {
    let target = Target {
        flag: "--database-url",
        url: format!(
            "sqlite://{}/cli-env-{}.db",
            env!("CARGO_TARGET_TMPDIR"),
            std::process::id()
        ),
    };
    block_on(async {
        let store = fuse_breaker::store::SqlStore::open(&target.url).unwrap();
        store.ensure_schema().await.unwrap();
    });
    let out = command()
        .args([target.flag, &target.url, "status"])
        .env("FUSE_FAILURE_TRESHOLD", "3")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("FUSE_FAILURE_TRESHOLD")
            && err.contains("did you mean FUSE_FAILURE_THRESHOLD"),
        "{err}"
    );
    // Variables of the command, the tests and other programs are no settings.
    let out = command()
        .args([target.flag, &target.url, "status"])
        .env("FUSE_ADMIN_TOKEN", "x")
        .env("FUSE_TEST_SOMETHING", "1")
        .env("FUSE_SCREENSHOT_DIR", "/tmp")
        .env("FUSE_STRESS_SECS", "3")
        .output()
        .unwrap();
    stdout(&out);
}

#[test]
fn the_connection_options_may_follow_the_command() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let out = command()
            .args(["open", "billing", target.flag, &target.url, "--app", &app])
            .output()
            .unwrap();
        stdout(&out);
        let out = command()
            .args([
                "status",
                "billing",
                "--json",
                "--app",
                &app,
                target.flag,
                &target.url,
            ])
            .output()
            .unwrap();
        assert!(stdout(&out).contains("\"state\":\"open\""), "{at}: {out:?}");
    }
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

#[test]
fn an_admin_api_whose_list_never_ends_is_given_up() {
    use std::sync::atomic::Ordering;

    // `next` never changes.
    let (url, served) = fake_api(100, |_| {
        serde_json::json!({"circuits": [view("fuse:shop:a", "closed")], "total": 1,
                           "next": "fuse:shop:a", "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(err.contains("fuse:shop:a") && err.contains("next"), "{err}");
    assert!(served.load(Ordering::SeqCst) <= 2, "{err}");

    // `next` moves on forever.
    let (url, served) = fake_api(20_000, |n| {
        let key = format!("fuse:shop:k{n:08}");
        serde_json::json!({"circuits": [view(&key, "closed")], "total": 1,
                           "next": key, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(err.contains("pages"), "{err}");
    let served = served.load(Ordering::SeqCst);
    assert!(served < 20_000, "{served} pages read: {err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), served);
}

#[test]
fn control_characters_from_an_admin_api_never_reach_the_terminal() {
    let (url, _) = fake_api(100, |_| {
        serde_json::json!({"circuits": [view("fuse:shop:\u{1b}]0;pwned\u{7}", "\u{1b}[2Jopen")],
                           "total": 1, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status"]);
    assert!(!has_control(&out.stdout), "{out:?}");
    let table = stdout(&out);
    assert!(
        line_of(&table, "fuse:shop:\\x1b]0;pwned\\x07").contains("\\x1b[2Jopen"),
        "{table}"
    );
    let (url, _) = fake_api(100, |_| "{\"error\": \"\u{1b}[2J\"}".to_owned());
    let out = fuse(&Target { flag: "--url", url }, "shop", &["status"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(!has_control(&out.stderr), "{out:?}");
}

/// Every store's listing, page by page: every key under the prefix once
/// (Redis's `SCAN` may repeat one), none beside it, none expired; in byte
/// order across pages where the store pages in that order.
#[test]
fn the_stores_list_their_keys_page_by_page() {
    use fuse_breaker::store::{MemoryStore, Store};
    use std::sync::Arc;

    let targets = targets();
    block_on(async {
        let mut stores: Vec<(Arc<dyn Store>, bool)> = vec![(Arc::new(MemoryStore::new()), true)];
        for target in targets {
            // Redis's SCAN pages in no order.
            let ordered = target.flag != "--redis";
            stores.push((fuse_breaker::store::open(&target.url).unwrap(), ordered));
        }
        let ttl = std::time::Duration::from_mins(1);
        for (store, ordered) in stores {
            let at = store.name().to_owned();
            let app = app();
            let prefix = format!("fuse:{app}:");
            let mut keys: Vec<String> = (0..25).map(|n| format!("{prefix}k{n:02}")).collect();
            keys.push(format!("{prefix}é"));
            for key in keys
                .iter()
                .chain(&[format!("fuse:{app}x:k"), format!("fuse:{app}")])
            {
                let swapped = store.swap(key, None, CLOSED.as_bytes(), ttl, false).await;
                assert!(swapped.is_ok(), "{at}: {swapped:?}");
            }
            let expired = format!("{prefix}expired");
            store
                .swap(
                    &expired,
                    None,
                    CLOSED.as_bytes(),
                    std::time::Duration::from_millis(1),
                    false,
                )
                .await
                .unwrap();
            // A row lives through the second its expiry names (as
            // milon/fuse's do), the second after the write's end.
            tokio::time::sleep(std::time::Duration::from_millis(2100)).await;

            let (mut listed, mut pages, mut after) = (Vec::new(), 0, None::<String>);
            loop {
                let page = store.keys(&prefix, after.as_deref(), 7).await.unwrap();
                assert!(page.not_utf8.is_empty(), "{at}");
                listed.extend(page.keys);
                pages += 1;
                assert!(pages < 100, "{at}: the listing does not end");
                match page.next {
                    Some(next) => after = Some(next),
                    None => break,
                }
            }
            if ordered {
                assert!(listed.is_sorted(), "{at}: {listed:?}");
                assert!(pages >= 4, "{at}: {pages} pages");
            }
            listed.sort();
            listed.dedup();
            assert_eq!(listed, keys, "{at}");
            // Where a cursor is not a key (Redis's SCAN, SQLite's hex), one
            // that is not the store's is refused, named.
            let bad = store.keys(&prefix, Some("not a cursor"), 7).await;
            if at.starts_with("redis") || at.starts_with("sqlite") {
                assert!(
                    bad.unwrap_err().to_string().contains("not a cursor"),
                    "{at}"
                );
            }
        }
    });
}

#[test]
fn an_admin_api_s_answer_is_read_up_to_a_bound() {
    let (url, served) = fake_api(100, |_| {
        let pad = " ".repeat(33 << 20);
        format!(r#"{{"circuits": [],{pad}"total": 0, "next": null, "writable": false}}"#)
    });
    let out = fuse(&Target { flag: "--url", url }, "shop", &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(err.contains("bytes"), "{err}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// No password given in a URL reaches the output, whatever the scheme,
/// the command, and whether the server is there or not.
#[test]
fn no_password_of_a_url_is_printed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (api, _) = fake_api(100, |_| "{\"code\": \"x\"}".to_owned());
    let api = api.replace("http://", "http://admin:hunter2@");
    let unix = format!("{}/nowhere-{port}.sock", env!("CARGO_TARGET_TMPDIR"));
    let urls = [
        (
            "--database-url",
            format!("postgres://admin:hunter2@127.0.0.1:{port}/fuse"),
        ),
        (
            "--database-url",
            format!("postgresql://127.0.0.1:{port}/fuse?user=a&password=hunter2"),
        ),
        (
            "--database-url",
            format!("postgres://admin:hunter2@127.0.0.1:{port}/fuse?sslmode=bogus"),
        ),
        ("--redis", format!("redis://:hunter2@127.0.0.1:{port}/0")),
        (
            "--redis",
            format!("redis://admin:hunter2@127.0.0.1:{port}/notadb"),
        ),
        (
            "--redis",
            format!("rediss://admin:hunter2@127.0.0.1:{port}"),
        ),
        ("--redis", format!("redis+unix://{unix}?pass=hunter2")),
        (
            "--url",
            format!("http://admin:hunter2@127.0.0.1:{port}/fuse"),
        ),
        ("--url", api),
        (
            "--url",
            format!("ftp://admin:hunter2@127.0.0.1:{port}/fuse"),
        ),
    ];
    for (flag, url) in urls {
        for args in [
            &["status"][..],
            &["status", "billing"],
            &["open", "billing"],
        ] {
            let out = fuse(
                &Target {
                    flag,
                    url: url.clone(),
                },
                "shop",
                args,
            );
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.status.success(), "{url} {args:?}: {printed}");
            assert!(!printed.contains("hunter2"), "{url} {args:?}: {printed}");
            assert!(
                printed.contains("127.0.0.1") || printed.contains("nowhere"),
                "{url} {args:?}: {printed}"
            );
        }
    }
}

/// A key that holds no circuit is repaired by `open`, `close` and `reset`,
/// which say what they replaced, on every store.
#[test]
fn open_close_and_reset_repair_a_key_that_holds_no_circuit() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        for (command, state) in [("open", "open"), ("close", "closed"), ("reset", "closed")] {
            let name = format!("billing-{command}");
            let key = format!("fuse:{app}:{name}");
            put(&target, &key, "[1, 2]");
            let out = fuse(&target, &app, &[command, &name]);
            assert!(out.status.success(), "{at}: {command}: {out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&key)
                    && err.contains("held no circuit")
                    && err.contains("not a circuit"),
                "{at}: {command}: {err}"
            );
            let table = stdout(&fuse(&target, &app, &["status", &name]));
            assert!(
                line_of(&table, &key).contains(&format!(" {state} ")),
                "{at}: {command}: {table}"
            );
            // Once repaired, nothing is said.
            let again = fuse(&target, &app, &[command, &name]);
            assert!(again.status.success(), "{at}: {command}");
            assert!(again.stderr.is_empty(), "{at}: {command}: {again:?}");
        }
    }
}

/// Through an admin API over shared circuits, the answer says what a
/// change replaced, and the command says it too.
#[test]
fn an_admin_api_says_what_a_change_replaced() {
    use fuse_breaker::admin::Admin;
    use fuse_breaker::store::{MemoryStore, SharedRegistry};
    use std::sync::Arc;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = Arc::new(MemoryStore::new());
    let shared = Arc::new(
        SharedRegistry::builder(store.clone())
            .app("shop")
            .build()
            .unwrap(),
    );
    shared.get("billing");
    store.put(
        "fuse:shop:billing",
        b"null",
        std::time::Duration::from_mins(1),
    );
    let target = serve_admin(&runtime, Admin::new().shared(shared));
    let out = fuse(&target, "shop", &["--token", "s3cret", "reset", "billing"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fuse:shop:billing held no circuit") && err.contains("not a circuit"),
        "{err}"
    );
    assert_eq!(store.len(), 0, "deleted");
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

/// `fuse status` shows a rate circuit as such (its failed calls in the
/// window, its share and its rule at the end of its line), and a count
/// circuit's line as it was.
#[test]
fn a_rate_circuit_of_an_admin_api_is_shown_with_its_rate_and_rule() {
    let (url, _) = fake_api(100, |_| {
        serde_json::json!({"circuits": [view("fuse:shop:billing", "closed"),
                                         rate_view("fuse:shop:search", 40, 12, 3)],
                           "total": 2, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let table = stdout(&fuse(&target, "shop", &["status"]));
    let search = line_of(&table, "fuse:shop:search");
    assert!(
        search.ends_with(
            "  rate 12/40 failed (30 %, opens at 50 % of >= 20), \
             3/40 slow over 2s (7 %, opens at 100 %)"
        ),
        "{table}"
    );
    let columns: Vec<&str> = search.split_whitespace().collect();
    assert_eq!(
        columns[..5],
        ["fuse:shop:search", "closed", "12", "0/2", "-"],
        "{table}"
    );
    let billing = line_of(&table, "fuse:shop:billing");
    assert_eq!(
        billing.split_whitespace().collect::<Vec<_>>(),
        ["fuse:shop:billing", "closed", "0", "0/2", "-", "-", "-"],
        "a count circuit's line has no rate: {table}"
    );
    assert!(!billing.contains("rate"), "{table}");

    let json = stdout(&fuse(&target, "shop", &["status", "--json"]));
    let search: serde_json::Value = json
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|value| value["key"] == "fuse:shop:search")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(
        (&search["calls"], &search["failed"], &search["slow"]),
        (&40.into(), &12.into(), &3.into())
    );
    assert_eq!(search["config"]["policy"], "rate", "{json}");
}

/// `fuse status` on a store under `FUSE_POLICY=rate` reads its circuits
/// as rate circuits: their rule at the end of each line, and in JSON.
#[test]
fn a_store_s_circuits_under_the_rate_policy_are_shown_with_their_rule() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        stdout(&fuse(&target, &app, &["open", "billing"]));
        stdout(&fuse(&target, &app, &["close", "search"]));
        let rate = |args: &[&str]| {
            command()
                .args([target.flag, &target.url, "--app", &app])
                .args(args)
                .env("FUSE_POLICY", "rate")
                .env("FUSE_FAILURE_RATE", "30")
                .env("FUSE_MINIMUM_CALLS", "5")
                .env("FUSE_SLOW_CALL_DURATION", "1500ms")
                .output()
                .unwrap()
        };
        let table = stdout(&rate(&["status"]));
        for name in ["billing", "search"] {
            let line = line_of(&table, &format!("fuse:{app}:{name}"));
            assert!(
                line.ends_with(
                    "  rate 0/0 failed (opens at 30 % of >= 5), \
                     0/0 slow over 1s 500ms (opens at 100 %)"
                ),
                "{at}: {table}"
            );
        }
        let json = stdout(&rate(&["status", "search", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(value["policy"], "rate", "{at}: {json}");
        assert_eq!(value["failure_rate"], 30, "{at}: {json}");
        assert_eq!(value["minimum_calls"], 5, "{at}: {json}");
        assert_eq!(value["slow_call_duration_ms"], 1500, "{at}: {json}");
        assert_eq!(
            (&value["calls"], &value["failed"]),
            (&0.into(), &0.into()),
            "{at}"
        );
        // Under the default policy, the same circuit as before.
        let json = stdout(&fuse(&target, &app, &["status", "search", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(value["policy"], "count", "{at}: {json}");
        assert!(value.get("calls").is_none(), "{at}: {json}");
        let table = stdout(&fuse(&target, &app, &["status"]));
        assert!(!table.contains("rate"), "{at}: {table}");
    }
}

/// Calls on a shared rate circuit reach `fuse status`: the fleet's window
/// in the store. Waits for the store payload to keep the rate window
/// (notes/requests.md).
#[test]
fn a_shared_rate_circuit_s_window_reaches_the_status() {
    use fuse_breaker::store::SharedFuse;
    use fuse_breaker::{Config, Policy};

    for target in targets() {
        let at = &target.url;
        let app = app();
        let config = Config::builder()
            .policy(Policy::Rate)
            .minimum_calls(10)
            .build()
            .unwrap();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let fuse = SharedFuse::builder("search", store)
                .app(&app)
                .config(config)
                .build();
            for i in 0..9 {
                let permit = fuse.try_acquire().await.unwrap();
                if i < 3 {
                    permit.failure().await.unwrap();
                } else {
                    permit.success().await.unwrap();
                }
            }
        });
        let out = command()
            .args([target.flag, &target.url, "--app", &app, "status", "search"])
            .env("FUSE_POLICY", "rate")
            .env("FUSE_MINIMUM_CALLS", "10")
            .output()
            .unwrap();
        let table = stdout(&out);
        let line = line_of(&table, &format!("fuse:{app}:search"));
        assert!(
            line.ends_with("  rate 3/9 failed (33 %, opens at 50 % of >= 10)"),
            "{at}: {table}"
        );
    }
}

/// `fuse --url status` on an in-process rate circuit: the service's window.
/// Waits for the in-process engine's rate path.
#[test]
fn an_in_process_rate_circuit_s_window_reaches_the_status() {
    use fuse_breaker::admin::Admin;
    use fuse_breaker::{Config, Policy, Registry};
    use std::sync::Arc;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(10)
        .build()
        .unwrap();
    let registry = Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .build()
            .unwrap(),
    );
    let search = registry.get("search");
    for i in 0..9 {
        let permit = search.try_acquire().unwrap();
        if i < 3 {
            permit.failure();
        } else {
            permit.success();
        }
    }
    let target = serve_admin(&runtime, Admin::new().registry(registry.clone()));
    let table = stdout(&fuse(&target, "shop", &["status"]));
    let line = line_of(&table, "fuse:shop:search");
    assert!(
        line.ends_with("  rate 3/9 failed (33 %, opens at 50 % of >= 10)"),
        "{table}"
    );
    assert_eq!(line.split_whitespace().nth(2), Some("3"), "{table}");
}

/// An admin API's circuits in `fuse status`: an open circuit's opening
/// (which in a row, how long it lasts, how long is left), a half-open
/// one's n, none for a closed one or an older API's answer; `--json`
/// prints the API's fields.
#[test]
fn an_admin_api_s_openings_are_shown() {
    let mut open = view("fuse:shop:billing", "open");
    open["openings"] = 3.into();
    open["open_for_ms"] = 240_000.into();
    open["half_open_in_ms"] = 61_500.into();
    open["retry_at"] = "2026-12-01T20:05:02.345Z".into();
    open["opened_at"] = "2026-12-01T20:01:02.345Z".into();
    let mut half_open = view("fuse:shop:search", "half_open");
    half_open["openings"] = 2.into();
    let (url, _) = fake_api(100, move |_| {
        serde_json::json!({"circuits": [open, view("fuse:shop:older", "open"), half_open,
                                         view("fuse:shop:zebra", "closed")],
                           "total": 4, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let table = stdout(&fuse(&target, "shop", &["status"]));
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .split("  ")
        .filter(|c| !c.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        [
            "KEY",
            "STATE",
            "FAILURES",
            "PROBES",
            "OPENING",
            "OPEN FOR",
            "HALF-OPEN IN"
        ],
        "{table}"
    );
    let columns = |key: &str| -> Vec<String> {
        line_of(&table, key)
            .split_whitespace()
            .skip(1)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        columns("fuse:shop:billing"),
        ["open", "0", "0/2", "#3", "240.0s", "61.5s"],
        "{table}"
    );
    assert_eq!(
        columns("fuse:shop:search"),
        ["half_open", "0", "0/2", "#2", "-", "-"],
        "{table}"
    );
    assert_eq!(
        columns("fuse:shop:older"),
        ["open", "0", "0/2", "-", "-", "-"],
        "an older API's open circuit: {table}"
    );
    assert_eq!(
        columns("fuse:shop:zebra"),
        ["closed", "0", "0/2", "-", "-", "-"]
    );

    let json = stdout(&fuse(&target, "shop", &["status", "--json"]));
    let billing: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            &billing["openings"],
            &billing["open_for_ms"],
            &billing["retry_at"]
        ),
        (
            &3.into(),
            &240_000.into(),
            &"2026-12-01T20:05:02.345Z".into()
        ),
        "{json}"
    );
}

/// A shared circuit that backs off (SPEC §10), on every store: `fuse
/// status` shows the opening the store holds (its n, its duration and
/// the time left), whatever the command's own configuration says.
#[test]
fn a_shared_circuit_s_opening_reaches_the_status() {
    use fuse_breaker::Config;
    use fuse_breaker::store::SharedFuse;
    use std::time::Duration;

    for target in targets() {
        let at = &target.url;
        let app = app();
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .open_duration(Duration::from_secs(1))
            .open_backoff(10.0)
            .max_open_duration(Duration::from_mins(1))
            .build()
            .unwrap();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let fuse = SharedFuse::builder("charge", store)
                .app(&app)
                .config(config)
                .build();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            tokio::time::sleep(Duration::from_millis(1050)).await;
            let probe = fuse.try_acquire().await.expect("a probe");
            probe.failure().await.unwrap();
        });
        // The second opening in a row: 1 s times 10, by the failed probe.
        let table = stdout(&fuse(&target, &app, &["status"]));
        let line = line_of(&table, &format!("fuse:{app}:charge"));
        let columns: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            columns[1..6],
            ["open", "1", "0/2", "#2", "10.0s"],
            "{at}: {table}"
        );
        let left: f64 = columns[6].trim_end_matches('s').parse().unwrap();
        assert!((0.0..=10.0).contains(&left), "{at}: {table}");

        let json = stdout(&fuse(&target, &app, &["status", "charge", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(
            (&value["openings"], &value["open_for_ms"]),
            (&2.into(), &10_000.into()),
            "{at}: {json}"
        );
        let lasts = value["retry_at"].as_f64().unwrap() - value["opened_at"].as_f64().unwrap();
        assert!((lasts - 10.0).abs() < 1e-3, "{at}: {json}");
        assert!(
            value["half_open_in_ms"].as_u64().unwrap() <= 10_000,
            "{at}: {json}"
        );

        // Closed: no opening.
        stdout(&fuse(&target, &app, &["close", "charge"]));
        let json = stdout(&fuse(&target, &app, &["status", "charge", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(
            (
                &value["openings"],
                &value["open_for_ms"],
                &value["retry_at"]
            ),
            (
                &0.into(),
                &serde_json::Value::Null,
                &serde_json::Value::Null
            ),
            "{at}: {json}"
        );
    }
}

/// On a Redis Cluster (`FUSE_TEST_REDIS_CLUSTER_URL`): circuits on every
/// shard are all listed (every primary scanned, page by page), and opened,
/// closed and reset by key.
#[test]
fn a_cluster_s_circuits_on_every_shard_are_listed_and_changed() {
    let Some(url) = server(
        "FUSE_TEST_REDIS_CLUSTER_URL",
        "fuse command's Redis Cluster",
    ) else {
        return;
    };
    let target = Target {
        flag: "--redis",
        url: url.clone(),
    };
    let app = app();
    let nodes: Vec<String> = url
        .trim_start_matches("redis+cluster://")
        .split(',')
        .map(|node| format!("redis://{node}"))
        .collect();
    let mut cluster = redis::cluster::ClusterClient::new(nodes)
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = (0..3_000).map(|n| format!("fuse:{app}:c{n:04}")).collect();
    let mut pipe = redis::cluster::cluster_pipe();
    for key in &keys {
        pipe.cmd("SET")
            .arg(key)
            .arg(CLOSED)
            .arg("EX")
            .arg(600)
            .ignore();
    }
    let () = pipe.query(&mut cluster).unwrap();

    let json = stdout(&fuse(&target, &app, &["status", "--json"]));
    let mut listed: Vec<String> = json
        .lines()
        .map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            value["key"].as_str().unwrap().to_owned()
        })
        .collect();
    listed.sort();
    assert_eq!(listed, keys, "every key once, from every primary");

    stdout(&fuse(&target, &app, &["open", "c0042"]));
    let json = stdout(&fuse(&target, &app, &["status", "c0042", "--json"]));
    assert!(json.contains("\"state\":\"open\""), "{json}");
    stdout(&fuse(&target, &app, &["close", "c0042"]));
    let json = stdout(&fuse(&target, &app, &["status", "c0042", "--json"]));
    assert!(json.contains("\"state\":\"closed\""), "{json}");
    stdout(&fuse(&target, &app, &["reset", "c0042"]));

    let mut pipe = redis::cluster::cluster_pipe();
    for key in &keys {
        pipe.cmd("DEL").arg(key).ignore();
    }
    let () = pipe.query(&mut cluster).unwrap();
}

/// SPEC §8's quorum: a shared circuit held closed by `min_reporters` (one
/// process failing, `FUSE_MIN_REPORTERS=2`) shows its reporters after its
/// columns, and in JSON; a circuit without a quorum shows none.
#[test]
fn a_shared_circuit_s_quorum_reaches_the_status() {
    use fuse_breaker::Config;
    use fuse_breaker::store::SharedFuse;

    for target in targets() {
        let at = &target.url;
        let app = app();
        let config = Config::builder()
            .failure_threshold(2)
            .min_reporters(2)
            .build()
            .unwrap();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let fuse = SharedFuse::builder("billing", store)
                .app(&app)
                .config(config)
                .build();
            for _ in 0..3 {
                let permit = fuse.try_acquire().await.unwrap();
                permit.failure().await.unwrap();
            }
        });
        let status = |json: bool, quorum: &str| {
            let mut command = command();
            command.args([target.flag, &target.url, "--app", &app, "status", "billing"]);
            if json {
                command.arg("--json");
            }
            stdout(
                &command
                    .env("FUSE_FAILURE_THRESHOLD", "2")
                    .env("FUSE_MIN_REPORTERS", quorum)
                    .output()
                    .unwrap(),
            )
        };
        let table = status(false, "2");
        let line = line_of(&table, &format!("fuse:{app}:billing"));
        assert!(line.contains(" closed "), "{at}: {table}");
        assert!(line.ends_with("  quorum 1/2"), "{at}: {table}");
        let json: serde_json::Value = serde_json::from_str(status(true, "2").trim()).unwrap();
        assert_eq!(
            (
                &json["reporters"],
                &json["min_reporters"],
                &json["failures"]
            ),
            (&1.into(), &2.into(), &2.into()),
            "{at}"
        );
        let table = status(false, "1");
        let line = line_of(&table, &format!("fuse:{app}:billing"));
        assert!(!line.contains("quorum"), "{at}: {table}");
    }
}

/// SPEC §8's quorum through an admin API: a shared circuit with
/// `min_reporters` 2 shows its reporters after its columns; an in-process
/// one (which ignores the setting) and one of an older API show none.
#[test]
fn an_admin_api_s_quorum_is_shown_for_shared_circuits_only() {
    let quorum = |key: &str, shared: bool| {
        let mut value = view(key, "closed");
        value["shared"] = shared.into();
        value["reporters"] = 1.into();
        value["config"]["min_reporters"] = 2.into();
        value
    };
    let (url, _) = fake_api(100, move |_| {
        serde_json::json!({"circuits": [quorum("fuse:shop:billing", true),
                                         quorum("fuse:shop:local", false),
                                         view("fuse:shop:older", "closed")],
                           "total": 3, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let table = stdout(&fuse(&target, "shop", &["status"]));
    assert!(
        line_of(&table, "fuse:shop:billing").ends_with("  quorum 1/2"),
        "{table}"
    );
    for key in ["fuse:shop:local", "fuse:shop:older"] {
        assert!(!line_of(&table, key).contains("quorum"), "{table}");
    }
}
