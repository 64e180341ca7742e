use super::*;

#[test]
fn near_misses_of_the_rate_settings_find_them() {
    for (typo, meant) in [
        ("plicy", "policy"),
        ("failure_rat", "failure_rate"),
        ("minimal_calls", "minimum_calls"),
        ("window_bucket", "window_buckets"),
        ("slow_call_durations", "slow_call_duration"),
        ("slow_calls_rate", "slow_call_rate"),
    ] {
        assert_eq!(closest_setting(typo), Some(meant), "{typo}");
    }
    // Far from every setting: another program's variable.
    assert_eq!(closest_setting("rate_limit"), None);
}

#[test]
fn a_refused_value_names_the_variable_that_set_it() {
    let err = Settings::from_toml("max_circuits = 5\nfailure_rate = 40\n")
        .unwrap()
        .with_env_vars([("FUSE_MAX_CIRCUITS", "0")])
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("(in registry, from FUSE_MAX_CIRCUITS)"),
        "{err}"
    );
    let err = Settings::default()
        .with_env_vars([("FUSE_SLOW_CALL_RATE", "0")])
        .unwrap_err()
        .to_string();
    assert_eq!(
        err,
        "invalid slow_call_rate = 0: must be between 1 and 100 \
         (in defaults, from FUSE_SLOW_CALL_RATE)"
    );
}
