//! Who may do what through the JSON API: the token for writes and
//! private reads, the hosts it answers, and a token no request can bring.

use fuse_breaker::State;
use fuse_breaker::admin::Admin;

use super::api::*;
use super::runtime;

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
