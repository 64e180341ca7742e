//! SPEC §10's server hints through a store: a failure's hint reaches the
//! store from a strict circuit and from a cached one alike (cached mode
//! sends every failure), and the opening it causes lasts the hint, capped
//! at `max_open_duration`, for every circuit on the key.

use std::time::Duration;

use fuse_breaker::Config;

use super::{block_on, circuit, secs, stores};

/// Opened by one failure for 1 s, at most 60 s, one probe.
fn hinted() -> Config {
    Config::builder()
        .failure_threshold(1)
        .half_open_probes(1)
        .open_duration(secs(1))
        .max_open_duration(secs(60))
        .build()
        .expect("a valid configuration")
}

const STALENESS: Duration = Duration::from_millis(50);

#[test]
fn a_failure_s_hint_reaches_the_store_from_a_strict_and_a_cached_circuit() {
    block_on(async {
        for (name, store) in stores() {
            for cached in [false, true] {
                let key = if cached { "cached" } else { "strict" };
                let builder = fuse_breaker::Fuse::builder(key)
                    .store(store.clone().as_store())
                    .config(hinted());
                let fuse = if cached {
                    builder.cached(STALENESS).build()
                } else {
                    builder.build()
                };
                let reader = circuit(&store, key, &hinted());
                // A quiet closed circuit, then a failure with a hint.
                fuse.try_acquire().await.unwrap().success().await.unwrap();
                let permit = fuse.try_acquire().await.unwrap();
                permit.failure_retry_after(secs(10)).await.unwrap();
                let snapshot = reader.snapshot().await.unwrap();
                assert_eq!(snapshot.open_for, Some(secs(10)), "{name} {key}");
                let refused = reader.try_acquire().await.unwrap_err();
                let open = refused.open_error().expect("open");
                assert_eq!(open.retry_after(), secs(10), "{name} {key}");
                // The circuit that failed (its mirror, when cached) rejects
                // until the hinted end too.
                let refused = fuse.try_acquire().await.unwrap_err();
                let retry_after = refused.open_error().expect("open").retry_after();
                assert!(
                    retry_after <= secs(10) && retry_after > secs(9),
                    "{name} {key}: {retry_after:?}"
                );
                // A failed probe's hint beyond the longest opening: the
                // longest opening.
                store.advance(secs(10));
                tokio::time::sleep(2 * STALENESS).await;
                let probe = fuse.try_acquire().await.unwrap();
                assert!(probe.is_probe(), "{name} {key}");
                probe.failure_retry_after(secs(3_600)).await.unwrap();
                let snapshot = reader.snapshot().await.unwrap();
                assert_eq!(
                    (snapshot.open_for, snapshot.openings),
                    (Some(secs(60)), 2),
                    "{name} {key}"
                );
            }
        }
    });
}
