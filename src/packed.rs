//! The engine's state word: state, epoch and either the closed-epoch
//! failure cursor or the half-open counters, packed in one `u64`.
//!
//! ```text
//!  63 62 61 60      48 47 46      32 31                          2 1  0
//! +--+--+--+----------+--+-----------+------------------------------+----+
//! |r |t |g | live (13)|u | claims(15)| epoch (30)                   | st |  Closed
//! +--+--+--+-+--------+--+--+--------+------------------------------+----+
//! |r |t |g |0|inflight(13) |succ.(13)| epoch (30)                   | st |  HalfOpen
//! +--+--+--+-+-------------+---------+------------------------------+----+
//! |r |t |g | n (29)                  | epoch (30)                   | st |  Open
//! ```
//!
//! The times of a phase are not here: an open epoch's `retry_at` and a
//! half-open epoch's start live in the engine's `phase` record, tagged with
//! the epoch they belong to, with the n of the opening (SPEC §10), which an
//! open word also holds (saturating at 2^29 - 1), so that whoever stamps a
//! missing opening knows it. The closed payload is what lets a
//! success on a circuit without failures decide from one load: `live == 0`.
//! The two marks, in every state, are the circuit's policy, fixed for the
//! life of its slot: `r` for `rate` (whose closed success always records,
//! so that no rate word is a quiet one), `t` for a `rate` circuit that
//! times its calls (`slow_call_duration` set), which an admission reads
//! off the word it loaded anyway; `g` for a circuit that throttles (SPEC
//! §11: its closed successes record, and its closed admission reads the
//! share to shed). `u`, in a closed word only, says the epoch ramps up
//! (it closed from half-open with `ramp_up` set, and no admission has
//! yet found the ramp over): its admission reads when the ramp started.

use crate::config::{Config, MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES};
use crate::epoch::Epoch;
use crate::model::{Grant, Head};
use crate::snapshot::State;

/// One field of the word: where it starts and how wide it is.
#[derive(Clone, Copy, Debug)]
struct Field {
    shift: u32,
    width: u32,
}

impl Field {
    const fn new(shift: u32, width: u32) -> Field {
        Field { shift, width }
    }

    #[inline]
    const fn mask(self) -> u64 {
        (1 << self.width) - 1
    }

    #[allow(clippy::cast_possible_truncation)] // the widest field is 30 bits
    #[inline]
    const fn get(self, word: u64) -> u32 {
        ((word >> self.shift) & self.mask()) as u32
    }

    #[inline]
    const fn put(self, value: u32) -> u64 {
        (value as u64 & self.mask()) << self.shift
    }

    /// The largest value the field holds.
    #[allow(clippy::cast_possible_truncation)] // the widest field is 30 bits
    const fn max(self) -> u32 {
        self.mask() as u32
    }
}

/// 0 closed, 1 open, 2 half-open; 3 is never written.
const STATE: Field = Field::new(0, 2);
/// The epoch, modulo 2^30.
const EPOCH: Field = Field::new(2, Epoch::BITS);
/// Closed: failures claimed in this closed epoch, modulo 2^15. Claim `k`
/// writes ring slot `k mod ring length` (a power of two dividing 2^15).
const CLAIMS: Field = Field::new(32, 15);
/// Closed: the epoch ramps up (SPEC §11).
const RAMPING: Field = Field::new(47, 1);
/// Closed: failures since the last clear, saturating at the threshold.
const LIVE: Field = Field::new(48, 13);
/// Every state: the circuit throttles (`throttle_k` set, SPEC §11).
const THROTTLE: Field = Field::new(61, 1);
/// Every state: the circuit times its calls (`rate` with a
/// `slow_call_duration`).
const TIMED: Field = Field::new(62, 1);
/// Every state: the circuit's policy is `rate`.
const RATE: Field = Field::new(63, 1);
/// Open: the n of the opening (SPEC §10), saturating.
const OPENING: Field = Field::new(32, 29);
/// Half-open: successful probes so far.
const SUCCESSES: Field = Field::new(32, 13);
/// Half-open: probes in flight.
const INFLIGHT: Field = Field::new(45, 13);

/// The marks where they are in the word.
const RATE_BIT: u64 = 1 << RATE.shift;
const TIMED_BIT: u64 = 1 << TIMED.shift;
const THROTTLE_BIT: u64 = 1 << THROTTLE.shift;
const RAMPING_BIT: u64 = 1 << RAMPING.shift;

/// The epoch where it is in the word (and in a [`Grant`]).
const IN_PLACE_EPOCH: u64 = EPOCH.mask() << EPOCH.shift;

