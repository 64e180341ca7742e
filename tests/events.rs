//! Transition events: one per transition, with its reason, on the thread
//! that made it; nothing on calls that change nothing.

use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};
use std::time::Duration;

use fuse_breaker::{Fuse, State, events::Reason, events::Transition};
use quanta::Mock;

mod common;
use common::secs;

/// A transition as a listener keeps it: its key copied (the listener
/// only borrows it).
#[derive(Clone, Debug)]
struct Seen {
    key: String,
    from: State,
    to: State,
    reason: Reason,
    at: Duration,
}

impl From<&Transition<'_>> for Seen {
    fn from(t: &Transition<'_>) -> Self {
        Seen {
            key: t.key.to_owned(),
            from: t.from,
            to: t.to,
            reason: t.reason,
            at: t.at,
        }
    }
}

type Log = Arc<Mutex<Vec<(Seen, ThreadId)>>>;

fn circuit(threshold: u32, probes: u32) -> (Fuse, Arc<Mock>, Log) {
    let (fuse, mock) = common::circuit("events", common::config(threshold, probes));
    let log: Log = Arc::default();
    let sink = log.clone();
    fuse.on_transition(move |t: &Transition| {
        sink.lock()
            .unwrap()
            .push((Seen::from(t), thread::current().id()));
    });
    (fuse, mock, log)
}

fn reasons(log: &Log) -> Vec<(State, State, Reason)> {
    log.lock()
        .unwrap()
        .iter()
        .map(|(t, _)| (t.from, t.to, t.reason))
        .collect()
}

#[test]
fn every_rule_transition_is_reported_once_with_its_reason_and_time() {
    let (fuse, mock, log) = circuit(2, 1);
    mock.increment(secs(1));
    fuse.try_acquire().unwrap().failure();
    assert!(log.lock().unwrap().is_empty(), "below the threshold");
    fuse.try_acquire().unwrap().failure();
    mock.increment(secs(30));
    fuse.try_acquire().unwrap().failure();
    mock.increment(secs(30));
    fuse.try_acquire().unwrap().success();
    assert_eq!(
        reasons(&log),
        [
            (State::Closed, State::Open, Reason::ThresholdReached),
            (State::Open, State::HalfOpen, Reason::CooldownEnded),
            (State::HalfOpen, State::Open, Reason::ProbeFailed),
            (State::Open, State::HalfOpen, Reason::CooldownEnded),
            (State::HalfOpen, State::Closed, Reason::ProbesPassed),
        ]
    );
    let times: Vec<Duration> = log.lock().unwrap().iter().map(|(t, _)| t.at).collect();
    assert_eq!(times, [secs(1), secs(31), secs(31), secs(61), secs(61)]);
    assert!(
        log.lock()
            .unwrap()
            .iter()
            .all(|(t, _)| t.key == "fuse:events")
    );
}

#[test]
fn manual_changes_are_reported_as_forced_or_reset() {
    let (fuse, _mock, log) = circuit(8, 1);
    fuse.force_open();
    fuse.force_open();
    fuse.force_closed();
    fuse.reset();
    assert_eq!(
        reasons(&log),
        [
            (State::Closed, State::Open, Reason::Forced),
            (State::Open, State::Open, Reason::Forced),
            (State::Open, State::Closed, Reason::Forced),
            (State::Closed, State::Closed, Reason::Reset),
        ]
    );
}

#[test]
fn calls_that_change_nothing_report_nothing() {
    let (fuse, mock, log) = circuit(3, 2);
    for _ in 0..10 {
        fuse.try_acquire().unwrap().success();
        fuse.try_acquire().unwrap().ignore();
    }
    fuse.try_acquire().unwrap().failure();
    fuse.try_acquire().unwrap().success();
    fuse.force_open();
    log.lock().unwrap().clear();
    assert!(fuse.try_acquire().is_err(), "rejections change nothing");
    mock.increment(secs(30));
    let first = fuse.try_acquire().unwrap();
    let second = fuse.try_acquire().unwrap();
    assert!(fuse.try_acquire().is_err());
    second.ignore();
    assert_eq!(
        reasons(&log),
        [(State::Open, State::HalfOpen, Reason::CooldownEnded)],
        "a probe slot taken or released is not a transition"
    );
    drop(first);
}

#[test]
fn the_thread_that_makes_the_transition_reports_it() {
    let (fuse, _mock, log) = circuit(1, 1);
    let fuse = Arc::new(fuse);
    let worker = {
        let fuse = fuse.clone();
        thread::spawn(move || {
            fuse.try_acquire().unwrap().failure();
            thread::current().id()
        })
    };
    let id = worker.join().unwrap();
    let log = log.lock().unwrap();
    assert_eq!(log.len(), 1);
    assert_eq!(log[0].1, id);
}

#[test]
fn concurrent_transitions_are_each_reported_once() {
    let (fuse, mock, log) = circuit(1, 4);
    fuse.force_open();
    mock.increment(secs(30));
    log.lock().unwrap().clear();
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                if let Ok(permit) = fuse.try_acquire() {
                    permit.success();
                }
            });
        }
    });
    let seen = reasons(&log);
    let half_opened = seen
        .iter()
        .filter(|(_, _, r)| *r == Reason::CooldownEnded)
        .count();
    assert_eq!(half_opened, 1, "exactly one caller moved it: {seen:?}");
}
