//! What reaches the terminal and what is refused: control characters,
//! passwords, misspelt settings, options after the command.

use super::*;

#[test]
fn control_characters_in_keys_never_reach_the_terminal() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let title = format!("fuse:{app}:\x1b]0;pwned\x07");
        let clear = format!("fuse:{app}:\x1b[2J\u{9b}2J");
        put(&target, &title, CLOSED);
        put(&target, &clear, CLOSED);
        put(&target, &format!("fuse:{app}:\x1b[31mred"), "[1]");
        for args in [&["status"][..], &["status", "--json"]] {
            let out = fuse(&target, &app, args);
            assert!(!has_control(&out.stdout), "{at}: {args:?}: {out:?}");
            assert!(!has_control(&out.stderr), "{at}: {args:?}: {out:?}");
        }
        let table = stdout(&fuse(&target, &app, &["status"]));
        line_of(&table, &format!("fuse:{app}:\\x1b]0;pwned\\x07"));
        line_of(&table, &format!("fuse:{app}:\\x1b[2J\\u{{9b}}2J"));
        // The unreadable key's reason, on stderr, names it escaped.
        let out = fuse(&target, &app, &["status"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("\\x1b[31mred"), "{at}: {err}");
        // A circuit named with a control character has it escaped in its
        // key, so the command never sends one to the store either.
        let out = fuse(&target, &app, &["status", "\x1b[31mred"]);
        assert!(out.status.success(), "{at}: {out:?}");
        assert!(!has_control(&out.stdout), "{at}: {out:?}");
        assert!(!has_control(&out.stderr), "{at}: {out:?}");
    }
}

#[test]
fn a_misspelt_setting_in_the_environment_is_refused_with_the_right_name() {
    let target = Target {
        flag: "--database-url",
        url: format!(
            "sqlite://{}/cli-env-{}.db",
            env!("CARGO_TARGET_TMPDIR"),
            std::process::id()
        ),
    };
    block_on(async {
        let store = fuse_breaker::store::SqlStore::open(&target.url).unwrap();
        store.ensure_schema().await.unwrap();
    });
    let out = command()
        .args([target.flag, &target.url, "status"])
        .env("FUSE_FAILURE_TRESHOLD", "3")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("FUSE_FAILURE_TRESHOLD")
            && err.contains("did you mean FUSE_FAILURE_THRESHOLD"),
        "{err}"
    );
    // Variables of the command, the tests and other programs are no settings.
    let out = command()
        .args([target.flag, &target.url, "status"])
        .env("FUSE_ADMIN_TOKEN", "x")
        .env("FUSE_TEST_SOMETHING", "1")
        .env("FUSE_SCREENSHOT_DIR", "/tmp")
        .env("FUSE_STRESS_SECS", "3")
        .output()
        .unwrap();
    stdout(&out);
}

#[test]
fn the_connection_options_may_follow_the_command() {
    for target in targets() {
        let at = &target.url;
        let app = app();
        let out = command()
            .args(["open", "billing", target.flag, &target.url, "--app", &app])
            .output()
            .unwrap();
        stdout(&out);
        let out = command()
            .args([
                "status",
                "billing",
                "--json",
                "--app",
                &app,
                target.flag,
                &target.url,
            ])
            .output()
            .unwrap();
        assert!(stdout(&out).contains("\"state\":\"open\""), "{at}: {out:?}");
    }
}

/// No password given in a URL reaches the output, whatever the scheme,
/// the command, and whether the server is there or not.
#[test]
fn no_password_of_a_url_is_printed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let (api, _) = fake_api(100, |_| "{\"code\": \"x\"}".to_owned());
    let api = api.replace("http://", "http://admin:hunter2@");
    let unix = format!("{}/nowhere-{port}.sock", env!("CARGO_TARGET_TMPDIR"));
    let urls = [
        (
            "--database-url",
            format!("postgres://admin:hunter2@127.0.0.1:{port}/fuse"),
        ),
        (
            "--database-url",
            format!("postgresql://127.0.0.1:{port}/fuse?user=a&password=hunter2"),
        ),
        (
            "--database-url",
            format!("postgres://admin:hunter2@127.0.0.1:{port}/fuse?sslmode=bogus"),
        ),
        ("--redis", format!("redis://:hunter2@127.0.0.1:{port}/0")),
        (
            "--redis",
            format!("redis://admin:hunter2@127.0.0.1:{port}/notadb"),
        ),
        (
            "--redis",
            format!("rediss://admin:hunter2@127.0.0.1:{port}"),
        ),
        ("--redis", format!("redis+unix://{unix}?pass=hunter2")),
        (
            "--url",
            format!("http://admin:hunter2@127.0.0.1:{port}/fuse"),
        ),
        ("--url", api),
        (
            "--url",
            format!("ftp://admin:hunter2@127.0.0.1:{port}/fuse"),
        ),
    ];
    for (flag, url) in urls {
        for args in [
            &["status"][..],
            &["status", "billing"],
            &["open", "billing"],
        ] {
            let out = fuse(
                &Target {
                    flag,
                    url: url.clone(),
                },
                "shop",
                args,
            );
            let printed = format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(!out.status.success(), "{url} {args:?}: {printed}");
            assert!(!printed.contains("hunter2"), "{url} {args:?}: {printed}");
            assert!(
                printed.contains("127.0.0.1") || printed.contains("nowhere"),
                "{url} {args:?}: {printed}"
            );
        }
    }
}
