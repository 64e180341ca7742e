//! Changing settings over HTTP (SPEC §12): a circuit's and a name's, with
//! the token and without, every refusal leaving the settings as they were,
//! and the change's event naming the caller.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use fuse_breaker::admin::{Admin, SettingsChange};
use fuse_breaker::events::{Listener, Reconfiguration, Transition};
use fuse_breaker::{Registry, State};

use super::api::{Answer, answer, registry, start};
use super::runtime;

/// `PUT path` with the JSON `body`, the bearer `token` and the caller's
/// name, if given.
async fn put(base: &str, path: &str, token: Option<&str>, by: Option<&str>, body: &str) -> Answer {
    let mut request = reqwest::Client::new()
        .put(format!("{base}{path}"))
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    if let Some(by) = by {
        request = request.header("x-fuse-changed-by", by);
    }
    answer(request).await
}

fn change(answer: &Answer) -> SettingsChange {
    assert_eq!(answer.status, 200, "{}", answer.body);
    serde_json::from_str(&answer.body).unwrap_or_else(|err| panic!("{err}: {}", answer.body))
}

/// Who changed what, as each reconfiguration's event says.
#[derive(Default)]
struct Audit(Mutex<Vec<String>>);

impl Listener for Audit {
    fn on_transition(&self, _: &Transition) {}
    fn on_reconfigure(&self, event: &Reconfiguration) {
        let changed: Vec<String> = event
            .changes()
            .iter()
            .map(|c| format!("{} {}->{}", c.setting, c.from, c.to))
            .collect();
        let line = format!("{} by {}: {}", event.key, event.by, changed.join(", "));
        self.0.lock().unwrap().push(line);
    }
}

#[test]
fn a_circuit_s_settings_change_with_the_token_and_keep_its_state() {
    runtime().block_on(async {
        let registry = registry();
        let charge = registry.get_operation("billing", "charge");
        let search = registry.get("search");
        let audit = Arc::new(Audit::default());
        charge.on_transition(audit.clone());
        let base = start(Admin::new().registry(registry.clone()).token("s3cret")).await;
        let path = "/circuits/fuse:shop:billing:charge/settings";

        charge.try_acquire().unwrap().failure();
        let body = r#"{"failure_threshold": 2, "open_duration": "10s"}"#;
        let refused = put(&base, path, None, None, body).await;
        assert_eq!((refused.status, refused.code().as_str()), (401, "unauthorized"));
        let wrong = put(&base, path, Some("guess"), None, body).await;
        assert_eq!((wrong.status, wrong.code().as_str()), (401, "unauthorized"));
        assert_eq!(charge.config().failure_threshold(), 3, "refused: unchanged");

        let answer = change(&put(&base, path, Some("s3cret"), Some("alice"), body).await);
        assert_eq!(answer.key.as_deref(), Some("fuse:shop:billing:charge"));
        assert_eq!((answer.name.as_str(), answer.by.as_str()), ("billing", "admin (alice)"));
        assert_eq!((answer.from.failure_threshold, answer.to.failure_threshold), (3, 2));
        assert_eq!((answer.from.open_duration_ms, answer.to.open_duration_ms), (60_000, 10_000));
        let changed: Vec<&str> = answer.changes.iter().map(|c| c.setting.as_str()).collect();
        assert_eq!(changed, ["failure_threshold", "open_duration"]);
        assert_eq!(charge.config().failure_threshold(), 2);
        assert_eq!(search.config().failure_threshold(), 3, "another circuit keeps its own");
        assert_eq!(
            *audit.0.lock().unwrap(),
            ["fuse:shop:billing:charge by admin (alice): failure_threshold 3->2, open_duration 60s->10s"]
        );

        // The failure before the change counts: one more opens it, for the
        // new open duration.
        assert_eq!(charge.snapshot().failures.len(), 1);
        charge.try_acquire().unwrap().failure();
        assert_eq!(charge.state(), State::Open);
        let retry = charge.try_acquire().unwrap_err().retry_after();
        assert!(retry <= Duration::from_secs(10) && retry > Duration::from_secs(9), "{retry:?}");

        // An open circuit reconfigured stays open, to the same end.
        let body = r#"{"open_duration": "5m", "half_open_probes": 1}"#;
        change(&put(&base, path, Some("s3cret"), None, body).await);
        assert_eq!(charge.state(), State::Open);
        let again = charge.try_acquire().unwrap_err().retry_after();
        assert!(again <= retry && again > Duration::from_secs(9), "{again:?}");
        let last = audit.0.lock().unwrap().last().cloned().unwrap();
        assert!(
            last.ends_with("by admin: open_duration 10s->300s, half_open_probes 2->1"),
            "{last}"
        );
    });
}

