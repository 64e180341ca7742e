//! [`CarryPermit`] and [`PendingPermit`]: how a classified response
//! reaches the caller, unchanged or with a body that holds its call's
//! permit until the end of the body decides.

use std::fmt;

use super::classify::NeverClassifyEos;
use crate::permit::OwnedPermit;

mod sealed {
    /// Only this crate says how a response carries a permit.
    pub trait Sealed<E> {}
}

/// How a response reaches the caller once its classifier has answered:
/// unchanged when the classifier decides on the response (its
/// `ClassifyEos` is [`NeverClassifyEos`]: every type, as it is), or with a
/// body that holds the call's permit until its end when the classifier
/// waits for the trailers (`http::Response<B>` becomes
/// `http::Response<ClassifiedBody<B, E>>`, feature `tonic`).
///
/// The crate implements it (it is sealed); it appears in the bounds of
/// [`FuseService`](super::FuseService) and
/// [`SharedFuseService`](super::SharedFuseService), whose response type
/// is `<Res as CarryPermit<C::ClassifyEos>>::Response`.
///
/// ```
/// use fuse_breaker::tower::{CarryPermit, NeverClassifyEos};
///
/// // A classifier that decides on the response leaves it as it is.
/// fn unchanged<R: CarryPermit<NeverClassifyEos, Response = R>>(response: R) -> R {
///     response.ready()
/// }
/// assert_eq!(unchanged(42), 42);
/// ```
pub trait CarryPermit<E>: Sized + sealed::Sealed<E> {
    /// What the caller receives.
    type Response;

    /// The response of a call whose permit is already ended.
    fn ready(self) -> Self::Response;

    /// The response of a call whose permit `permit` waits for `eos` to
    /// judge the end of the body.
    fn carry(self, eos: E, permit: PendingPermit) -> Self::Response;
}

impl<Res> sealed::Sealed<NeverClassifyEos> for Res {}

impl<Res> CarryPermit<NeverClassifyEos> for Res {
    type Response = Res;

    #[inline]
    fn ready(self) -> Res {
        self
    }

    fn carry(self, eos: NeverClassifyEos, _permit: PendingPermit) -> Res {
        match eos {}
    }
}

#[cfg(feature = "tonic")]
impl<B, E> sealed::Sealed<E> for http::Response<B>
where
    B: http_body::Body,
    E: super::eos::ClassifyEos,
{
}

#[cfg(feature = "tonic")]
impl<B, E> CarryPermit<E> for http::Response<B>
where
    B: http_body::Body,
    E: super::eos::ClassifyEos,
{
    type Response = http::Response<super::eos::ClassifiedBody<B, E>>;

    #[inline]
    fn ready(self) -> Self::Response {
        self.map(super::eos::ClassifiedBody::decided)
    }

    #[inline]
    fn carry(self, eos: E, permit: PendingPermit) -> Self::Response {
        self.map(|body| super::eos::ClassifiedBody::waiting(body, eos, permit))
    }
}

/// The permit of a call whose verdict waits for the end of its response's
/// body: held by that body ([`ClassifiedBody`](super::ClassifiedBody),
/// feature `tonic`), which ends it when the trailers pass. Dropped before
/// then, it is an ignore verdict (a shared circuit's probe slot comes back
/// when its lease ends).
///
/// ```
/// # #[cfg(feature = "tonic")] {
/// use std::sync::Arc;
/// use fuse_breaker::tower::FuseLayer;
/// use fuse_breaker::tower::grpc::GrpcClassifier;
/// use http_body_util::BodyExt;
/// use tower::{Layer, ServiceExt, service_fn};
///
/// let fuse = Arc::new(fuse_breaker::Fuse::new("ledger", Default::default()));
/// let svc = FuseLayer::new(fuse).classifier(GrpcClassifier::new()).layer(service_fn(|_req: http::Request<()>| async {
///     Ok::<_, std::io::Error>(http::Response::new(http_body_util::Full::new(&b"msg"[..])))
/// }));
/// let res = futures::executor::block_on(svc.oneshot(http::Request::new(()))).unwrap();
/// assert!(res.body().holds_permit(), "a PendingPermit waits for the trailers");
/// futures::executor::block_on(res.into_body().collect()).unwrap();
/// # }
/// ```
pub struct PendingPermit(Held);

/// Who granted a pending permit.
enum Held {
    /// A circuit of this process.
    Local(OwnedPermit),
    /// A shared circuit: the rest of its call, which ends its permit when
    /// the body gives the verdict.
    #[cfg(feature = "store")]
    Shared(super::shared_future::Tail),
}

impl PendingPermit {
    #[inline]
    pub(super) fn local(permit: OwnedPermit) -> Self {
        PendingPermit(Held::Local(permit))
    }

    #[cfg(feature = "store")]
    pub(super) fn shared(tail: super::shared_future::Tail) -> Self {
        PendingPermit(Held::Shared(tail))
    }

    /// Ends the permit with the verdict `judge` gives under the circuit's
    /// configuration; what is left to wait for before the verdict is
    /// recorded (nothing for a circuit of this process).
    #[cfg(feature = "tonic")]
    pub(super) fn conclude(
        self,
        judge: impl FnOnce(&crate::config::Config) -> crate::verdict::Verdict,
    ) -> Concluding {
        match self.0 {
            Held::Local(permit) => {
                let verdict = judge(permit.config());
                permit.conclude(verdict);
                Concluding::done()
            }
            #[cfg(feature = "store")]
            Held::Shared(tail) => {
                let verdict = judge(tail.config());
                Concluding::shared(tail.give(verdict))
            }
        }
    }
}

impl fmt::Debug for PendingPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Held::Local(permit) => f.debug_tuple("PendingPermit").field(permit).finish(),
            #[cfg(feature = "store")]
            Held::Shared(tail) => f.debug_tuple("PendingPermit").field(tail).finish(),
        }
    }
}

/// A verdict given and not yet recorded: a shared circuit's round trip.
#[cfg(feature = "tonic")]
pub(super) struct Concluding {
    #[cfg(feature = "store")]
    tail: Option<super::shared_future::Tail>,
}

#[cfg(feature = "tonic")]
impl Concluding {
    fn done() -> Self {
        Concluding {
            #[cfg(feature = "store")]
            tail: None,
        }
    }

    #[cfg(feature = "store")]
    fn shared(tail: super::shared_future::Tail) -> Self {
        Concluding { tail: Some(tail) }
    }

    /// Ready when the verdict is recorded (at once for a circuit of this
    /// process).
    pub(super) fn poll(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        #[cfg(feature = "store")]
        if let Some(tail) = &mut self.tail {
            std::task::ready!(tail.poll(cx));
            self.tail = None;
        }
        #[cfg(not(feature = "store"))]
        let _ = (self, cx);
        std::task::Poll::Ready(())
    }
}
