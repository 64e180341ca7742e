//! The shared circuit: [`SharedFuse`](shared::SharedFuse) and its builder,
//! admission and its future, permits and their verdicts, the step over
//! the store, the store's health, the fleet's throttle, what a round trip reports, running a
//! call, an operator's changes and views.

pub(crate) mod builder;
pub(crate) mod conclusion;
pub(crate) mod future;
pub(crate) mod health;
pub(crate) mod inspect;
pub(crate) mod live;
pub(crate) mod permit;
pub(crate) mod shared;
pub(crate) mod step;
pub(crate) mod throttle;
