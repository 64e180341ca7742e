//! The JSON API through an HTTP client on a loopback port.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuse_breaker::admin::{Admin, CircuitList, CircuitView};
use fuse_breaker::{Config, Registry};
use serde_json::Value;

use super::{runtime, serve};

/// A registry of app `shop`: threshold 3, open 60 s.
pub(super) fn registry() -> Arc<Registry> {
    let config = Config::builder()
        .failure_threshold(3)
        .open_duration(Duration::from_mins(1))
        .build()
        .unwrap();
    Arc::new(
        Registry::builder()
            .app("shop")
            .defaults(config)
            .build()
            .unwrap(),
    )
}

/// A response: status, content type and body.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) content_type: String,
    pub(super) headers: reqwest::header::HeaderMap,
    pub(super) body: String,
}

impl Answer {
    pub(super) fn json(&self) -> Value {
        assert!(
            self.content_type.starts_with("application/json"),
            "{} {}: {}",
            self.status,
            self.content_type,
            self.body
        );
        serde_json::from_str(&self.body).unwrap_or_else(|err| panic!("{err}: {}", self.body))
    }

    /// The code of an error body, after checking it has a message.
    pub(super) fn code(&self) -> String {
        let body = self.json();
        assert!(
            body["error"].as_str().is_some_and(|msg| !msg.is_empty()),
            "{}",
            self.body
        );
        body["code"].as_str().unwrap().to_owned()
    }

    pub(super) fn view(&self) -> CircuitView {
        assert_eq!(self.status, 200, "{}", self.body);
        serde_json::from_str(&self.body).unwrap_or_else(|err| panic!("{err}: {}", self.body))
    }

    pub(super) fn list(&self) -> CircuitList {
        assert_eq!(self.status, 200, "{}", self.body);
        serde_json::from_str(&self.body).unwrap_or_else(|err| panic!("{err}: {}", self.body))
    }
}

/// Sends `method path` to `base` with the bearer `token`, if any.
pub(super) async fn send(base: &str, method: &str, path: &str, token: Option<&str>) -> Answer {
    send_to(base, None, method, path, token).await
}

