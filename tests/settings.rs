//! Configuration files and environment variables: the complete example,
//! and every kind of mistake, each refused with an error a person can act
//! on.
#![cfg(feature = "config-file")]

use std::time::Duration;

use fuse_breaker::{Settings, SettingsError, StoreKind};

fn error(text: &str) -> String {
    Settings::from_toml(text)
        .expect_err("the configuration must be refused")
        .to_string()
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "{message:?} should mention {part:?}"
        );
    }
}

#[test]
fn the_complete_example_file_builds_the_registry_it_describes() {
    let settings = Settings::from_file("examples/fuse.toml").expect("the example is valid");
    assert_eq!(settings.app.as_deref(), Some("shop"));
    assert_eq!(settings.store, StoreKind::Memory);
    let registry = settings.registry().unwrap();
    let billing = registry.get_operation("billing", "charge");
    assert_eq!(billing.key(), "fuse:shop:billing:charge");
    let config = billing.config();
    assert_eq!(config.failure_threshold(), 3);
    assert_eq!(config.open_duration(), Duration::from_secs(90));
    assert_eq!(
        config.failure_window(),
        Duration::from_secs(10),
        "from the defaults"
    );
    assert!(config.counts_http_status(500));
    let other = registry.get("search");
    assert_eq!(other.config().failure_threshold(), 5);
    assert_eq!(other.config().open_duration(), Duration::from_millis(500));
    assert_eq!(other.config().policy(), fuse_breaker::Policy::Count);
    let payments = registry.get("payments").config().clone();
    assert_eq!(payments.policy(), fuse_breaker::Policy::Rate);
    assert_eq!(
        (
            payments.failure_rate(),
            payments.minimum_calls(),
            payments.window_buckets(),
            payments.slow_call_duration(),
            payments.slow_call_rate()
        ),
        (25, 40, 10, Some(Duration::from_secs(2)), 60)
    );
}

#[test]
fn an_unknown_key_is_named_with_its_line_and_column() {
    let message = error("app = \"shop\"\nfailure_treshold = 3\n");
    assert_mentions(
        &message,
        &["failure_treshold", "line 2, column 1", "failure_threshold"],
    );
}

#[test]
fn an_unknown_key_in_a_breaker_table_is_named_with_its_place() {
    let message = error("[breakers.billing]\nopen_duraton = \"5s\"\n");
    assert_mentions(&message, &["open_duraton", "line 2"]);
}

#[test]
fn a_duration_without_a_unit_says_how_to_write_it() {
    let message = error("open_duration = 30\n");
    assert_mentions(&message, &["\"30s\"", "line 1"]);
}

#[test]
fn a_bad_duration_is_refused_with_its_text() {
    let message = error("failure_window = \"ten minutes\"\n");
    assert_mentions(&message, &["ten minutes", "line 1"]);
}

#[test]
fn a_value_of_the_wrong_type_is_refused_with_its_place() {
    let message = error("\n\nfailure_threshold = \"eight\"\n");
    assert_mentions(&message, &["line 3"]);
    let message = error("count_timeouts = \"yes\"\n");
    assert_mentions(&message, &["line 1"]);
    let message = error("failure_threshold = -1\n");
    assert_mentions(&message, &["line 1"]);
}

#[test]
fn an_out_of_range_value_names_the_setting_the_value_and_the_place() {
    let err = Settings::from_toml("app = \"x\"\nfailure_threshold = 0\n").unwrap_err();
    let SettingsError::Invalid { table, source, .. } = &err else {
        panic!("expected Invalid, got {err:?}");
    };
    assert_eq!(table, "defaults");
    assert_eq!(source.setting(), "failure_threshold");
    assert_mentions(
        &err.to_string(),
        &["failure_threshold = 0", "line 2, column 21"],
    );
}

