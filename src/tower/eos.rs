//! The end of a response's body (feature `tonic`): [`ClassifyEos`] judges
//! it, [`ClassifiedBody`] holds the call's permit until it passes.

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;

use super::BoxError;
use super::classify::Classification;
use super::pending::{Concluding, PendingPermit};
use crate::config::Config;
use crate::verdict::Verdict;

/// Judges a call at the end of its response's body, for a classifier
/// whose [`classify_response`](super::ClassifyResponse::classify_response)
/// answered [`Classified::RequiresEos`](super::Classified::RequiresEos)
/// (tower-http's `ClassifyEos`): pure, like the classifier, from the
/// trailers (or the body's error) to a [`Classification`]. The body that
/// holds the permit ends it with the answer.
///
/// ```
/// use fuse_breaker::tower::{Classification, ClassifyEos};
/// use fuse_breaker::{Config, Verdict};
///
/// /// A stream whose trailers say `x-complete: false` broke off.
/// struct CompleteTrailer;
///
/// impl ClassifyEos for CompleteTrailer {
///     fn classify_eos(&self, trailers: Option<&http::HeaderMap>, _: &Config) -> Classification {
///         let broke = trailers.and_then(|t| t.get("x-complete")).is_some_and(|v| v == "false");
///         Verdict::success_if(!broke).into()
///     }
/// }
///
/// let mut trailers = http::HeaderMap::new();
/// trailers.insert("x-complete", "false".parse().unwrap());
/// let c = CompleteTrailer.classify_eos(Some(&trailers), &Config::default());
/// assert_eq!(c.verdict(), Verdict::Failure);
/// ```
pub trait ClassifyEos {
    /// The classification of a call whose body ended with `trailers`, or
    /// without trailers (`None`).
    fn classify_eos(&self, trailers: Option<&HeaderMap>, config: &Config) -> Classification;

    /// The classification of a call whose body failed before its end. The
    /// default judges the error as the classifiers do
    /// ([`Verdict::for_error`]).
    ///
    /// ```
    /// use std::io;
    /// use fuse_breaker::tower::{BoxError, Classification, ClassifyEos};
    /// use fuse_breaker::{Config, Verdict};
    ///
    /// struct Trailers;
    /// impl ClassifyEos for Trailers {
    ///     fn classify_eos(&self, _: Option<&http::HeaderMap>, _: &Config) -> Classification {
    ///         Verdict::Success.into()
    ///     }
    /// }
    /// let reset: BoxError = Box::new(io::Error::from(io::ErrorKind::ConnectionReset));
    /// assert_eq!(Trailers.classify_body_error(&reset, &Config::default()).verdict(), Verdict::Failure);
    /// ```
    fn classify_body_error(&self, error: &BoxError, config: &Config) -> Classification {
        Verdict::for_error(&**error, config).into()
    }
}

/// What a body hands on once its verdict is recorded.
enum Ending<D> {
    /// Its trailers.
    Trailers(Frame<D>),
    /// Its error.
    Error(BoxError),
    /// Its end, without trailers.
    End,
}

pin_project! {
    /// A response body whose call is judged at its end: it holds the
    /// call's [`PendingPermit`] and ends it with the [`ClassifyEos`]'s
    /// answer when the trailers pass (or the body fails, or ends without
    /// trailers); otherwise the inner body, unchanged. Its errors are
    /// boxed. Dropped before its end, it is an ignore verdict.
    ///
    /// Over a shared circuit, the verdict is a round trip to the store:
    /// the trailers are handed on once it is recorded.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::FuseLayer;
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use fuse_breaker::Fuse;
    /// use http_body_util::BodyExt;
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// let fuse = Arc::new(Fuse::new("ledger", Default::default()));
    /// let ledger = FuseLayer::new(fuse.clone()).classifier(GrpcClassifier::new()).layer(service_fn(|_req: http::Request<()>| async {
    ///     let mut trailers = http::HeaderMap::new();
    ///     trailers.insert("grpc-status", "14".parse().unwrap()); // UNAVAILABLE
    ///     let body = http_body_util::Full::new(&b"msg"[..]).with_trailers(async move { Some(Ok(trailers)) });
    ///     Ok::<_, std::io::Error>(http::Response::new(body))
    /// }));
    ///
    /// let res = futures::executor::block_on(ledger.oneshot(http::Request::new(())))?;
    /// assert!(fuse.snapshot().failures.is_empty(), "no verdict before the trailers");
    /// let collected = futures::executor::block_on(res.into_body().collect())?;
    /// assert_eq!(collected.trailers().unwrap()["grpc-status"], "14");
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// # Ok::<(), fuse_breaker::tower::BoxError>(())
    /// ```
    pub struct ClassifiedBody<B: Body, E> {
        #[pin]
        inner: B,
        // The end-of-stream classifier and the permit it will end.
        waiting: Option<(E, PendingPermit)>,
        // A verdict given and not yet recorded, and what to hand on then.
        concluding: Option<(Concluding, Ending<B::Data>)>,
    }
}

