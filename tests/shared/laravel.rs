//! Laravel's cache on Redis (milon/fuse's default store): with the store
//! option, a circuit under `fuse:NAME` lives at
//! `laravel_database_laravel_cache_fuse:NAME` (Laravel's Redis prefix,
//! then its cache's, then the key; custom prefixes likewise) in the URL's
//! database, for every operation; the listing shows circuits' keys; the
//! announcements of a Laravel key reach cached circuits. On one server
//! (in database 1, Laravel's `REDIS_CACHE_DB`), on Sentinel's primary (in
//! database 1 too) and on a cluster (in the key's slot). What the key
//! holds (PHP's `serialize()`) is `laravel_payload.rs`'s.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{LaravelCache, RedisStore, SharedFuse, Store, StoreOptions};
use fuse_breaker::{State, config::PayloadKind};
use redis::aio::MultiplexedConnection;

use super::announced::eventually;
use super::on_redis::raw;
use super::{block_on, redis_cluster_url, redis_url, unique};

/// The Redis key of the circuit under `key` with Laravel's defaults,
/// spelt out.
fn laravel_key(key: &str) -> String {
    format!("laravel_database_laravel_cache_{key}")
}

/// `url` (one server, no database) on database `db`, with `params`.
fn on_db(url: &str, db: u8, params: &str) -> String {
    format!("{}/{db}{params}", url.trim_end_matches('/'))
}

/// A raw connection to `url` on database `db`.
async fn raw_on(url: &str, db: u8) -> MultiplexedConnection {
    let mut raw = raw(url).await;
    let () = redis::cmd("SELECT")
        .arg(db)
        .query_async(&mut raw)
        .await
        .unwrap();
    raw
}

async fn exists(raw: &mut MultiplexedConnection, key: &str) -> bool {
    redis::cmd("EXISTS")
        .arg(key)
        .query_async::<u64>(raw)
        .await
        .unwrap()
        == 1
}

/// Opens the circuit `name` on `store`, and sees it open through it.
async fn opened(store: Arc<dyn Store>, name: &str) -> SharedFuse {
    let fuse = fuse_breaker::Fuse::builder(name).store(store).build();
    fuse.force_open().await.unwrap();
    assert_eq!(fuse.state().await.unwrap(), State::Open);
    fuse
}

#[test]
fn a_laravel_circuit_lives_at_laravel_s_cache_key_in_database_1() {
    let Some(url) = redis_url() else { return };
    block_on(async {
        let name = unique("laravel");
        let key = format!("fuse:{name}");
        let store = RedisStore::open(&on_db(&url, 1, "?payload=laravel")).unwrap();
        assert_eq!(
            store.redis_key("fuse:billing"),
            "laravel_database_laravel_cache_fuse:billing"
        );
        let fuse = opened(Arc::new(store), &name).await;
        assert_eq!(fuse.key(), key);

        let mut db1 = raw_on(&url, 1).await;
        assert!(
            exists(&mut db1, &laravel_key(&key)).await,
            "written at Laravel's key"
        );
        assert!(!exists(&mut db1, &key).await, "not at the circuit's key");
        let ttl: i64 = redis::cmd("PTTL")
            .arg(laravel_key(&key))
            .query_async(&mut db1)
            .await
            .unwrap();
        assert!(ttl > 0, "it expires: {ttl}");
        let mut db0 = raw_on(&url, 0).await;
        assert!(
            !exists(&mut db0, &laravel_key(&key)).await,
            "in database 1 alone"
        );
        assert!(!exists(&mut db0, &key).await);

        fuse.force_closed().await.unwrap();
        assert_eq!(fuse.state().await.unwrap(), State::Closed);
        fuse.reset().await.unwrap();
        assert!(
            !exists(&mut db1, &laravel_key(&key)).await,
            "reset deletes Laravel's key"
        );
    });
}

