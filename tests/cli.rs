//! The `fuse` command against a real Redis (`FUSE_TEST_REDIS_URL`), a real
//! PostgreSQL (`FUSE_TEST_DATABASE_URL`) and SQLite (a file of the test's
//! own); under `CI=true` a missing server fails the run.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

/// `var`, or `None` (said) where the tests may skip it.
fn server(var: &str) -> Option<String> {
    match std::env::var(var) {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true and no {var}: the fuse command's tests cannot be skipped"
            );
            eprintln!("{var} is not set: the fuse command's tests on it are skipped");
            None
        }
    }
}

/// A store to run the command on: its flag and URL.
struct Target {
    flag: &'static str,
    url: String,
}

/// Every store the machine has, SQL tables made.
fn targets() -> Vec<Target> {
    let mut targets = Vec::new();
    if let Some(url) = server("FUSE_TEST_REDIS_URL") {
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
    for url in std::iter::once(sqlite).chain(server("FUSE_TEST_DATABASE_URL")) {
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
    let router = axum::Router::new().nest(
        "/ops/fuse",
        Admin::new()
            .registry(registry.clone())
            .token("s3cret")
            .router()
            .unwrap(),
    );
    let listener = runtime
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    runtime.spawn(async move { axum::serve(listener, router).await });
    let target = Target {
        flag: "--url",
        url: format!("http://{addr}/ops/fuse"),
    };

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
