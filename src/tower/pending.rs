//! [`PendingPermit`]: the permit of a call whose verdict waits for the
//! end of its response's body, of a circuit of this process or a shared
//! one.

use std::fmt;

#[cfg(feature = "tonic")]
use super::classify::Classification;
use crate::permit::OwnedPermit;

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
    Shared(Box<dyn Tail>),
}

/// The rest of a shared circuit's call whose verdict waits for the end of
/// its response's body (the shared layer's future implements it).
#[cfg(feature = "store")]
pub(super) trait Tail: Send + Sync + fmt::Debug {
    /// The shared circuit's configuration.
    #[cfg(feature = "tonic")]
    fn config(&self) -> &crate::config::Config;

    /// Gives the call its classification; poll the tail to record it.
    #[cfg(feature = "tonic")]
    fn give(&mut self, classification: Classification);

    /// Ready when the verdict is recorded.
    #[cfg(feature = "tonic")]
    fn poll(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()>;
}

impl PendingPermit {
    #[inline]
    pub(super) fn local(permit: OwnedPermit) -> Self {
        PendingPermit(Held::Local(permit))
    }

    #[cfg(feature = "store")]
    pub(super) fn shared(tail: Box<dyn Tail>) -> Self {
        PendingPermit(Held::Shared(tail))
    }

    /// Ends the permit with the classification (the verdict and its hint)
    /// `judge` gives under the circuit's configuration; what is left to
    /// wait for before the verdict is recorded (nothing for a circuit of
    /// this process).
    #[cfg(feature = "tonic")]
    pub(super) fn conclude(
        self,
        judge: impl FnOnce(&crate::config::Config) -> Classification,
    ) -> Concluding {
        match self.0 {
            Held::Local(permit) => {
                judge(permit.config()).conclude(permit);
                Concluding::done()
            }
            #[cfg(feature = "store")]
            Held::Shared(mut tail) => {
                let classification = judge(tail.config());
                tail.give(classification);
                Concluding::shared(tail)
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
    tail: Option<Box<dyn Tail>>,
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
    fn shared(tail: Box<dyn Tail>) -> Self {
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
