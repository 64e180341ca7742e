//! Helpers to test code that uses circuits (feature `testing`): a circuit
//! on a mock clock that a test drives to any state, moves through time and
//! asserts on.
//!
//! ```
//! use std::time::Duration;
//! use fuse_breaker::testing::TestFuse;
//! use fuse_breaker::{Config, State};
//!
//! // The code under test takes a `&Fuse`.
//! fn fetch_price(fuse: &fuse_breaker::Fuse) -> Option<u32> {
//!     fuse.run(|| Ok::<_, std::io::Error>(42)).ok()
//! }
//!
//! let test = TestFuse::new("pricing", Config::default());
//! test.trip();
//! assert_eq!(fetch_price(&test), None, "rejected while open");
//! test.advance(test.config().open_duration());
//! assert_eq!(fetch_price(&test), Some(42), "the probe runs");
//! test.assert_state(State::HalfOpen);
//! ```

#![allow(clippy::missing_panics_doc)] // the assertions panic: that is their job

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use quanta::{Clock, Mock};

use crate::config::Config;
use crate::fuse::Fuse;
use crate::policy::Policy;
use crate::registry::{Registry, RegistryBuilder};
use crate::snapshot::State;

/// A [`Fuse`] on a mock clock, with helpers to drive and check it.
/// Dereferences to the `Fuse`, so it goes wherever a `&Fuse` is expected.
///
/// ```
/// use fuse_breaker::testing::TestFuse;
/// let test = TestFuse::new("billing", Default::default());
/// test.fail(3);
/// test.assert_failures(3);
/// test.succeed(1);
/// test.assert_failures(0);
/// ```
#[derive(Debug)]
pub struct TestFuse {
    fuse: Fuse,
    mock: Arc<Mock>,
}

impl Deref for TestFuse {
    type Target = Fuse;

    fn deref(&self) -> &Fuse {
        &self.fuse
    }
}

impl TestFuse {
    /// A closed circuit named `name` on a mock clock at time zero.
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// assert_eq!(test.now(), std::time::Duration::ZERO);
    /// ```
    pub fn new(name: &str, config: Config) -> Self {
        let (clock, mock) = Clock::mock();
        let fuse = Fuse::builder(name).config(config).clock(clock).build();
        TestFuse { fuse, mock }
    }

    /// The mock clock's handle, to share it with other code under test.
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.mock().increment(std::time::Duration::from_secs(1));
    /// assert_eq!(test.now().as_secs(), 1);
    /// ```
    pub fn mock(&self) -> &Arc<Mock> {
        &self.mock
    }

