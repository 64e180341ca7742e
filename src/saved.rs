//! [`SavedCircuit`]: what a circuit knows, on the wall clock, to be put
//! back in a circuit of a later process (SPEC §12's restarts), and
//! [`Fuse::save`] and [`FuseBuilder::restore`](crate::FuseBuilder::restore).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::engine::{Restored, RestoredOpening};
use crate::fuse::Fuse;
use crate::policy::Counts;
use crate::snapshot::State;

/// What one circuit knew when it was saved, its times on the wall clock
/// (milliseconds since the Unix epoch), so that a later process can put it
/// back (SPEC §12): an open circuit is restored open for what remained of
/// its opening, a half-open one open with nothing left (its next call
/// probes), both keeping how many openings in a row they are; a closed one
/// keeps its `count` failures still in its window or its `rate` window's
/// counts. With feature `persist` it is (de)serialisable, and a
/// [`Registry`](crate::Registry) saves all of its circuits to a file.
///
/// ```
/// use fuse_breaker::{Config, Fuse, State};
///
/// let config = Config::builder().failure_threshold(1).build()?;
/// let fuse = Fuse::new("billing", config.clone());
/// fuse.try_acquire()?.failure();
/// let saved = fuse.save();
/// assert_eq!(saved.state, State::Open);
///
/// // A later process:
/// let again = Fuse::builder("billing").config(config).restore(&saved).build();
/// assert_eq!(again.state(), State::Open);
/// assert_eq!(again.snapshot().openings, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "persist", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct SavedCircuit {
    /// The circuit's name.
    pub name: String,
    /// Its operation (empty: none).
    #[cfg_attr(feature = "persist", serde(default))]
    pub operation: String,
    /// Its state.
    #[cfg_attr(feature = "persist", serde(with = "state_name"))]
    pub state: State,
    /// Open or half-open: how many times in a row it has opened (SPEC
    /// §10's n + 1); 0 while closed.
    #[cfg_attr(feature = "persist", serde(default))]
    pub openings: u32,
    /// Open or half-open: when it last opened.
    #[cfg_attr(feature = "persist", serde(default))]
    pub opened_at_unix_ms: Option<u64>,
    /// Open: when its opening ends.
    #[cfg_attr(feature = "persist", serde(default))]
    pub retry_at_unix_ms: Option<u64>,
    /// Closed, `count`: its failures in the window, oldest first.
    #[cfg_attr(feature = "persist", serde(default))]
    pub failures_unix_ms: Vec<u64>,
    /// Closed, `rate`: the calls, failed calls and slow calls in its
    /// window.
    #[cfg_attr(feature = "persist", serde(default))]
    pub window: Option<SavedWindow>,
}

/// A `rate` circuit's window when it was saved (see [`SavedCircuit`]).
///
/// ```
/// use fuse_breaker::{Config, Fuse, config::Policy};
/// let fuse = Fuse::new("search", Config::builder().policy(Policy::Rate).build()?);
/// fuse.try_acquire()?.success();
/// let window = fuse.save().window.expect("a rate circuit's window");
/// assert_eq!((window.calls, window.failed, window.slow), (1, 0, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "persist", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub struct SavedWindow {
    /// The calls in the window.
    pub calls: u64,
    /// The counted failures among them.
    pub failed: u64,
    /// The slow calls among them.
    pub slow: u64,
    /// Of the slow calls, those that failed (0 in a file saved before it
    /// was kept).
    #[cfg_attr(feature = "persist", serde(default))]
    pub slow_failed: u64,
}

impl Fuse {
    /// What the circuit knows now, on the wall clock (see
    /// [`SavedCircuit`]); only reads.
    ///
    /// ```
    /// let fuse = fuse_breaker::Fuse::builder("billing").operation("refund").build();
    /// let saved = fuse.save();
    /// assert_eq!((saved.name.as_str(), saved.operation.as_str()), ("billing", "refund"));
    /// ```
    pub fn save(&self) -> SavedCircuit {
        let snapshot = self.snapshot();
        let wall = Wall::now(self.now());
        let open = snapshot.state == State::Open;
        let opened_at = snapshot
            .opened_at
            .filter(|_| snapshot.state != State::Closed);
        let retry_at = match (open, snapshot.opened_at, snapshot.open_for) {
            (true, Some(at), Some(lasts)) => Some(wall.of(at.saturating_add(lasts))),
            // An opening past the clock's last instant: to the end of time.
            (true, _, None) => Some(u64::MAX),
            _ => None,
        };
        let rate = self.config().policy().counts_calls();
        SavedCircuit {
            name: self.name().to_owned(),
            operation: self.operation().unwrap_or_default().to_owned(),
            state: snapshot.state,
            openings: snapshot.openings,
            opened_at_unix_ms: opened_at.map(|at| wall.of(at)),
            retry_at_unix_ms: retry_at,
            failures_unix_ms: snapshot.failures.iter().map(|&at| wall.of(at)).collect(),
            window: (rate && snapshot.state == State::Closed).then_some(SavedWindow {
                calls: snapshot.calls,
                failed: snapshot.failed,
                slow: snapshot.slow,
                slow_failed: snapshot.slow_failed.unwrap_or(0),
            }),
        }
    }

