//! `fuse set` through a service's admin API (SPEC §12): a circuit's
//! settings and a name's, with the token and without, and every bad input
//! refused with the settings left as they were.

use std::sync::Arc;

use fuse_breaker::Registry;
use fuse_breaker::admin::{Admin, SettingsChange};

use super::*;

/// `fuse --url <target> --app shop <args>`, as `$USER` = `user`.
fn set(target: &Target, user: Option<&str>, args: &[&str]) -> Output {
    let mut command = command();
    command
        .args(["--url", &target.url, "--app", "shop"])
        .args(args);
    match user {
        Some(user) => command.env("USER", user),
        None => command.env_remove("USER"),
    };
    command.output().expect("the fuse binary")
}

fn stderr(out: &Output) -> String {
    assert!(!out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A registry of the app `shop` with `billing:charge`, `billing:refund`
/// and `search` (every setting the default: a threshold of 8), served
/// with the token `s3cret`.
fn served(runtime: &tokio::runtime::Runtime) -> (Arc<Registry>, Target) {
    let registry = Arc::new(Registry::builder().app("shop").build().unwrap());
    registry.get_operation("billing", "charge");
    registry.get_operation("billing", "refund");
    registry.get("search");
    let target = serve_admin(runtime, Admin::new().registry(registry.clone()));
    (registry, target)
}

fn threshold(registry: &Registry, name: &str, operation: Option<&str>) -> u32 {
    let fuse = match operation {
        Some(operation) => registry.get_operation(name, operation),
        None => registry.get(name),
    };
    fuse.config().failure_threshold()
}

/// `fuse set <args> --json` with the token, as `$USER` = `user`: the
/// API's answer.
fn answer(target: &Target, user: Option<&str>, args: &[&str]) -> SettingsChange {
    let args: Vec<&str> = ["--token", "s3cret", "set"]
        .iter()
        .chain(args)
        .chain(&["--json"])
        .copied()
        .collect();
    let json = stdout(&set(target, user, &args));
    assert_eq!(json.lines().count(), 1, "{json}");
    serde_json::from_str(json.trim()).unwrap_or_else(|err| panic!("{err}: {json}"))
}

#[test]
fn a_circuit_s_settings_change_with_the_token_only() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (registry, target) = served(&runtime);
    let charge = registry.get_operation("billing", "charge");

    let refused = set(
        &target,
        Some("alice"),
        &["set", "billing:charge", "failure_threshold=3"],
    );
    let err = stderr(&refused);
    assert!(err.contains("unauthorized"), "{err}");
    assert!(refused.stdout.is_empty(), "{refused:?}");
    assert_eq!(charge.config().failure_threshold(), 8, "nothing changed");
    let wrong = set(
        &target,
        Some("alice"),
        &[
            "--token",
            "wrong",
            "set",
            "billing:charge",
            "failure_threshold=3",
        ],
    );
    assert!(stderr(&wrong).contains("unauthorized"), "{wrong:?}");
    assert_eq!(charge.config().failure_threshold(), 8, "nothing changed");

    let table = stdout(&set(
        &target,
        Some("alice"),
        &[
            "--token",
            "s3cret",
            "set",
            "billing:charge",
            "failure_threshold=3",
            "open_duration=10s",
        ],
    ));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .map(|line| line.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows,
        [
            vec!["SETTING", "FROM", "TO"],
            vec!["failure_threshold", "8", "3"],
            vec!["open_duration", "30s", "10s"],
        ],
        "{table}"
    );
    assert_eq!(charge.config().failure_threshold(), 3);
    assert_eq!(charge.config().open_duration().as_secs(), 10);
    assert_eq!(
        threshold(&registry, "billing", Some("refund")),
        8,
        "one circuit"
    );
    assert_eq!(threshold(&registry, "search", None), 8, "one circuit");

    // The same settings again: nothing changed, and it says so.
    let again = stdout(&set(
        &target,
        None,
        &[
            "--token",
            "s3cret",
            "set",
            "billing:charge",
            "failure_threshold=3",
        ],
    ));
    assert_eq!(
        again.trim(),
        "no setting changed: fuse:shop:billing:charge already had these settings"
    );
}

/// `--json` prints the API's object, which says who changed the settings:
/// the command and the user.
#[test]
fn the_answer_names_the_command_and_the_user() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (registry, target) = served(&runtime);

    let one = answer(
        &target,
        Some("alice"),
        &["billing:charge", "half_open_probes=4"],
    );
    assert_eq!(one.key.as_deref(), Some("fuse:shop:billing:charge"));
    assert_eq!(one.name, "billing");
    assert_eq!(one.by, "admin (fuse set by alice)");
    assert_eq!((one.from.half_open_probes, one.to.half_open_probes), (2, 4));
    assert_eq!(
        registry
            .get_operation("billing", "charge")
            .config()
            .half_open_probes(),
        4
    );

    let odd = answer(
        &target,
        Some("j\u{f6}rg \u{1b}[2J"),
        &["billing:charge", "half_open_probes=4"],
    );
    assert_eq!(
        odd.by, "admin (fuse set by j?rg ?[2J)",
        "made printable ASCII"
    );
    assert!(odd.changes.is_empty(), "{odd:?}");
    let nobody = answer(&target, None, &["billing:charge", "half_open_probes=4"]);
    assert_eq!(nobody.by, "admin (fuse set)", "no $USER");
}

