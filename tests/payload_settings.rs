//! The payload settings (`payload`, `payload_read`, Laravel's prefixes):
//! in a file, in `FUSE_*` variables, their mistakes refused with an error
//! naming the setting, a PHP payload or Laravel's cache refused on a
//! database, and (with a Redis server, `FUSE_TEST_REDIS_URL`) the shared
//! registry's circuits at Laravel's keys, a Redis URL's parameter winning
//! over the setting of the same name.
#![cfg(feature = "config-file")]

use fuse_breaker::{config::PayloadKind, config::PayloadRead, settings::Settings};

#[path = "common/mod.rs"]
mod common;

fn error(text: &str) -> String {
    Settings::from_toml(text)
        .expect_err("the configuration must be refused")
        .to_string()
}

fn env_error(text: &str, vars: &[(&str, &str)]) -> String {
    Settings::from_toml(text)
        .unwrap()
        .with_env_vars(vars.iter().copied())
        .expect_err("the variables must be refused")
        .to_string()
}

fn assert_mentions(message: &str, parts: &[&str]) {
    for part in parts {
        assert!(
            message.contains(part),
            "{message:?} should mention {part:?}"
        );
    }
}

#[test]
fn the_payload_settings_are_read_from_the_file_and_the_variables() {
    let settings = Settings::from_toml(
        r#"
        store = "redis"
        payload = "laravel"
        payload_read = "auto"
        laravel_redis_prefix = "shop_database_"
        laravel_cache_prefix = "shop_cache_"
        "#,
    )
    .unwrap();
    assert_eq!(settings.payload, Some(PayloadKind::Laravel));
    assert_eq!(settings.payload_read, Some(PayloadRead::Auto));
    assert_eq!(
        settings.laravel_redis_prefix.as_deref(),
        Some("shop_database_")
    );
    assert_eq!(
        settings.laravel_cache_prefix.as_deref(),
        Some("shop_cache_")
    );
    let debug = format!("{settings:?}");
    assert_mentions(&debug, &["Laravel", "shop_cache_"]);

    let settings = settings
        .with_env_vars([
            ("FUSE_PAYLOAD", "php"),
            ("FUSE_PAYLOAD_READ", "written"),
            ("FUSE_LARAVEL_REDIS_PREFIX", ""),
            ("FUSE_LARAVEL_CACHE_PREFIX", "app_cache_"),
        ])
        .unwrap();
    assert_eq!(settings.payload, Some(PayloadKind::Php));
    assert_eq!(settings.payload_read, Some(PayloadRead::Written));
    assert_eq!(settings.laravel_redis_prefix.as_deref(), Some(""));
    assert_eq!(settings.laravel_cache_prefix.as_deref(), Some("app_cache_"));

    let unset = Settings::from_toml("").unwrap();
    assert_eq!((unset.payload, unset.payload_read), (None, None));
}

#[test]
fn a_payload_that_is_none_is_refused_naming_the_setting() {
    assert_mentions(
        &error("store = \"redis\"\npayload = \"xml\"\n"),
        &[
            "unknown payload \"xml\"",
            "payload, line 2, column 11",
            "`json`, `php` and `laravel`",
        ],
    );
    assert_mentions(
        &error("payload_read = \"any\"\n"),
        &[
            "unknown payload_read \"any\"",
            "line 1",
            "`written` and `auto`",
        ],
    );
    assert_mentions(
        &env_error("", &[("FUSE_PAYLOAD", "Laravel")]),
        &["unknown payload \"Laravel\" (FUSE_PAYLOAD)"],
    );
    assert_mentions(
        &env_error("", &[("FUSE_PAYLOAD_READ", "always")]),
        &["unknown payload_read \"always\" (FUSE_PAYLOAD_READ)"],
    );
    // A typo of a variable names the one meant.
    assert_mentions(
        &env_error("", &[("FUSE_LARAVEL_CACHE_PREFX", "x_")]),
        &["did you mean FUSE_LARAVEL_CACHE_PREFIX?"],
    );
    // A key of the file's top level, not a circuit's.
    assert_mentions(
        &error("[breakers.billing]\npayload = \"php\"\n"),
        &["`payload` belongs at the top level"],
    );
}

#[test]
fn a_prefix_with_a_control_character_is_refused_naming_the_setting() {
    assert_mentions(
        &error("store = \"redis\"\nlaravel_cache_prefix = \"shop\\u001b[2J\"\n"),
        &[
            "invalid laravel_cache_prefix",
            "control characters",
            "line 2, column 24",
        ],
    );
    assert_mentions(
        &env_error("", &[("FUSE_LARAVEL_REDIS_PREFIX", "a\nb")]),
        &[
            "invalid laravel_redis_prefix",
            "from FUSE_LARAVEL_REDIS_PREFIX",
        ],
    );
}

