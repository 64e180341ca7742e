//! Upstreams that break the connection without a reset: they hang up
//! before answering, or answer bytes an HTTP client cannot read. Each is a
//! connection failure, counted when the configuration counts connection
//! errors and ignored when it does not. The upstream is a raw TCP listener
//! on 127.0.0.1 that reads each request's head, then misbehaves.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use fuse_breaker::{State, classify::FailureKind};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

use crate::common::{integration_config, mock_registry};
use crate::scenarios::open;
use crate::{Client, OPEN, Outcome};

/// What the upstream does once it has read a request's head.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Misbehaviour {
    /// Closes the connection (a FIN, not a reset) without answering.
    HangUp,
    /// Answers bytes that are not HTTP, then closes.
    NotHttp,
    /// Answers the status line `HTTP/1.1 9999`, then closes.
    BadStatus,
    /// Answers `200 OK` with a header value holding a `\x01` byte, then
    /// closes.
    ControlByteInHeader,
}

impl Misbehaviour {
    /// The bytes the upstream answers, if any.
    fn answer(self) -> &'static [u8] {
        match self {
            Misbehaviour::HangUp => b"",
            Misbehaviour::NotHttp => b"SSH-2.0-OpenSSH_9.6\r\n\x00\xff garbage\r\n\r\n",
            Misbehaviour::BadStatus => b"HTTP/1.1 9999 Odd\r\ncontent-length: 0\r\n\r\n",
            Misbehaviour::ControlByteInHeader => {
                b"HTTP/1.1 200 OK\r\nx-odd: a\x01b\r\ncontent-length: 0\r\n\r\n"
            }
        }
    }
}

/// A raw upstream; stops when dropped.
pub(crate) struct RawUpstream {
    addr: std::net::SocketAddr,
    requests: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl RawUpstream {
    /// Listens on 127.0.0.1, on a free port, on the current runtime.
    pub(crate) async fn start(misbehaviour: Misbehaviour) -> RawUpstream {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let addr = listener.local_addr().expect("local addr");
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                tokio::spawn(serve(stream, misbehaviour, counter.clone()));
            }
        });
        RawUpstream {
            addr,
            requests,
            task,
        }
    }

    /// `http://127.0.0.1:PORT/`.
    pub(crate) fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }

    /// Request heads read so far.
    pub(crate) fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

impl Drop for RawUpstream {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// One connection: reads the request's head (so that closing sends a FIN,
/// not the reset unread bytes would cause), answers, closes its half and
/// waits for the client to close its own.
async fn serve(mut stream: TcpStream, misbehaviour: Misbehaviour, requests: Arc<AtomicUsize>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    requests.fetch_add(1, Ordering::SeqCst);
    if stream.write_all(misbehaviour.answer()).await.is_err() {
        return;
    }
    if stream.shutdown().await.is_err() {
        return;
    }
    while let Ok(n) = stream.read(&mut buf).await {
        if n == 0 {
            break;
        }
    }
}

/// Ten requests to an upstream that misbehaves so: with connection errors
/// counted, the third opens the circuit and the other seven never leave;
/// with them not counted, all ten reach it and nothing is counted. Every
/// request that reaches it fails as a connection failure.
pub(crate) async fn is_a_connection_failure<C: Client>(misbehaviour: Misbehaviour) {
    let upstream = RawUpstream::start(misbehaviour).await;
    let (registry, _mock) = mock_registry(integration_config());
    let client = C::new(registry.clone(), "broken");
    for n in 0..10 {
        let outcome = client.get(upstream.url()).await;
        if n < 3 {
            assert_eq!(
                outcome,
                Outcome::Failed(FailureKind::Connection),
                "{misbehaviour:?}, request {n}"
            );
        } else {
            assert_eq!(
                outcome,
                open("broken", OPEN),
                "{misbehaviour:?}, request {n}"
            );
        }
    }
    assert_eq!(
        registry.get("broken").state(),
        State::Open,
        "{misbehaviour:?}"
    );
    assert_eq!(
        upstream.requests(),
        3,
        "{misbehaviour:?}: none leaves while open"
    );

    let uncounted = integration_config()
        .to_builder()
        .count_connection_errors(false)
        .build()
        .expect("a valid configuration");
    let (registry, _mock) = mock_registry(uncounted);
    let client = C::new(registry.clone(), "broken");
    let upstream = RawUpstream::start(misbehaviour).await;
    for n in 0..10 {
        assert_eq!(
            client.get(upstream.url()).await,
            Outcome::Failed(FailureKind::Connection),
            "{misbehaviour:?}, request {n}"
        );
    }
    let fuse = registry.get("broken");
    assert_eq!(fuse.state(), State::Closed, "{misbehaviour:?}");
    assert!(fuse.snapshot().failures.is_empty(), "{misbehaviour:?}");
    assert_eq!(upstream.requests(), 10, "{misbehaviour:?}");
}
