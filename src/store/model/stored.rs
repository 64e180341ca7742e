//! A circuit as a shared store keeps it (SPEC §8): the rules of
//! [`model`](crate::model) over a plain snapshot, plus what a fleet needs
//! besides them: a generation chosen when the key is created (so that the
//! epochs of a key never repeat, across resets and expiry too), epochs
//! counted in 64 bits, and a lease on every probe.
//!
//! Pure: the store's time, the lease length and the random numbers are
//! given. An opening's duration (SPEC §10) is drawn from the key's
//! generation and the opening's time, once, by the process whose write
//! opens the circuit (an opening that is a key's first write names the
//! generation first, and draws from it); every process then reads the
//! same `retry_at`, kept as a payload keeps it (see [`Stored::phase`]).
//! Each step says whether it changed the snapshot, so that a store writes
//! nothing when nothing changed.
//!
//! A closed circuit opens when its policy's rule holds and, besides, the
//! quorum of [`quorum`](crate::store::model::quorum) does (SPEC §8, `min_reporters`):
//! until then it stays closed and keeps counting.

use std::convert::Infallible;

use crate::config::Config;
use crate::epoch::Epoch;
use crate::grade::{self, Shed, ramp};
use crate::model::{self, Decision, Effect, Grant, Head, Opening, PermitKind, Span};
use crate::policy::{Failures, Window};
use crate::recovery;
use crate::snapshot::{Snapshot, State};
use crate::verdict::Verdict;

use crate::store::model::quorum::Reporters;
use crate::store::model::resolution;

/// One probe in flight: granted under lease `id`, counted as an ignore
/// verdict once the store's time reaches `until`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Lease {
    pub(crate) id: u64,
    pub(crate) until: u64,
}

/// A circuit under one key. Times are nanoseconds since the Unix epoch on
/// the store's clock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stored {
    /// Chosen at random when the key was created.
    pub(crate) generation: u64,
    /// State changes in this generation (the head carries its low bits).
    pub(crate) epoch: u64,
    pub(crate) head: Head,
    /// When the circuit last opened (meaningful while open or half-open).
    pub(crate) opened_at: u64,
    /// While open, when the opening ends (`retry_at`, a whole microsecond:
    /// the first at or after the end of SPEC §10's duration, so that the
    /// payload keeps it exactly and every store time, itself a whole
    /// microsecond, is before it or not as it is before the exact end);
    /// while half-open, when the half-open epoch started (for the probe
    /// timeout).
    pub(crate) phase: u64,
    /// The closed window of the policy (see [`Window`]).
    pub(crate) window: Window,
    /// Who reported the failures in the window (SPEC §8's quorum).
    pub(crate) reporters: Reporters,
    /// The probes in flight while half-open (as many as `head.inflight`).
    pub(crate) leases: Vec<Lease>,
    /// While open, the failures that opened it, as milon/fuse keeps them
    /// in its `failures`: a `count` window's, a failed probe's (none for
    /// a manual opening or a `rate` window's). milon/fuse counts them
    /// with a failure it records while open, so that its late failure
    /// keeps an opening of this crate's open, as it keeps its own.
    pub(crate) opened_by: Vec<u64>,
    /// The epoch is known by its face alone: a foreign writer (milon/fuse,
    /// which keeps no `fuse` part) wrote in it, so its generation and
    /// epoch are not known, and a permit whose epoch the payload still
    /// shows (its state, and a probe's opening to the second) is of it
    /// (SPEC §8, foreign writers; see [`Stored::shows`]). Kept in what
    /// this crate writes until the next transition, which starts an epoch
    /// of its own.
    pub(crate) foreign: bool,
    /// While the closed epoch ramps up (SPEC §11): the n of the opening
    /// before it, and when the store closed it (its clock); `None`
    /// otherwise. Kept after the ramp is over until a write clears it.
    pub(crate) ramp: Option<Ramp>,
}

/// A ramp-up in progress (SPEC §11).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ramp {
    /// The n of the opening whose probes closed the circuit.
    pub(crate) n: u32,
    /// When the store closed it.
    pub(crate) since: u64,
}

