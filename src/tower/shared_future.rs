//! [`SharedResponseFuture`]: the future of one call of a
//! [`FuseService`](super::FuseService) over a shared circuit.
//!
//! A shared circuit's permit borrows its circuit, so the whole call
//! (admission, the inner call, the verdict's round trip) is one boxed
//! future, the driver, that owns the circuit. It hands the outcome over
//! through an exchange; when the classifier waits for the trailers, the
//! driver hands the response over and waits in the exchange for the
//! verdict, and the response body (holding the driver as its
//! [`PendingPermit`]) gives it and drives the round trip to its end.

use std::fmt;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll};

use tower_service::Service;

use super::BoxError;
use super::carry::CarryPermit;
use super::classify::{Classification, Classified, ClassifyResponse};
use super::pending::PendingPermit;
use crate::config::Config;
use crate::store::SharedFuse;

/// The whole call, from the admission to the recorded verdict.
type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

const POLLED_AFTER_COMPLETION: &str = "fuse_breaker SharedResponseFuture polled after completion";

/// The future of one call of a [`FuseService`](super::FuseService) over a
/// shared circuit:
/// the admission by the store, the inner call, and the verdict the
/// classifier gives it, recorded before the outcome is handed on (or, when
/// the classifier waits for the trailers, by the response body when they
/// pass). Dropped before it finishes, it records nothing (a probe's slot
/// comes back when its lease ends).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// use fuse_breaker::tower::{FuseLayer, SharedResponseFuture};
/// use tower::{Layer, Service, service_fn};
///
/// let fuse = Arc::new(fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build());
/// let mut svc = FuseLayer::new(fuse).layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(()))
/// }));
/// let call: SharedResponseFuture<_, _> = svc.call(http::Request::new(()));
/// assert_eq!(futures::executor::block_on(call).unwrap().status(), 200);
/// ```
pub struct SharedResponseFuture<Res, E> {
    driver: Option<Driver>,
    exchange: Arc<Exchange<Res, E>>,
}

/// What the driver hands over, and the classification a body gives it.
struct Exchange<Res, E> {
    fuse: Arc<SharedFuse>,
    slot: Mutex<Slot<Res, E>>,
}

struct Slot<Res, E> {
    delivered: Option<Delivered<Res, E>>,
    classification: Option<Classification>,
}

/// The driver's outcome.
enum Delivered<Res, E> {
    /// The call is over and its verdict recorded.
    Done(Result<Res, BoxError>),
    /// The response, whose verdict waits for the end of its body.
    AtEnd(Res, E),
}

impl<Res, E> Exchange<Res, E> {
    fn slot(&self) -> MutexGuard<'_, Slot<Res, E>> {
        // Nothing panics while the lock is held: a poisoned slot is whole.
        self.slot.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn deliver(&self, delivered: Delivered<Res, E>) {
        self.slot().delivered = Some(delivered);
    }
}

/// An exchange as the response body sees it (only a `ClassifiedBody`,
/// feature `tonic`, gives verdicts).
#[cfg_attr(not(feature = "tonic"), allow(dead_code))]
trait Verdicts: Send + Sync {
    fn config(&self) -> &Config;
    fn give(&self, classification: Classification);
}

impl<Res: Send, E: Send> Verdicts for Exchange<Res, E> {
    fn config(&self) -> &Config {
        self.fuse.config()
    }

    fn give(&self, classification: Classification) {
        self.slot().classification = Some(classification);
    }
}

