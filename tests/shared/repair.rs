//! A key that holds no circuit can always be repaired (SPEC §3): `reset`
//! deletes it whatever it holds, `force_open` and `force_closed` overwrite
//! it in a new generation, each says what it replaced, and the listeners
//! hear of it.

use std::sync::{Arc, Mutex};

use fuse_breaker::events::StoreEvent;
use fuse_breaker::store::{ManualChange, SharedFuse, StoreError};
use fuse_breaker::{State, events::Listener, events::Transition};

use super::{SteppedStore, block_on, config, secs, stores};

/// Payloads no store's reader takes for a circuit, each valid JSON (a
/// PostgreSQL `json` column holds nothing else).
const JSON_BUT_NO_CIRCUIT: [&str; 11] = [
    "null",
    "[]",
    "-1",
    "1e300",
    "\"closed\"",
    r#"{"state":1}"#,
    r#"{"state":"closed","opened_at":null,"failures":["x"]}"#,
    r#"{"state":"half_open","opened_at":1,"failures":[],"half_open_successes":0,"half_open_inflight":4097}"#,
    r#"{"state":"open","opened_at":-5,"failures":[]}"#,
    r#"{"state":"closed","opened_at":null,"failures":[-1]}"#,
    r#"{"state":"closed","opened_at":null,"failures":[1e300]}"#,
];

/// Payloads that are not even JSON (for the stores that hold any text or
/// bytes).
const NOT_JSON: [&[u8]; 4] = [b"", b"NaN", b"{\"state\":", b"\xff\xfe\x00binary"];

/// The overwritten payloads a circuit's listeners heard of.
#[derive(Default)]
struct Heard(Mutex<Vec<String>>);

impl Listener for Heard {
    fn on_transition(&self, _: &Transition) {}

    fn on_store(&self, event: &StoreEvent<'_>) {
        if let Some(unreadable) = event.unreadable() {
            assert!(event.reachable);
            self.0.lock().unwrap().push(unreadable.key().to_owned());
        }
    }
}

type Change = for<'a> fn(
    &'a SharedFuse,
) -> std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<ManualChange, StoreError>> + 'a>,
>;