#[test]
fn laravel_s_prefixes_are_the_application_s() {
    let Some(url) = redis_url() else { return };
    block_on(async {
        let mut db1 = raw_on(&url, 1).await;
        // The URL's parameters.
        let name = unique("laravel-shop");
        let store = RedisStore::open(&on_db(
            &url,
            1,
            "?payload=laravel&laravel_redis_prefix=shop_database_&laravel_cache_prefix=shop%3Acache_",
        ))
        .unwrap();
        let fuse = opened(Arc::new(store), &name).await;
        let held = format!("shop_database_shop:cache_fuse:{name}");
        assert!(exists(&mut db1, &held).await, "{held}");
        fuse.reset().await.unwrap();
        assert!(!exists(&mut db1, &held).await, "{held}");

        // The store's option, with empty prefixes.
        let name = unique("laravel-bare");
        let store = RedisStore::open(&on_db(&url, 1, ""))
            .unwrap()
            .laravel_cache(LaravelCache::new("", "app_cache_").unwrap());
        opened(Arc::new(store), &name).await;
        assert!(exists(&mut db1, &format!("app_cache_fuse:{name}")).await);

        // Options (as settings give them): the URL's parameter wins.
        let name = unique("laravel-options");
        let mut options = StoreOptions::default();
        options.payload = Some(PayloadKind::Laravel);
        options.laravel_redis_prefix = Some("settings_".to_owned());
        options.laravel_cache_prefix = Some("cache_".to_owned());
        let store =
            fuse_breaker::store::open_with(&on_db(&url, 1, "?laravel_redis_prefix=url_"), &options)
                .unwrap();
        opened(store, &name).await;
        assert!(exists(&mut db1, &format!("url_cache_fuse:{name}")).await);
        assert!(!exists(&mut db1, &format!("settings_cache_fuse:{name}")).await);
    });
}

#[test]
fn the_listing_of_a_laravel_store_shows_circuit_keys() {
    let Some(url) = redis_url() else { return };
    block_on(async {
        let app = unique("laravel-list");
        let laravel: Arc<dyn Store> =
            Arc::new(RedisStore::open(&on_db(&url, 1, "?payload=laravel")).unwrap());
        for name in ["billing", "search"] {
            let fuse = fuse_breaker::Fuse::builder(name)
                .store(laravel.clone())
                .app(&app)
                .build();
            fuse.force_open().await.unwrap();
        }
        // A circuit of a plain store in the same database.
        let plain: Arc<dyn Store> = Arc::new(RedisStore::open(&on_db(&url, 1, "")).unwrap());
        fuse_breaker::Fuse::builder("plain")
            .store(plain.clone())
            .app(&app)
            .build()
            .force_open()
            .await
            .unwrap();

        let prefix = format!("fuse:{app}:");
        let page = laravel.keys(&prefix, None, 100).await.unwrap();
        assert_eq!(
            page.keys,
            [format!("fuse:{app}:billing"), format!("fuse:{app}:search")]
        );
        assert!(page.is_last() && page.not_utf8.is_empty(), "{page:?}");
        let page = plain.keys(&prefix, None, 100).await.unwrap();
        assert_eq!(page.keys, [format!("fuse:{app}:plain")]);
        // Page by page, the same keys.
        let first = laravel.keys(&prefix, None, 1).await.unwrap();
        let mut all = first.keys.clone();
        let mut next = first.next;
        while let Some(after) = next {
            let page = laravel.keys(&prefix, Some(&after), 1).await.unwrap();
            all.extend(page.keys);
            next = page.next;
        }
        all.sort();
        all.dedup();
        assert_eq!(
            all,
            [format!("fuse:{app}:billing"), format!("fuse:{app}:search")]
        );
    });
}

/// A cached circuit on `here` hears `there`'s opening of the circuit
/// `name` at once (long before its staleness), once `subscribed` says
/// `here` listens for it.
async fn heard(
    here: Arc<RedisStore>,
    there: Arc<RedisStore>,
    name: &str,
    subscribed: impl AsyncFn() -> bool,
) {
    let cached = fuse_breaker::Fuse::builder(name)
        .store(here.clone())
        .cached(Duration::from_mins(1))
        .build();
    cached.try_acquire().await.unwrap().success().await.unwrap();
    eventually("subscribed", async || subscribed().await).await;
    // The new subscription forgets mirrors once it is made.
    tokio::time::sleep(Duration::from_millis(50)).await;
    cached.try_acquire().await.unwrap().success().await.unwrap();
    fuse_breaker::Fuse::builder(name)
        .store(there)
        .build()
        .force_open()
        .await
        .unwrap();
    eventually("the opening heard", async || {
        match cached.try_acquire().await {
            Ok(permit) => {
                permit.ignore().await.unwrap();
                false
            }
            Err(refused) => refused.open_error().is_some(),
        }
    })
    .await;
}

/// The subscribers of `channel` on the server at `url`.
async fn subscribers(url: &str, channel: &str) -> u64 {
    let mut raw = raw(url).await;
    let counts: Vec<(String, u64)> = redis::cmd("PUBSUB")
        .arg("NUMSUB")
        .arg(channel)
        .query_async(&mut raw)
        .await
        .unwrap();
    counts.first().map_or(0, |(_, n)| *n)
}