#[test]
fn an_out_of_range_override_names_its_table() {
    let message = error("[breakers.billing]\nhalf_open_probes = 5000\n");
    assert_mentions(
        &message,
        &["half_open_probes = 5000", "breakers.billing", "line 2"],
    );
    let message = error("[breakers.search]\ncounted_http_statuses = [503, 700]\n");
    assert_mentions(
        &message,
        &["counted_http_statuses = 700", "breakers.search"],
    );
    let message = error("key_prefix = \"\"\n");
    assert_mentions(&message, &["key_prefix", "must not be empty"]);
    let message = error("open_duration = \"0s\"\n");
    assert_mentions(&message, &["open_duration = 0ns", "greater than zero"]);
    let message = error("failure_window = \"400days\"\n");
    assert_mentions(&message, &["failure_window", "365 days"]);
}

#[test]
fn an_unknown_store_is_refused() {
    let message = error("store = \"etcd\"\n");
    assert_mentions(&message, &["\"etcd\"", "memory", "redis", "line 1"]);
}

#[test]
fn top_level_keys_are_refused_inside_a_breaker_table() {
    let message = error("[breakers.billing]\napp = \"x\"\n");
    assert_mentions(
        &message,
        &[
            "`app` belongs at the top level",
            "breakers.billing",
            "line 2",
        ],
    );
}

#[test]
fn broken_toml_is_refused_with_its_place() {
    let message = error("failure_threshold = \n");
    assert_mentions(&message, &["line 1"]);
    let message = error("[breakers.billing\n");
    assert_mentions(&message, &["line 1"]);
}

#[test]
fn a_missing_file_names_its_path() {
    let err = Settings::from_file("no/such/fuse.toml").unwrap_err();
    assert!(matches!(err, SettingsError::Read { .. }));
    assert_mentions(&err.to_string(), &["no/such/fuse.toml"]);
}

#[test]
fn environment_variables_override_the_file_defaults() {
    let settings = Settings::from_file("examples/fuse.toml")
        .unwrap()
        .with_env_vars([
            ("FUSE_APP", "checkout"),
            ("FUSE_KEY_PREFIX", "cb"),
            ("FUSE_FAILURE_THRESHOLD", "7"),
            ("FUSE_FAILURE_WINDOW", "2m"),
            ("FUSE_OPEN_DURATION", "45s"),
            ("FUSE_HALF_OPEN_PROBES", "4"),
            ("FUSE_COUNTED_HTTP_STATUSES", "429, 503"),
            ("FUSE_COUNT_TIMEOUTS", "false"),
            ("FUSE_COUNT_CONNECTION_ERRORS", "0"),
            ("FUSE_COUNT_HTTP_500", "true"),
            ("FUSE_OPEN_BACKOFF", "1.5"),
            ("FUSE_MAX_OPEN_DURATION", "5m"),
            ("FUSE_OPEN_JITTER", "0.1"),
            ("FUSE_PROBE_TIMEOUT", "20s"),
            ("FUSE_STORE", "memory"),
            ("PATH", "/usr/bin"),
            ("FUSE_SOMETHING_ELSE", "ignored"),
        ])
        .unwrap();
    let config = settings.config().unwrap();
    assert_eq!(config.failure_threshold(), 7);
    assert_eq!(config.failure_window(), Duration::from_mins(2));
    assert_eq!(config.open_duration(), Duration::from_secs(45));
    assert_eq!(config.half_open_probes(), 4);
    assert_eq!(config.counted_http_statuses(), &[429, 503]);
    assert!(!config.count_timeouts());
    assert!(!config.count_connection_errors());
    assert!(config.count_http_500());
    assert_eq!(config.open_backoff().millionths(), 1_500_000);
    assert_eq!(config.max_open_duration(), Duration::from_mins(5));
    assert_eq!(config.open_jitter().millionths(), 100_000);
    assert_eq!(config.probe_timeout(), Duration::from_secs(20));
    let registry = settings.registry().unwrap();
    assert_eq!(registry.get("search").key(), "cb:checkout:search");
    assert_eq!(
        registry.get("billing").config().failure_threshold(),
        3,
        "a breaker's own override still wins"
    );
}

