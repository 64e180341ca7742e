//! No password reaches an error, whatever the scheme of the store's URL and
//! whether the URL is good or not.
#![cfg(any(feature = "redis", feature = "sql"))]

use fuse_breaker::store::Store;

const SECRET: &str = "hunter2";

fn assert_hidden(what: &str, printed: &str) {
    assert!(!printed.contains(SECRET), "{what} printed {printed:?}");
}

/// What opening a store on `url` printed, or its first read when it
/// opened: no secret in either.
async fn assert_no_secret<S: Store>(url: &str, opened: Result<S, fuse_breaker::store::StoreError>) {
    match opened {
        Err(err) => {
            assert_hidden(url, &err.to_string());
            assert_hidden(url, &format!("{err:?}"));
        }
        Ok(store) => {
            assert_hidden(url, store.name());
            assert_hidden(url, &format!("{store:?}"));
            let err = store.load("fuse:a").await.unwrap_err();
            assert_hidden(url, &err.to_string());
            assert_hidden(url, &format!("{err:?}"));
        }
    }
}

#[cfg(feature = "redis")]
#[tokio::test]
async fn redis_urls_lose_their_passwords_in_errors() {
    use fuse_breaker::store::RedisStore;
    for url in [
        "redis://:hunter2@127.0.0.1:1/0",
        "redis://user:hunter2@127.0.0.1:1",
        "rediss://user:hunter2@127.0.0.1:1",
        "redis+unix:///nonexistent/fuse.sock?pass=hunter2",
        "redis+unix:///nonexistent/fuse.sock?db=1&password=hunter2",
        "unix:///nonexistent/fuse.sock?pass=hunter2",
        "redis://user:hunter2@[not a host",
        "redis://127.0.0.1:1/?password=hunter2&db=x",
    ] {
        assert_no_secret(url, RedisStore::open(url)).await;
    }
}

#[cfg(feature = "sql")]
#[tokio::test]
async fn database_urls_lose_their_passwords_in_errors() {
    use fuse_breaker::store::SqlStore;
    for url in [
        "postgres://admin:hunter2@127.0.0.1:1/shop",
        "postgres://127.0.0.1:1/shop?user=admin&password=hunter2",
        "postgresql://127.0.0.1:1/shop?sslpassword=hunter2",
        "postgres://admin:hunter2@127.0.0.1:notaport/shop",
        "postgres://127.0.0.1:1/shop?password=hunter2&sslmode=bogus",
        "sqlite:/nonexistent/dir/fuse.db?key=hunter2",
    ] {
        assert_no_secret(url, SqlStore::open(url)).await;
    }
}

/// A password with an unescaped `/`, in a cluster's or Sentinel's URL:
/// no piece of it, nor the user before it, is quoted.
#[cfg(feature = "redis")]
#[tokio::test]
async fn cluster_and_sentinel_urls_quote_no_piece_of_a_password() {
    use fuse_breaker::store::RedisStore;
    for url in [
        "redis+cluster://app:hun/ter2@127.0.0.1",
        "redis+cluster://app:hun/ter2@127.0.0.1:1",
        "rediss+cluster://app:hun/ter2@127.0.0.1:1/2",
        "redis+sentinel://app:hun/ter2@127.0.0.1",
        "redis+sentinel://app:/hunter2@127.0.0.1:1",
        "redis+sentinel://app:/hunter2@127.0.0.1:1/shop",
        "rediss+sentinel://app:hun?ter2@127.0.0.1:1/shop/x",
    ] {
        let opened = RedisStore::open(url);
        let printed = match &opened {
            Err(err) => format!("{err} {err:?}"),
            Ok(store) => {
                let err = store.load("fuse:a").await.map(drop).unwrap_err();
                format!("{} {store:?} {err} {err:?}", store.name())
            }
        };
        for piece in ["app:", "hun", "ter2"] {
            assert!(!printed.contains(piece), "{url}: {printed}");
        }
    }
}
