use axum::http::{HeaderMap, HeaderValue};
use serde_json::json;

use super::*;

fn headers(by: Option<&[u8]>) -> HeaderMap {
    let mut headers = HeaderMap::new();
    if let Some(by) = by {
        headers.insert(CHANGED_BY, HeaderValue::from_bytes(by).unwrap());
    }
    headers
}

fn read(body: &Value) -> Result<Requested, ApiError> {
    Requested::read(&headers(None), body)
}

#[test]
fn each_kind_of_json_value_reads_as_its_text() {
    let requested = read(&json!({
        "failure_threshold": 3,
        "open_duration": "10s",
        "counted_http_statuses": [500, 503],
        "count_timeouts": false,
        "slow_call_duration": null,
        "failure_rate": 25,
        "open_backoff": 1.5,
        "policy": "rate",
    }))
    .unwrap();
    let o = &requested.overrides;
    assert_eq!(o.failure_threshold, Some(3));
    assert_eq!(o.open_duration, Some(std::time::Duration::from_secs(10)));
    assert_eq!(o.counted_http_statuses, Some(vec![500, 503]));
    assert_eq!(o.count_timeouts, Some(false));
    assert_eq!(o.slow_call_duration, Some(None));
    assert_eq!(o.failure_rate, Some(25));
    assert_eq!(
        o.open_backoff.map(|f| f.to_string()),
        Some("1.5".to_owned())
    );
    assert_eq!(o.policy.map(|p| p.to_string()), Some("rate".to_owned()));
    assert_eq!(o.half_open_probes, None);
    assert_eq!(requested.by, "admin");
}

#[test]
fn what_is_no_setting_or_no_value_is_refused_by_name() {
    let cases = [
        (json!([1, 2]), "bad_request", "JSON object"),
        (json!("failure_threshold=3"), "bad_request", "JSON object"),
        (json!({}), "bad_request", "no setting"),
        (
            json!({"failure_treshold": 3}),
            "invalid_setting",
            "\"failure_treshold\"",
        ),
        (
            json!({"failure_threshold": "many"}),
            "invalid_setting",
            "failure_threshold",
        ),
        (
            json!({"failure_threshold": -1}),
            "invalid_setting",
            "failure_threshold",
        ),
        (
            json!({"open_duration": 10}),
            "invalid_setting",
            "open_duration",
        ),
        (
            json!({"counted_http_statuses": ["x"]}),
            "invalid_setting",
            "counted_http_statuses",
        ),
        (
            json!({"count_timeouts": {"on": true}}),
            "invalid_setting",
            "count_timeouts",
        ),
        (json!({"policy": "sometimes"}), "invalid_setting", "policy"),
    ];
    for (body, code, named) in cases {
        let err = read(&body).unwrap_err();
        assert_eq!(err.code(), code, "{body}: {err}");
        assert!(err.message().contains(named), "{body}: {err}");
    }
    let unknown = read(&json!({"failure_treshold": 3})).unwrap_err();
    assert!(unknown.message().contains("failure_threshold"), "{unknown}");
}

#[test]
fn a_caller_names_itself_in_printable_ascii_of_bounded_length() {
    let named = Requested::read(&headers(Some(b" alice ")), &json!({"failure_threshold": 3}));
    assert_eq!(named.unwrap().by, "admin (alice)");
    let longest = "a".repeat(MAX_CALLER);
    let body = json!({"failure_threshold": 3});
    assert!(Requested::read(&headers(Some(longest.as_bytes())), &body).is_ok());
    for bad in [
        "a".repeat(MAX_CALLER + 1).into_bytes(),
        b"  ".to_vec(),
        b"caf\xc3\xa9".to_vec(),
        b"tab\there".to_vec(),
    ] {
        let err = Requested::read(&headers(Some(&bad)), &body).unwrap_err();
        assert_eq!(err.code(), "bad_request", "{bad:?}");
        assert!(err.message().contains("X-Fuse-Changed-By"), "{err}");
    }
}

#[test]
fn the_answer_lists_what_changed_in_spec_order() {
    let from = Config::default();
    let to = Config::builder()
        .open_duration(std::time::Duration::from_secs(5))
        .failure_threshold(2)
        .build()
        .unwrap();
    let change = SettingsChange::new("billing", Some("fuse:billing"), "admin", &from, &to);
    let settings: Vec<&str> = change.changes.iter().map(|c| c.setting.as_str()).collect();
    assert_eq!(settings, ["failure_threshold", "open_duration"]);
    assert_eq!(
        (change.from.failure_threshold, change.to.failure_threshold),
        (8, 2)
    );
    let again: SettingsChange =
        serde_json::from_str(&serde_json::to_string(&change).unwrap()).unwrap();
    assert_eq!(again, change);
}
