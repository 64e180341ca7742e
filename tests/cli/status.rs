//! A circuit's status on every store: opened, closed and reset by the
//! command, a corrupt payload and an unreachable server, a key repaired.

use super::*;

#[test]
fn open_close_and_reset_show_in_the_status() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        stdout(&fuse(&target, &app, &["open", "billing:charge"]));
        stdout(&fuse(&target, &app, &["open", "search"]));
        let table = stdout(&fuse(&target, &app, &["status"]));
        let key = format!("fuse:{app}:billing:charge");
        let line = table
            .lines()
            .find(|line| line.starts_with(&key))
            .unwrap_or_else(|| panic!("{at}: {table}"));
        assert!(line.contains(" open "), "{at}: {line}");
        assert!(line.contains("0/2"), "{at}: {line}");
        assert!(
            line.trim_end().ends_with('s'),
            "{at}: time until half-open: {line}"
        );
        assert!(
            table.contains(&format!("fuse:{app}:search")),
            "{at}: {table}"
        );

        let json = stdout(&fuse(
            &target,
            &app,
            &["status", "billing:charge", "--json"],
        ));
        let value: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(value["key"], key.as_str(), "{at}");
        assert_eq!(value["state"], "open", "{at}");
        assert!(value["half_open_in_ms"].as_u64().unwrap() <= 30_000, "{at}");

        stdout(&fuse(&target, &app, &["close", "billing:charge"]));
        let json = stdout(&fuse(
            &target,
            &app,
            &["status", "billing:charge", "--json"],
        ));
        assert!(json.contains("\"state\":\"closed\""), "{at}: {json}");
        stdout(&fuse(&target, &app, &["reset", "search"]));
        let json = stdout(&fuse(&target, &app, &["status", "search", "--json"]));
        assert!(json.contains("\"state\":\"closed\""), "{at}: {json}");
    }
}

#[test]
fn a_corrupt_payload_and_an_unreachable_server_are_clear_errors() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let key = format!("fuse:{app}:billing");
        // JSON that is not a circuit (all a `json` column takes).
        put(&target, &key, "[1, 2]");
        let out = fuse(&target, &app, &["status", "billing"]);
        assert!(!out.status.success(), "{at}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&key) && err.contains("not a circuit"),
            "{at}: {err}"
        );
    }

    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let nowhere = [
        ("--redis", format!("redis://127.0.0.1:{port}")),
        (
            "--database-url",
            format!("postgres://fuse@127.0.0.1:{port}/fuse"),
        ),
    ];
    for (flag, url) in nowhere {
        let target = Target { flag, url };
        let out = fuse(&target, &app(), &["status"]);
        assert!(!out.status.success());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("unreachable") && err.contains(&port.to_string()),
            "{flag}: {err}"
        );
    }
    let out = Command::new(env!("CARGO_BIN_EXE_fuse"))
        .args(["status"])
        .env_remove("FUSE_REDIS_URL")
        .env_remove("FUSE_DATABASE_URL")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--redis") && err.contains("--database-url"),
        "{err}"
    );
}

/// A key that holds no circuit is repaired by `open`, `close` and `reset`,
/// which say what they replaced, on every store.
#[test]
fn open_close_and_reset_repair_a_key_that_holds_no_circuit() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        for (command, state) in [("open", "open"), ("close", "closed"), ("reset", "closed")] {
            let name = format!("billing-{command}");
            let key = format!("fuse:{app}:{name}");
            put(&target, &key, "[1, 2]");
            let out = fuse(&target, &app, &[command, &name]);
            assert!(out.status.success(), "{at}: {command}: {out:?}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains(&key)
                    && err.contains("held no circuit")
                    && err.contains("not a circuit"),
                "{at}: {command}: {err}"
            );
            let table = stdout(&fuse(&target, &app, &["status", &name]));
            assert!(
                line_of(&table, &key).contains(&format!(" {state} ")),
                "{at}: {command}: {table}"
            );
            // Once repaired, nothing is said.
            let again = fuse(&target, &app, &[command, &name]);
            assert!(again.status.success(), "{at}: {command}");
            assert!(again.stderr.is_empty(), "{at}: {command}: {again:?}");
        }
    }
}
