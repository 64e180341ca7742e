//! Redis only: what is under a key when it is not ours, the key's
//! time-to-live, and the server stopped and restarted under load.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fuse_breaker::Config;
use fuse_breaker::store::{RedisStore, Refusal};

use super::processes::{config, shared};
use super::{redis_url, runtime, unique};

pub(super) async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

#[test]
fn what_else_is_under_a_key_is_a_named_error_or_milon_s_circuit() {
    let Some(url) = redis_url() else { return };
    runtime().block_on(async {
        let mut redis = raw(&url).await;
        let name = unique("foreign");
        let key = format!("fuse:{name}");
        let fuse = shared(&url, &name, Config::default());

        let _: () = redis::cmd("RPUSH").arg(&key).arg("x").query_async(&mut redis).await.unwrap();
        let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
            panic!("a list under the key is not refused by the store");
        };
        assert_eq!(err.payload_error().expect("named").key(), key, "{err}");

        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut redis).await.unwrap();
        let _: () = redis::cmd("SET").arg(&key).arg("{\"state\":").query_async(&mut redis).await.unwrap();
        let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
            panic!("a corrupt payload is not refused by the store");
        };
        assert!(err.to_string().contains(&key), "{err}");

        // milon/fuse's five fields: open ten seconds ago.
        let (seconds, _): (u64, u64) = redis::cmd("TIME").query_async(&mut redis).await.unwrap();
        let milon = format!(
            r#"{{"state":"open","opened_at":{},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#,
            seconds - 10
        );
        let _: () = redis::cmd("SET").arg(&key).arg(milon).query_async(&mut redis).await.unwrap();
        let open = fuse.try_acquire().await.unwrap_err();
        let retry = open.open_error().expect("open").retry_after();
        assert!(retry > Duration::from_secs(18) && retry <= Duration::from_secs(20), "{retry:?}");
        let _: () = redis::cmd("DEL").arg(&key).query_async(&mut redis).await.unwrap();
    });
}

#[test]
fn an_idle_circuit_expires_on_the_server() {
    let Some(url) = redis_url() else { return };
    runtime().block_on(async {
        let mut redis = raw(&url).await;
        let name = unique("ttl");
        let fuse = shared(&url, &name, config(3, 1, Duration::from_secs(30)));
        fuse.try_acquire().await.unwrap().failure().await.unwrap();
        let ttl: i64 = redis::cmd("PTTL")
            .arg(format!("fuse:{name}"))
            .query_async(&mut redis)
            .await
            .unwrap();
        // 2 x max(window 60 s, open 30 s).
        assert!(ttl > 119_000 && ttl <= 120_000, "{ttl} ms");
    });
}

/// A redis-server of the test's own, stopped when dropped (a failing test
/// leaves none behind).
struct Server(Child);

impl Server {
    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A redis-server of the test's own on `port`, to stop and restart.
fn own_server(port: u16, dir: &std::path::Path) -> Server {
    let child = Command::new("redis-server")
        .args([
            "--bind",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (the tests that need Redis install it)");
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "redis-server did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    Server(child)
}

#[test]
fn the_server_stopped_and_restarted_under_load() {
    if redis_url().is_none() {
        return;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(unique("redis-restart"));
    std::fs::create_dir_all(&dir).unwrap();
    let url = format!("redis://127.0.0.1:{port}");
    let mut server = Some(own_server(port, &dir));
    runtime().block_on(async {
        let store = Arc::new(RedisStore::open(&url).unwrap());
        super::restart::under_load(store, |run| {
            if run {
                server = Some(own_server(port, &dir));
            } else if let Some(mut stopped) = server.take() {
                stopped.stop();
            }
        })
        .await;
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A key longer than milon/fuse's 191 characters (the SQL tables' key
/// column) is a key like any other on Redis, as it is for milon/fuse's
/// cache stores there: opened, read back, listed.
#[test]
fn a_key_longer_than_191_characters_is_held() {
    let Some(url) = redis_url() else { return };
    runtime().block_on(async {
        let name = format!("{}-{}", unique("long"), "x".repeat(300));
        let key = format!("fuse:{name}");
        assert!(key.chars().count() > 191);
        let fuse = shared(&url, &name, Config::default());
        fuse.force_open().await.unwrap();
        assert!(fuse.try_acquire().await.is_err(), "open");
        let store = RedisStore::open(&url).unwrap();
        let page = fuse_breaker::store::Store::keys(&store, &key, None, 10)
            .await
            .unwrap();
        assert_eq!(page.keys, [key]);
        fuse.reset().await.unwrap();
    });
}
