use super::*;

#[test]
fn a_setting_is_its_name_and_its_text() {
    assert_eq!(
        setting("failure_threshold=3"),
        Ok(("failure_threshold".to_owned(), "3".to_owned()))
    );
    // Only the first `=` splits; the value is sent as written.
    assert_eq!(
        setting("counted_http_statuses=502,503"),
        Ok(("counted_http_statuses".to_owned(), "502,503".to_owned()))
    );
    assert_eq!(
        setting("open_jitter=-1"),
        Ok(("open_jitter".to_owned(), "-1".to_owned()))
    );
    assert_eq!(setting("a=b=c"), Ok(("a".to_owned(), "b=c".to_owned())));
    assert_eq!(
        setting("slow_call_duration="),
        Ok(("slow_call_duration".to_owned(), String::new()))
    );
}

#[test]
fn an_argument_without_a_setting_is_refused() {
    let err = setting("failure_threshold").unwrap_err();
    assert!(
        err.contains("\"failure_threshold\" is not SETTING=VALUE"),
        "{err}"
    );
    let err = setting("=3").unwrap_err();
    assert!(err.contains("names no setting"), "{err}");
    let err = setting(" =3").unwrap_err();
    assert!(err.contains("names no setting"), "{err}");
    // What the terminal shows of a bad argument is printable.
    let err = setting("\u{1b}[2J").unwrap_err();
    assert!(!err.contains('\u{1b}'), "{err}");
}

#[test]
fn the_body_sends_each_setting_as_its_text() {
    let settings = [
        ("failure_threshold".to_owned(), "3".to_owned()),
        ("open_duration".to_owned(), "30s".to_owned()),
        ("counted_http_statuses".to_owned(), "502,503".to_owned()),
    ];
    assert_eq!(
        body(&settings).unwrap(),
        serde_json::json!({
            "failure_threshold": "3",
            "open_duration": "30s",
            "counted_http_statuses": "502,503",
        })
    );
    let twice = [
        ("failure_threshold".to_owned(), "3".to_owned()),
        ("failure_threshold".to_owned(), "4".to_owned()),
    ];
    let err = body(&twice).unwrap_err();
    assert!(
        err.contains("failure_threshold is given more than once"),
        "{err}"
    );
}

#[test]
fn the_target_is_a_circuit_s_path_or_a_name_s() {
    assert_eq!(
        Target::Circuit("fuse:shop:billing").segments(),
        ["circuits", "fuse:shop:billing", "settings"]
    );
    assert_eq!(
        Target::Name("billing").segments(),
        ["names", "billing", "settings"]
    );
}

/// The rule the admin API checks `X-Fuse-Changed-By` by.
fn taken(by: &str) -> bool {
    by == by.trim()
        && !by.is_empty()
        && by.len() <= 64
        && by.bytes().all(|b| (b' '..=b'~').contains(&b))
}

#[test]
fn the_caller_is_the_command_and_the_user_within_the_api_s_rule() {
    assert_eq!(changed_by(None), "fuse set");
    assert_eq!(changed_by(Some("")), "fuse set");
    assert_eq!(changed_by(Some("  ")), "fuse set");
    assert_eq!(changed_by(Some("alice")), "fuse set by alice");
    assert_eq!(changed_by(Some("josé")), "fuse set by jos?");
    assert_eq!(changed_by(Some("a\u{1b}[2Jb\n")), "fuse set by a?[2Jb?");
    let long = "x".repeat(100);
    let by = changed_by(Some(&long));
    assert_eq!(by.len(), 64, "{by}");
    assert!(by.starts_with("fuse set by xxx"), "{by}");
    // Cut where a space was: no space at the end.
    let spaced = format!("{} y", "x".repeat(51));
    assert_eq!(
        changed_by(Some(&spaced)),
        format!("fuse set by {}", "x".repeat(51))
    );
    for user in [
        None,
        Some("alice"),
        Some("josé"),
        Some(long.as_str()),
        Some(spaced.as_str()),
    ] {
        assert!(taken(&changed_by(user)), "{user:?}");
    }
}

fn change(key: Option<&str>, changes: &serde_json::Value) -> SettingsChange {
    let config = serde_json::json!({"failure_threshold": 8, "failure_window_ms": 60000,
                                    "open_duration_ms": 30000, "half_open_probes": 2});
    serde_json::from_value(serde_json::json!({
        "name": "billing", "key": key, "by": "admin (fuse set by alice)",
        "changes": changes, "from": config, "to": config,
    }))
    .unwrap()
}

#[test]
fn the_table_shows_each_change() {
    let one = change(
        Some("fuse:shop:billing"),
        &serde_json::json!([
            {"setting": "failure_threshold", "from": "8", "to": "3"},
            {"setting": "open_duration", "from": "30s", "to": "1m\u{1b}[2J"},
        ]),
    );
    let mut out = Vec::new();
    write_table(&mut out, &one).unwrap();
    let table = String::from_utf8(out).unwrap();
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 3, "{table}");
    assert_eq!(
        lines[0].split_whitespace().collect::<Vec<_>>(),
        ["SETTING", "FROM", "TO"]
    );
    assert_eq!(
        lines[1].split_whitespace().collect::<Vec<_>>(),
        ["failure_threshold", "8", "3"]
    );
    assert_eq!(
        lines[2].split_whitespace().collect::<Vec<_>>(),
        ["open_duration", "30s", "1m\\x1b[2J"]
    );

    let mut out = Vec::new();
    write_table(&mut out, &change(None, &serde_json::json!([]))).unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "no setting changed: the name billing already had these settings\n"
    );
    let mut out = Vec::new();
    write_table(
        &mut out,
        &change(Some("fuse:billing"), &serde_json::json!([])),
    )
    .unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "no setting changed: fuse:billing already had these settings\n"
    );
}
