//! The engine against the reference model, and properties only the engine
//! has (what it writes, and when).

use std::sync::Arc;
use std::time::Duration;

use quanta::{Clock, Mock};

use super::*;
use crate::model::{Admission, Grant, Verdict};

fn engine(config: &Config) -> (Engine, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    (
        Engine::new(
            config.clone(),
            crate::clock::Time::new(clock, false),
            "test",
            crate::events::Events::default(),
        ),
        mock,
    )
}

fn bits(engine: &Engine) -> (u64, u128) {
    (engine.words.head.load(HEAD_LOAD), engine.words.opened.raw())
}

#[test]
fn closed_admission_and_success_write_nothing() {
    let config = Config::default();
    let (engine, _mock) = engine(&config);
    let before = bits(&engine);
    for _ in 0..100 {
        let Admission::Granted(grant) = engine.acquire() else {
            panic!("closed circuit rejected");
        };
        engine.verdict(grant, Verdict::Success);
        engine.verdict(grant, Verdict::Ignore);
    }
    assert_eq!(bits(&engine), before);
}

#[test]
fn open_rejection_writes_nothing_once_stamped() {
    let config = Config::default();
    let (engine, mock) = engine(&config);
    engine.force(model::force_open, crate::events::Reason::Forced);
    let before = bits(&engine);
    mock.increment(Duration::from_secs(1));
    for _ in 0..10 {
        assert!(matches!(engine.acquire(), Admission::Rejected { .. }));
    }
    assert_eq!(bits(&engine), before);
}

#[test]
fn a_missing_opened_record_is_stamped_by_the_first_reader() {
    let config = Config::default();
    let (engine, mock) = engine(&config);
    // Simulate an opener stalled between its two writes: the word says
    // Open in epoch 1, the record is still empty.
    let head = model::force_open(Head::closed(0), 0);
    engine.words.head.store(
        Word::pack(&head, Cursor::default()).bits(),
        std::sync::atomic::Ordering::SeqCst,
    );
    mock.increment(Duration::from_secs(7));
    let Admission::Rejected { retry_after } = engine.acquire() else {
        panic!("an open circuit admitted");
    };
    assert_eq!(
        retry_after,
        config.open_nanos(),
        "the helper's time counts as the opening"
    );
    assert_eq!(engine.snapshot().opened_at, Some(Duration::from_secs(7)));
}

#[test]
fn concurrent_failures_reaching_the_threshold_open_the_circuit() {
    for _ in 0..200 {
        let config = Config::builder().failure_threshold(4).build().unwrap();
        let (engine, _mock) = engine(&config);
        let engine = &engine;
        let grants: Vec<Grant> = (0..4)
            .map(|_| match engine.acquire() {
                Admission::Granted(grant) => grant,
                Admission::Rejected { .. } => panic!("closed circuit rejected"),
            })
            .collect();
        std::thread::scope(|s| {
            for grant in grants {
                s.spawn(move || engine.verdict(grant, Verdict::Failure));
            }
        });
        assert_eq!(engine.state(), State::Open);
    }
}

#[test]
fn half_open_probes_never_exceed_the_limit_under_threads() {
    let config = Config::builder().half_open_probes(3).build().unwrap();
    let (engine, mock) = engine(&config);
    engine.force(model::force_open, crate::events::Reason::Forced);
    mock.increment(Duration::from_secs(30));
    let inflight = std::sync::atomic::AtomicU32::new(0);
    let peak = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for i in 0..2_000u32 {
                    if let Admission::Granted(grant) = engine.acquire() {
                        let now = inflight.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
                        peak.fetch_max(now, std::sync::atomic::Ordering::SeqCst);
                        let snap = engine.snapshot();
                        assert!(snap.half_open_inflight <= 3, "{snap:?}");
                        inflight.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
                        engine.verdict(grant, Verdict::Ignore);
                    }
                    if i % 500 == 0 {
                        std::thread::yield_now();
                    }
                }
            });
        }
    });
    assert!(peak.into_inner() <= 3);
    let snap = engine.snapshot();
    assert_eq!(snap.state, State::HalfOpen);
    assert_eq!(snap.half_open_inflight, 0);
}
