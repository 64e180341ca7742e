//! The event stream: every transition of the served circuits, told once to
//! each open stream as a server-sent event. A bounded channel: a stream
//! that falls more than [`BACKLOG`] events behind gets a `lagged` event
//! with the count it missed (the dashboard then reads the list again), and
//! at most `max_streams` streams are open at once without the admin token,
//! and as many again with it (so that clients without it cannot take the
//! operator's streams).

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use tokio::sync::broadcast;

use super::ApiError;
use super::view::TransitionView;
use crate::transition::Transition;

/// Events a stream may fall behind by before it is told it lagged.
pub(super) const BACKLOG: usize = 1024;
/// How often an idle stream sends a comment, so that proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The transitions of every served circuit, to every open stream.
#[derive(Debug)]
pub(super) struct EventStreams {
    sender: broadcast::Sender<Arc<str>>,
    /// Streams open without the admin token.
    open: Arc<AtomicUsize>,
    /// Streams open with it.
    open_with_token: Arc<AtomicUsize>,
    max_streams: usize,
}

/// Who asks for a stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Asker {
    /// A client that brought the admin token.
    Operator,
    /// Anybody else (reads are public).
    Anonymous,
}

impl EventStreams {
    pub(super) fn new(max_streams: usize) -> Self {
        EventStreams {
            sender: broadcast::Sender::new(BACKLOG),
            open: Arc::default(),
            open_with_token: Arc::default(),
            max_streams,
        }
    }

    /// A listener that tells these events (inert once they are dropped):
    /// for `Registry::on_transition` and `SharedRegistry::on_transition`.
    pub(super) fn listener(&self) -> impl Fn(&Transition<'_>) + Send + Sync + 'static {
        let sender = self.sender.downgrade();
        move |transition: &Transition<'_>| {
            let Some(sender) = sender.upgrade() else {
                return;
            };
            // Nothing is written while no stream is open.
            if sender.receiver_count() == 0 {
                return;
            }
            if let Ok(json) = serde_json::to_string(&TransitionView::of(transition)) {
                let _ = sender.send(json.into());
            }
        }
    }

    /// A new stream, or the refusal when `max_streams` are open for
    /// `asker`: an operator takes one of the slots kept for the token,
    /// else one of the others.
    pub(super) fn stream(
        &self,
        asker: Asker,
    ) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>> + use<>>, ApiError> {
        let slot = match asker {
            Asker::Operator => Slot::take(&self.open_with_token, self.max_streams)
                .or_else(|_| Slot::take(&self.open, self.max_streams)),
            Asker::Anonymous => Slot::take(&self.open, self.max_streams),
        }?;
        let receiver = self.sender.subscribe();
        let events =
            futures_util::stream::unfold((receiver, slot), |(mut receiver, slot)| async move {
                let event = match receiver.recv().await {
                    Ok(json) => Event::default().event("transition").data(&*json),
                    Err(broadcast::error::RecvError::Lagged(missed)) => Event::default()
                        .event("lagged")
                        .data(format!("{{\"missed\":{missed}}}")),
                    Err(broadcast::error::RecvError::Closed) => return None,
                };
                Some((Ok(event), (receiver, slot)))
            });
        Ok(Sse::new(events).keep_alive(KeepAlive::new().interval(KEEP_ALIVE)))
    }
}

/// One open stream, counted while it lives.
#[derive(Debug)]
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(open: &Arc<AtomicUsize>, max: usize) -> Result<Self, ApiError> {
        open.fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .map_err(|_| ApiError::too_many_streams(max))?;
        Ok(Slot(open.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}
