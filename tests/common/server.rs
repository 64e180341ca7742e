//! A local HTTP/1 server for the integration tests: bound to 127.0.0.1 on
//! a free port, switched at run time between answering, answering with a
//! status (and headers), answering late and dropping connections, and
//! counting the requests it receives (in all and per path).

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime};

use http::{HeaderValue, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// How the server answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// `200 OK`, body `ok`.
    Healthy,
    /// This status, body `status N`.
    Status(u16),
    /// This status with these headers, values as raw bytes (a name listed
    /// twice is sent twice).
    Headers(u16, &'static [(&'static str, &'static [u8])]),
    /// This status with a `Retry-After` date (IMF-fixdate) this long after
    /// the wall clock's now.
    RetryAt(u16, Duration),
    /// `200 OK` after this long (longer than the client's timeout).
    Slow(Duration),
    /// Reads the request, then resets the connection without an answer.
    Close,
}

#[derive(Debug)]
struct Shared {
    mode: Mutex<Mode>,
    /// Modes of single paths, over `mode`.
    path_modes: Mutex<HashMap<String, Mode>>,
    requests: AtomicUsize,
    per_path: Mutex<HashMap<String, usize>>,
}

/// The running server; stops when dropped.
#[derive(Debug)]
pub(crate) struct TestServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    task: JoinHandle<()>,
}

impl TestServer {
    /// Starts a healthy server on the current tokio runtime.
    pub(crate) async fn start() -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            mode: Mutex::new(Mode::Healthy),
            path_modes: Mutex::new(HashMap::new()),
            requests: AtomicUsize::new(0),
            per_path: Mutex::new(HashMap::new()),
        });
        let state = shared.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                // Dropping a connection resets it (RST), as a crashed or
                // overloaded server does, instead of closing it cleanly.
                stream.set_zero_linger().expect("SO_LINGER");
                let state = state.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| answer(state.clone(), req));
                    // Errors are the point of some modes.
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        TestServer { addr, shared, task }
    }

    /// `host:port`.
    pub(crate) fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// `http://127.0.0.1:PORT{path}`.
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// How every path without a mode of its own answers from now on.
    pub(crate) fn set_mode(&self, mode: Mode) {
        *lock(&self.shared.mode) = mode;
    }

    /// How `path` answers from now on.
    pub(crate) fn set_path_mode(&self, path: &str, mode: Mode) {
        lock(&self.shared.path_modes).insert(path.to_owned(), mode);
    }

    /// Requests received so far.
    pub(crate) fn requests(&self) -> usize {
        self.shared.requests.load(Ordering::SeqCst)
    }

    /// Requests received so far for `path`.
    pub(crate) fn requests_to(&self, path: &str) -> usize {
        lock(&self.shared.per_path).get(path).copied().unwrap_or(0)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn answer(
    shared: Arc<Shared>,
    req: Request<Incoming>,
) -> Result<Response<String>, io::Error> {
    let path = req.uri().path().to_owned();
    shared.requests.fetch_add(1, Ordering::SeqCst);
    *lock(&shared.per_path).entry(path.clone()).or_default() += 1;
    let mode = lock(&shared.path_modes)
        .get(&path)
        .copied()
        .unwrap_or_else(|| *lock(&shared.mode));
    match mode {
        Mode::Healthy => Ok(Response::new("ok".to_owned())),
        Mode::Status(status) => Ok(with_status(status)),
        Mode::Headers(status, headers) => {
            let mut res = with_status(status);
            for (name, value) in headers {
                let value = HeaderValue::from_bytes(value).expect("a header value");
                res.headers_mut().append(*name, value);
            }
            Ok(res)
        }
        Mode::RetryAt(status, after) => {
            let mut res = with_status(status);
            let date = httpdate::fmt_http_date(SystemTime::now() + after);
            let value = HeaderValue::from_str(&date).expect("a date");
            res.headers_mut().insert(http::header::RETRY_AFTER, value);
            Ok(res)
        }
        Mode::Slow(delay) => {
            tokio::time::sleep(delay).await;
            Ok(Response::new("late".to_owned()))
        }
        // hyper drops the connection when its service fails.
        Mode::Close => Err(io::Error::other("closing the connection")),
    }
}

/// An answer with `status`, body `status N`.
fn with_status(status: u16) -> Response<String> {
    let mut res = Response::new(format!("status {status}"));
    *res.status_mut() = StatusCode::from_u16(status).expect("valid status");
    res
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A local port nobody listens on: bound, then released.
pub(crate) fn closed_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("local addr").port()
}
