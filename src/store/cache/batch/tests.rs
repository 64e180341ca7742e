use super::*;
use crate::config::Policy;
use crate::store::model::stored::{At, Entry, Opens};
use std::time::Duration;

const SEC: u64 = 1_000_000_000;

fn config() -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .minimum_calls(4)
        .failure_rate(50)
        .window_buckets(10)
        .failure_window(Duration::from_mins(1))
        .build()
        .unwrap()
}

fn closed_permit(stored: &mut Stored, config: &Config, now: u64) -> Ticket {
    let at = At {
        now,
        lease: SEC,
        lease_id: 1,
        generation: 9,
        draw: 0,
        throttle: None,
    };
    match stored.acquire(config, at).0 {
        Entry::Granted(ticket) => ticket,
        other @ Entry::Rejected { .. } => panic!("not granted: {other:?}"),
    }
}

#[test]
fn a_batch_records_as_its_successes_one_by_one() {
    let config = config();
    let now = 1_700_000_000 * SEC;
    let mut one_by_one = Stored::fresh(9);
    let ticket = closed_permit(&mut one_by_one, &config, now);
    let mut batched = one_by_one.clone();
    // Successes 25 s, 24 s and 1 s before the batch is sent (6 s
    // buckets; 1,700,000,000 s is 2 s into one).
    let pending = Pending::default();
    let sent = 100 * SEC;
    for ago in [25, 24, 24, 1] {
        pending.add(
            ticket,
            sent - ago * SEC,
            crate::store::model::payload::width(&config),
        );
        one_by_one.timed_verdict(
            &config,
            &ticket,
            Verdict::Success,
            false,
            Opens::default(),
            now - ago * SEC,
        );
    }
    assert_eq!(pending.calls(), 4);
    let sending = pending.take(sent);
    assert_eq!(pending.calls(), 4, "being sent: still waiting");
    let batch = sending.last().unwrap().clone();
    drop(sending);
    assert_eq!(pending.calls(), 0, "sent");
    assert_eq!(batch.spans, vec![(75 * SEC, 3), (99 * SEC, 1)]);
    assert!(batched.record_batch(&config, &batch, now));
    assert_eq!(batched.snapshot(&config, now).calls, 4);
    // Each span counts in the store's bucket of its first success: the
    // same buckets as one by one here.
    assert_eq!(batched.window, one_by_one.window);
}

#[test]
fn a_batch_of_an_ended_epoch_changes_nothing() {
    let config = config();
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(9);
    let ticket = closed_permit(&mut stored, &config, now);
    let pending = Pending::default();
    pending.add(ticket, 0, SEC);
    let batch = pending.take(0).last().unwrap().clone();
    stored.force_open(&config, now, 9);
    let before = stored.clone();
    assert!(!stored.record_batch(&config, &batch, now));
    assert_eq!(stored, before);
    // Under `count` a success records nothing to batch.
    let count = Config::default();
    let mut closed = Stored::fresh(9);
    let ticket = closed_permit(&mut closed, &count, now);
    let batch = Batch {
        ticket,
        spans: vec![(0, 3)],
        taken: 0,
    };
    assert!(!closed.record_batch(&count, &batch, now));
}

#[test]
fn a_success_of_another_permit_starts_a_batch_of_its_own() {
    let config = config();
    let now = 1_700_000_000 * SEC;
    let mut stored = Stored::fresh(9);
    let first = closed_permit(&mut stored, &config, now);
    let pending = Pending::default();
    pending.add(first, 0, SEC);
    pending.add(first, 1, SEC);
    stored.force_closed(&config);
    let second = closed_permit(&mut stored, &config, now);
    assert_ne!(first, second);
    pending.add(second, 2, SEC);
    let batches = pending.take(3);
    let kept: Vec<_> = batches.iter().map(|b| (b.ticket, b.calls())).collect();
    assert_eq!(kept, vec![(first, 2), (second, 1)]);
    // Only the one of the epoch the circuit is in counts.
    let mut sent = stored.clone();
    let changed: Vec<bool> = batches
        .iter()
        .map(|batch| sent.record_batch(&config, batch, now))
        .collect();
    assert_eq!(changed, vec![false, true]);
    assert_eq!(sent.snapshot(&config, now).calls, 1);
    // No more than a few batches wait.
    for epoch in 0..10 {
        let ticket = Ticket { epoch, ..first };
        pending.add(ticket, 0, SEC);
    }
    assert_eq!(pending.take(0).len(), MAX_BATCHES);
}

/// What a process that waits for its batches to be sent relies on (it
/// then reads how many were lost): once no success is shown as waiting,
/// every success counted before is sent or lost, and shown as lost if its
/// step was not answered. A batch taken to be sent, and a step's end,
/// never show a moment with the successes in neither count.
#[test]
fn a_success_is_always_waiting_sent_or_lost() {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    let config = config();
    let now = 1_700_000_000 * SEC;
    let ticket = closed_permit(&mut Stored::fresh(9), &config, now);
    let pending = Pending::default();
    let (added, done) = (AtomicU64::new(0), AtomicBool::new(false));
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Every step fails: each success ends up lost.
            for i in 0..200_000_u64 {
                pending.add(ticket, i, SEC);
                added.fetch_add(1, Ordering::SeqCst);
                drop(pending.take(i));
            }
            done.store(true, Ordering::SeqCst);
        });
        let mut checked = 0_u64;
        while !done.load(Ordering::SeqCst) {
            let before = added.load(Ordering::SeqCst);
            if pending.calls() == 0 {
                let lost = pending.lost();
                assert!(
                    lost >= before,
                    "{before} counted, none waiting, {lost} lost"
                );
                checked += 1;
            }
        }
        assert!(checked > 0, "the reader never found the batch empty");
    });
    assert_eq!((pending.calls(), pending.lost()), (0, 200_000));
}
