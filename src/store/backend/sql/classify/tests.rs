use super::*;

#[test]
fn keys_are_held_up_to_the_column_s_characters() {
    let fits = format!("fuse:{}", "é".repeat(186));
    assert_eq!(key("sqlite:x.db", &fits), Ok(fits.as_str()));
    let long = format!("fuse:{}", "é".repeat(187));
    let err = key("sqlite:x.db", &long).unwrap_err();
    assert!(err.is_invalid_key() && !err.is_unreachable());
    let text = err.to_string();
    assert!(
        text.contains(&long) && text.contains("192 characters"),
        "{text}"
    );
}

#[test]
fn data_errors_are_told_from_failures_of_the_server() {
    for code in ["22001", "22021", "22P02", "23505"] {
        assert!(data_code(code, true), "{code}");
    }
    for code in ["08006", "57P01", "53300", "42P01", "40001", "XX000"] {
        assert!(!data_code(code, true), "{code}");
    }
    for code in ["18", "19", "2067", "20"] {
        assert!(data_code(code, false), "{code}");
    }
    for code in ["5", "517", "10", "14", "22001"] {
        assert!(!data_code(code, false), "{code}");
    }
    assert!(!about_data(&sqlx::Error::PoolTimedOut, true));
}

#[test]
fn a_clock_before_the_epoch_or_past_the_rules_is_no_time() {
    assert_eq!(
        clock(1_700_000_000_000_012),
        Some(Duration::from_secs(1_700_000_000) + Duration::from_micros(12))
    );
    assert_eq!(clock(-1), None);
    assert_eq!(clock(i64::MAX), None);
}