fn changes() -> [(&'static str, Change, State); 3] {
    [
        ("reset", |fuse| Box::pin(fuse.reset()), State::Closed),
        (
            "force_open",
            |fuse| Box::pin(fuse.force_open()),
            State::Open,
        ),
        (
            "force_closed",
            |fuse| Box::pin(fuse.force_closed()),
            State::Closed,
        ),
    ]
}

/// Puts `payload` under the circuit's key, checks it is refused, applies
/// `change` and checks the circuit works again.
async fn repair(
    store: &Arc<dyn SteppedStore>,
    what: &str,
    payload: &[u8],
    (change_name, change, state): (&str, Change, State),
    serial: usize,
) {
    let name = format!("repair-{change_name}-{serial}");
    let fuse = fuse_breaker::Fuse::builder(&name)
        .store(store.clone().as_store())
        .config(config(2, 1))
        .build();
    let heard = Arc::new(Heard::default());
    fuse.on_transition(heard.clone());
    store.delete(fuse.key(), false).await.unwrap();
    store
        .swap(fuse.key(), None, payload, secs(60), false)
        .await
        .unwrap();
    let context = format!(
        "{what}: {change_name} of {:?}",
        String::from_utf8_lossy(payload)
    );
    let refused = fuse.state().await.expect_err(&context);
    assert!(refused.payload_error().is_some(), "{context}: {refused}");
    assert!(
        fuse.try_acquire().await.is_err(),
        "{context}: refused before"
    );

    let done = change(&fuse)
        .await
        .unwrap_or_else(|err| panic!("{context}: {err}"));
    let overwritten = done
        .overwritten()
        .unwrap_or_else(|| panic!("{context}: says nothing"));
    assert_eq!(overwritten.key(), fuse.key(), "{context}");
    assert_eq!(
        *heard.0.lock().unwrap(),
        [fuse.key()],
        "{context}: the event"
    );
    assert_eq!(fuse.state().await.unwrap(), state, "{context}");
    if change_name == "reset" {
        let left = store.load(fuse.key()).await.unwrap().payload;
        assert_eq!(left, None, "{context}: the key is deleted");
    }
    if state == State::Closed {
        let permit = fuse.try_acquire().await.expect(&context);
        permit.failure().await.unwrap();
        assert_eq!(
            fuse.snapshot().await.unwrap().failures.len(),
            1,
            "{context}"
        );
    }
    // Nothing is overwritten once the key holds a circuit again.
    assert!(
        fuse.force_closed().await.unwrap().overwritten().is_none(),
        "{context}"
    );
    store.delete(fuse.key(), false).await.unwrap();
}

#[test]
fn every_manual_change_repairs_a_key_that_holds_no_circuit() {
    block_on(async {
        for (what, store) in stores() {
            let mut serial = 0;
            for change in changes() {
                let text = JSON_BUT_NO_CIRCUIT.iter().map(|p| p.as_bytes());
                // A PostgreSQL json column holds JSON only; SQLite's text
                // column holds text only (see on_sql for its BLOBs).
                let raw: Vec<&[u8]> = match what {
                    "postgres" => Vec::new(),
                    "sqlite" => NOT_JSON[..3].to_vec(),
                    _ => NOT_JSON.to_vec(),
                };
                for payload in text.chain(raw) {
                    serial += 1;
                    repair(&store, what, payload, change, serial).await;
                }
            }
        }
    });
}

#[test]
fn a_reset_deletes_a_circuit_and_its_permits_are_stale() {
    block_on(async {
        for (what, store) in stores() {
            let fuse = fuse_breaker::Fuse::builder("repair-stale")
                .store(store.clone().as_store())
                .config(config(1, 1))
                .build();
            fuse.force_closed().await.unwrap();
            let before = fuse.try_acquire().await.unwrap();
            assert!(
                fuse.reset().await.unwrap().overwritten().is_none(),
                "{what}"
            );
            assert_eq!(
                store.load(fuse.key()).await.unwrap().payload,
                None,
                "{what}"
            );
            before.failure().await.unwrap();
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{what}: stale");
            assert_eq!(
                store.load(fuse.key()).await.unwrap().payload,
                None,
                "{what}"
            );
        }
    });
}

#[cfg(feature = "redis")]
#[test]
fn a_redis_value_of_another_type_is_repaired() {
    use fuse_breaker::store::RedisStore;
    let Some(url) = super::redis_url() else {
        return;
    };
    super::runtime().block_on(async {
        let mut redis = super::on_redis::raw(&url).await;
        let store = Arc::new(RedisStore::open(&url).unwrap());
        for (change_name, change, state) in changes() {
            let name = super::unique(&format!("repair-list-{change_name}"));
            let fuse = fuse_breaker::Fuse::builder(&name)
                .store(store.clone())
                .build();
            let _: () = redis::cmd("RPUSH")
                .arg(fuse.key())
                .arg("x")
                .query_async(&mut redis)
                .await
                .unwrap();
            assert!(fuse.state().await.unwrap_err().payload_error().is_some());
            let done = change(&fuse).await.unwrap();
            assert!(done.overwritten().is_some(), "{change_name}");
            assert_eq!(fuse.state().await.unwrap(), state, "{change_name}");
            let _: () = redis::cmd("DEL")
                .arg(fuse.key())
                .query_async(&mut redis)
                .await
                .unwrap();
        }
    });
}

#[cfg(feature = "sql")]
#[test]
fn a_sqlite_blob_is_repaired() {
    let url = super::sqlite_url();
    block_on(async {
        let store = Arc::new(super::sql_store(&url));
        let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
        for (change_name, change, state) in changes() {
            let name = super::unique(&format!("repair-blob-{change_name}"));
            let fuse = fuse_breaker::Fuse::builder(&name)
                .store(store.clone())
                .build();
            sqlx::query(
                "INSERT INTO fuse_circuits (key, payload, expires_at) VALUES (?1, ?2, NULL)",
            )
            .bind(fuse.key())
            .bind(&b"\xff\x00blob"[..])
            .execute(&pool)
            .await
            .unwrap();
            assert!(fuse.state().await.unwrap_err().payload_error().is_some());
            let done = change(&fuse)
                .await
                .unwrap_or_else(|err| panic!("{change_name}: {err}"));
            assert!(done.overwritten().is_some(), "{change_name}");
            assert_eq!(fuse.state().await.unwrap(), state, "{change_name}");
        }
    });
}