#[test]
fn a_database_takes_json_alone_and_the_error_names_both_settings() {
    assert_mentions(
        &error("store = \"database\"\npayload = \"laravel\"\n"),
        &[
            "payload = \"laravel\" (line 2, column 11) needs store = \"redis\"",
            "the store is \"database\" (line 1, column 9)",
            "DatabaseStore",
        ],
    );
    assert_mentions(
        &env_error("", &[("FUSE_STORE", "database"), ("FUSE_PAYLOAD", "php")]),
        &[
            "payload = \"php\" (from FUSE_PAYLOAD)",
            "\"database\" (from FUSE_STORE)",
        ],
    );
    assert_mentions(
        &error("store = \"database\"\nlaravel_cache_prefix = \"x_\"\n"),
        &["laravel_cache_prefix (line 2, column 24) needs store = \"redis\""],
    );
    assert_mentions(
        &error("store = \"database\"\npayload_read = \"auto\"\n"),
        &["payload_read = \"auto\" (line 2, column 16) needs store = \"redis\""],
    );
    // JSON, as milon/fuse's DatabaseStore writes it, is a database's.
    Settings::from_toml("store = \"database\"\npayload = \"json\"\npayload_read = \"written\"\n")
        .unwrap();
}

#[cfg(feature = "redis")]
mod on_redis {
    use super::*;

    fn redis_url() -> Option<String> {
        common::server("FUSE_TEST_REDIS_URL", "payload settings' Redis")
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
    }

    async fn exists_in_db1(url: &str, key: &str) -> bool {
        let mut raw = redis::Client::open(url)
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let () = redis::cmd("SELECT")
            .arg(1)
            .query_async(&mut raw)
            .await
            .unwrap();
        redis::cmd("EXISTS")
            .arg(key)
            .query_async::<u64>(&mut raw)
            .await
            .unwrap()
            == 1
    }

    #[test]
    fn a_shared_registry_keeps_its_circuits_at_laravel_s_keys() {
        let Some(url) = redis_url() else { return };
        runtime().block_on(async {
            let app = common::unique("settings-laravel");
            let settings = Settings::from_toml(&format!(
                r#"
                store = "redis"
                redis_url = "{url}/1"
                app = "{app}"
                payload = "laravel"
                laravel_cache_prefix = "shop_cache_"
                "#
            ))
            .unwrap();
            let registry = settings.shared_registry().unwrap();
            let billing = registry.get("billing");
            billing.force_open().await.unwrap();
            let key = format!("fuse:{app}:billing");
            assert!(exists_in_db1(&url, &format!("laravel_database_shop_cache_{key}")).await);
            assert!(!exists_in_db1(&url, &key).await);
        });
    }

    #[test]
    fn a_redis_url_s_parameter_wins_over_the_setting() {
        let Some(url) = redis_url() else { return };
        runtime().block_on(async {
            let app = common::unique("settings-url");
            let settings = Settings::from_toml(&format!("store = \"redis\"\napp = \"{app}\"\npayload = \"json\"\nlaravel_redis_prefix = \"settings_\"\n"))
                .unwrap()
                .with_env_vars([(
                    "FUSE_REDIS_URL",
                    format!("{url}/1?payload=laravel&laravel_redis_prefix=url_").as_str(),
                )])
                .unwrap();
            let registry = settings.shared_registry().unwrap();
            registry.get("billing").force_open().await.unwrap();
            let key = format!("fuse:{app}:billing");
            assert!(exists_in_db1(&url, &format!("url_laravel_cache_{key}")).await);
            assert!(!exists_in_db1(&url, &format!("settings_laravel_cache_{key}")).await);
            assert!(!exists_in_db1(&url, &key).await);
        });
    }

    #[test]
    fn a_store_s_wrong_options_are_errors_naming_them() {
        let Some(url) = redis_url() else { return };
        runtime().block_on(async {
            let shared = |toml: String| Settings::from_toml(&toml).unwrap().shared_registry().map(drop);
            let err = shared(format!(
                "store = \"redis\"\nredis_url = \"{url}/1\"\nlaravel_cache_prefix = \"x_\"\n"
            ))
            .unwrap_err()
            .to_string();
            assert_mentions(
                &err,
                &["laravel_cache_prefix applies to payload = \"laravel\" alone", "\"json\""],
            );
            let err = shared(format!(
                "store = \"redis\"\nredis_url = \"{url}/1?paylod=laravel\"\n"
            ))
            .unwrap_err()
            .to_string();
            assert_mentions(&err, &["\"paylod\" is not one of the store's"]);
            let err = shared(format!(
                "store = \"redis\"\nredis_url = \"{url}/1?payload=laravel&laravel_redis_prefix=%1B\"\n"
            ))
            .unwrap_err()
            .to_string();
            assert_mentions(&err, &["invalid laravel_redis_prefix", "control characters"]);
        });
    }
}