#[test]
fn an_api_without_a_token_changes_no_setting() {
    runtime().block_on(async {
        let registry = registry();
        let billing = registry.get("billing");
        let base = start(Admin::new().registry(registry.clone())).await;
        let body = r#"{"failure_threshold": 1}"#;
        for path in [
            "/circuits/fuse:shop:billing/settings",
            "/names/billing/settings",
        ] {
            let refused = put(&base, path, Some("anything"), None, body).await;
            assert_eq!(
                (refused.status, refused.code().as_str()),
                (403, "read_only"),
                "{path}"
            );
        }
        assert_eq!(billing.config().failure_threshold(), 3);
        assert_eq!(registry.config_for("billing").failure_threshold(), 3);
    });
}

#[test]
fn a_name_s_settings_reach_its_circuits_and_those_made_later() {
    runtime().block_on(async {
        let registry = registry();
        let charge = registry.get_operation("billing", "charge");
        let search = registry.get("search");
        let base = start(Admin::new().registry(registry.clone()).token("s3cret")).await;

        let body = r#"{"failure_threshold": 5, "counted_http_statuses": [500, 503]}"#;
        let answer =
            change(&put(&base, "/names/billing/settings", Some("s3cret"), None, body).await);
        assert_eq!(
            (answer.name.as_str(), answer.key.as_deref()),
            ("billing", None)
        );
        assert_eq!(answer.by, "admin");
        assert_eq!(
            (answer.from.failure_threshold, answer.to.failure_threshold),
            (3, 5)
        );
        assert_eq!(charge.config().failure_threshold(), 5);
        assert_eq!(charge.config().counted_http_statuses(), &[500, 503]);
        let refund = registry.get_operation("billing", "refund");
        assert_eq!(refund.config().failure_threshold(), 5, "made later");
        assert_eq!(search.config().failure_threshold(), 3, "another name");

        // A name no circuit has yet: its settings wait for its circuits.
        change(
            &put(
                &base,
                "/names/later/settings",
                Some("s3cret"),
                None,
                r#"{"half_open_probes": 4}"#,
            )
            .await,
        );
        assert_eq!(registry.get("later").config().half_open_probes(), 4);
    });
}

#[test]
fn refused_settings_name_what_was_wrong_and_change_nothing() {
    runtime().block_on(async {
        let registry = Arc::new(Registry::builder().app("shop").build().unwrap());
        let billing = registry.get("billing");
        let base = start(Admin::new().registry(registry.clone()).token("s3cret")).await;
        let circuit = "/circuits/fuse:shop:billing/settings";
        let cases: [(&str, &str, u16, &str, &str); 10] = [
            (circuit, "not json", 400, "bad_request", ""),
            (circuit, "[1]", 400, "bad_request", "JSON object"),
            (circuit, "{}", 400, "bad_request", "no setting"),
            (
                circuit,
                r#"{"failure_treshold": 2}"#,
                422,
                "invalid_setting",
                "failure_treshold",
            ),
            (
                circuit,
                r#"{"half_open_probes": 0}"#,
                422,
                "invalid_setting",
                "half_open_probes",
            ),
            (
                circuit,
                r#"{"failure_threshold": 2, "open_duration": 10}"#,
                422,
                "invalid_setting",
                "open_duration",
            ),
            (
                circuit,
                r#"{"key_prefix": "other"}"#,
                409,
                "not_in_place",
                "key_prefix",
            ),
            (
                "/names/billing/settings",
                r#"{"key_prefix": "other"}"#,
                409,
                "not_in_place",
                "fuse:shop:billing",
            ),
            (
                "/names/billing/settings",
                r#"{"failure_rate": 0}"#,
                422,
                "invalid_setting",
                "failure_rate",
            ),
            (
                "/circuits/fuse:shop:nothing/settings",
                r#"{"failure_threshold": 2}"#,
                404,
                "not_found",
                "fuse:shop:nothing",
            ),
        ];
        for (path, body, status, code, named) in cases {
            let answer = put(&base, path, Some("s3cret"), None, body).await;
            assert_eq!(
                (answer.status, answer.code().as_str()),
                (status, code),
                "{path} {body}: {}",
                answer.body
            );
            let message = answer.json()["error"].as_str().unwrap().to_owned();
            assert!(message.contains(named), "{path} {body}: {message}");
        }
        let bad_caller = put(
            &base,
            circuit,
            Some("s3cret"),
            Some("x".repeat(65).as_str()),
            r#"{"failure_threshold": 2}"#,
        )
        .await;
        assert_eq!(bad_caller.code(), "bad_request");
        assert_eq!(billing.config(), registry.config_for("billing"));
        assert_eq!(billing.config().failure_threshold(), 8);
        assert_eq!(billing.config().key_prefix(), "fuse");

        let wrong_method = super::api::send(&base, "POST", circuit, Some("s3cret")).await;
        assert_eq!(wrong_method.status, 405, "{}", wrong_method.body);
        assert_eq!(wrong_method.code(), "method_not_allowed");
    });
}

