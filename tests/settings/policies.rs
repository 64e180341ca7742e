//! The `rate` policy's settings and the quorum's, from a file, its tables
//! and the environment, and the bad ones named.

use super::*;

/// The six settings of the `rate` policy (SPEC §9), from the file, its
/// `[breakers.NAME]` tables, the `FUSE_*` variables and a registry's
/// per-name overrides; the defaults left alone where nothing sets them.
#[test]
fn the_rate_settings_come_from_the_file_its_tables_and_the_environment() {
    use fuse_breaker::{Config, Registry, config::Overrides, config::Policy};

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
    let too_many = fuse_breaker::config::MAX_MINIMUM_CALLS + 1;
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
    let too_many = fuse_breaker::config::MAX_MIN_REPORTERS + 1;
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