#[test]
fn a_bad_environment_variable_is_named_with_its_value() {
    let cases = [
        ("FUSE_FAILURE_THRESHOLD", "eight", "not a number"),
        ("FUSE_OPEN_DURATION", "30", "unit"),
        ("FUSE_COUNT_TIMEOUTS", "maybe", "boolean"),
        ("FUSE_COUNTED_HTTP_STATUSES", "502,x", "not a number"),
    ];
    for (var, value, reason) in cases {
        let err = Settings::default()
            .with_env_vars([(var, value)])
            .unwrap_err();
        assert_mentions(&err.to_string(), &[var, value, reason]);
    }
    let err = Settings::default()
        .with_env_vars([("FUSE_STORE", "postgres")])
        .unwrap_err();
    assert_mentions(&err.to_string(), &["postgres", "FUSE_STORE"]);
    let err = Settings::default()
        .with_env_vars([("FUSE_HALF_OPEN_PROBES", "0")])
        .unwrap_err();
    assert_mentions(&err.to_string(), &["half_open_probes = 0", "defaults"]);
}

/// Each setting, written in the file, in its variable and through the
/// builder, with a value other than its default: the three agree.
#[test]
fn every_setting_reads_the_same_from_the_file_the_environment_and_the_builder() {
    let written = [
        ("failure_threshold", "5", "5"),
        ("failure_window", "\"90s\"", "90s"),
        ("open_duration", "\"1m30s\"", "1m30s"),
        ("half_open_probes", "3", "3"),
        ("counted_http_statuses", "[429, 503]", "429,503"),
        ("count_timeouts", "false", "false"),
        ("count_connection_errors", "false", "0"),
        ("count_http_500", "true", "yes"),
        ("key_prefix", "\"cb\"", "cb"),
        ("policy", "\"rate\"", "rate"),
        ("failure_rate", "25", "25"),
        ("minimum_calls", "40", "40"),
        ("window_buckets", "12", "12"),
        ("slow_call_duration", "\"2s\"", "2s"),
        ("slow_call_rate", "80", "80"),
    ];
    let file = written
        .iter()
        .map(|(key, toml, _)| format!("{key} = {toml}"))
        .collect::<Vec<_>>()
        .join("\n");
    let from_file = Settings::from_toml(&file).unwrap().config().unwrap();
    let vars = written
        .iter()
        .map(|(key, _, text)| (format!("FUSE_{}", key.to_ascii_uppercase()), *text));
    let from_env = Settings::default()
        .with_env_vars(vars)
        .unwrap()
        .config()
        .unwrap();
    let built = fuse_breaker::Config::builder()
        .failure_threshold(5)
        .failure_window(Duration::from_secs(90))
        .open_duration(Duration::from_secs(90))
        .half_open_probes(3)
        .counted_http_statuses([429, 503])
        .count_timeouts(false)
        .count_connection_errors(false)
        .count_http_500(true)
        .key_prefix("cb")
        .policy(fuse_breaker::Policy::Rate)
        .failure_rate(25)
        .minimum_calls(40)
        .window_buckets(12)
        .slow_call_duration(Duration::from_secs(2))
        .slow_call_rate(80)
        .build()
        .unwrap();
    assert_eq!(from_file, built);
    assert_eq!(from_env, built);
    assert_ne!(built, fuse_breaker::Config::default());
}

#[test]
fn a_variable_in_lower_case_is_not_a_setting() {
    let settings = Settings::default()
        .with_env_vars([("FUSE_failure_threshold", "0"), ("FUSE_Open_Duration", "x")])
        .unwrap();
    assert_eq!(settings.config().unwrap(), fuse_breaker::Config::default());
}