/// The claim counter wraps at this value; see [`CLAIMS`].
pub(crate) const CLAIMS_MODULUS: u32 = 1 << CLAIMS.width;

const _: () = {
    assert!(LIVE.max() >= MAX_FAILURE_THRESHOLD);
    assert!(SUCCESSES.max() >= MAX_HALF_OPEN_PROBES);
    assert!(INFLIGHT.max() >= MAX_HALF_OPEN_PROBES);
    assert!(CLAIMS_MODULUS >= 2 * MAX_FAILURE_THRESHOLD.next_power_of_two());
    assert!(LIVE.shift + LIVE.width == THROTTLE.shift && THROTTLE.shift + 1 == TIMED.shift);
    assert!(CLAIMS.shift + CLAIMS.width == RAMPING.shift && RAMPING.shift + 1 == LIVE.shift);
    assert!(TIMED.shift + 1 == RATE.shift && RATE.shift == 63);
    // A grant is laid out as the word's low half: the state code in bits
    // 0 and 1, the epoch in bits 2 to 31.
    assert!(STATE.shift == 0 && STATE.width == 2);
    assert!(EPOCH.shift == 2 && EPOCH.shift + EPOCH.width == 32);
    assert!(INFLIGHT.shift + INFLIGHT.width <= 64);
    assert!(OPENING.shift + OPENING.width == THROTTLE.shift);
};

/// The failure cursor of a closed epoch (zero in the other states), and
/// the policy's marks (kept in every state).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Cursor {
    /// Failures claimed in this epoch, modulo [`CLAIMS_MODULUS`].
    pub(crate) claims: u32,
    /// Failures since the last clear, saturating at the threshold.
    pub(crate) live: u32,
    pub(crate) marks: Marks,
}

/// The marks of a circuit's policy in its word (fixed for its slot's life).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Marks {
    /// The policy counts every call (`rate`): its window is the tallies,
    /// not the word's claims.
    pub(crate) rate: bool,
    /// The policy is `rate` and calls are timed.
    pub(crate) timed: bool,
    /// The circuit throttles (SPEC §11).
    pub(crate) throttle: bool,
}

impl Marks {
    /// The marks of `config`'s policy.
    pub(crate) fn of(config: &Config) -> Self {
        Marks {
            rate: config.policy().counts_calls(),
            timed: config.times_calls(),
            throttle: config.throttle_k().is_some(),
        }
    }

    #[inline]
    const fn bits(self) -> u64 {
        RATE.put(self.rate as u32)
            | TIMED.put(self.timed as u32)
            | THROTTLE.put(self.throttle as u32)
    }

    #[inline]
    const fn of_word(word: u64) -> Self {
        Marks {
            rate: RATE.get(word) == 1,
            timed: TIMED.get(word) == 1,
            throttle: THROTTLE.get(word) == 1,
        }
    }
}

/// The packed state word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Word(u64);

impl Word {
    /// The word of a fresh closed circuit of `config` in epoch 0.
    pub(crate) fn initial(config: &Config) -> Word {
        Word(Marks::of(config).bits())
    }

    #[inline]
    pub(crate) const fn from_bits(bits: u64) -> Word {
        Word(bits)
    }

    #[inline]
    pub(crate) const fn bits(self) -> u64 {
        self.0
    }

    /// The grant of an admission to this word if it is closed: a closed
    /// permit of its epoch, which is what the model answers every closed
    /// head (SPEC §3: a closed circuit admits every call, and nothing
    /// changes). One mask: the grant is laid out as the word's low half
    /// (see [`Grant`]). The engine's closed admission, for both kinds of
    /// permit.
    #[inline]
    pub(crate) const fn closed_grant(self) -> Option<Grant> {
        if STATE.get(self.0) == 0 {
            #[allow(clippy::cast_possible_truncation)] // the low half
            Some(Grant::from_bits((self.0 & IN_PLACE_EPOCH) as u32))
        } else {
            None
        }
    }

    /// [`closed_grant`](Self::closed_grant) for a circuit that does not
    /// grade its admission (SPEC §11); `None` for one that does. One mask.
    #[inline]
    pub(crate) const fn ungraded_closed_grant(self) -> Option<Grant> {
        if self.0 & (STATE.mask() | THROTTLE_BIT | RAMPING_BIT) == 0 {
            #[allow(clippy::cast_possible_truncation)] // the low half
            Some(Grant::from_bits((self.0 & IN_PLACE_EPOCH) as u32))
        } else {
            None
        }
    }

