//! A key longer than the SQL table's `varchar(191)` that a table holds
//! all the same (SQLite does not enforce the length; a PostgreSQL table
//! another program made may have a wider column) is listed, shown and
//! reset by the `fuse` command like any other; a circuit is still never
//! created under such a key. SQLite on a file of the test's own, and the
//! PostgreSQL of `FUSE_TEST_DATABASE_URL` (under `CI=true` a missing
//! server fails the run).
#![cfg(feature = "cli")]

use std::process::{Command, Output};

#[path = "common/mod.rs"]
mod common;

/// How long the held key is, in characters: past the column's 191.
const LONG: usize = 210;

/// A database to run the command on, its table made: a file of SQLite
/// with the crate's own table, or PostgreSQL with a table another program
/// made with a wider key column.
struct Database {
    url: String,
    table: String,
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

/// Every database the machine has.
fn databases() -> Vec<Database> {
    let mut databases = Vec::new();
    let sqlite = format!(
        "sqlite://{}/cli-long-keys-{}.db",
        env!("CARGO_TARGET_TMPDIR"),
        std::process::id()
    );
    block_on(async {
        let store = fuse_breaker::store::SqlStore::open(&sqlite).unwrap();
        store.ensure_schema().await.unwrap();
    });
    databases.push(Database {
        url: sqlite,
        table: "fuse_circuits".to_owned(),
    });
    if let Some(url) = common::server("FUSE_TEST_DATABASE_URL", "long keys' PostgreSQL") {
        let table = common::unique("fuse_wide").replace(['-', ':'], "_");
        let create = format!(
            "CREATE TABLE {table} (key varchar(255) PRIMARY KEY, payload json NOT NULL, \
             expires_at bigint NULL)"
        );
        block_on(async {
            let pool = sqlx::PgPool::connect(&url).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(create))
                .execute(&pool)
                .await
                .unwrap();
        });
        databases.push(Database { url, table });
    }
    databases
}

impl Database {
    /// Runs `fuse` with `args` on the database's table, under the app `app`.
    fn fuse(&self, app: &str, args: &[&str]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_fuse"));
        for var in [
            "FUSE_REDIS_URL",
            "FUSE_DATABASE_URL",
            "FUSE_DATABASE_TABLE",
            "FUSE_ADMIN_URL",
            "FUSE_ADMIN_TOKEN",
            "FUSE_APP",
            "FUSE_KEY_PREFIX",
        ] {
            command.env_remove(var);
        }
        command
            .args(["--database-url", &self.url, "--table", &self.table])
            .args(["--app", app])
            .args(args)
            .output()
            .expect("the fuse binary")
    }

    /// Runs `statement` with `key` bound as `$1` (`?1`), as another
    /// program would; how many rows it changed or found.
    fn sql(&self, statement: &str, key: &str) -> u64 {
        let (url, key) = (self.url.clone(), key.to_owned());
        let statement = statement.replace("{table}", &self.table);
        block_on(async move {
            if url.starts_with("sqlite:") {
                let pool = sqlx::SqlitePool::connect(&url).await.unwrap();
                let statement = statement.replace('$', "?");
                sqlx::query(sqlx::AssertSqlSafe(statement))
                    .bind(key)
                    .execute(&pool)
                    .await
                    .unwrap()
                    .rows_affected()
            } else {
                let pool = sqlx::PgPool::connect(&url).await.unwrap();
                sqlx::query(sqlx::AssertSqlSafe(statement))
                    .bind(key)
                    .execute(&pool)
                    .await
                    .unwrap()
                    .rows_affected()
            }
        })
    }

    /// How many rows the table holds under `key`.
    fn count(&self, key: &str) -> u64 {
        // An UPDATE that changes nothing counts the rows it matched.
        self.sql("UPDATE {table} SET key = key WHERE key = $1", key)
    }
}

impl Drop for Database {
    /// Drops the table the test made (PostgreSQL's), failed or not.
    fn drop(&mut self) {
        if !self.url.starts_with("postgres") {
            return;
        }
        let (url, drop) = (self.url.clone(), format!("DROP TABLE {}", self.table));
        block_on(async move {
            // No panic here: the test may be failing already.
            if let Ok(pool) = sqlx::PgPool::connect(&url).await {
                let _ = sqlx::query(sqlx::AssertSqlSafe(drop)).execute(&pool).await;
            }
        });
    }
}

fn app() -> String {
    common::unique("long").replace([':', '-'], "x")
}

