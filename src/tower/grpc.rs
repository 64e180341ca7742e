//! gRPC for the tower layer (feature `tonic`): [`GrpcClassifier`] judges
//! calls by their gRPC status, [`GrpcBody`] carries the permit to the
//! trailers, [`open_status`] turns a rejection into `UNAVAILABLE` (a call
//! a closed circuit shed, SPEC §11, included: without a retry pushback). It
//! classifies the calls of [`FuseLayer`](super::FuseLayer) over circuits
//! of this process and shared ones (feature `store`) alike.
//!
//! A gRPC status arrives in one of three places, and the classifier reads
//! all three:
//!
//! - an error of the inner service that is (or wraps) a `tonic::Status`;
//! - the response headers: a *trailers-only* response, which is how
//!   servers (tonic's among them) answer an error before any message;
//! - the trailers at the end of the response body: how every response
//!   that sends messages (all successful unary calls, every stream) ends.
//!   The classifier cannot see those when the response arrives, so it
//!   answers [`Classified::RequiresEos`]
//!   and the layer moves the permit into the response body ([`GrpcBody`]),
//!   which gives the verdict when the trailers pass through. The permit,
//!   and a half-open probe slot, is held until then: for a stream, until
//!   the stream ends. A body dropped before its end is an ignore verdict; a
//!   body that ends without a `grpc-status` is a success, as tonic reads it.
//!
//! A response with an HTTP status other than 200 and no `grpc-status`
//! (a proxy's 503) is judged by the code gRPC maps it to (429, 502, 503
//! and 504 are `UNAVAILABLE`). Transport errors without a status
//! (connection refused, timeouts) are judged by the circuit's
//! [`Config`] like any error. The counted codes are the classifier's own
//! setting: `UNAVAILABLE` and `DEADLINE_EXCEEDED` by default; `OK` is a
//! success; any other code is ignored.
//!
//! A counted status carries the server's hint of when to come back (SPEC
//! §10): the `grpc-retry-pushback-ms` beside it (in the trailers with a
//! status in the trailers, in the headers of a trailers-only response, in
//! the metadata of a `tonic::Status`), in milliseconds. gRPC's retry
//! design reads a negative pushback as "do not retry this call", which
//! says nothing of when the server will be back: no hint. A response
//! judged by its HTTP status (a proxy's 503) without a pushback carries
//! its `Retry-After`, as the default HTTP classifier reads it. A pushback
//! that cannot be read (not digits, several values) is ignored, and
//! counted against the circuit (see
//! [`Classification`]).
//!
//! ```
//! use std::sync::Arc;
//! use fuse_breaker::tower::FuseLayer;
//! use fuse_breaker::tower::grpc::GrpcClassifier;
//! use fuse_breaker::{Config, Fuse, State};
//! use tower::{Layer, ServiceExt, service_fn};
//!
//! let fuse = Arc::new(Fuse::new("ledger", Config::builder().failure_threshold(1).build()?));
//! let layer = FuseLayer::new(fuse.clone()).classifier(GrpcClassifier::new());
//! let ledger = layer.layer(service_fn(|_req: http::Request<String>| async {
//!     Err::<http::Response<String>, _>(tonic::Status::unavailable("draining"))
//! }));
//!
//! let err = futures::executor::block_on(ledger.clone().oneshot(http::Request::default())).unwrap_err();
//! assert_eq!(err.downcast_ref::<tonic::Status>().unwrap().code(), tonic::Code::Unavailable);
//! assert_eq!(fuse.state(), State::Open);
//!
//! // Rejected: an UNAVAILABLE status whose source is the `OpenError`.
//! let err = futures::executor::block_on(ledger.oneshot(http::Request::default())).unwrap_err();
//! let status = err.downcast_ref::<tonic::Status>().unwrap();
//! assert_eq!(status.code(), tonic::Code::Unavailable);
//! assert!(fuse_breaker::tower::open_error(&*err).is_some());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::sync::Arc;

use http::{HeaderMap, StatusCode};
use tonic::{Code, Status};

use super::BoxError;
use super::classify::{Classification, Classified, ClassifyResponse};
use super::eos::{ClassifiedBody, ClassifyEos};
use crate::config::Config;
use crate::error::OpenError;
use crate::hint::{self, Hint};
use crate::verdict::Verdict;

