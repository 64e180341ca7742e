//! [`Conclusion`]: the future of a shared permit's verdict, ready at once
//! when nothing needs the store, boxed only when a round trip is needed.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use crate::store::backend::error::StoreError;

/// A round trip under way.
pub(in crate::store) type Asking<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub(in crate::store) const POLLED_AFTER_COMPLETION: &str =
    "fuse_breaker::store future polled after completion";

/// The future of a [`SharedPermit`](crate::store::SharedPermit)'s verdict: `Ok`
/// at once when nothing needs the store, the store's answer otherwise.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{Conclusion, MemoryStore, SharedFuse};
/// # futures::executor::block_on(async {
/// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
/// let conclusion: Conclusion<'_> = fuse.try_acquire().await.unwrap().success();
/// assert!(conclusion.await.is_ok());
/// # });
/// ```
#[must_use = "a verdict may do nothing unless awaited"]
pub struct Conclusion<'a> {
    state: ConclusionState<'a>,
}

enum ConclusionState<'a> {
    /// Decided here with nothing to send.
    Settled,
    Asking(Asking<'a, Result<(), StoreError>>),
    Done,
}

impl<'a> Conclusion<'a> {
    #[inline]
    pub(in crate::store) fn settled() -> Self {
        Conclusion {
            state: ConclusionState::Settled,
        }
    }

    pub(in crate::store) fn asking(
        future: impl Future<Output = Result<(), StoreError>> + Send + 'a,
    ) -> Self {
        Conclusion {
            state: ConclusionState::Asking(Box::pin(future)),
        }
    }
}

impl Unpin for Conclusion<'_> {}

impl Future for Conclusion<'_> {
    type Output = Result<(), StoreError>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let state = &mut self.get_mut().state;
        match state {
            ConclusionState::Settled => {
                *state = ConclusionState::Done;
                Poll::Ready(Ok(()))
            }
            ConclusionState::Asking(future) => future.as_mut().poll(cx),
            ConclusionState::Done => panic!("{POLLED_AFTER_COMPLETION}"),
        }
    }
}

impl fmt::Debug for Conclusion<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            ConclusionState::Settled => "ready",
            ConclusionState::Asking(_) => "asking the store",
            ConclusionState::Done => "done",
        };
        f.debug_struct("Conclusion").field("state", &state).finish()
    }
}
