//! Redis only: what is under a key when it is not ours, the key's
//! time-to-live, and the server stopped and restarted under load.

use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use fuse_breaker::store::{Fallback, RedisStore, Refusal, SharedFuse, Store};
use fuse_breaker::{Config, State, Verdict};

use super::{redis_url, runtime, unique};

pub(super) async fn raw(url: &str) -> redis::aio::MultiplexedConnection {
    redis::Client::open(url)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

fn shared(url: &str, name: &str, config: Config) -> SharedFuse {
    let store = Arc::new(RedisStore::open(url).expect("a Redis URL"));
    SharedFuse::builder(name, store).config(config).build()
}

fn config(threshold: u32, probes: u32, open: Duration) -> Config {
    Config::builder()
        .failure_threshold(threshold)
        .half_open_probes(probes)
        .open_duration(open)
        .build()
        .expect("a valid configuration")
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
    let mut server = own_server(port, &dir);
    runtime().block_on(async {
        let store = Arc::new(RedisStore::open(&url).unwrap());
        let fuse = Arc::new(
            SharedFuse::builder("restart", store.clone())
                .config(config(1000, 1, Duration::from_millis(300)))
                .fallback(Fallback::Local)
                .build(),
        );
        let stop = Arc::new(AtomicBool::new(false));
        let (local, from_store, down) = (
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
            Arc::new(AtomicUsize::new(0)),
        );
        let mut load = Vec::new();
        for _ in 0..8 {
            let (fuse, stop) = (fuse.clone(), stop.clone());
            let (local, from_store, down) = (local.clone(), from_store.clone(), down.clone());
            load.push(tokio::spawn(async move {
                // A failure then a success, again and again: writes that
                // never open the circuit (each success clears).
                let mut fail = false;
                while !stop.load(Ordering::Relaxed) {
                    fail = !fail;
                    match fuse.try_acquire().await {
                        Ok(permit) => {
                            let counter = if permit.from_store() {
                                &from_store
                            } else {
                                &local
                            };
                            counter.fetch_add(1, Ordering::Relaxed);
                            let verdict = if fail {
                                Verdict::Failure
                            } else {
                                Verdict::Success
                            };
                            if permit.conclude(verdict).await.is_err() {
                                down.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                        Err(refusal) => panic!("refused: {refusal}"),
                    }
                    if !fuse.store_reachable() {
                        down.fetch_add(1, Ordering::Relaxed);
                    }
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
            }));
        }
        tokio::time::sleep(Duration::from_millis(300)).await;
        server.stop();
        tokio::time::sleep(Duration::from_millis(700)).await;
        let local_during = local.load(Ordering::Relaxed);
        server = own_server(port, &dir);
        // Back to the store within two of the longest backoffs (the try
        // that finds the connection being remade fails, the next succeeds).
        let started = Instant::now();
        let before = from_store.load(Ordering::Relaxed);
        while from_store.load(Ordering::Relaxed) < before + 20 {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the store was not used again"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.store(true, Ordering::Relaxed);
        for task in load {
            task.await.expect("no task panicked");
        }
        assert!(
            local_during > 0,
            "the local circuit decided while the server was down"
        );
        assert!(down.load(Ordering::Relaxed) > 0, "the outage was seen");
        assert!(fuse.store_reachable());
        // The key is readable: no corrupt payload was left.
        let snapshot = fuse.snapshot().await.expect("a readable circuit");
        assert_eq!(snapshot.state, State::Closed);
        assert!(
            snapshot.failures.len() <= 8,
            "at most one failure per task: {snapshot:?}"
        );
        assert!(store.load("fuse:restart").await.is_ok());
    });
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}
