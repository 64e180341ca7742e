//! §2: configuration.

use super::*;

/// Builds and expects a refusal naming `setting` and `value`.
pub(super) fn refused_with(builder: ConfigBuilder, setting: &str, value: &str) {
    let err = builder
        .build()
        .expect_err("an invalid setting must be refused");
    assert_eq!(err.setting(), setting, "{err}");
    let text = err.to_string();
    assert!(text.contains(setting), "{text:?} does not name {setting}");
    assert!(
        text.contains(err.value()),
        "{text:?} does not name the value"
    );
    assert_eq!(err.value(), value, "{err}");
}

#[test]
fn config_defaults() {
    let config = Config::default();
    assert_eq!(config.failure_threshold(), 8);
    assert_eq!(config.failure_window(), secs(60));
    assert_eq!(config.open_duration(), secs(30));
    assert_eq!(config.half_open_probes(), 2);
    assert_eq!(config.counted_http_statuses(), &[502, 503, 504]);
    assert!(config.count_timeouts());
    assert!(config.count_connection_errors());
    assert!(!config.count_http_500());
    assert_eq!(config.key_prefix(), "fuse");
    assert_eq!(build(Config::builder()), config);
}

#[test]
fn config_documented_maxima_are_in_the_spec_ranges() {
    assert!((1024..=65_536).contains(&MAX_FAILURE_THRESHOLD));
    assert!((1024..=65_536).contains(&MAX_HALF_OPEN_PROBES));
    assert!(MAX_DURATION >= secs(24 * 60 * 60));
}

/// Every value SPEC §2 calls invalid, one row each: the builder, the setting
/// its error must name and the value it must show.
#[allow(clippy::too_many_lines)] // a table, one row per refusal
fn refusals() -> Vec<(ConfigBuilder, &'static str, String)> {
    let too_many_failures = MAX_FAILURE_THRESHOLD + 1;
    let too_many_probes = MAX_HALF_OPEN_PROBES + 1;
    let too_long = MAX_DURATION + NS;
    let debug = |d: Duration| format!("{d:?}");
    vec![
        (
            Config::builder().failure_threshold(0),
            "failure_threshold",
            "0".into(),
        ),
        (
            Config::builder().failure_threshold(too_many_failures),
            "failure_threshold",
            too_many_failures.to_string(),
        ),
        (
            Config::builder().failure_threshold(u32::MAX),
            "failure_threshold",
            u32::MAX.to_string(),
        ),
        (
            Config::builder().half_open_probes(0),
            "half_open_probes",
            "0".into(),
        ),
        (
            Config::builder().half_open_probes(too_many_probes),
            "half_open_probes",
            too_many_probes.to_string(),
        ),
        (
            Config::builder().half_open_probes(u32::MAX),
            "half_open_probes",
            u32::MAX.to_string(),
        ),
        (
            Config::builder().failure_window(Duration::ZERO),
            "failure_window",
            debug(Duration::ZERO),
        ),
        (
            Config::builder().failure_window(too_long),
            "failure_window",
            debug(too_long),
        ),
        (
            Config::builder().failure_window(Duration::MAX),
            "failure_window",
            debug(Duration::MAX),
        ),
        (
            Config::builder().open_duration(Duration::ZERO),
            "open_duration",
            debug(Duration::ZERO),
        ),
        (
            Config::builder().open_duration(too_long),
            "open_duration",
            debug(too_long),
        ),
        (
            Config::builder().open_duration(Duration::MAX),
            "open_duration",
            debug(Duration::MAX),
        ),
        (
            Config::builder().counted_http_statuses([99]),
            "counted_http_statuses",
            "99".into(),
        ),
        (
            Config::builder().counted_http_statuses([0]),
            "counted_http_statuses",
            "0".into(),
        ),
        (
            Config::builder().counted_http_statuses([600]),
            "counted_http_statuses",
            "600".into(),
        ),
        (
            Config::builder().counted_http_statuses([502, 600, 503]),
            "counted_http_statuses",
            "600".into(),
        ),
        (
            Config::builder().key_prefix(""),
            "key_prefix",
            "\"\"".into(),
        ),
        (
            Config::builder().key_prefix("fu\0se"),
            "key_prefix",
            "\"fu\\0se\"".into(),
        ),
        (
            Config::builder().key_prefix("fuse\x1b[2J"),
            "key_prefix",
            "\"fuse\\u{1b}[2J\"".into(),
        ),
    ]
}

/// Every value SPEC §2 calls invalid is refused, with an error that names
/// the setting and the value.
#[test]
fn config_invalid_values_are_refused_naming_setting_and_value() {
    for (builder, setting, value) in refusals() {
        refused_with(builder, setting, &value);
    }
}

/// The edges of every range are accepted and read back as set.
#[test]
fn config_edges_of_the_ranges_are_accepted() {
    let max = build(Config::builder().failure_threshold(MAX_FAILURE_THRESHOLD));
    assert_eq!(max.failure_threshold(), MAX_FAILURE_THRESHOLD);
    assert_eq!(
        build(Config::builder().failure_threshold(1)).failure_threshold(),
        1
    );
    let max = build(Config::builder().half_open_probes(MAX_HALF_OPEN_PROBES));
    assert_eq!(max.half_open_probes(), MAX_HALF_OPEN_PROBES);
    assert_eq!(
        build(Config::builder().half_open_probes(1)).half_open_probes(),
        1
    );
    let window = |d| build(Config::builder().failure_window(d)).failure_window();
    assert_eq!((window(MAX_DURATION), window(NS)), (MAX_DURATION, NS));
    let open = |d| build(Config::builder().open_duration(d)).open_duration();
    assert_eq!((open(MAX_DURATION), open(NS)), (MAX_DURATION, NS));
    let edges = build(Config::builder().counted_http_statuses([100, 599]));
    assert_eq!(edges.counted_http_statuses(), &[100, 599]);
}

#[test]
fn counted_http_statuses_returns_the_list_as_set() {
    let config = build(
        Config::builder()
            .counted_http_statuses([429, 503])
            .count_http_500(true),
    );
    assert_eq!(config.counted_http_statuses(), &[429, 503]);
    assert!(config.counts_http_status(429));
    assert!(config.counts_http_status(503));
    assert!(!config.counts_http_status(502), "502 was not listed");
    let empty = build(Config::builder().counted_http_statuses([]));
    assert!(empty.counted_http_statuses().is_empty());
    assert!(!empty.counts_http_status(503));
}

#[test]
fn counts_http_status_applies_count_http_500() {
    let default = Config::default();
    assert!(!default.counts_http_status(500));
    assert!(default.counts_http_status(502));
    assert!(!default.counts(FailureKind::HttpStatus(500)));

    let with_500 = build(Config::builder().count_http_500(true));
    assert!(with_500.counts_http_status(500));
    assert!(with_500.counts(FailureKind::HttpStatus(500)));
    assert!(with_500.counts_http_status(504));
    assert!(!with_500.counts_http_status(501));
    assert_eq!(
        with_500.counted_http_statuses(),
        &[502, 503, 504],
        "count_http_500 does not rewrite the list"
    );

    let only_500 = build(
        Config::builder()
            .counted_http_statuses([])
            .count_http_500(true),
    );
    assert!(only_500.counts_http_status(500));
    assert!(!only_500.counts_http_status(502));
}
