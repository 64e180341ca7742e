//! gRPC for the tower layer (feature `tonic`): [`GrpcClassifier`] judges
//! calls by their gRPC status, [`GrpcBody`] carries the permit to the
//! trailers, [`open_status`] turns a rejection into `UNAVAILABLE`.
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
//!   moves the permit into the response body ([`GrpcBody`]), which gives
//!   the verdict when the trailers pass through. The permit, and a
//!   half-open probe slot, is held until then: for a stream, until the
//!   stream ends. A body dropped before its end is an ignore verdict; a
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
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use http::{HeaderMap, StatusCode};
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tonic::{Code, Status};

use super::BoxError;
use super::classify::ClassifyResponse;
use crate::config::Config;
use crate::error::OpenError;
use crate::permit::OwnedPermit;
use crate::verdict::Verdict;

/// The metadata key with which [`open_status`] tells a gRPC client how
/// long to wait (gRPC's retry pushback, in milliseconds).
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
pub const RETRY_PUSHBACK_MS: &str = "grpc-retry-pushback-ms";

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
    /// The verdict on an error: the code of the `tonic::Status` in its
    /// source chain, or else the error's kind as the configuration judges
    /// it.
    fn error_verdict(self, error: &BoxError, config: &Config) -> Verdict {
        match find_status(error) {
            Some(status) => self.verdict(status.code()),
            None => Verdict::for_error(&**error, config),
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
    type Response = http::Response<GrpcBody<B>>;

    fn classify_response(
        &self,
        response: http::Response<B>,
        permit: OwnedPermit,
    ) -> Self::Response {
        let (parts, body) = response.into_parts();
        let code = status_code(&parts.headers).or_else(|| {
            (parts.status != StatusCode::OK).then(|| code_of_http_status(parts.status))
        });
        let permit = match code {
            Some(code) => {
                permit.conclude(self.verdict(code));
                None
            }
            None => Some(permit),
        };
        http::Response::from_parts(
            parts,
            GrpcBody {
                inner: body,
                permit,
                classifier: *self,
            },
        )
    }

    fn classify_error(&self, error: &BoxError, config: &Config) -> Verdict {
        self.error_verdict(error, config)
    }

    fn reject(&self, open: OpenError) -> BoxError {
        Box::new(open_status(&open))
    }
}

/// The `tonic::Status` for a call that a circuit rejected: `UNAVAILABLE`,
/// with the rest of the cooldown as `grpc-retry-pushback-ms` metadata
/// (milliseconds, rounded up) and the [`OpenError`] as its source. A gRPC
/// server returns it from a handler whose downstream circuit is open.
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
    let retry_after = open.retry_after();
    let millis =
        retry_after.as_millis() + u128::from(!retry_after.subsec_nanos().is_multiple_of(1_000_000));
    let mut status = Status::unavailable(open.to_string());
    status.metadata_mut().insert(
        RETRY_PUSHBACK_MS,
        u64::try_from(millis).unwrap_or(u64::MAX).into(),
    );
    status.set_source(Arc::new(open.clone()));
    status
}

pin_project! {
    /// A response body that gives the verdict of its call when the
    /// `grpc-status` trailer passes through (see the [module docs](self));
    /// otherwise the inner body, unchanged. Its errors are boxed, and a
    /// body error before the trailers is judged like a call's error.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::ClassifyResponse;
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use fuse_breaker::Fuse;
    /// use http_body_util::BodyExt;
    ///
    /// let fuse = Arc::new(Fuse::new("ledger", Default::default()));
    /// let mut trailers = http::HeaderMap::new();
    /// trailers.insert("grpc-status", "14".parse().unwrap()); // UNAVAILABLE
    /// let body = http_body_util::Full::new(&b"msg"[..])
    ///     .with_trailers(async move { Some(Ok(trailers)) });
    ///
    /// let res = GrpcClassifier::new().classify_response(http::Response::new(body), fuse.try_acquire_owned()?);
    /// assert!(fuse.snapshot().failures.is_empty(), "no verdict before the trailers");
    /// let collected = futures::executor::block_on(res.into_body().collect()).unwrap();
    /// assert_eq!(collected.trailers().unwrap()["grpc-status"], "14");
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub struct GrpcBody<B> {
        #[pin]
        inner: B,
        permit: Option<OwnedPermit>,
        classifier: GrpcClassifier,
    }
}

impl<B> GrpcBody<B> {
    /// Whether the body still holds its call's permit (its verdict waits
    /// for the trailers).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::ClassifyResponse;
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    ///
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("ledger", Default::default()));
    /// let trailers_only = http::Response::builder().header("grpc-status", "5").body(()).unwrap();
    /// let res = GrpcClassifier::new().classify_response(trailers_only, fuse.try_acquire_owned()?);
    /// assert!(!res.body().holds_permit());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn holds_permit(&self) -> bool {
        self.permit.is_some()
    }

    /// The inner body.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::ClassifyResponse;
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    ///
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("ledger", Default::default()));
    /// let res = GrpcClassifier::new().classify_response(http::Response::new("x"), fuse.try_acquire_owned()?);
    /// assert_eq!(*res.body().get_ref(), "x");
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn get_ref(&self) -> &B {
        &self.inner
    }
}

impl<B> Body for GrpcBody<B>
where
    B: Body,
    B::Error: Into<BoxError>,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let this = self.project();
        let frame = ready!(this.inner.poll_frame(cx));
        Poll::Ready(match frame {
            Some(Ok(frame)) => {
                if let Some(trailers) = frame.trailers_ref()
                    && let Some(permit) = this.permit.take()
                {
                    // No grpc-status in the trailers: tonic reads the
                    // call as finished, so the circuit does too.
                    let code = status_code(trailers).unwrap_or(Code::Ok);
                    permit.conclude(this.classifier.verdict(code));
                }
                Some(Ok(frame))
            }
            Some(Err(error)) => {
                let error = error.into();
                if let Some(permit) = this.permit.take() {
                    let verdict = this.classifier.error_verdict(&error, permit.config());
                    permit.conclude(verdict);
                }
                Some(Err(error))
            }
            None => {
                if let Some(permit) = this.permit.take() {
                    permit.success();
                }
                None
            }
        })
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B> fmt::Debug for GrpcBody<B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GrpcBody")
            .field("permit", &self.permit)
            .field("classifier", &self.classifier)
            .finish_non_exhaustive()
    }
}
