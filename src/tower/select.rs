//! [`SelectCircuit`]: which circuit a request goes through.

use std::fmt;
use std::sync::Arc;

use super::backed::LayerBacking;
use crate::backing::Local;
use crate::fuse::Fuse;
use crate::registry::Registry;

/// Picks the circuit of a request: for a circuit of this process, it asks
/// it for a permit at once; for a shared one, it hands the circuit to the
/// call's future, which asks the store.
///
/// [`OneCircuit`] and [`PerOperation`] are the two that
/// [`FuseLayer::new`](super::FuseLayer::new) and
/// [`FuseLayer::per_operation`](super::FuseLayer::per_operation) build,
/// over either backing; implement it for anything else (a circuit per
/// tenant, per shard) and give it to
/// [`FuseLayer::with_selector`](super::FuseLayer::with_selector).
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::backing::Local;
/// use fuse_breaker::tower::{LayerBacking, SelectCircuit};
/// use fuse_breaker::Registry;
///
/// /// One circuit per shard of a sharded store.
/// #[derive(Clone)]
/// struct PerShard(Arc<Registry>);
///
/// impl SelectCircuit<(u8, String)> for PerShard {
///     type Backing = Local;
///
///     fn select(&self, (shard, _key): &(u8, String)) -> <Local as LayerBacking>::Pick {
///         const SHARDS: [&str; 4] = ["0", "1", "2", "3"];
///         self.0.try_acquire("store", SHARDS[usize::from(shard % 4)])
///     }
/// }
///
/// let shards = PerShard(Arc::new(Registry::new(Default::default())));
/// shards.0.get_operation("store", "1").force_open();
/// assert!(shards.select(&(0, "a".into())).is_ok());
/// assert!(shards.select(&(1, "b".into())).is_err());
/// ```
pub trait SelectCircuit<Req> {
    /// The backing of the circuits it picks.
    type Backing: LayerBacking;

    /// What `request` goes through (see [`LayerBacking::Pick`]).
    fn select(&self, request: &Req) -> <Self::Backing as LayerBacking>::Pick;
}

/// Every request goes through one circuit, of either backing.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::tower::{OneCircuit, SelectCircuit};
///
/// let fuse = Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
/// let one = OneCircuit::new(fuse.clone());
/// fuse.force_open();
/// assert!(one.select(&"any request").is_err());
/// ```
#[derive(Debug)]
pub struct OneCircuit<B: LayerBacking = Local> {
    fuse: Arc<Fuse<B>>,
}

impl<B: LayerBacking> Clone for OneCircuit<B> {
    fn clone(&self) -> Self {
        OneCircuit {
            fuse: self.fuse.clone(),
        }
    }
}

impl<B: LayerBacking> OneCircuit<B> {
    /// Every request through `fuse`.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(fuse_breaker::tower::OneCircuit::new(fuse).fuse().key(), "fuse:billing");
    /// ```
    pub fn new(fuse: Arc<Fuse<B>>) -> Self {
        OneCircuit { fuse }
    }

    /// The circuit.
    ///
    /// ```
    /// let fuse = std::sync::Arc::new(fuse_breaker::Fuse::new("billing", Default::default()));
    /// assert_eq!(fuse_breaker::tower::OneCircuit::new(fuse).fuse().name(), "billing");
    /// ```
    pub fn fuse(&self) -> &Arc<Fuse<B>> {
        &self.fuse
    }
}

impl<Req, B: LayerBacking> SelectCircuit<Req> for OneCircuit<B> {
    type Backing = B;

    #[inline]
    fn select(&self, _request: &Req) -> B::Pick {
        B::pick(&self.fuse)
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
/// assert!(by_path.select(&charge).is_err());
/// assert!(by_path.select(&refund).is_ok());
/// ```
pub struct PerOperation<F, B: LayerBacking = Local> {
    registry: Arc<Registry<B>>,
    name: Arc<str>,
    select: F,
}

impl<F: Clone, B: LayerBacking> Clone for PerOperation<F, B> {
    fn clone(&self) -> Self {
        PerOperation {
            registry: self.registry.clone(),
            name: self.name.clone(),
            select: self.select.clone(),
        }
    }
}

impl<F, B: LayerBacking> PerOperation<F, B> {
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
    pub fn new<Req>(registry: Arc<Registry<B>>, name: impl Into<String>, select: F) -> Self
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
    pub fn registry(&self) -> &Arc<Registry<B>> {
        &self.registry
    }
}

impl<Req, F, B: LayerBacking> SelectCircuit<Req> for PerOperation<F, B>
where
    F: for<'a> Fn(&'a Req) -> &'a str,
{
    type Backing = B;

    #[inline]
    fn select(&self, request: &Req) -> B::Pick {
        B::pick_in(&self.registry, &self.name, (self.select)(request))
    }
}

impl<F, B: LayerBacking> fmt::Debug for PerOperation<F, B> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerOperation")
            .field("name", &self.name)
            .field("registry", &self.registry)
            .finish_non_exhaustive()
    }
}