    /// The circuit's time.
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.advance(std::time::Duration::from_millis(1500));
    /// assert_eq!(test.now().as_millis(), 1500);
    /// ```
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.mock.value())
    }

    /// Moves time forward.
    ///
    /// ```
    /// use fuse_breaker::{testing::TestFuse, State};
    /// let test = TestFuse::new("billing", Default::default());
    /// test.fail(1);
    /// test.advance(test.config().failure_window() + std::time::Duration::from_nanos(1));
    /// test.assert_failures(0);
    /// ```
    pub fn advance(&self, by: Duration) {
        self.mock.increment(by);
    }

    /// Records `count` counted failures, each through a permit of its own.
    /// Calls that the circuit rejects are skipped.
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.fail(2);
    /// test.assert_failures(2);
    /// ```
    pub fn fail(&self, count: u32) {
        for _ in 0..count {
            if let Ok(permit) = self.fuse.try_acquire() {
                permit.failure();
            }
        }
    }

    /// Records `count` successes (calls the circuit rejects are skipped).
    ///
    /// ```
    /// use fuse_breaker::{testing::TestFuse, State};
    /// let test = TestFuse::new("billing", Default::default());
    /// test.half_open();
    /// test.succeed(2);
    /// test.assert_state(State::Closed);
    /// ```
    pub fn succeed(&self, count: u32) {
        for _ in 0..count {
            if let Ok(permit) = self.fuse.try_acquire() {
                permit.success();
            }
        }
    }

    /// Opens the circuit the way a failing dependency does: as many counted
    /// failures as the threshold, at the current time.
    ///
    /// ```
    /// use fuse_breaker::{testing::TestFuse, events::Reason, State};
    /// let test = TestFuse::new("billing", Default::default());
    /// test.trip();
    /// test.assert_state(State::Open);
    /// ```
    ///
    /// Under the `rate` policy: counted failures until the rule holds (at
    /// least `minimum_calls` calls, `failure_rate` percent of them failed),
    /// as many as the calls already in the window need.
    pub fn trip(&self) {
        let config = self.fuse.config();
        match config.policy() {
            Policy::Count => self.fail(config.failure_threshold()),
            Policy::Rate => {
                // Each failure adds a call and a failure: after as many
                // failures as the minimum and 100 for each call there, the
                // share of failures is past any rate below 100 %.
                let calls = self.fuse.snapshot().calls;
                let most =
                    u64::from(config.minimum_calls()).saturating_add(calls.saturating_mul(100));
                let mut failed = 0;
                while failed < most && self.fuse.state() == State::Closed {
                    self.fail(1);
                    failed += 1;
                }
            }
        }
        self.assert_state(State::Open);
    }

    /// Opens the circuit (if it is not open yet) and lets the cooldown
    /// pass: the next call probes.
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.cool_down();
    /// assert!(test.try_acquire()?.is_probe());
    /// # Ok::<(), fuse_breaker::OpenError>(())
    /// ```
    pub fn cool_down(&self) {
        if self.fuse.state() != State::Open {
            self.fuse.force_open();
        }
        // The circuit says how long is left; a call admitted instead has
        // already probed, and releasing it leaves every slot free.
        if let Err(open) = self.fuse.try_acquire() {
            self.advance(open.retry_after());
        }
    }

    /// Drives the circuit to half-open with every probe slot free.
    ///
    /// ```
    /// use fuse_breaker::{testing::TestFuse, State};
    /// let test = TestFuse::new("billing", Default::default());
    /// test.half_open();
    /// test.assert_state(State::HalfOpen);
    /// assert_eq!(test.snapshot().half_open_inflight, 0);
    /// ```
    pub fn half_open(&self) {
        self.cool_down();
        if let Ok(probe) = self.fuse.try_acquire() {
            probe.ignore();
        }
        self.assert_state(State::HalfOpen);
    }

    /// Panics, naming the circuit and its snapshot, unless it is in `state`.
    ///
    /// ```should_panic
    /// use fuse_breaker::{testing::TestFuse, State};
    /// TestFuse::new("billing", Default::default()).assert_state(State::Open);
    /// ```
    #[track_caller]
    pub fn assert_state(&self, state: State) {
        let snapshot = self.fuse.snapshot();
        assert!(
            snapshot.state == state,
            "circuit {} is {}, expected {state}: {snapshot:?}",
            self.fuse.key(),
            snapshot.state
        );
    }

    /// Panics unless the circuit holds exactly `count` failures inside its
    /// window.
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.assert_failures(0);
    /// ```
    #[track_caller]
    pub fn assert_failures(&self, count: usize) {
        let snapshot = self.fuse.snapshot();
        assert!(
            snapshot.failures.len() == count,
            "circuit {} holds {} failures, expected {count}: {snapshot:?}",
            self.fuse.key(),
            snapshot.failures.len()
        );
    }

    /// Panics unless the window of a circuit under the `rate` policy holds
    /// exactly `calls` calls, `failed` of them counted failures and `slow`
    /// of them slow (SPEC §9).
    ///
    /// ```
    /// use fuse_breaker::{testing::TestFuse, Config, config::Policy};
    /// let test = TestFuse::new("search", Config::builder().policy(Policy::Rate).build()?);
    /// test.assert_window(0, 0, 0);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    #[track_caller]
    pub fn assert_window(&self, calls: u64, failed: u64, slow: u64) {
        let snapshot = self.fuse.snapshot();
        assert!(
            (snapshot.calls, snapshot.failed, snapshot.slow) == (calls, failed, slow),
            "circuit {} holds {} calls, {} failed and {} slow, expected {calls}, {failed} and \
             {slow}: {snapshot:?}",
            self.fuse.key(),
            snapshot.calls,
            snapshot.failed,
            snapshot.slow
        );
    }

    /// Panics unless the next call is rejected (the permit of an admitted
    /// call is released with an ignore verdict).
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.trip();
    /// test.assert_rejects();
    /// ```
    #[track_caller]
    pub fn assert_rejects(&self) {
        if let Ok(permit) = self.fuse.try_acquire() {
            permit.ignore();
            panic!(
                "circuit {} admitted a call: {:?}",
                self.fuse.key(),
                self.fuse.snapshot()
            );
        }
    }

    /// Panics unless the next call is admitted (its permit is released with
    /// an ignore verdict, which changes nothing but a probe slot).
    ///
    /// ```
    /// let test = fuse_breaker::testing::TestFuse::new("billing", Default::default());
    /// test.assert_admits();
    /// ```
    #[track_caller]
    pub fn assert_admits(&self) {
        if let Err(open) = self.fuse.try_acquire() {
            panic!("circuit {} rejected a call: {open}", self.fuse.key());
        }
    }
}

/// A [`RegistryBuilder`] whose circuits share one mock clock, and the
/// clock's handle.
///
/// ```
/// use fuse_breaker::{testing, State};
/// let (builder, mock) = testing::mock_registry();
/// let registry = builder.app("shop").build()?;
/// registry.get("billing").force_open();
/// mock.increment(std::time::Duration::from_secs(30));
/// assert!(registry.get("billing").try_acquire()?.is_probe());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn mock_registry() -> (RegistryBuilder, Arc<Mock>) {
    let (clock, mock) = Clock::mock();
    (Registry::builder().clock(clock), mock)
}

#[cfg(test)]
mod tests;
