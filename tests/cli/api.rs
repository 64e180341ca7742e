//! The command through a service's admin API: its list, its bounds, what
//! a change replaced, and what it sends never acting on the terminal.

use super::*;

/// `fuse --url`: the same commands through a service's admin API, nested
/// under a prefix, with the token for the writes.
#[test]
fn the_command_talks_to_a_service_s_admin_api() {
    use fuse_breaker::admin::Admin;
    use fuse_breaker::{Registry, State};
    use std::sync::Arc;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let registry = Arc::new(Registry::builder().app("shop").build().unwrap());
    let charge = registry.get_operation("billing", "charge");
    registry.get("search");
    registry.get("elsewhere");
    let target = serve_admin(&runtime, Admin::new().registry(registry.clone()));

    let table = stdout(&fuse(&target, "shop", &["status"]));
    let keys: Vec<&str> = table
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(
        keys,
        [
            "fuse:shop:billing:charge",
            "fuse:shop:elsewhere",
            "fuse:shop:search"
        ],
        "{table}"
    );

    let refused = fuse(&target, "shop", &["open", "billing:charge"]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("unauthorized"), "{err}");
    assert_eq!(charge.state(), State::Closed);

    stdout(&fuse(
        &target,
        "shop",
        &["--token", "s3cret", "open", "billing:charge"],
    ));
    assert_eq!(charge.state(), State::Open);
    let json = stdout(&fuse(
        &target,
        "shop",
        &["status", "billing:charge", "--json"],
    ));
    let view: fuse_breaker::admin::CircuitView = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(
        (view.key.as_str(), view.state.as_str()),
        ("fuse:shop:billing:charge", "open")
    );
    assert!(view.half_open_in_ms.is_some());
    stdout(&fuse(
        &target,
        "shop",
        &["--token", "s3cret", "close", "billing:charge"],
    ));
    assert_eq!(charge.state(), State::Closed);

    let missing = fuse(&target, "shop", &["status", "nothing"]);
    let err = String::from_utf8_lossy(&missing.stderr);
    assert!(
        !missing.status.success() && err.contains("not_found"),
        "{err}"
    );

    drop(runtime);
    let gone = fuse(&target, "shop", &["status"]);
    let err = String::from_utf8_lossy(&gone.stderr);
    assert!(
        !gone.status.success() && err.contains("unreachable"),
        "{err}"
    );
    let bad = fuse(
        &Target {
            flag: "--url",
            url: "ftp://x".into(),
        },
        "shop",
        &["status"],
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("--url takes"),
        "{err}"
    );
}

#[test]
fn an_admin_api_whose_list_never_ends_is_given_up() {
    use std::sync::atomic::Ordering;

    // `next` never changes.
    let (url, served) = fake_api(100, |_| {
        serde_json::json!({"circuits": [view("fuse:shop:a", "closed")], "total": 1,
                           "next": "fuse:shop:a", "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(err.contains("fuse:shop:a") && err.contains("next"), "{err}");
    assert!(served.load(Ordering::SeqCst) <= 2, "{err}");

    // `next` moves on forever.
    let (url, served) = fake_api(20_000, |n| {
        let key = format!("fuse:shop:k{n:08}");
        serde_json::json!({"circuits": [view(&key, "closed")], "total": 1,
                           "next": key, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(err.contains("pages"), "{err}");
    let served = served.load(Ordering::SeqCst);
    assert!(served < 20_000, "{served} pages read: {err}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), served);
}

#[test]
fn control_characters_from_an_admin_api_never_reach_the_terminal() {
    let (url, _) = fake_api(100, |_| {
        serde_json::json!({"circuits": [view("fuse:shop:\u{1b}]0;pwned\u{7}", "\u{1b}[2Jopen")],
                           "total": 1, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let out = fuse(&target, "shop", &["status"]);
    assert!(!has_control(&out.stdout), "{out:?}");
    let table = stdout(&out);
    assert!(
        line_of(&table, "fuse:shop:\\x1b]0;pwned\\x07").contains("\\x1b[2Jopen"),
        "{table}"
    );
    let (url, _) = fake_api(100, |_| "{\"error\": \"\u{1b}[2J\"}".to_owned());
    let out = fuse(&Target { flag: "--url", url }, "shop", &["status"]);
    assert!(!out.status.success(), "{out:?}");
    assert!(!has_control(&out.stderr), "{out:?}");
}

#[test]
fn an_admin_api_s_answer_is_read_up_to_a_bound() {
    let (url, served) = fake_api(100, |_| {
        let pad = " ".repeat(33 << 20);
        format!(r#"{{"circuits": [],{pad}"total": 0, "next": null, "writable": false}}"#)
    });
    let out = fuse(&Target { flag: "--url", url }, "shop", &["status"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{out:?}");
    assert!(err.contains("bytes"), "{err}");
    assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// Through an admin API over shared circuits, the answer says what a
/// change replaced, and the command says it too.
#[test]
fn an_admin_api_says_what_a_change_replaced() {
    use fuse_breaker::admin::Admin;
    use fuse_breaker::store::MemoryStore;
    use std::sync::Arc;

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let store = Arc::new(MemoryStore::new());
    let shared = Arc::new(
        fuse_breaker::Registry::builder()
            .store(store.clone())
            .app("shop")
            .build()
            .unwrap(),
    );
    shared.get("billing");
    store.put(
        "fuse:shop:billing",
        b"null",
        std::time::Duration::from_mins(1),
    );
    let target = serve_admin(&runtime, Admin::new().shared(shared));
    let out = fuse(&target, "shop", &["--token", "s3cret", "reset", "billing"]);
    assert!(out.status.success(), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("fuse:shop:billing held no circuit") && err.contains("not a circuit"),
        "{err}"
    );
    assert_eq!(store.len(), 0, "deleted");
}