impl<Res, E> SharedResponseFuture<Res, E>
where
    Res: Send + 'static,
    E: Send + 'static,
{
    pub(super) fn new<S, Req, C>(
        fuse: Arc<SharedFuse>,
        mut inner: S,
        request: Req,
        classifier: C,
    ) -> Self
    where
        S: Service<Req, Response = Res> + Send + 'static,
        S::Future: Send,
        S::Error: Into<BoxError>,
        C: ClassifyResponse<Res, ClassifyEos = E> + Send + 'static,
        Req: Send + 'static,
    {
        let exchange = Arc::new(Exchange {
            fuse,
            slot: Mutex::new(Slot {
                delivered: None,
                classification: None,
            }),
        });
        let shared = exchange.clone();
        let driver = Box::pin(async move {
            let fuse = &*shared.fuse;
            let permit = match fuse.acquire_in_place().await {
                Ok(permit) => permit,
                Err(refusal) => {
                    return shared.deliver(Delivered::Done(Err(classifier.refuse(refusal))));
                }
            };
            let outcome = inner.call(request).await.map_err(Into::into);
            let (classification, outcome) = match outcome {
                Ok(response) => match classifier.classify_response(&response, fuse.config()) {
                    Classified::Ready(classification) => (classification, Ok(response)),
                    Classified::RequiresEos(eos) => {
                        shared.deliver(Delivered::AtEnd(response, eos));
                        // The body gives the verdict, then polls this
                        // future again: no waker to keep.
                        let classification = poll_fn(|_| {
                            shared
                                .slot()
                                .classification
                                .take()
                                .map_or(Poll::Pending, Poll::Ready)
                        })
                        .await;
                        // As below: a lost verdict is the listeners' news.
                        let _ = classification.conclude_shared(permit).await;
                        return;
                    }
                },
                Err(error) => (classifier.classify_error(&error, fuse.config()), Err(error)),
            };
            // A verdict the store could not take is reported to the
            // circuit's listeners; the caller gets the call's own result.
            let _ = classification.conclude_shared(permit).await;
            shared.deliver(Delivered::Done(outcome));
        });
        SharedResponseFuture {
            driver: Some(driver),
            exchange,
        }
    }
}

impl<Res, E> Future for SharedResponseFuture<Res, E>
where
    Res: CarryPermit<E> + Send + 'static,
    E: Send + 'static,
{
    type Output = Result<Res::Response, BoxError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let driver = this.driver.as_mut().expect(POLLED_AFTER_COMPLETION);
        let finished = driver.as_mut().poll(cx).is_ready();
        let delivered = this.exchange.slot().delivered.take();
        match delivered {
            Some(Delivered::Done(outcome)) => {
                this.driver = None;
                Poll::Ready(outcome.map(CarryPermit::ready))
            }
            Some(Delivered::AtEnd(response, eos)) => {
                let driver = this.driver.take().expect(POLLED_AFTER_COMPLETION);
                let verdicts: Arc<dyn Verdicts> = this.exchange.clone();
                let tail = Tail {
                    driver: Mutex::new(driver),
                    verdicts,
                };
                Poll::Ready(Ok(
                    response.carry(eos, PendingPermit::shared(Box::new(tail)))
                ))
            }
            None => {
                debug_assert!(
                    !finished,
                    "the driver hands over its outcome before it ends"
                );
                Poll::Pending
            }
        }
    }
}

impl<Res, E> fmt::Debug for SharedResponseFuture<Res, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedResponseFuture")
            .field("fuse", &self.exchange.fuse.key())
            .field("done", &self.driver.is_none())
            .finish()
    }
}

/// The rest of a shared circuit's call whose verdict waits for the end of
/// its response's body: held by that body as its [`PendingPermit`] (only a
/// `ClassifiedBody`, feature `tonic`, holds one).
#[cfg_attr(not(feature = "tonic"), allow(dead_code))]
pub(super) struct Tail {
    /// Behind a mutex only so that the body stays `Sync`: reached through
    /// `&mut`, never locked.
    driver: Mutex<Driver>,
    verdicts: Arc<dyn Verdicts>,
}

impl super::pending::Tail for Tail {
    #[cfg(feature = "tonic")]
    fn config(&self) -> &Config {
        self.verdicts.config()
    }

    #[cfg(feature = "tonic")]
    fn give(&mut self, classification: Classification) {
        self.verdicts.give(classification);
    }

    #[cfg(feature = "tonic")]
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let driver = self
            .driver
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        driver.as_mut().poll(cx)
    }
}

impl fmt::Debug for Tail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tail").finish_non_exhaustive()
    }
}
