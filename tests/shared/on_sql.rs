//! PostgreSQL and SQLite only: the row milon/fuse writes and reads, rows
//! that are not circuits, expiry and the sweep, and a table of another
//! name. Each runs on SQLite (a file of this run's own) and, given
//! `FUSE_TEST_DATABASE_URL`, on PostgreSQL.

use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Refusal, SharedFuse, SqlStore, Store, snapshot_of};
use fuse_breaker::{Config, State};

use super::{block_on, database_url, sql_store, sqlite_url, unique};

/// Every SQL database to run on: `(name, url)`.
fn databases() -> Vec<(&'static str, String)> {
    std::iter::once(("sqlite", sqlite_url()))
        .chain(database_url().map(|url| ("postgres", url)))
        .collect()
}

/// Writes a row as another program would: `payload` under `key`, expiring
/// at `expires_at` (Unix seconds).
async fn put(url: &str, key: &str, payload: &str, expires_at: Option<i64>) {
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query(
            "INSERT INTO fuse_circuits (key, payload, expires_at) VALUES (?1, ?2, ?3) \
             ON CONFLICT (key) DO UPDATE SET payload = excluded.payload, \
             expires_at = excluded.expires_at",
        )
        .bind(key)
        .bind(payload)
        .bind(expires_at)
        .execute(&pool)
        .await
        .unwrap();
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query(
            "INSERT INTO fuse_circuits (key, payload, expires_at) VALUES ($1, $2::json, $3) \
             ON CONFLICT (key) DO UPDATE SET payload = EXCLUDED.payload, \
             expires_at = EXCLUDED.expires_at",
        )
        .bind(key)
        .bind(payload)
        .bind(expires_at)
        .execute(&pool)
        .await
        .unwrap();
    }
}

/// The row under `key`, as text, and its expiry.
async fn row(url: &str, table: &str, key: &str) -> Option<(String, Option<i64>)> {
    if url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT payload, expires_at FROM {table} WHERE key = ?1"
        )))
        .bind(key)
        .fetch_optional(&pool)
        .await
        .unwrap()
    } else {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query_as(sqlx::AssertSqlSafe(format!(
            "SELECT payload::text, expires_at FROM {table} WHERE key = $1"
        )))
        .bind(key)
        .fetch_optional(&pool)
        .await
        .unwrap()
    }
}

fn circuit(store: SqlStore, name: &str, config: Config) -> SharedFuse {
    fuse_breaker::Fuse::builder(name)
        .store(Arc::new(store))
        .config(config)
        .build()
}

/// The database's Unix time in seconds, as the store reads it.
async fn unix_now(store: &SqlStore) -> i64 {
    let now = store.load("fuse:clock").await.unwrap().now.as_secs();
    i64::try_from(now).unwrap()
}

#[test]
fn a_row_milon_wrote_is_honoured_and_one_of_ours_keeps_its_five_fields() {
    block_on(async {
        for (db, url) in databases() {
            let store = sql_store(&url);
            let name = unique("milon");
            let key = format!("fuse:{name}");
            let now = unix_now(&store).await;
            let milon = format!(
                r#"{{"state":"open","opened_at":{},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#,
                now - 10
            );
            put(&url, &key, &milon, Some(now + 120)).await;
            let fuse = circuit(store, &name, Config::default());
            let open = fuse.try_acquire().await.unwrap_err();
            let retry = open.open_error().expect("open").retry_after();
            assert!(
                retry > Duration::from_secs(18) && retry <= Duration::from_secs(21),
                "{db}: {retry:?}"
            );

            fuse.force_closed().await.unwrap();
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            let (payload, expires_at) = row(&url, "fuse_circuits", &key).await.expect("the row");
            let json: serde_json::Value = serde_json::from_str(&payload).unwrap();
            assert_eq!(json["state"], "closed", "{db}: {payload}");
            assert!(json["opened_at"].is_null(), "{db}: {payload}");
            let failures = json["failures"].as_array().expect("failures");
            assert_eq!(failures.len(), 1, "{db}: {payload}");
            let at = failures[0].as_i64().expect("Unix seconds");
            assert!((at - now).abs() <= 2, "{db}: {at} against {now}");
            assert_eq!(json["half_open_successes"], 0, "{db}: {payload}");
            assert_eq!(json["half_open_inflight"], 0, "{db}: {payload}");
            // 2 x max(window 60 s, open 30 s), in Unix seconds.
            let expires_at = expires_at.expect("an expiry");
            assert!(
                (expires_at - (now + 120)).abs() <= 2,
                "{db}: expires at {expires_at}, now {now}"
            );
        }
    });
}

