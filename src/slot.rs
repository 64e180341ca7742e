//! A circuit's memory: its [`Slot`] (the atomics, never freed, reused by
//! later circuits of the same configuration) and its [`Occupant`]
//! (everything else, freed with the circuit), and the pool of free slots.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, PoisonError};

use arc_swap::ArcSwapOption;
use crossbeam_utils::CachePadded;

use crate::clock::Time;
use crate::config::Config;
use crate::events::Events;
use crate::grade::{Share, Throttle};
use crate::names::Names;
use crate::packed::Word;
use crate::policy::Tallies;
use crate::recovery::Backoff;
use crate::ring::{Record, Rings};
use crate::sync::{AtomicU64, CONFIG_LOAD, CONFIG_STORE, HEAD_LOAD, Ordering, Tally};
use std::sync::atomic::AtomicUsize;

/// The words every call reads, on one cache line, and the number of the
/// configuration every decision reads (replaced by a reconfiguration that
/// keeps the slot's shape, SPEC §12: see [`Slot::reconfigure`]).
#[derive(Debug)]
pub(crate) struct Words {
    pub(crate) head: AtomicU64,
    pub(crate) phase: Record,
    /// When the last opening happened: for snapshots, and for a rejection
    /// whose clock may be behind it.
    pub(crate) opening: Record,
    /// The shortest any opening of the circuit's configurations lasts, in
    /// nanoseconds ([`Backoff::shortest`], the least over every
    /// configuration the slot has had): a rejection that finds its
    /// opening's end no further than that from its clock knows the
    /// opening started before, and does not read the `opening` record.
    pub(crate) shortest_open: AtomicU64,
    /// The throttle's share in use (SPEC §11; nothing without
    /// `throttle_k`): what a throttling circuit's closed admission reads.
    pub(crate) share: Share,
    /// The configuration's number ([`numbered`](crate::config::numbered)).
    config: AtomicU64,
}

/// One circuit's atomics, in memory that is never freed: when its circuit
/// is dropped, a slot moves to a new epoch (so every permit still out is
/// stale) and is reused by a later circuit. A permit that outlives its
/// circuit therefore holds a slot, never a dangling pointer, and needs no
/// reference count. Its shape (its windows, its policy's marks) is fixed:
/// freed slots wait for a circuit of the same (interned) configuration,
/// so that a permit reads the configuration from the slot alone.
#[derive(Debug)]
pub(crate) struct Slot {
    pub(crate) words: CachePadded<Words>,
    /// The circuit in the slot, for the permits that concluded without it
    /// (owned permits, on their paths that write); `None` while free.
    occupant: ArcSwapOption<Occupant>,
    /// The windows of calls of the slot's first shape.
    first: Windows,
    /// The windows of the shapes a reconfiguration gave it since (SPEC
    /// §12: a new shape starts empty), never removed: a verdict that read
    /// an older index may still add to one.
    /// Boxed when first needed: most slots never change shape.
    grown: std::sync::OnceLock<Box<boxcar::Vec<Windows>>>,
    /// How many circuits have taken this slot: the tag of the next one.
    occupancies: Tally,
}

/// A slot's windows of calls for one shape of configuration: the `rate`
/// window (`None` under `count`) and the throttle's (SPEC §11; `None`
/// without `throttle_k`). Atomics, so the slot's: a later circuit of the
/// slot goes on in its own epochs, which the windows keep apart.
/// A window is the slot's for its life (never freed), so that two shapes
/// can share one: a new throttle keeps the `rate` window, new `rate`
/// settings of the same width and buckets keep the throttle's.
#[derive(Debug)]
pub(crate) struct Windows {
    pub(crate) tallies: Option<&'static Tallies>,
    pub(crate) throttle: Option<&'static Throttle>,
}

impl Windows {
    /// The empty windows `config` needs.
    fn of(config: &Config) -> Self {
        Windows {
            tallies: config
                .policy()
                .counts_calls()
                .then(|| &*Box::leak(Box::new(Tallies::new(config)))),
            throttle: config
                .throttle_k()
                .is_some()
                .then(|| &*Box::leak(Box::new(Throttle::new(config)))),
        }
    }