/// A permit granted through a store: whose it is, down to the lease of a
/// probe.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Ticket {
    pub(crate) generation: u64,
    pub(crate) epoch: u64,
    pub(crate) grant: Grant,
    /// The probe's lease (`None` for a closed permit).
    pub(crate) lease: Option<u64>,
    /// A probe's: the second its epoch's opening started, as milon/fuse's
    /// `opened_at` keeps it (0 for a closed permit). What a foreign
    /// writer leaves of the epoch besides its state.
    pub(crate) opened_s: u64,
}

impl Ticket {
    /// Whether this permit is a half-open probe.
    pub(crate) fn is_probe(&self) -> bool {
        self.grant.kind() == PermitKind::Probe
    }
}

/// The answer to an admission through a store.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The call may run under this permit.
    Granted(Ticket),
    /// The call is rejected; the circuit may admit again after this many
    /// nanoseconds (0: when a probe finishes), or a closed circuit's graded
    /// admission shed it (SPEC §11: the wait is
    /// [`shed_wait`](crate::error::shed_wait)'s).
    Rejected { retry_after: u64 },
}

/// What a verdict or a manual change needs from outside: the server's
/// `hint` of when to come back (nanoseconds; a failure's), a random
/// `generation` that names the key if an opening is its first write (0:
/// none), so that the opening is drawn from the generation the key then
/// has, and the `reporter` of a failure (the store handle's id; 0:
/// [`ANONYMOUS`](crate::store::model::quorum::ANONYMOUS)).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Opens {
    pub(crate) hint: Option<u64>,
    pub(crate) generation: u64,
    pub(crate) reporter: u64,
}

/// What an admission needs from outside: the store's time, the length of
/// a probe's lease, and random numbers for a new lease and for the key's
/// generation if this admission is the key's first write.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At {
    pub(crate) now: u64,
    pub(crate) lease: u64,
    pub(crate) lease_id: u64,
    pub(crate) generation: u64,
    /// The process's draw for a graded admission (SPEC §11), read only
    /// while a rule sheds calls.
    pub(crate) draw: u32,
    /// The share the fleet's throttle sheds, as this process last read
    /// it (SPEC §11; it applies to the closed epoch it names).
    pub(crate) throttle: Option<graded::Share>,
}

impl Stored {
    /// The circuit of a key that is absent or expired: fresh and closed,
    /// of no generation yet (0). Its first write names one; a closed
    /// permit granted before that belongs to the first closed epoch of
    /// whichever generation the key then has, since nothing moved the
    /// circuit meanwhile.
    pub(crate) fn absent() -> Self {
        Stored::fresh(0)
    }

    /// What `reset` writes: a fresh closed circuit in a new generation,
    /// past the first epoch, so that no permit granted before, not even
    /// one granted while the key was absent, counts in it.
    pub(crate) fn reset(generation: u64) -> Self {
        let mut stored = Stored::fresh(generation);
        stored.epoch = 1;
        stored.head = Head::closed(Epoch::new(1));
        stored
    }

    /// A fresh closed circuit of generation `generation`.
    pub(crate) fn fresh(generation: u64) -> Self {
        Stored {
            generation,
            epoch: 0,
            head: Head::closed(Epoch::new(0)),
            opened_at: 0,
            phase: 0,
            window: Window::Count(Failures::default()),
            reporters: Reporters::default(),
            leases: Vec::new(),
            opened_by: Vec::new(),
            foreign: false,
            ramp: None,
        }
    }

