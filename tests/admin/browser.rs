//! The dashboard page in a headless Chromium: it lists the circuits of a
//! registry served under a nested path, follows their transitions live
//! (no reload), refuses a button press without the token with a visible
//! message, steers a circuit with it, and leaves a screenshot behind (with a
//! rate circuit, a circuit opened again after failed probes and, feature
//! `store`, a shared circuit held closed by its quorum beside them); a
//! 10 KB name wraps, and an unreadable shared circuit says so.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuse_breaker::admin::Admin;
use fuse_breaker::{Config, Fuse, Registry, State, config::Policy};
use serde_json::Value;

use super::cdp::{Browser, chromium};
use super::{runtime, serve};

/// How long the page may take to show what the service did.
pub(super) const FOLLOW: Duration = Duration::from_secs(5);

/// The JavaScript string literal of `text`.
pub(super) fn js(text: &str) -> String {
    Value::from(text).to_string()
}

/// The expression: the `data-state` of the row of `key`, or `null`.
pub(super) fn row_state(key: &str) -> String {
    format!(
        "document.querySelector('tr[data-key=' + JSON.stringify({}) + ']')?.dataset.state ?? null",
        js(key)
    )
}

/// Waits for the row of `key` to show `state`.
async fn row_becomes(page: &mut Browser, key: &str, state: &str) -> Duration {
    let start = Instant::now();
    page.wait_for(&format!("({}) === {}", row_state(key), js(state)), FOLLOW)
        .await
        .unwrap_or_else(|err| panic!("the row of {key} did not turn {state}: {err}"));
    start.elapsed()
}

