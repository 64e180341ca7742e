//! An increment is the model's closed verdict: on random histories, the
//! payload an increment writes is, byte for byte, the one the model's step
//! writes, and an increment never applies where the model would not record
//! the permit's verdict. A failure's or a slow call's increment, read back,
//! opens the circuit exactly where the model's step does, and the opening's
//! step then leaves what the model's leaves.

use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::config::Policy;
use crate::store::model::payload::{self, Fresh};
use crate::store::model::stored::{At, Entry, Opens, Stored};
use crate::store::{Codec, Encoding};
use crate::verdict::Verdict;

/// The codec of a store that reads JSON alone (the one increments apply to).
const JSON: Codec = Codec::new(Encoding::Json);

const SEC: u64 = 1_000_000_000;
const TTL: Duration = Duration::from_mins(2);

fn config(buckets: u32, minimum: u32) -> Config {
    window_config(buckets, minimum, 60)
}

/// `rate` over a window of `window` seconds.
fn window_config(buckets: u32, minimum: u32, window: u64) -> Config {
    quorum_config(buckets, minimum, window, 1)
}

/// `rate` over a window of `window` seconds, slow calls counting, and a
/// quorum of `quorum` reporters.
fn quorum_config(buckets: u32, minimum: u32, window: u64, quorum: u32) -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .window_buckets(buckets)
        .slow_call_duration(Duration::from_secs(1))
        .slow_call_rate(50)
        .min_reporters(quorum)
        .failure_window(Duration::from_secs(window))
        .minimum_calls(minimum)
        .failure_rate(50)
        .build()
        .unwrap()
}

fn permit(stored: &mut Stored, config: &Config, now: u64) -> Option<Ticket> {
    let at = At {
        now,
        lease: SEC,
        lease_id: 7,
        generation: 11,
        draw: 0,
        throttle: None,
    };
    match stored.acquire(config, at).0 {
        Entry::Granted(ticket) => Some(ticket),
        Entry::Rejected { .. } => None,
    }
}

/// How far the store's clock goes back, at most, behind the latest time
/// it showed: less than the minute a payload's times may be ahead of the
/// store's clock, and more than the shorter windows tested (a window of
/// the newest buckets, in which the calls at the clock's time have no
/// bucket). A clock that went back further finds the window's newest
/// buckets in its future, and the payload unreadable (`payload::tests::rate`
/// has that refusal), which is no increment's doing.
const MAX_BACK: u64 = 59 * SEC;

#[derive(Clone, Debug)]
enum Op {
    Success,
    /// A failure, reported by this reporter (SPEC §8's quorum: the
    /// window names it after its buckets).
    Failure(u64),
    /// A slow success, reported by this reporter.
    Slow(u64),
    /// Microseconds to wait.
    Wait(u64),
    /// The clock goes back this many microseconds, no further than
    /// [`MAX_BACK`] behind the latest time it showed.
    Back(u64),
    /// A new permit (of the epoch the circuit is in now).
    Permit,
    ForceClosed,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => Just(Op::Success),
        2 => (0..4u64).prop_map(Op::Failure),
        1 => (0..4u64).prop_map(Op::Slow),
        3 => (0..20_000_000u64).prop_map(Op::Wait),
        1 => (0..MAX_BACK / 1_000).prop_map(Op::Back),
        1 => Just(Op::Permit),
        1 => Just(Op::ForceClosed),
    ]
}

proptest! {
    #[test]
    fn an_increment_writes_what_the_model_writes(
        buckets in prop_oneof![Just(1u32), Just(3), Just(10), Just(60)],
        minimum in 1u32..8,
        window in prop_oneof![Just(6u64), Just(60)],
        quorum in 1u32..4,
        ops in prop::collection::vec(op(), 1..80),
    ) {
        let config = quorum_config(buckets, minimum, window, quorum);
        let width = payload::width(&config);
        let mut now = 1_700_000_000 * SEC;
        let mut latest = now;
        let mut stored = Stored::fresh(11);
        stored.fit(&config);
        let mut ticket = permit(&mut stored, &config, now).unwrap();
        for op in ops {
            let bytes = payload::write(&stored, width, Encoding::Json);
            // Whatever the clock did, no write holds more buckets than the
            // window, and every one is read back.
            if let crate::policy::Window::Rate(window) = &stored.window {
                prop_assert!(window.entries().len() <= buckets as usize, "{:?}", window);
            }
            let fresh = Fresh::at(now, SEC).of(&config);
            prop_assert!(payload::read("fuse:k", &bytes, JSON, fresh).is_ok());
            match op {
                Op::Success if ticket.is_probe() => {
                    prop_assert!(Increment::success(&config, &ticket, TTL).is_none());
                    stored.timed_verdict(&config, &ticket, Verdict::Success, false, Opens::default(), now);
                }
                Op::Success => {
                    let increment = Increment::success(&config, &ticket, TTL).unwrap();
                    let incremented = increment.apply(&bytes, Duration::from_nanos(now));
                    // It applies exactly where the model records a success.
                    prop_assert_eq!(incremented.is_some(), stored.owns_closed(&ticket));
                    let changed =
                        stored.timed_verdict(&config, &ticket, Verdict::Success, false, Opens::default(), now);
                    match incremented {
                        Some(incremented) => {
                            prop_assert!(changed, "an increment where the model records nothing");
                            let by_model = payload::write(&stored, width, Encoding::Json);
                            prop_assert_eq!(
                                String::from_utf8_lossy(&incremented),
                                String::from_utf8_lossy(&by_model)
                            );
                            let fresh = Fresh::at(now, SEC).of(&config);
                            let read = payload::read("fuse:k", &incremented, JSON, fresh).unwrap();
                            prop_assert_eq!(&read.window, &stored.window);
                            prop_assert_eq!((read.generation, read.epoch), (stored.generation, stored.epoch));
                        }
                        None => prop_assert!(
                            !changed || stored.state() != crate::State::Closed,
                            "not applied, yet the model recorded a success"
                        ),
                    }
                }
                Op::Failure(reporter) | Op::Slow(reporter) => {
                    let slow = matches!(op, Op::Slow(_));
                    let verdict = if slow { Verdict::Success } else { Verdict::Failure };
                    reported(&config, &mut stored, &ticket, verdict, slow, reporter, now)?;
                }
                Op::Wait(us) => {
                    now += us * 1_000;
                    latest = latest.max(now);
                }
                Op::Back(us) => now = (now - us * 1_000).max(latest - MAX_BACK),
                Op::Permit => {
                    if let Some(new) = permit(&mut stored, &config, now) {
                        ticket = new;
                    }
                }
                Op::ForceClosed => stored.force_closed(&config),
            }
        }
    }
}

