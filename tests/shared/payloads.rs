//! The payload under a key: what milon/fuse writes is honoured, what this
//! crate writes keeps milon/fuse's five fields, and anything else is an
//! error naming the key (SPEC §5, §8).

use std::time::Duration;

use fuse_breaker::State;
use fuse_breaker::store::{MemoryStore, Refusal, Store};

use super::{block_on, circuit, config, secs};

/// The Unix time of the memory store's clock, in seconds.
async fn unix_now(store: &MemoryStore) -> u64 {
    store.load("fuse:clock").await.unwrap().now.as_secs()
}

#[test]
fn an_open_circuit_milon_wrote_is_honoured() {
    block_on(async {
        let store = std::sync::Arc::new(MemoryStore::frozen());
        let now = unix_now(&store).await;
        let payload = format!(
            r#"{{"state":"open","opened_at":{},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#,
            now - 10
        );
        store.put("fuse:billing", payload.as_bytes(), secs(120));
        let shared: std::sync::Arc<dyn super::SteppedStore> = store.clone();
        let fuse = circuit(&shared, "billing", &config(8, 2));
        let refused = fuse.try_acquire().await.unwrap_err();
        let retry = refused.open_error().expect("open").retry_after();
        assert!(retry <= secs(20) && retry > secs(18), "{retry:?}");
        store.advance(secs(20));
        assert!(fuse.try_acquire().await.unwrap().is_probe());
    });
}

#[test]
fn failures_milon_wrote_count() {
    block_on(async {
        let store = std::sync::Arc::new(MemoryStore::frozen());
        let now = unix_now(&store).await;
        let payload = format!(
            r#"{{"state":"closed","opened_at":null,"failures":[{},{}],"half_open_successes":0,"half_open_inflight":0}}"#,
            now - 2,
            now - 1
        );
        store.put("fuse:billing", payload.as_bytes(), secs(120));
        let shared: std::sync::Arc<dyn super::SteppedStore> = store.clone();
        let fuse = circuit(&shared, "billing", &config(3, 1));
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        assert_eq!(fuse.state().await.unwrap(), State::Open);
    });
}

#[test]
fn a_payload_of_ours_keeps_milon_s_five_fields() {
    block_on(async {
        let store = std::sync::Arc::new(MemoryStore::frozen());
        let shared: std::sync::Arc<dyn super::SteppedStore> = store.clone();
        let fuse = circuit(&shared, "billing", &config(1, 1));
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        let bytes = store.load("fuse:billing").await.unwrap().payload.unwrap();
        let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(value["state"], "open");
        assert!(value["opened_at"].as_u64().is_some());
        // The failure that opened it, as milon/fuse keeps it.
        assert_eq!(value["failures"], serde_json::json!([value["opened_at"]]));
        assert_eq!(value["half_open_successes"], 0);
        assert_eq!(value["half_open_inflight"], 0);
    });
}

#[test]
fn an_unreadable_payload_is_an_error_naming_the_key_and_is_left_alone() {
    block_on(async {
        for bytes in [
            &b"\x00\x01 not json"[..],
            b"[1,2,3]",
            br#"{"state":"ajar"}"#,
        ] {
            let store = std::sync::Arc::new(MemoryStore::frozen());
            store.put("fuse:billing", bytes, Duration::from_mins(1));
            let shared: std::sync::Arc<dyn super::SteppedStore> = store.clone();
            let fuse = circuit(&shared, "billing", &config(1, 1));
            let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
                panic!("not a store error");
            };
            assert_eq!(
                err.payload_error().expect("a payload error").key(),
                "fuse:billing"
            );
            assert!(err.to_string().contains("fuse:billing"), "{err}");
            assert!(fuse.state().await.is_err());
            assert!(fuse.store_reachable(), "an unreadable payload is no outage");
            let kept = store.load("fuse:billing").await.unwrap().payload;
            assert_eq!(kept.as_deref(), Some(bytes), "never overwritten");
        }
    });
}

#[test]
fn a_rate_payload_keeps_milon_s_five_fields_and_carries_the_buckets() {
    block_on(async {
        let store = std::sync::Arc::new(MemoryStore::frozen());
        let shared: std::sync::Arc<dyn super::SteppedStore> = store.clone();
        let rate = fuse_breaker::Config::builder()
            .policy(fuse_breaker::config::Policy::Rate)
            .failure_rate(50)
            .minimum_calls(4)
            .build()
            .unwrap();
        let fuse = circuit(&shared, "billing", &rate);
        for fail in [true, false, false] {
            let permit = fuse.try_acquire().await.unwrap();
            if fail {
                permit.failure().await.unwrap();
            } else {
                permit.success().await.unwrap();
            }
        }
        let read = |bytes: Vec<u8>| serde_json::from_slice::<serde_json::Value>(&bytes).unwrap();
        let closed = read(store.load("fuse:billing").await.unwrap().payload.unwrap());
        assert_eq!(closed["state"], "closed");
        assert!(closed["opened_at"].is_null());
        assert_eq!(
            closed["failures"],
            serde_json::json!([]),
            "milon's list is empty"
        );
        let bucket = unix_now(&store).await / 6;
        assert_eq!(
            closed["fuse"]["rate"],
            serde_json::json!({"width_ns": 6_000_000_000u64, "buckets": [[bucket, 3, 1, 0]]})
        );
        // milon/fuse reads an opened rate circuit as open.
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        let open = read(store.load("fuse:billing").await.unwrap().payload.unwrap());
        assert_eq!(open["state"], "open");
        assert!(open["opened_at"].as_u64().is_some());
        assert_eq!(open["failures"], serde_json::json!([]));
        assert_eq!(open["fuse"]["rate"]["buckets"], serde_json::json!([]));
    });
}