#[test]
fn the_registry_capacity_comes_from_the_file_and_the_environment() {
    let settings = Settings::from_toml("max_circuits = 50\n").unwrap();
    assert_eq!(settings.max_circuits, Some(50));
    assert_eq!(settings.registry().unwrap().capacity(), 50);
    let settings = settings
        .with_env_vars([("FUSE_MAX_CIRCUITS", "7")])
        .unwrap();
    assert_eq!(settings.registry().unwrap().capacity(), 7);
    assert_eq!(
        Settings::default().registry().unwrap().capacity(),
        fuse_breaker::DEFAULT_MAX_CIRCUITS
    );
    assert_mentions(
        &error("app = \"x\"\nmax_circuits = 0\n"),
        &["max_circuits = 0", "at least 1", "line 2"],
    );
    let err = Settings::default()
        .with_env_vars([("FUSE_MAX_CIRCUITS", "lots")])
        .unwrap_err();
    assert_mentions(
        &err.to_string(),
        &["FUSE_MAX_CIRCUITS", "lots", "not a number"],
    );
    assert_mentions(
        &error("[breakers.billing]\nmax_circuits = 3\n"),
        &["belongs at the top level"],
    );
}

#[test]
fn the_store_its_url_and_fallback_come_from_the_file_or_the_environment() {
    use fuse_breaker::{Fallback, StoreKind};
    let file = Settings::from_toml(
        r#"
        store = "redis"
        redis_url = "redis://cache:6379"
        fallback = "allow"
        "#,
    )
    .unwrap();
    assert_eq!(file.store, StoreKind::Redis);
    assert_eq!(file.redis_url.as_deref(), Some("redis://cache:6379"));
    assert_eq!(file.fallback, Fallback::Allow);

    let env = Settings::default()
        .with_env_vars([
            ("FUSE_STORE", "redis"),
            ("FUSE_REDIS_URL", "redis://other:6380"),
            ("FUSE_FALLBACK", "reject"),
        ])
        .unwrap();
    assert_eq!(env.store, StoreKind::Redis);
    assert_eq!(env.redis_url.as_deref(), Some("redis://other:6380"));
    assert_eq!(env.fallback, Fallback::Reject);
    assert_eq!(Settings::default().fallback, Fallback::Local);

    let err = Settings::from_toml("fallback = \"panic\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown fallback \"panic\" (fallback, line 1, column 12)"),
        "{err}"
    );
    let err = Settings::default()
        .with_env_vars([("FUSE_FALLBACK", "maybe")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("FUSE_FALLBACK"), "{err}");

    // An in-process registry is not what a shared store makes.
    let err = file.registry().unwrap_err().to_string();
    assert!(err.contains("Settings::shared_registry"), "{err}");
}

#[test]
fn a_database_store_its_url_and_table_come_from_the_file_or_the_environment() {
    use fuse_breaker::StoreKind;
    let file = Settings::from_toml(
        r#"
        store = "database"
        database_url = "postgres://db/shop"
        database_table = "shop_circuits"
        "#,
    )
    .unwrap();
    assert_eq!(file.store, StoreKind::Database);
    assert_eq!(file.database_url.as_deref(), Some("postgres://db/shop"));
    assert_eq!(file.database_table.as_deref(), Some("shop_circuits"));

    let env = Settings::default()
        .with_env_vars([
            ("FUSE_STORE", "database"),
            ("FUSE_DATABASE_URL", "sqlite:/var/lib/shop/fuse.db"),
            ("FUSE_DATABASE_TABLE", "circuits"),
        ])
        .unwrap();
    assert_eq!(env.store, StoreKind::Database);
    assert_eq!(
        env.database_url.as_deref(),
        Some("sqlite:/var/lib/shop/fuse.db")
    );
    assert_eq!(env.database_table.as_deref(), Some("circuits"));
}

#[cfg(feature = "sql")]
#[test]
fn a_shared_registry_on_a_database_uses_its_table_and_refuses_a_bad_one() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let dir = env!("CARGO_TARGET_TMPDIR");
            let url = format!("sqlite://{dir}/settings-{}.db", std::process::id());
            let settings = Settings::default()
                .with_env_vars([
                    ("FUSE_STORE", "database"),
                    ("FUSE_DATABASE_URL", url.as_str()),
                    ("FUSE_DATABASE_TABLE", "settings_circuits"),
                    ("FUSE_APP", "shop"),
                ])
                .unwrap();
            fuse_breaker::store::SqlStore::open(&url)
                .unwrap()
                .with_table("settings_circuits")
                .unwrap()
                .ensure_schema()
                .await
                .unwrap();
            let registry = settings.shared_registry().unwrap();
            let billing = registry.get("billing");
            assert_eq!(billing.key(), "fuse:shop:billing");
            billing.force_open().await.unwrap();
            assert_eq!(billing.state().await.unwrap(), fuse_breaker::State::Open);

            let err = settings
                .clone()
                .with_env_vars([("FUSE_DATABASE_TABLE", "x y")])
                .unwrap()
                .shared_registry()
                .unwrap_err()
                .to_string();
            assert!(err.contains("not a table name"), "{err}");
            let err = Settings::from_toml("store = \"database\"")
                .unwrap()
                .shared_registry()
                .unwrap_err()
                .to_string();
            assert!(err.contains("database_url"), "{err}");
        });
}

