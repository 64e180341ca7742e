//! [`ClassifyResponse`]: the rule that judges what the inner service
//! returned, by reference, into a [`Classification`]. The layers' futures,
//! not the classifier, end the permit with it.

use std::fmt;
use std::time::Duration;

use super::BoxError;
use crate::config::Config;
use crate::error::OpenError;
use crate::hint::{self, Hint};
use crate::permit::OwnedPermit;
use crate::verdict::Verdict;

/// What a classifier makes of one call: its [`Verdict`], and how long the
/// dependency asked its callers to wait, when it said so (an HTTP
/// `Retry-After`, gRPC's retry pushback). The layers end the call's permit
/// with both: a counted failure with a hint that opens the circuit keeps
/// it open at least that long, capped at
/// [`max_open_duration`](Config::max_open_duration) (SPEC §10,
/// [`OwnedPermit::failure_retry_after`](crate::OwnedPermit::failure_retry_after)).
/// A hint that could not be read is ignored, and counted against the
/// circuit (`fuse_hints_malformed_total`, feature `metrics`; a DEBUG
/// event, feature `tracing`).
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::tower::Classification;
/// use fuse_breaker::Verdict;
///
/// let plain = Classification::from(Verdict::Failure);
/// assert_eq!(plain.verdict(), Verdict::Failure);
/// assert_eq!(plain.retry_after(), None);
///
/// let told = plain.with_retry_after(Some(Duration::from_secs(120)));
/// assert_eq!(told.retry_after(), Some(Duration::from_secs(120)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Classification {
    verdict: Verdict,
    hint: Hint,
}

impl Classification {
    /// `verdict`, without a hint.
    ///
    /// ```
    /// use fuse_breaker::{tower::Classification, Verdict};
    /// assert_eq!(Classification::new(Verdict::Ignore).verdict(), Verdict::Ignore);
    /// ```
    #[inline]
    pub const fn new(verdict: Verdict) -> Self {
        Classification {
            verdict,
            hint: Hint::None,
        }
    }

    /// The same verdict with `retry_after` as its hint.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{tower::Classification, Verdict};
    /// let c = Classification::new(Verdict::Failure).with_retry_after(Some(Duration::from_secs(3)));
    /// assert_eq!(c.retry_after(), Some(Duration::from_secs(3)));
    /// ```
    #[inline]
    #[must_use]
    pub const fn with_retry_after(self, retry_after: Option<Duration>) -> Self {
        self.with_hint(match retry_after {
            Some(after) => Hint::After(after),
            None => Hint::None,
        })
    }

    /// The same classification with the hint of the `Retry-After` in
    /// `headers` when its verdict is a counted failure (unchanged
    /// otherwise, and the headers are not read): delay-seconds, or an HTTP
    /// date (IMF-fixdate, RFC 850 or asctime) read against the wall clock,
    /// a date that has passed being zero. Huge values saturate. A
    /// `Retry-After` that cannot be read (a sign, a fraction, several
    /// values, bytes that are not ASCII, a date that does not parse) gives
    /// no hint and is [marked](Self::malformed_hint), to be counted when
    /// the permit ends. What [`DefaultClassifier`] does; a classifier of
    /// your own that counts other statuses does it too.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{tower::Classification, Verdict};
    ///
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert(http::header::RETRY_AFTER, "120".parse().unwrap());
    /// let failure = Classification::new(Verdict::Failure).with_retry_after_header(&headers);
    /// assert_eq!(failure.retry_after(), Some(Duration::from_secs(120)));
    /// // Only a counted failure reads it.
    /// let ignored = Classification::new(Verdict::Ignore).with_retry_after_header(&headers);
    /// assert_eq!(ignored.retry_after(), None);
    ///
    /// headers.insert(http::header::RETRY_AFTER, "in a minute".parse().unwrap());
    /// let garbled = Classification::new(Verdict::Failure).with_retry_after_header(&headers);
    /// assert_eq!(garbled.retry_after(), None);
    /// assert_eq!(garbled.malformed_hint(), Some("retry-after"));
    /// ```
    #[inline]
    #[must_use]
    pub fn with_retry_after_header(self, headers: &http::HeaderMap) -> Self {
        if self.verdict == Verdict::Failure {
            self.with_hint(Hint::retry_after(headers))
        } else {
            self
        }
    }

    /// The same verdict with `hint`.
    #[inline]
    pub(super) const fn with_hint(self, hint: Hint) -> Self {
        Classification {
            verdict: self.verdict,
            hint,
        }
    }

