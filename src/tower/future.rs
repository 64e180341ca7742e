//! [`ResponseFuture`]: the future of one call of a [`FuseService`](super::FuseService).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use pin_project_lite::pin_project;

use super::BoxError;
use super::carry::CarryPermit;
use super::classify::{Classified, ClassifyResponse};
use super::pending::PendingPermit;
use crate::permit::OwnedPermit;

pin_project! {
    /// The future of one call of a [`FuseService`](super::FuseService):
    /// the inner call with the permit it holds, or a rejection, ready at
    /// once. It owns its permit, so it is `'static` when the inner future
    /// is; dropped before it finishes, it ends the permit with an ignore
    /// verdict.
    ///
    /// When the inner call returns, the classifier judges the response
    /// (or the error) by reference and this future ends the permit with
    /// the verdict, or hands the permit to the response's body when the
    /// classifier waits for the trailers
    /// ([`Classified::RequiresEos`](super::Classified::RequiresEos)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::FuseService;
    /// use fuse_breaker::{Config, Fuse};
    /// use tower::{Service, service_fn};
    ///
    /// let fuse = Arc::new(Fuse::new("billing", Default::default()));
    /// fuse.force_open();
    /// let mut svc = FuseService::new(service_fn(|_req: http::Request<()>| async {
    ///     Ok::<_, std::io::Error>(http::Response::new(()))
    /// }), fuse);
    /// // A rejected call is ready at once: nothing was sent.
    /// let rejected = svc.call(http::Request::new(()));
    /// assert!(futures::executor::block_on(rejected).is_err());
    /// ```
    pub struct ResponseFuture<F, C> {
        #[pin]
        state: State<F, C>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F, C> {
        Called {
            #[pin]
            future: F,
            permit: Option<OwnedPermit>,
            classifier: C,
        },
        Rejected {
            error: Option<BoxError>,
        },
    }
}

impl<F, C> ResponseFuture<F, C> {
    pub(super) fn called(future: F, permit: OwnedPermit, classifier: C) -> Self {
        ResponseFuture {
            state: State::Called {
                future,
                permit: Some(permit),
                classifier,
            },
        }
    }

    pub(super) fn rejected(error: BoxError) -> Self {
        ResponseFuture {
            state: State::Rejected { error: Some(error) },
        }
    }
}

impl<F, C, Res, E> Future for ResponseFuture<F, C>
where
    F: Future<Output = Result<Res, E>>,
    E: Into<BoxError>,
    C: ClassifyResponse<Res>,
    Res: CarryPermit<C::ClassifyEos>,
{
    type Output = Result<Res::Response, BoxError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Called {
                future,
                permit,
                classifier,
            } => {
                let outcome = ready!(future.poll(cx));
                let permit = permit
                    .take()
                    .expect("fuse_breaker ResponseFuture polled after completion");
                // The response is judged where it lies and moved once, into
                // what the caller gets.
                let classified = match &outcome {
                    Ok(response) => classifier.classify_response(response, permit.config()),
                    Err(_) => return Poll::Ready(Err(conclude_error(outcome, permit, classifier))),
                };
                Poll::Ready(match classified {
                    Classified::Ready(classification) => {
                        classification.conclude(permit);
                        outcome.map(CarryPermit::ready).map_err(Into::into)
                    }
                    Classified::RequiresEos(eos) => outcome
                        .map(|response| response.carry(eos, PendingPermit::local(permit)))
                        .map_err(Into::into),
                })
            }
            StateProj::Rejected { error } => Poll::Ready(Err(error
                .take()
                .expect("fuse_breaker ResponseFuture polled after completion"))),
        }
    }
}

/// Ends `permit` with the classification of the error in `outcome` (and
/// its hint) and
/// returns the error, boxed.
#[cold]
fn conclude_error<Res, E, C>(
    outcome: Result<Res, E>,
    permit: OwnedPermit,
    classifier: &C,
) -> BoxError
where
    E: Into<BoxError>,
    C: ClassifyResponse<Res>,
{
    let error = match outcome {
        Ok(_) => unreachable!("an error outcome"),
        Err(error) => error.into(),
    };
    classifier
        .classify_error(&error, permit.config())
        .conclude(permit);
    error
}

impl<F, C> fmt::Debug for ResponseFuture<F, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct("ResponseFuture");
        match &self.state {
            State::Called { permit, .. } => out.field("permit", permit),
            State::Rejected { error } => out.field("rejected", error),
        };
        out.finish_non_exhaustive()
    }
}
