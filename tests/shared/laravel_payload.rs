//! What a Laravel cache key holds: PHP's `serialize()` of milon/fuse's
//! array (the crate's own fields inside, under `fuse`), and with
//! `payload_read=auto` a JSON payload under the key is read too, and
//! written back serialized.

use std::sync::Arc;

use fuse_breaker::State;
use fuse_breaker::store::{RedisStore, Refusal};

use super::on_redis::raw;
use super::{block_on, redis_url, unique};

/// `url` (one server) on database 1, with `params`.
fn on_db1(url: &str, params: &str) -> String {
    format!("{}/1{params}", url.trim_end_matches('/'))
}

async fn get(url: &str, key: &str) -> Option<String> {
    let mut raw = raw(&on_db1(url, "")).await;
    redis::cmd("GET")
        .arg(key)
        .query_async(&mut raw)
        .await
        .unwrap()
}

async fn set(url: &str, key: &str, value: &str) {
    let mut raw = raw(&on_db1(url, "")).await;
    let () = redis::cmd("SET")
        .arg(key)
        .arg(value)
        .arg("EX")
        .arg(120)
        .query_async(&mut raw)
        .await
        .unwrap();
}

#[test]
fn a_laravel_key_holds_php_s_serialize_of_milon_s_array() {
    let Some(url) = redis_url() else { return };
    block_on(async {
        let name = unique("serialized");
        let store = RedisStore::open(&on_db1(&url, "?payload=laravel")).unwrap();
        let redis_key = store.redis_key(&format!("fuse:{name}"));
        let fuse = fuse_breaker::Fuse::builder(&name)
            .store(Arc::new(store))
            .build();
        fuse.force_open().await.unwrap();
        let held = get(&url, &redis_key).await.expect("the key");
        assert!(
            held.starts_with(r#"a:6:{s:5:"state";s:4:"open";s:9:"opened_at";i:"#),
            "{held}"
        );
        assert!(held.contains(r#"s:4:"fuse";s:"#), "{held}");
        fuse.reset().await.unwrap();
    });
}

#[test]
fn the_auto_reading_takes_json_under_a_laravel_key_and_writes_it_serialized() {
    let Some(url) = redis_url() else { return };
    block_on(async {
        let name = unique("auto");
        let strict = RedisStore::open(&on_db1(&url, "?payload=laravel")).unwrap();
        let redis_key = strict.redis_key(&format!("fuse:{name}"));
        let (now, _): (u64, u64) = redis::cmd("TIME")
            .query_async(&mut raw(&url).await)
            .await
            .unwrap();
        let milon = format!(
            r#"{{"state":"open","opened_at":{now},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
        );
        set(&url, &redis_key, &milon).await;

        // Reading PHP alone, JSON is refused, naming the key and the way out.
        let fuse = fuse_breaker::Fuse::builder(&name)
            .store(Arc::new(strict))
            .build();
        let Refusal::Store(err) = fuse.try_acquire().await.map(drop).unwrap_err() else {
            panic!("JSON under a Laravel key read by a store that reads PHP alone");
        };
        let text = err.to_string();
        assert!(text.contains(&format!("fuse:{name}")), "{text}");
        assert!(text.contains("auto"), "{text}");

        // Reading both, it is the circuit, and a write serializes it.
        let auto = RedisStore::open(&on_db1(&url, "?payload=laravel&payload_read=auto")).unwrap();
        let fuse = fuse_breaker::Fuse::builder(&name)
            .store(Arc::new(auto))
            .build();
        assert!(fuse.try_acquire().await.is_err(), "open, read from JSON");
        assert_eq!(fuse.state().await.unwrap(), State::Open);
        fuse.force_closed().await.unwrap();
        let held = get(&url, &redis_key).await.expect("the key");
        assert!(
            held.starts_with(r#"a:6:{s:5:"state";s:6:"closed";"#),
            "{held}"
        );
        fuse.reset().await.unwrap();
    });
}
