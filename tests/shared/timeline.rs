//! SPEC §6 through a store, with the calls spread over two processes'
//! circuits for one key: the fleet reproduces the timeline of one circuit.

use fuse_breaker::{Config, State};

use super::{block_on, circuit, secs, stores};

#[test]
fn the_timeline_of_one_circuit_across_two_processes() {
    block_on(async {
        for (name, store) in stores() {
            let config = Config::default();
            let here = circuit(&store, "billing", &config);
            let there = circuit(&store, "billing", &config);
            let both = [&here, &there];

            // 1. Seven counted failures in a minute leave it closed; the
            //    eighth opens it.
            for n in 0..7 {
                store.advance(secs(5));
                both[n % 2]
                    .try_acquire()
                    .await
                    .unwrap()
                    .failure()
                    .await
                    .unwrap();
            }
            assert_eq!(here.state().await.unwrap(), State::Closed, "{name}");
            assert_eq!(there.snapshot().await.unwrap().failures.len(), 7, "{name}");
            there.try_acquire().await.unwrap().failure().await.unwrap();
            assert_eq!(here.state().await.unwrap(), State::Open, "{name}");

            // 2. For the next 30 s every call is rejected, in both.
            for fuse in both {
                let open = fuse.try_acquire().await.unwrap_err();
                let retry = open.open_error().expect("open").retry_after();
                assert!(retry <= secs(30) && retry > secs(29), "{name}: {retry:?}");
            }
            store.advance(secs(29));
            assert!(here.try_acquire().await.is_err(), "{name}: 29 s");

            // 3. The first call at 30 s probes; a second may run at the same
            //    time; a third is rejected.
            store.advance(secs(1));
            let first = here.try_acquire().await.unwrap();
            assert!(first.is_probe());
            let second = there.try_acquire().await.unwrap();
            assert!(second.is_probe());
            let third = here.try_acquire().await.unwrap_err();
            assert_eq!(third.open_error().unwrap().retry_after(), secs(0), "{name}");

            // 4. Two successful probes close it, failures cleared.
            first.success().await.unwrap();
            assert_eq!(there.state().await.unwrap(), State::HalfOpen, "{name}");
            second.success().await.unwrap();
            let closed = here.snapshot().await.unwrap();
            assert_eq!(closed.state, State::Closed, "{name}");
            assert!(closed.failures.is_empty(), "{name}");

            // 5. One counted failure during a probe opens it again, and the
            //    cooldown starts over.
            for _ in 0..8 {
                there.try_acquire().await.unwrap().failure().await.unwrap();
            }
            store.advance(secs(30));
            let probe = here.try_acquire().await.unwrap();
            probe.failure().await.unwrap();
            let reopened = there.try_acquire().await.unwrap_err();
            assert_eq!(
                reopened.open_error().unwrap().retry_after(),
                secs(30),
                "{name}"
            );

            // 6. A success while closed clears the failure list.
            here.force_closed().await.unwrap();
            for _ in 0..3 {
                here.try_acquire().await.unwrap().failure().await.unwrap();
            }
            there.try_acquire().await.unwrap().success().await.unwrap();
            assert!(here.snapshot().await.unwrap().failures.is_empty(), "{name}");
        }
    });
}

#[test]
fn failures_age_out_of_the_window_on_the_store_s_clock() {
    block_on(async {
        for (name, store) in stores() {
            let fuse = circuit(&store, "billing", &super::config(3, 1));
            for _ in 0..2 {
                fuse.try_acquire().await.unwrap().failure().await.unwrap();
            }
            // The window is inclusive: at exactly 60 s both still count.
            store.advance(secs(60));
            assert_eq!(fuse.snapshot().await.unwrap().failures.len(), 2, "{name}");
            store.advance(secs(1));
            assert!(fuse.snapshot().await.unwrap().failures.is_empty(), "{name}");
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{name}");
        }
    });
}
