//! A small client of Chromium's remote debugging protocol (CDP): it starts
//! a headless Chromium on a fresh profile, attaches to its page over a
//! WebSocket, and navigates, evaluates script, waits for conditions, clicks
//! and takes screenshots. Every call has a timeout and fails with a message that says
//! what went wrong; dropping the [`Browser`] kills the browser and removes
//! its profile.

use base64::Engine as _;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use futures::{SinkExt as _, StreamExt as _};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long one protocol call may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// How long the browser may take to start and show its page.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(20);

/// The Chromium to test with: `FUSE_TEST_CHROMIUM`, else `chromium`,
/// `chromium-browser` or `google-chrome` on `PATH`. Without one the test is
/// skipped (`None`), except under `CI=true`, where this panics.
pub(crate) fn chromium() -> Option<PathBuf> {
    let found = std::env::var_os("FUSE_TEST_CHROMIUM")
        .map(PathBuf::from)
        .or_else(|| {
            let path = std::env::var_os("PATH")?;
            ["chromium", "chromium-browser", "google-chrome"]
                .iter()
                .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
                .find(|candidate| candidate.is_file())
        });
    if found.is_none() {
        assert!(
            std::env::var("CI").map_or(true, |ci| ci != "true"),
            "CI=true and no Chromium: the dashboard's browser test cannot be skipped"
        );
        eprintln!(
            "skipped: no Chromium (set FUSE_TEST_CHROMIUM, or put chromium, chromium-browser \
             or google-chrome on PATH)"
        );
    }
    found
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A headless Chromium and the WebSocket of its page.
#[derive(Debug)]
pub(crate) struct Browser {
    socket: Socket,
    next_id: u64,
    _process: Process,
}

/// The browser process and its profile, both gone when this is dropped.
#[derive(Debug)]
struct Process {
    child: Child,
    profile: PathBuf,
}

impl Browser {
    /// Starts `binary` headless on a fresh profile and attaches to its page.
    pub(crate) async fn launch(binary: &Path) -> Result<Browser, String> {
        static PROFILES: AtomicU32 = AtomicU32::new(0);
        let profile = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
            "chromium-profile-{}-{}",
            std::process::id(),
            PROFILES.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&profile);
        std::fs::create_dir_all(&profile)
            .map_err(|err| format!("cannot create {}: {err}", profile.display()))?;
        let flags = "--headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
                     --no-first-run --no-default-browser-check --remote-debugging-port=0 \
                     --window-size=1280,800";
        let child = Command::new(binary)
            .args(flags.split_whitespace())
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|err| format!("cannot start {}: {err}", binary.display()))?;
        // Its stderr is read to the end (a full pipe would stall it); the
        // lines come here until the debugging address is found.
        let mut process = Process { child, profile };
        let stderr = process.child.stderr.take().expect("stderr is piped");
        let (lines, seen) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = lines.send(line);
            }
        });
        let port = {
            let binary = binary.to_owned();
            tokio::task::spawn_blocking(move || debugging_port(&seen, &binary))
                .await
                .map_err(|err| err.to_string())??
        };
        let socket = attach(port).await?;
        Ok(Browser {
            socket,
            next_id: 0,
            _process: process,
        })
    }

    /// Sends `method` with `params` and returns its result (events that
    /// arrive meanwhile are skipped).
    pub(crate) async fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let request = json!({ "id": id, "method": method, "params": params }).to_string();
        let exchange = async {
            let sent = self.socket.send(Message::Text(request.into())).await;
            sent.map_err(|err| format!("{method}: cannot send: {err}"))?;
            while let Some(message) = self.socket.next().await {
                let message =
                    message.map_err(|err| format!("{method}: the socket failed: {err}"))?;
                // Events, and answers to calls that timed out, are skipped.
                let Ok(Ok(reply)) = message.to_text().map(serde_json::from_str::<Value>) else {
                    continue;
                };
                if reply["id"] != id {
                    continue;
                }
                if let Some(error) = reply.get("error") {
                    return Err(format!("{method} failed: {error}"));
                }
                return Ok(reply["result"].clone());
            }
            Err(format!("{method}: the browser closed the socket"))
        };
        tokio::time::timeout(CALL_TIMEOUT, exchange)
            .await
            .map_err(|_| format!("{method}: no answer in {CALL_TIMEOUT:?}"))?
    }

    /// Loads `url` in the page.
    pub(crate) async fn navigate(&mut self, url: &str) -> Result<(), String> {
        let result = self.call("Page.navigate", json!({ "url": url })).await?;
        match result["errorText"].as_str() {
            Some(error) if !error.is_empty() => Err(format!("cannot load {url}: {error}")),
            _ => Ok(()),
        }
    }

    /// The value of the expression `js` (promises awaited); a thrown
    /// exception is an error with its message.
    pub(crate) async fn evaluate(&mut self, js: &str) -> Result<Value, String> {
        let params = json!({ "expression": js, "returnByValue": true, "awaitPromise": true });
        let result = self.call("Runtime.evaluate", params).await?;
        if let Some(details) = result.get("exceptionDetails") {
            let message = details["exception"]["description"]
                .as_str()
                .or_else(|| details["text"].as_str())
                .unwrap_or("an exception");
            return Err(format!("{js}\nthrew: {message}"));
        }
        Ok(result["result"]["value"].clone())
    }

    /// Polls the condition `js` every 50 ms until it is truthy (its value is
    /// returned) or `timeout` passes (the error shows its last value and the
    /// page's text).
    pub(crate) async fn wait_for(&mut self, js: &str, timeout: Duration) -> Result<Value, String> {
        let deadline = Instant::now() + timeout;
        let probe = format!("(v => [!!v, v])(({js}))");
        loop {
            let last = self.evaluate(&probe).await;
            if let Ok(Value::Array(pair)) = &last
                && pair[0] == true
            {
                return Ok(pair[1].clone());
            }
            if Instant::now() >= deadline {
                let text = match self.evaluate("document.body?.innerText").await {
                    Ok(Value::String(text)) => text.chars().take(1500).collect::<String>(),
                    other => format!("{other:?}"),
                };
                return Err(format!(
                    "waited {timeout:?} for `{js}`; last: {last:?}\n--- the page ---\n{text}"
                ));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Clicks the first element `selector` matches (an error if none does).
    pub(crate) async fn click(&mut self, selector: &str) -> Result<(), String> {
        let quoted = Value::from(selector).to_string();
        let js = format!(
            "(() => {{ const e = document.querySelector({quoted}); if (!e) return false; \
             e.click(); return true; }})()"
        );
        match self.evaluate(&js).await? {
            Value::Bool(true) => Ok(()),
            _ => Err(format!("click: nothing matches {selector}")),
        }
    }

    /// Saves a PNG of the viewport at `path`.
    pub(crate) async fn screenshot_png(&mut self, path: &Path) -> Result<(), String> {
        let shot = self.call("Page.captureScreenshot", json!({})).await?;
        let data = shot["data"].as_str().ok_or("a screenshot without data")?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|err| format!("a screenshot that is not base64: {err}"))?;
        std::fs::write(path, png).map_err(|err| format!("cannot write {}: {err}", path.display()))
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Helper processes may still be letting go of the profile.
        for _ in 0..20 {
            if std::fs::remove_dir_all(&self.profile).is_ok() || !self.profile.exists() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

/// The debugging port the browser prints on `stderr` (blocks; the lines
/// it printed before are the error when it does not print the port).
fn debugging_port(stderr: &mpsc::Receiver<String>, binary: &Path) -> Result<u16, String> {
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    let mut said = Vec::new();
    loop {
        let when = match stderr.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
            Ok(line) => {
                let Some(address) = line.strip_prefix("DevTools listening on ws://") else {
                    said.push(line);
                    continue;
                };
                let host = address.split('/').next().unwrap_or_default();
                let port = host.rsplit(':').next().and_then(|port| port.parse().ok());
                return port.ok_or(format!("no port in {line}"));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => format!("in {LAUNCH_TIMEOUT:?}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => "before it exited".to_owned(),
        };
        let (binary, said) = (binary.display(), said.join("\n"));
        return Err(format!(
            "{binary} did not print `DevTools listening on ws://…` {when}; it said:\n{said}"
        ));
    }
}

/// Connects to the WebSocket of the page the browser on `port` shows.
async fn attach(port: u16) -> Result<Socket, String> {
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    let list = format!("http://127.0.0.1:{port}/json/list");
    loop {
        let targets = match reqwest::get(&list).await {
            Ok(response) => response.text().await.map_err(|err| err.to_string()),
            Err(err) => Err(err.to_string()),
        };
        let page = targets.as_deref().ok().and_then(|body| {
            let targets: Vec<Value> = serde_json::from_str(body).ok()?;
            let page = targets
                .into_iter()
                .find(|target| target["type"] == "page")?;
            page["webSocketDebuggerUrl"].as_str().map(str::to_owned)
        });
        if let Some(url) = page {
            let (socket, _) = tokio_tungstenite::connect_async(url.as_str())
                .await
                .map_err(|err| format!("cannot connect to {url}: {err}"))?;
            return Ok(socket);
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "no page at {list} in {LAUNCH_TIMEOUT:?}: {targets:?}"
            ));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
