//! Times from a payload are checked like any input (SPEC §8): a time far
//! after the store's clock is an unreadable payload naming the key and the
//! field, not a circuit open for centuries while it says "retry after 30 s"
//! (or a probe slot held as long).

use fuse_breaker::store::{Refusal, Store};

use super::{block_on, circuit, config, secs, stores};

#[test]
fn a_time_far_after_the_store_s_clock_is_an_unreadable_payload() {
    block_on(async {
        for (name, store) in stores() {
            let now = store.load("fuse:clock").await.unwrap().now.as_secs();
            let (max, day) = (u64::MAX, now + 86_400);
            let (max_us, day_us) = (u64::MAX, day * 1_000_000);
            let recent = (now - 40) * 1_000_000;
            let cases = [
                (
                    "opened_at",
                    format!(
                        r#"{{"state":"open","opened_at":{max},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
                    ),
                ),
                (
                    "opened_at",
                    format!(
                        r#"{{"state":"open","opened_at":{day},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
                    ),
                ),
                (
                    "failures",
                    format!(
                        r#"{{"state":"closed","opened_at":null,"failures":[{max}],"half_open_successes":0,"half_open_inflight":0}}"#
                    ),
                ),
                (
                    "opened_at_us",
                    format!(
                        r#"{{"state":"open","opened_at":{day},"failures":[],"half_open_successes":0,"half_open_inflight":0,"fuse":{{"version":1,"generation":7,"epoch":3,"opened_at_us":{day_us},"failures_us":[],"leases":[]}}}}"#
                    ),
                ),
                (
                    "failures_us",
                    format!(
                        r#"{{"state":"closed","opened_at":null,"failures":[{now}],"half_open_successes":0,"half_open_inflight":0,"fuse":{{"version":1,"generation":7,"epoch":2,"opened_at_us":null,"failures_us":[{max_us}],"leases":[]}}}}"#
                    ),
                ),
                (
                    "until_us",
                    format!(
                        r#"{{"state":"half_open","opened_at":{},"failures":[],"half_open_successes":0,"half_open_inflight":1,"fuse":{{"version":1,"generation":7,"epoch":4,"opened_at_us":{recent},"failures_us":[],"leases":[{{"id":1,"until_us":{max_us}}}]}}}}"#,
                        now - 40
                    ),
                ),
            ];
            for (i, (field, payload)) in cases.iter().enumerate() {
                let circuit_name = format!("future-{i}");
                let key = format!("fuse:{circuit_name}");
                store
                    .swap(&key, None, payload.as_bytes(), secs(120), false)
                    .await
                    .unwrap();
                let fuse = circuit(&store, &circuit_name, &config(3, 1));
                let refused = fuse.try_acquire().await.unwrap_err();
                let Refusal::Store(err) = refused else {
                    panic!("{name}: {field} in the future is read: {refused}: {payload}");
                };
                let payload_error = err.payload_error().expect("a payload error");
                assert!(payload_error.key().ends_with(&key), "{name}: {err}");
                assert!(err.to_string().contains(field), "{name}: {err}");
                assert!(fuse.store_reachable(), "{name}: no outage");
            }
        }
    });
}

#[test]
fn times_written_a_little_ahead_are_read() {
    // milon/fuse writes its times from the machine's clock, which may run
    // a few seconds ahead of the store's.
    block_on(async {
        for (name, store) in stores() {
            let now = store.load("fuse:clock").await.unwrap().now.as_secs();
            let payload = format!(
                r#"{{"state":"closed","opened_at":null,"failures":[{},{}],"half_open_successes":0,"half_open_inflight":0}}"#,
                now + 5,
                now + 5
            );
            store
                .swap("fuse:ahead", None, payload.as_bytes(), secs(120), false)
                .await
                .unwrap();
            let fuse = circuit(&store, "ahead", &config(3, 1));
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            assert_eq!(
                fuse.state().await.unwrap(),
                fuse_breaker::State::Open,
                "{name}: the two failures counted"
            );
        }
    });
}