    /// Puts this circuit, just built and not shared yet, in the state
    /// `saved` describes (see [`SavedCircuit`]).
    pub(crate) fn restore(&self, saved: &SavedCircuit) {
        let wall = Wall::now(self.now());
        let opening = match saved.state {
            State::Closed => None,
            State::Open | State::HalfOpen => {
                let now = wall.clock;
                let retry_at = match (saved.state, saved.retry_at_unix_ms) {
                    (State::Open, Some(retry_at)) => wall.back(retry_at),
                    _ => now,
                };
                Some(RestoredOpening {
                    n: saved.openings.saturating_sub(1),
                    opened_at: saved.opened_at_unix_ms.map_or(now, |at| wall.back(at)),
                    retry_at: retry_at.max(1),
                })
            }
        };
        let restored = Restored {
            opening,
            failures: saved
                .failures_unix_ms
                .iter()
                .map(|&at| wall.back(at))
                .collect(),
            counts: saved.window.map(|window| Counts {
                calls: window.calls,
                failed: window.failed.min(window.calls),
                slow: window.slow.min(window.calls),
                slow_failed: window.slow_failed.min(window.slow).min(window.failed),
            }),
        };
        self.engine().restore(&restored);
        // Its metrics and OpenTelemetry series start closed: they show the
        // restored state from the start.
        #[cfg(any(feature = "metrics", feature = "opentelemetry"))]
        {
            let snapshot = self.snapshot();
            self.backing
                .occupant
                .sinks()
                .shown(snapshot.state, || snapshot.open_for);
        }
    }
}

/// The wall clock and a circuit's clock read together: the times of one
/// mapped onto the other.
#[derive(Clone, Copy, Debug)]
struct Wall {
    /// Milliseconds since the Unix epoch.
    unix_ms: u64,
    /// The circuit's clock, in nanoseconds.
    clock: u64,
}

impl Wall {
    fn now(clock: u64) -> Self {
        let since = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO);
        Wall {
            unix_ms: u64::try_from(since.as_millis()).unwrap_or(u64::MAX),
            clock,
        }
    }

    /// The wall time of `at` on the circuit's clock (the millisecond it
    /// falls in).
    fn of(self, at: Duration) -> u64 {
        let at = u64::try_from(at.as_nanos()).unwrap_or(u64::MAX);
        if at >= self.clock {
            self.unix_ms.saturating_add((at - self.clock) / 1_000_000)
        } else {
            self.unix_ms
                .saturating_sub((self.clock - at).div_ceil(1_000_000))
        }
    }

    /// The circuit's time of the wall time `unix_ms` (0 for one before the
    /// clock's start, the clock's last instant for one past it).
    fn back(self, unix_ms: u64) -> u64 {
        if unix_ms >= self.unix_ms {
            let ahead = (unix_ms - self.unix_ms).saturating_mul(1_000_000);
            self.clock.saturating_add(ahead)
        } else {
            let behind = (self.unix_ms - unix_ms).saturating_mul(1_000_000);
            self.clock.saturating_sub(behind)
        }
    }
}

/// A state as saved: `closed`, `open`, `half_open`.
#[cfg(feature = "persist")]
mod state_name {
    use serde::{Deserialize, Deserializer, Serializer};

    use crate::snapshot::State;

    #[allow(clippy::trivially_copy_pass_by_ref)] // the shape serde's `with` calls
    pub(super) fn serialize<S: Serializer>(
        state: &State,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(state.as_str())
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<State, D::Error> {
        let name = String::deserialize(deserializer)?;
        match name.as_str() {
            "closed" => Ok(State::Closed),
            "open" => Ok(State::Open),
            "half_open" => Ok(State::HalfOpen),
            other => Err(serde::de::Error::custom(format!(
                "unknown state {other:?} (closed, open or half_open)"
            ))),
        }
    }
}