    /// The verdict the permit is ended with.
    ///
    /// ```
    /// use fuse_breaker::{tower::Classification, Verdict};
    /// assert_eq!(Classification::from(Verdict::Success).verdict(), Verdict::Success);
    /// ```
    #[inline]
    pub const fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// How long the dependency asked its callers to wait, if it said so
    /// readably.
    ///
    /// ```
    /// use fuse_breaker::{tower::Classification, Verdict};
    /// assert_eq!(Classification::from(Verdict::Success).retry_after(), None);
    /// ```
    #[inline]
    pub const fn retry_after(&self) -> Option<Duration> {
        self.hint.after()
    }

    /// The header whose hint could not be read (`"retry-after"`,
    /// `"grpc-retry-pushback-ms"`), if one could not: the hint is ignored,
    /// and counted against the circuit when the permit ends.
    ///
    /// ```
    /// use fuse_breaker::{tower::Classification, Verdict};
    /// assert_eq!(Classification::from(Verdict::Failure).malformed_hint(), None);
    /// ```
    #[inline]
    pub const fn malformed_hint(&self) -> Option<&'static str> {
        match self.hint {
            Hint::Malformed(header) => Some(header),
            Hint::None | Hint::After(_) => None,
        }
    }

    /// Ends `permit` with this verdict and hint.
    #[inline]
    pub(super) fn conclude(self, permit: OwnedPermit) {
        hint::conclude(permit, self.verdict, self.hint);
    }

    /// Ends the shared `permit` with this verdict and hint.
    #[cfg(feature = "store")]
    pub(super) async fn conclude_shared(
        self,
        permit: crate::store::SharedPermit<'_>,
    ) -> Result<(), crate::store::StoreError> {
        permit.conclude_hinted(self.verdict, self.hint).await
    }
}

impl From<Verdict> for Classification {
    /// The verdict without a hint.
    ///
    /// ```
    /// use fuse_breaker::{tower::Classification, Verdict};
    /// assert_eq!(Classification::from(Verdict::Failure), Classification::new(Verdict::Failure));
    /// ```
    #[inline]
    fn from(verdict: Verdict) -> Self {
        Classification::new(verdict)
    }
}

/// The answer of [`ClassifyResponse::classify_response`], in the manner
/// of tower-http's `ClassifiedResponse`: the response decides the call, or
/// only the end of its body will (a gRPC status in the trailers), judged
/// then by `E`, a [`ClassifyEos`](super::ClassifyEos).
///
/// A [`Verdict`] or a [`Classification`] converts into `Ready`.
///
/// ```
/// use fuse_breaker::tower::{Classified, NeverClassifyEos};
/// use fuse_breaker::Verdict;
///
/// let ready: Classified<NeverClassifyEos> = Verdict::Success.into();
/// assert!(matches!(ready, Classified::Ready(c) if c.verdict() == Verdict::Success));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Classified<E> {
    /// The response decides: the call's classification.
    Ready(Classification),
    /// The end of the response's body decides: `E` judges its trailers
    /// (or the body's error), and the body holds the call's permit until
    /// then.
    RequiresEos(E),
}

impl<E> From<Classification> for Classified<E> {
    /// Ready with `classification`.
    ///
    /// ```
    /// use fuse_breaker::tower::{Classification, Classified, NeverClassifyEos};
    /// use fuse_breaker::Verdict;
    /// let c = Classification::new(Verdict::Ignore);
    /// assert_eq!(Classified::<NeverClassifyEos>::from(c), Classified::Ready(c));
    /// ```
    #[inline]
    fn from(classification: Classification) -> Self {
        Classified::Ready(classification)
    }
}

impl<E> From<Verdict> for Classified<E> {
    /// Ready with `verdict`, without a hint.
    ///
    /// ```
    /// use fuse_breaker::tower::{Classification, Classified, NeverClassifyEos};
    /// use fuse_breaker::Verdict;
    /// let ready = Classified::<NeverClassifyEos>::from(Verdict::Failure);
    /// assert_eq!(ready, Classified::Ready(Classification::new(Verdict::Failure)));
    /// ```
    #[inline]
    fn from(verdict: Verdict) -> Self {
        Classified::Ready(Classification::new(verdict))
    }
}

/// The end-of-stream classifier of a classifier that always decides on the
/// response: it cannot exist (like tower-http's `NeverClassifyEos`), so
/// the response reaches the caller unchanged.
///
/// ```
/// use fuse_breaker::tower::NeverClassifyEos;
/// fn never(eos: NeverClassifyEos) -> u8 {
///     match eos {}
/// }
/// # let _ = never;
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NeverClassifyEos {}