    /// The windows of `new` for a circuit whose windows of `old` are
    /// these (SPEC §12): each kept where its shape is, the others new and
    /// empty.
    fn reshaped(&self, old: &Config, new: &Config) -> Self {
        let same = |a: &Config, b: &Config| {
            a.failure_window() == b.failure_window() && a.window_buckets() == b.window_buckets()
        };
        let rate = |config: &Config| config.policy().counts_calls();
        let throttles = |config: &Config| config.throttle_k().is_some();
        Windows {
            tallies: match self.tallies {
                Some(kept) if rate(old) && rate(new) && same(old, new) => Some(kept),
                _ => rate(new).then(|| &*Box::leak(Box::new(Tallies::new(new)))),
            },
            throttle: match self.throttle {
                Some(kept) if throttles(old) && throttles(new) && same(old, new) => Some(kept),
                _ => throttles(new).then(|| &*Box::leak(Box::new(Throttle::new(new)))),
            },
        }
    }
}

/// What a circuit holds besides its atomics: the ring of failure times
/// (`count`), the time (and the time of a `rate` window), the names and
/// the listeners.
#[derive(Debug)]
pub(crate) struct Occupant {
    /// The `count` rule's failure times: a ring of as many slots as the
    /// threshold rounded up to a power of two, and those a raised
    /// threshold replaced (SPEC §12).
    pub(crate) rings: Rings,
    /// Taken by a reconfiguration (never by a call), so that two of one
    /// circuit grow its rings one after the other.
    pub(crate) reconfiguring: std::sync::Mutex<()>,
    /// The time the `rate` window reads: the circuit's clock read coarsely
    /// (for a clock of the caller's own, its value).
    pub(crate) window_time: Time,
    /// The [`address`](Tallies::address) of the slot's `rate` window when
    /// it is read on the coarse time (the quick path of a closed success);
    /// 0 otherwise.
    quick_window: AtomicUsize,
    /// The throttle window's [`address`](Throttle::address) when it is
    /// read on the coarse time (the quick path of a throttling circuit's
    /// closed success); 0 otherwise.
    quick_throttle: AtomicUsize,
    /// The `slow_call_duration` in nanoseconds when the circuit times its
    /// calls on the coarse time (the quick path of a timed closed success,
    /// which reads its end there too); 0 otherwise, which no call is
    /// quicker than. Replaced with the configuration (SPEC §12).
    quick_slow: AtomicU64,
    /// Which of its slot's circuits this is (see [`Slot::take`]).
    tag: u32,
    /// The seed of the draws that jitter its openings (SPEC §10).
    pub(crate) seed: u64,
    pub(crate) time: Time,
    pub(crate) names: Names,
    pub(crate) events: Events,
    /// The sinks of the features that count (each also one of the
    /// circuit's listeners): the `metrics` feature's, the
    /// `opentelemetry` feature's (none without them).
    #[cfg_attr(
        not(any(feature = "metrics", feature = "opentelemetry", feature = "store")),
        allow(dead_code, reason = "no feature that counts")
    )]
    sinks: crate::sinks::Sinks,
}

impl Occupant {
    /// The circuit `tag` of `slot` ([`Slot::take`]), with the ring its
    /// configuration needs, reading `clock` (the real clock when `None`)
    /// precisely, or coarsely when `coarse`.
    pub(crate) fn new(
        slot: &'static Slot,
        tag: u32,
        clock: Option<quanta::Clock>,
        coarse: bool,
        names: Names,
        events: Events,
        seed: u64,
    ) -> Self {
        let sinks = crate::sinks::install(&events.own, names.key());
        let config = slot.config();
        let rate = config.policy().counts_calls();
        let time = Time::new(clock.clone(), coarse);
        let windowed = rate || config.throttle_k().is_some();
        let window_time = if windowed && !time.is_coarse() {
            Time::new(clock, true)
        } else {
            time.clone()
        };
        let (quick_window, quick_throttle) = quick_windows(slot.windows(), &window_time);
        let (quick_window, quick_throttle) = (
            AtomicUsize::new(quick_window),
            AtomicUsize::new(quick_throttle),
        );
        let quick_slow = AtomicU64::new(quick_slow(config, &time));
        Occupant {
            quick_window,
            quick_throttle,
            quick_slow,
            rings: Rings::new(if rate { 1 } else { config.failure_threshold() }),
            reconfiguring: std::sync::Mutex::new(()),
            window_time,
            tag,
            seed,
            time,
            names,
            events,
            sinks,
        }
    }