#[test]
fn the_debug_output_of_settings_shows_no_password() {
    let settings = fuse_breaker::Settings::from_toml(
        r#"
        redis_url = "redis://user:hunter2@cache:6379/0"
        database_url = "postgres://127.0.0.1:1/shop?user=admin&password=hunter2"
        "#,
    )
    .unwrap();
    let printed = format!("{settings:?}");
    assert!(!printed.contains("hunter2"), "{printed}");
    assert_mentions(
        &printed,
        &[
            "redis://cache:6379/0",
            "postgres://127.0.0.1:1/shop?user=admin&password=***",
        ],
    );
}

#[test]
fn a_control_character_in_a_piece_of_the_keys_is_refused() {
    for (text, setting) in [
        ("app = \"shop\\u001b[2J\"", "app"),
        ("key_prefix = \"fu\\u0000se\"", "key_prefix"),
        (
            "[breakers.\"bill\\u001b]0;x\\u0007\"]\nfailure_threshold = 2",
            "name",
        ),
    ] {
        let err = Settings::from_toml(text)
            .and_then(|settings| settings.registry().map(drop))
            .expect_err(text);
        let message = err.to_string();
        assert_mentions(&message, &[setting, "control characters"]);
        assert!(!message.chars().any(char::is_control), "{message:?}");
    }
}

/// The six settings of the `rate` policy (SPEC §9), from the file, its
/// `[breakers.NAME]` tables, the `FUSE_*` variables and a registry's
/// per-name overrides; the defaults left alone where nothing sets them.
#[test]
fn the_rate_settings_come_from_the_file_its_tables_and_the_environment() {
    use fuse_breaker::{Config, Overrides, Policy, Registry};

    let settings = Settings::from_toml(
        r#"
        policy = "rate"
        failure_rate = 30
        minimum_calls = 50
        window_buckets = 6
        slow_call_duration = "750ms"
        slow_call_rate = 90

        [breakers.search]
        policy = "count"

        [breakers.reports]
        slow_call_duration = "none"
        minimum_calls = 5
        "#,
    )
    .unwrap();
    let defaults = settings.config().unwrap();
    assert_eq!(defaults.policy(), Policy::Rate);
    assert_eq!(defaults.failure_rate(), 30);
    assert_eq!(defaults.minimum_calls(), 50);
    assert_eq!(defaults.window_buckets(), 6);
    assert_eq!(
        defaults.slow_call_duration(),
        Some(Duration::from_millis(750))
    );
    assert_eq!(defaults.slow_call_rate(), 90);

    let registry = settings.registry().unwrap();
    let search = registry.get("search");
    assert_eq!(search.config().policy(), Policy::Count);
    assert_eq!(
        search.config().failure_rate(),
        30,
        "the rest from the defaults"
    );
    let reports = registry.get("reports");
    assert_eq!(reports.config().policy(), Policy::Rate);
    assert_eq!(reports.config().slow_call_duration(), None, "switched off");
    assert_eq!(reports.config().minimum_calls(), 5);

    // The variables override the file's defaults, not its tables.
    let settings = settings
        .with_env_vars([
            ("FUSE_POLICY", "count"),
            ("FUSE_FAILURE_RATE", "70"),
            ("FUSE_SLOW_CALL_DURATION", "off"),
        ])
        .unwrap();
    let defaults = settings.config().unwrap();
    assert_eq!(defaults.policy(), Policy::Count);
    assert_eq!(defaults.failure_rate(), 70);
    assert_eq!(defaults.slow_call_duration(), None);
    assert_eq!(defaults.minimum_calls(), 50, "from the file");
    let registry = settings.registry().unwrap();
    assert_eq!(registry.get("reports").config().minimum_calls(), 5);

    // Nothing set: SPEC §9's defaults.
    let config = Settings::from_toml("").unwrap().config().unwrap();
    assert_eq!(
        (
            config.policy(),
            config.failure_rate(),
            config.minimum_calls(),
            config.window_buckets(),
            config.slow_call_duration(),
            config.slow_call_rate()
        ),
        (Policy::Count, 50, 20, 10, None, 100)
    );

    // A registry's per-name overrides, in code.
    let registry = Registry::builder()
        .overrides(
            "billing",
            Overrides {
                policy: Some(Policy::Rate),
                failure_rate: Some(10),
                slow_call_duration: Some(Some(Duration::from_secs(1))),
                ..Overrides::default()
            },
        )
        .build()
        .unwrap();
    let billing = registry.get_operation("billing", "charge");
    assert_eq!(billing.config().policy(), Policy::Rate);
    assert_eq!(billing.config().failure_rate(), 10);
    assert_eq!(
        billing.config().slow_call_duration(),
        Some(Duration::from_secs(1))
    );
    assert_eq!(registry.get("other").config(), &Config::default());
}

