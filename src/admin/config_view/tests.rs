use super::*;

#[test]
fn an_older_api_s_configuration_reads_as_count() {
    let old = r#"{"failure_threshold": 3, "failure_window_ms": 1000,
                  "open_duration_ms": 500, "half_open_probes": 1}"#;
    let view: ConfigView = serde_json::from_str(old).unwrap();
    assert_eq!(view.failure_threshold, 3);
    assert!(!view.is_rate());
    let defaults = ConfigView::of(&Config::default());
    assert_eq!(
        (
            view.failure_rate,
            view.minimum_calls,
            view.window_buckets,
            view.slow_call_duration_ms,
            view.slow_call_rate
        ),
        (
            defaults.failure_rate,
            defaults.minimum_calls,
            defaults.window_buckets,
            defaults.slow_call_duration_ms,
            defaults.slow_call_rate
        )
    );
    // Its openings lasted its open duration, and so did its wait for
    // probes.
    assert_eq!(
        (
            view.open_backoff,
            view.max_open_duration_ms,
            view.open_jitter,
            view.probe_timeout_ms
        ),
        (Factor::ONE, 500, Factor::ZERO, 500)
    );
    assert_eq!(view.min_reporters, 1, "no quorum");
    // Nor did it grade its admission.
    assert_eq!(
        (
            view.ramp_up_ms,
            view.ramp_up_floor,
            view.throttle_k,
            view.max_throttle
        ),
        (None, 10, None, 90)
    );
    assert!(!view.is_graded());
}

#[test]
fn the_recovery_settings_are_shown_and_read_back() {
    let config = Config::builder()
        .open_duration(Duration::from_secs(10))
        .open_backoff(1.5)
        .max_open_duration(Duration::from_mins(5))
        .open_jitter(0.2)
        .probe_timeout(Duration::from_millis(2500))
        .build()
        .unwrap();
    let view = ConfigView::of(&config);
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        (
            &json["open_backoff"],
            &json["max_open_duration_ms"],
            &json["open_jitter"],
            &json["probe_timeout_ms"]
        ),
        (&1.5.into(), &300_000.into(), &0.2.into(), &2500.into())
    );
    assert_eq!(serde_json::from_value::<ConfigView>(json).unwrap(), view);
    // As a file or the environment says them.
    assert_eq!(
        (view.open_backoff.to_string(), view.open_jitter.to_string()),
        ("1.5".to_owned(), "0.2".to_owned())
    );
}

#[test]
fn a_number_no_factor_holds_is_refused() {
    let mut json = serde_json::to_value(ConfigView::of(&Config::default())).unwrap();
    for bad in [-1.0, 4295.0, 1e300] {
        json["open_backoff"] = bad.into();
        let err = serde_json::from_value::<ConfigView>(json.clone()).unwrap_err();
        assert!(err.to_string().contains("not a factor"), "{bad}: {err}");
    }
    json["open_backoff"] = 4_294.967_295.into();
    let view: ConfigView = serde_json::from_value(json).unwrap();
    assert_eq!(view.open_backoff, Factor::from_millionths(u32::MAX));
}

#[test]
fn every_rate_setting_is_shown_and_reads_back() {
    let config = Config::builder()
        .policy(Policy::Rate)
        .failure_rate(30)
        .minimum_calls(40)
        .window_buckets(6)
        .slow_call_duration(std::time::Duration::from_secs(2))
        .slow_call_rate(70)
        .build()
        .unwrap();
    let view = ConfigView::of(&config);
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "failure_threshold": 8, "failure_window_ms": 60000,
            "open_duration_ms": 30000, "half_open_probes": 2,
            "policy": "rate", "failure_rate": 30, "minimum_calls": 40,
            "window_buckets": 6, "slow_call_duration_ms": 2000, "slow_call_rate": 70,
            "open_backoff": 1.0, "max_open_duration_ms": 30000, "open_jitter": 0.0,
            "probe_timeout_ms": 30000, "min_reporters": 1,
            "ramp_up_ms": null, "ramp_up_floor": 10, "throttle_k": null, "max_throttle": 90,
        })
    );
    assert_eq!(serde_json::from_value::<ConfigView>(json).unwrap(), view);
}

#[test]
fn the_graded_admission_settings_are_shown_and_read_back() {
    let config = Config::builder()
        .ramp_up(Duration::from_secs(45))
        .ramp_up_floor(25)
        .throttle_k(1.5)
        .max_throttle(80)
        .build()
        .unwrap();
    let view = ConfigView::of(&config);
    assert!(view.is_graded());
    let json = serde_json::to_value(&view).unwrap();
    assert_eq!(
        (
            &json["ramp_up_ms"],
            &json["ramp_up_floor"],
            &json["throttle_k"],
            &json["max_throttle"]
        ),
        (&45_000.into(), &25.into(), &1.5.into(), &80.into())
    );
    assert_eq!(
        serde_json::from_value::<ConfigView>(json.clone()).unwrap(),
        view
    );
    // A K no factor holds is refused, as any factor is.
    let mut bad = json;
    bad["throttle_k"] = (-2.0).into();
    let err = serde_json::from_value::<ConfigView>(bad).unwrap_err();
    assert!(err.to_string().contains("not a factor"), "{err}");
}