    /// Replaces what the occupant read off its configuration by what
    /// `config` gives (SPEC §12).
    pub(crate) fn reconfigure(&self, config: &Config, windows: &'static Windows) {
        self.quick_slow
            .store(quick_slow(config, &self.time), Ordering::Relaxed);
        // Relaxed: an address, and a closed success that reads the old one
        // adds to the old window, as one that came before the change.
        let (window, throttle) = quick_windows(windows, &self.window_time);
        self.quick_window.store(window, Ordering::Relaxed);
        self.quick_throttle.store(throttle, Ordering::Relaxed);
    }

    /// Which of its slot's circuits this is.
    #[inline]
    pub(crate) fn tag(&self) -> u32 {
        self.tag
    }

    pub(crate) fn time(&self) -> &Time {
        &self.time
    }

    pub(crate) fn names(&self) -> &Names {
        &self.names
    }

    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// Adds a closed success of `epoch`, admitted at `started`, to the
    /// `rate` window, if the window is read coarsely (from the process's
    /// coarse time), the call was not slow (when the circuit times its
    /// calls, `timed`, on that same coarse time) and this thread's last
    /// verdict on the window was at that epoch and bucket: `false`
    /// otherwise (nothing added; then [`count_success`](Self::count_success)
    /// does). Untimed, one coarse read and no call: the closed path of
    /// `rate`.
    #[inline]
    pub(crate) fn count_success_quickly(
        &self,
        epoch: crate::epoch::Epoch,
        timed: bool,
        started: u64,
    ) -> bool {
        if timed {
            return self.count_timed_success_quickly(epoch, started);
        }
        let window = self.quick_window.load(Ordering::Relaxed);
        Tallies::add_success_quickly(window, epoch, crate::sync::coarse_now())
    }

    /// [`count_success_quickly`](Self::count_success_quickly) of a circuit
    /// that times its calls: one more coarse read (the call's end) and a
    /// compare with [`quick_slow`](Self::quick_slow).
    /// A throttling `count` circuit's closed success of `epoch` with no
    /// failures to clear (SPEC §11: an accept), added to its thread's
    /// cell of the throttle's window if the thread's last request was
    /// added there in the coarse time's bucket; `false` if not.
    #[inline]
    pub(crate) fn accept_quickly(&self, epoch: crate::epoch::Epoch) -> bool {
        let window = self.quick_throttle.load(Ordering::Relaxed);
        Throttle::accept_quickly(window, epoch, crate::sync::coarse_now())
    }

    #[inline]
    fn count_timed_success_quickly(&self, epoch: crate::epoch::Epoch, started: u64) -> bool {
        let now = crate::sync::coarse_now();
        // Relaxed: a number, and a verdict racing a reconfiguration may be
        // judged by either configuration.
        now.saturating_sub(started) < self.quick_slow.load(Ordering::Relaxed)
            && Tallies::add_success_quickly(self.quick_window.load(Ordering::Relaxed), epoch, now)
    }

