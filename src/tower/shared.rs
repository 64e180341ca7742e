//! A [`FuseService`](super::FuseService) over shared circuits (features
//! `tower` and `store`): the call's future asks the store for a permit, so
//! `call` picks the circuit and the future does the rest. The inner
//! service is cloned for each call (its futures are `'static`), as tower's
//! `Buffer` and retry layers do.

use std::sync::Arc;

use tower_service::Service;

use super::BoxError;
use super::backed::{CallThrough, LayerBacking};
use super::carry::CarryPermit;
use super::classify::ClassifyResponse;
use super::shared_future::SharedResponseFuture;
use crate::registry::Registry;
use crate::store::{Shared, SharedFuse};

impl LayerBacking for Shared {
    type Pick = Arc<SharedFuse>;

    fn pick(fuse: &Arc<SharedFuse>) -> Self::Pick {
        fuse.clone()
    }

    fn pick_in(registry: &Registry<Shared>, name: &str, operation: &str) -> Self::Pick {
        registry.get_operation(name, operation)
    }
}

impl<S, Req, C> CallThrough<S, Req, C> for Shared
where
    S: Service<Req> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Into<BoxError>,
    S::Response: CarryPermit<C::ClassifyEos> + Send + 'static,
    C: ClassifyResponse<S::Response> + Clone + Send + 'static,
    C::ClassifyEos: Send + 'static,
    Req: Send + 'static,
{
    type Future = SharedResponseFuture<S::Response, C::ClassifyEos>;

    fn call(fuse: Arc<SharedFuse>, inner: &mut S, request: Req, classifier: &C) -> Self::Future {
        // The service `poll_ready` made ready goes into the future; the
        // service keeps a clone for the next call.
        let clone = inner.clone();
        let ready = std::mem::replace(inner, clone);
        SharedResponseFuture::new(fuse, ready, request, classifier.clone())
    }
}
