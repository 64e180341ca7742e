use super::*;
use crate::config::{Config, MAX_WINDOW_BUCKETS};
use crate::policy::Counts;
use crate::store::model::quorum::Report;
use crate::store::model::stored::counted;
use proptest::prelude::*;

const SEC: u64 = NANOS_PER_SEC;

/// The codec of a store that reads JSON alone (the default).
const JSON: Codec = Codec::new(Encoding::Json);

/// A reading at the store's time 1,800,000,000 s (2027), with no lease:
/// after every time the strategies make.
const FRESH: Fresh = Fresh {
    now: 1_800_000_000 * SEC,
    lease_until: 1_800_000_000 * SEC,
    width: WIDTH,
    open: 30 * SEC,
};

/// The `rate` bucket width of the payloads the tests write (6 s: a minute
/// in ten buckets).
const WIDTH: u64 = 6 * SEC;

/// A `rate` window of up to `window_buckets` buckets before the time of
/// `FRESH`, each with its failed and slow calls among its calls.
fn buckets() -> impl Strategy<Value = Window> {
    let last: u64 = 1_800_000_000 / 6;
    prop::collection::vec(
        (last - 1_000..=last, 1u64..1_000_000, any::<u64>(), any::<u64>()),
        0..=MAX_WINDOW_BUCKETS as usize,
    )
    .prop_map(|entries| {
        Window::Rate(Buckets::from_entries(entries.into_iter().map(
            |(bucket, calls, failed, slow)| {
                let counts = Counts {
                    calls,
                    failed: failed % (calls + 1),
                    slow: slow % (calls + 1), slow_failed: 0,
                };
                (bucket, counts)
            },
        )))
    })
    .prop_filter("one entry per bucket, at most the bound", |window| {
        matches!(window, Window::Rate(b) if b.entries().len() <= MAX_WINDOW_BUCKETS as usize)
    })
}

fn stored() -> impl Strategy<Value = Stored> {
    let micros = (1_600_000_000_000_000u64..1_800_000_000_000_000).prop_map(|us| us * 1_000);
    let longest = u64::try_from(MAX_DURATION.as_micros()).unwrap();
    (
        (
            prop_oneof![
                Just(State::Closed),
                Just(State::Open),
                Just(State::HalfOpen)
            ],
            any::<u64>(),
            any::<u64>(),
            micros.clone(),
            prop::collection::vec(micros.clone(), 0..8),
            prop::collection::vec((any::<u64>(), micros.clone()), 0..4),
            0u32..4,
            prop::option::of(buckets()),
            prop::collection::btree_map(any::<u64>(), micros, 1..4),
        ),
        // SPEC §10: the opening's n (below the count's saturation), and
        // how far into the opening (up to the longest) its end, or the
        // start of the half-open epoch, is.
        prop_oneof![0u32..8, Just(u32::MAX - 1), any::<u32>()].prop_map(|n| n.min(u32::MAX - 1)),
        prop_oneof![0..=longest, Just(longest), Just(0)],
        // SPEC §11: a closed circuit may be ramping up after the n-th
        // opening, since the store's time of the reading or before.
        any::<bool>(),
    )
        .prop_map(
            |(
                (state, generation, epoch, opened_at, failures, leases, successes, rate, named),
                n,
                into_us,
                ramping,
            )| {
                let ramp = (ramping && state == State::Closed).then(|| Ramp {
                    n,
                    since: opened_at.min(FRESH.now),
                });
                let half_open = state == State::HalfOpen;
                let leases: Vec<Lease> = if half_open {
                    leases
                        .into_iter()
                        .map(|(id, until)| Lease { id, until })
                        .collect()
                } else {
                    Vec::new()
                };
                let inflight = u32::try_from(leases.len()).unwrap_or(0);
                let phase = match state {
                    State::Closed => 0,
                    State::Open => opened_at + into_us * 1_000,
                    // Started by the store's time of the reading.
                    State::HalfOpen => (opened_at + into_us * 1_000).min(FRESH.now),
                };
                Stored {
                    generation,
                    epoch,
                    head: Head {
                        ramping: ramp.is_some(),
                        ..head(
                            state,
                            epoch,
                            if half_open { successes } else { 0 },
                            inflight,
                            if state == State::Closed { 0 } else { n },
                        )
                    },
                    opened_at: if state == State::Closed { 0 } else { opened_at },
                    phase,
                    window: match rate {
                        Some(_) if state != State::Closed => Window::Rate(Buckets::default()),
                        Some(rate) => rate,
                        None if state == State::Closed => counted(failures),
                        None => counted(Vec::new()),
                    },
                    // A closed window names its reporters (one that
                    // names none reads as an anonymous one's).
                    reporters: if state == State::Closed {
                        Reporters::from_reports(
                            named
                                .into_iter()
                                .map(|(id, at)| Report { id, at })
                                .collect(),
                        )
                    } else {
                        Reporters::default()
                    },
                    leases,
                    opened_by: Vec::new(),
                    foreign: false,
                    ramp,
                }
            },
        )
}