    /// Admission at `at.now`. Expired leases end first, as ignore verdicts.
    pub(crate) fn acquire(&mut self, config: &Config, at: At) -> (Entry, bool) {
        self.window.prune(config, at.now);
        let mut changed = self.expire(config, at.now);
        // An opening counts from its start: a rejection asks for no more
        // than what is left of it from there.
        let phase = || {
            Ok::<_, Infallible>(match self.head.state {
                State::Open => Span {
                    at: self.opened_at,
                    end: Some(self.phase),
                },
                _ => Span::since(self.phase),
            })
        };
        let Ok((admission, next)) = model::acquire(config, self.head, phase, || at.now);
        if let Some(next) = next {
            self.set(config, next, at.now, Opens::default());
            changed = true;
        }
        if changed && self.generation == 0 {
            // The key's first write names its generation; the permit
            // granted with it carries the name.
            self.generation = at.generation;
        }
        let entry = match admission {
            Decision::Granted(grant) => {
                let lease = (grant.kind() == PermitKind::Probe).then(|| {
                    self.leases.push(Lease {
                        id: at.lease_id,
                        until: at.now.saturating_add(at.lease),
                    });
                    at.lease_id
                });
                Entry::Granted(Ticket {
                    generation: self.generation,
                    epoch: self.epoch,
                    grant,
                    lease,
                    opened_s: if lease.is_some() {
                        self.opened_at / resolution::NANOS_PER_SEC
                    } else {
                        0
                    },
                })
            }
            // `model::acquire` never sheds a call: graded admission is
            // decided after it.
            Decision::Rejected { retry_after } => Entry::Rejected { retry_after },
        };
        if let Entry::Granted(ticket) = entry
            && !ticket.is_probe()
            && (self.ramp.is_some() || at.throttle.is_some())
        {
            let (graded, ended) = self.graded(config, at);
            let shed = |why| Entry::Rejected {
                retry_after: crate::error::shed_wait(why),
            };
            return (graded.map_or(entry, shed), changed || ended);
        }
        (entry, changed)
    }

    /// The verdict of `ticket` on a call that was not slow, at `now`.
    #[cfg(test)]
    pub(crate) fn verdict(
        &mut self,
        config: &Config,
        ticket: &Ticket,
        verdict: Verdict,
        now: u64,
    ) -> bool {
        self.timed_verdict(config, ticket, verdict, false, Opens::default(), now)
    }

    /// The verdict of `ticket` on a call that was `slow` or not (see
    /// [`is_slow`](crate::policy::is_slow)), at `now`, with what an opening
    /// it makes needs (the server's hint, a generation to name the key
    /// with): stale when the ticket is of another generation or epoch, or
    /// a probe whose lease has ended.
    pub(crate) fn timed_verdict(
        &mut self,
        config: &Config,
        ticket: &Ticket,
        verdict: Verdict,
        slow: bool,
        opens: Opens,
        now: u64,
    ) -> bool {
        self.window.prune(config, now);
        let mut changed = self.expire(config, now);
        if !self.owns(ticket) {
            return changed;
        }
        if let Some(id) = ticket.lease {
            let Some(at) = self.lease_of(id) else {
                return changed;
            };
            self.leases.remove(at);
            changed = true;
        }
        match model::timed_verdict(config, self.head, self.grant_of(ticket), verdict, slow) {
            Effect::Stale | Effect::Nothing => {}
            Effect::Record(outcome) => {
                if !self.window.fits(config) {
                    // A window of another policy starts over: so do its
                    // reporters.
                    changed |= self.reporters.clear();
                }
                let recorded = self.window.record(config, outcome, now);
                changed |= recorded.changed;
                if outcome.failed || outcome.slow {
                    self.reporters
                        .record(config, &self.window, opens.reporter, now);
                    changed = true;
                } else if self.window.is_empty() {
                    // A success that cleared the window (`count`).
                    changed |= self.reporters.clear();
                }
                if recorded.opens
                    && self.reporters.holds(config, &self.window, now)
                    && let Some(open) =
                        model::trip(self.head, self.grant_of(ticket), self.relapse(config, now))
                {
                    self.set(config, open, now, opens);
                }
            }
            Effect::Move(next) => {
                self.set(config, next, now, opens);
                changed = true;
            }
        }
        changed
    }

    /// The grant of `ticket` as the model meets it: in an epoch a foreign
    /// writer wrote in, of the epoch the head carries (the ticket was
    /// found to be of it, [`shows`](Self::shows)).
    fn grant_of(&self, ticket: &Ticket) -> Grant {
        if self.foreign {
            Grant::new(ticket.grant.kind(), self.head.epoch)
        } else {
            ticket.grant
        }
    }

    /// Where the lease `id` is among the probes in flight. In an epoch a
    /// foreign writer wrote in, a probe whose lease it dropped (it keeps
    /// a count alone) takes the lowest of those it counts: the leases a
    /// payload of milon/fuse's is read with are numbered from 0, and this
    /// crate's are random.
    fn lease_of(&self, id: u64) -> Option<usize> {
        let own = self.leases.iter().position(|lease| lease.id == id);
        if own.is_some() || !self.foreign {
            return own;
        }
        self.leases
            .iter()
            .enumerate()
            .min_by_key(|(_, lease)| lease.id)
            .map(|(at, _)| at)
    }

