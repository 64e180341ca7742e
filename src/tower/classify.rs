//! [`ClassifyResponse`]: the verdict on what the inner service returned.

use std::fmt;

use super::BoxError;
use crate::config::Config;
use crate::error::OpenError;
use crate::permit::OwnedPermit;
use crate::verdict::Verdict;

/// Decides the verdict of each call of a [`FuseService`](super::FuseService)
/// (in the manner of tower-http's classifiers): a response ends the permit
/// through [`classify_response`](Self::classify_response), an error
/// through [`classify_error`](Self::classify_error).
///
/// A classifier that decides on the response itself gives the verdict and
/// returns the response unchanged (`Response = Res`). One whose verdict is
/// known only at the end of the body (gRPC statuses in trailers) moves the
/// permit into the response body instead, which gives the verdict when the
/// trailers arrive; that is why the permit, not a verdict, is handed over.
/// A permit dropped without a verdict is an ignore verdict, so a classifier
/// can never leak a probe slot.
///
/// ```
/// use fuse_breaker::tower::{ClassifyResponse, Verdict};
/// use fuse_breaker::OwnedPermit;
///
/// /// A 429 from this dependency means it is overloaded: count it.
/// #[derive(Clone)]
/// struct TooManyRequestsCount;
///
/// impl<B> ClassifyResponse<http::Response<B>> for TooManyRequestsCount {
///     type Response = http::Response<B>;
///
///     fn classify_response(&self, res: http::Response<B>, permit: OwnedPermit) -> Self::Response {
///         let status = res.status().as_u16();
///         let verdict = match status {
///             429 => Verdict::Failure,
///             _ => Verdict::for_status(status, permit.config()),
///         };
///         permit.conclude(verdict);
///         res
///     }
/// }
/// ```
pub trait ClassifyResponse<Res> {
    /// What the caller receives: `Res` itself, or `Res` with a body that
    /// carries the permit to its end.
    type Response;

    /// Ends `permit` with the verdict on `response` (now, or at the end of
    /// its body) and hands the response on. The circuit's configuration is
    /// `permit.config()`.
    fn classify_response(&self, response: Res, permit: OwnedPermit) -> Self::Response;

    /// The verdict on an error of the inner service, boxed as the caller
    /// will get it. The default classifies it with
    /// [`classify_error`](crate::classify_error) and judges the kind by
    /// the circuit's configuration ([`Verdict::for_error`]): timeouts and
    /// connection errors count, anything else is ignored.
    fn classify_error(&self, error: &BoxError, config: &Config) -> Verdict {
        Verdict::for_error(&**error, config)
    }

    /// The error of a call the circuit rejected. The default is the
    /// [`OpenError`] itself, boxed.
    fn reject(&self, open: OpenError) -> BoxError {
        Box::new(open)
    }
}

/// The default classifier, for `http::Response`s: a status the circuit
/// counts is a failure, other statuses of 400 and above are ignored,
/// anything else is a success ([`Verdict::for_status`]); errors go through
/// [`classify_error`](crate::classify_error).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{ClassifyResponse, DefaultClassifier};
/// use fuse_breaker::Fuse;
///
/// let fuse = Arc::new(Fuse::new("billing", Default::default()));
/// let res = http::Response::builder().status(502).body(()).unwrap();
/// let res = DefaultClassifier.classify_response(res, fuse.try_acquire_owned()?);
/// assert_eq!(res.status(), 502);
/// assert_eq!(fuse.snapshot().failures.len(), 1);
/// # Ok::<(), fuse_breaker::OpenError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DefaultClassifier;

impl<B> ClassifyResponse<http::Response<B>> for DefaultClassifier {
    type Response = http::Response<B>;

    #[inline]
    fn classify_response(
        &self,
        response: http::Response<B>,
        permit: OwnedPermit,
    ) -> Self::Response {
        let verdict = Verdict::for_status(response.status().as_u16(), permit.config());
        permit.conclude(verdict);
        response
    }
}

/// A classifier for services whose responses are not HTTP: every response
/// is a success; errors go through [`classify_error`](crate::classify_error).
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
    type Response = Res;

    #[inline]
    fn classify_response(&self, response: Res, permit: OwnedPermit) -> Res {
        permit.success();
        response
    }
}

/// A classifier from a closure that gives the verdict on a response; errors
/// go through [`classify_error`](crate::classify_error). Made by
/// [`classify_fn`].
///
/// ```
/// use fuse_breaker::tower::{ClassifyFn, Verdict, classify_fn};
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
/// response; errors go through [`classify_error`](crate::classify_error).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{FuseLayer, Verdict, classify_fn};
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

impl<Res, F> ClassifyResponse<Res> for ClassifyFn<F>
where
    F: Fn(&Res, &Config) -> Verdict,
{
    type Response = Res;

    #[inline]
    fn classify_response(&self, response: Res, permit: OwnedPermit) -> Res {
        let verdict = self.verdict(&response, permit.config());
        permit.conclude(verdict);
        response
    }
}

impl<F> ClassifyFn<F> {
    /// The closure's verdict on `response`.
    pub(super) fn verdict<Res>(&self, response: &Res, config: &Config) -> Verdict
    where
        F: Fn(&Res, &Config) -> Verdict,
    {
        (self.f)(response, config)
    }
}

impl<F> fmt::Debug for ClassifyFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassifyFn")
            .field("f", &std::any::type_name::<F>())
            .finish()
    }
}