/// The metadata key with which [`open_status`] tells a gRPC client how
/// long to wait (gRPC's retry pushback, in milliseconds); absent from the
/// status of a call a closed circuit shed.
///
/// ```
/// use fuse_breaker::tower::grpc::{RETRY_PUSHBACK_MS, open_status};
/// use fuse_breaker::Fuse;
///
/// let (clock, _mock) = fuse_breaker::quanta::Clock::mock();
/// let fuse = Fuse::builder("ledger").clock(clock).build();
/// fuse.force_open();
/// let status = open_status(&fuse.try_acquire().unwrap_err());
/// assert_eq!(status.metadata().get(RETRY_PUSHBACK_MS).unwrap(), "30000");
/// ```
pub const RETRY_PUSHBACK_MS: &str = hint::RETRY_PUSHBACK_MS;

/// Judges gRPC calls by their status: `OK` is a success, a counted code a
/// failure (`UNAVAILABLE` and `DEADLINE_EXCEEDED` by default), any other
/// code is ignored. See the [module docs](self) for where the status is
/// read.
///
/// ```
/// use fuse_breaker::tower::grpc::GrpcClassifier;
/// use fuse_breaker::Verdict;
/// use tonic::Code;
///
/// let classifier = GrpcClassifier::new().count(Code::ResourceExhausted);
/// assert_eq!(classifier.verdict(Code::Ok), Verdict::Success);
/// assert_eq!(classifier.verdict(Code::Unavailable), Verdict::Failure);
/// assert_eq!(classifier.verdict(Code::ResourceExhausted), Verdict::Failure);
/// assert_eq!(classifier.verdict(Code::NotFound), Verdict::Ignore);
/// ```
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct GrpcClassifier {
    /// Bit `c` is set when code `c` counts.
    counted: u32,
}

const fn bit(code: Code) -> u32 {
    1 << (code as u32)
}

impl Default for GrpcClassifier {
    /// `UNAVAILABLE` and `DEADLINE_EXCEEDED` count.
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// assert!(GrpcClassifier::default().counts(tonic::Code::DeadlineExceeded));
    /// ```
    fn default() -> Self {
        GrpcClassifier {
            counted: bit(Code::Unavailable) | bit(Code::DeadlineExceeded),
        }
    }
}

impl GrpcClassifier {
    /// The default classifier: `UNAVAILABLE` and `DEADLINE_EXCEEDED` count.
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// let classifier = GrpcClassifier::new();
    /// assert!(classifier.counts(tonic::Code::Unavailable));
    /// assert!(!classifier.counts(tonic::Code::Internal));
    /// ```
    pub fn new() -> Self {
        GrpcClassifier::default()
    }

    /// A classifier that counts exactly `codes` (`OK` is always a success,
    /// even if listed).
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use tonic::Code;
    /// let classifier = GrpcClassifier::counting([Code::Internal]);
    /// assert!(classifier.counts(Code::Internal));
    /// assert!(!classifier.counts(Code::Unavailable));
    /// ```
    pub fn counting(codes: impl IntoIterator<Item = Code>) -> Self {
        codes
            .into_iter()
            .fold(GrpcClassifier { counted: 0 }, GrpcClassifier::count)
    }

    /// Also counts `code`.
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use tonic::Code;
    /// assert!(GrpcClassifier::new().count(Code::Aborted).counts(Code::Aborted));
    /// ```
    #[must_use]
    pub fn count(self, code: Code) -> Self {
        GrpcClassifier {
            counted: self.counted | bit(code),
        }
    }

    /// No longer counts `code`.
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use tonic::Code;
    /// let classifier = GrpcClassifier::new().ignore(Code::DeadlineExceeded);
    /// assert!(!classifier.counts(Code::DeadlineExceeded));
    /// ```
    #[must_use]
    pub fn ignore(self, code: Code) -> Self {
        GrpcClassifier {
            counted: self.counted & !bit(code),
        }
    }

    /// Whether `code` is a counted failure.
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// assert!(!GrpcClassifier::new().counts(tonic::Code::NotFound));
    /// ```
    pub fn counts(&self, code: Code) -> bool {
        code != Code::Ok && self.counted & bit(code) != 0
    }

    /// The verdict on a call that ended with `code`.
    ///
    /// ```
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use fuse_breaker::Verdict;
    /// assert_eq!(GrpcClassifier::new().verdict(tonic::Code::Cancelled), Verdict::Ignore);
    /// ```
    pub fn verdict(&self, code: Code) -> Verdict {
        if code == Code::Ok {
            Verdict::Success
        } else if self.counts(code) {
            Verdict::Failure
        } else {
            Verdict::Ignore
        }
    }
}

impl GrpcClassifier {
    /// The classification of an error: the code of the `tonic::Status` in
    /// its source chain (with its pushback), or else the error's kind as
    /// the configuration judges it.
    fn classify_failure(self, error: &BoxError, config: &Config) -> Classification {
        match find_status(error) {
            Some(status) => self.classify(status.code(), status.metadata().as_ref()),
            None => Verdict::for_error(&**error, config).into(),
        }
    }

