//! [`Decided`]: the future of a shared circuit's decision, ready at once
//! when this process decides without the store (cached mode, a fallback),
//! boxed only when a round trip is needed, so that the common case moves
//! no large future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The future of [`SharedFuse::try_acquire`](super::SharedFuse::try_acquire)
/// and of a [`SharedPermit`](super::SharedPermit)'s verdicts: ready at once
/// when no round trip is needed, the store's answer otherwise.
///
/// ```
/// use std::sync::Arc;
/// use fuse_breaker::store::{MemoryStore, SharedFuse};
/// # futures::executor::block_on(async {
/// let fuse = SharedFuse::builder("billing", Arc::new(MemoryStore::new())).build();
/// let decided: fuse_breaker::store::Decided<'_, _> = fuse.try_acquire();
/// assert!(decided.await.is_ok());
/// # });
/// ```
#[must_use = "a decision does nothing unless awaited"]
pub struct Decided<'a, T> {
    inner: Inner<'a, T>,
}

enum Inner<'a, T> {
    Ready(Option<T>),
    Asking(Pin<Box<dyn Future<Output = T> + Send + 'a>>),
}

impl<'a, T> Decided<'a, T> {
    pub(super) fn ready(value: T) -> Self {
        Decided {
            inner: Inner::Ready(Some(value)),
        }
    }

    pub(super) fn asking(future: impl Future<Output = T> + Send + 'a) -> Self {
        Decided {
            inner: Inner::Asking(Box::pin(future)),
        }
    }
}

// The value is only ever moved out whole, never pinned: no structural
// pinning, so the future is `Unpin` whatever `T` is.
impl<T> Unpin for Decided<'_, T> {}

impl<T> Future for Decided<'_, T> {
    type Output = T;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<T> {
        match &mut self.get_mut().inner {
            Inner::Ready(value) => Poll::Ready(
                value
                    .take()
                    .expect("fuse_breaker::store::Decided polled after completion"),
            ),
            Inner::Asking(future) => future.as_mut().poll(cx),
        }
    }
}

impl<T> fmt::Debug for Decided<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.inner {
            Inner::Ready(Some(_)) => "ready",
            Inner::Ready(None) => "done",
            Inner::Asking(_) => "asking the store",
        };
        f.debug_struct("Decided").field("state", &state).finish()
    }
}