/// A shared circuit's settings change in the process that serves the API
/// alone: the store's key is left as it was, and another process of the
/// fleet keeps its own. A name changes in both registries the API serves,
/// or in neither when one refuses.
#[cfg(feature = "store")]
#[test]
fn a_shared_circuit_s_settings_are_this_process_s_and_the_store_is_untouched() {
    use fuse_breaker::store::{MemoryStore, SharedFuse, Store};

    async fn fail(fuse: &SharedFuse) {
        let permit = fuse.try_acquire().await.expect("closed");
        permit.failure().await.expect("the store answers");
    }

    runtime().block_on(async {
        let store = Arc::new(MemoryStore::new());
        let fleet = |store: Arc<MemoryStore>| {
            Arc::new(
                Registry::builder()
                    .store(store)
                    .app("shop")
                    .build()
                    .unwrap(),
            )
        };
        let (here, there) = (fleet(store.clone()), fleet(store.clone()));
        let payments = here.get("payments");
        let elsewhere = there.get("payments");
        fail(&payments).await;
        let before = store.load("fuse:shop:payments").await.unwrap();
        let local = registry();
        let search = local.get("search");
        let admin = Admin::new().registry(local.clone()).shared(here.clone());
        let base = start(admin.token("s3cret")).await;

        let body = r#"{"failure_threshold": 2}"#;
        let path = "/circuits/fuse:shop:payments/settings";
        let answer = change(&put(&base, path, Some("s3cret"), None, body).await);
        assert_eq!(
            (answer.from.failure_threshold, answer.to.failure_threshold),
            (8, 2)
        );
        assert_eq!(payments.config().failure_threshold(), 2);
        assert_eq!(
            elsewhere.config().failure_threshold(),
            8,
            "another process's own"
        );
        let after = store.load("fuse:shop:payments").await.unwrap();
        assert_eq!(
            after.payload, before.payload,
            "the store's key is untouched"
        );
        fail(&payments).await;
        assert_eq!(
            payments.state().await.unwrap(),
            State::Open,
            "2 failures open it now"
        );

        // A name: both registries take it.
        let body = r#"{"half_open_probes": 5}"#;
        change(&put(&base, "/names/search/settings", Some("s3cret"), None, body).await);
        assert_eq!(search.config().half_open_probes(), 5);
        assert_eq!(here.config_for("search").half_open_probes(), 5);
        // The in-process registry takes a name (it has no circuit of it)
        // that the shared one refuses (its circuit of the name is of
        // `rate` policy, whose window cannot change in place): the
        // in-process one is put back, and neither keeps it.
        let rated = r#"{"policy": "rate"}"#;
        change(
            &put(
                &base,
                "/names/grading/settings",
                Some("s3cret"),
                None,
                rated,
            )
            .await,
        );
        here.get("grading");
        let body = r#"{"failure_window": "10s"}"#;
        let refused = put(&base, "/names/grading/settings", Some("s3cret"), None, body).await;
        assert_eq!(
            (refused.status, refused.code().as_str()),
            (409, "not_in_place"),
            "{}",
            refused.body
        );
        assert_eq!(
            local.config_for("grading").failure_window(),
            Duration::from_mins(1)
        );
        assert_eq!(
            here.config_for("grading").failure_window(),
            Duration::from_mins(1)
        );
    });
}
