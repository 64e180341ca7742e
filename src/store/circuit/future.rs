//! [`Admission`]: the future of a shared circuit's admission, ready at once
//! when this process decides without the store (cached mode, a fallback),
//! boxed only when a round trip is needed.
//!
//! The common case (a quiet cached circuit) holds only the words its result
//! is made of, and makes the result when polled: a whole result moved
//! into the future and out of it again cost more than the decision (its
//! words stored one by one, then reloaded sixteen bytes at a time, each
//! reload waiting for the stores).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::store::backend::error::Refusal;
use crate::store::circuit::conclusion::{Asking, POLLED_AFTER_COMPLETION};
use crate::store::circuit::permit::{Grantor, SharedPermit};
use crate::store::circuit::shared::SharedFuse;
use crate::store::model::stored::Ticket;

/// The future of [`SharedFuse::try_acquire`]: a permit or the reason there
/// is none, at once when this process decides, the store's answer
/// otherwise.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{Admission, MemoryStore, SharedFuse};
/// # futures::executor::block_on(async {
/// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
/// let admission: Admission<'_> = fuse.try_acquire();
/// assert!(admission.await.is_ok());
/// # });
/// ```
#[must_use = "an admission does nothing unless awaited"]
pub struct Admission<'a> {
    state: AdmissionState<'a>,
}

enum AdmissionState<'a> {
    /// A closed permit of the store's circuit, granted by the mirror.
    Granted(&'a SharedFuse, Ticket),
    Ready(Result<SharedPermit<'a>, Refusal>),
    Asking(Asking<'a, Result<SharedPermit<'a>, Refusal>>),
    Done,
}

impl<'a> Admission<'a> {
    #[inline]
    pub(in crate::store) fn granted(fuse: &'a SharedFuse, ticket: Ticket) -> Self {
        Admission {
            state: AdmissionState::Granted(fuse, ticket),
        }
    }

    pub(in crate::store) fn ready(decided: Result<SharedPermit<'a>, Refusal>) -> Self {
        Admission {
            state: AdmissionState::Ready(decided),
        }
    }

    pub(in crate::store) fn asking(
        future: impl Future<Output = Result<SharedPermit<'a>, Refusal>> + Send + 'a,
    ) -> Self {
        Admission {
            state: AdmissionState::Asking(Box::pin(future)),
        }
    }
}

// Nothing is pinned structurally (the round trip is boxed): `Unpin`.
impl Unpin for Admission<'_> {}

impl<'a> Future for Admission<'a> {
    type Output = Result<SharedPermit<'a>, Refusal>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let state = &mut self.get_mut().state;
        if let AdmissionState::Granted(fuse, ticket) = *state {
            *state = AdmissionState::Done;
            return Poll::Ready(Ok(SharedPermit::new(fuse, Grantor::Store(ticket))));
        }
        if let AdmissionState::Asking(future) = state {
            return future.as_mut().poll(cx);
        }
        match std::mem::replace(state, AdmissionState::Done) {
            AdmissionState::Ready(decided) => Poll::Ready(decided),
            _ => panic!("{POLLED_AFTER_COMPLETION}"),
        }
    }
}

impl fmt::Debug for Admission<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            AdmissionState::Granted(..) | AdmissionState::Ready(_) => "ready",
            AdmissionState::Asking(_) => "asking the store",
            AdmissionState::Done => "done",
        };
        f.debug_struct("Admission").field("state", &state).finish()
    }
}
