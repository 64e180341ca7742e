//! A Rust service and a PHP application running milon/fuse on one key
//! (docs/milon-fuse.md): the PHP side is a real PHP process running
//! `tests/php/milon.php` (milon/fuse's `CircuitBreaker` over its Laravel
//! cache, PSR-16 and database stores), driven a command at a time so that
//! a test interleaves the two languages' steps exactly.
//!
//! PHP is `FUSE_TEST_PHP`, else `php` on the `PATH`. Without it (or
//! without the extension a store needs) the tests are skipped, said once;
//! under `CI=true` that is a failure.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::Duration;

/// The tests of `scenario` (a `fn(&Target)` of the module), one per
/// store milon/fuse keeps a circuit in: a Redis key holding JSON (a PSR-16
/// cache), Laravel's cache on Redis (milon/fuse's default store), and its
/// `DatabaseStore` on PostgreSQL and SQLite. `sql: scenario` for the
/// database alone.
macro_rules! on_every_store {
    ($scenario:ident) => {
        mod $scenario {
            #[cfg(feature = "redis")]
            #[test]
            fn on_a_redis_json_key() {
                crate::php::target::run(crate::php::target::Kind::Json, super::$scenario);
            }

            #[cfg(feature = "redis")]
            #[test]
            fn on_laravel_s_cache_key() {
                crate::php::target::run(crate::php::target::Kind::Laravel, super::$scenario);
            }

            on_every_store!(@sql $scenario);
        }
    };
    (sql: $scenario:ident) => {
        mod $scenario {
            on_every_store!(@sql $scenario);
        }
    };
    (@sql $scenario:ident) => {
        #[cfg(feature = "sql")]
        #[test]
        fn on_postgresql() {
            crate::php::target::run(crate::php::target::Kind::Postgres, super::$scenario);
        }

        #[cfg(feature = "sql")]
        #[test]
        fn on_sqlite() {
            crate::php::target::run(crate::php::target::Kind::Sqlite, super::$scenario);
        }
    };
}

#[cfg(feature = "sql")]
mod expiry;
mod keys;
mod opening;
mod probes;
mod target;
mod verdicts;

/// How long an answer may take (PHP starting, a store's round trip, a
/// loaded machine).
const ANSWER: Duration = Duration::from_secs(20);

/// The script, in this repository.
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/php/milon.php");

/// A running `milon.php`: one circuit of milon/fuse in one store. Killed
/// when dropped.
#[derive(Debug)]
pub(super) struct Php {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    /// The store and key, for messages.
    what: String,
}

/// The PHP binary, or `None` (said once) when there is none outside CI.
fn binary() -> Option<String> {
    let php = std::env::var("FUSE_TEST_PHP")
        .ok()
        .filter(|php| !php.is_empty())
        .unwrap_or_else(|| "php".to_owned());
    let runs = Command::new(&php)
        .arg("-v")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success());
    if runs {
        Some(php)
    } else {
        skip(&format!("{php} does not run"));
        None
    }
}

/// Skips the PHP tests (said once per reason), or fails under `CI=true`.
fn skip(why: &str) {
    static SAID: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    assert!(
        std::env::var("CI").as_deref() != Ok("true"),
        "CI=true and {why}: the PHP interop tests cannot be skipped (set FUSE_TEST_PHP)"
    );
    let mut said = SAID
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if !said.iter().any(|done| done == why) {
        eprintln!("{why}: the PHP interop tests are skipped");
        said.push(why.to_owned());
    }
}

impl Php {
    /// `milon.php STORE URL ARGS...` started and ready, or `None` (said)
    /// when PHP or the store's extension is missing outside CI.
    pub(super) fn start(store: &str, url: &str, args: &[String]) -> Option<Php> {
        let php = binary()?;
        let mut child = Command::new(&php)
            .args(["-d", "display_errors=stderr", SCRIPT, store, url])
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|err| panic!("{php} {SCRIPT}: {err}"));
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        // A thread reads the answers, so that waiting for one can time out.
        let (send, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if send.send(line).is_err() {
                    break;
                }
            }
        });
        let mut php = Php {
            child,
            stdin,
            lines,
            what: format!("milon.php {store} {}", args.join(" ")),
        };
        let first = php.answer("start");
        if let Some(extension) = first.strip_prefix("missing ") {
            skip(&format!("PHP has no {extension} extension"));
            return None;
        }
        assert_eq!(first, "ready", "{}", php.what);
        Some(php)
    }

    /// The next line the script says.
    fn answer(&mut self, after: &str) -> String {
        match self.lines.recv_timeout(ANSWER) {
            Ok(line) => line,
            Err(RecvTimeoutError::Timeout) => {
                panic!("{}: no answer to {after:?} within {ANSWER:?}", self.what)
            }
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.wait().ok();
                panic!(
                    "{}: exited ({status:?}) before answering {after:?}",
                    self.what
                )
            }
        }
    }

    /// Sends `command`, returns its answer; an `error` answer fails the
    /// test.
    pub(super) fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}")
            .and_then(|()| self.stdin.flush())
            .unwrap_or_else(|err| panic!("{}: sending {command:?}: {err}", self.what));
        let answer = self.answer(command);
        assert!(
            !answer.starts_with("error"),
            "{}: {command}: {answer}",
            self.what
        );
        answer
    }

    /// milon/fuse's `allowRequest`: whether the call may run.
    pub(super) fn allow(&mut self) -> bool {
        match self.ask("allow").as_str() {
            "granted" => true,
            "rejected" => false,
            other => panic!("{}: allow answered {other:?}", self.what),
        }
    }

    /// `recordSuccess`.
    pub(super) fn success(&mut self) {
        assert_eq!(self.ask("success"), "ok");
    }

    /// `recordFailure`.
    pub(super) fn failure(&mut self) {
        assert_eq!(self.ask("failure"), "ok");
    }

    /// `releaseProbe` (an ignored error).
    pub(super) fn release(&mut self) {
        assert_eq!(self.ask("release"), "ok");
    }

    /// The snapshot as milon/fuse reads it (nothing written).
    pub(super) fn state(&mut self) -> serde_json::Value {
        let answer = self.ask("state");
        serde_json::from_str(&answer)
            .unwrap_or_else(|err| panic!("{}: state {answer:?}: {err}", self.what))
    }

    /// The snapshot's `state` field.
    pub(super) fn state_name(&mut self) -> String {
        self.state()["state"].as_str().expect("a state").to_owned()
    }

    /// The circuit's key as milon/fuse makes it.
    pub(super) fn key(&mut self) -> String {
        self.ask("key")
    }

    /// Pins PHP's clock (the breaker's and the store's) to `second`.
    pub(super) fn pin(&mut self, second: u64) {
        assert_eq!(self.ask(&format!("now {second}")), second.to_string());
    }

    /// Back to the system's clock.
    pub(super) fn unpin(&mut self) {
        self.ask("now system");
    }
}

impl Drop for Php {
    fn drop(&mut self) {
        // Gone already, or killed now: either way nothing is left running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Unix second of this machine's clock (the stores' servers run on it
/// too).
pub(super) fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}