    /// Adds a closed success of `epoch`, admitted at `started`, to the
    /// `rate` window, unless the circuit times its calls (`timed`) and the
    /// call was slow: `false` then, and nothing is added (a slow success
    /// takes the engine's path). Nothing to add under `count`. A circuit
    /// read coarsely reads one time for its window and the call's length.
    pub(crate) fn count_success(
        &self,
        slot: &'static Slot,
        epoch: crate::epoch::Epoch,
        timed: bool,
        started: u64,
    ) -> bool {
        let Some(tallies) = slot.tallies() else {
            return true;
        };
        let config = slot.config();
        let now = self.window_time.now();
        if timed {
            let ended = if self.time.is_coarse() {
                now
            } else {
                self.time.now()
            };
            if crate::policy::is_slow(config, ended.saturating_sub(started)) {
                return false;
            }
        }
        if tallies.add(epoch, crate::policy::Outcome::SUCCESS, now)
            && let Some(throttle) = slot.throttle()
        {
            // A throttling `rate` circuit: the call is the throttle's too.
            throttle.entered(config, &slot.words.share, epoch, now, tallies);
        }
        true
    }

    /// The sinks of the features that count.
    #[cfg(any(feature = "metrics", feature = "opentelemetry", feature = "store"))]
    #[inline]
    pub(crate) fn sinks(&self) -> &crate::sinks::Sinks {
        &self.sinks
    }
}

impl Slot {
    /// A slot for a new circuit of `config` (interned): a free one of the
    /// same configuration, or a new one. Its word is closed with no
    /// failures, in an epoch no permit holds. Also the new circuit's tag,
    /// which tells its permits from those of the slot's earlier circuits
    /// (modulo 2^32; the epoch tells them apart too). The circuit moves in
    /// with [`occupy`](Self::occupy).
    pub(crate) fn take(config: &'static Config) -> (&'static Slot, u32) {
        let number = crate::config::number(config);
        let free = free_slots().get_mut(&number).and_then(Vec::pop);
        let slot = free.unwrap_or_else(|| {
            Box::leak(Box::new(Slot {
                words: CachePadded::new(Words {
                    head: AtomicU64::new(Word::initial(config).bits()),
                    phase: Record::new(),
                    opening: Record::new(),
                    shortest_open: AtomicU64::new(Backoff::of(config).shortest()),
                    share: Share::new(),
                    config: AtomicU64::new(u64::from(number)),
                }),
                occupant: ArcSwapOption::empty(),
                first: Windows::of(config),
                grown: std::sync::OnceLock::new(),
                occupancies: Tally::default(),
            }))
        });
        #[allow(clippy::cast_possible_truncation)] // a tag is modulo 2^32
        let tag = slot.occupancies.add(1) as u32;
        (slot, tag)
    }

    /// The circuit `occupant` moves into this slot (taken by
    /// [`take`](Self::take)).
    pub(crate) fn occupy(&self, occupant: &Arc<Occupant>) {
        self.occupant.store(Some(occupant.clone()));
    }

