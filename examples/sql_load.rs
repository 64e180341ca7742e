//! Calls and transitions per second, round trips per call and lost
//! failures of shared circuits on PostgreSQL and SQLite, from one process
//! with 1, 8 and 64 concurrent tasks, next to what milon/fuse's
//! `DatabaseStore` does (read the row, decide, upsert it back) as the
//! anchor.
//!
//! ```sh
//! cargo run --release --example sql_load --features sql -- postgres://postgres@127.0.0.1:5432/fuse
//! cargo run --release --example sql_load --features sql -- sqlite:///tmp/fuse-load.db
//! ```
//!
//! (`FUSE_TEST_DATABASE_URL` is read when no URL is given; `--seconds N`
//! sets the time per row, 2 by default.) Each row is one circuit (one row
//! of the table) and one workload: `successes`, `alternating` and
//! `failures` as in the `store_load` example (with cached rows, 100 ms),
//! and `transitions`, each call opening or closing the circuit in turn (a
//! write of a new epoch), each also under the `rate` policy (`rate, ...`
//! rows; transitions are the same under both). The
//! anchor runs the same workloads with a `SELECT` before the call and an
//! upsert after it.

#[path = "common/load.rs"]
mod load;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use fuse_breaker::config::Policy;
use fuse_breaker::store::SqlStore;
use load::{
    Row, STALENESS, Workload, arguments, drive, lost_failures, named, print,
    read_modify_write_step, shared, unique,
};

/// The database's pool, for the anchor's statements.
#[derive(Clone)]
enum Pool {
    Postgres(sqlx::PgPool),
    Sqlite(sqlx::SqlitePool),
}

impl Pool {
    async fn connect(url: &str) -> Self {
        if url.starts_with("sqlite:") {
            Pool::Sqlite(sqlx::SqlitePool::connect(url).await.expect("SQLite opens"))
        } else {
            Pool::Postgres(
                sqlx::PgPool::connect(url)
                    .await
                    .expect("PostgreSQL answers"),
            )
        }
    }

    async fn read(&self, key: &str) -> Option<String> {
        match self {
            Pool::Postgres(pool) => {
                sqlx::query_scalar("SELECT payload::text FROM fuse_circuits WHERE key = $1")
                    .bind(key)
                    .fetch_optional(pool)
                    .await
                    .expect("SELECT")
            }
            Pool::Sqlite(pool) => {
                sqlx::query_scalar("SELECT payload FROM fuse_circuits WHERE key = ?1")
                    .bind(key)
                    .fetch_optional(pool)
                    .await
                    .expect("SELECT")
            }
        }
    }

    async fn upsert(&self, key: &str, payload: &str) {
        match self {
            Pool::Postgres(pool) => {
                sqlx::query(
                    "INSERT INTO fuse_circuits (key, payload, expires_at) VALUES ($1, $2::json, NULL) \
                     ON CONFLICT (key) DO UPDATE SET payload = EXCLUDED.payload",
                )
                .bind(key)
                .bind(payload)
                .execute(pool)
                .await
                .expect("upsert");
            }
            Pool::Sqlite(pool) => {
                sqlx::query(
                    "INSERT INTO fuse_circuits (key, payload, expires_at) VALUES (?1, ?2, NULL) \
                     ON CONFLICT (key) DO UPDATE SET payload = excluded.payload",
                )
                .bind(key)
                .bind(payload)
                .execute(pool)
                .await
                .expect("upsert");
            }
        }
    }
}

/// milon/fuse's `DatabaseStore`: read the row, decide, run, upsert it.
async fn read_then_upsert(pool: &Pool, tasks: usize, time: Duration, workload: Workload) -> Row {
    let key = Arc::new(unique("upsert"));
    let trips = Arc::new(AtomicU64::new(0));
    let (p, k, t) = (pool.clone(), key.clone(), trips.clone());
    let (calls, time) = drive(tasks, workload.span(time), move |n| {
        let (pool, key, trips) = (p.clone(), k.clone(), t.clone());
        async move {
            let read = pool.read(&key).await;
            let written = read_modify_write_step(read.as_deref(), workload, n);
            pool.upsert(&key, &written).await;
            trips.fetch_add(2, Ordering::Relaxed);
        }
    })
    .await;
    let lost = if workload == Workload::Failures {
        Some(lost_failures(calls, pool.read(&key).await.as_deref()))
    } else {
        None
    };
    Row {
        calls,
        time,
        trips: trips.load(Ordering::Relaxed),
        lost,
    }
}

fn main() {
    let (url, seconds) = arguments(
        "FUSE_TEST_DATABASE_URL",
        "sql_load [postgres://... | sqlite:PATH]",
    );
    let time = Duration::from_secs_f64(seconds);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    runtime.block_on(async {
        let store = || SqlStore::open(&url).expect("a database URL");
        store().ensure_schema().await.expect("the table");
        let pool = Pool::connect(&url).await;
        println!("{url}, {seconds} s per row, one row of the table per row\n");
        println!("| workload | tasks | calls/s | round trips per call | failures lost |");
        println!("| --- | ---: | ---: | ---: | ---: |");
        for tasks in [1, 8, 64] {
            for workload in [
                Workload::Successes,
                Workload::Alternating,
                Workload::Failures,
                Workload::Transitions,
            ] {
                let what = workload.name();
                for policy in [Policy::Count, Policy::Rate] {
                    if policy == Policy::Rate && workload == Workload::Transitions {
                        continue;
                    }
                    let row = shared(store(), tasks, time, workload, None, policy).await;
                    print(&named(policy, &format!("strict, {what}")), tasks, &row);
                    if matches!(workload, Workload::Successes | Workload::Alternating) {
                        let cached = Some(STALENESS);
                        let row = shared(store(), tasks, time, workload, cached, policy).await;
                        print(
                            &named(policy, &format!("cached (100 ms), {what}")),
                            tasks,
                            &row,
                        );
                    }
                }
                let row = read_then_upsert(&pool, tasks, time, workload).await;
                print(&format!("read-then-upsert, {what}"), tasks, &row);
            }
        }
    });
}
