//! Announcements that are not what a store publishes (SPEC §8, cached
//! mode): a message anyone on the channel can send, with numbers that
//! overflow, or dated far after the store's clock. Each is dropped (and
//! counted), the listening task goes on, and no mirror believes it.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Counting, SharedFuse, Store};

use super::announced::eventually;
use super::{block_on, config, unique};

/// No mirror expires by staleness within a scenario.
const LONG: Duration = Duration::from_mins(1);

type Step = Pin<Box<dyn Future<Output = ()>>>;

/// Two processes' stores on one server and channel: `here` caches (and is
/// the store whose count of dropped announcements is read), `there` is
/// strict; `send` publishes a message on the channel as anyone could, and
/// `listening` waits until `here` listens.
struct Channel {
    name: &'static str,
    here: Arc<dyn Store>,
    there: Arc<dyn Store>,
    send: Box<dyn Fn(Vec<u8>) -> Step>,
    listening: Box<dyn Fn() -> Step>,
}

/// What the crate's stores publish: the store's time in seconds and
/// microseconds, the key's length, then the key and the payload.
fn message(seconds: u64, micros: u64, key: &str, payload: &str) -> Vec<u8> {
    format!("{seconds} {micros} {} {key}{payload}", key.len()).into_bytes()
}

/// milon/fuse's payload of a circuit open since `opened_at` (Unix seconds).
fn open_since(opened_at: u64) -> String {
    format!(
        r#"{{"state":"open","opened_at":{opened_at},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
    )
}

/// A cached circuit on `here` and a strict one on `there`, on `circuit`.
fn pair(
    channel: &Channel,
    circuit: &str,
) -> (SharedFuse, SharedFuse, Arc<Counting<Arc<dyn Store>>>) {
    let trips = Arc::new(Counting::new(channel.here.clone()));
    let here = SharedFuse::builder(circuit, trips.clone())
        .config(config(3, 1))
        .cached(LONG)
        .build();
    let there = SharedFuse::builder(circuit, channel.there.clone())
        .config(config(3, 1))
        .build();
    (here, there, trips)
}

/// Waits until `here` is refused by its mirror (no round trip): another
/// process's opening reached it.
async fn refused_by_announcement(what: &str, here: &SharedFuse, trips: &Counting<Arc<dyn Store>>) {
    let before = trips.round_trips();
    eventually(what, async || match here.try_acquire().await {
        Ok(permit) => {
            permit.ignore().await.unwrap();
            false
        }
        Err(refused) => refused.open_error().is_some(),
    })
    .await;
    assert_eq!(trips.round_trips(), before, "{what}: refused by the mirror");
}

async fn malformed_messages_leave_the_listener_listening(channel: Channel) {
    let name = channel.name;
    let circuit = unique("malformed");
    let (here, there, trips) = pair(&channel, &circuit);
    (channel.listening)().await;
    here.try_acquire().await.unwrap().success().await.unwrap();
    let dropped = channel.here.changes().unwrap().dropped();
    let key = here.key().to_owned();
    let bad: Vec<Vec<u8>> = vec![
        // Seconds and microseconds whose sum overflows a duration.
        b"18446744073709551615 1000000 1 x{}".to_vec(),
        // Microseconds that are not a fraction of a second.
        message(1_700_000_000, 1_000_000, &key, "{}"),
        // A time past what the clock of a store can say.
        message(u64::MAX, 0, &key, "{}"),
        // A key longer than the message, a key that is not UTF-8, no key.
        b"1700000000 0 18446744073709551615 fuse:a{}".to_vec(),
        b"1700000000 0 2 \xff\xfe{}".to_vec(),
        b"1700000000 0 0 {}".to_vec(),
        b"-1 0 1 x{}".to_vec(),
        b"".to_vec(),
    ];
    let count = u64::try_from(bad.len()).unwrap();
    for message in bad {
        (channel.send)(message).await;
    }
    // Still listening: an opening elsewhere reaches the mirror at once.
    there.force_open().await.unwrap();
    refused_by_announcement(name, &here, &trips).await;
    assert_eq!(
        channel.here.changes().unwrap().dropped() - dropped,
        count,
        "{name}: each malformed message dropped and counted"
    );
}

