//! Circuits under the `rate` policy: their window and rule, from a store
//! and from an admin API.

use super::*;

/// `fuse status` shows a rate circuit as such (its failed calls in the
/// window, its share and its rule at the end of its line), and a count
/// circuit's line as it was.
#[test]
fn a_rate_circuit_of_an_admin_api_is_shown_with_its_rate_and_rule() {
    let (url, _) = fake_api(100, |_| {
        serde_json::json!({"circuits": [view("fuse:shop:billing", "closed"),
                                         rate_view("fuse:shop:search", 40, 12, 3)],
                           "total": 2, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let table = stdout(&fuse(&target, "shop", &["status"]));
    let search = line_of(&table, "fuse:shop:search");
    assert!(
        search.ends_with(
            "  rate 12/40 failed (30 %, opens at 50 % of >= 20), \
             3/40 slow over 2s (7 %, opens at 100 %)"
        ),
        "{table}"
    );
    let columns: Vec<&str> = search.split_whitespace().collect();
    assert_eq!(
        columns[..5],
        ["fuse:shop:search", "closed", "12", "0/2", "-"],
        "{table}"
    );
    let billing = line_of(&table, "fuse:shop:billing");
    assert_eq!(
        billing.split_whitespace().collect::<Vec<_>>(),
        ["fuse:shop:billing", "closed", "0", "0/2", "-", "-", "-"],
        "a count circuit's line has no rate: {table}"
    );
    assert!(!billing.contains("rate"), "{table}");

    let json = stdout(&fuse(&target, "shop", &["status", "--json"]));
    let search: serde_json::Value = json
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|value| value["key"] == "fuse:shop:search")
        .unwrap_or_else(|| panic!("{json}"));
    assert_eq!(
        (&search["calls"], &search["failed"], &search["slow"]),
        (&40.into(), &12.into(), &3.into())
    );
    assert_eq!(search["config"]["policy"], "rate", "{json}");
}

/// `fuse status` on a store under `FUSE_POLICY=rate` reads its circuits
/// as rate circuits: their rule at the end of each line, and in JSON.
#[test]
fn a_store_s_circuits_under_the_rate_policy_are_shown_with_their_rule() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        stdout(&fuse(&target, &app, &["open", "billing"]));
        stdout(&fuse(&target, &app, &["close", "search"]));
        let rate = |args: &[&str]| {
            command()
                .args([target.flag, &target.url, "--app", &app])
                .args(args)
                .env("FUSE_POLICY", "rate")
                .env("FUSE_FAILURE_RATE", "30")
                .env("FUSE_MINIMUM_CALLS", "5")
                .env("FUSE_SLOW_CALL_DURATION", "1500ms")
                .output()
                .unwrap()
        };
        let table = stdout(&rate(&["status"]));
        for name in ["billing", "search"] {
            let line = line_of(&table, &format!("fuse:{app}:{name}"));
            assert!(
                line.ends_with(
                    "  rate 0/0 failed (opens at 30 % of >= 5), \
                     0/0 slow over 1s 500ms (opens at 100 %)"
                ),
                "{at}: {table}"
            );
        }
        let json = stdout(&rate(&["status", "search", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(value["policy"], "rate", "{at}: {json}");
        assert_eq!(value["failure_rate"], 30, "{at}: {json}");
        assert_eq!(value["minimum_calls"], 5, "{at}: {json}");
        assert_eq!(value["slow_call_duration_ms"], 1500, "{at}: {json}");
        assert_eq!(
            (&value["calls"], &value["failed"]),
            (&0.into(), &0.into()),
            "{at}"
        );
        // Under the default policy, the same circuit as before.
        let json = stdout(&fuse(&target, &app, &["status", "search", "--json"]));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(value["policy"], "count", "{at}: {json}");
        assert!(value.get("calls").is_none(), "{at}: {json}");
        let table = stdout(&fuse(&target, &app, &["status"]));
        assert!(!table.contains("rate"), "{at}: {table}");
    }
}

/// Calls on a shared rate circuit reach `fuse status`: the fleet's window
/// in the store. Waits for the store payload to keep the rate window
/// (notes/requests.md).
#[test]
fn a_shared_rate_circuit_s_window_reaches_the_status() {
    use fuse_breaker::{Config, config::Policy};

    for target in targets() {
        let at = &target.url;
        let app = app();
        let config = Config::builder()
            .policy(Policy::Rate)
            .minimum_calls(10)
            .build()
            .unwrap();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let fuse = fuse_breaker::Fuse::builder("search")
                .store(store)
                .app(&app)
                .config(config)
                .build();
            for i in 0..9 {
                let permit = fuse.try_acquire().await.unwrap();
                if i < 3 {
                    permit.failure().await.unwrap();
                } else {
                    permit.success().await.unwrap();
                }
            }
        });
        let out = command()
            .args([target.flag, &target.url, "--app", &app, "status", "search"])
            .env("FUSE_POLICY", "rate")
            .env("FUSE_MINIMUM_CALLS", "10")
            .output()
            .unwrap();
        let table = stdout(&out);
        let line = line_of(&table, &format!("fuse:{app}:search"));
        assert!(
            line.ends_with("  rate 3/9 failed (33 %, opens at 50 % of >= 10)"),
            "{at}: {table}"
        );
    }
}

/// `fuse --url status` on an in-process rate circuit: the service's window.
/// Waits for the in-process engine's rate path.
#[test]
fn an_in_process_rate_circuit_s_window_reaches_the_status() {
    use fuse_breaker::admin::Admin;
    use fuse_breaker::{Config, Registry, config::Policy};
    use std::sync::Arc;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let config = Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(10)
        .build()
        .unwrap();
    let registry = Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .build()
            .unwrap(),
    );
    let search = registry.get("search");
    for i in 0..9 {
        let permit = search.try_acquire().unwrap();
        if i < 3 {
            permit.failure();
        } else {
            permit.success();
        }
    }
    let target = serve_admin(&runtime, Admin::new().registry(registry.clone()));
    let table = stdout(&fuse(&target, "shop", &["status"]));
    let line = line_of(&table, "fuse:shop:search");
    assert!(
        line.ends_with("  rate 3/9 failed (33 %, opens at 50 % of >= 10)"),
        "{table}"
    );
    assert_eq!(line.split_whitespace().nth(2), Some("3"), "{table}");
}