    /// The configuration of the slot's circuit now: one load and one
    /// lock-free lookup.
    #[inline]
    pub(crate) fn config(&self) -> &'static Config {
        // CONFIG_LOAD (Acquire): see `sync`.
        #[allow(clippy::cast_possible_truncation)] // a number given as a u32
        crate::config::numbered(self.words.config.load(CONFIG_LOAD) as u32)
    }

    /// The windows of calls of the shape in force (see [`Windows`]).
    #[inline]
    pub(crate) fn windows(&'static self) -> &'static Windows {
        self.settings().1
    }

    /// How many shapes of window the slot has had (its first included).
    pub(crate) fn shapes(&self) -> usize {
        1 + self.grown.get().map_or(0, |grown| grown.count())
    }

    /// The number of the configuration in force and its windows, from one
    /// load: a verdict is judged by the one against the other.
    #[inline]
    pub(crate) fn settings(&'static self) -> (u32, &'static Windows) {
        let word = self.words.config.load(CONFIG_LOAD);
        #[allow(clippy::cast_possible_truncation)] // the low half
        (word as u32, self.windows_at(word >> 32))
    }

    /// The windows numbered `index` (0: the first).
    #[inline]
    fn windows_at(&'static self, index: u64) -> &'static Windows {
        match usize::try_from(index).ok().and_then(|i| i.checked_sub(1)) {
            Some(grown) => self
                .grown
                .get()
                .and_then(|windows| windows.get(grown))
                .unwrap_or(&self.first),
            None => &self.first,
        }
    }

    /// The `rate` window in force, if any.
    #[inline]
    pub(crate) fn tallies(&'static self) -> Option<&'static Tallies> {
        self.windows().tallies
    }

    /// The throttle in force, if any.
    #[inline]
    pub(crate) fn throttle(&'static self) -> Option<&'static Throttle> {
        self.windows().throttle
    }

    /// The configuration's number: for the pool of free slots, and for a
    /// failure that checks whether the settings changed while it decided.
    #[inline]
    pub(crate) fn config_number(&self) -> u32 {
        #[allow(clippy::cast_possible_truncation)] // a number given as a u32
        let number = self.words.config.load(CONFIG_LOAD) as u32;
        number
    }

    /// Puts `config` (interned, numbered `number`, of the slot's shape:
    /// see [`Shape`](crate::reconfigure::Shape)) in force for every
    /// decision from now on (SPEC §12). The shortest opening is kept the
    /// least of the old and the new (an opening of the old may be under
    /// way), and stored first: a rejection that reads the new
    /// configuration reads it too.
    pub(crate) fn reconfigure(&'static self, config: &'static Config, number: u32, reshape: bool) {
        self.words
            .shortest_open
            .fetch_min(Backoff::of(config).shortest(), Ordering::Relaxed);
        // One writer at a time (the circuit's reconfiguring lock), so the
        // load and the store race no other.
        let mut windows = self.words.config.load(CONFIG_LOAD) >> 32;
        if reshape {
            // A new shape starts with empty windows (SPEC §12), pushed
            // before they are named.
            let next = self.windows().reshaped(self.config(), config);
            let grown = self.grown.get_or_init(Default::default);
            windows = grown.push(next) as u64 + 1;
        }
        // CONFIG_STORE (Release): see `sync`.
        self.words
            .config
            .store(windows << 32 | u64::from(number), CONFIG_STORE);
    }

    /// Frees this slot for a later circuit, once its engine has retired
    /// the circuit's epoch ([`Engine::retire`](crate::engine::Engine::retire)):
    /// the occupant leaves and the slot waits for a circuit of the same
    /// configuration.
    pub(crate) fn vacate(&'static self) {
        self.occupant.store(None);
        // Under loom every model makes its own atomics: slots are not reused.
        #[cfg(not(fuse_loom))]
        free_slots()
            .entry(self.config_number())
            .or_default()
            .push(self);
    }

    /// The circuit in the slot now, if any.
    pub(crate) fn occupant(&self) -> arc_swap::Guard<Option<Arc<Occupant>>> {
        self.occupant.load()
    }

    /// The state word.
    #[inline]
    pub(crate) fn load(&self) -> Word {
        // HEAD_LOAD (Acquire): see `sync`.
        Word::from_bits(self.words.head.load(HEAD_LOAD))
    }
}

/// The addresses of `windows` (the `rate` window's and the throttle's) the
/// quick paths of a circuit whose windows read `time` add to: 0 for none,
/// or for a time that is not the coarse one.
fn quick_windows(windows: &'static Windows, time: &Time) -> (usize, usize) {
    match time {
        Time::Coarse => (
            windows.tallies.map_or(0, Tallies::address),
            windows.throttle.map_or(0, Throttle::address),
        ),
        _ => (0, 0),
    }
}

/// The `slow_call_duration` the quick path of a circuit of `config` read
/// on `time` compares a call's length with (see [`Occupant::quick_slow`]).
fn quick_slow(config: &Config, time: &Time) -> u64 {
    match time {
        Time::Coarse if config.times_calls() => config.slow_nanos(),
        _ => 0,
    }
}

/// The slots of dropped circuits, waiting for new ones of the same
/// configuration (by the interned configuration's number).
fn free_slots() -> MutexGuard<'static, HashMap<u32, Vec<&'static Slot>>> {
    static FREE: LazyLock<Mutex<HashMap<u32, Vec<&'static Slot>>>> =
        LazyLock::new(Default::default);
    FREE.lock().unwrap_or_else(PoisonError::into_inner)
}
