//! A settings file: the complete example, and every kind of mistake in
//! one, named with its place.

use super::*;

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
    assert_eq!(other.config().policy(), fuse_breaker::config::Policy::Count);
    let payments = registry.get("payments").config().clone();
    assert_eq!(payments.policy(), fuse_breaker::config::Policy::Rate);
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
