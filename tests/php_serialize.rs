//! The PHP encoding of a payload against real PHP (`php` on the `PATH`):
//! PHP's `unserialize()` of what the crate writes gives milon/fuse's five
//! fields with the types milon/fuse compares them as (the crate's own
//! fields a string under `fuse`), and PHP's `serialize()` of it gives the
//! crate's bytes back; what PHP serializes of milon/fuse's array the
//! crate reads as the same circuit as its JSON.
//!
//! Without `php` the tests are skipped, saying so; under `CI=true` that is
//! a failure.
#![cfg(feature = "store")]

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use fuse_breaker::store::{Codec, Encoding, MemoryStore, SharedFuse, Store, snapshot_of};
use fuse_breaker::{Config, State};

/// Whether PHP runs here (`php -v`); without it, a failure under
/// `CI=true` and a skip, said, elsewhere.
fn php_runs() -> bool {
    let runs = Command::new("php")
        .arg("-v")
        .output()
        .is_ok_and(|out| out.status.success());
    if !runs {
        assert!(
            std::env::var("CI").as_deref() != Ok("true"),
            "CI=true and no `php` on the PATH: the PHP serialize() tests cannot be skipped"
        );
        eprintln!("`php` does not run here: the PHP serialize() tests are skipped");
    }
    runs
}

/// A file of this test run's own under cargo's temporary directory for
/// integration tests, holding `contents`.
fn file(name: &str, contents: &[u8]) -> PathBuf {
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("php-serialize-{}-{name}", std::process::id()));
    std::fs::write(&path, contents).expect("a temporary file");
    path
}