impl<B: Body, E> ClassifiedBody<B, E> {
    /// A body whose call is already judged.
    pub(super) fn decided(inner: B) -> Self {
        ClassifiedBody {
            inner,
            waiting: None,
            concluding: None,
        }
    }

    /// A body whose call `eos` will judge at its end.
    pub(super) fn waiting(inner: B, eos: E, permit: PendingPermit) -> Self {
        ClassifiedBody {
            inner,
            waiting: Some((eos, permit)),
            concluding: None,
        }
    }

    /// Whether the body still holds its call's permit (its verdict waits
    /// for the trailers, or is being recorded).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::FuseLayer;
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("ledger", Default::default()));
    /// let svc = FuseLayer::new(fuse).classifier(GrpcClassifier::new()).layer(service_fn(|_req: http::Request<()>| async {
    ///     // Trailers-only: the status is in the headers, judged at once.
    ///     Ok::<_, std::io::Error>(http::Response::builder().header("grpc-status", "5").body(String::new()).unwrap())
    /// }));
    /// let res = futures::executor::block_on(svc.oneshot(http::Request::new(()))).unwrap();
    /// assert!(!res.body().holds_permit());
    /// ```
    pub fn holds_permit(&self) -> bool {
        self.waiting.is_some() || self.concluding.is_some()
    }

    /// The inner body.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::tower::FuseLayer;
    /// use fuse_breaker::tower::grpc::GrpcClassifier;
    /// use tower::{Layer, ServiceExt, service_fn};
    ///
    /// let fuse = Arc::new(fuse_breaker::Fuse::new("ledger", Default::default()));
    /// let svc = FuseLayer::new(fuse).classifier(GrpcClassifier::new()).layer(service_fn(|_req: http::Request<()>| async {
    ///     Ok::<_, std::io::Error>(http::Response::new(String::from("x")))
    /// }));
    /// let res = futures::executor::block_on(svc.oneshot(http::Request::new(()))).unwrap();
    /// assert_eq!(res.body().get_ref(), "x");
    /// ```
    pub fn get_ref(&self) -> &B {
        &self.inner
    }
}

impl<B, E> Body for ClassifiedBody<B, E>
where
    B: Body,
    B::Error: Into<BoxError>,
    E: ClassifyEos,
{
    type Data = B::Data;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let mut this = self.project();
        loop {
            if let Some((concluding, _)) = this.concluding {
                ready!(concluding.poll(cx));
                let ending = this.concluding.take().map(|(_, ending)| ending);
                return Poll::Ready(match ending {
                    Some(Ending::Trailers(frame)) => Some(Ok(frame)),
                    Some(Ending::Error(error)) => Some(Err(error)),
                    Some(Ending::End) | None => None,
                });
            }
            let frame = ready!(this.inner.as_mut().poll_frame(cx));
            let Some((eos, permit)) = this.waiting.take() else {
                return Poll::Ready(frame.map(|frame| frame.map_err(Into::into)));
            };
            let (concluding, ending) = match frame {
                Some(Ok(frame)) => {
                    let Some(trailers) = frame.trailers_ref() else {
                        *this.waiting = Some((eos, permit));
                        return Poll::Ready(Some(Ok(frame)));
                    };
                    let concluding =
                        permit.conclude(|config| eos.classify_eos(Some(trailers), config));
                    (concluding, Ending::Trailers(frame))
                }
                Some(Err(error)) => {
                    let error = error.into();
                    let concluding =
                        permit.conclude(|config| eos.classify_body_error(&error, config));
                    (concluding, Ending::Error(error))
                }
                None => {
                    let concluding = permit.conclude(|config| eos.classify_eos(None, config));
                    (concluding, Ending::End)
                }
            };
            *this.concluding = Some((concluding, ending));
        }
    }

    fn is_end_stream(&self) -> bool {
        self.concluding.is_none() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl<B: Body, E> fmt::Debug for ClassifiedBody<B, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClassifiedBody")
            .field("permit", &self.waiting.as_ref().map(|(_, permit)| permit))
            .field("concluding", &self.concluding.is_some())
            .finish_non_exhaustive()
    }
}
