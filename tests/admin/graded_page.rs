//! Graded admission (SPEC §11) on the dashboard, in a headless Chromium: a
//! closed circuit that ramps up or throttles says the share of calls it
//! admits and why under its state (`admits 35% (ramp_up)`), with the
//! rule in its title; a circuit that admits every call, or is not closed,
//! says nothing; odd values are shown as nothing, and never as markup.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::admin::Admin;
use fuse_breaker::{Config, Registry};
use serde_json::{Value, json};

use super::browser::{FOLLOW, js, page_listing, screenshot};
use super::cdp::{Browser, chromium};
use super::{runtime, serve};

/// A count circuit as the admin API gives it, in `state`, with `fields`
/// set (and `config` fields besides).
fn view(key: &str, state: &str, fields: &Value, config: &Value) -> Value {
    let mut view = json!({
        "key": key, "name": key.rsplit(':').next(), "operation": null, "shared": false,
        "state": state, "failures": 0, "failure_ages_ms": [], "probes_in_flight": 0,
        "probes_allowed": 1, "probe_successes": 0, "opened_at": null, "half_open_in_ms": null,
        "admission": 1.0, "graded_by": null, "requests": 0, "accepts": 0,
        "config": {"failure_threshold": 8, "failure_window_ms": 60000,
                   "open_duration_ms": 30000, "half_open_probes": 1,
                   "ramp_up_ms": 120_000, "ramp_up_floor": 10,
                   "throttle_k": 2.0, "max_throttle": 90},
        "store_error": null,
    });
    for (field, value) in fields.as_object().into_iter().flatten() {
        view[field] = value.clone();
    }
    for (field, value) in config.as_object().into_iter().flatten() {
        view["config"][field] = value.clone();
    }
    view
}

/// The page's reading of the admission line of the row of `key`.
fn read_row(key: &str) -> String {
    format!(
        "(() => {{ const row = document.querySelector('tr[data-key=' + JSON.stringify({}) + ']'); \
         if (!row || !row.dataset.state) return null; \
         const line = row.querySelector('.admission'); \
         return {{ state: row.dataset.state, shown: !line.hidden, text: line.textContent, \
         title: line.title, injected: row.querySelectorAll('img, script, b').length }}; }})()",
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
fn a_graded_circuit_shows_the_share_it_admits_and_why() {
    let Some(binary) = chromium() else { return };
    // An older API's answer: no admission at all.
    let mut older = view("fuse:shop:older", "closed", &json!({}), &json!({}));
    for field in ["admission", "graded_by", "requests", "accepts"] {
        older.as_object_mut().unwrap().remove(field);
    }
    let circuits = json!({
        "circuits": [
            view("fuse:shop:billing", "closed",
                 &json!({"admission": 0.35, "graded_by": "ramp_up"}), &json!({})),
            view("fuse:shop:search", "closed",
                 &json!({"admission": 0.125, "graded_by": "throttle",
                         "requests": 400, "accepts": 25}), &json!({})),
            view("fuse:shop:stock", "closed", &json!({}), &json!({})),
            // Not closed: §3 decides, whatever the view says besides.
            view("fuse:shop:ledger", "open",
                 &json!({"admission": 0.5, "graded_by": "ramp_up",
                         "opened_at": "2026-12-01T20:01:02.345Z", "openings": 1}), &json!({})),
            view("fuse:shop:hostile", "closed",
                 &json!({"admission": 0.5, "graded_by": "<img src=x>"}), &json!({})),
            view("fuse:shop:garbled", "closed",
                 &json!({"admission": "<b>most</b>", "graded_by": "ramp_up"}), &json!({})),
            older,
        ],
        "total": 7, "next": null, "writable": false,
    });
    runtime().block_on(async {
        let mut page = page_listing(&binary, circuits).await;

        let billing = row_where(&mut page, "fuse:shop:billing", "r => r.state").await;
        assert_eq!(
            (&billing["shown"], &billing["text"]),
            (&true.into(), &"admits 35% (ramp_up)".into()),
            "{billing}"
        );
        assert_eq!(
            billing["title"], "ramping up after it recovered: from 10% to every call over 2m 0s",
            "{billing}"
        );

        let search = row_where(&mut page, "fuse:shop:search", "r => r.state").await;
        assert_eq!(search["text"], "admits 12% (throttle)", "{search}");
        assert_eq!(
            search["title"],
            "throttling: 400 calls asked in the window, 25 succeeded; \
             it sheds what goes beyond 2 × the successes, at most 90%",
            "{search}"
        );

        for key in [
            "fuse:shop:stock",
            "fuse:shop:ledger",
            "fuse:shop:garbled",
            "fuse:shop:older",
        ] {
            let row = row_where(&mut page, key, "r => r.state").await;
            assert_eq!(
                (&row["shown"], &row["text"], &row["title"]),
                (&false.into(), &"".into(), &"".into()),
                "{key}: {row}"
            );
        }

        // A reason the page does not know: shown as text, never as markup.
        let hostile = row_where(&mut page, "fuse:shop:hostile", "r => r.state").await;
        assert_eq!(hostile["text"], "admits 50% (<img src=x>)", "{hostile}");
        assert_eq!(hostile["injected"], 0, "{hostile}");

        let shot = screenshot(&mut page, "dashboard-graded.png").await;
        println!(
            "dashboard screenshot (graded admission): {}",
            shot.display()
        );
    });
}

/// An in-process circuit that recovered, through the real API: its ramp
/// (ten minutes from 20 %) shows on its row, and a forced close, which
/// closes without a ramp, takes it away.
#[test]
fn an_in_process_ramp_reaches_the_page() {
    let Some(binary) = chromium() else { return };
    let config = Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(Duration::from_millis(100))
        .ramp_up(Duration::from_mins(10))
        .ramp_up_floor(20)
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
    std::thread::sleep(Duration::from_millis(120));
    charge.try_acquire().expect("a probe").success();
    assert_eq!(
        charge.snapshot().graded_by,
        Some(fuse_breaker::Grading::RampUp)
    );
    runtime().block_on(async {
        let admin = Admin::new().registry(registry.clone()).router().unwrap();
        let addr = serve(admin).await;
        let mut page = Browser::launch(&binary).await.unwrap();
        page.navigate(&format!("http://{addr}/")).await.unwrap();
        let shown = row_where(&mut page, charge.key(), "r => r.shown").await;
        assert_eq!(shown["text"], "admits 20% (ramp_up)", "{shown}");
        assert_eq!(
            shown["title"], "ramping up after it recovered: from 20% to every call over 10m 0s",
            "{shown}"
        );
        charge.force_closed();
        row_where(&mut page, charge.key(), "r => !r.shown && r.text === ''").await;
    });
}
