//! The `fuse` command on Laravel's cache (milon/fuse's default store):
//! `--payload laravel` and Laravel's prefixes (flags or `FUSE_*`
//! variables, a Redis URL's parameters winning over them) make every
//! command work on Laravel's keys in the URL's database, and show the
//! circuits' keys. Against `FUSE_TEST_REDIS_URL` (under `CI=true` a
//! missing server fails the run); mistakes are refused naming the option.
#![cfg(feature = "cli")]

use std::process::{Command, Output};

#[path = "common/mod.rs"]
mod common;

/// Runs `fuse` with `args` and the variables `vars`, and nothing of the
/// environment's `FUSE_*` store settings.
fn fuse(args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_fuse"));
    for var in [
        "FUSE_REDIS_URL",
        "FUSE_DATABASE_URL",
        "FUSE_DATABASE_TABLE",
        "FUSE_ADMIN_URL",
        "FUSE_ADMIN_TOKEN",
        "FUSE_APP",
        "FUSE_KEY_PREFIX",
        "FUSE_PAYLOAD",
        "FUSE_PAYLOAD_READ",
        "FUSE_LARAVEL_REDIS_PREFIX",
        "FUSE_LARAVEL_CACHE_PREFIX",
    ] {
        command.env_remove(var);
    }
    command
        .args(args)
        .envs(vars.iter().copied())
        .output()
        .expect("the fuse binary")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    assert!(!out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// An app name of the test's own (no `-`: a piece of keys, kept simple).
fn app() -> String {
    common::unique("clilaravel").replace('-', "x")
}

/// Whether `key` is in database 1 of the server at `url`.
fn in_db1(url: &str, key: &str) -> bool {
    let client = redis::Client::open(url).unwrap();
    let mut raw = client.get_connection().unwrap();
    let () = redis::cmd("SELECT").arg(1).query(&mut raw).unwrap();
    redis::cmd("EXISTS")
        .arg(key)
        .query::<u64>(&mut raw)
        .unwrap()
        == 1
}

fn redis_url() -> Option<String> {
    common::server("FUSE_TEST_REDIS_URL", "fuse command's Redis")
}

#[test]
fn fuse_status_payload_laravel_lists_a_laravel_circuit_by_its_key() {
    let Some(url) = redis_url() else { return };
    let db1 = format!("{}/1", url.trim_end_matches('/'));
    let app = app();
    let key = format!("fuse:{app}:billing");
    let laravel = format!("laravel_database_laravel_cache_{key}");
    let with = |args: &[&str]| {
        let mut all = vec!["--redis", &db1, "--payload", "laravel", "--app", &app];
        all.extend_from_slice(args);
        fuse(&all, &[])
    };
    stdout(&with(&["open", "billing"]));
    assert!(in_db1(&url, &laravel), "open wrote Laravel's key");
    assert!(!in_db1(&url, &key), "not the circuit's own");

    let table = stdout(&with(&["status"]));
    let line = table
        .lines()
        .find(|line| line.starts_with(&key))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(line.contains(" open "), "{line}");
    assert!(
        !table.contains("laravel_database_"),
        "circuit keys shown: {table}"
    );
    let json = stdout(&with(&["status", "billing", "--json"]));
    let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(value["key"], key.as_str());
    assert_eq!(value["state"], "open");

    // Without the option, the same database holds no such circuit.
    let plain = stdout(&fuse(&["--redis", &db1, "--app", &app, "status"], &[]));
    assert!(!plain.contains(&key), "{plain}");

    stdout(&with(&["reset", "billing"]));
    assert!(!in_db1(&url, &laravel), "reset deleted Laravel's key");
}

#[test]
fn the_variables_give_the_options_and_the_url_s_parameters_win() {
    let Some(url) = redis_url() else { return };
    let app = app();
    let key = format!("fuse:{app}:search");
    let db1 = format!("{}/1", url.trim_end_matches('/'));
    stdout(&fuse(
        &["open", "search"],
        &[
            ("FUSE_REDIS_URL", &db1),
            ("FUSE_APP", &app),
            ("FUSE_PAYLOAD", "laravel"),
            ("FUSE_LARAVEL_REDIS_PREFIX", "shop_database_"),
            ("FUSE_LARAVEL_CACHE_PREFIX", "shop_cache_"),
        ],
    ));
    assert!(in_db1(&url, &format!("shop_database_shop_cache_{key}")));

    let at = format!("{db1}?laravel_cache_prefix=url_cache_");
    let args = [
        "--redis",
        &at,
        "--app",
        &app,
        "--payload",
        "laravel",
        "--laravel-cache-prefix",
        "flag_cache_",
        "open",
        "search",
    ];
    stdout(&fuse(&args, &[]));
    assert!(in_db1(&url, &format!("laravel_database_url_cache_{key}")));
    assert!(!in_db1(&url, &format!("laravel_database_flag_cache_{key}")));
}

#[test]
fn a_wrong_option_is_refused_naming_it() {
    let sqlite = format!(
        "sqlite://{}/cli-laravel-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    );
    let err = stderr(&fuse(
        &[
            "--redis",
            "redis://127.0.0.1:1/1",
            "--payload",
            "xml",
            "status",
        ],
        &[],
    ));
    assert!(err.contains("--payload") && err.contains("xml"), "{err}");
    let err = stderr(&fuse(&["--payload-read", "any", "status"], &[]));
    assert!(err.contains("--payload-read"), "{err}");
    let err = stderr(&fuse(
        &["--database-url", &sqlite, "--payload", "laravel", "status"],
        &[],
    ));
    assert!(err.contains("no payload = \"laravel\""), "{err}");
    assert!(err.contains("DatabaseStore"), "{err}");
    let err = stderr(&fuse(
        &[
            "--redis",
            "redis://127.0.0.1:1/1",
            "--laravel-cache-prefix",
            "x_",
            "status",
        ],
        &[],
    ));
    assert!(
        err.contains("laravel_cache_prefix applies to payload = \"laravel\" alone"),
        "{err}"
    );
    let err = stderr(&fuse(
        &[
            "--redis",
            "redis://u:hunter2@127.0.0.1:1/1?paylod=laravel",
            "status",
        ],
        &[],
    ));
    assert!(
        err.contains("\"paylod\" is not one of the store's"),
        "{err}"
    );
    assert!(!err.contains("hunter2"), "{err}");
    let err = stderr(&fuse(
        &[
            "--redis",
            "redis://127.0.0.1:1/1",
            "--payload",
            "laravel",
            "--laravel-redis-prefix",
            "a\u{1b}[2J",
            "status",
        ],
        &[("FUSE_PAYLOAD", "laravel")],
    ));
    assert!(
        err.contains("laravel_redis_prefix") && err.contains("control"),
        "{err}"
    );
    assert!(!err.contains('\u{1b}'), "printed escaped: {err}");
}