/// Judges each call of a [`FuseService`](super::FuseService), whatever
/// its circuits' backing, in the manner of
/// tower-http's classifiers: a pure rule from a reference to what the
/// inner service returned (and the circuit's [`Config`]) to a
/// [`Classification`]. It never sees the permit: the layer's future ends
/// the permit with the verdict, and the response goes to the caller
/// untouched.
///
/// A classifier that decides on the response itself returns
/// [`Classified::Ready`] and names [`NeverClassifyEos`] as its
/// `ClassifyEos`. One whose verdict is known only at the end of the body
/// (gRPC statuses in trailers) returns [`Classified::RequiresEos`]; the
/// response then reaches the caller with a body that holds the permit and
/// ends it when the trailers pass (see `grpc::GrpcClassifier`, feature
/// `tonic`). A permit dropped without a verdict is an ignore verdict, so
/// a cancelled call never leaks a probe slot.
///
/// ```
/// use fuse_breaker::Verdict;
/// use fuse_breaker::tower::{Classified, ClassifyResponse, NeverClassifyEos};
/// use fuse_breaker::Config;
///
/// /// A 429 from this dependency means it is overloaded: count it.
/// #[derive(Clone)]
/// struct TooManyRequestsCount;
///
/// impl<B> ClassifyResponse<http::Response<B>> for TooManyRequestsCount {
///     type ClassifyEos = NeverClassifyEos;
///
///     fn classify_response(&self, res: &http::Response<B>, config: &Config) -> Classified<NeverClassifyEos> {
///         match res.status().as_u16() {
///             429 => Verdict::Failure,
///             status => Verdict::for_status(status, config),
///         }
///         .into()
///     }
/// }
///
/// let res = http::Response::builder().status(429).body(()).unwrap();
/// let classified = TooManyRequestsCount.classify_response(&res, &Config::default());
/// assert!(matches!(classified, Classified::Ready(c) if c.verdict() == Verdict::Failure));
/// ```
pub trait ClassifyResponse<Res> {
    /// What judges the end of the response's body when the response alone
    /// does not decide: [`NeverClassifyEos`] for a classifier that always
    /// decides on the response, a [`ClassifyEos`](super::ClassifyEos)
    /// otherwise (feature `tonic`).
    type ClassifyEos;

    /// The classification of `response` under the circuit's `config`, or
    /// the end-of-stream classifier that will give it.
    fn classify_response(&self, response: &Res, config: &Config) -> Classified<Self::ClassifyEos>;

    /// The classification of an error of the inner service, boxed as the
    /// caller will get it. The default classifies it with
    /// [`classify_error`](crate::classify::classify_error) and judges the kind by
    /// the circuit's configuration ([`Verdict::for_error`]): timeouts and
    /// connection errors count (a hyper client's upstream that closed the
    /// connection before answering, or answered what is not HTTP,
    /// included), anything else is ignored.
    ///
    /// ```
    /// use std::io;
    /// use fuse_breaker::tower::{BoxError, ClassifyResponse, DefaultClassifier};
    /// use fuse_breaker::{Config, Verdict};
    ///
    /// let refused: BoxError = Box::new(io::Error::from(io::ErrorKind::ConnectionRefused));
    /// let c = ClassifyResponse::<http::Response<()>>::classify_error(&DefaultClassifier, &refused, &Config::default());
    /// assert_eq!(c.verdict(), Verdict::Failure);
    /// ```
    #[inline]
    fn classify_error(&self, error: &BoxError, config: &Config) -> Classification {
        Verdict::for_error(&**error, config).into()
    }

    /// The error of a call the circuit rejected. The default is the
    /// [`OpenError`] itself, boxed.
    ///
    /// ```
    /// use fuse_breaker::tower::{ClassifyResponse, OkIsSuccess};
    /// let fuse = fuse_breaker::Fuse::new("billing", Default::default());
    /// fuse.force_open();
    /// let err = ClassifyResponse::<u32>::reject(&OkIsSuccess, fuse.try_acquire().unwrap_err());
    /// assert!(err.downcast_ref::<fuse_breaker::OpenError>().is_some());
    /// ```
    fn reject(&self, open: OpenError) -> BoxError {
        Box::new(open)
    }

    /// The error of a call a shared circuit refused (feature `store`). The
    /// default is the [`Refusal`](crate::store::Refusal) itself, boxed.
    ///
    /// ```
    /// use fuse_breaker::store::{Refusal, StoreError};
    /// use fuse_breaker::tower::{ClassifyResponse, OkIsSuccess};
    /// let refusal = Refusal::Store(StoreError::unreachable("memory", "down"));
    /// let err = ClassifyResponse::<u32>::refuse(&OkIsSuccess, refusal);
    /// assert!(err.downcast_ref::<Refusal>().is_some());
    /// ```
    #[cfg(feature = "store")]
    fn refuse(&self, refusal: crate::store::Refusal) -> BoxError {
        Box::new(refusal)
    }
}