#[test]
fn a_name_s_settings_change_every_circuit_of_it_and_later_ones() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (registry, target) = served(&runtime);

    let named = answer(
        &target,
        Some("bob"),
        &["--name", "billing", "failure_threshold=4"],
    );
    assert_eq!((named.name.as_str(), named.key), ("billing", None));
    assert_eq!(named.by, "admin (fuse set by bob)");
    assert_eq!(
        (named.from.failure_threshold, named.to.failure_threshold),
        (8, 4)
    );
    assert_eq!(threshold(&registry, "billing", Some("charge")), 4);
    assert_eq!(threshold(&registry, "billing", Some("refund")), 4);
    assert_eq!(
        threshold(&registry, "billing", Some("later")),
        4,
        "made later"
    );
    assert_eq!(threshold(&registry, "search", None), 8, "another name");

    let table = stdout(&set(
        &target,
        None,
        &[
            "--token",
            "s3cret",
            "set",
            "billing",
            "--name",
            "counted_http_statuses=502,503",
        ],
    ));
    assert!(
        table
            .lines()
            .nth(1)
            .is_some_and(|line| line.starts_with("counted_http_statuses")),
        "{table}"
    );
    let refund = registry.get_operation("billing", "refund");
    assert_eq!(refund.config().counted_http_statuses(), [502, 503]);

    let err = stderr(&set(
        &target,
        None,
        &[
            "--token",
            "s3cret",
            "set",
            "--name",
            "billing:charge",
            "failure_threshold=5",
        ],
    ));
    assert!(
        err.contains("--name") && err.contains("billing:charge"),
        "{err}"
    );
    assert_eq!(threshold(&registry, "billing", Some("charge")), 4);
}

#[test]
fn bad_settings_are_refused_naming_the_setting_and_nothing_changes() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (registry, target) = served(&runtime);
    let token = ["--token", "s3cret", "set"];
    let run = |args: &[&str]| {
        let args: Vec<&str> = token.iter().chain(args).copied().collect();
        set(&target, None, &args)
    };

    for (args, code, named) in [
        (
            &["search", "failure_threshold=lots"][..],
            "invalid_setting",
            "failure_threshold",
        ),
        (
            &["search", "failure_threshold=0"],
            "invalid_setting",
            "failure_threshold",
        ),
        (
            &["search", "failure_treshold=3"],
            "invalid_setting",
            "failure_treshold",
        ),
        (
            &["search", "open_duration=10"],
            "invalid_setting",
            "open_duration",
        ),
        (
            &["search", "key_prefix=other"],
            "not_in_place",
            "key_prefix",
        ),
        (
            &["nothing", "failure_threshold=3"],
            "not_found",
            "fuse:shop:nothing",
        ),
        // One bad setting refuses the others with it.
        (
            &["search", "failure_threshold=3", "half_open_probes=0"],
            "invalid_setting",
            "half_open_probes",
        ),
    ] {
        let err = stderr(&run(args));
        assert!(err.contains(code) && err.contains(named), "{args:?}: {err}");
    }
    let search = registry.get("search");
    assert_eq!(search.config().failure_threshold(), 8);
    assert_eq!(search.config().half_open_probes(), 2);
    assert_eq!(search.config().key_prefix(), "fuse");

    // An API given no token takes no change.
    let read_only = {
        let router = axum::Router::new().nest(
            "/fuse",
            Admin::new().registry(registry.clone()).router().unwrap(),
        );
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        runtime.spawn(async move { axum::serve(listener, router).await });
        Target {
            flag: "--url",
            url: format!("http://{addr}/fuse"),
        }
    };
    let err = stderr(&set(
        &read_only,
        None,
        &["--token", "s3cret", "set", "search", "failure_threshold=3"],
    ));
    assert!(err.contains("read_only"), "{err}");
    assert_eq!(search.config().failure_threshold(), 8);
}

/// What the command can tell is wrong, it refuses before any request.
#[test]
fn a_bad_argument_is_refused_before_any_request() {
    use std::sync::atomic::Ordering;

    let (url, served) = fake_api(100, |_| "{}".to_owned());
    let target = Target { flag: "--url", url };
    for (args, said) in [
        (
            &["set", "search", "failure_threshold"][..],
            "is not SETTING=VALUE",
        ),
        (&["set", "search", "=3"], "names no setting"),
        (&["set", "search"], "SETTING=VALUE"),
        (
            &[
                "set",
                "search",
                "failure_threshold=3",
                "failure_threshold=4",
            ],
            "more than once",
        ),
        (
            &["set", "--name", "search:query", "failure_threshold=3"],
            "--name",
        ),
    ] {
        let err = stderr(&set(&target, None, args));
        assert!(err.contains(said), "{args:?}: {err}");
    }
    assert_eq!(served.load(Ordering::SeqCst), 0, "no request was sent");

    // Without an admin API: settings are each process's own.
    let sqlite = format!(
        "sqlite://{}/cli-set-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    );
    let out = command()
        .args([
            "--database-url",
            &sqlite,
            "set",
            "search",
            "failure_threshold=3",
        ])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(
        err.contains("--url") && err.contains("each process's own"),
        "{err}"
    );
    let out = command()
        .args(["set", "search", "failure_threshold=3"])
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(err.contains("--url"), "{err}");
}

/// An API's answer that is not a settings change is an error, and what
/// it holds reaches the terminal escaped.
#[test]
fn a_foreign_answer_is_an_error() {
    let (url, _) = fake_api(100, |_| {
        r#"{"error": "no \u001b[2J", "code": "invalid_setting"}"#.to_owned()
    });
    // fake_api answers 200: the body is no settings change.
    let out = set(
        &Target { flag: "--url", url },
        None,
        &["--token", "t", "set", "search", "failure_threshold=3"],
    );
    let err = stderr(&out);
    assert!(err.contains("not a Fuse answer"), "{err}");
    assert!(!has_control(&out.stderr), "{out:?}");
}
