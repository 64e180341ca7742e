//! [`SharedFuseLayer`]: the layer over a circuit a fleet shares through a
//! store (features `tower` and `store`).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use tower_layer::Layer;
use tower_service::Service;

use super::BoxError;
use super::classify::{ClassifyFn, DefaultClassifier, OkIsSuccess};
use crate::config::Config;
use crate::store::SharedFuse;
use crate::verdict::Verdict;

/// The verdict on a call of a [`SharedFuseService`], from its outcome: the
/// classifiers of [`FuseLayer`](super::FuseLayer) that decide on the
/// response itself ([`DefaultClassifier`], [`OkIsSuccess`],
/// [`ClassifyFn`]) are judges too.
///
/// ```
/// use fuse_breaker::tower::{BoxError, DefaultClassifier, Judge, Verdict};
/// let config = fuse_breaker::Config::default();
/// let unavailable: Result<_, BoxError> = Ok(http::Response::builder().status(503).body(()).unwrap());
/// assert_eq!(DefaultClassifier.judge(&unavailable, &config), Verdict::Failure);
/// ```
pub trait Judge<Res> {
    /// The verdict on `outcome` under the circuit's `config`.
    fn judge(&self, outcome: &Result<Res, BoxError>, config: &Config) -> Verdict;
}

fn error_verdict(error: &BoxError, config: &Config) -> Verdict {
    Verdict::for_error(&**error, config)
}

impl<B> Judge<http::Response<B>> for DefaultClassifier {
    fn judge(&self, outcome: &Result<http::Response<B>, BoxError>, config: &Config) -> Verdict {
        Verdict::for_outcome(
            outcome,
            |response| Verdict::for_status(response.status().as_u16(), config),
            |error| error_verdict(error, config),
        )
    }
}

impl<Res> Judge<Res> for OkIsSuccess {
    fn judge(&self, outcome: &Result<Res, BoxError>, config: &Config) -> Verdict {
        Verdict::for_outcome(
            outcome,
            |_| Verdict::Success,
            |error| error_verdict(error, config),
        )
    }
}

impl<Res, F> Judge<Res> for ClassifyFn<F>
where
    F: Fn(&Res, &Config) -> Verdict,
{
    fn judge(&self, outcome: &Result<Res, BoxError>, config: &Config) -> Verdict {
        Verdict::for_outcome(
            outcome,
            |response| self.verdict(response, config),
            |error| error_verdict(error, config),
        )
    }
}

/// A [`Layer`] that puts a [`SharedFuse`] in front of a service: each call
/// asks the store for a permit (so the call's future does the admission,
/// not `call`), runs the inner call if it gets one, and gives the store
/// the [`Judge`]'s verdict. A refused call fails with the
/// [`Refusal`](crate::store::Refusal), boxed, without calling the inner
/// service. The inner service is cloned for each call (its futures are
/// `'static`), as tower's `Buffer` and retry layers do.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// use fuse_breaker::tower::SharedFuseLayer;
/// use fuse_breaker::Config;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// # futures::executor::block_on(async {
/// let store = Arc::new(MemoryStore::new());
/// let config = Config::builder().failure_threshold(1).build()?;
/// let fuse = Arc::new(SharedFuse::builder("billing", store).config(config).build());
/// let billing = SharedFuseLayer::new(fuse.clone()).layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::builder().status(503).body(()).unwrap())
/// }));
/// let res = billing.clone().oneshot(http::Request::new(())).await?;
/// assert_eq!(res.status(), 503);
/// assert!(billing.oneshot(http::Request::new(())).await.is_err(), "open for the fleet");
/// # Ok::<(), fuse_breaker::tower::BoxError>(())
/// # }).unwrap();
/// ```
#[derive(Clone)]
pub struct SharedFuseLayer<J = DefaultClassifier> {
    fuse: Arc<SharedFuse>,
    judge: J,
}

impl SharedFuseLayer {
    /// A layer over `fuse`, judging HTTP responses by status
    /// ([`DefaultClassifier`]).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// let fuse = Arc::new(SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build());
    /// let layer = fuse_breaker::tower::SharedFuseLayer::new(fuse);
    /// # drop(layer);
    /// ```
    pub fn new(fuse: Arc<SharedFuse>) -> Self {
        SharedFuseLayer {
            fuse,
            judge: DefaultClassifier,
        }
    }
}

impl<J> SharedFuseLayer<J> {
    /// The same layer with another judge.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::tower::{OkIsSuccess, SharedFuseLayer};
    /// let fuse = Arc::new(SharedFuse::builder("lookup", Arc::new(MemoryStore::new())).build());
    /// let layer = SharedFuseLayer::new(fuse).judge(OkIsSuccess);
    /// # drop(layer);
    /// ```
    pub fn judge<K>(self, judge: K) -> SharedFuseLayer<K> {
        SharedFuseLayer {
            fuse: self.fuse,
            judge,
        }
    }
}

impl<S, J: Clone> Layer<S> for SharedFuseLayer<J> {
    type Service = SharedFuseService<S, J>;

    fn layer(&self, inner: S) -> Self::Service {
        SharedFuseService {
            inner,
            fuse: self.fuse.clone(),
            judge: self.judge.clone(),
        }
    }
}

impl<J> fmt::Debug for SharedFuseLayer<J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuseLayer")
            .field("fuse", &self.fuse)
            .finish_non_exhaustive()
    }
}

/// A service behind a [`SharedFuse`] (built by [`SharedFuseLayer`]).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// use fuse_breaker::tower::SharedFuseLayer;
/// use tower::Layer;
/// let fuse = Arc::new(SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build());
/// let svc = SharedFuseLayer::new(fuse).layer(tower::service_fn(|_: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(()))
/// }));
/// assert_eq!(svc.fuse().key(), "fuse:billing");
/// ```
#[derive(Clone)]
pub struct SharedFuseService<S, J = DefaultClassifier> {
    inner: S,
    fuse: Arc<SharedFuse>,
    judge: J,
}

impl<S, J> SharedFuseService<S, J> {
    /// The shared circuit.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    /// use fuse_breaker::tower::SharedFuseLayer;
    /// use tower::Layer;
    /// let fuse = Arc::new(SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build());
    /// let svc = SharedFuseLayer::new(fuse.clone()).layer(());
    /// assert!(Arc::ptr_eq(svc.fuse(), &fuse));
    /// ```
    pub fn fuse(&self) -> &Arc<SharedFuse> {
        &self.fuse
    }
}

impl<S, J> fmt::Debug for SharedFuseService<S, J> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedFuseService")
            .field("fuse", &self.fuse)
            .finish_non_exhaustive()
    }
}

impl<S, J, Req> Service<Req> for SharedFuseService<S, J>
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    S::Response: Send,
    J: Judge<S::Response> + Clone + Send + Sync + 'static,
    Req: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: Req) -> Self::Future {
        // The service `poll_ready` made ready goes into the future; this one
        // keeps a clone for the next call.
        let clone = self.inner.clone();
        let mut inner = std::mem::replace(&mut self.inner, clone);
        let (fuse, judge) = (self.fuse.clone(), self.judge.clone());
        Box::pin(async move {
            let permit = fuse.try_acquire().await.map_err(BoxError::from)?;
            let outcome = inner.call(request).await.map_err(Into::into);
            let verdict = judge.judge(&outcome, fuse.config());
            // A verdict the store could not take is reported to the
            // circuit's listeners; the caller gets the call's own result.
            let _ = permit.conclude(verdict).await;
            outcome
        })
    }
}
