//! A shared circuit's quorum (SPEC §8) in the status.

use super::*;

/// SPEC §8's quorum: a shared circuit held closed by `min_reporters` (one
/// process failing, `FUSE_MIN_REPORTERS=2`) shows its reporters after its
/// columns, and in JSON; a circuit without a quorum shows none.
#[test]
fn a_shared_circuit_s_quorum_reaches_the_status() {
    use fuse_breaker::Config;

    for target in targets() {
        let at = &target.url;
        let app = app();
        let config = Config::builder()
            .failure_threshold(2)
            .min_reporters(2)
            .build()
            .unwrap();
        block_on(async {
            let store = fuse_breaker::store::open(&target.url).unwrap();
            let fuse = fuse_breaker::Fuse::builder("billing")
                .store(store)
                .app(&app)
                .config(config)
                .build();
            for _ in 0..3 {
                let permit = fuse.try_acquire().await.unwrap();
                permit.failure().await.unwrap();
            }
        });
        let status = |json: bool, quorum: &str| {
            let mut command = command();
            command.args([target.flag, &target.url, "--app", &app, "status", "billing"]);
            if json {
                command.arg("--json");
            }
            stdout(
                &command
                    .env("FUSE_FAILURE_THRESHOLD", "2")
                    .env("FUSE_MIN_REPORTERS", quorum)
                    .output()
                    .unwrap(),
            )
        };
        let table = status(false, "2");
        let line = line_of(&table, &format!("fuse:{app}:billing"));
        assert!(line.contains(" closed "), "{at}: {table}");
        assert!(line.ends_with("  quorum 1/2"), "{at}: {table}");
        let json: serde_json::Value = serde_json::from_str(status(true, "2").trim()).unwrap();
        assert_eq!(
            (
                &json["reporters"],
                &json["min_reporters"],
                &json["failures"]
            ),
            (&1.into(), &2.into(), &2.into()),
            "{at}"
        );
        let table = status(false, "1");
        let line = line_of(&table, &format!("fuse:{app}:billing"));
        assert!(!line.contains("quorum"), "{at}: {table}");
    }
}

/// SPEC §8's quorum through an admin API: a shared circuit with
/// `min_reporters` 2 shows its reporters after its columns; an in-process
/// one (which ignores the setting) and one of an older API show none.
#[test]
fn an_admin_api_s_quorum_is_shown_for_shared_circuits_only() {
    let quorum = |key: &str, shared: bool| {
        let mut value = view(key, "closed");
        value["shared"] = shared.into();
        value["reporters"] = 1.into();
        value["config"]["min_reporters"] = 2.into();
        value
    };
    let (url, _) = fake_api(100, move |_| {
        serde_json::json!({"circuits": [quorum("fuse:shop:billing", true),
                                         quorum("fuse:shop:local", false),
                                         view("fuse:shop:older", "closed")],
                           "total": 3, "next": null, "writable": false})
        .to_string()
    });
    let target = Target { flag: "--url", url };
    let table = stdout(&fuse(&target, "shop", &["status"]));
    assert!(
        line_of(&table, "fuse:shop:billing").ends_with("  quorum 1/2"),
        "{table}"
    );
    for key in ["fuse:shop:local", "fuse:shop:older"] {
        assert!(!line_of(&table, key).contains("quorum"), "{table}");
    }
}
