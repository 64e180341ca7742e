//! The JSON API through an HTTP client on a loopback port.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use fuse_breaker::admin::{Admin, CircuitList, CircuitView};
use fuse_breaker::{Config, Registry, State};
use serde_json::Value;

use super::{runtime, serve};

/// A registry of app `shop`: threshold 3, open 60 s.
fn registry() -> Arc<Registry> {
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
async fn send_to(
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
fn without_a_token_the_api_is_read_only() {
    runtime().block_on(async {
        let registry = registry();
        let search = registry.get("search");
        let base = start(Admin::new().registry(registry)).await;
        for action in ["open", "close", "reset"] {
            let refused = send(
                &base,
                "POST",
                &format!("/circuits/fuse:shop:search/{action}"),
                Some("x"),
            )
            .await;
            assert_eq!(
                (refused.status, refused.code().as_str()),
                (403, "read_only")
            );
        }
        assert_eq!(search.state(), State::Closed);
    });
}

#[test]
fn writes_need_the_token_and_do_what_they_say() {
    runtime().block_on(async {
        let registry = registry();
        let search = registry.get("search");
        search.try_acquire().unwrap().failure();
        let base = start(Admin::new().registry(registry).token("s3cret")).await;
        let path = "/circuits/fuse:shop:search/open";

        let refused = send(&base, "POST", path, None).await;
        assert_eq!(
            (refused.status, refused.code().as_str()),
            (401, "unauthorized")
        );
        assert_eq!(
            refused.headers.get("www-authenticate").unwrap(),
            "Bearer realm=\"fuse\""
        );
        let refused = send(&base, "POST", path, Some("s3cre")).await;
        assert_eq!(
            (refused.status, refused.code().as_str()),
            (401, "unauthorized")
        );
        assert_eq!(search.state(), State::Closed);
        // Reads stay public.
        assert!(send(&base, "GET", "/circuits", None).await.list().writable);

        let opened = send(&base, "POST", path, Some("s3cret")).await.view();
        assert_eq!(opened.state, "open");
        assert_eq!(search.state(), State::Open);
        let closed = send(
            &base,
            "POST",
            "/circuits/fuse:shop:search/close",
            Some("s3cret"),
        )
        .await
        .view();
        assert_eq!((closed.state.as_str(), closed.failures), ("closed", 0));
        assert_eq!(search.state(), State::Closed);

        search.try_acquire().unwrap().failure();
        let reset = send(
            &base,
            "POST",
            "/circuits/fuse:shop:search/reset",
            Some("s3cret"),
        )
        .await
        .view();
        assert_eq!((reset.state.as_str(), reset.failures), ("closed", 0));
        assert!(search.snapshot().failures.is_empty());
    });
}

#[test]
fn private_reads_need_the_token_too_but_the_page_does_not() {
    runtime().block_on(async {
        let registry = registry();
        registry.get("search");
        let base = start(
            Admin::new()
                .registry(registry)
                .token("s3cret")
                .private_reads(true),
        )
        .await;
        for path in ["/circuits", "/circuits/fuse:shop:search", "/events"] {
            let refused = send(&base, "GET", path, None).await;
            assert_eq!(
                (refused.status, refused.code().as_str()),
                (401, "unauthorized"),
                "{path}"
            );
            let refused = send(&base, "GET", path, Some("wrong")).await;
            assert_eq!(refused.status, 401, "{path}");
        }
        assert_eq!(
            send(&base, "GET", "/circuits", Some("s3cret"))
                .await
                .list()
                .total,
            1
        );
        let page = send(&base, "GET", "/", None).await;
        assert_eq!(page.status, 200);
        assert!(
            page.content_type.starts_with("text/html"),
            "{}",
            page.content_type
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
        assert_eq!(full.get("c").name(), fuse_breaker::OVERFLOW_NAME);
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
    use fuse_breaker::store::{MemoryStore, SharedRegistry};

    runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        // Two processes of a fleet: this one serves the API.
        let here = Arc::new(
            SharedRegistry::builder(store.clone())
                .app("shop")
                .build()
                .unwrap(),
        );
        let there = SharedRegistry::builder(store).app("shop").build().unwrap();
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
        assert_eq!(there.get("payments").state().await.unwrap(), State::Closed);
    });
}

#[test]
fn a_token_no_request_can_bring_is_refused_when_the_router_is_built() {
    use fuse_breaker::admin::BuildError;
    for (token, at, what) in [
        ("s3cret\n", 7, "a line break"),
        (" s3cret", 1, "a space"),
        ("s\u{e9}cret", 2, "a non-ASCII character"),
    ] {
        let err = Admin::new()
            .registry(registry())
            .token(token)
            .router()
            .expect_err(token);
        let said = err.to_string();
        assert!(
            matches!(err, BuildError::Token { at: a, what: w, .. } if (a, w) == (at, what)),
            "{token:?}: {said}"
        );
        assert!(said.contains(what) && said.contains("bearer"), "{said}");
        assert!(!said.contains("cret"), "the error prints the token: {said}");
    }
    // Every character a bearer token may have, and an empty token (no
    // token: writes off), build.
    runtime().block_on(async {
        let token = "AZaz09-._~+/==";
        let served = registry();
        served.get("search");
        let base = start(Admin::new().registry(served).token(token)).await;
        assert!(send(&base, "GET", "/circuits", None).await.list().writable);
        let opened = send(
            &base,
            "POST",
            "/circuits/fuse:shop:search/open",
            Some(token),
        )
        .await;
        assert_eq!(opened.view().state, "open");
        let base = start(Admin::new().registry(registry()).token("")).await;
        assert!(!send(&base, "GET", "/circuits", None).await.list().writable);
    });
}

#[test]
fn other_hosts_are_refused_and_every_answer_says_nosniff() {
    runtime().block_on(async {
        let served = registry();
        served.get("search");
        let base = start(Admin::new().registry(served.clone()).token("s3cret")).await;
        let port = base.rsplit(':').next().unwrap().to_owned();
        // What a page on another site sends once its name points here.
        for host in ["evil.example", &format!("evil.example:{port}"), "10.0.0.5"] {
            for (method, path) in [("GET", "/"), ("GET", "/circuits"), ("GET", "/events")] {
                let refused = send_to(&base, Some(host), method, path, None).await;
                assert_eq!(
                    (refused.status, refused.code().as_str()),
                    (403, "host_not_allowed"),
                    "{host} {path}: {}",
                    refused.body
                );
                let said = refused.json()["error"].as_str().unwrap().to_owned();
                assert!(said.contains(&format!("{host:?}")), "{said}");
                assert_eq!(refused.headers["x-content-type-options"], "nosniff");
            }
        }
        let loopback = [
            format!("localhost:{port}"),
            format!("127.0.0.1:{port}"),
            format!("[::1]:{port}"),
            "localhost".to_owned(),
        ];
        for host in &loopback {
            let list = send_to(&base, Some(host), "GET", "/circuits", None).await;
            assert_eq!(list.list().total, 1, "{host}");
        }
        // Every answer, errors too, says nosniff.
        for (method, path, token, status) in [
            ("GET", "/", None, 200),
            ("GET", "/circuits", None, 200),
            ("GET", "/circuits/fuse:shop:search", None, 200),
            ("GET", "/circuits/fuse:shop:nothing", None, 404),
            ("GET", "/nothing/here", None, 404),
            ("DELETE", "/circuits", None, 405),
            ("GET", "/circuits?limit=0", None, 400),
            ("POST", "/circuits/fuse:shop:search/open", None, 401),
            (
                "POST",
                "/circuits/fuse:shop:search/reset",
                Some("s3cret"),
                200,
            ),
        ] {
            let answer = send(&base, method, path, token).await;
            assert_eq!(answer.status, status, "{method} {path}: {}", answer.body);
            assert_eq!(
                answer
                    .headers
                    .get("x-content-type-options")
                    .map(|v| v.to_str().unwrap()),
                Some("nosniff"),
                "{method} {path}"
            );
        }
        let events = reqwest::get(format!("{base}/events")).await.unwrap();
        assert_eq!(events.headers()["x-content-type-options"], "nosniff");
    });
}

#[test]
fn the_application_allows_its_own_hosts_or_any() {
    use fuse_breaker::admin::BuildError;
    runtime().block_on(async {
        let admin = Admin::new()
            .registry(registry())
            .allow_host("Fuse.Example.com")
            .allow_host("10.0.0.5:8080");
        let base = start(admin).await;
        for (host, status) in [
            ("fuse.example.com", 200),
            ("fuse.example.com:443", 200),
            ("FUSE.example.com.", 200),
            ("10.0.0.5:8080", 200),
            ("10.0.0.5:8081", 403),
            ("10.0.0.5", 403),
            ("other.example.com", 403),
            ("fuse.example.com.evil.example", 403),
        ] {
            let answer = send_to(&base, Some(host), "GET", "/circuits", None).await;
            assert_eq!(answer.status, status, "{host}: {}", answer.body);
        }
        let base = start(Admin::new().registry(registry()).any_host()).await;
        let answer = send_to(&base, Some("evil.example"), "GET", "/circuits", None).await;
        assert_eq!(answer.status, 200, "{}", answer.body);
    });
    let err = Admin::new()
        .allow_host("https://fuse.example.com")
        .router()
        .unwrap_err();
    assert!(matches!(&err, BuildError::Host { host, .. } if host == "https://fuse.example.com"));
    assert!(
        err.to_string().contains("https://fuse.example.com"),
        "{err}"
    );
}

/// An in-process circuit under the rate policy: the API shows its window
/// (calls, failed, slow) and the rule's thresholds; once the rule opens
/// it, an empty window. Waits for the in-process engine's rate path.
#[test]
fn a_rate_circuit_shows_its_window_and_its_thresholds() {
    use fuse_breaker::Policy;
    runtime().block_on(async {
        let config = Config::builder()
            .policy(Policy::Rate)
            .failure_rate(50)
            .minimum_calls(10)
            .slow_call_duration(Duration::from_millis(20))
            .slow_call_rate(80)
            .build()
            .unwrap();
        let registry = Arc::new(Registry::builder().defaults(config).build().unwrap());
        let search = registry.get("search");
        let base = start(Admin::new().registry(registry.clone())).await;
        // 9 calls: the first 2 slow, the last 3 failed.
        for i in 0..9 {
            let permit = search.try_acquire().unwrap();
            if i < 2 {
                tokio::time::sleep(Duration::from_millis(40)).await;
            }
            if i >= 6 {
                permit.failure();
            } else {
                permit.success();
            }
        }
        let view = send(&base, "GET", "/circuits/fuse:search", None)
            .await
            .view();
        assert_eq!(view.state, "closed", "{view:?}");
        assert_eq!((view.calls, view.failed, view.slow), (9, 3, 2), "{view:?}");
        assert_eq!(view.failures, 0);
        let c = &view.config;
        assert_eq!(
            (
                c.policy.as_str(),
                c.failure_rate,
                c.minimum_calls,
                c.window_buckets,
                c.slow_call_duration_ms,
                c.slow_call_rate
            ),
            ("rate", 50, 10, 10, Some(20), 80)
        );
        // 3 more failures: 6 of 12, 50 %: open, and the window empty.
        for _ in 0..3 {
            search.try_acquire().unwrap().failure();
        }
        assert_eq!(search.state(), State::Open);
        let list = send(&base, "GET", "/circuits", None).await.list();
        let view = &list.circuits[0];
        assert_eq!(view.state, "open");
        assert_eq!((view.calls, view.failed, view.slow), (0, 0, 0));
    });
}

/// A count circuit's answer keeps its fields and gains the new ones
/// beside them: its policy, and zero calls under a rate window.
#[test]
fn a_count_circuit_s_answer_keeps_its_fields_and_names_its_policy() {
    runtime().block_on(async {
        let registry = registry();
        let charge = registry.get_operation("billing", "charge");
        charge.try_acquire().unwrap().failure();
        let base = start(Admin::new().registry(registry.clone())).await;
        let json = send(&base, "GET", "/circuits/fuse:shop:billing:charge", None)
            .await
            .json();
        assert_eq!(json["failures"], 1, "{json}");
        assert_eq!(json["failure_ages_ms"].as_array().map(Vec::len), Some(1));
        assert_eq!(
            (&json["calls"], &json["failed"], &json["slow"]),
            (&0.into(), &0.into(), &0.into())
        );
        let config = &json["config"];
        assert_eq!(config["failure_threshold"], 3, "{json}");
        assert_eq!(config["policy"], "count", "{json}");
        assert_eq!(config["failure_rate"], 50, "{json}");
        assert_eq!(config["slow_call_duration_ms"], Value::Null, "{json}");
    });
}

/// A circuit that backs off (SPEC §10): after a failed probe its view
/// shows the second opening in a row, four times as long, and when it
/// ends; its configuration the four recovery settings.
#[test]
fn an_opening_shows_its_n_its_duration_and_when_it_ends() {
    runtime().block_on(async {
        let config = Config::builder()
            .failure_threshold(1)
            .half_open_probes(1)
            .open_duration(Duration::from_millis(50))
            .open_backoff(4.0)
            .max_open_duration(Duration::from_mins(1))
            .open_jitter(0.25)
            .probe_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        let registry = Arc::new(Registry::builder().defaults(config).build().unwrap());
        let charge = registry.get("charge");
        let base = start(Admin::new().registry(registry.clone())).await;
        charge.try_acquire().unwrap().failure();
        let first = charge.snapshot().open_for.unwrap();
        tokio::time::sleep(first + Duration::from_millis(10)).await;
        charge.try_acquire().expect("a probe").failure();
        let snapshot = charge.snapshot();
        assert_eq!(snapshot.openings, 2);

        let json = send(&base, "GET", "/circuits/fuse:charge", None)
            .await
            .json();
        let view: CircuitView = serde_json::from_value(json.clone()).unwrap();
        assert_eq!((view.state.as_str(), view.openings), ("open", 2), "{json}");
        // 200 ms less up to a quarter, drawn once.
        let open_for = view.open_for_ms.expect("open");
        assert_eq!(
            u128::from(open_for),
            snapshot.open_for.unwrap().as_millis(),
            "{json}"
        );
        assert!((150..=200).contains(&open_for), "{json}");
        assert!(view.half_open_in_ms.unwrap() <= open_for, "{json}");
        let opened = humantime::parse_rfc3339(view.opened_at.as_deref().unwrap()).unwrap();
        let retry = humantime::parse_rfc3339(view.retry_at.as_deref().unwrap()).unwrap();
        let lasts = retry.duration_since(opened).unwrap().as_millis();
        // Each time is rounded down to its millisecond.
        assert!(lasts.abs_diff(u128::from(open_for)) <= 1, "{json}");

        let c = &json["config"];
        assert_eq!(
            (
                &c["open_backoff"],
                &c["max_open_duration_ms"],
                &c["open_jitter"],
                &c["probe_timeout_ms"]
            ),
            (&4.0.into(), &60_000.into(), &0.25.into(), &5000.into()),
            "{json}"
        );

        // Closed: no opening.
        charge.force_closed();
        let view = send(&base, "GET", "/circuits/fuse:charge", None)
            .await
            .view();
        assert_eq!(
            (
                view.openings,
                view.open_for_ms,
                view.retry_at,
                view.half_open_in_ms
            ),
            (0, None, None, None)
        );
    });
}
