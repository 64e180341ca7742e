//! Payloads too large to read (SPEC §8): a value above
//! `PayloadError::MAX_BYTES` under a key is an error naming the key, not
//! an outage and not seconds of parsing per call, and the crate writes no
//! more failures than its threshold needs.

use fuse_breaker::store::{PayloadError, Refusal, Store};

use super::{block_on, circuit, config, secs, stores};

/// milon/fuse's payload of a closed circuit with `n` failures at `at`.
fn closed_with_failures(n: usize, at: u64) -> String {
    let failures = vec![at.to_string(); n].join(",");
    format!(
        r#"{{"state":"closed","opened_at":null,"failures":[{failures}],"half_open_successes":0,"half_open_inflight":0}}"#
    )
}

#[test]
fn a_payload_above_the_bound_is_an_error_naming_the_key() {
    block_on(async {
        for (name, store) in stores() {
            let now = store.load("fuse:clock").await.unwrap().now.as_secs();
            // A valid circuit, only too large: 100,000 failures.
            let payload = closed_with_failures(100_000, now - 1);
            assert!(payload.len() > PayloadError::MAX_BYTES, "{}", payload.len());
            store
                .swap("fuse:huge", None, payload.as_bytes(), secs(120), false)
                .await
                .unwrap();
            let fuse = circuit(&store, "huge", &config(3, 1));
            let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
                panic!("{name}: a payload above the bound is read");
            };
            let payload_error = err.payload_error().expect("a payload error");
            assert!(payload_error.key().ends_with("fuse:huge"), "{name}: {err}");
            assert!(
                err.to_string().contains(&payload.len().to_string()),
                "{name}: the size is named: {err}"
            );
            assert!(fuse.store_reachable(), "{name}: no outage");
            assert!(fuse.state().await.is_err(), "{name}");
        }
    });
}

#[test]
fn no_more_failures_are_written_than_the_threshold_needs() {
    block_on(async {
        for (name, store) in stores() {
            let now = store.load("fuse:clock").await.unwrap().now.as_secs();
            // milon/fuse's half-open circuit that kept 50 failures: a probe
            // admitted here writes the key.
            let failures = vec![(now - 1).to_string(); 50].join(",");
            let payload = format!(
                r#"{{"state":"half_open","opened_at":{},"failures":[{failures}],"half_open_successes":0,"half_open_inflight":0}}"#,
                now - 40
            );
            store
                .swap("fuse:kept", None, payload.as_bytes(), secs(120), false)
                .await
                .unwrap();
            let fuse = circuit(&store, "kept", &config(3, 2));
            let probe = fuse.try_acquire().await.unwrap();
            assert!(probe.is_probe(), "{name}");
            let written = store.load("fuse:kept").await.unwrap().payload.unwrap();
            let json: serde_json::Value = serde_json::from_slice(&written).unwrap();
            for field in [&json["failures"], &json["fuse"]["failures_us"]] {
                let kept = field.as_array().expect("a list").len();
                assert!(kept <= 3, "{name}: {kept} failures written: {json}");
            }
            probe.success().await.unwrap();
        }
    });
}

/// A 32 MB value under a key (made on the server, not sent: large enough
/// to take a while to send, small enough not to stall the server the other
/// tests share): the store answers at once that it is too large, by its
/// length alone.
#[cfg(feature = "redis")]
#[test]
fn a_32_mb_value_on_redis_is_answered_by_its_length() {
    use fuse_breaker::store::RedisStore;

    let Some(url) = super::redis_url() else {
        return;
    };
    super::runtime().block_on(async {
        let mut raw = super::on_redis::raw(&url).await;
        let name = super::unique("32mb");
        let key = format!("fuse:{name}");
        let _: u64 = redis::cmd("SETRANGE")
            .arg(&key)
            .arg(32 * 1024 * 1024 - 1)
            .arg("x")
            .query_async(&mut raw)
            .await
            .unwrap();
        let store: std::sync::Arc<dyn Store> = std::sync::Arc::new(RedisStore::open(&url).unwrap());
        let fuse = fuse_breaker::Fuse::builder(&name)
            .store(store)
            .config(config(3, 1))
            .build();
        let refused = fuse.try_acquire().await.map(drop).unwrap_err();
        let _: u64 = redis::cmd("UNLINK")
            .arg(&key)
            .query_async(&mut raw)
            .await
            .unwrap();
        let Refusal::Store(err) = refused else {
            panic!("a 32 MB value is not refused by the store: {refused}");
        };
        assert!(!err.is_unreachable(), "{err}");
        assert_eq!(err.payload_error().expect("a payload error").key(), key);
        assert!(err.to_string().contains("33554432 bytes"), "{err}");
        assert!(fuse.store_reachable());
    });
}