    /// Whether the closed failure (or slow call) of `ticket` that a store's
    /// increment recorded opens the circuit as the increment left it at
    /// `now`: the ticket's closed epoch is still the circuit's, the
    /// window's rule holds, and so does the quorum, as
    /// [`timed_verdict`](Self::timed_verdict) would have found recording
    /// it.
    pub(crate) fn opens_after(&self, config: &Config, ticket: &Ticket, now: u64) -> bool {
        self.owns_closed(ticket)
            && self.window.holds(config, now)
            && self.reporters.holds(config, &self.window, now)
    }

    /// Opens the circuit for the closed failure of `ticket` that a store's
    /// increment recorded and found opening it ([`opens_after`](Self::opens_after)):
    /// the compare-and-set step after the increment. Whatever the window
    /// holds now (successes counted since are of an epoch that ended with
    /// the opening), unless the ticket's epoch has ended meanwhile (another
    /// process opened it, or reset it): then nothing.
    pub(crate) fn open_for(
        &mut self,
        config: &Config,
        ticket: &Ticket,
        opens: Opens,
        now: u64,
    ) -> bool {
        self.window.prune(config, now);
        let changed = self.expire(config, now);
        if !self.owns_closed(ticket) {
            return changed;
        }
        match model::trip(self.head, self.grant_of(ticket), self.relapse(config, now)) {
            Some(open) => {
                self.set(config, open, now, opens);
                true
            }
            None => changed,
        }
    }

    /// Whether `ticket` was granted by this circuit as it is now (its
    /// generation, or none while the key was absent, and its epoch).
    fn owns(&self, ticket: &Ticket) -> bool {
        if self.foreign {
            return self.shows(ticket);
        }
        let generation =
            ticket.generation == self.generation || (ticket.generation == 0 && self.epoch == 0);
        generation && ticket.epoch == self.epoch
    }

    /// Whether a foreign writer's payload still shows the epoch that
    /// granted `ticket` (SPEC §8, foreign writers): milon/fuse's writes
    /// that keep `state` and `opened_at` start no epoch, so a closed
    /// permit's epoch is shown while the circuit is closed, and a probe's
    /// while it is half-open from the opening of the same second. (A
    /// foreign writer that opened and closed the circuit again in between
    /// leaves no trace of it: a closed permit from before then counts.)
    fn shows(&self, ticket: &Ticket) -> bool {
        if ticket.is_probe() {
            self.head.state == State::HalfOpen
                && self.opened_at / resolution::NANOS_PER_SEC == ticket.opened_s
        } else {
            self.head.state == State::Closed
        }
    }

    /// Gives an empty window the kind of `config`'s policy (a fresh key's
    /// is `count`'s), so that what is written under `rate` is a `rate`
    /// window, which increments apply to. Changes no decision.
    pub(crate) fn fit(&mut self, config: &Config) {
        if self.window.is_empty() {
            self.window = Window::empty(config);
        }
    }

    /// Whether `ticket` is a closed permit of this circuit as it is now.
    pub(crate) fn owns_closed(&self, ticket: &Ticket) -> bool {
        self.owns(ticket) && !ticket.is_probe() && self.head.state == State::Closed
    }

    /// `force_open` at `now`; `generation` names the key if this is its
    /// first write.
    pub(crate) fn force_open(&mut self, config: &Config, now: u64, generation: u64) {
        let opens = Opens {
            generation,
            ..Opens::default()
        };
        self.set(config, model::force_open(self.head), now, opens);
        // No failure opened it.
        self.opened_by.clear();
    }

    /// `force_closed`.
    pub(crate) fn force_closed(&mut self, config: &Config) {
        self.set(config, model::force_closed(self.head), 0, Opens::default());
    }