fn printed(out: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn a_held_key_longer_than_the_column_is_listed_shown_and_reset() {
    for database in databases() {
        let at = &database.url;
        let app = app();
        // Sorted before `zeta`: the listing reaches it first.
        let prefix = format!("fuse:{app}:");
        let name = format!("a{}", "b".repeat(LONG - prefix.len() - 1));
        let long = format!("{prefix}{name}");
        assert_eq!(long.chars().count(), LONG);
        let zeta = format!("{prefix}zeta");

        let out = database.fuse(&app, &["open", "zeta"]);
        assert!(out.status.success(), "{at}: {}", printed(&out));
        // The open circuit's row, copied under the long key.
        let copied = database.sql(
            &format!(
                "INSERT INTO {{table}} (key, payload, expires_at) \
                 SELECT $1, payload, expires_at FROM {{table}} WHERE key = '{zeta}'"
            ),
            &long,
        );
        assert_eq!(copied, 1, "{at}");

        let out = database.fuse(&app, &["status"]);
        assert!(out.status.success(), "{at}: {}", printed(&out));
        let table = String::from_utf8_lossy(&out.stdout);
        for key in [&long, &zeta] {
            let line = table
                .lines()
                .find(|line| line.split_whitespace().next() == Some(key.as_str()))
                .unwrap_or_else(|| panic!("{at}: no line for {key}: {}", printed(&out)));
            assert!(line.contains(" open "), "{at}: {line}");
        }

        let out = database.fuse(&app, &["status", &name, "--json"]);
        assert!(out.status.success(), "{at}: {}", printed(&out));
        let shown: serde_json::Value =
            serde_json::from_slice(&out.stdout).unwrap_or_else(|_| panic!("{}", printed(&out)));
        assert_eq!(shown["key"], long.as_str(), "{at}");
        assert_eq!(shown["state"], "open", "{at}");

        let out = database.fuse(&app, &["reset", &name]);
        assert!(out.status.success(), "{at}: {}", printed(&out));
        assert_eq!(database.count(&long), 0, "{at}: reset deletes the row");
        assert_eq!(database.count(&zeta), 1, "{at}");

        let out = database.fuse(&app, &["status"]);
        assert!(out.status.success(), "{at}: {}", printed(&out));
        let table = String::from_utf8_lossy(&out.stdout);
        assert!(!table.contains(&long), "{at}: {table}");
        assert!(table.contains(&zeta), "{at}: {table}");
    }
}

#[test]
fn no_circuit_is_created_under_a_key_longer_than_the_column() {
    for database in databases() {
        let at = &database.url;
        let app = app();
        let prefix = format!("fuse:{app}:");
        let name = "c".repeat(LONG - prefix.len());
        let long = format!("{prefix}{name}");
        for args in [&["open", &name][..], &["status", &name], &["close", &name]] {
            let out = database.fuse(&app, args);
            assert!(!out.status.success(), "{at} {args:?}: {}", printed(&out));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("cannot keep a circuit under") && stderr.contains("191"),
                "{at} {args:?}: {}",
                printed(&out)
            );
        }
        assert_eq!(database.count(&long), 0, "{at}");
    }
}

/// SQLite tells a key bound as text from the same bytes held as a blob: no
/// circuit can be read under a long key that another program wrote as
/// bytes. It is listed as unreadable, escaped, and the listing goes on to
/// the circuits after it.
#[test]
fn a_key_under_which_no_circuit_can_be_read_does_not_stop_the_listing() {
    let database = databases()
        .into_iter()
        .find(|database| database.url.starts_with("sqlite"))
        .expect("SQLite is always there");
    let app = app();
    let prefix = format!("fuse:{app}:");
    let long = format!("{prefix}a\t{}", "d".repeat(LONG - prefix.len() - 2));
    let shown = long.replace('\t', "\\t");
    let zeta = format!("{prefix}zeta");
    let out = database.fuse(&app, &["open", "zeta"]);
    assert!(out.status.success(), "{}", printed(&out));
    let written = database.sql(
        &format!(
            "INSERT INTO {{table}} (key, payload) \
             SELECT CAST($1 AS BLOB), payload FROM {{table}} WHERE key = '{zeta}'"
        ),
        &long,
    );
    assert_eq!(written, 1);

    for json in [false, true] {
        let args: &[&str] = if json {
            &["status", "--json"]
        } else {
            &["status"]
        };
        let out = database.fuse(&app, args);
        assert!(out.status.success(), "{}", printed(&out));
        let listed = String::from_utf8_lossy(&out.stdout);
        assert!(!listed.contains('\t'), "escaped: {}", printed(&out));
        let line_of = |key: &str| {
            listed
                .lines()
                .find(|line| line.contains(key))
                .unwrap_or_else(|| panic!("no line for {key}: {}", printed(&out)))
        };
        if json {
            assert!(line_of(&shown).contains("\"error\""), "{}", printed(&out));
            assert!(
                line_of(&zeta).contains("\"state\":\"open\""),
                "{}",
                printed(&out)
            );
        } else {
            assert!(
                line_of(&shown).contains(" unreadable "),
                "{}",
                printed(&out)
            );
            assert!(line_of(&zeta).contains(" open "), "{}", printed(&out));
        }
    }
}