/// A failure's or a slow call's increment against the model's step, on
/// `stored` (which then takes the model's step).
fn reported(
    config: &Config,
    stored: &mut Stored,
    ticket: &Ticket,
    verdict: Verdict,
    slow: bool,
    reporter: u64,
    now: u64,
) -> Result<(), TestCaseError> {
    let width = payload::width(config);
    let bytes = payload::write(stored, width, Encoding::Json);
    let opens = Opens {
        reporter,
        generation: 13,
        hint: None,
    };
    let mut by_model = stored.clone();
    by_model.timed_verdict(config, ticket, verdict, slow, opens, now);
    let Some(increment) = Increment::verdict(config, ticket, verdict, slow, reporter, TTL) else {
        prop_assert!(ticket.is_probe(), "no increment for a closed verdict");
        *stored = by_model;
        return Ok(());
    };
    prop_assert!(increment.answers());
    let applied = increment.apply(&bytes, Duration::from_nanos(now));
    match applied {
        None => prop_assert!(
            !stored.owns_closed(ticket) || stored.reporters.is_empty(),
            "not applied, yet the model records it: {}",
            String::from_utf8_lossy(&bytes)
        ),
        Some(applied) => {
            prop_assert!(stored.owns_closed(ticket), "applied to a stale ticket");
            let fresh = Fresh::at(now, SEC).of(config);
            let mut read = payload::read("fuse:k", &applied, JSON, fresh).unwrap();
            let opened = by_model.state() != crate::State::Closed;
            prop_assert_eq!(read.opens_after(config, ticket, now), opened);
            let written = if opened {
                prop_assert!(read.open_for(config, ticket, opens, now));
                prop_assert!(!read.open_for(config, ticket, opens, now), "opened twice");
                payload::write(&read, width, Encoding::Json)
            } else {
                applied
            };
            let expected = payload::write(&by_model, width, Encoding::Json);
            prop_assert_eq!(
                String::from_utf8_lossy(&written),
                String::from_utf8_lossy(&expected)
            );
        }
    }
    *stored = by_model;
    Ok(())
}

