//! `FUSE_*` variables over a file: every setting read the same from
//! each, and a bad variable named with its value.

use super::*;

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
        .policy(fuse_breaker::config::Policy::Rate)
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
        fuse_breaker::config::DEFAULT_MAX_CIRCUITS
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
#[cfg(feature = "metrics")]
fn the_metric_names_come_from_the_file_and_the_environment() {
    use fuse_breaker::MetricNames;
    // One scheme per process: this binary's is the crate's own.
    MetricNames::Fuse.install().unwrap();
    let settings = Settings::from_toml("metric_names = \"fuse\"\n").unwrap();
    assert_eq!(settings.metric_names.as_deref(), Some("fuse"));
    let registry = settings.registry().unwrap();
    settings.reload(&registry).unwrap();
    let other = Settings::default()
        .with_env_vars([("FUSE_METRIC_NAMES", "resilience4j")])
        .unwrap();
    assert_eq!(other.metric_names.as_deref(), Some("resilience4j"));
    assert_mentions(
        &other.registry().unwrap_err().to_string(),
        &[
            "metric_names",
            "FUSE_METRIC_NAMES",
            "already names its metrics Fuse",
        ],
    );
    assert_mentions(
        &other.reload(&registry).unwrap_err().to_string(),
        &["metric_names", "cannot change on a running registry"],
    );
    assert_mentions(
        &error("app = \"x\"\nmetric_names = \"micrometer\"\n"),
        &["metric_names", "micrometer", "resilience4j", "line 2"],
    );
}

#[test]
#[cfg(not(feature = "metrics"))]
fn the_metric_names_need_the_metrics_feature() {
    assert_mentions(
        &error("metric_names = \"fuse\"\n"),
        &["metric_names", "needs the `metrics` feature", "line 1"],
    );
}