/// What PHP prints running `script` (saved as `name`) with `args`, which
/// must succeed.
fn php(name: &str, script: &str, args: &[&str]) -> String {
    let path = file(name, script.as_bytes());
    let out = Command::new("php")
        .arg(&path)
        .args(args)
        .output()
        .expect("php runs");
    assert!(
        out.status.success(),
        "php failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("PHP prints UTF-8")
}

/// Unserializes the payload in the file `argv[1]` as Laravel's cache does
/// (no classes allowed) and reports, as JSON, the types milon/fuse's
/// `CircuitSnapshot::fromArray` and `CircuitBreaker` see, and whether
/// `serialize()` gives the same bytes back.
const UNSERIALIZE: &str = r#"<?php
declare(strict_types=1);
$raw = file_get_contents($argv[1]);
$data = unserialize($raw, ['allowed_classes' => false]);
if (!is_array($data)) {
    fwrite(STDERR, "unserialize() gave no array\n");
    exit(1);
}
$failures = $data['failures'];
echo json_encode([
    'keys' => array_keys($data),
    'state' => get_debug_type($data['state']),
    'state_value' => $data['state'],
    'opened_at' => get_debug_type($data['opened_at']),
    'opened_at_value' => $data['opened_at'],
    'failures_list' => is_array($failures) && array_is_list($failures),
    'failures' => array_map('get_debug_type', $failures),
    'failure_values' => $failures,
    'half_open_successes' => get_debug_type($data['half_open_successes']),
    'half_open_inflight' => get_debug_type($data['half_open_inflight']),
    'inflight_value' => $data['half_open_inflight'],
    'fuse' => get_debug_type($data['fuse']),
    'own' => $data['fuse'],
    'reserialized' => serialize($data) === $raw,
]), "\n";
"#;

/// Prints, for milon/fuse's arrays of a closed, an open and a half-open
/// circuit at the time `argv[1]`, their name, `serialize()` and
/// `json_encode()`, both in hexadecimal.
const SERIALIZE: &str = r#"<?php
declare(strict_types=1);
$now = (int) $argv[1];
$arrays = [
    'closed' => ['state' => 'closed', 'opened_at' => null, 'failures' => [$now - 5, $now - 2], 'half_open_successes' => 0, 'half_open_inflight' => 0],
    'open' => ['state' => 'open', 'opened_at' => $now - 10, 'failures' => [$now - 12, $now - 10], 'half_open_successes' => 0, 'half_open_inflight' => 0],
    'half_open' => ['state' => 'half_open', 'opened_at' => $now - 40, 'failures' => [], 'half_open_successes' => 1, 'half_open_inflight' => 1],
];
foreach ($arrays as $name => $array) {
    echo $name, ' ', bin2hex(serialize($array)), ' ', bin2hex(json_encode($array)), "\n";
}
"#;

fn block_on<F: std::future::Future>(scenario: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime")
        .block_on(scenario)
}

fn config() -> Config {
    Config::builder()
        .failure_threshold(3)
        .half_open_probes(2)
        .build()
        .expect("a valid configuration")
}

/// What PHP makes of the payload under `fuse:billing`.
async fn unserialized(store: &MemoryStore) -> serde_json::Value {
    let payload = store.load("fuse:billing").await.unwrap().payload.unwrap();
    let path = file("payload", &payload);
    let report = php("unserialize.php", UNSERIALIZE, &[path.to_str().unwrap()]);
    serde_json::from_str(&report).unwrap_or_else(|err| panic!("{err}: {report}"))
}

#[test]
fn php_unserializes_what_the_crate_writes_with_milon_s_types() {
    if !php_runs() {
        return;
    }
    block_on(async {
        let store = Arc::new(MemoryStore::frozen().with_codec(Codec::new(Encoding::Php)));
        let now = store.load("fuse:clock").await.unwrap().now.as_secs();
        let fuse = fuse_breaker::Fuse::builder("billing")
            .store(store.clone())
            .config(config())
            .build();
        for step in ["closed", "open", "half_open", "recovered"] {
            let mut probe = None;
            match step {
                "closed" => {
                    for _ in 0..2 {
                        fuse.try_acquire().await.unwrap().failure().await.unwrap();
                    }
                }
                "open" => fuse.try_acquire().await.unwrap().failure().await.unwrap(),
                "half_open" => {
                    store.advance(Duration::from_secs(30));
                    probe = Some(fuse.try_acquire().await.unwrap());
                }
                _ => {}
            }
            let php = unserialized(&store).await;
            let state = if step == "recovered" { "closed" } else { step };
            let keys = [
                "state",
                "opened_at",
                "failures",
                "half_open_successes",
                "half_open_inflight",
                "fuse",
            ];
            assert_eq!(php["keys"], serde_json::json!(keys), "{step}: {php}");
            assert_eq!(php["state"], "string", "{step}");
            assert_eq!(php["state_value"], state, "{step}");
            let opened_at = if state == "closed" { "null" } else { "int" };
            assert_eq!(php["opened_at"], opened_at, "{step}: {php}");
            if opened_at == "int" {
                let at = php["opened_at_value"].as_u64().unwrap();
                assert!(at.abs_diff(now) <= 30, "{step}: whole seconds: {at}");
            }
            assert_eq!(php["failures_list"], true, "{step}");
            // Closed: the window's two; open: the three that opened it,
            // as milon/fuse keeps them.
            let failures = match step {
                "closed" => 2,
                "open" => 3,
                _ => 0,
            };
            assert_eq!(
                php["failures"],
                serde_json::json!(vec!["int"; failures]),
                "{step}: {php}"
            );
            for at in php["failure_values"].as_array().unwrap() {
                assert!(at.as_u64().unwrap().abs_diff(now) <= 1, "{step}: {at}");
            }
            assert_eq!(php["half_open_successes"], "int", "{step}");
            assert_eq!(php["half_open_inflight"], "int", "{step}");
            let inflight = u64::from(step == "half_open");
            assert_eq!(php["inflight_value"], inflight, "{step}");
            assert_eq!(php["fuse"], "string", "{step}: milon/fuse ignores it");
            let own: serde_json::Value =
                serde_json::from_str(php["own"].as_str().unwrap()).unwrap();
            assert!(own["generation"].as_u64().is_some(), "{step}: {own}");
            assert_eq!(
                php["reserialized"], true,
                "{step}: PHP's serialize() gives the crate's bytes back"
            );
            if let Some(probe) = probe {
                probe.success().await.unwrap();
                probe_success(&fuse).await;
            }
        }
    });
}

/// The second success of a half-open circuit of two probes: it closes.
async fn probe_success(fuse: &SharedFuse) {
    fuse.try_acquire().await.unwrap().success().await.unwrap();
    assert_eq!(fuse.state().await.unwrap(), State::Closed);
}

#[test]
fn the_crate_reads_what_php_serializes_as_the_same_circuit_as_its_json() {
    if !php_runs() {
        return;
    }
    block_on(async {
        let store =
            Arc::new(MemoryStore::frozen().with_codec(Codec::new(Encoding::Php).reading_any()));
        let now = store.load("fuse:clock").await.unwrap().now.as_secs();
        let printed = php("serialize.php", SERIALIZE, &[&now.to_string()]);
        let config = config();
        let mut states = Vec::new();
        for line in printed.lines() {
            let [name, serialized, json] = line.split(' ').collect::<Vec<_>>()[..] else {
                panic!("a line of three: {line}");
            };
            let (serialized, json) = (hex(serialized), hex(json));
            assert!(serialized.starts_with(b"a:5:{s:5:\"state\";"), "{name}");
            store.put(
                &format!("fuse:{name}-php"),
                &serialized,
                Duration::from_mins(2),
            );
            store.put(&format!("fuse:{name}-json"), &json, Duration::from_mins(2));
            let php = snapshot_of(&*store, &format!("fuse:{name}-php"), &config).await;
            let json = snapshot_of(&*store, &format!("fuse:{name}-json"), &config).await;
            let php = php.unwrap().unwrap();
            assert_eq!(Some(php.clone()), json.unwrap(), "{name}");
            states.push((php.state, php.failures.len()));
        }
        assert_eq!(
            states,
            [(State::Closed, 2), (State::Open, 0), (State::HalfOpen, 0)]
        );
        // The open circuit PHP wrote rejects this crate's calls for what
        // is left of it, and its next write stays serialized.
        let fuse = fuse_breaker::Fuse::builder("open-php")
            .store(store.clone())
            .config(config)
            .build();
        let retry = fuse
            .try_acquire()
            .await
            .unwrap_err()
            .open_error()
            .expect("open")
            .retry_after();
        assert!(
            retry > Duration::from_secs(18) && retry <= Duration::from_secs(20),
            "{retry:?}"
        );
        fuse.force_closed().await.unwrap();
        let written = store.load("fuse:open-php").await.unwrap().payload.unwrap();
        assert!(written.starts_with(b"a:6:{"));
    });
}

/// The bytes of the hexadecimal `text`.
fn hex(text: &str) -> Vec<u8> {
    (0..text.len())
        .step_by(2)
        .map(|at| u8::from_str_radix(&text[at..at + 2], 16).expect("hexadecimal"))
        .collect()
}
