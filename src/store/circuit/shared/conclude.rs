//! Verdicts on permits the store granted: settled here when the mirror
//! shows nothing to send, a step on the store otherwise.

use crate::config::Config;
use crate::store::Encoding;
use crate::store::Incremented;
use crate::store::backend::error::StoreError;
use crate::store::circuit::conclusion::Conclusion;
use crate::store::circuit::live::Reading;
use crate::store::circuit::shared::SharedFuse;
use crate::store::model::asked::Tag;
use crate::store::model::increment::Increment;
use crate::store::model::payload;
use crate::store::model::stored::{Opens, Ticket};
use crate::verdict::Verdict;

impl SharedFuse {
    /// Ends a permit the store granted, on a call that was `slow` or not
    /// (see [`is_slow`](crate::policy::is_slow)), with the server's `hint`
    /// of when to come back on a failure; `Ok` also when the verdict was
    /// stale.
    #[inline]
    pub(in crate::store) fn conclude_in_store(
        &self,
        ticket: Ticket,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
    ) -> Conclusion<'_> {
        self.tally(&ticket, verdict);
        if self.settles(ticket, verdict, slow) {
            Conclusion::settled()
        } else {
            Conclusion::asking(self.conclude_asking(ticket, verdict, slow, hint))
        }
    }

    /// [`conclude_in_store`](Self::conclude_in_store) awaited where the
    /// caller's future is: a round trip, when one is needed, is part of
    /// that future rather than a box of its own.
    pub(in crate::store) async fn conclude_in_place(
        &self,
        ticket: Ticket,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
    ) -> Result<(), StoreError> {
        self.tally(&ticket, verdict);
        if self.settles(ticket, verdict, slow) {
            return Ok(());
        }
        self.conclude_asking(ticket, verdict, slow, hint).await
    }

    /// Counts a closed verdict in the fleet's throttle (SPEC §11: a
    /// success is an accepted request, a failure a request that was not;
    /// an ignore is neither).
    #[inline]
    fn tally(&self, ticket: &Ticket, verdict: Verdict) {
        if let Some(throttle) = self.throttle()
            && !ticket.is_probe()
            && verdict != Verdict::Ignore
        {
            let tag = Tag {
                generation: ticket.generation,
                epoch: ticket.epoch,
            };
            throttle.ask(tag, verdict == Verdict::Success);
        }
    }

    /// Whether this process settles the verdict with nothing to send now.
    #[inline]
    fn settles(&self, ticket: Ticket, verdict: Verdict, slow: bool) -> bool {
        let quiet = verdict != Verdict::Failure
            && !slow
            && self.quiet_ticket().is_some_and(|quiet| quiet == ticket);
        if quiet {
            // A success or an ignore of the quiet circuit's own permit:
            // nothing to clear, nothing to send now (under `rate`, a
            // success waits in the batch).
            if verdict == Verdict::Success {
                self.batch(ticket);
            }
            return true;
        }
        self.settles_slow(ticket, verdict, slow)
    }

    /// Under `rate`, counts a quiet success in the batch.
    #[inline]
    fn batch(&self, ticket: Ticket) {
        if self.settings().policy().counts_calls()
            && let Some(cache) = &self.backing.cache
        {
            cache.batch(ticket);
        }
    }

    /// Whether the mirror settles a verdict the quiet mirror does not.
    #[inline(never)]
    fn settles_slow(&self, ticket: Ticket, verdict: Verdict, slow: bool) -> bool {
        let config = self.settings();
        let settled = self.by_mirror(|mirror, staleness| {
            if verdict == Verdict::Success
                && !slow
                && !ticket.is_probe()
                && mirror.batches(config, &ticket, staleness)
            {
                return Some(true);
            }
            mirror
                .settles(config, &ticket, verdict, slow, staleness)
                .then_some(false)
        });
        match settled {
            Some(batched) => {
                if batched {
                    self.batch(ticket);
                }
                true
            }
            None => false,
        }
    }

    /// A verdict that asks the store: a closed verdict under `rate` as an
    /// [`Increment`] where the store applies one (one round trip, no race
    /// with other processes' verdicts; a failure or a slow call that opens
    /// the circuit then takes the opening's step; in cached mode, a
    /// failure or a slow call takes the model's step, with the batch),
    /// anything else as the model's step.
    ///
    /// A closed permit granted while the key was absent has no generation
    /// yet: it belongs to the key's first epoch, whatever generation names
    /// it. Its success takes the model's step (the key's first write, if
    /// the key is still absent), unless the key turns out to be named and
    /// still in that epoch: then it is an increment under that name, so
    /// that the first successes of a fleet on a new key do not race each
    /// other's compare-and-set and every increment since.
    async fn conclude_asking(
        &self,
        ticket: Ticket,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
    ) -> Result<(), StoreError> {
        // In cached mode a failure or a slow call takes the model's step,
        // which sends the batched successes with it. An increment applies
        // to a JSON payload alone (its text starts with the increment's
        // prefix): a store that writes PHP's serialize() is not asked for
        // one, which would cost a round trip and apply to nothing.
        let config = self.settings();
        let reported = verdict == Verdict::Failure || slow;
        let increments = verdict != Verdict::Ignore
            && !(reported && self.backing.cache.is_some())
            && !ticket.is_probe()
            && config.policy().counts_calls()
            && self.backing.store.codec().writes() == Encoding::Json;
        if increments
            && ticket.generation != 0
            && self.increment(config, &ticket, verdict, slow, hint).await?
        {
            return Ok(());
        }
        let unnamed = increments && ticket.generation == 0 && ticket.epoch == 0;
        let mut named = None;
        let step = self.step(config, None, |stored, now| {
            named = None;
            if unnamed && stored.generation != 0 && stored.owns_closed(&ticket) {
                named = Some(Ticket {
                    generation: stored.generation,
                    ..ticket
                });
                return false;
            }
            let opens = Opens {
                hint,
                generation: crate::random::next(),
                reporter: self.backing.reporter,
            };
            stored.timed_verdict(config, &ticket, verdict, slow, opens, now)
        });
        self.round_trip(step).await?;
        let Some(named) = named else {
            return Ok(());
        };
        if self.increment(config, &named, verdict, slow, hint).await? {
            return Ok(());
        }
        // The key moved on since: the model's step decides.
        let step = self.step(config, None, |stored, now| {
            let opens = Opens {
                hint,
                generation: crate::random::next(),
                reporter: self.backing.reporter,
            };
            stored.timed_verdict(config, &named, verdict, slow, opens, now)
        });
        self.round_trip(step).await.map(drop)
    }

    /// Whether the store applied the increment of `ticket`'s closed
    /// `verdict` under `config` (not when the configuration or the store
    /// has none). A
    /// failure's or a slow call's increment answers with the payload it
    /// wrote: when the model finds that it opens the circuit, the opening
    /// (decided at the increment's time, on what it wrote) is written if
    /// the key still holds the ticket's closed epoch, whatever its window
    /// counted since ([`Store::swap_prefixed`](crate::store::Store::swap_prefixed):
    /// the calls counted since are of the epoch the opening ends, and the
    /// successes landing meanwhile cannot make it lose every
    /// compare-and-set); of two processes that both found their failure
    /// opening it, the second finds the epoch over and writes nothing.
    async fn increment(
        &self,
        config: &Config,
        ticket: &Ticket,
        verdict: Verdict,
        slow: bool,
        hint: Option<u64>,
    ) -> Result<bool, StoreError> {
        let reading = Reading::of(&self.backing.live, config);
        let Some(increment) = Increment::verdict(
            config,
            ticket,
            verdict,
            slow,
            self.backing.reporter,
            reading.ttl,
        ) else {
            return Ok(false);
        };
        let loaded = match self
            .round_trip(self.backing.store.increment(self.key(), &increment))
            .await?
        {
            Incremented::Skipped => return Ok(false),
            Incremented::Applied => return Ok(true),
            // What the key holds instead: a verdict of an epoch that ended
            // is stale, and done (an epoch never comes back); any other
            // takes the model's step.
            Incremented::Unchanged(held) => {
                let stale = self
                    .in_store(config)
                    .read(&held)
                    .is_ok_and(|stored| !stored.owns_closed(ticket));
                return Ok(stale);
            }
            Incremented::Wrote(loaded) => loaded,
        };
        let stored = self.in_store(config).read(&loaded)?;
        let now = payload::store_time(loaded.now);
        self.remember(&stored, now);
        if !stored.opens_after(config, ticket, now) {
            return Ok(true);
        }
        let opens = Opens {
            hint,
            generation: crate::random::next(),
            reporter: self.backing.reporter,
        };
        let mut opened = stored.clone();
        opened.open_for(config, ticket, opens, now);
        let written = payload::write(&opened, reading.width, self.backing.store.codec().writes());
        let swap = self.backing.store.swap_prefixed(
            self.key(),
            increment.prefix(),
            &written,
            reading.ttl,
            true,
        );
        if self.round_trip(swap).await? {
            self.remember(&opened, now);
            self.report(config, &stored, &opened, loaded.now, None);
        }
        Ok(true)
    }
}
