//! An opening (SPEC §10) on the dashboard, in a headless Chromium: which
//! opening in a row it is, how long it lasts, and a countdown to its end
//! that runs between two readings of the list; a half-open circuit's n; odd
//! values shown as nothing, and never as markup.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::admin::Admin;
use fuse_breaker::{Config, Registry};
use serde_json::{Value, json};

use super::browser::{FOLLOW, js, page_listing, screenshot};
use super::cdp::{Browser, chromium};
use super::{runtime, serve};

/// A count circuit as the admin API gives it, in `state`, with `fields`
/// set.
fn view(key: &str, state: &str, fields: &Value) -> Value {
    let mut view = json!({
        "key": key, "name": key.rsplit(':').next(), "operation": null, "shared": false,
        "state": state, "failures": 0, "failure_ages_ms": [], "probes_in_flight": 0,
        "probes_allowed": 2, "probe_successes": 0, "opened_at": null, "half_open_in_ms": null,
        "config": {"failure_threshold": 8, "failure_window_ms": 60000,
                   "open_duration_ms": 30000, "half_open_probes": 2},
        "store_error": null,
    });
    for (field, value) in fields.as_object().into_iter().flatten() {
        view[field] = value.clone();
    }
    view
}

/// The page's reading of the opening of the row of `key`: the n's line
/// (and whether it stands out), the countdown, the opening's duration, the
/// countdown's title, and whether the row holds any element a view's value
/// could have made.
fn read_row(key: &str) -> String {
    format!(
        "(() => {{ const row = document.querySelector('tr[data-key=' + JSON.stringify({}) + ']'); \
         if (!row || !row.dataset.state) return null; \
         const q = (s) => row.querySelector(s); \
         return {{ state: row.dataset.state, openings: q('.openings').textContent, \
         again: q('.openings').classList.contains('again'), \
         countdown: q('.countdown').textContent, lasts: q('.lasts').textContent, \
         title: q('.countdown').parentElement.title, failures: q('.count span').textContent, \
         failures_title: q('.count span').title, \
         injected: row.querySelectorAll('img, script, b').length }}; }})()",
        js(key)
    )
}

/// Waits for the row of `key` to satisfy `test` (a JavaScript function of
/// the reading), and returns the reading.
async fn row_where(page: &mut Browser, key: &str, test: &str) -> Value {
    page.wait_for(
        &format!("(r => r && ({test})(r) && r)({})", read_row(key)),
        FOLLOW,
    )
    .await
    .unwrap_or_else(|err| panic!("the row of {key}: {err}"))
}