#[test]
fn announcements_of_laravel_keys_reach_cached_circuits() {
    let Some(url) = redis_url() else { return };
    block_on(async {
        let channel = unique("laravel-changes");
        let at = on_db(&url, 1, "?payload=laravel");
        let here = Arc::new(RedisStore::open(&at).unwrap().with_channel(&channel));
        let there = Arc::new(RedisStore::open(&at).unwrap().with_channel(&channel));
        heard(here.clone(), there, &unique("laravel-heard"), async || {
            subscribers(&url, &channel).await == 1
        })
        .await;
        assert_eq!(here.changes().unwrap().dropped(), 0);
    });
}

mod on_sentinel {
    use super::*;

    fn sentinel_url() -> Option<String> {
        crate::common::server("FUSE_TEST_REDIS_SENTINEL_URL", "Redis Sentinel")
    }

    #[test]
    fn on_sentinel_s_primary_a_laravel_circuit_lives_at_laravel_s_key_in_database_1() {
        let Some(url) = sentinel_url() else { return };
        block_on(async {
            let at = format!("{url}/1?payload=laravel");
            let channel = unique("laravel-changes");
            let here = Arc::new(RedisStore::open(&at).unwrap().with_channel(&channel));
            let there = Arc::new(RedisStore::open(&at).unwrap().with_channel(&channel));
            let name = unique("laravel-sentinel");
            let key = format!("fuse:{name}");
            opened(there.clone(), &name).await;
            let primary = format!(
                "redis://{}",
                there
                    .changes()
                    .unwrap()
                    .primary()
                    .expect("the primary found")
            );
            let mut db1 = raw_on(&primary, 1).await;
            assert!(
                exists(&mut db1, &laravel_key(&key)).await,
                "on the primary, database 1"
            );
            assert!(!exists(&mut db1, &key).await);
            let mut db0 = raw_on(&primary, 0).await;
            assert!(!exists(&mut db0, &laravel_key(&key)).await);
            let page = there.keys(&key, None, 100).await.unwrap();
            assert_eq!(page.keys, std::slice::from_ref(&key));
            fuse_breaker::Fuse::builder(&name)
                .store(there.clone())
                .build()
                .reset()
                .await
                .unwrap();
            assert!(!exists(&mut db1, &laravel_key(&key)).await);

            heard(here, there, &unique("laravel-heard"), async || {
                subscribers(&primary, &channel).await == 1
            })
            .await;
        });
    }
}

mod on_cluster {
    use super::*;
    use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

    #[test]
    fn on_a_cluster_a_laravel_circuit_lives_at_laravel_s_key_in_its_slot() {
        let Some(url) = redis_cluster_url() else {
            return;
        };
        block_on(async {
            let at = format!("{url}?payload=laravel");
            let channel = unique("laravel-changes");
            let here = Arc::new(RedisStore::open(&at).unwrap().with_channel(&channel));
            let there = Arc::new(RedisStore::open(&at).unwrap().with_channel(&channel));
            let nodes: Vec<String> = url
                .trim_start_matches("redis+cluster://")
                .split(',')
                .map(|node| format!("redis://{node}"))
                .collect();
            let client = redis::cluster::ClusterClient::new(nodes).unwrap();
            let mut cluster = client.get_async_connection().await.unwrap();

            let name = unique("laravel-cluster");
            let key = format!("fuse:{name}");
            opened(there.clone(), &name).await;
            // Routed by the key to its slot's primary.
            let held: u64 = redis::cmd("EXISTS")
                .arg(laravel_key(&key))
                .query_async(&mut cluster)
                .await
                .unwrap();
            assert_eq!(held, 1, "at Laravel's key, in its slot");
            let plain: u64 = redis::cmd("EXISTS")
                .arg(&key)
                .query_async(&mut cluster)
                .await
                .unwrap();
            assert_eq!(plain, 0);
            let page = there.keys(&key, None, 100).await.unwrap();
            assert_eq!(page.keys, std::slice::from_ref(&key));

            // The announcements of Laravel's key are on its slot's sharded
            // channel, which `here` subscribes to.
            let heard_name = unique("laravel-heard");
            let channel_name = here.channel_of(&format!("fuse:{heard_name}"));
            let subscribed = async || {
                let routing = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(
                    Route::with_key(&channel_name, SlotAddr::Master),
                ));
                let reply = cluster
                    .clone()
                    .route_command(
                        redis::cmd("PUBSUB")
                            .arg("SHARDNUMSUB")
                            .arg(&channel_name)
                            .clone(),
                        routing,
                    )
                    .await
                    .unwrap();
                let counts: Vec<(String, u64)> = redis::from_redis_value(reply).unwrap();
                counts.first().map_or(0, |(_, n)| *n) == 1
            };
            heard(here.clone(), there, &heard_name, subscribed).await;
            assert_eq!(here.changes().unwrap().dropped(), 0);
        });
    }
}
