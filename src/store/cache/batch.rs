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
use crate::sync::Tally;
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

/// The batches being filled, one per permit, and how many successes of
/// batches taken to be sent have not been sent yet.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    batches: Mutex<Vec<Batch>>,
    sending: Tally,
}

/// Batches taken to be sent: their successes count as unsent until this
/// is dropped, after the step that carries them (answered, refused or
/// cancelled).
pub(crate) struct Sending<'a> {
    batches: Vec<Batch>,
    calls: u64,
    pending: &'a Pending,
}

impl std::ops::Deref for Sending<'_> {
    type Target = [Batch];

    fn deref(&self) -> &[Batch] {
        &self.batches
    }
}

impl Drop for Sending<'_> {
    fn drop(&mut self) {
        self.pending.sending.sub(self.calls);
    }
}

impl Pending {
    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Batch>> {
        self.batches
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Counts one success of `ticket` at `local` on the local clock, in
    /// spans `width` nanoseconds long, in the batch of its permit (a new
    /// one, the oldest dropped beyond [`MAX_BATCHES`]).
    pub(crate) fn add(&self, ticket: Ticket, local: u64, width: u64) {
        let mut batches = self.lock();
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
        let mut batches = std::mem::take(&mut *self.lock());
        for batch in &mut batches {
            batch.taken = local;
        }
        let calls = batches.iter().map(Batch::calls).sum();
        self.sending.add(calls);
        Sending {
            batches,
            calls,
            pending: self,
        }
    }

    /// How many successes wait to be sent, or are being sent.
    pub(crate) fn calls(&self) -> u64 {
        self.lock().iter().map(Batch::calls).sum::<u64>() + self.sending.get()
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
        if effect != Effect::Record(Outcome::SUCCESS)
            || config.policy() != crate::config::Policy::Rate
        {
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
mod tests {
    use super::*;
    use crate::config::Policy;
    use crate::store::model::stored::{At, Entry, Opens};
    use std::time::Duration;

    const SEC: u64 = 1_000_000_000;

    fn config() -> Config {
        Config::builder()
            .policy(Policy::Rate)
            .minimum_calls(4)
            .failure_rate(50)
            .window_buckets(10)
            .failure_window(Duration::from_mins(1))
            .build()
            .unwrap()
    }

    fn closed_permit(stored: &mut Stored, config: &Config, now: u64) -> Ticket {
        let at = At {
            now,
            lease: SEC,
            lease_id: 1,
            generation: 9,
        };
        match stored.acquire(config, at).0 {
            Entry::Granted(ticket) => ticket,
            Entry::Rejected { .. } => panic!("rejected"),
        }
    }

    #[test]
    fn a_batch_records_as_its_successes_one_by_one() {
        let config = config();
        let now = 1_700_000_000 * SEC;
        let mut one_by_one = Stored::fresh(9);
        let ticket = closed_permit(&mut one_by_one, &config, now);
        let mut batched = one_by_one.clone();
        // Successes 25 s, 24 s and 1 s before the batch is sent (6 s
        // buckets; 1,700,000,000 s is 2 s into one).
        let pending = Pending::default();
        let sent = 100 * SEC;
        for ago in [25, 24, 24, 1] {
            pending.add(
                ticket,
                sent - ago * SEC,
                crate::store::model::payload::width(&config),
            );
            one_by_one.timed_verdict(
                &config,
                &ticket,
                Verdict::Success,
                false,
                Opens::default(),
                now - ago * SEC,
            );
        }
        assert_eq!(pending.calls(), 4);
        let sending = pending.take(sent);
        assert_eq!(pending.calls(), 4, "being sent: still waiting");
        let batch = sending.last().unwrap().clone();
        drop(sending);
        assert_eq!(pending.calls(), 0, "sent");
        assert_eq!(batch.spans, vec![(75 * SEC, 3), (99 * SEC, 1)]);
        assert!(batched.record_batch(&config, &batch, now));
        assert_eq!(batched.snapshot(&config, now).calls, 4);
        // Each span counts in the store's bucket of its first success: the
        // same buckets as one by one here.
        assert_eq!(batched.window, one_by_one.window);
    }

    #[test]
    fn a_batch_of_an_ended_epoch_changes_nothing() {
        let config = config();
        let now = 1_700_000_000 * SEC;
        let mut stored = Stored::fresh(9);
        let ticket = closed_permit(&mut stored, &config, now);
        let pending = Pending::default();
        pending.add(ticket, 0, SEC);
        let batch = pending.take(0).last().unwrap().clone();
        stored.force_open(&config, now, 9);
        let before = stored.clone();
        assert!(!stored.record_batch(&config, &batch, now));
        assert_eq!(stored, before);
        // Under `count` a success records nothing to batch.
        let count = Config::default();
        let mut closed = Stored::fresh(9);
        let ticket = closed_permit(&mut closed, &count, now);
        let batch = Batch {
            ticket,
            spans: vec![(0, 3)],
            taken: 0,
        };
        assert!(!closed.record_batch(&count, &batch, now));
    }

    #[test]
    fn a_success_of_another_permit_starts_a_batch_of_its_own() {
        let config = config();
        let now = 1_700_000_000 * SEC;
        let mut stored = Stored::fresh(9);
        let first = closed_permit(&mut stored, &config, now);
        let pending = Pending::default();
        pending.add(first, 0, SEC);
        pending.add(first, 1, SEC);
        stored.force_closed(&config);
        let second = closed_permit(&mut stored, &config, now);
        assert_ne!(first, second);
        pending.add(second, 2, SEC);
        let batches = pending.take(3);
        let kept: Vec<_> = batches.iter().map(|b| (b.ticket, b.calls())).collect();
        assert_eq!(kept, vec![(first, 2), (second, 1)]);
        // Only the one of the epoch the circuit is in counts.
        let mut sent = stored.clone();
        let changed: Vec<bool> = batches
            .iter()
            .map(|batch| sent.record_batch(&config, batch, now))
            .collect();
        assert_eq!(changed, vec![false, true]);
        assert_eq!(sent.snapshot(&config, now).calls, 1);
        // No more than a few batches wait.
        for epoch in 0..10 {
            let ticket = Ticket { epoch, ..first };
            pending.add(ticket, 0, SEC);
        }
        assert_eq!(pending.take(0).len(), MAX_BATCHES);
    }
}
