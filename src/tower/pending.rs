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
pub struct PendingPermit(Box<dyn Tail>);

/// The rest of a call whose verdict waits for the end of its response's
/// body: for a circuit of this process its permit, ended at once; for a
/// shared one the rest of the layer's future, which gives the store the
/// verdict.
pub(super) trait Tail: Send + Sync + fmt::Debug {
    /// The circuit's configuration.
    #[cfg(feature = "tonic")]
    fn config(&self) -> &crate::config::Config;

    /// Gives the call its classification; poll the tail to record it.
    #[cfg(feature = "tonic")]
    fn give(&mut self, classification: Classification);

    /// Ready when the verdict is recorded.
    #[cfg(feature = "tonic")]
    fn poll(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()>;
}

/// A circuit of this process's permit, ended when it is given its
/// classification.
#[derive(Debug)]
struct Local {
    #[cfg_attr(not(feature = "tonic"), allow(dead_code))]
    config: &'static crate::config::Config,
    /// Taken by the classification.
    #[cfg_attr(not(feature = "tonic"), allow(dead_code))]
    permit: Option<OwnedPermit>,
}

impl Tail for Local {
    #[cfg(feature = "tonic")]
    fn config(&self) -> &crate::config::Config {
        self.config
    }

    #[cfg(feature = "tonic")]
    fn give(&mut self, classification: Classification) {
        if let Some(permit) = self.permit.take() {
            classification.conclude(permit);
        }
    }

    #[cfg(feature = "tonic")]
    fn poll(&mut self, _cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        std::task::Poll::Ready(())
    }
}

impl PendingPermit {
    pub(super) fn local(permit: OwnedPermit) -> Self {
        PendingPermit(Box::new(Local {
            config: permit.config(),
            permit: Some(permit),
        }))
    }

    #[cfg(feature = "store")]
    pub(super) fn shared(tail: Box<dyn Tail>) -> Self {
        PendingPermit(tail)
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
        let mut tail = self.0;
        let classification = judge(tail.config());
        tail.give(classification);
        Concluding { tail: Some(tail) }
    }
}

impl fmt::Debug for PendingPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("PendingPermit").field(&self.0).finish()
    }
}

/// A verdict given and not yet recorded (a shared circuit's round trip).
#[cfg(feature = "tonic")]
pub(super) struct Concluding {
    tail: Option<Box<dyn Tail>>,
}

#[cfg(feature = "tonic")]
impl Concluding {
    /// Ready when the verdict is recorded (at once for a circuit of this
    /// process).
    pub(super) fn poll(&mut self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        if let Some(tail) = &mut self.tail {
            std::task::ready!(tail.poll(cx));
            self.tail = None;
        }
        std::task::Poll::Ready(())
    }
}