    /// The classification of a call that ended with `code`, the retry
    /// pushback in `metadata` its hint when the code counts.
    fn classify(self, code: Code, metadata: &HeaderMap) -> Classification {
        let verdict = self.verdict(code);
        let classification = Classification::new(verdict);
        if verdict == Verdict::Failure {
            classification.with_hint(Hint::retry_pushback(metadata))
        } else {
            classification
        }
    }

    /// The classification of a response without a `grpc-status`, judged
    /// by the code of its HTTP status: its pushback, or else its
    /// `Retry-After`, is the hint of a counted code.
    fn classify_http(self, status: StatusCode, headers: &HeaderMap) -> Classification {
        let classification = self.classify(code_of_http_status(status), headers);
        if classification.verdict() == Verdict::Failure && headers.get(RETRY_PUSHBACK_MS).is_none()
        {
            classification.with_retry_after_header(headers)
        } else {
            classification
        }
    }
}

impl fmt::Debug for GrpcClassifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let counted: Vec<Code> = (0..=16)
            .map(Code::from_i32)
            .filter(|code| self.counts(*code))
            .collect();
        f.debug_struct("GrpcClassifier")
            .field("counted", &counted)
            .finish()
    }
}

/// The code in a `grpc-status` header, if there is one.
fn status_code(headers: &HeaderMap) -> Option<Code> {
    headers
        .get(Status::GRPC_STATUS)
        .map(|value| Code::from_bytes(value.as_bytes()))
}

/// The code gRPC maps an HTTP status to when a response has no
/// `grpc-status` (gRPC's HTTP-to-gRPC status mapping, as tonic applies it).
fn code_of_http_status(status: StatusCode) -> Code {
    match status {
        StatusCode::OK => Code::Ok,
        StatusCode::BAD_REQUEST => Code::Internal,
        StatusCode::UNAUTHORIZED => Code::Unauthenticated,
        StatusCode::FORBIDDEN => Code::PermissionDenied,
        StatusCode::NOT_FOUND => Code::Unimplemented,
        StatusCode::TOO_MANY_REQUESTS
        | StatusCode::BAD_GATEWAY
        | StatusCode::SERVICE_UNAVAILABLE
        | StatusCode::GATEWAY_TIMEOUT => Code::Unavailable,
        _ => Code::Unknown,
    }
}