async fn an_announcement_from_the_future_is_not_believed(channel: Channel) {
    let name = channel.name;
    let (here, there, trips) = pair(&channel, &unique("future"));
    // A second circuit whose opening marks when the forged messages (sent
    // before it, on the same channel) were handled.
    let (mark_here, mark_elsewhere, mark_trips) = pair(&channel, &unique("marker"));
    (channel.listening)().await;
    here.try_acquire().await.unwrap().success().await.unwrap();
    mark_here
        .try_acquire()
        .await
        .unwrap()
        .success()
        .await
        .unwrap();
    let dropped = channel.here.changes().unwrap().dropped();
    let now = channel.here.load("fuse:clock").await.unwrap().now.as_secs();
    let key = here.key().to_owned();
    // A day after the store's clock, and the year 5138: open then.
    for at in [now + 86_400, 99_999_999_999] {
        (channel.send)(message(at, 0, &key, &open_since(at))).await;
    }
    mark_elsewhere.force_open().await.unwrap();
    refused_by_announcement(name, &mark_here, &mark_trips).await;
    assert_eq!(
        channel.here.changes().unwrap().dropped() - dropped,
        2,
        "{name}: both dropped and counted"
    );
    // The store says closed, and so does the mirror: no call refused.
    let trips_before = trips.round_trips();
    for _ in 0..100 {
        here.try_acquire().await.unwrap().success().await.unwrap();
    }
    assert_eq!(trips.round_trips(), trips_before, "{name}: the mirror kept");
    // A real opening still gets through.
    there.force_open().await.unwrap();
    refused_by_announcement(name, &here, &trips).await;
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;
    use fuse_breaker::store::RedisStore;

    async fn subscribers(url: &str, channel: &str) -> u64 {
        let mut raw = crate::on_redis::raw(url).await;
        let counts: Vec<(String, u64)> = redis::cmd("PUBSUB")
            .arg("NUMSUB")
            .arg(channel)
            .query_async(&mut raw)
            .await
            .unwrap();
        counts.first().map_or(0, |(_, n)| *n)
    }

    fn channel(url: &str) -> Channel {
        let channel = unique("forged");
        let here = RedisStore::open(url).unwrap().with_channel(&channel);
        let there = RedisStore::open(url).unwrap().with_channel(&channel);
        let (send_url, send_channel) = (url.to_owned(), channel.clone());
        let (wait_url, wait_channel) = (url.to_owned(), channel);
        Channel {
            name: "redis",
            here: Arc::new(here),
            there: Arc::new(there),
            send: Box::new(move |message| {
                let (url, channel) = (send_url.clone(), send_channel.clone());
                Box::pin(async move {
                    let mut raw = crate::on_redis::raw(&url).await;
                    let _: u64 = redis::cmd("PUBLISH")
                        .arg(&channel)
                        .arg(message)
                        .query_async(&mut raw)
                        .await
                        .unwrap();
                })
            }),
            listening: Box::new(move || {
                let (url, channel) = (wait_url.clone(), wait_channel.clone());
                Box::pin(async move {
                    eventually("subscribed", async || {
                        subscribers(&url, &channel).await == 1
                    })
                    .await;
                    // The new subscription forgets mirrors once it is made.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }),
        }
    }

    #[test]
    fn malformed_announcements_on_redis_leave_the_listener_listening() {
        let Some(url) = crate::redis_url() else {
            return;
        };
        block_on(async { malformed_messages_leave_the_listener_listening(channel(&url)).await });
    }

    #[test]
    fn an_announcement_from_the_future_on_redis_is_not_believed() {
        let Some(url) = crate::redis_url() else {
            return;
        };
        block_on(async { an_announcement_from_the_future_is_not_believed(channel(&url)).await });
    }
}

#[cfg(feature = "sql")]
mod on_postgres {
    use super::*;
    use fuse_breaker::store::SqlStore;

    async fn listeners(url: &str, channel: &str) -> i64 {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query_scalar("SELECT count(*) FROM pg_stat_activity WHERE query = $1")
            .bind(format!("LISTEN \"{channel}\""))
            .fetch_one(&pool)
            .await
            .unwrap()
    }

    fn channel(url: &str) -> Channel {
        // The table, made once.
        drop(crate::sql_store(url));
        let channel = unique("forged");
        let here = SqlStore::open(url).unwrap().with_channel(&channel);
        let there = SqlStore::open(url).unwrap().with_channel(&channel);
        let (send_url, send_channel) = (url.to_owned(), channel.clone());
        let (wait_url, wait_channel) = (url.to_owned(), channel);
        Channel {
            name: "postgres",
            here: Arc::new(here),
            there: Arc::new(there),
            send: Box::new(move |message| {
                let (url, channel) = (send_url.clone(), send_channel.clone());
                Box::pin(async move {
                    // A NOTIFY payload is text: bytes that are not UTF-8
                    // cannot be sent, and are not sent by this test.
                    let text = String::from_utf8_lossy(&message).into_owned();
                    let pool = sqlx::PgPool::connect(&url).await.unwrap();
                    sqlx::query("SELECT pg_notify($1, $2)")
                        .bind(&channel)
                        .bind(text)
                        .execute(&pool)
                        .await
                        .unwrap();
                })
            }),
            listening: Box::new(move || {
                let (url, channel) = (wait_url.clone(), wait_channel.clone());
                Box::pin(async move {
                    eventually("listening", async || listeners(&url, &channel).await == 1).await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                })
            }),
        }
    }

    #[test]
    fn malformed_announcements_on_postgres_leave_the_listener_listening() {
        let Some(url) = crate::database_url() else {
            return;
        };
        block_on(async { malformed_messages_leave_the_listener_listening(channel(&url)).await });
    }

    #[test]
    fn an_announcement_from_the_future_on_postgres_is_not_believed() {
        let Some(url) = crate::database_url() else {
            return;
        };
        block_on(async { an_announcement_from_the_future_is_not_believed(channel(&url)).await });
    }
}