    /// [`closed_grant`](Self::closed_grant) for a circuit that neither
    /// times its calls nor grades its admission (SPEC §11); `None` for one
    /// that does (its admission reads the clock or the share to shed, out
    /// of line). One mask: the closed state code, the timed and throttle
    /// marks and the ramp are tested together.
    #[inline]
    pub(crate) const fn untimed_closed_grant(self) -> Option<Grant> {
        if self.0 & (STATE.mask() | TIMED_BIT | THROTTLE_BIT | RAMPING_BIT) == 0 {
            #[allow(clippy::cast_possible_truncation)] // the low half
            Some(Grant::from_bits((self.0 & IN_PLACE_EPOCH) as u32))
        } else {
            None
        }
    }

    /// Whether a success under `grant` changes nothing in this word: a
    /// closed permit of this closed epoch with no failures to clear (the
    /// model answers `ClearFailures` and there is nothing to clear). One
    /// mask and one compare: a probe's grant holds a state code no word
    /// holds, and any failure, another epoch or another state differs. The
    /// engine's closed success, for both kinds of permit.
    #[inline]
    pub(crate) const fn quiet_success(self, grant: Grant) -> bool {
        self.0
            & (STATE.mask() | IN_PLACE_EPOCH | LIVE.mask() << LIVE.shift | RATE_BIT | THROTTLE_BIT)
            == grant.bits()
    }

    /// Whether a success under `grant` is a closed success of this closed
    /// epoch of a `rate` circuit: one the engine adds to its tallies (a
    /// throttling circuit's throttle reads them too, SPEC §11), and
    /// nothing else unless it was slow. One mask and one
    /// compare, as [`quiet_success`](Self::quiet_success).
    #[inline]
    pub(crate) const fn counted_success(self, grant: Grant) -> bool {
        self.0 & (STATE.mask() | IN_PLACE_EPOCH | RATE_BIT) == grant.bits() | RATE_BIT
    }

    /// Whether a failure under `grant` is a closed failure of this closed
    /// epoch of a `count` circuit: one the model records (SPEC §3), for
    /// which the engine claims a slot of its ring or opens the circuit.
    /// One mask and one compare, as [`quiet_success`](Self::quiet_success):
    /// a probe's grant, another epoch, another state or the `rate` mark
    /// differs.
    #[inline]
    pub(crate) const fn counted_failure(self, grant: Grant) -> bool {
        self.0 & (STATE.mask() | IN_PLACE_EPOCH | RATE_BIT | THROTTLE_BIT) == grant.bits()
    }

    /// A closed word's failure cursor: its claims and its live failures
    /// (the fields of [`Cursor`], without the rest of an unpacking).
    #[inline]
    pub(crate) const fn failures(self) -> (u32, u32) {
        (CLAIMS.get(self.0), LIVE.get(self.0))
    }

    /// This closed word with its failure cursor at `claims` and `live`,
    /// everything else kept: what [`pack`](Self::pack) gives for the same
    /// head and the cursor with those two fields replaced.
    #[inline]
    pub(crate) const fn with_failures(self, claims: u32, live: u32) -> Word {
        debug_assert!(claims <= CLAIMS.max() && live <= LIVE.max());
        let cursor = CLAIMS.mask() << CLAIMS.shift | LIVE.mask() << LIVE.shift;
        // Both fit their fields (a claim is taken modulo the claims'
        // modulus, `live` is at most the threshold): no mask.
        Word(self.0 & !cursor | (claims as u64) << CLAIMS.shift | (live as u64) << LIVE.shift)
    }

    /// Whether the circuit times its calls (an admission reads the clock).
    /// A `count` word's timed mark is its ring parity instead (see
    /// [`ring_parity`](Self::ring_parity)), which only a ring's growth
    /// sets, for a moment: this is then `true` too, and the word takes the
    /// timed paths, which under `count` time nothing.
    #[inline]
    pub(crate) const fn times_calls(self) -> bool {
        self.0 & TIMED_BIT != 0
    }

    /// A `count` word's ring parity: which of its circuit's newest two
    /// rings its claims live in (see [`Rings`](crate::ring::Rings)); the
    /// timed mark's bit, which no `count` circuit uses.
    #[inline]
    pub(crate) const fn ring_parity(self) -> bool {
        self.0 & TIMED_BIT != 0
    }

    /// This `count` word with its ring parity `parity`, everything else
    /// kept.
    #[inline]
    pub(crate) const fn with_ring_parity(self, parity: bool) -> Word {
        Word(self.0 & !TIMED_BIT | (parity as u64) << TIMED.shift)
    }