/// The `tonic::Status` in `error` or its source chain.
fn find_status(error: &BoxError) -> Option<&Status> {
    let mut next: Option<&(dyn std::error::Error + 'static)> = Some(&**error);
    while let Some(err) = next {
        if let Some(status) = err.downcast_ref::<Status>() {
            return Some(status);
        }
        next = err.source();
    }
    None
}

impl<B> ClassifyResponse<http::Response<B>> for GrpcClassifier {
    type ClassifyEos = GrpcClassifier;

    /// The status in the headers (a trailers-only response) or the code of
    /// an HTTP status other than 200; otherwise the trailers will tell.
    fn classify_response(
        &self,
        response: &http::Response<B>,
        _config: &Config,
    ) -> Classified<GrpcClassifier> {
        let headers = response.headers();
        let status = response.status();
        match status_code(headers) {
            Some(code) => Classified::Ready(self.classify(code, headers)),
            None if status != StatusCode::OK => {
                Classified::Ready(self.classify_http(status, headers))
            }
            None => Classified::RequiresEos(*self),
        }
    }

    fn classify_error(&self, error: &BoxError, config: &Config) -> Classification {
        self.classify_failure(error, config)
    }

    fn reject(&self, open: OpenError) -> BoxError {
        Box::new(open_status(&open))
    }

    /// `UNAVAILABLE`, with the refusal as its source (and the pushback of
    /// [`open_status`] when the circuit is open).
    #[cfg(feature = "store")]
    fn refuse(&self, refusal: crate::store::Refusal) -> BoxError {
        let mut status = match refusal.open_error() {
            Some(open) => open_status(open),
            None => Status::unavailable(refusal.to_string()),
        };
        status.set_source(Arc::new(refusal));
        Box::new(status)
    }
}

impl ClassifyEos for GrpcClassifier {
    /// The `grpc-status` of the trailers; none (or no trailers) is `OK`,
    /// as tonic reads a call that ends without one.
    fn classify_eos(&self, trailers: Option<&HeaderMap>, _config: &Config) -> Classification {
        match trailers {
            Some(trailers) => self.classify(status_code(trailers).unwrap_or(Code::Ok), trailers),
            None => self.verdict(Code::Ok).into(),
        }
    }

    fn classify_body_error(&self, error: &BoxError, config: &Config) -> Classification {
        self.classify_failure(error, config)
    }
}

/// The `tonic::Status` for a call that a circuit rejected: `UNAVAILABLE`,
/// with the rest of the cooldown as `grpc-retry-pushback-ms` metadata
/// (milliseconds, rounded up) and the [`OpenError`] as its source. A gRPC
/// server returns it from a handler whose downstream circuit is open.
///
/// A call a closed circuit shed (SPEC §11: a ramp-up or adaptive
/// throttling, [`OpenError::throttled`]) is `UNAVAILABLE` too, its message
/// saying that the circuit is closed and shed the call, and why, and
/// **without** a retry pushback. A gRPC client applies a pushback by
/// itself, in place of its retry policy's backoff: a pushback of 0 would
/// have every retrying client call again at once, and so undo the
/// shedding. Without one, the client's own policy (its backoff, its retry
/// throttling) decides; the call has nothing to wait for
/// ([`retry_after`](OpenError::retry_after) is zero).
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::tower::grpc::{RETRY_PUSHBACK_MS, open_status};
/// use fuse_breaker::{Config, Fuse};
///
/// let (clock, mock) = fuse_breaker::quanta::Clock::mock();
/// let config = Config::builder()
///     .half_open_probes(1)
///     .ramp_up(Duration::from_secs(100))
///     .ramp_up_floor(1)
///     .build()?;
/// let fuse = Fuse::builder("ledger").clock(clock).config(config).build();
/// fuse.force_open();
/// mock.increment(Duration::from_secs(30));
/// fuse.try_acquire()?.success(); // the probe closes it, and the ramp starts at 1 %
/// let shed = std::iter::repeat_with(|| fuse.try_acquire()).find_map(Result::err).unwrap();
///
/// let status = open_status(&shed);
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// assert!(status.message().contains("is closed and shed this call (ramp_up)"));
/// assert!(status.metadata().get(RETRY_PUSHBACK_MS).is_none());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// An open circuit's:
///
/// ```
/// use std::error::Error;
/// use fuse_breaker::tower::grpc::{RETRY_PUSHBACK_MS, open_status};
///
/// let fuse = fuse_breaker::Fuse::new("ledger", Default::default());
/// fuse.force_open();
/// let status = open_status(&fuse.try_acquire().unwrap_err());
/// assert_eq!(status.code(), tonic::Code::Unavailable);
/// assert!(status.metadata().get(RETRY_PUSHBACK_MS).is_some());
/// assert!(status.source().unwrap().downcast_ref::<fuse_breaker::OpenError>().is_some());
/// ```
pub fn open_status(open: &OpenError) -> Status {
    let mut status = Status::unavailable(open.to_string());
    // A shed call: no pushback (see above).
    if open.throttled().is_none() {
        let retry_after = open.retry_after();
        let millis = retry_after.as_millis()
            + u128::from(!retry_after.subsec_nanos().is_multiple_of(1_000_000));
        status.metadata_mut().insert(
            RETRY_PUSHBACK_MS,
            u64::try_from(millis).unwrap_or(u64::MAX).into(),
        );
    }
    status.set_source(Arc::new(open.clone()));
    status
}

/// A gRPC response body: the [`ClassifiedBody`] that gives the verdict of
/// its call when the `grpc-status` trailer passes through (see the
/// [module docs](self)); otherwise the inner body, unchanged. Its errors
/// are boxed, and a body error before the trailers is judged like a
/// call's error.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::FuseLayer;
/// use fuse_breaker::tower::grpc::{GrpcBody, GrpcClassifier};
/// use fuse_breaker::Fuse;
/// use http_body_util::{BodyExt, Full};
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let fuse = Arc::new(Fuse::new("ledger", Default::default()));
/// let ledger = FuseLayer::new(fuse.clone()).classifier(GrpcClassifier::new()).layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(Full::new(&b"msg"[..])))
/// }));
/// let res: http::Response<GrpcBody<Full<&[u8]>>> = futures::executor::block_on(ledger.oneshot(http::Request::new(())))?;
/// assert!(res.body().holds_permit());
/// futures::executor::block_on(res.into_body().collect())?; // ends without trailers: OK
/// assert_eq!(fuse.state(), fuse_breaker::State::Closed);
/// # Ok::<(), fuse_breaker::tower::BoxError>(())
/// ```
pub type GrpcBody<B> = ClassifiedBody<B, GrpcClassifier>;

#[cfg(test)]
mod tests;