/// Sends `method path` to `base`, naming `host` in `Host` (if given).
pub(super) async fn send_to(
    base: &str,
    host: Option<&str>,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> Answer {
    let client = reqwest::Client::new();
    let mut request = client.request(method.parse().unwrap(), format!("{base}{path}"));
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(host) = host {
        request = request.header("host", host);
    }
    answer(request).await
}

/// Sends `request` and reads its answer.
pub(super) async fn answer(request: reqwest::RequestBuilder) -> Answer {
    let response = request.send().await.expect("the admin API answers");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let content_type = headers
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let body = response.text().await.unwrap();
    Answer {
        status,
        content_type,
        headers,
        body,
    }
}

/// Serves `admin` on a loopback port: its base URL.
pub(super) async fn start(admin: Admin) -> String {
    format!(
        "http://{}",
        serve(admin.router().expect("a valid admin API")).await
    )
}

#[test]
fn every_circuit_is_listed_with_its_state_failures_and_configuration() {
    runtime().block_on(async {
        let registry = registry();
        let charge = registry.get_operation("billing", "charge");
        let search = registry.get("search");
        for _ in 0..3 {
            charge.try_acquire().unwrap().failure();
        }
        search.try_acquire().unwrap().failure();
        let base = start(Admin::new().registry(registry.clone())).await;

        let list = send(&base, "GET", "/circuits", None).await.list();
        assert_eq!(
            (list.total, list.next.as_deref(), list.writable),
            (2, None, false)
        );
        let keys: Vec<_> = list.circuits.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(keys, ["fuse:shop:billing:charge", "fuse:shop:search"]);

        let open = &list.circuits[0];
        assert_eq!(open.state, "open");
        assert_eq!(
            (open.name.as_str(), open.operation.as_deref()),
            ("billing", Some("charge"))
        );
        assert!(!open.shared);
        let probes = Config::default().half_open_probes();
        assert_eq!(
            (open.failures, open.probes_in_flight, open.probes_allowed),
            (0, 0, probes)
        );
        let opened = humantime::parse_rfc3339(open.opened_at.as_deref().unwrap()).unwrap();
        let ago = SystemTime::now().duration_since(opened).unwrap_or_default();
        assert!(ago < Duration::from_secs(5), "opened {ago:?} ago");
        let left = open.half_open_in_ms.unwrap();
        assert!((55_000..=60_000).contains(&left), "{left}");
        assert_eq!(open.config.failure_threshold, 3);
        assert_eq!(open.config.open_duration_ms, 60_000);
        assert_eq!(
            open.config.failure_window_ms,
            u64::try_from(Config::default().failure_window().as_millis()).unwrap()
        );

        let closed = &list.circuits[1];
        assert_eq!((closed.state.as_str(), closed.failures), ("closed", 1));
        assert_eq!(closed.failure_ages_ms.len(), 1);
        assert!(closed.failure_ages_ms[0] < 5_000);
        assert_eq!(
            (closed.opened_at.as_deref(), closed.half_open_in_ms),
            (None, None)
        );
        assert_eq!(closed.store_error, None);

        // A circuit made after the router is served too.
        registry.get("inventory");
        assert_eq!(send(&base, "GET", "/circuits", None).await.list().total, 3);
    });
}

#[test]
fn one_circuit_by_its_key_and_a_key_of_none() {
    runtime().block_on(async {
        let registry = registry();
        registry.get("search").force_open();
        registry.get("files/archive");
        let base = start(Admin::new().registry(registry)).await;

        let view = send(&base, "GET", "/circuits/fuse:shop:search", None)
            .await
            .view();
        assert_eq!(
            (view.key.as_str(), view.state.as_str()),
            ("fuse:shop:search", "open")
        );
        // A key with a slash, escaped in the path.
        let view = send(
            &base,
            "GET",
            "/circuits/fuse%3Ashop%3Afiles%2Farchive",
            None,
        )
        .await
        .view();
        assert_eq!(view.name, "files/archive");

        let missing = send(&base, "GET", "/circuits/fuse:shop:nothing", None).await;
        assert_eq!(
            (missing.status, missing.code().as_str()),
            (404, "not_found")
        );
        assert!(
            missing.body.contains("fuse:shop:nothing"),
            "{}",
            missing.body
        );
        let missing = send(&base, "POST", "/circuits/fuse:shop:nothing/open", None).await;
        assert_eq!(
            missing.status, 403,
            "read only comes first: {}",
            missing.body
        );
    });
}

#[test]
fn bad_paths_methods_and_queries_get_json_errors() {
    runtime().block_on(async {
        let registry = registry();
        registry.get("search");
        let base = start(Admin::new().registry(registry).token("s3cret")).await;
        let cases = [
            (
                "POST",
                "/circuits/fuse:shop:search/explode",
                400,
                "bad_request",
            ),
            (
                "GET",
                "/circuits/fuse:shop:search/open",
                405,
                "method_not_allowed",
            ),
            ("DELETE", "/circuits", 405, "method_not_allowed"),
            ("POST", "/circuits", 405, "method_not_allowed"),
            (
                "PUT",
                "/circuits/fuse:shop:search",
                405,
                "method_not_allowed",
            ),
            ("GET", "/nothing/here", 404, "no_route"),
            ("GET", "/circuits?limit=0", 400, "bad_request"),
            ("GET", "/circuits?limit=5001", 400, "bad_request"),
            ("GET", "/circuits?limit=many", 400, "bad_request"),
            ("GET", "/circuits?lmit=5", 400, "bad_request"),
            ("GET", "/circuits/%FF", 400, "bad_request"),
        ];
        for (method, path, status, code) in cases {
            let answer = send(&base, method, path, Some("s3cret")).await;
            assert_eq!(
                (answer.status, answer.code()),
                (status, code.to_owned()),
                "{method} {path}: {}",
                answer.body
            );
        }
    });
}

#[test]
fn the_list_pages_by_key() {
    runtime().block_on(async {
        let registry = registry();
        for name in ["e", "b", "d", "a", "c"] {
            registry.get(name);
        }
        let base = start(Admin::new().registry(registry)).await;
        let mut keys = Vec::new();
        let mut path = "/circuits?limit=2".to_owned();
        let mut pages = 0;
        loop {
            let list = send(&base, "GET", &path, None).await.list();
            assert_eq!(list.total, 5);
            assert!(list.circuits.len() <= 2);
            keys.extend(list.circuits.into_iter().map(|c| c.key));
            pages += 1;
            match list.next {
                Some(after) => path = format!("/circuits?limit=2&after={after}"),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(
            keys,
            ["a", "b", "c", "d", "e"].map(|n| format!("fuse:shop:{n}"))
        );

        // A full registry's overflow circuit is listed in its place.
        let full = Arc::new(
            Registry::builder()
                .app("shop")
                .max_circuits(2)
                .build()
                .unwrap(),
        );
        let held = [full.get("a"), full.get("b")];
        assert_eq!(full.get("c").name(), fuse_breaker::config::OVERFLOW_NAME);
        let base = start(Admin::new().registry(full.clone())).await;
        let mut keys = Vec::new();
        let mut path = "/circuits?limit=1".to_owned();
        while let Some(after) = {
            let list = send(&base, "GET", &path, None).await.list();
            assert_eq!(list.total, 3);
            keys.extend(list.circuits.into_iter().map(|c| c.key));
            list.next
        } {
            path = format!("/circuits?limit=1&after={after}");
        }
        assert_eq!(keys, ["fuse:shop:(overflow)", "fuse:shop:a", "fuse:shop:b"]);
        drop(held);
    });
}

#[test]
fn the_page_is_one_document_with_nothing_from_elsewhere() {
    runtime().block_on(async {
        let base = start(Admin::new().registry(registry())).await;
        let page = send(&base, "GET", "/", None).await;
        assert_eq!(page.status, 200);
        assert!(page.body.contains("<style") && page.body.contains("<script"));
        // The one URL in it is SVG's namespace, a name, not a load.
        let body = page.body.replace("'http://www.w3.org/2000/svg'", "");
        for outside in ["<link", " src=", "http://", "https://", "@import", "url("] {
            assert!(!body.contains(outside), "the page loads {outside}");
        }
        let policy = page
            .headers
            .get("content-security-policy")
            .unwrap()
            .to_str()
            .unwrap();
        assert!(policy.contains("default-src 'none'"), "{policy}");
        // The page's own script and style run by their hash, nothing
        // inline else.
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        assert!(policy.contains("script-src 'sha256-"), "{policy}");
        // Nested under a prefix, the same page at the prefix itself (a
        // trailing slash is the outer router's to route).
        let nested = axum::Router::new().nest(
            "/admin/fuse",
            Admin::new().registry(registry()).router().unwrap(),
        );
        let base = format!("http://{}", serve(nested).await);
        assert_eq!(
            send(&base, "GET", "/admin/fuse", None).await.body,
            page.body
        );
        assert_eq!(
            send(&base, "GET", "/admin/fuse/circuits", None)
                .await
                .list()
                .total,
            0
        );
    });
}

#[cfg(feature = "store")]
#[test]
fn shared_circuits_are_read_from_and_changed_in_their_store() {
    use fuse_breaker::store::MemoryStore;

    runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        // Two processes of a fleet: this one serves the API.
        let here = Arc::new(
            fuse_breaker::Registry::builder()
                .store(store.clone())
                .app("shop")
                .build()
                .unwrap(),
        );
        let there = fuse_breaker::Registry::builder()
            .store(store)
            .app("shop")
            .build()
            .unwrap();
        here.get("payments");
        let local = registry();
        local.get("search");
        let base = start(Admin::new().registry(local).shared(here).token("s3cret")).await;

        there.get("payments").force_open().await.unwrap();
        let list = send(&base, "GET", "/circuits", None).await.list();
        let keys: Vec<_> = list
            .circuits
            .iter()
            .map(|c| (c.key.as_str(), c.shared, c.state.as_str()))
            .collect();
        assert_eq!(
            keys,
            [
                ("fuse:shop:payments", true, "open"),
                ("fuse:shop:search", false, "closed")
            ]
        );
        let payments = &list.circuits[0];
        let left = payments.half_open_in_ms.unwrap();
        assert!(
            u128::from(left) <= Config::default().open_duration().as_millis() && left > 0,
            "{left}"
        );
        let opened = humantime::parse_rfc3339(payments.opened_at.as_deref().unwrap()).unwrap();
        assert!(
            SystemTime::now().duration_since(opened).unwrap_or_default() < Duration::from_secs(5)
        );

        let closed = send(
            &base,
            "POST",
            "/circuits/fuse:shop:payments/close",
            Some("s3cret"),
        )
        .await
        .view();
        assert!(closed.shared);
        assert_eq!(closed.state, "closed");
        assert_eq!(
            there.get("payments").state().await.unwrap(),
            fuse_breaker::State::Closed
        );
    });
}

#[cfg(feature = "store")]
#[test]
fn a_list_of_both_kinds_pages_by_key_with_the_shared_circuit_for_a_key_of_both() {
    use fuse_breaker::store::MemoryStore;

    runtime().block_on(async {
        let shared = Arc::new(
            fuse_breaker::Registry::builder()
                .store(Arc::new(MemoryStore::new()))
                .app("shop")
                .build()
                .unwrap(),
        );
        for name in ["b", "d", "e"] {
            shared.get(name);
        }
        let local = registry();
        for name in ["a", "c", "d", "f"] {
            local.get(name);
        }
        let base = start(Admin::new().registry(local).shared(shared)).await;
        let mut seen = Vec::new();
        let mut path = "/circuits?limit=2".to_owned();
        loop {
            let list = send(&base, "GET", &path, None).await.list();
            assert_eq!(list.total, 6, "d is one circuit, the fleet's");
            assert!(list.circuits.len() <= 2);
            seen.extend(list.circuits.into_iter().map(|c| (c.key, c.shared)));
            match list.next {
                Some(after) => path = format!("/circuits?limit=2&after={after}"),
                None => break,
            }
        }
        let expected: Vec<(String, bool)> = [
            ("a", false),
            ("b", true),
            ("c", false),
            ("d", true),
            ("e", true),
            ("f", false),
        ]
        .into_iter()
        .map(|(name, shared)| (format!("fuse:shop:{name}"), shared))
        .collect();
        assert_eq!(seen, expected);
    });
}
