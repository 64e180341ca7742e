//! The `rate` window in a payload.

use super::*;

/// A closed circuit of generation 7 whose `rate` window is `buckets`, its
/// failed and slow calls reported by reporter 1.
fn rated(buckets: &[(u64, u64, u64, u64)]) -> Stored {
    let newest = buckets
        .iter()
        .filter(|&&(_, _, failed, slow)| failed + slow > 0)
        .map(|&(bucket, ..)| bucket * WIDTH)
        .max();
    let reporters = newest.map(|at| crate::store::model::quorum::Report { id: 1, at });
    let entries = buckets.iter().map(|&(bucket, calls, failed, slow)| {
        (
            bucket,
            Counts {
                calls,
                failed,
                slow,
                slow_failed: 0,
            },
        )
    });
    Stored {
        window: Window::Rate(Buckets::from_entries(entries)),
        reporters: Reporters::from_reports(reporters.into_iter().collect()),
        ..Stored::fresh(7)
    }
}

#[test]
fn a_rate_window_is_under_the_crate_s_fields_and_milon_s_failures_are_empty() {
    let bucket = 1_700_000_000 / 6;
    let stored = rated(&[(bucket - 1, 10, 4, 1), (bucket, 3, 0, 0)]);
    let value: serde_json::Value =
        serde_json::from_slice(&write(&stored, WIDTH, Encoding::Json)).unwrap();
    assert_eq!(value["failures"], serde_json::json!([]));
    assert_eq!(value["fuse"]["failures_us"], serde_json::json!([]));
    assert_eq!(
        value["fuse"]["rate"],
        serde_json::json!({"width_ns": WIDTH, "buckets": [[bucket - 1, 10, 4, 1], [bucket, 3, 0, 0]]})
    );
    assert_eq!(
        read("fuse:billing", value.to_string().as_bytes(), JSON, FRESH),
        Ok(stored)
    );
    // An empty rate window stays a rate window.
    let empty = rated(&[]);
    let bytes = write(&empty, WIDTH, Encoding::Json);
    assert!(matches!(
        read("fuse:billing", &bytes, JSON, FRESH).unwrap().window,
        Window::Rate(_)
    ));
}

#[test]
fn a_count_payload_has_no_rate_field() {
    let stored = Stored {
        window: counted(vec![1_700_000_001 * SEC]),
        ..Stored::fresh(7)
    };
    let value: serde_json::Value =
        serde_json::from_slice(&write(&stored, WIDTH, Encoding::Json)).unwrap();
    assert!(value["fuse"].get("rate").is_none());
}

#[test]
fn a_reader_of_another_width_puts_the_calls_in_its_own_buckets() {
    // Written in 6 s buckets; read in 12 s ones: two buckets become one.
    let bucket = 1_700_000_000 / 6 / 2 * 2;
    let stored = rated(&[(bucket, 10, 4, 1), (bucket + 1, 3, 1, 0)]);
    let bytes = write(&stored, WIDTH, Encoding::Json);
    let wide = Fresh {
        width: 2 * WIDTH,
        ..FRESH
    };
    let read_back = read("fuse:billing", &bytes, JSON, wide).unwrap();
    let Window::Rate(buckets) = read_back.window else {
        panic!("not a rate window: {read_back:?}");
    };
    let counts = Counts {
        calls: 13,
        failed: 5,
        slow: 1,
        slow_failed: 0,
    };
    assert_eq!(buckets.entries(), &[(bucket / 2, counts)]);
}

#[test]
fn a_rate_window_that_cannot_be_one_is_an_error_naming_the_key_and_the_field() {
    let bucket = 1_700_000_000 / 6;
    let payload = |buckets: String, width: u64| {
        format!(
            r#"{{"state":"closed","opened_at":null,"failures":[],"fuse":{{"version":1,"generation":1,"epoch":1,"opened_at_us":null,"failures_us":[],"leases":[],"rate":{{"width_ns":{width},"buckets":[{buckets}]}}}}}}"#
        )
    };
    let many = (0..=u64::from(MAX_WINDOW_BUCKETS))
        .map(|i| format!("[{},1,0,0]", bucket - i))
        .collect::<Vec<_>>()
        .join(",");
    let future = (FRESH.now + 61 * SEC) / WIDTH + 1;
    for (bytes, expected) in [
        (
            payload(many, WIDTH),
            "fuse.rate.buckets holds 61 buckets, above the 60",
        ),
        (
            payload(format!("[{bucket},1,2,0]"), WIDTH),
            "more than its calls",
        ),
        (
            payload(format!("[{bucket},1,0,2]"), WIDTH),
            "more than its calls",
        ),
        (
            payload(format!("[{bucket},1,0,0]"), 0),
            "fuse.rate.width_ns is 0",
        ),
        (payload(format!("[{future},1,0,0]"), WIDTH), "in the future"),
        (
            payload(format!("[{},1,0,0]", u64::MAX), WIDTH),
            "in the future",
        ),
        (payload(format!("[{bucket},1,0]"), WIDTH), "invalid length"),
        (
            payload(format!("[{bucket},-1,0,0]"), WIDTH),
            "invalid value",
        ),
    ] {
        let err = read("fuse:billing", bytes.as_bytes(), JSON, FRESH).unwrap_err();
        assert_eq!(err.key(), "fuse:billing");
        let text = err.to_string();
        assert!(text.contains(expected), "{expected}: {text}");
    }
    // At the bound, and just before the future, it reads.
    let full = (0..u64::from(MAX_WINDOW_BUCKETS))
        .map(|i| format!("[{},1,1,1]", bucket - i))
        .collect::<Vec<_>>()
        .join(",");
    assert!(read("fuse:billing", payload(full, WIDTH).as_bytes(), JSON, FRESH).is_ok());
    let edge = (FRESH.now + 60 * SEC) / WIDTH;
    let edge = payload(format!("[{edge},1,0,0]"), WIDTH);
    assert!(read("fuse:billing", edge.as_bytes(), JSON, FRESH).is_ok());
}

#[test]
fn a_rate_window_counts_only_while_closed() {
    let bucket = 1_700_000_000 / 6;
    let mut value: serde_json::Value =
        serde_json::from_slice(&write(&rated(&[(bucket, 5, 5, 0)]), WIDTH, Encoding::Json))
            .unwrap();
    value["state"] = "open".into();
    value["opened_at"] = 1_700_000_000u64.into();
    value["fuse"]["opened_at_us"] = 1_700_000_000_000_000u64.into();
    let stored = read("fuse:billing", value.to_string().as_bytes(), JSON, FRESH).unwrap();
    assert_eq!(stored.generation, 7, "read by the crate's own fields");
    assert_eq!(stored.window, Window::Rate(Buckets::default()));
}