#[test]
fn a_row_that_is_not_a_circuit_is_an_error_naming_the_key() {
    block_on(async {
        for (db, url) in databases() {
            let name = unique("corrupt");
            let key = format!("fuse:{name}");
            // JSON, but not a circuit (a `json` column takes nothing else).
            put(&url, &key, "[1, 2]", None).await;
            let fuse = circuit(sql_store(&url), &name, Config::default());
            let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
                panic!("{db}: a row that is not a circuit is not refused by the store");
            };
            assert_eq!(
                err.payload_error().expect("named").key(),
                key,
                "{db}: {err}"
            );
            let (left, _) = row(&url, "fuse_circuits", &key).await.expect("the row");
            assert_eq!(left, "[1, 2]", "{db}: left alone");
        }
        // SQLite's text column takes anything.
        let url = sqlite_url();
        let name = unique("not-json");
        put(&url, &format!("fuse:{name}"), "{\"state\":", None).await;
        let fuse = circuit(sql_store(&url), &name, Config::default());
        let Refusal::Store(err) = fuse.try_acquire().await.unwrap_err() else {
            panic!("a corrupt payload is not refused by the store");
        };
        assert!(err.to_string().contains(&name), "{err}");
    });
}

#[test]
fn an_expired_row_reads_as_absent_and_is_swept() {
    block_on(async {
        for (db, url) in databases() {
            let store = sql_store(&url);
            let name = unique("expired");
            let key = format!("fuse:{name}");
            let now = unix_now(&store).await;
            let open = format!(
                r#"{{"state":"open","opened_at":{now},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
            );
            put(&url, &key, &open, Some(now - 1)).await;
            assert_eq!(
                snapshot_of(&store, &key, &Config::default()).await.unwrap(),
                None,
                "{db}: expired is absent"
            );
            let fuse = circuit(store.clone(), &name, Config::default());
            assert_eq!(fuse.state().await.unwrap(), State::Closed, "{db}");
            assert!(store.sweep(1_000_000).await.unwrap() >= 1, "{db}: swept");
            assert_eq!(
                row(&url, "fuse_circuits", &key).await,
                None,
                "{db}: deleted"
            );
            // A circuit on an expired row starts afresh and writes it.
            put(&url, &key, &open, Some(now - 1)).await;
            fuse.try_acquire().await.unwrap().failure().await.unwrap();
            let snapshot = fuse.snapshot().await.unwrap();
            assert_eq!(snapshot.state, State::Closed, "{db}");
            assert_eq!(snapshot.failures.len(), 1, "{db}");
        }
    });
}

/// milon/fuse's `DatabaseStore` expires a row with `expires_at < time()`:
/// through the second `expires_at` names, the row is live, for the crate
/// as for PHP (it expired a second early before).
#[test]
fn a_row_is_live_through_the_second_its_expiry_names() {
    block_on(async {
        for (db, url) in databases() {
            let store = sql_store(&url);
            let name = unique("expiry-second");
            let key = format!("fuse:{name}");
            // The second may turn between the write and the reads: then
            // the test tries again (a few times at most).
            let mut checked = false;
            for _ in 0..5 {
                let now = unix_now(&store).await;
                let open = format!(
                    r#"{{"state":"open","opened_at":{now},"failures":[],"half_open_successes":0,"half_open_inflight":0}}"#
                );
                put(&url, &key, &open, Some(now)).await;
                let snapshot = snapshot_of(&store, &key, &Config::default()).await.unwrap();
                let keys = store.keys("fuse:", None, 100_000).await.unwrap();
                if unix_now(&store).await != now {
                    continue;
                }
                let snapshot = snapshot.expect("a row expiring this second is live");
                assert_eq!(snapshot.state, State::Open, "{db}");
                assert!(keys.keys.contains(&key), "{db}: listed");
                checked = true;
                break;
            }
            assert!(checked, "{db}: the second never held still");
        }
    });
}

#[test]
fn a_table_of_another_name_holds_the_circuits() {
    block_on(async {
        for (db, url) in databases() {
            let store = SqlStore::open(&url)
                .unwrap()
                .with_table("fuse_other_circuits")
                .unwrap();
            store.ensure_schema().await.unwrap();
            let name = unique("table");
            let fuse = circuit(store.clone(), &name, Config::default());
            fuse.force_open().await.unwrap();
            let key = format!("fuse:{name}");
            assert!(
                row(&url, "fuse_other_circuits", &key).await.is_some(),
                "{db}"
            );
            assert_eq!(row(&url, "fuse_circuits", &key).await, None, "{db}");
            assert_eq!(
                store.keys(&key, None, 10).await.unwrap().keys,
                [key],
                "{db}"
            );
        }
        let err = SqlStore::open(&sqlite_url())
            .unwrap()
            .with_table("circuits; DROP TABLE users")
            .unwrap_err();
        assert!(err.to_string().contains("not a table name"), "{err}");
    });
}

