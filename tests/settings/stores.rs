//! Where the circuits live: the store, its URL, table and fallback, from
//! a file or the environment, and no password in what is printed.

use super::*;

#[test]
fn the_store_its_url_and_fallback_come_from_the_file_or_the_environment() {
    use fuse_breaker::{config::Fallback, settings::StoreKind};
    let file = Settings::from_toml(
        r#"
        store = "redis"
        redis_url = "redis://cache:6379"
        fallback = "allow"
        "#,
    )
    .unwrap();
    assert_eq!(file.store, StoreKind::Redis);
    assert_eq!(file.redis_url.as_deref(), Some("redis://cache:6379"));
    assert_eq!(file.fallback, Fallback::Allow);

    let env = Settings::default()
        .with_env_vars([
            ("FUSE_STORE", "redis"),
            ("FUSE_REDIS_URL", "redis://other:6380"),
            ("FUSE_FALLBACK", "reject"),
        ])
        .unwrap();
    assert_eq!(env.store, StoreKind::Redis);
    assert_eq!(env.redis_url.as_deref(), Some("redis://other:6380"));
    assert_eq!(env.fallback, Fallback::Reject);
    assert_eq!(Settings::default().fallback, Fallback::Local);

    let err = Settings::from_toml("fallback = \"panic\"")
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("unknown fallback \"panic\" (fallback, line 1, column 12)"),
        "{err}"
    );
    let err = Settings::default()
        .with_env_vars([("FUSE_FALLBACK", "maybe")])
        .unwrap_err()
        .to_string();
    assert!(err.contains("FUSE_FALLBACK"), "{err}");

    // An in-process registry is not what a shared store makes.
    let err = file.registry().unwrap_err().to_string();
    assert!(err.contains("Settings::shared_registry"), "{err}");
}

#[test]
fn a_database_store_its_url_and_table_come_from_the_file_or_the_environment() {
    use fuse_breaker::settings::StoreKind;
    let file = Settings::from_toml(
        r#"
        store = "database"
        database_url = "postgres://db/shop"
        database_table = "shop_circuits"
        "#,
    )
    .unwrap();
    assert_eq!(file.store, StoreKind::Database);
    assert_eq!(file.database_url.as_deref(), Some("postgres://db/shop"));
    assert_eq!(file.database_table.as_deref(), Some("shop_circuits"));

    let env = Settings::default()
        .with_env_vars([
            ("FUSE_STORE", "database"),
            ("FUSE_DATABASE_URL", "sqlite:/var/lib/shop/fuse.db"),
            ("FUSE_DATABASE_TABLE", "circuits"),
        ])
        .unwrap();
    assert_eq!(env.store, StoreKind::Database);
    assert_eq!(
        env.database_url.as_deref(),
        Some("sqlite:/var/lib/shop/fuse.db")
    );
    assert_eq!(env.database_table.as_deref(), Some("circuits"));
}

#[cfg(feature = "sql")]
#[test]
fn a_shared_registry_on_a_database_uses_its_table_and_refuses_a_bad_one() {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let dir = env!("CARGO_TARGET_TMPDIR");
            let url = format!("sqlite://{dir}/settings-{}.db", std::process::id());
            let settings = Settings::default()
                .with_env_vars([
                    ("FUSE_STORE", "database"),
                    ("FUSE_DATABASE_URL", url.as_str()),
                    ("FUSE_DATABASE_TABLE", "settings_circuits"),
                    ("FUSE_APP", "shop"),
                ])
                .unwrap();
            fuse_breaker::store::SqlStore::open(&url)
                .unwrap()
                .with_table("settings_circuits")
                .unwrap()
                .ensure_schema()
                .await
                .unwrap();
            let registry = settings.shared_registry().unwrap();
            let billing = registry.get("billing");
            assert_eq!(billing.key(), "fuse:shop:billing");
            billing.force_open().await.unwrap();
            assert_eq!(billing.state().await.unwrap(), fuse_breaker::State::Open);

            let err = settings
                .clone()
                .with_env_vars([("FUSE_DATABASE_TABLE", "x y")])
                .unwrap()
                .shared_registry()
                .unwrap_err()
                .to_string();
            assert!(err.contains("not a table name"), "{err}");
            let err = Settings::from_toml("store = \"database\"")
                .unwrap()
                .shared_registry()
                .unwrap_err()
                .to_string();
            assert!(err.contains("database_url"), "{err}");
        });
}

#[test]
fn the_debug_output_of_settings_shows_no_password() {
    let settings = fuse_breaker::settings::Settings::from_toml(
        r#"
        redis_url = "redis://user:hunter2@cache:6379/0"
        database_url = "postgres://127.0.0.1:1/shop?user=admin&password=hunter2"
        "#,
    )
    .unwrap();
    let printed = format!("{settings:?}");
    assert!(!printed.contains("hunter2"), "{printed}");
    assert_mentions(
        &printed,
        &[
            "redis://cache:6379/0",
            "postgres://127.0.0.1:1/shop?user=admin&password=***",
        ],
    );
}