/// Polls `fuse` until it is in `state`.
async fn fuse_becomes(fuse: &Fuse, state: State) {
    let deadline = Instant::now() + FOLLOW;
    while fuse.state() != state {
        assert!(
            Instant::now() < deadline,
            "{} is {:?}, not {state:?}",
            fuse.key(),
            fuse.state()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Enters the token in the page, then waits for the event stream to have
/// connected again with it.
async fn enter_token(page: &mut Browser) {
    page.evaluate(
        "(() => { window.__live = []; new MutationObserver(() => \
         window.__live.push(document.querySelector('#live').dataset.status)) \
         .observe(document.querySelector('#live'), { attributeFilter: ['data-status'] }); \
         const t = document.querySelector('#token'); t.value = 's3cret'; \
         t.form.requestSubmit(); })()",
    )
    .await
    .unwrap();
    page.wait_for(
        "sessionStorage.getItem('fuse-token') === 's3cret' \
         && window.__live.includes('connecting') \
         && document.querySelector('#live').dataset.status === 'live' \
         && document.querySelector('#message').textContent === ''",
        FOLLOW,
    )
    .await
    .unwrap();
}

#[test]
fn the_dashboard_lists_circuits_and_follows_them_live() {
    let Some(binary) = chromium() else { return };
    let config = Config::builder()
        .failure_threshold(3)
        .open_duration(Duration::from_mins(1))
        .build()
        .unwrap();
    let registry = Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .build()
            .unwrap(),
    );
    let billing = registry.get_operation("billing", "charge");
    let search = registry.get_operation("search", "query");
    let inventory = registry.get("inventory");
    let keys = [billing.key(), search.key(), inventory.key()];
    let others = rest_of_the_shop(&registry);

    runtime().block_on(async {
        let admin = Admin::new().registry(registry.clone()).token("s3cret");
        #[cfg(feature = "store")]
        let admin = admin.shared(quorum_held().await);
        let admin = admin.router().unwrap();
        let addr = serve(axum::Router::new().nest("/admin/fuse", admin)).await;
        let started = Instant::now();
        let mut page = Browser::launch(&binary).await.unwrap();
        let launched = started.elapsed();
        // axum 0.8 serves a nested router's `/` at the prefix itself; the
        // page finds its API below wherever it was loaded from.
        page.navigate(&format!("http://{addr}/admin/fuse"))
            .await
            .unwrap();

        // The first load: live, and every circuit closed.
        let rows: Vec<String> = keys
            .iter()
            .map(|key| format!("({}) === 'closed'", row_state(key)))
            .collect();
        page.wait_for(
            &format!(
                "document.querySelector('#live')?.dataset.status === 'live' && {}",
                rows.join(" && ")
            ),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        page.evaluate("window.__marker = 42").await.unwrap();

        // A press without the token: refused, said so, nothing changed.
        let search_open = format!("tr[data-key={}] button[data-action=open]", js(search.key()));
        page.click(&search_open).await.unwrap();
        let said = page
            .wait_for(
                "(t => /unauthorized|token/i.test(t) && t)\
                 (document.querySelector('#message').textContent)",
                FOLLOW,
            )
            .await
            .unwrap();
        println!("without the token the page says: {said}");
        assert_eq!(search.state(), State::Closed);
        assert_eq!(
            page.evaluate(&row_state(search.key())).await.unwrap(),
            "closed"
        );

        enter_token(&mut page).await;

        // Tripped in the service: the row follows, without a reload.
        for _ in 0..3 {
            billing.try_acquire().unwrap().failure();
        }
        assert_eq!(billing.state(), State::Open);
        let followed = row_becomes(&mut page, billing.key(), "open").await;
        assert_eq!(
            page.evaluate("window.__marker").await.unwrap(),
            42,
            "the page was reloaded"
        );

        // Closed from the page, with the token.
        page.click(&format!(
            "tr[data-key={}] button[data-action=close]",
            js(billing.key())
        ))
        .await
        .unwrap();
        row_becomes(&mut page, billing.key(), "closed").await;
        fuse_becomes(&billing, State::Closed).await;

        // Opened from the page; another tripped in the service: colours.
        page.click(&search_open).await.unwrap();
        row_becomes(&mut page, search.key(), "open").await;
        fuse_becomes(&search, State::Open).await;
        for _ in 0..3 {
            inventory.try_acquire().unwrap().failure();
        }
        row_becomes(&mut page, inventory.key(), "open").await;
        others.drawn(&mut page).await;
        let shot = screenshot(&mut page, "dashboard.png").await;
        println!("dashboard screenshot: {}", shot.display());
        eprintln!("dashboard screenshot: {}", shot.display());
        println!("chromium started in {launched:?}; the page followed a trip in {followed:?}");
    });
}

/// The circuits that make the screenshot show each policy and recovery
/// the page draws, beside the three the test steers.
struct Shop {
    /// A rate circuit: 9 of 30 calls failed, under its 50 % rule.
    reports: Arc<Fuse>,
    /// Opened three times in a row, each opening ten times the last.
    payments: Arc<Fuse>,
}

/// Makes the circuits of [`Shop`] in `registry` (waiting out two short
/// openings of `payments` on the real clock, about 1.1 s).
fn rest_of_the_shop(registry: &Registry) -> Shop {
    let rate = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(50)
        .minimum_calls(20)
        .build()
        .unwrap();
    let reports = registry.get_with_config("reports", "", rate);
    for call in 0..30 {
        let permit = reports.try_acquire().unwrap();
        if call % 10 < 3 {
            permit.failure();
        } else {
            permit.success();
        }
    }
    assert_eq!(reports.state(), State::Closed);

    let backoff = Config::builder()
        .failure_threshold(1)
        .open_duration(Duration::from_millis(100))
        .open_backoff(10.0)
        .max_open_duration(Duration::from_mins(10))
        .build()
        .unwrap();
    let payments = registry.get_with_config("payments", "authorize", backoff);
    payments.try_acquire().unwrap().failure();
    // Each probe fails: opened for 100 ms, then 1 s, then 10 s.
    for opening in [Duration::from_millis(100), Duration::from_secs(1)] {
        std::thread::sleep(opening + Duration::from_millis(20));
        payments.try_acquire().unwrap().failure();
    }
    assert_eq!(payments.state(), State::Open);
    Shop { reports, payments }
}

impl Shop {
    /// Waits for the page to have settled on what the test did (closed:
    /// billing, reports and, feature `store`, ledger; open: inventory,
    /// search and payments; not reloaded) and to draw the rate circuit's
    /// share, the third opening in a row and the quorum.
    async fn drawn(&self, page: &mut Browser) {
        let closed = if cfg!(feature = "store") { 3 } else { 2 };
        page.wait_for(
            &format!(
                "document.querySelector('#summary').textContent.startsWith('{closed} closed · 3 open') \
                 && !document.querySelector('tr.flash') && window.__marker === 42"
            ),
            FOLLOW,
        )
        .await
        .unwrap();
        let row = |key: &str, cell: &str| {
            format!(
                "document.querySelector('tr[data-key=' + JSON.stringify({}) + '] {cell}')?.textContent ?? ''",
                js(key)
            )
        };
        page.wait_for(
            &format!(
                "({}).includes('9') && ({}) === 'opening 3 in a row'",
                row(self.reports.key(), ".rate-failed span"),
                row(self.payments.key(), ".openings"),
            ),
            FOLLOW,
        )
        .await
        .unwrap_or_else(|err| panic!("the rate and the openings are not drawn: {err}"));
        #[cfg(feature = "store")]
        page.wait_for(
            "[...document.querySelectorAll('.quorum')].some(q => !q.hidden && q.textContent === 'quorum 1/2')",
            FOLLOW,
        )
        .await
        .unwrap_or_else(|err| panic!("the quorum is not drawn: {err}"));
    }
}

/// A shared circuit (feature `store`) that one process's failures cannot
/// open: three failures, one reporter of the two it takes.
#[cfg(feature = "store")]
async fn quorum_held() -> Arc<fuse_breaker::store::SharedRegistry> {
    use fuse_breaker::store::MemoryStore;

    let config = Config::builder()
        .failure_threshold(3)
        .min_reporters(2)
        .build()
        .unwrap();
    let shared = fuse_breaker::Registry::builder()
        .store(Arc::new(MemoryStore::new()))
        .app("shop")
        .defaults(config)
        .build()
        .unwrap();
    let ledger = shared.get("ledger");
    for _ in 0..3 {
        ledger.try_acquire().await.unwrap().failure().await.unwrap();
    }
    assert_eq!(
        ledger.snapshot().await.unwrap().state,
        State::Closed,
        "held closed by its quorum"
    );
    Arc::new(shared)
}

/// The real dashboard and event stream in Chromium (`binary`), whose list
/// of circuits is `circuits` as given.
pub(super) async fn page_listing(binary: &Path, circuits: Value) -> Browser {
    let registry = Arc::new(Registry::builder().build().unwrap());
    let admin = Admin::new().registry(registry).router().unwrap();
    let router = axum::Router::new()
        .route(
            "/circuits",
            axum::routing::get(move || {
                let circuits = circuits.clone();
                async move { axum::Json(circuits) }
            }),
        )
        .fallback_service(admin);
    let addr = serve(router).await;
    let mut page = Browser::launch(binary).await.unwrap();
    page.navigate(&format!("http://{addr}/")).await.unwrap();
    page
}

/// Saves the page to `<CARGO_TARGET_TMPDIR>/<name>` (and a copy to
/// `FUSE_SCREENSHOT_DIR`, if set); returns the first path.
pub(super) async fn screenshot(page: &mut Browser, name: &str) -> PathBuf {
    let shot = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    page.screenshot_png(&shot).await.unwrap();
    if let Some(dir) = std::env::var_os("FUSE_SCREENSHOT_DIR") {
        let dir = PathBuf::from(dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&shot, dir.join(name)).unwrap();
    }
    std::path::absolute(&shot).unwrap()
}

#[test]
fn a_long_name_wraps_and_an_unreadable_circuit_says_so() {
    let Some(binary) = chromium() else { return };
    let registry = Arc::new(Registry::builder().app("shop").build().unwrap());
    let long = registry.get(&"n".repeat(10 * 1024));
    let short = registry.get("search");
    runtime().block_on(async {
        let admin = Admin::new().registry(registry.clone());
        // A shared circuit whose key holds what is not a circuit.
        #[cfg(feature = "store")]
        let (admin, broken) = {
            use fuse_breaker::store::MemoryStore;
            let store = Arc::new(MemoryStore::new());
            let shared = Arc::new(fuse_breaker::Registry::builder().defaults(Config::default()).store(store.clone()).build().expect("defaults alone are valid"));
            let broken = shared.get("broken");
            store.put(broken.key(), b"{\"state\":\"melted\"}", Duration::from_mins(1));
            (admin.shared(shared), broken)
        };
        let addr = serve(admin.router().unwrap()).await;
        let mut page = Browser::launch(&binary).await.unwrap();
        page.navigate(&format!("http://{addr}/")).await.unwrap();
        page.wait_for(
            &format!(
                "({}) === 'closed' && ({}) === 'closed'",
                row_state(long.key()),
                row_state(short.key())
            ),
            Duration::from_secs(10),
        )
        .await
        .unwrap();
        #[cfg(feature = "store")]
        {
            let row = format!("tr[data-key={}]", js(broken.key()));
            let shown = page
                .wait_for(
                    &format!(
                        "({}) === 'unreadable' && document.querySelector({}).innerText",
                        row_state(broken.key()),
                        js(&row)
                    ),
                    FOLLOW,
                )
                .await
                .unwrap();
            let shown = shown.as_str().unwrap();
            assert!(
                shown.contains("unreadable") && shown.contains("not a circuit"),
                "{shown}"
            );
        }
        // The page's style applies (its policy names it by hash).
        assert_eq!(
            page.evaluate("getComputedStyle(document.querySelector('table')).borderCollapse")
                .await
                .unwrap(),
            "collapse"
        );
        let measured = page
            .evaluate(&format!(
                "(() => {{ const width = document.documentElement.clientWidth; \
                 const row = document.querySelector('tr[data-key=' + JSON.stringify({}) + ']'); \
                 const right = (selector) => row.querySelector(selector).getBoundingClientRect().right; \
                 return {{ width, scrolled: document.documentElement.scrollWidth, \
                 state: right('.badge'), actions: right('.actions button:last-child') }}; }})()",
                js(long.key())
            ))
            .await
            .unwrap();
        let width = measured["width"].as_f64().unwrap();
        for column in ["scrolled", "state", "actions"] {
            let right = measured[column].as_f64().unwrap();
            assert!(
                right <= width,
                "with a 10 KB name, {column} reaches {right} px of a {width} px window: {measured}"
            );
        }
    });
}
