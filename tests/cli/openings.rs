//! An opening (SPEC §10) in the status: which in a row, how long, how
//! much is left, from a store and from an admin API.

use super::*;

/// An admin API's circuits in `fuse status`: an open circuit's opening
/// (which in a row, how long it lasts, how long is left), a half-open
/// one's n, none for a closed one or an older API's answer; `--json`
/// prints the API's fields.
#[test]
fn an_admin_api_s_openings_are_shown() {
    let mut open = view("fuse:shop:billing", "open");
    open["openings"] = 3.into();
    open["open_for_ms"] = 240_000.into();
    open["half_open_in_ms"] = 61_500.into();
    open["retry_at"] = "2026-12-01T20:05:02.345Z".into();
    open["opened_at"] = "2026-12-01T20:01:02.345Z".into();
    let mut half_open = view("fuse:shop:search", "half_open");
    half_open["openings"] = 2.into();
    let (url, _) = fake_api(100, move |_| {
        serde_json::json!({"circuits": [open, view("fuse:shop:older", "open"), half_open,
                                         view("fuse:shop:zebra", "closed")],
                           "total": 4, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let table = stdout(&fuse(&target, "shop", &["status"]));
    let header: Vec<&str> = table
        .lines()
        .next()
        .unwrap()
        .split("  ")
        .filter(|c| !c.is_empty())
        .map(str::trim)
        .collect();
    assert_eq!(
        header,
        [
            "KEY",
            "STATE",
            "FAILURES",
            "PROBES",
            "OPENING",
            "OPEN FOR",
            "HALF-OPEN IN"
        ],
        "{table}"
    );
    let columns = |key: &str| -> Vec<String> {
        line_of(&table, key)
            .split_whitespace()
            .skip(1)
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(
        columns("fuse:shop:billing"),
        ["open", "0", "0/2", "#3", "240.0s", "61.5s"],
        "{table}"
    );
    assert_eq!(
        columns("fuse:shop:search"),
        ["half_open", "0", "0/2", "#2", "-", "-"],
        "{table}"
    );
    assert_eq!(
        columns("fuse:shop:older"),
        ["open", "0", "0/2", "-", "-", "-"],
        "an older API's open circuit: {table}"
    );
    assert_eq!(
        columns("fuse:shop:zebra"),
        ["closed", "0", "0/2", "-", "-", "-"]
    );

    let json = stdout(&fuse(&target, "shop", &["status", "--json"]));
    let billing: serde_json::Value = serde_json::from_str(json.lines().next().unwrap()).unwrap();
    assert_eq!(
        (
            &billing["openings"],
            &billing["open_for_ms"],
            &billing["retry_at"]
        ),
        (
            &3.into(),
            &240_000.into(),
            &"2026-12-01T20:05:02.345Z".into()
        ),
        "{json}"
    );
}

/// A shared circuit that backs off (SPEC §10), on every store: `fuse
/// status` shows the opening the store holds (its n, its duration and
/// the time left), whatever the command's own configuration says.
#[test]
fn a_shared_circuit_s_opening_reaches_the_status() {
    use fuse_breaker::Config;

    use std::time::Duration;

    for target in targets() {
        let at = &target.url;
        let app = app();
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .open_duration(Duration::from_secs(1))
            .open_backoff(10.0)
            .max_open_duration(Duration::from_mins(1))
            .build()
            .unwrap();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let fuse = fuse_breaker::Fuse::builder("charge")
                .store(store)
                .app(&app)
                .config(config)
                .build();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            tokio::time::sleep(Duration::from_millis(1050)).await;
            let probe = fuse.try_acquire().await.expect("a probe");
            probe.failure().await.unwrap();
        });
        // The second opening in a row: 1 s times 10, by the failed probe.
        let table = stdout(&fuse(&target, &app, &["status"]));
        let line = line_of(&table, &format!("fuse:{app}:charge"));
        let columns: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(
            columns[1..6],
            ["open", "1", "0/2", "#2", "10.0s"],
            "{at}: {table}"
        );
        let left: f64 = columns[6].trim_end_matches('s').parse().unwrap();
        assert!((0.0..=10.0).contains(&left), "{at}: {table}");

        let json = stdout(&fuse(&target, &app, &["status", "charge", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(
            (&value["openings"], &value["open_for_ms"]),
            (&2.into(), &10_000.into()),
            "{at}: {json}"
        );
        let lasts = value["retry_at"].as_f64().unwrap() - value["opened_at"].as_f64().unwrap();
        assert!((lasts - 10.0).abs() < 1e-3, "{at}: {json}");
        assert!(
            value["half_open_in_ms"].as_u64().unwrap() <= 10_000,
            "{at}: {json}"
        );

        // Closed: no opening.
        stdout(&fuse(&target, &app, &["close", "charge"]));
        let json = stdout(&fuse(&target, &app, &["status", "charge", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(
            (
                &value["openings"],
                &value["open_for_ms"],
                &value["retry_at"]
            ),
            (
                &0.into(),
                &serde_json::Value::Null,
                &serde_json::Value::Null
            ),
            "{at}: {json}"
        );
    }
}