/// The default classifier, for `http::Response`s: a status the circuit
/// counts is a failure, other statuses of 400 and above are ignored,
/// anything else is a success ([`Verdict::for_status`]); errors go through
/// [`classify_error`](crate::classify::classify_error).
///
/// A counted failure's `Retry-After` is its hint, in seconds or as an HTTP
/// date ([`Classification::with_retry_after_header`]).
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::tower::{Classified, ClassifyResponse, DefaultClassifier};
/// use fuse_breaker::{Config, Verdict};
///
/// let config = Config::default();
/// let res = http::Response::builder().status(503).header("retry-after", "120").body(()).unwrap();
/// let Classified::Ready(c) = DefaultClassifier.classify_response(&res, &config);
/// assert_eq!(c.verdict(), Verdict::Failure);
/// assert_eq!(c.retry_after(), Some(Duration::from_secs(120)));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultClassifier;

impl<B> ClassifyResponse<http::Response<B>> for DefaultClassifier {
    type ClassifyEos = NeverClassifyEos;

    #[inline]
    fn classify_response(
        &self,
        response: &http::Response<B>,
        config: &Config,
    ) -> Classified<NeverClassifyEos> {
        let verdict = Verdict::for_status(response.status().as_u16(), config);
        Classified::Ready(Classification::new(verdict).with_retry_after_header(response.headers()))
    }
}

/// A classifier for services whose responses are not HTTP: every response
/// is a success; errors go through [`classify_error`](crate::classify::classify_error).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{FuseLayer, OkIsSuccess};
/// use fuse_breaker::Fuse;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let fuse = Arc::new(Fuse::new("lookup", Default::default()));
/// let layer = FuseLayer::new(fuse).classifier(OkIsSuccess);
/// let lookup = layer.layer(service_fn(|id: u32| async move { Ok::<_, std::io::Error>(id * 2) }));
/// assert_eq!(futures::executor::block_on(lookup.oneshot(21)).unwrap(), 42);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OkIsSuccess;

impl<Res> ClassifyResponse<Res> for OkIsSuccess {
    type ClassifyEos = NeverClassifyEos;

    #[inline]
    fn classify_response(&self, _response: &Res, _config: &Config) -> Classified<NeverClassifyEos> {
        Verdict::Success.into()
    }
}

/// A classifier from a closure that judges a response: it returns a
/// [`Verdict`] or a [`Classification`]; errors go through
/// [`classify_error`](crate::classify::classify_error). Made by [`classify_fn`].
///
/// ```
/// use fuse_breaker::Verdict;
/// use fuse_breaker::tower::{ClassifyFn, classify_fn};
/// use fuse_breaker::Config;
///
/// let by_length: ClassifyFn<_> = classify_fn(|body: &String, _: &Config| {
///     if body.is_empty() { Verdict::Failure } else { Verdict::Success }
/// });
/// # let _ = by_length;
/// ```
#[derive(Clone, Copy)]
pub struct ClassifyFn<F> {
    f: F,
}

/// A classifier that asks `f(&response, &config)` for the verdict on each
/// response (a [`Verdict`], or a [`Classification`] with a hint); errors
/// go through [`classify_error`](crate::classify::classify_error).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::Verdict;
/// use fuse_breaker::tower::{FuseLayer, classify_fn};
/// use fuse_breaker::{Config, Fuse, State};
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let fuse = Arc::new(Fuse::new("search", Config::builder().failure_threshold(1).build()?));
/// // An empty answer from this search backend means its index is down.
/// let layer = FuseLayer::new(fuse.clone()).classifier(classify_fn(|hits: &Vec<u32>, _: &Config| {
///     if hits.is_empty() { Verdict::Failure } else { Verdict::Success }
/// }));
/// let search = layer.layer(service_fn(|_q: &str| async { Ok::<_, std::io::Error>(Vec::<u32>::new()) }));
/// let hits = futures::executor::block_on(search.oneshot("rust")).unwrap();
/// assert!(hits.is_empty());
/// assert_eq!(fuse.state(), State::Open);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn classify_fn<F>(f: F) -> ClassifyFn<F> {
    ClassifyFn { f }
}

impl<Res, F, V> ClassifyResponse<Res> for ClassifyFn<F>
where
    F: Fn(&Res, &Config) -> V,
    V: Into<Classification>,
{
    type ClassifyEos = NeverClassifyEos;

    #[inline]
    fn classify_response(&self, response: &Res, config: &Config) -> Classified<NeverClassifyEos> {
        Classified::Ready((self.f)(response, config).into())
    }
}

impl<F> fmt::Debug for ClassifyFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassifyFn")
            .field("f", &std::any::type_name::<F>())
            .finish()
    }
}

#[cfg(test)]
mod tests;