/// Each refused value of a rate setting, in the file: the message names
/// the setting, the value, the rule and where it is written.
#[test]
fn a_bad_rate_setting_in_the_file_names_the_setting_and_the_value() {
    let cases: [(&str, &[&str]); 11] = [
        (
            "failure_rate = 0",
            &["failure_rate = 0", "between 1 and 100", "line 1"],
        ),
        (
            "failure_rate = 101",
            &["failure_rate = 101", "between 1 and 100"],
        ),
        (
            "policy = \"ratio\"",
            &["unknown policy \"ratio\"", "count or rate", "line 1"],
        ),
        ("policy = 1", &["\"count\" or \"rate\"", "line 1"]),
        (
            "slow_call_duration = 5",
            &["slow_call_duration", "\"5s\"", "\"none\"", "line 1"],
        ),
        (
            "slow_call_duration = \"soon\"",
            &["slow_call_duration", "\"soon\"", "line 1"],
        ),
        (
            "slow_call_duration = \"0s\"",
            &["slow_call_duration = 0ns", "greater than zero"],
        ),
        (
            "window_buckets = 61",
            &["window_buckets = 61", "between 1 and 60", "line 1"],
        ),
        ("window_buckets = 0", &["window_buckets = 0"]),
        ("minimum_calls = 0", &["minimum_calls = 0", "between 1 and"]),
        (
            "slow_call_rate = 0",
            &["slow_call_rate = 0", "between 1 and 100"],
        ),
    ];
    for (text, parts) in cases {
        assert_mentions(&error(&format!("{text}\n")), parts);
    }
    let too_many = fuse_breaker::MAX_MINIMUM_CALLS + 1;
    assert_mentions(
        &error(&format!("app = \"x\"\nminimum_calls = {too_many}\n")),
        &[&format!("minimum_calls = {too_many}"), "line 2, column 17"],
    );
    // In a breaker's table: the table is named too.
    assert_mentions(
        &error("[breakers.billing]\nfailure_rate = 0\n"),
        &["failure_rate = 0", "breakers.billing", "line 2"],
    );
    assert_mentions(
        &error("[breakers.billing]\npolicy = \"ratio\"\n"),
        &["unknown policy \"ratio\"", "line 2"],
    );
}

