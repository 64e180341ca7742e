//! A circuit under the rate policy on the dashboard, in a headless
//! Chromium: its share of failed (and slow) calls as a bar with the rule's
//! threshold across it, and calls, failed and slow in the window as text;
//! a count circuit beside it as it always was.

use std::sync::Arc;

use fuse_breaker::admin::Admin;
use fuse_breaker::{Config, Registry, config::Policy};
use serde_json::{Value, json};

use super::browser::{FOLLOW, js, page_listing, screenshot};
use super::cdp::{Browser, chromium};
use super::{runtime, serve};

/// A circuit as the admin API gives it: closed, under `config`.
fn view(key: &str, window: &Value, config: &Value) -> Value {
    let mut view = json!({
        "key": key, "name": key.rsplit(':').next(), "operation": null, "shared": false,
        "state": "closed", "failures": 0, "failure_ages_ms": [], "probes_in_flight": 0,
        "probes_allowed": 2, "probe_successes": 0, "opened_at": null, "half_open_in_ms": null,
        "config": {"failure_threshold": 8, "failure_window_ms": 60000,
                   "open_duration_ms": 30000, "half_open_probes": 2, "policy": "count",
                   "failure_rate": 50, "minimum_calls": 20, "window_buckets": 10,
                   "slow_call_duration_ms": null, "slow_call_rate": 100},
        "store_error": null,
    });
    for (field, value) in window.as_object().into_iter().flatten() {
        view[field] = value.clone();
    }
    for (field, value) in config.as_object().into_iter().flatten() {
        view["config"][field] = value.clone();
    }
    view
}

/// The page's reading of the window cell of the row of `key`.
fn read_row(key: &str) -> String {
    format!(
        "(() => {{ const row = document.querySelector('tr[data-key=' + JSON.stringify({}) + ']'); \
         if (!row) return null; \
         const q = (s) => row.querySelector(s); \
         const width = (s) => q(s).getBoundingClientRect().width; \
         return {{ policy: row.dataset.policy, count: !q('.count').hidden, rate: !q('.rate').hidden, \
         failures: q('.count span').textContent, \
         failed: q('.rate-failed span').textContent, rule: q('.rate .sub').textContent, \
         fill: +q('.rate-failed .fill').getAttribute('width'), \
         over: q('.rate-failed .fill').classList.contains('over'), \
         threshold: +q('.rate-failed line').getAttribute('x1'), \
         slow_shown: !q('.rate-slow').hidden, slow: q('.rate-slow span').textContent, \
         slow_threshold: +q('.rate-slow line').getAttribute('x1'), \
         bar_width: width('.rate-failed .rate-bar'), spark_width: width('.spark') }}; }})()",
        js(key)
    )
}

/// Waits for the row of `key` to have been drawn from a view, and reads it.
async fn row(page: &mut Browser, key: &str) -> Value {
    page.wait_for(
        &format!("(r => r && r.policy && r)({})", read_row(key)),
        FOLLOW,
    )
    .await
    .unwrap_or_else(|err| panic!("no row for {key}: {err}"))
}

#[test]
fn a_rate_circuit_is_drawn_with_its_share_and_threshold() {
    let Some(binary) = chromium() else { return };
    let circuits = json!({
        "circuits": [
            view("fuse:shop:billing", &json!({"failures": 2, "failure_ages_ms": [100, 200]}), &json!({})),
            view("fuse:shop:reports", &json!({"calls": 20, "failed": 10, "slow": 0}),
                 &json!({"policy": "rate"})),
            view("fuse:shop:search", &json!({"calls": 40, "failed": 12, "slow": 3}),
                 &json!({"policy": "rate", "failure_rate": 50, "minimum_calls": 20,
                         "slow_call_duration_ms": 1500, "slow_call_rate": 80})),
        ],
        "total": 3, "next": null, "writable": false,
    });
    runtime().block_on(async {
        let mut page = page_listing(&binary, circuits).await;

        let search = row(&mut page, "fuse:shop:search").await;
        assert_eq!(search["policy"], "rate", "{search}");
        assert_eq!(
            (&search["count"], &search["rate"]),
            (&false.into(), &true.into()),
            "{search}"
        );
        assert_eq!(search["failed"], "12/40 failed · 30%", "{search}");
        assert_eq!(
            search["rule"], "opens at 50% failed or 80% slow of ≥ 20 calls",
            "{search}"
        );
        assert_eq!(
            (&search["fill"], &search["threshold"]),
            (&30.into(), &50.into()),
            "{search}"
        );
        assert_eq!(search["over"], false, "{search}");
        assert_eq!(search["slow_shown"], true, "{search}");
        assert_eq!(search["slow"], "3/40 slow (≥ 1.5s) · 7%", "{search}");
        assert_eq!(search["slow_threshold"], 80, "{search}");
        assert_eq!(search["bar_width"], 100, "the bar is drawn: {search}");

        // At the threshold: the bar says so. No slow_call_duration: no slow line.
        let reports = row(&mut page, "fuse:shop:reports").await;
        assert_eq!(reports["failed"], "10/20 failed · 50%", "{reports}");
        assert_eq!(reports["over"], true, "{reports}");
        assert_eq!(reports["slow_shown"], false, "{reports}");
        assert_eq!(reports["rule"], "opens at 50% of ≥ 20 calls", "{reports}");

        // A count circuit: its failures and sparkline, no rate.
        let billing = row(&mut page, "fuse:shop:billing").await;
        assert_eq!(billing["policy"], "count", "{billing}");
        assert_eq!(
            (&billing["count"], &billing["rate"]),
            (&true.into(), &false.into()),
            "{billing}"
        );
        assert_eq!(billing["failures"], "2 / 8", "{billing}");
        assert_eq!(billing["spark_width"], 100, "{billing}");

        let shot = screenshot(&mut page, "dashboard-rate.png").await;
        println!("dashboard screenshot (rate): {}", shot.display());
    });
}

/// An in-process rate circuit through the real API: the page shows the
/// service's window. Waits for the in-process engine's rate path.
#[test]
fn an_in_process_rate_circuit_s_window_reaches_the_page() {
    let Some(binary) = chromium() else { return };
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
    runtime().block_on(async {
        let admin = Admin::new().registry(registry.clone()).router().unwrap();
        let addr = serve(admin).await;
        let mut page = Browser::launch(&binary).await.unwrap();
        page.navigate(&format!("http://{addr}/")).await.unwrap();
        let shown = row(&mut page, search.key()).await;
        assert_eq!(shown["policy"], "rate", "{shown}");
        assert_eq!(shown["failed"], "3/9 failed · 33%", "{shown}");
        assert_eq!(shown["rule"], "opens at 50% of ≥ 10 calls", "{shown}");
        assert_eq!(shown["fill"], 33, "{shown}");
        // Slow calls are not judged: no slow line.
        assert_eq!(shown["slow_shown"], false, "{shown}");
    });
}
