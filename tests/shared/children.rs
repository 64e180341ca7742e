//! Children of the tests that run several processes: the test binary
//! again, each running one ignored test (`module::child`) with what it
//! needs in its environment. A child prints `child: ready` once connected
//! to its store, then reads the parent's words on its standard input.

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdout, Command, Stdio};

/// What a child prints, line by line.
pub(crate) type Output = Lines<BufReader<ChildStdout>>;

/// A child running the ignored test `test` with `env`, ready, and its
/// output from there on.
pub(crate) fn spawn(test: &str, env: &[(&str, &str)]) -> (Child, Output) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            test,
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("the test binary");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let ready = lines.any(|line| line.is_ok_and(|line| line == "child: ready"));
    assert!(ready, "a child of {test} did not get ready");
    (child, lines)
}

/// Says `word` to `child`.
pub(crate) fn say(child: &mut Child, word: &str) {
    let stdin = child.stdin.as_mut().unwrap();
    writeln!(stdin, "{word}").unwrap();
    stdin.flush().unwrap();
}