#[test]
fn a_failure_increment_records_its_reporter_and_answers() {
    let config = quorum_config(10, 1, 60, 2);
    let width = payload::width(&config);
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(11);
    stored.fit(&config);
    let ticket = permit(&mut stored, &config, now).unwrap();
    let failure = Increment::verdict(&config, &ticket, Verdict::Failure, false, 7, TTL).unwrap();
    assert_eq!(
        (failure.failed(), failure.slow(), failure.reporter()),
        (1, 0, Some(7))
    );
    assert_eq!(failure.reporters_kept(), 2);
    let at = Duration::from_nanos(now);
    let once = failure
        .apply(&payload::write(&stored, width, Encoding::Json), at)
        .unwrap();
    let text = String::from_utf8_lossy(&once);
    assert!(
        text.ends_with(r#""reporters":[[7,1700000000000000]]}}"#),
        "{text}"
    );
    // A second failure of another reporter: two reporters; again of 7: one
    // entry each.
    let other = Increment::verdict(&config, &ticket, Verdict::Failure, true, 9, TTL).unwrap();
    let twice = other.apply(&once, at).unwrap();
    let again = failure.apply(&twice, at + Duration::from_secs(1)).unwrap();
    let text = String::from_utf8_lossy(&again);
    assert!(
        text.ends_with(r#""reporters":[[9,1700000000000000],[7,1700000001000000]]}}"#),
        "{text}"
    );
    // An ignore, a probe, a reporter a store cannot hold: no increment.
    assert!(Increment::verdict(&config, &ticket, Verdict::Ignore, true, 7, TTL).is_none());
    let too_big = Increment::MAX + 1;
    assert!(Increment::verdict(&config, &ticket, Verdict::Failure, false, too_big, TTL).is_none());
    // Reporters named twice, above the bounds, or a window of failures
    // that names none (an anonymous reporter's): not applied.
    let prefix = String::from_utf8(failure.prefix().to_vec()).unwrap();
    let bucket = failure.bucket(at);
    for tail in [
        r#"},"reporters":[[7,1],[7,2]]}}"#,
        r#"},"reporters":[[1000000000000000,1]]}}"#,
        r#"},"reporters":[[7,9007199254740992]]}}"#,
        r#"},"reporters":[[7,01]]}}"#,
        r#"},"reporters":[[7]]}}"#,
    ] {
        let text = format!("{prefix}[[{bucket},1,0,0]]{tail}");
        assert!(failure.apply(text.as_bytes(), at).is_none(), "{text}");
    }
    let anonymous = format!("{prefix}[[{bucket},2,1,0]]}}}}}}");
    assert!(failure.apply(anonymous.as_bytes(), at).is_none());
    let quiet = format!("{prefix}[[{bucket},2,0,0]]}}}}}}");
    assert!(failure.apply(quiet.as_bytes(), at).is_some());
}

#[test]
fn an_increment_applies_only_to_its_circuit_closed_in_its_epoch() {
    let config = config(10, 1);
    let width = payload::width(&config);
    let now = 1_700_000_000 * SEC;
    let at = Duration::from_nanos(now);
    let mut stored = Stored::fresh(11);
    stored.fit(&config);
    let ticket = permit(&mut stored, &config, now).unwrap();
    let increment = Increment::success(&config, &ticket, TTL).unwrap();
    assert!(
        increment
            .apply(&payload::write(&stored, width, Encoding::Json), at)
            .is_some()
    );
    // Another generation, another epoch, open, a count window, milon's.
    let mut other = Stored::fresh(12);
    other.fit(&config);
    assert!(
        increment
            .apply(&payload::write(&other, width, Encoding::Json), at)
            .is_none()
    );
    let mut opened = stored.clone();
    opened.force_open(&config, now, 9);
    assert!(
        increment
            .apply(&payload::write(&opened, width, Encoding::Json), at)
            .is_none()
    );
    opened.force_closed(&config);
    assert!(
        increment
            .apply(&payload::write(&opened, width, Encoding::Json), at)
            .is_none()
    );
    let count = Stored {
        window: crate::store::model::stored::counted(Vec::new()),
        ..stored.clone()
    };
    assert!(
        increment
            .apply(&payload::write(&count, width, Encoding::Json), at)
            .is_none()
    );
    let milon = br#"{"state":"closed","opened_at":null,"failures":[],"half_open_successes":0,"half_open_inflight":0}"#;
    assert!(increment.apply(milon, at).is_none());
    // A written payload with spaces, a number past the bound, or a sum past
    // it: not applied (the model's step decides).
    let prefix = String::from_utf8(increment.prefix().to_vec()).unwrap();
    let bucket = increment.bucket(at);
    for body in [
        format!("[ [{bucket},1,0,0]]"),
        format!("[[{},1,0,0]]", Increment::MAX + 1),
        format!("[[{bucket},{},0,0]]", Increment::MAX),
        "[[1,2,3]]".to_owned(),
        "{}".to_owned(),
    ] {
        let text = format!("{prefix}{body}}}}}}}");
        assert!(increment.apply(text.as_bytes(), at).is_none(), "{text}");
    }
    // What follows the buckets: `}}}` or the window's reporters, else not
    // applied.
    for (tail, kept) in [
        ("}}}", true),
        ("},\"reporters\":[[7,1],[0,2]]}}", true),
        ("},\"reporters\":[]}}", true),
        ("},\"reporters\":[[7,\"x\"]]}}", false),
        ("},\"reporters\":[[7,1]]}}}", false),
        ("},\"other\":[]}}", false),
        ("}}", false),
        ("} }}", false),
    ] {
        let text = format!("{prefix}[[{bucket},1,0,0]]{tail}");
        let applied = increment.apply(text.as_bytes(), at);
        assert_eq!(applied.is_some(), kept, "{text}");
        if let Some(applied) = applied {
            assert!(applied.ends_with(tail.as_bytes()), "{tail}");
        }
    }
    // Only under `rate`, with whole microseconds, a named generation.
    assert!(Increment::success(&Config::default(), &ticket, TTL).is_none());
    let odd = Config::builder()
        .policy(Policy::Rate)
        .failure_window(Duration::from_nanos(7_000_007))
        .window_buckets(7)
        .build()
        .unwrap();
    assert!(Increment::success(&odd, &ticket, TTL).is_none());
    let unnamed = Ticket {
        generation: 0,
        ..ticket
    };
    assert!(Increment::success(&config, &unnamed, TTL).is_none());
}