#[test]
fn an_opening_shows_its_n_its_duration_and_a_live_countdown() {
    let Some(binary) = chromium() else { return };
    let circuits = json!({
        "circuits": [
            view("fuse:shop:billing", "open", &json!({
                "opened_at": "2026-12-01T20:01:02.345Z", "openings": 3,
                "open_for_ms": 240_000, "half_open_in_ms": 61_500,
                "retry_at": "2026-12-01T20:05:02.345Z"})),
            view("fuse:shop:hostile", "open", &json!({
                "opened_at": "<img src=x>", "openings": "<img src=x>", "open_for_ms": -5,
                "half_open_in_ms": "<b>soon</b>", "retry_at": "<script>alert(1)</script>"})),
            view("fuse:shop:reports", "open", &json!({
                "opened_at": "2026-12-01T20:01:02.345Z", "openings": 1,
                "open_for_ms": 1500, "half_open_in_ms": 300})),
            view("fuse:shop:search", "half_open", &json!({
                "opened_at": "2026-12-01T20:01:02.345Z", "openings": 2})),
            view("fuse:shop:zebra", "closed", &json!({})),
            // Opened by milon/fuse: its payload keeps the 8 failures that
            // opened it, and not when the opening ends.
            view("fuse:shop:milon", "open", &json!({
                "opened_at": "2026-12-01T20:01:02.345Z", "openings": 1, "failures": 8,
                "open_for_ms": 30_000, "half_open_in_ms": 20_000, "open_for_assumed": true})),
        ],
        "total": 6, "next": null, "writable": false,
    });
    runtime().block_on(async {
        let mut page = page_listing(&binary, circuits).await;

        // The third opening in a row, of four minutes, 61.5 s left.
        let billing = row_where(&mut page, "fuse:shop:billing", "r => r.state").await;
        assert_eq!(billing["openings"], "opening 3 in a row", "{billing}");
        assert_eq!(billing["again"], true, "{billing}");
        assert_eq!(billing["lasts"], "of 4m 0s", "{billing}");
        let title = billing["title"].as_str().unwrap();
        assert!(
            title.starts_with("the next call probes at ") && title.ends_with("this opening lasts 4m 0s"),
            "{billing}"
        );
        // Live: the countdown runs between two readings of the list (every
        // two seconds, each from 61.5 s again).
        let ran = row_where(
            &mut page,
            "fuse:shop:billing",
            "r => r.countdown === '1m 1s' || r.countdown === '1m 0s'",
        )
        .await;
        println!("billing's countdown ran to {}", ran["countdown"]);

        // The first opening: not singled out; its countdown reaches "now".
        let reports = row_where(&mut page, "fuse:shop:reports", "r => r.countdown === 'now'").await;
        assert_eq!(
            (&reports["openings"], &reports["again"], &reports["lasts"]),
            (&"first opening".into(), &false.into(), &"of 1.5s".into()),
            "{reports}"
        );

        // Half-open: which opening it follows; no countdown, no duration.
        let search = row_where(&mut page, "fuse:shop:search", "r => r.state").await;
        assert_eq!(
            (&search["openings"], &search["countdown"], &search["lasts"]),
            (&"opening 2 in a row".into(), &"—".into(), &"".into()),
            "{search}"
        );

        // Closed: nothing of an opening.
        let zebra = row_where(&mut page, "fuse:shop:zebra", "r => r.state").await;
        assert_eq!((&zebra["openings"], &zebra["lasts"]), (&"".into(), &"".into()), "{zebra}");

        // A circuit milon/fuse opened: the failures that opened it, and a
        // duration said to be assumed.
        let milon = row_where(&mut page, "fuse:shop:milon", "r => r.state").await;
        assert_eq!(milon["failures"], "8 / 8", "{milon}");
        assert_eq!(milon["failures_title"], "failures that opened it / threshold", "{milon}");
        assert_eq!(milon["lasts"], "of 30s (assumed)", "{milon}");
        assert!(
            milon["title"].as_str().unwrap().ends_with(
                "(assumed from this process's open_duration: the store does not say when it ends)"
            ),
            "{milon}"
        );
        assert_eq!(billing["failures"], "0 / 8", "{billing}");

        // Values that are no count or time: nothing shown, no markup made.
        let hostile = row_where(&mut page, "fuse:shop:hostile", "r => r.state").await;
        assert_eq!(
            (&hostile["openings"], &hostile["countdown"], &hostile["lasts"], &hostile["title"]),
            (&"".into(), &"—".into(), &"".into(), &"".into()),
            "{hostile}"
        );
        assert_eq!(hostile["injected"], 0, "{hostile}");
        let opened = page
            .evaluate(&format!(
                "document.querySelector('tr[data-key=' + JSON.stringify({}) + '] td.num:nth-of-type(5) div').textContent",
                js("fuse:shop:hostile")
            ))
            .await
            .unwrap();
        assert_eq!(opened, "<img src=x>", "shown as text");

        let shot = screenshot(&mut page, "dashboard-opening.png").await;
        println!("dashboard screenshot (openings): {}", shot.display());
    });
}

/// An in-process circuit that backs off, through the real API: after a
/// failed probe the page shows the second opening in a row, four times
/// as long, and counts it down to "now".
#[test]
fn an_in_process_opening_reaches_the_page() {
    let Some(binary) = chromium() else { return };
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_millis(300))
        .open_backoff(4.0)
        .max_open_duration(Duration::from_mins(1))
        .build()
        .unwrap();
    let registry = Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .build()
            .unwrap(),
    );
    let charge = registry.get("charge");
    charge.try_acquire().unwrap().failure();
    std::thread::sleep(Duration::from_millis(320));
    charge.try_acquire().expect("a probe").failure();
    assert_eq!(charge.snapshot().openings, 2);
    runtime().block_on(async {
        let admin = Admin::new().registry(registry.clone()).router().unwrap();
        let addr = serve(admin).await;
        let mut page = Browser::launch(&binary).await.unwrap();
        page.navigate(&format!("http://{addr}/")).await.unwrap();
        let shown = row_where(&mut page, charge.key(), "r => r.state === 'open'").await;
        assert_eq!(
            (&shown["openings"], &shown["again"], &shown["lasts"]),
            (
                &"opening 2 in a row".into(),
                &true.into(),
                &"of 1.2s".into()
            ),
            "{shown}"
        );
        row_where(&mut page, charge.key(), "r => r.countdown === 'now'").await;
    });
}