    /// The snapshot at `now` (times since the Unix epoch).
    pub(crate) fn snapshot(&self, config: &Config, now: u64) -> Snapshot {
        let opening = Opening {
            at: self.opened_at,
            retry_at: if self.head.state == State::Open {
                self.phase
            } else {
                self.opened_at
            },
        };
        let mut shown = Snapshot {
            reporters: self.reporters(config, now),
            // A store's window keeps slow calls, not by verdict.
            slow_failed: None,
            ..model::snapshot(&self.head, opening, self.window.view(config, now))
        };
        if let Some(Ramp { since, .. }) = self.ramp {
            let shed = ramp::shed(config, since, now).unwrap_or(Shed::NONE);
            grade::show(
                &mut shown,
                shed,
                Shed::NONE,
                grade::throttle::Asked::default(),
            );
        }
        shown
    }

    /// How many distinct reporters have failures in the window at `now`
    /// (at most `min_reporters`: the window keeps no more; see
    /// [`quorum`](crate::store::model::quorum)).
    pub(crate) fn reporters(&self, config: &Config, now: u64) -> u32 {
        if self.head.state == State::Closed {
            self.reporters.count(config, &self.window, now)
        } else {
            0
        }
    }

    /// The state.
    pub(crate) fn state(&self) -> State {
        self.head.state
    }

    /// Ends the leases that expired by `now`, each as a probe's ignore
    /// verdict.
    fn expire(&mut self, config: &Config, now: u64) -> bool {
        let before = self.leases.len();
        let expired = self
            .leases
            .iter()
            .filter(|lease| lease.until <= now)
            .count();
        self.leases.retain(|lease| lease.until > now);
        for _ in 0..expired {
            let probe = Grant::new(PermitKind::Probe, self.head.epoch);
            if let Effect::Move(next) = model::verdict(config, self.head, probe, Verdict::Ignore) {
                self.set(config, next, now, Opens::default());
            }
        }
        self.leases.len() != before
    }

    /// Moves to `next` at `now`: a new epoch empties the window and the
    /// leases, an opening happens at `now` and lasts as SPEC §10 says
    /// (with the verdict's hint, the draw of the key's generation, named
    /// first by `opens` if the key has none), a half-open epoch starts at
    /// `now`.
    fn set(&mut self, config: &Config, next: Head, now: u64, opens: Opens) {
        if next.epoch != self.head.epoch {
            if self.foreign {
                // A foreign writer's epoch has no known name: the next
                // one is named afresh, so that no epoch of the key
                // repeats.
                self.foreign = false;
                self.generation = opens.generation;
            }
            self.epoch = self.epoch.wrapping_add(1);
            self.opened_by = match (self.head.state, next.state, &self.window) {
                (State::Closed, State::Open, Window::Count(failures)) => failures.times().to_vec(),
                (State::HalfOpen, State::Open, _) => vec![now],
                _ => Vec::new(),
            };
            self.window.clear();
            self.reporters.clear();
            self.leases.clear();
            // A closing that ramps up, on a whole microsecond (as a
            // payload keeps it).
            self.ramp = next.ramping.then(|| Ramp {
                n: self.head.n,
                since: resolution::store_time_at_or_after(now),
            });
            match next.state {
                State::Open => {
                    if self.generation == 0 {
                        // An opening is a write: the key's first names it.
                        self.generation = opens.generation;
                    }
                    self.opened_at = now;
                    let retry_at =
                        recovery::retry_at(config, next.n, now, self.generation, opens.hint);
                    // Past the clock's last instant: at its last whole
                    // microsecond (a payload keeps no later one).
                    let retry_at = retry_at.unwrap_or(u64::MAX);
                    self.phase = resolution::store_time_at_or_after(retry_at);
                }
                State::HalfOpen => self.phase = now,
                // As a payload keeps a closed circuit: no opening.
                State::Closed => (self.opened_at, self.phase) = (0, 0),
            }
        }
        self.head = next;
    }
}

/// A `count` window holding these failure times (tests).
#[cfg(test)]
pub(crate) fn counted(times: Vec<u64>) -> Window {
    Window::Count(Failures::from_times(times))
}

#[cfg(test)]
impl Stored {
    /// The failure times of a `count` window (tests).
    pub(crate) fn failures(&self) -> Vec<u64> {
        match &self.window {
            Window::Count(failures) => failures.times().to_vec(),
            Window::Rate(_) => Vec::new(),
        }
    }
}

mod graded;
pub(crate) use graded::{Share, Tag};
#[cfg(test)]
mod tests;
