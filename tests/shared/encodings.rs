//! A shared circuit whose store spells its payloads as PHP's
//! `serialize()` of milon/fuse's array (Laravel's cache) runs as on JSON:
//! it opens, rejects and recovers, in strict and cached mode; a store
//! that writes PHP is asked for no increment; and a payload in an
//! encoding the store does not read is an error that says so.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Codec, Counting, Encoding, MemoryStore, Refusal, Store};
use fuse_breaker::{Config, State, config::Policy};

use super::{block_on, config, secs};

/// The encodings a scenario runs in, each with the first bytes of the
/// payloads it writes.
const ENCODINGS: [(Encoding, &[u8]); 2] = [
    (Encoding::Json, b"{\"state\":"),
    (Encoding::Php, b"a:6:{s:5:\"state\";"),
];

/// The payload under `fuse:billing`.
async fn payload(store: &MemoryStore) -> Vec<u8> {
    store.load("fuse:billing").await.unwrap().payload.unwrap()
}

#[test]
fn a_circuit_opens_rejects_and_recovers_on_payloads_of_either_encoding() {
    block_on(async {
        for (encoding, start) in ENCODINGS {
            for staleness in [None, Some(Duration::from_millis(1))] {
                let store = Arc::new(MemoryStore::frozen().with_codec(Codec::new(encoding)));
                let mut builder = fuse_breaker::Fuse::builder("billing")
                    .store(store.clone())
                    .config(config(2, 1));
                if let Some(staleness) = staleness {
                    builder = builder.cached(staleness);
                }
                let fuse = builder.build();
                let case = format!("{encoding:?}, cached {staleness:?}");
                fuse.try_acquire().await.unwrap().failure().await.unwrap();
                let closed = payload(&store).await;
                assert!(
                    closed.starts_with(start),
                    "{case}: {}",
                    String::from_utf8_lossy(&closed)
                );
                fuse.try_acquire().await.unwrap().failure().await.unwrap();
                let open = payload(&store).await;
                assert!(open.starts_with(start), "{case}");
                assert_eq!(fuse.state().await.unwrap(), State::Open, "{case}");
                let refused = fuse.try_acquire().await.unwrap_err();
                assert!(
                    refused.open_error().is_some(),
                    "{case}: rejected while open"
                );
                store.advance(secs(30));
                // Past the staleness bound of the cached mirror.
                std::thread::sleep(Duration::from_millis(2));
                let probe = fuse.try_acquire().await.unwrap();
                assert!(probe.is_probe(), "{case}");
                assert_eq!(fuse.state().await.unwrap(), State::HalfOpen, "{case}");
                probe.success().await.unwrap();
                assert_eq!(fuse.state().await.unwrap(), State::Closed, "{case}");
                let recovered = payload(&store).await;
                assert!(recovered.starts_with(start), "{case}");
                if encoding == Encoding::Php {
                    let text = String::from_utf8_lossy(&recovered);
                    assert!(
                        text.contains(r#"s:5:"state";s:6:"closed";s:9:"opened_at";N;"#),
                        "{text}"
                    );
                }
            }
        }
    });
}

#[test]
fn a_circuit_reads_milon_s_serialized_array() {
    block_on(async {
        let store = Arc::new(MemoryStore::frozen().with_codec(Codec::new(Encoding::Php)));
        let now = store.load("fuse:clock").await.unwrap().now.as_secs();
        let milon = format!(
            r#"a:5:{{s:5:"state";s:4:"open";s:9:"opened_at";i:{};s:8:"failures";a:1:{{i:0;i:{};}}s:19:"half_open_successes";i:0;s:18:"half_open_inflight";i:0;}}"#,
            now - 10,
            now - 10
        );
        store.put("fuse:billing", milon.as_bytes(), secs(120));
        let fuse = fuse_breaker::Fuse::builder("billing")
            .store(store.clone())
            .config(config(8, 1))
            .build();
        let retry = fuse
            .try_acquire()
            .await
            .unwrap_err()
            .open_error()
            .expect("open")
            .retry_after();
        assert!(retry <= secs(20) && retry > secs(18), "{retry:?}");
        store.advance(secs(20));
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        let reopened = String::from_utf8(payload(&store).await).unwrap();
        assert!(
            reopened.starts_with(r#"a:6:{s:5:"state";s:4:"open";s:9:"opened_at";i:"#),
            "{reopened}"
        );
    });
}

/// The `rate` configuration: 50 %, over 20 calls.
fn rate() -> Config {
    Config::builder()
        .policy(Policy::Rate)
        .failure_rate(50)
        .minimum_calls(20)
        .build()
        .expect("a valid configuration")
}

#[test]
fn a_store_that_writes_php_is_asked_for_no_increment() {
    block_on(async {
        for (encoding, verdict_trips) in [(Encoding::Json, 1), (Encoding::Php, 2)] {
            let inner = MemoryStore::frozen().with_codec(Codec::new(encoding));
            let store = Arc::new(Counting::new(inner));
            let fuse = fuse_breaker::Fuse::builder("billing")
                .store(store.clone())
                .config(rate())
                .build();
            // The key's first success names it (a compare-and-set).
            fuse.try_acquire().await.unwrap().success().await.unwrap();
            for _ in 0..3 {
                let permit = fuse.try_acquire().await.unwrap();
                let before = store.round_trips();
                permit.success().await.unwrap();
                // JSON: one increment. PHP: a read and a compare-and-set,
                // with no increment that could apply to nothing first.
                assert_eq!(store.round_trips() - before, verdict_trips, "{encoding:?}");
            }
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.calls, 4, "{encoding:?}: every success counted");
        }
    });
}

#[test]
fn a_payload_in_the_encoding_the_store_does_not_read_is_an_error_that_says_so() {
    block_on(async {
        let json = MemoryStore::frozen();
        let php = Arc::new(MemoryStore::frozen().with_codec(Codec::new(Encoding::Php)));
        let writer = fuse_breaker::Fuse::builder("billing")
            .store(php.clone())
            .build();
        writer.force_open().await.unwrap();
        let serialized = payload(&php).await;
        json.put("fuse:billing", &serialized, secs(120));
        let json = Arc::new(json);
        let reader = fuse_breaker::Fuse::builder("billing")
            .store(json.clone())
            .build();
        let Refusal::Store(err) = reader.try_acquire().await.unwrap_err() else {
            panic!("not a store error");
        };
        let text = err.to_string();
        assert!(text.contains("fuse:billing"), "{text}");
        assert!(text.contains("it holds PHP's serialize()"), "{text}");
        assert!(text.contains("this store reads JSON alone"), "{text}");
        assert!(text.contains("Codec::reading_any"), "{text}");
        assert_eq!(payload(&json).await, serialized, "left alone");
        // A store that reads both (`auto`) reads it: the circuit is open.
        let auto =
            Arc::new(MemoryStore::frozen().with_codec(Codec::new(Encoding::Json).reading_any()));
        auto.put("fuse:billing", &serialized, secs(120));
        let reader = fuse_breaker::Fuse::builder("billing")
            .store(auto.clone())
            .build();
        assert!(
            reader
                .try_acquire()
                .await
                .unwrap_err()
                .open_error()
                .is_some()
        );
        // And writes its own encoding the next time it writes.
        reader.force_closed().await.unwrap();
        assert!(payload(&auto).await.starts_with(b"{"));
    });
}
