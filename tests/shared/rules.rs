//! SPEC §3 and §8 rules through a store: stale verdicts, probe slots and
//! their leases, manual control, nothing written when nothing changes.

use std::sync::{Arc, Mutex};

use fuse_breaker::{State, events::Reason, events::Transition};

use super::{block_on, circuit, config, secs, stores};

#[test]
fn a_verdict_from_before_a_manual_change_is_stale() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &config(1, 1));
            let early = fuse.try_acquire().await.unwrap();
            fuse.force_open().await.unwrap();
            fuse.force_closed().await.unwrap();
            early.failure().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");

            let before_reset = fuse.try_acquire().await.unwrap();
            fuse.reset().await.unwrap();
            before_reset.failure().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}

#[test]
fn an_ignored_probe_frees_its_slot_and_moves_nothing() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &config(1, 1));
            fuse.force_open().await.unwrap();
            store.advance(secs(30));
            let probe = fuse.try_acquire().await.unwrap();
            assert!(fuse.try_acquire().await.is_err(), "{name}: one slot");
            probe.ignore().await.unwrap();
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::HalfOpen, "{name}");
            assert_eq!(snapshot.half_open_inflight, 0, "{name}");
            let again = fuse.try_acquire().await.unwrap();
            again.success().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}

#[test]
fn a_probe_without_a_verdict_frees_its_slot_when_its_lease_ends() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = fuse_breaker::Fuse::builder("billing")
                .store(store.clone().as_store())
                .config(config(1, 1))
                .lease(secs(5))
                .build();
            fuse.force_open().await.unwrap();
            store.advance(secs(30));
            // A process that died mid-probe: the permit never concludes.
            std::mem::forget(fuse.try_acquire().await.unwrap());
            store.advance(secs(4));
            assert!(
                fuse.try_acquire().await.is_err(),
                "{name}: the slot is held"
            );
            store.advance(secs(1));
            let probe = fuse.try_acquire().await.expect("the lease ended");
            probe.success().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}

#[test]
fn one_transition_one_report_in_the_process_that_made_it() {
    block_on(async {
        for (name, store) in stores() {
            let here = circuit(&store, "billing", &config(2, 1));
            let there = circuit(&store, "billing", &config(2, 1));
            let seen: Arc<Mutex<Vec<(&str, Reason)>>> = Arc::default();
            for (who, fuse) in [("here", &here), ("there", &there)] {
                let seen = seen.clone();
                fuse.on_transition(move |t: &Transition| {
                    seen.lock().unwrap().push((who, t.reason));
                });
            }
            here.try_acquire().await.unwrap().failure().await.unwrap();
            there.try_acquire().await.unwrap().failure().await.unwrap();
            store.advance(secs(30));
            here.try_acquire().await.unwrap().success().await.unwrap();
            there.force_open().await.unwrap();
            here.reset().await.unwrap();
            assert_eq!(
                *seen.lock().unwrap(),
                [
                    ("there", Reason::ThresholdReached),
                    ("here", Reason::CooldownEnded),
                    ("here", Reason::ProbesPassed),
                    ("there", Reason::Forced),
                    ("here", Reason::Reset),
                ],
                "{name}"
            );
        }
    });
}

#[test]
fn nothing_is_written_when_nothing_changes() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &config(3, 1));
            for _ in 0..10 {
                fuse.try_acquire().await.unwrap().success().await.unwrap();
                fuse.try_acquire().await.unwrap().ignore().await.unwrap();
            }
            assert_eq!(store.writes(), 0, "{name}: closed calls without failures");
            let stale = fuse.try_acquire().await.unwrap();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            assert_eq!(store.writes(), 2, "{name}: a failure and its clearing");
            fuse.force_open().await.unwrap();
            let writes = store.writes();
            stale.failure().await.unwrap();
            assert!(fuse.try_acquire().await.is_err());
            assert_eq!(
                store.writes(),
                writes,
                "{name}: a stale verdict, a rejection"
            );
        }
    });
}

#[test]
fn owned_permits_end_on_other_threads_as_borrowed_ones_do() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = Arc::new(circuit(&store, "billing", &config(2, 1)));
            let first = fuse.try_acquire_owned().await.unwrap();
            let second = fuse.try_acquire_owned().await.unwrap();
            assert!(first.from_store() && !first.is_probe(), "{name}");
            // The verdicts' futures are made on other threads and own all
            // they need.
            let verdicts: Vec<_> = [first, second]
                .into_iter()
                .map(|permit| std::thread::spawn(move || permit.failure()))
                .map(|thread| thread.join().unwrap())
                .collect();
            for verdict in verdicts {
                verdict.await.unwrap();
            }
            assert_eq!(fuse.state().await.unwrap(), State::Open, "{name}");

            store.advance(secs(30));
            let probe = fuse.try_acquire_owned().await.unwrap();
            assert!(probe.is_probe(), "{name}");
            assert!(fuse.try_acquire_owned().await.is_err(), "{name}: one slot");
            probe.success().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}
