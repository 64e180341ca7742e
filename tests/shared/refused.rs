//! What a store refuses is said as such, never as an outage (SPEC §8): a
//! URL that is not one of the store's kind, and a key the store cannot
//! hold (PostgreSQL's `varchar(191)`, and the same on SQLite for one
//! fleet's sake), refused before any round trip with an error naming it.

#[cfg(feature = "sql")]
use std::sync::Arc;

#[cfg(feature = "sql")]
use fuse_breaker::config::Fallback;
#[cfg(feature = "sql")]
use fuse_breaker::store::{Refusal, Store};

#[cfg(feature = "redis")]
#[test]
fn a_url_that_is_not_redis_is_said_to_be_one() {
    super::block_on(async {
        for url in ["http://example.com", "redis//127.0.0.1", "redis://[::1"] {
            let err = fuse_breaker::store::RedisStore::open(url).unwrap_err();
            assert!(err.is_invalid_url(), "{url}: {err}");
            assert!(!err.is_unreachable(), "{url}: {err}");
            assert!(err.to_string().contains("not a Redis URL"), "{url}: {err}");
            assert!(!err.to_string().contains("unreachable"), "{url}: {err}");
        }
    });
}

#[cfg(feature = "sql")]
#[test]
fn a_url_that_is_not_a_database_s_is_said_to_be_one() {
    super::block_on(async {
        for url in [
            "mysql://127.0.0.1/shop",
            "postgres://127.0.0.1:notaport/shop",
            "sqlite://?mode=sideways",
        ] {
            let err = fuse_breaker::store::SqlStore::open(url).unwrap_err();
            assert!(err.is_invalid_url(), "{url}: {err}");
            assert!(!err.is_unreachable(), "{url}: {err}");
            assert!(
                err.to_string().contains("not a database URL"),
                "{url}: {err}"
            );
        }
    });
}

/// `store::open` makes the store its URL's scheme names, and says what a
/// URL of that kind is not as the store itself does.
#[cfg(feature = "redis")]
#[test]
fn open_makes_a_redis_store_of_a_redis_or_valkey_url() {
    super::block_on(async {
        for url in [
            "redis://127.0.0.1:1/2",
            "valkey://127.0.0.1:1",
            "redis+unix:///run/redis.sock",
            "unix:///run/redis.sock",
            "redis+cluster://127.0.0.1:1,127.0.0.1:2",
            "redis+cluster://app:hunter2@127.0.0.1:1",
            "redis+sentinel://127.0.0.1:1,127.0.0.1:2/shop",
            "redis+sentinel://:hunter2@127.0.0.1:1/shop/2",
        ] {
            let store = fuse_breaker::store::open(url).unwrap();
            assert!(
                format!("{store:?}").starts_with("RedisStore"),
                "{url}: {store:?}"
            );
        }
        let err = fuse_breaker::store::open("redis://[::1").unwrap_err();
        assert!(err.is_invalid_url(), "{err}");
        assert!(err.to_string().contains("not a Redis URL"), "{err}");
        for (url, says) in [
            (
                "redis+cluster://127.0.0.1",
                "\"127.0.0.1\" is not host:port",
            ),
            ("redis+cluster://127.0.0.1:1/3", "no database"),
            (
                "redis+sentinel://127.0.0.1:1",
                "needs the name the sentinels monitor",
            ),
            (
                "redis+sentinel://u:hunter2@127.0.0.1:1/shop/x",
                "is not a number",
            ),
        ] {
            let err = fuse_breaker::store::open(url).map(drop).unwrap_err();
            assert!(err.is_invalid_url(), "{err}");
            let text = err.to_string();
            assert!(text.contains(says), "{url}: {text}");
            assert!(!text.contains("hunter2"), "{text}");
        }
        let err = fuse_breaker::store::open_with_table("redis://127.0.0.1:1", Some("circuits"))
            .map(drop)
            .unwrap_err();
        assert!(err.is_invalid_url(), "{err}");
        assert!(err.to_string().contains("keeps no table"), "{err}");
    });
}

