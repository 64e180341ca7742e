use super::*;

#[derive(Debug)]
struct Wrapper(io::Error);
impl std::fmt::Display for Wrapper {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("request failed")
    }
}
impl StdError for Wrapper {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn io_kinds() {
    use io::ErrorKind as K;
    for kind in [
        K::ConnectionRefused,
        K::ConnectionReset,
        K::ConnectionAborted,
        K::NotConnected,
        K::BrokenPipe,
        K::HostUnreachable,
        K::NetworkUnreachable,
        K::AddrNotAvailable,
    ] {
        assert_eq!(
            io::Error::from(kind).failure_kind(),
            FailureKind::Connection
        );
    }
    assert_eq!(
        io::Error::from(K::TimedOut).failure_kind(),
        FailureKind::Timeout
    );
    for kind in [K::NotFound, K::PermissionDenied, K::InvalidData, K::Other] {
        assert_eq!(io::Error::from(kind).failure_kind(), FailureKind::Other);
    }
}

#[test]
fn boxed_walks_the_source_chain() {
    let err: Box<dyn StdError + Send + Sync> =
        Box::new(Wrapper(io::Error::from(io::ErrorKind::ConnectionReset)));
    assert_eq!(err.failure_kind(), FailureKind::Connection);
    let err: Box<dyn StdError> = Box::new(Wrapper(io::Error::from(io::ErrorKind::TimedOut)));
    assert_eq!(err.failure_kind(), FailureKind::Timeout);
}

#[test]
fn io_error_wrapping_an_error_uses_the_inner_chain() {
    let inner = Wrapper(io::Error::from(io::ErrorKind::ConnectionRefused));
    assert_eq!(
        io::Error::other(inner).failure_kind(),
        FailureKind::Connection
    );
    assert_eq!(
        io::Error::other("operation timed out").failure_kind(),
        FailureKind::Timeout
    );
}

#[test]
fn message_rules() {
    let cases = [
        ("Operation timed out after 30001 ms", FailureKind::Timeout),
        ("gateway TIMEOUT", FailureKind::Timeout),
        ("Connection refused", FailureKind::Connection),
        ("Could not resolve host: api", FailureKind::Connection),
        ("Failed to connect to api port 443", FailureKind::Connection),
        ("Network is unreachable", FailureKind::Connection),
        ("SSL certificate problem", FailureKind::Connection),
        ("TLS handshake failed", FailureKind::Connection),
        ("card declined", FailureKind::Other),
    ];
    for (message, kind) in cases {
        let err: Box<dyn StdError + Send + Sync> = message.into();
        assert_eq!(err.failure_kind(), kind, "{message}");
    }
}

#[test]
fn an_uncounted_io_error_falls_back_to_messages() {
    let err: Box<dyn StdError + Send> =
        Box::new(io::Error::new(io::ErrorKind::InvalidData, "tls alert"));
    assert_eq!(err.failure_kind(), FailureKind::Connection);
}