proptest! {
    /// What the crate writes it reads back unchanged (times in whole
    /// microseconds, the payload's unit).
    #[test]
    fn a_written_payload_reads_back(stored in stored()) {
        let bytes = write(&stored, WIDTH, Encoding::Json);
        prop_assert_eq!(read("fuse:billing", &bytes, JSON, FRESH), Ok(stored));
    }

    /// Whatever the crate writes, milon/fuse finds its five fields, with
    /// their types and meanings.
    #[test]
    fn milon_reads_its_five_fields_from_a_payload_of_ours(stored in stored()) {
        let value: serde_json::Value = serde_json::from_slice(&write(&stored, WIDTH, Encoding::Json)).unwrap();
        let state = value["state"].as_str().unwrap();
        prop_assert_eq!(state, stored.head.state.as_str());
        if stored.head.state == State::Closed {
            prop_assert!(value["opened_at"].is_null());
        } else {
            prop_assert_eq!(value["opened_at"].as_u64(), Some(stored.opened_at / SEC));
        }
        let failures: Vec<u64> = value["failures"]
            .as_array()
            .unwrap()
            .iter()
            .map(|at| at.as_u64().unwrap())
            .collect();
        let expected: Vec<u64> = stored.failures().iter().map(|at| at / SEC).collect();
        prop_assert_eq!(failures, expected);
        prop_assert_eq!(value["half_open_successes"].as_u64(), Some(u64::from(stored.head.successes)));
        prop_assert_eq!(value["half_open_inflight"].as_u64(), Some(u64::from(stored.head.inflight)));
    }

    /// No payload makes reading panic.
    #[test]
    fn any_bytes_read_to_a_circuit_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..200)) {
        let _ = read("fuse:billing", &bytes, JSON, FRESH);
    }
}

#[test]
fn a_payload_milon_wrote_is_read_by_its_five_fields_in_a_new_generation() {
    let open = br#"{"state":"open","opened_at":1700000000,"failures":[],"half_open_successes":0,"half_open_inflight":0}"#;
    let stored = read("fuse:billing", open, JSON, FRESH).unwrap();
    assert_eq!(stored.head.state, State::Open);
    assert_eq!(stored.opened_at, 1_700_000_000 * SEC);
    assert_eq!(
        (stored.generation, stored.epoch),
        (0, 0),
        "unnamed, first epoch"
    );

    let closed = br#"{"state":"closed","opened_at":null,"failures":[1700000009,1700000003],"half_open_successes":0,"half_open_inflight":0}"#;
    let stored = read("fuse:billing", closed, JSON, FRESH).unwrap();
    assert_eq!(
        stored.failures(),
        vec![1_700_000_003 * SEC, 1_700_000_009 * SEC]
    );

    let probing = br#"{"state":"half_open","opened_at":1700000000,"failures":[],"half_open_successes":1,"half_open_inflight":2}"#;
    let stored = read("fuse:billing", probing, JSON, FRESH).unwrap();
    assert_eq!((stored.head.successes, stored.head.inflight), (1, 2));
    assert_eq!(stored.leases.len(), 2, "its probes hold leases");
    assert!(
        stored
            .leases
            .iter()
            .all(|lease| lease.until == FRESH.lease_until)
    );
}