#[cfg(feature = "sql")]
#[test]
fn open_makes_an_sql_store_of_a_database_url() {
    super::block_on(async {
        for url in [
            "postgres://127.0.0.1:1/shop",
            "postgresql://127.0.0.1:1/shop",
            "sqlite::memory:",
        ] {
            let store = fuse_breaker::store::open(url).unwrap();
            assert!(
                format!("{store:?}").starts_with("SqlStore"),
                "{url}: {store:?}"
            );
        }
        let store =
            fuse_breaker::store::open_with_table("sqlite::memory:", Some("shop_circuits")).unwrap();
        assert!(format!("{store:?}").contains("shop_circuits"), "{store:?}");
        let err = fuse_breaker::store::open("postgres://127.0.0.1:notaport/shop").unwrap_err();
        assert!(err.is_invalid_url(), "{err}");
        assert!(err.to_string().contains("not a database URL"), "{err}");
    });
}

#[test]
fn open_names_a_scheme_no_store_has() {
    super::block_on(async {
        let err = fuse_breaker::store::open("mysql://admin:hunter2@127.0.0.1/shop").unwrap_err();
        assert!(err.is_invalid_url(), "{err}");
        assert!(!err.is_unreachable(), "{err}");
        assert!(err.to_string().contains("\"mysql\""), "{err}");
        assert!(!err.to_string().contains("hunter2"), "{err}");
    });
}

/// Every SQL database to run on: `(name, url)`.
#[cfg(feature = "sql")]
fn databases() -> Vec<(&'static str, String)> {
    std::iter::once(("sqlite", super::sqlite_url()))
        .chain(super::database_url().map(|url| ("postgres", url)))
        .collect()
}

#[cfg(feature = "sql")]
#[test]
fn a_key_the_table_cannot_hold_is_refused_naming_it() {
    super::block_on(async {
        for (db, url) in databases() {
            let store = Arc::new(super::sql_store(&url));
            // "fuse:" and 187 characters: 192, one more than the column.
            let long = format!("{}-{}", super::unique("long"), "é".repeat(200));
            let name: String = long.chars().take(187).collect();
            let fuse = fuse_breaker::Fuse::builder(&name)
                .store(store.clone())
                .fallback(Fallback::Allow)
                .build();
            assert_eq!(fuse.key().chars().count(), 192);
            let refused = fuse.try_acquire().await.map(drop).unwrap_err();
            let Refusal::Store(err) = refused else {
                panic!("{db}: a key too long is not refused by the store: {refused}");
            };
            assert!(err.is_invalid_key(), "{db}: {err}");
            assert!(!err.is_unreachable(), "{db}: {err}");
            assert!(err.to_string().contains(fuse.key()), "{db}: {err}");
            assert!(err.to_string().contains("191"), "{db}: {err}");
            assert!(fuse.store_reachable(), "{db}: no outage");
            assert!(
                fuse.force_open().await.unwrap_err().is_invalid_key(),
                "{db}"
            );

            // 191 characters are held.
            let fits: String = name.chars().take(186).collect();
            let fuse = fuse_breaker::Fuse::builder(&fits).store(store).build();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            assert_eq!(fuse.snapshot().await.unwrap().failures.len(), 1, "{db}");
        }
    });
}

#[cfg(feature = "sql")]
#[test]
fn a_key_postgres_refuses_as_data_is_no_outage() {
    let Some(url) = super::database_url() else {
        return;
    };
    super::block_on(async {
        let store = Arc::new(super::sql_store(&url));
        // PostgreSQL's text holds no NUL character: a key given to the
        // store with one is refused as data, naming it.
        let err = store.load("fuse:nul\0byte").await.unwrap_err();
        assert!(err.is_invalid_key(), "{err}");
        assert!(!err.is_unreachable(), "{err}");
        // A circuit's key never holds one (control characters are
        // written escaped), so its circuit works.
        // A name of this run's own: the server outlives runs.
        let fuse = fuse_breaker::Fuse::builder(super::unique("nul\0byte"))
            .store(store)
            .fallback(Fallback::Allow)
            .build();
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        assert!(fuse.store_reachable());
        assert_eq!(fuse.snapshot().await.unwrap().failures.len(), 1);
    });
}
