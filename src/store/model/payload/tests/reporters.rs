//! The reporters of a closed window in a payload (SPEC §8's quorum).

use super::*;
use crate::store::model::quorum::{ANONYMOUS, Report};

/// A closed `count` circuit of generation 7 with failures at 1,700,000,001
/// s and 1,700,000,002 s, reported by 5 and 9.
fn reported() -> Stored {
    Stored {
        window: counted(vec![1_700_000_001 * SEC, 1_700_000_002 * SEC]),
        reporters: Reporters::from_reports(vec![
            Report {
                id: 5,
                at: 1_700_000_001 * SEC,
            },
            Report {
                id: 9,
                at: 1_700_000_002 * SEC,
            },
        ]),
        ..Stored::fresh(7)
    }
}

#[test]
fn reporters_are_the_last_of_the_crate_s_fields_while_closed() {
    let value = ours(&reported());
    assert_eq!(
        value["fuse"]["reporters"],
        serde_json::json!([[5, 1_700_000_001_000_000u64], [9, 1_700_000_002_000_000u64]])
    );
    let text = String::from_utf8(write(&reported(), WIDTH, Encoding::Json)).unwrap();
    assert!(text.ends_with("]]}}"), "{text}");
    // Open: none.
    let mut open = reported();
    open.force_open(&Config::default(), 1_700_000_003 * SEC, 0);
    assert_eq!(ours(&open)["fuse"].get("reporters"), None);
    // A closed window that names no reporter writes none.
    assert_eq!(ours(&Stored::fresh(7))["fuse"].get("reporters"), None);
}

#[test]
fn failures_without_reporters_are_one_anonymous_reporter_s() {
    let anonymous = |at| Reporters::from_reports(vec![Report { id: ANONYMOUS, at }]);
    // Ours, written before the quorum.
    let mut older = ours(&reported());
    older["fuse"].as_object_mut().unwrap().remove("reporters");
    let stored = read_value(&older).unwrap();
    assert_eq!(stored.reporters, anonymous(1_700_000_002 * SEC));
    // milon/fuse's.
    let milon = br#"{"state":"closed","opened_at":null,"failures":[1700000001,1700000002]}"#;
    let stored = read("fuse:billing", milon, JSON, FRESH).unwrap();
    assert_eq!(stored.reporters, anonymous(1_700_000_002 * SEC));
    // No failures: no reporter.
    let milon = br#"{"state":"closed","opened_at":null,"failures":[]}"#;
    let stored = read("fuse:billing", milon, JSON, FRESH).unwrap();
    assert!(stored.reporters.is_empty());
    // Under `rate`: the start of the newest bucket with a failed or slow
    // call.
    let bucket = 1_700_000_000 / 6;
    let mut rated = ours(&Stored {
        window: Window::Rate(Buckets::from_entries([
            (
                bucket - 1,
                Counts {
                    calls: 3,
                    failed: 1,
                    slow: 0,
                    slow_failed: 0,
                },
            ),
            (
                bucket,
                Counts {
                    calls: 2,
                    failed: 0,
                    slow: 0,
                    slow_failed: 0,
                },
            ),
        ])),
        ..Stored::fresh(7)
    });
    rated["fuse"].as_object_mut().unwrap().remove("reporters");
    let stored = read_value(&rated).unwrap();
    assert_eq!(stored.reporters, anonymous((bucket - 1) * WIDTH));
}

#[test]
fn reporters_a_payload_cannot_mean_are_an_error_naming_the_field() {
    let cases = [
        (
            serde_json::json!([[5, 1], [5, 2]]),
            "fuse.reporters names reporter 5 twice",
        ),
        (
            serde_json::json!((0..65).map(|id| [id, 1]).collect::<Vec<_>>()),
            "fuse.reporters holds 65 reporters, above the 64 a window keeps",
        ),
        (
            serde_json::json!([[5, 1_900_000_000_000_000u64]]),
            "fuse.reporters holds 1900000000000000 us since the Unix epoch, in the future",
        ),
        (serde_json::json!([[5]]), "invalid length 1"),
        (serde_json::json!([[-5, 1]]), "invalid value"),
    ];
    for (reporters, expected) in cases {
        let mut value = ours(&reported());
        value["fuse"]["reporters"] = reporters;
        let err = read_value(&value).unwrap_err();
        assert_eq!(err.key(), "fuse:billing");
        assert!(err.to_string().contains(expected), "{err}");
    }
}

#[test]
fn reporters_count_only_while_closed() {
    let mut value = ours(&recovering(State::Open));
    value["fuse"]["reporters"] = serde_json::json!([[5, 1]]);
    assert!(read_value(&value).unwrap().reporters.is_empty());
}