/// The same refusals through the `FUSE_*` variables, and near misses of
/// the new names taken for typos.
#[test]
fn a_bad_rate_variable_names_the_variable_and_the_value() {
    let cases = [
        (
            "FUSE_POLICY",
            "ratio",
            "not a policy: expected count or rate",
        ),
        ("FUSE_SLOW_CALL_DURATION", "5", "\"none\""),
        ("FUSE_FAILURE_RATE", "half", "not a number"),
        ("FUSE_MINIMUM_CALLS", "-3", "not a number"),
    ];
    for (var, value, reason) in cases {
        let err = Settings::default()
            .with_env_vars([(var, value)])
            .unwrap_err();
        assert_mentions(&err.to_string(), &[var, value, reason]);
    }
    for (var, value, named) in [
        ("FUSE_FAILURE_RATE", "0", "failure_rate = 0"),
        ("FUSE_WINDOW_BUCKETS", "61", "window_buckets = 61"),
        ("FUSE_SLOW_CALL_RATE", "101", "slow_call_rate = 101"),
        ("FUSE_SLOW_CALL_DURATION", "0s", "slow_call_duration = 0ns"),
    ] {
        let err = Settings::default()
            .with_env_vars([(var, value)])
            .unwrap_err();
        assert_mentions(
            &err.to_string(),
            &[named, &format!("(in defaults, from {var})")],
        );
    }
    // A variable that overrides the file's value is named, not the file.
    let err = Settings::from_toml("app = \"x\"\nwindow_buckets = 6\n")
        .unwrap()
        .with_env_vars([("FUSE_WINDOW_BUCKETS", "99")])
        .unwrap_err()
        .to_string();
    assert_mentions(&err, &["window_buckets = 99", "from FUSE_WINDOW_BUCKETS"]);
    assert!(!err.contains("line 2"), "{err}");
    for (typo, meant) in [
        ("FUSE_FAILURE_RATES", "FUSE_FAILURE_RATE"),
        ("FUSE_WINDOW_BUCKET", "FUSE_WINDOW_BUCKETS"),
        ("FUSE_SLOW_CALL_DURATON", "FUSE_SLOW_CALL_DURATION"),
        ("FUSE_MINIMUM_CALL", "FUSE_MINIMUM_CALLS"),
        ("FUSE_POLCY", "FUSE_POLICY"),
    ] {
        let err = Settings::default()
            .with_env_vars([(typo, "1")])
            .unwrap_err();
        assert_mentions(&err.to_string(), &[typo, &format!("did you mean {meant}?")]);
    }
}

/// SPEC §8's quorum: `min_reporters` from the file, the builder and
/// `FUSE_MIN_REPORTERS`; 0 and past the maximum refused, naming the
/// setting and the value.
#[test]
fn min_reporters_is_read_everywhere_and_a_bad_one_is_named() {
    let from_file = Settings::from_toml("min_reporters = 3\n")
        .unwrap()
        .config()
        .unwrap();
    let from_env = Settings::default()
        .with_env_vars([("FUSE_MIN_REPORTERS", "3")])
        .unwrap()
        .config()
        .unwrap();
    let built = fuse_breaker::Config::builder()
        .min_reporters(3)
        .build()
        .unwrap();
    assert_eq!(
        (from_file.min_reporters(), from_env, built),
        (3, from_file.clone(), from_file)
    );
    let too_many = fuse_breaker::MAX_MIN_REPORTERS + 1;
    for (text, parts) in [
        (
            "min_reporters = 0".to_owned(),
            vec!["min_reporters = 0".to_owned()],
        ),
        (
            format!("min_reporters = {too_many}"),
            vec![
                format!("min_reporters = {too_many}"),
                format!("between 1 and {}", too_many - 1),
            ],
        ),
    ] {
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        assert_mentions(&error(&format!("{text}\n")), &parts);
    }
    let err = Settings::default()
        .with_env_vars([("FUSE_MIN_REPORTERS", "0")])
        .unwrap_err();
    assert_mentions(
        &err.to_string(),
        &[
            "min_reporters = 0",
            "(in defaults, from FUSE_MIN_REPORTERS)",
        ],
    );
    let err = fuse_breaker::Config::builder()
        .min_reporters(too_many)
        .build()
        .unwrap_err();
    assert_eq!(err.setting(), "min_reporters");
    assert!(err.to_string().contains(&too_many.to_string()), "{err}");
}
