//! What the JSON API shows of a circuit's policy, of its opening and of
//! its graded admission (SPEC §11).

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::admin::{Admin, CircuitView};
use fuse_breaker::{Config, Registry, State};
use serde_json::Value;

use super::api::*;
use super::runtime;

/// An in-process circuit under the rate policy: the API shows its window
/// (calls, failed, slow) and the rule's thresholds; once the rule opens
/// it, an empty window. Waits for the in-process engine's rate path.
#[test]
fn a_rate_circuit_shows_its_window_and_its_thresholds() {
    use fuse_breaker::config::Policy;
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

/// SPEC §11 on a mock clock: a circuit that recovered 1 s ago ramps up
/// (its floor of 30 %), one whose window holds 31 failed requests is
/// throttled (at most 90 % shed: 10 % admitted) and shows its window, one
/// untouched admits every call; each configuration shows the four
/// settings.
#[test]
fn a_graded_circuit_shows_its_admission_why_and_the_throttle_s_window() {
    use fuse_breaker::config::MAX_FAILURE_THRESHOLD;

    runtime().block_on(async {
        let config = Config::builder()
            .failure_threshold(MAX_FAILURE_THRESHOLD)
            .half_open_probes(1)
            .ramp_up(Duration::from_secs(100))
            .ramp_up_floor(30)
            .throttle_k(2.0)
            .failure_window(Duration::from_secs(10))
            .window_buckets(10)
            .minimum_calls(20)
            .build()
            .unwrap();
        let (registry, mock) = crate::common::mock_registry(config);
        let (ramping, throttled) = (registry.get("ramping"), registry.get("throttled"));
        registry.get("plain");
        ramping.force_open();
        mock.increment(Duration::from_secs(30));
        ramping.try_acquire().expect("the probe").success();
        for _ in 0..30 {
            throttled.try_acquire().unwrap().failure();
        }
        // The next bucket's first request takes the window's share.
        mock.increment(Duration::from_secs(1));
        if let Ok(permit) = throttled.try_acquire() {
            permit.failure();
        }
        let base = start(Admin::new().registry(registry.clone())).await;
        let list = send(&base, "GET", "/circuits", None).await.json();
        let view = |key: &str| {
            list["circuits"]
                .as_array()
                .unwrap()
                .iter()
                .find(|view| view["key"] == key)
                .unwrap_or_else(|| panic!("no {key} in {list}"))
                .clone()
        };
        let shown = |json: &Value| {
            (
                json["state"].as_str().unwrap().to_owned(),
                json["graded_by"].clone(),
                json["requests"].as_u64().unwrap(),
                json["accepts"].as_u64().unwrap(),
            )
        };
        let admission = |json: &Value| json["admission"].as_f64().unwrap();

        let json = view("fuse:ramping");
        assert_eq!(
            shown(&json),
            ("closed".into(), "ramp_up".into(), 0, 0),
            "{json}"
        );
        assert!((admission(&json) - 0.3).abs() < 1e-6, "{json}");
        let json = view("fuse:throttled");
        assert_eq!(
            shown(&json),
            ("closed".into(), "throttle".into(), 31, 0),
            "{json}"
        );
        assert!((admission(&json) - 0.1).abs() < 1e-6, "{json}");
        let json = view("fuse:plain");
        assert_eq!(shown(&json), ("closed".into(), Value::Null, 0, 0), "{json}");
        assert_eq!(json["admission"], 1.0, "{json}");

        let c = &json["config"];
        assert_eq!(
            (
                &c["ramp_up_ms"],
                &c["ramp_up_floor"],
                &c["throttle_k"],
                &c["max_throttle"]
            ),
            (&100_000.into(), &30.into(), &2.0.into(), &90.into()),
            "{json}"
        );
        // What the `fuse` command reads back.
        let one = send(&base, "GET", "/circuits/fuse:throttled", None)
            .await
            .view();
        assert_eq!(
            (one.graded_by.as_deref(), one.requests, one.accepts),
            (Some("throttle"), 31, 0)
        );
        assert_eq!(
            one.config
                .throttle_k
                .map(fuse_breaker::config::Factor::to_f64),
            Some(2.0)
        );
    });
}