#[test]
fn a_payload_milon_wrote_over_ours_is_read_by_its_fields() {
    let ours = Stored {
        window: counted(vec![1_700_000_001 * SEC]),
        ..Stored::fresh(7)
    };
    let mut value: serde_json::Value =
        serde_json::from_slice(&write(&ours, WIDTH, Encoding::Json)).unwrap();
    // milon/fuse read ours, recorded a failure and wrote its own fields,
    // keeping ours as it found them.
    value["failures"] = serde_json::json!([1_700_000_001u64, 1_700_000_002u64]);
    let stored = read("fuse:billing", value.to_string().as_bytes(), JSON, FRESH).unwrap();
    assert_eq!(stored.failures().len(), 2);
    assert_eq!(stored.generation, 0, "a generation of its own");
}

#[test]
fn an_unreadable_payload_is_an_error_naming_the_key() {
    for (bytes, expected) in [
        (&b"not json"[..], "expected ident"),
        (&b"[1, 2]"[..], "invalid type"),
        (&b"\"closed\""[..], "invalid type"),
        (
            &br#"{"state":"ajar","opened_at":null}"#[..],
            "unknown state \"ajar\"",
        ),
        (
            &br#"{"state":"open","opened_at":null}"#[..],
            "opened_at is null",
        ),
        (
            &br#"{"state":"half_open","opened_at":1,"half_open_inflight":4000000000}"#[..],
            "half_open_inflight is 4000000000",
        ),
        (&br#"{"opened_at":null}"#[..], "missing field `state`"),
    ] {
        let err = read("fuse:billing", bytes, JSON, FRESH).unwrap_err();
        assert_eq!(err.key(), "fuse:billing");
        let text = err.to_string();
        assert!(
            text.starts_with("the payload under fuse:billing is not a circuit"),
            "{text}"
        );
        assert!(text.contains(expected), "{text}");
    }
}

#[test]
fn a_payload_above_the_bound_is_an_error_naming_the_key_and_its_size() {
    let failures = vec!["1700000000"; 100_000].join(",");
    let bytes = format!(r#"{{"state":"closed","opened_at":null,"failures":[{failures}]}}"#);
    assert!(bytes.len() > PayloadError::MAX_BYTES);
    let err = read("fuse:billing", bytes.as_bytes(), JSON, FRESH).unwrap_err();
    assert_eq!(err.key(), "fuse:billing");
    assert!(
        err.to_string().contains(&format!("{} bytes", bytes.len())),
        "{err}"
    );
}

#[test]
fn the_largest_payloads_the_crate_writes_are_well_within_the_bound() {
    let late = u64::MAX / 1_000 * 1_000;
    let threshold = crate::config::MAX_FAILURE_THRESHOLD as usize;
    let failing = Stored {
        generation: u64::MAX,
        epoch: u64::MAX,
        window: counted(vec![late; threshold]),
        reporters: Reporters::from_reports(
            (0..u64::from(crate::config::MAX_MIN_REPORTERS))
                .map(|id| Report {
                    id: u64::MAX - id,
                    at: late,
                })
                .collect(),
        ),
        ..Stored::fresh(u64::MAX)
    };
    let probes = MAX_HALF_OPEN_PROBES;
    let probing = Stored {
        generation: u64::MAX,
        epoch: u64::MAX,
        head: head(State::HalfOpen, u64::MAX, probes - 1, probes, u32::MAX - 1),
        opened_at: late,
        phase: late,
        window: counted(Vec::new()),
        reporters: Reporters::default(),
        leases: (0..probes)
            .map(|_| Lease {
                id: u64::MAX,
                until: late,
            })
            .collect(),
        opened_by: Vec::new(),
        foreign: false,
        ramp: None,
    };
    for stored in [failing, probing] {
        let bytes = write(&stored, WIDTH, Encoding::Json);
        assert!(bytes.len() < PayloadError::MAX_BYTES / 2, "{}", bytes.len());
    }
}

#[test]
fn a_time_in_the_future_of_the_store_s_clock_is_an_error_naming_the_field() {
    let open =
        |opened_at: u64| format!(r#"{{"state":"open","opened_at":{opened_at},"failures":[]}}"#);
    let now = FRESH.lease_until / SEC;
    // A minute ahead is a machine's clock; more is a circuit from the future.
    assert!(read("fuse:billing", open(now + 60).as_bytes(), JSON, FRESH).is_ok());
    for opened_at in [now + 61, u64::MAX / SEC + 1, u64::MAX] {
        let err = read("fuse:billing", open(opened_at).as_bytes(), JSON, FRESH).unwrap_err();
        assert_eq!(err.key(), "fuse:billing");
        let text = err.to_string();
        assert!(
            text.contains(&format!("opened_at holds {opened_at} s")),
            "{text}"
        );
    }
    // A lease may end as late as the longest one after the reading.
    let leased = |until_us: u64| {
        let opened_us = (now - 40) * 1_000_000;
        format!(
            r#"{{"state":"half_open","opened_at":{},"half_open_inflight":1,"fuse":{{"version":1,"generation":1,"epoch":1,"opened_at_us":{opened_us},"failures_us":[],"leases":[{{"id":1,"until_us":{until_us}}}]}}}}"#,
            now - 40
        )
    };
    let longest = u64::try_from(MAX_DURATION.as_micros()).unwrap();
    let until = now * 1_000_000 + longest;
    assert!(read("fuse:billing", leased(until).as_bytes(), JSON, FRESH).is_ok());
    let err = read("fuse:billing", leased(until + 1).as_bytes(), JSON, FRESH).unwrap_err();
    assert!(err.to_string().contains("leases.until_us"), "{err}");
}

#[test]
fn failures_count_only_while_closed() {
    let probing = br#"{"state":"half_open","opened_at":1700000000,"failures":[1700000001,1700000002],"half_open_inflight":0}"#;
    let stored = read("fuse:billing", probing, JSON, FRESH).unwrap();
    assert!(stored.failures().is_empty());
    let ours = Stored {
        window: counted(vec![1_700_000_001 * SEC]),
        ..Stored::fresh(7)
    };
    let mut value: serde_json::Value =
        serde_json::from_slice(&write(&ours, WIDTH, Encoding::Json)).unwrap();
    value["state"] = "open".into();
    value["opened_at"] = 1_700_000_000u64.into();
    value["fuse"]["opened_at_us"] = 1_700_000_000_000_000u64.into();
    let stored = read("fuse:billing", value.to_string().as_bytes(), JSON, FRESH).unwrap();
    assert_eq!(stored.generation, 7, "read by the crate's own fields");
    assert!(stored.failures().is_empty());
}

#[cfg(any(feature = "redis", feature = "sql"))]
#[test]
fn a_clock_reading_is_a_time_only_within_what_the_rules_count_in() {
    let at = |s: u64, us: u64| clock(s, us).map(|t| t.as_nanos());
    assert_eq!(at(1_700_000_000, 12), Some(1_700_000_000_000_012_000));
    assert_eq!(at(1_700_000_000, 999_999), Some(1_700_000_000_999_999_000));
    assert_eq!(at(1_700_000_000, 1_000_000), None);
    assert_eq!(at(u64::MAX, 999_999), None);
    assert_eq!(at(u64::MAX / SEC + 1, 0), None);
    assert_eq!(at(u64::MAX / SEC, 999_999), None, "u64::MAX ns is no time");
    assert!(at(u64::MAX / SEC, 0).is_some());
}

mod encodings;

mod rate;

mod reporters;

mod serialized;

/// A payload of ours: `stored` as this crate writes it, as JSON to edit.
fn ours(stored: &Stored) -> serde_json::Value {
    serde_json::from_slice(&write(stored, WIDTH, Encoding::Json)).unwrap()
}

fn read_value(value: &serde_json::Value) -> Result<Stored, PayloadError> {
    read("fuse:billing", value.to_string().as_bytes(), JSON, FRESH)
}

/// Open at 1,700,000,000 s as the third opening in a row (n = 2), for
/// 120 s; or half-open since 1,700,000,120 s.
fn recovering(state: State) -> Stored {
    let opened_at = 1_700_000_000 * SEC;
    Stored {
        head: head(state, 12, 0, 0, 2),
        opened_at,
        phase: opened_at + 120 * SEC,
        epoch: 12,
        ..Stored::fresh(7)
    }
}

#[test]
fn the_opening_s_end_n_and_half_open_start_are_written_only_in_their_states() {
    let open = ours(&recovering(State::Open));
    assert_eq!(open["fuse"]["retry_at_us"], 1_700_000_120_000_000u64);
    assert_eq!(open["fuse"]["openings"], 3);
    assert!(open["fuse"].get("half_open_since_us").is_none());
    let half_open = ours(&recovering(State::HalfOpen));
    assert_eq!(
        half_open["fuse"]["half_open_since_us"],
        1_700_000_120_000_000u64
    );
    assert_eq!(half_open["fuse"]["openings"], 3);
    assert!(half_open["fuse"].get("retry_at_us").is_none());
    // A closed circuit, even one left with an old phase, has none of them:
    // its payload is the one an increment applies to.
    let closed = Stored {
        head: head(State::Closed, 13, 0, 0, 0),
        epoch: 13,
        phase: 1_700_000_120 * SEC,
        window: Window::Rate(Buckets::default()),
        ..Stored::fresh(7)
    };
    let bytes = write(&closed, WIDTH, Encoding::Json);
    let text = String::from_utf8(bytes.clone()).unwrap();
    for field in ["retry_at_us", "openings", "half_open_since_us"] {
        assert!(!text.contains(field), "{text}");
    }
    assert!(bytes.starts_with(&rate_prefix(7, 13, WIDTH)), "{text}");
    assert!(text.ends_with("[]}}}"), "{text}");
}

#[test]
fn a_payload_of_ours_without_the_recovery_fields_is_a_first_opening_of_the_reader_s_duration() {
    for state in [State::Open, State::HalfOpen] {
        let mut value = ours(&recovering(state));
        let own = value["fuse"].as_object_mut().unwrap();
        for field in ["retry_at_us", "openings", "half_open_since_us"] {
            own.remove(field);
        }
        let stored = read_value(&value).unwrap();
        assert_eq!(stored.generation, 7, "{state:?}: read by our own fields");
        assert_eq!(stored.head.n, 0, "{state:?}: a first opening");
        assert_eq!(
            stored.phase,
            1_700_000_000 * SEC + FRESH.open,
            "{state:?}: open_duration from opened_at (the end of the opening)"
        );
    }
}

#[test]
fn a_payload_milon_wrote_lasts_the_reader_s_open_duration_as_a_first_opening() {
    for (state, successes) in [("open", 0), ("half_open", 1)] {
        let bytes = format!(
            r#"{{"state":"{state}","opened_at":1700000000,"failures":[],"half_open_successes":{successes},"half_open_inflight":0}}"#
        );
        let stored = read("fuse:billing", bytes.as_bytes(), JSON, FRESH).unwrap();
        assert_eq!(stored.head.n, 0, "{state}");
        assert_eq!(stored.phase, 1_700_000_000 * SEC + FRESH.open, "{state}");
        let snapshot = stored.snapshot(&Config::default(), FRESH.now);
        assert_eq!(snapshot.openings, 1, "{state}");
    }
    // Its snapshot while open shows the reader's duration.
    let open = br#"{"state":"open","opened_at":1700000000,"failures":[]}"#;
    let stored = read("fuse:billing", open, JSON, FRESH).unwrap();
    let snapshot = stored.snapshot(&Config::default(), 1_700_000_001 * SEC);
    assert_eq!(
        snapshot.open_for,
        Some(std::time::Duration::from_nanos(FRESH.open))
    );
}

#[test]
fn a_payload_milon_reopened_over_ours_is_read_by_its_fields_not_our_old_opening() {
    // Ours: the third opening in a row, from 1,700,000,000 s for 120 s.
    let mut value = ours(&recovering(State::Open));
    // milon/fuse probed, failed and opened again later, keeping our part
    // as it found it.
    value["opened_at"] = 1_700_000_500u64.into();
    let stored = read_value(&value).unwrap();
    assert_eq!(stored.generation, 0, "a generation of its own");
    assert_eq!(stored.opened_at, 1_700_000_500 * SEC);
    assert_eq!(stored.phase, 1_700_000_500 * SEC + FRESH.open);
    assert_eq!(stored.head.n, 0);
}

#[test]
fn an_opening_a_payload_cannot_mean_is_an_error_naming_the_field() {
    let open = || ours(&recovering(State::Open));
    let opened_us = 1_700_000_000_000_000u64;
    let longest = u64::try_from(MAX_DURATION.as_micros()).unwrap();
    let mut cases: Vec<(serde_json::Value, &str)> = Vec::new();
    for (retry_at_us, expected) in [
        (
            opened_us - 1,
            "retry_at_us holds 1699999999999999 us since the Unix epoch, before",
        ),
        (opened_us + longest + 1, "retry_at_us holds"),
        (
            FRESH.now / 1_000 + 61_000_000 + longest,
            "retry_at_us holds",
        ),
        (u64::MAX, "retry_at_us holds 18446744073709551615 us"),
    ] {
        let mut value = open();
        value["fuse"]["retry_at_us"] = retry_at_us.into();
        cases.push((value, expected));
    }
    for openings in [0, 1 << 32, u64::MAX] {
        for state in [State::Open, State::HalfOpen] {
            let mut value = ours(&recovering(state));
            value["fuse"]["openings"] = openings.into();
            cases.push((value, "openings is"));
        }
    }
    for since_us in [FRESH.now / 1_000 + 61_000_000, u64::MAX] {
        let mut value = ours(&recovering(State::HalfOpen));
        value["fuse"]["half_open_since_us"] = since_us.into();
        cases.push((value, "half_open_since_us holds"));
    }
    for (value, expected) in cases {
        let err = read_value(&value).unwrap_err();
        assert_eq!(err.key(), "fuse:billing");
        let text = err.to_string();
        assert!(text.contains(expected), "{text} (expected {expected:?})");
    }
    // The longest opening, the most openings a payload counts, and a
    // half-open start within a machine's minute ahead are fine.
    let mut value = open();
    value["fuse"]["retry_at_us"] = (opened_us + longest).into();
    value["fuse"]["openings"] = u32::MAX.into();
    let stored = read_value(&value).unwrap();
    assert_eq!(stored.head.n, u32::MAX - 1);
    let mut value = ours(&recovering(State::HalfOpen));
    value["fuse"]["half_open_since_us"] = (FRESH.now / 1_000 + 60_000_000).into();
    assert!(read_value(&value).is_ok());
    // Each field is read only in its states: a closed payload's are
    // ignored.
    let mut closed = ours(&Stored::fresh(7));
    closed["fuse"]["openings"] = 0.into();
    closed["fuse"]["retry_at_us"] = u64::MAX.into();
    assert_eq!(read_value(&closed), Ok(Stored::fresh(7)));
}

#[test]
fn an_opening_read_back_decides_as_the_one_written() {
    // Jitter cuts an opening in nanoseconds; the store keeps its end on a
    // whole microsecond, so the writer and every reader agree.
    let config = Config::builder().open_jitter(0.9).build().unwrap();
    for generation in 1..50 {
        let mut stored = Stored::fresh(generation);
        stored.force_open(&config, 1_700_000_000 * SEC + generation * 1_000, 0);
        let bytes = write(&stored, WIDTH, Encoding::Json);
        assert_eq!(read("fuse:billing", &bytes, JSON, FRESH), Ok(stored));
    }
}

#[test]
fn the_open_payload_docs_stores_md_shows_is_what_the_crate_writes() {
    let shown = br#"{"state":"open","opened_at":1796285997,"failures":[],"half_open_successes":0,"half_open_inflight":0,"fuse":{"version":1,"generation":1384746326794130456,"epoch":5,"opened_at_us":1796285997821531,"failures_us":[],"leases":[],"retry_at_us":1796286005087373,"openings":3}}"#;
    let stored = read("fuse:billing", shown, JSON, FRESH).unwrap();
    assert_eq!(stored.head.n, 2);
    assert_eq!(write(&stored, WIDTH, Encoding::Json), shown);
}
