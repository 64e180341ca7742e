//! [`SelectCircuit`]: which circuit a request goes through.

use std::fmt;
use std::sync::Arc;

use crate::error::OpenError;
use crate::fuse::Fuse;
use crate::permit::OwnedPermit;
use crate::registry::Registry;

/// Picks the circuit of a request and asks it for a permit.
///
/// [`OneCircuit`] and [`PerOperation`] are the two that
/// [`FuseLayer::new`](super::FuseLayer::new) and
/// [`FuseLayer::per_operation`](super::FuseLayer::per_operation) build;
/// implement it for anything else (a circuit per tenant, per shard) and
/// give it to [`FuseLayer::with_selector`](super::FuseLayer::with_selector).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::SelectCircuit;
/// use fuse_breaker::{OpenError, OwnedPermit, Registry};
///
/// /// One circuit per shard of a sharded store.
/// #[derive(Clone)]
/// struct PerShard(Arc<Registry>);
///
/// impl SelectCircuit<(u8, String)> for PerShard {
///     fn try_acquire(&self, (shard, _key): &(u8, String)) -> Result<OwnedPermit, OpenError> {
///         const SHARDS: [&str; 4] = ["0", "1", "2", "3"];
///         self.0.get_operation("store", SHARDS[usize::from(shard % 4)]).try_acquire_owned()
///     }
/// }
///
/// let shards = PerShard(Arc::new(Registry::new(Default::default())));
/// shards.0.get_operation("store", "1").force_open();
/// assert!(shards.try_acquire(&(0, "a".into())).is_ok());
/// assert!(shards.try_acquire(&(1, "b".into())).is_err());
/// ```
pub trait SelectCircuit<Req> {
    /// A permit of the circuit of `request`, or its rejection.
    fn try_acquire(&self, request: &Req) -> Result<OwnedPermit, OpenError>;
}

/// Every request goes through one circuit.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{OneCircuit, SelectCircuit};
///
/// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
/// let one = OneCircuit::new(fuse.clone());
/// fuse.force_open();
/// assert!(one.try_acquire(&"any request").is_err());
/// ```
#[derive(Clone, Debug)]
pub struct OneCircuit {
    fuse: Arc<Fuse>,
}

impl OneCircuit {
    /// Every request through `fuse`.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(fuse_breaker::tower::OneCircuit::new(fuse).fuse().key(), "fuse:billing");
    /// ```
    pub fn new(fuse: Arc<Fuse>) -> Self {
        OneCircuit { fuse }
    }

    /// The circuit.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(fuse_breaker::tower::OneCircuit::new(fuse).fuse().name(), "billing");
    /// ```
    pub fn fuse(&self) -> &Arc<Fuse> {
        &self.fuse
    }
}

impl<Req> SelectCircuit<Req> for OneCircuit {
    #[inline]
    fn try_acquire(&self, _request: &Req) -> Result<OwnedPermit, OpenError> {
        self.fuse.try_acquire_owned()
    }
}

/// The circuit of each request is the one of its operation in a
/// [`Registry`]: `registry.get_operation(name, select(&request))`.
///
/// Each distinct operation is a circuit for the life of the registry, and
/// its name is kept for the life of the process: select from a bounded set
/// (route templates, gRPC methods), not raw paths with identifiers in them.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{PerOperation, SelectCircuit};
/// use fuse_breaker::Registry;
///
/// let registry = Arc::new(Registry::new(Default::default()));
/// let by_path = PerOperation::new(registry.clone(), "billing", |req: &http::Request<()>| {
///     req.uri().path()
/// });
/// registry.get_operation("billing", "/charge").force_open();
///
/// let charge = http::Request::builder().uri("/charge").body(()).unwrap();
/// let refund = http::Request::builder().uri("/refund").body(()).unwrap();
/// assert!(by_path.try_acquire(&charge).is_err());
/// assert!(by_path.try_acquire(&refund).is_ok());
/// ```
#[derive(Clone)]
pub struct PerOperation<F> {
    registry: Arc<Registry>,
    name: Arc<str>,
    select: F,
}

impl<F> PerOperation<F> {
    /// The circuits named `name` in `registry`, one per operation that
    /// `select` reads from a request (give the closure's argument a type:
    /// `|req: &http::Request<Body>| req.uri().path()`).
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let per_op = fuse_breaker::tower::PerOperation::new(registry, "search", |q: &String| {
    ///     if q.starts_with("suggest:") { "suggest" } else { "query" }
    /// });
    /// assert_eq!(per_op.name(), "search");
    /// ```
    pub fn new<Req>(registry: Arc<Registry>, name: impl Into<String>, select: F) -> Self
    where
        F: for<'a> Fn(&'a Req) -> &'a str,
    {
        PerOperation {
            registry,
            name: name.into().into(),
            select,
        }
    }

    /// The name of the circuits.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let per_op = fuse_breaker::tower::PerOperation::new(registry, "billing", |r: &String| r.as_str());
    /// assert_eq!(per_op.name(), "billing");
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The registry the circuits live in.
    ///
    /// ```
    /// use std::sync::Arc;
    /// let registry = Arc::new(fuse_breaker::Registry::new(Default::default()));
    /// let per_op = fuse_breaker::tower::PerOperation::new(registry.clone(), "billing", |r: &String| r.as_str());
    /// assert!(Arc::ptr_eq(per_op.registry(), &registry));
    /// ```
    pub fn registry(&self) -> &Arc<Registry> {
        &self.registry
    }
}

impl<Req, F> SelectCircuit<Req> for PerOperation<F>
where
    F: for<'a> Fn(&'a Req) -> &'a str,
{
    #[inline]
    fn try_acquire(&self, request: &Req) -> Result<OwnedPermit, OpenError> {
        let operation = (self.select)(request);
        self.registry.try_acquire(&self.name, operation)
    }
}

impl<F> fmt::Debug for PerOperation<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerOperation")
            .field("name", &self.name)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}