    /// Whether a success under `grant` is a closed success of this closed
    /// epoch of a throttling `count` circuit with no failures to clear:
    /// one that is only an accept in the throttle's window (SPEC §11). One
    /// mask and one compare, as [`quiet_success`](Self::quiet_success).
    #[inline]
    pub(crate) const fn accepted_success(self, grant: Grant) -> bool {
        self.0
            & (STATE.mask() | IN_PLACE_EPOCH | LIVE.mask() << LIVE.shift | RATE_BIT | THROTTLE_BIT)
            == grant.bits() | THROTTLE_BIT
    }

    /// Whether a closed admission is graded (SPEC §11): the circuit
    /// throttles, or this closed epoch ramps up.
    #[inline]
    pub(crate) const fn graded(self) -> bool {
        self.0 & (THROTTLE_BIT | RAMPING_BIT) != 0 && STATE.get(self.0) == 0
    }

    /// Whether this is a closed word whose epoch ramps up.
    #[inline]
    pub(crate) const fn ramping(self) -> bool {
        self.0 & (STATE.mask() | RAMPING_BIT) == RAMPING_BIT
    }

    /// This word with its marks replaced (a reconfiguration that changes
    /// the circuit's shape, SPEC §12): the `rate` mark, the timed mark (a
    /// `count` word's ring parity) and the throttle mark; everything else
    /// kept.
    #[inline]
    pub(crate) const fn with_marks(self, rate: bool, timed: bool, throttle: bool) -> Word {
        let marks = (rate as u64) << RATE.shift
            | (timed as u64) << TIMED.shift
            | (throttle as u64) << THROTTLE.shift;
        Word(self.0 & !(RATE_BIT | TIMED_BIT | THROTTLE_BIT) | marks)
    }

    /// Whether the circuit keeps a `rate` window (its mark, in every state).
    #[inline]
    pub(crate) const fn counts_calls(self) -> bool {
        self.0 & RATE_BIT != 0
    }

    /// This closed word with its ramp over (everything else kept).
    #[inline]
    pub(crate) const fn ramp_over(self) -> Word {
        Word(self.0 & !RAMPING_BIT)
    }

    /// An open word's n (SPEC §10); `None` for a word in another state.
    #[inline]
    pub(crate) const fn open_n(self) -> Option<u32> {
        if STATE.get(self.0) == 1 {
            Some(OPENING.get(self.0))
        } else {
            None
        }
    }

    /// The state alone.
    #[inline]
    pub(crate) const fn state(self) -> State {
        match STATE.get(self.0) {
            0 => State::Closed,
            1 => State::Open,
            _ => State::HalfOpen,
        }
    }

    /// The epoch alone.
    #[inline]
    pub(crate) const fn epoch(self) -> Epoch {
        Epoch::new(EPOCH.get(self.0))
    }

    /// The head (a half-open one with `n` zero: it is in the phase record)
    /// and cursor.
    #[inline]
    pub(crate) fn unpack(self) -> (Head, Cursor) {
        let state = self.state();
        let mut head = Head::closed(self.epoch());
        head.state = state;
        let mut cursor = Cursor {
            marks: Marks::of_word(self.0),
            ..Cursor::default()
        };
        match state {
            State::Closed => {
                cursor.claims = CLAIMS.get(self.0);
                cursor.live = LIVE.get(self.0);
                head.ramping = RAMPING.get(self.0) == 1;
            }
            State::HalfOpen => {
                head.successes = SUCCESSES.get(self.0);
                head.inflight = INFLIGHT.get(self.0);
            }
            State::Open => head.n = OPENING.get(self.0),
        }
        (head, cursor)
    }

    /// The word that moves `head` (with `cursor`) to `next`: the failure
    /// cursor is kept within an epoch and cleared across epochs.
    #[inline]
    pub(crate) fn next(head: &Head, cursor: Cursor, next: &Head) -> Word {
        let cursor = if next.epoch == head.epoch {
            cursor
        } else {
            Cursor {
                marks: cursor.marks,
                ..Cursor::default()
            }
        };
        Word::pack(next, cursor)
    }

    /// Packs a head and, while closed, its cursor. Counters are validated
    /// by the configuration to fit their fields.
    #[inline]
    pub(crate) fn pack(head: &Head, cursor: Cursor) -> Word {
        let (code, payload) = match head.state {
            State::Closed => (
                0,
                CLAIMS.put(cursor.claims)
                    | LIVE.put(cursor.live)
                    | RAMPING.put(u32::from(head.ramping)),
            ),
            State::Open => (1, OPENING.put(head.n.min(OPENING.max()))),
            State::HalfOpen => (
                2,
                SUCCESSES.put(head.successes) | INFLIGHT.put(head.inflight),
            ),
        };
        Word(STATE.put(code) | EPOCH.put(head.epoch.get()) | payload | cursor.marks.bits())
    }
}

#[cfg(test)]
mod tests;