/// Three threads (each its own runtime and pool, as processes starting
/// together would be) make the table in a new SQLite file at once, 200
/// times: every one succeeds and the file is in WAL mode. (SQLite refuses
/// a change of journal mode at once, without the busy timeout, while
/// another connection makes it.)
#[test]
fn processes_making_a_new_sqlite_file_together_all_get_the_table() {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    for round in 0..200 {
        let path = dir.join(format!("together-{}-{round}.db", std::process::id()));
        let url = format!("sqlite://{}", path.display());
        let makers: Vec<_> = (0..3)
            .map(|_| {
                let url = url.clone();
                std::thread::spawn(move || {
                    block_on(async { SqlStore::open(&url).unwrap().ensure_schema().await })
                })
            })
            .collect();
        for maker in makers {
            maker.join().unwrap().unwrap();
        }
        let mode: String = block_on(async {
            let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
            sqlx::query_scalar("PRAGMA journal_mode")
                .fetch_one(&pool)
                .await
                .unwrap()
        });
        assert_eq!(mode, "wal", "{url}");
        for end in ["", "-wal", "-shm"] {
            let _ = std::fs::remove_file(format!("{}{end}", path.display()));
        }
    }
}

#[test]
fn a_database_that_does_not_answer_is_an_outage_named() {
    block_on(async {
        // A port nothing listens on.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let store =
            SqlStore::open(&format!("postgres://fuse:secret@127.0.0.1:{port}/fuse")).unwrap();
        let err = store.load("fuse:billing").await.unwrap_err();
        assert!(err.is_unreachable(), "{err}");
        let text = err.to_string();
        assert!(text.contains(&format!("127.0.0.1:{port}")), "{text}");
        assert!(!text.contains("secret"), "no password in errors: {text}");
    });
}

/// A PostgreSQL cluster of the test's own (made with `initdb` as the
/// `postgres` user, so the test runs as root, as CI does), to stop and
/// start again; stopped when dropped.
struct OwnPostgres {
    dir: std::path::PathBuf,
    port: u16,
}

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

fn as_postgres(program: &str) -> std::process::Command {
    let mut command = std::process::Command::new("runuser");
    command.args(["-u", "postgres", "--", &format!("{PG_BIN}/{program}")]);
    command
}

impl OwnPostgres {
    /// A new cluster, or `None` (said) where one cannot be made here.
    fn new() -> Option<Self> {
        let root = std::process::Command::new("id")
            .arg("-u")
            .output()
            .is_ok_and(|out| out.stdout == b"0\n");
        if !root || !std::path::Path::new(PG_BIN).join("initdb").exists() {
            assert!(
                std::env::var("CI").as_deref() != Ok("true"),
                "CI=true: the PostgreSQL restart test needs root and {PG_BIN}"
            );
            eprintln!("not root or no {PG_BIN}: the PostgreSQL restart test is skipped");
            return None;
        }
        let dir = std::env::temp_dir().join(unique("pg-restart"));
        std::fs::create_dir_all(dir.join("data")).unwrap();
        let status = std::process::Command::new("chown")
            .args(["-R", "postgres"])
            .arg(&dir)
            .status()
            .unwrap();
        assert!(status.success());
        let out = as_postgres("initdb")
            .arg("-D")
            .arg(dir.join("data"))
            .args(["-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync"])
            .output()
            .unwrap();
        assert!(out.status.success(), "initdb: {out:?}");
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let cluster = OwnPostgres { dir, port };
        cluster.start();
        Some(cluster)
    }

    fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    fn start(&self) {
        let options = format!(
            "-c listen_addresses=127.0.0.1 -p {} -k {} -c fsync=off",
            self.port,
            self.dir.display()
        );
        let out = as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .arg("-l")
            .arg(self.dir.join("pg.log"))
            .args(["-w", "-o", &options, "start"])
            .output()
            .unwrap();
        assert!(out.status.success(), "pg_ctl start: {out:?}");
    }

    fn stop(&self) {
        let _ = as_postgres("pg_ctl")
            .arg("-D")
            .arg(self.dir.join("data"))
            .args(["-m", "immediate", "-w", "stop"])
            .output();
    }
}

impl Drop for OwnPostgres {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[test]
fn the_server_stopped_and_restarted_under_load() {
    if database_url().is_none() {
        return;
    }
    let Some(cluster) = OwnPostgres::new() else {
        return;
    };
    super::runtime().block_on(async {
        let store = SqlStore::open(&cluster.url()).unwrap();
        store.ensure_schema().await.unwrap();
        super::restart::under_load(Arc::new(store), |run| {
            if run {
                cluster.start();
            } else {
                cluster.stop();
            }
        })
        .await;
    });
}
