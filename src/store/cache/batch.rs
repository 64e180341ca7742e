//! Cached mode under `rate` (SPEC §9): the closed successes a process has
//! not sent yet. They are counted here with no round trip and sent with
//! the process's next step on the key: a failure or a slow call (which go
//! at once), or the first admission after the mirror's `staleness`, so at
//! least once per `staleness` while calls come.
//!
//! Each success is counted under the local coarse clock's time of its
//! bucket; when the batch is sent, a time `d` before the sending is the
//! store's time of the step minus `d`. A span of the local clock a bucket
//! wide counts in the store's bucket of its first success, so a success
//! may count one bucket early (and leave the window one bucket early):
//! the batch is at most `width` off, never lost.

use std::sync::Mutex;

use crate::config::Config;
use crate::model::{self, Effect};
use crate::policy::{self, Counts, Outcome, Window};
use crate::store::model::stored::{Stored, Ticket};
use crate::verdict::Verdict;

/// The successes of closed permits of one epoch not yet sent: for each
/// span of a bucket's width on the local clock, its start and its calls.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Batch {
    /// The permit the successes were granted under (all of one epoch).
    pub(crate) ticket: Ticket,
    /// `(local start, calls)`, oldest first.
    pub(crate) spans: Vec<(u64, u64)>,
    /// The local clock when the batch was taken to be sent.
    pub(crate) taken: u64,
}

impl Batch {
    /// How many successes the batch holds.
    pub(crate) fn calls(&self) -> u64 {
        self.spans.iter().map(|&(_, calls)| calls).sum()
    }
}

/// How many batches of different permits wait at most: a batch of an
/// epoch that ended is dropped when sent (its verdicts are stale), so a
/// few cover every change a mirror sees between two steps (a key's first
/// write names its generation: the batch of the permits granted while it
/// was absent still counts in it).
const MAX_BATCHES: usize = 4;

/// The batches being filled, one per permit, how many successes of
/// batches taken to be sent have not been sent yet, and how many were
/// lost with a step the store did not answer: all under one lock, so that
/// a success is always in one of them (a reader that finds none waiting
/// finds every unanswered one lost).
#[derive(Debug, Default)]
pub(crate) struct Pending(Mutex<Held>);

#[derive(Debug, Default)]
struct Held {
    batches: Vec<Batch>,
    sending: u64,
    lost: u64,
}

/// Batches taken to be sent: their successes count as unsent until this
/// is dropped, after the step that carries them (answered, refused or
/// cancelled), and as lost if that step was not answered
/// ([`sent`](Self::sent) says it was).
pub(crate) struct Sending<'a> {
    batches: Vec<Batch>,
    calls: u64,
    pending: &'a Pending,
    sent: bool,
}

impl Sending<'_> {
    /// The step that carried the batches was answered: they were sent
    /// (or found stale, which the store's answer also says).
    pub(crate) fn sent(mut self) {
        self.sent = true;
    }
}

impl std::ops::Deref for Sending<'_> {
    type Target = [Batch];

    fn deref(&self) -> &[Batch] {
        &self.batches
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        let mut held = self.pending.lock();
        held.sending = held.sending.saturating_sub(self.calls);
        if !self.sent {
            held.lost = held.lost.saturating_add(self.calls);
        }
    }
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, Held> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one success of `ticket` at `local` on the local clock, in
    /// spans `width` nanoseconds long, in the batch of its permit (a new
    /// one, the oldest dropped beyond [`MAX_BATCHES`]).
    pub(crate) fn add(&self, ticket: Ticket, local: u64, width: u64) {
        let mut held = self.lock();
        let batches = &mut held.batches;
        let at = if let Some(at) = batches.iter().position(|batch| batch.ticket == ticket) {
            at
        } else {
            if batches.len() == MAX_BATCHES {
                batches.remove(0);
            }
            batches.push(Batch {
                ticket,
                spans: Vec::new(),
                taken: 0,
            });
            batches.len() - 1
        };
        let batch = &mut batches[at];
        match batch.spans.last_mut() {
            Some((start, calls)) if local.saturating_sub(*start) < width => *calls += 1,
            _ => batch.spans.push((local, 1)),
        }
    }

    /// The batches to send, taken at `local` on the local clock (the next
    /// success starts new ones); they count as waiting until the step that
    /// carries them is over.
    pub(crate) fn take(&self, local: u64) -> Sending<'_> {
        let mut held = self.lock();
        let mut batches = std::mem::take(&mut held.batches);
        for batch in &mut batches {
            batch.taken = local;
        }
        let calls = batches.iter().map(Batch::calls).sum();
        // Counted as sending before the lock is let go: never in neither.
        held.sending = held.sending.saturating_add(calls);
        drop(held);
        Sending {
            batches,
            calls,
            pending: self,
            sent: false,
        }
    }

    /// How many successes were lost with a step the store did not answer
    /// (it may have written them: a reply lost on the way counts too).
    pub(crate) fn lost(&self) -> u64 {
        self.lock().lost
    }

    /// How many successes wait to be sent, or are being sent.
    pub(crate) fn calls(&self) -> u64 {
        let held = self.lock();
        held.batches.iter().map(Batch::calls).sum::<u64>() + held.sending
    }
}

impl Stored {
    /// Records `batch`, sent at the store's time `now`: each span's
    /// successes as that many closed successes of the batch's permit at the
    /// store's time of the span, when the model records a success of that
    /// permit (so a stale batch changes nothing). A success never opens the
    /// circuit, so the rule is not evaluated. Whether the window changed.
    pub(crate) fn record_batch(&mut self, config: &Config, batch: &Batch, now: u64) -> bool {
        if !self.owns_closed(&batch.ticket) {
            return false;
        }
        let effect = model::timed_verdict(
            config,
            self.head,
            batch.ticket.grant,
            Verdict::Success,
            false,
        );
        if effect != Effect::Record(Outcome::SUCCESS) || !config.policy().counts_calls() {
            return false;
        }
        if !matches!(self.window, Window::Rate(_)) {
            // An empty (or other policy's) window of a fresh key.
            self.window = Window::empty(config);
        }
        let Window::Rate(buckets) = &mut self.window else {
            return false;
        };
        let mut changed = false;
        for &(start, calls) in &batch.spans {
            let at = now.saturating_sub(batch.taken.saturating_sub(start));
            let counts = Counts {
                calls,
                ..Counts::default()
            };
            if calls > 0 {
                buckets.add(policy::bucket(config, at), counts);
                changed = true;
            }
        }
        self.window.prune(config, now);
        changed
    }
}

#[cfg(test)]
mod tests;
