//! Replacing a running circuit's settings (SPEC §12): what may change in
//! place, and [`Fuse::reconfigure`], over any backing: the local one's
//! here ([`Local`]), a shared circuit's beside it in `store`.

use crate::backing::{Backing, Local};
use crate::config::{Config, ConfigError};
use crate::engine::Engine;
use crate::events::Reconfiguration;
use crate::fuse::Fuse;

impl<B: Backing> Fuse<B> {
    /// Replaces the circuit's settings while it runs (SPEC §12): it keeps
    /// its state, its epoch, the permits in flight, its opening (its end
    /// and n) and its half-open progress, and nothing transitions now. The
    /// next admission or verdict reads the new settings: a half-open
    /// circuit admits while fewer than the new `half_open_probes` are in
    /// flight and closes when its successes reach it, the next opening
    /// takes the new durations, and a `count` circuit keeps the failures
    /// inside the new `failure_window`, at most the new threshold less one.
    /// No call waits for it.
    ///
    /// Another shape of window starts empty: a new `policy` (no failures,
    /// no calls), a `rate` or throttle window of another `failure_window`
    /// or `window_buckets`, throttling switched on (each window is kept
    /// where its own shape is: a new throttle keeps the `rate` window).
    /// Timing switched on times the calls admitted from then on (a call
    /// admitted untimed is never slow). A circuit keeps every shape it had
    /// as long as it lives, 64 at most: the next is refused, naming the
    /// setting. A `count` threshold above the failures its ring holds grows
    /// the ring (kept until the circuit is dropped: at most two rings per
    /// doubling).
    ///
    /// Refused whole, naming the setting, when `config` changes what
    /// names the circuit (`key_prefix`); a shared circuit also refuses
    /// another shape of window (its store keeps the window). The circuit
    /// then keeps its settings.
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::{Config, Fuse, State};
    ///
    /// let fuse = Fuse::new("billing", Config::builder().failure_threshold(8).build()?);
    /// for _ in 0..5 {
    ///     fuse.try_acquire()?.failure();
    /// }
    /// fuse.reconfigure(Config::builder().failure_threshold(4).build()?)?;
    /// assert_eq!(fuse.state(), State::Closed);
    /// assert_eq!(fuse.snapshot().failures.len(), 3);
    /// fuse.try_acquire()?.failure();
    /// assert_eq!(fuse.state(), State::Open);
    ///
    /// let refused = fuse.reconfigure(Config::builder().key_prefix("other").build()?);
    /// assert_eq!(refused.unwrap_err().setting(), "key_prefix");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// A shared circuit (feature `store`) takes its new settings in this
    /// process alone: settings are each process's own, so nothing is
    /// written to the store and nothing there is reset; its local
    /// fallback, its mirror and its throttle follow them.
    ///
    /// ```
    /// # #[cfg(feature = "store")]
    /// # futures::executor::block_on(async {
    /// use std::sync::Arc;
    /// use fuse_breaker::{Config, Fuse, State};
    /// use fuse_breaker::store::{MemoryStore, Store};
    ///
    /// let store = Arc::new(MemoryStore::new());
    /// let fuse = Fuse::builder("billing").store(store.clone()).build();
    /// fuse.try_acquire().await?.failure().await?;
    /// let before = store.load(fuse.key()).await?.payload;
    /// fuse.reconfigure(Config::builder().failure_threshold(2).build()?)?;
    /// assert_eq!(store.load(fuse.key()).await?.payload, before);
    /// assert_eq!(fuse.local().config().failure_threshold(), 2);
    /// fuse.try_acquire().await?.failure().await?;
    /// assert_eq!(fuse.state().await?, State::Open);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// # }).unwrap();
    /// ```
    pub fn reconfigure(&self, config: Config) -> Result<(), ConfigError> {
        self.reconfigure_by(config, "code")
    }

    /// [`reconfigure`](Self::reconfigure), with the event naming `by` as
    /// who asked. Concurrent reconfigurations of one circuit each put
    /// their settings in force whole; the event of each names the
    /// settings it found.
    pub(crate) fn reconfigure_by(&self, config: Config, by: &str) -> Result<(), ConfigError> {
        self.backing.reconfigure(config, by)
    }

    /// `Ok` if this circuit can take `config` in place (see
    /// [`reconfigure`](Self::reconfigure)); otherwise the first setting
    /// that cannot change.
    pub(crate) fn takes_in_place(&self, config: &Config) -> Result<(), ConfigError> {
        self.backing.takes_in_place(config)
    }
}

impl Local {
    /// The engine of this circuit.
    fn engine(&self) -> Engine<'_> {
        Engine::new(self.slot, &self.occupant)
    }

    /// See [`Fuse::takes_in_place`].
    pub(crate) fn takes_in_place(&self, config: &Config) -> Result<(), ConfigError> {
        let from = self.engine().config();
        names_kept(from, config)?;
        if reshapes(from, config) && self.slot.shapes() >= MAX_SHAPES {
            let (setting, value) = reshaping_setting(from, config);
            return Err(ConfigError::new(
                setting,
                value,
                format!(
                    "cannot change on this circuit: it has taken {MAX_SHAPES} shapes of window, \
                     the most a circuit keeps (build a new circuit)"
                ),
            ));
        }
        Ok(())
    }

    /// See [`Fuse::reconfigure_by`].
    pub(crate) fn reconfigure_by(&self, config: Config, by: &str) -> Result<(), ConfigError> {
        self.takes_in_place(&config)?;
        let engine = self.engine();
        let from = engine.config();
        let (to, number) = crate::config::intern_numbered(config);
        if std::ptr::eq(from, to) {
            return Ok(());
        }
        engine.reconfigure(to, number);
        self.occupant.events().emit_reconfigure(&Reconfiguration {
            key: self.occupant.names().key(),
            by,
            from,
            to,
        });
        Ok(())
    }

    /// Puts `to` (interned, numbered `number`) in force with no event, for
    /// a circuit that tells of the change itself (a shared circuit's
    /// fallback; checked by [`takes_in_place`](Self::takes_in_place)).
    #[cfg(feature = "store")]
    pub(crate) fn put_in_force(&self, to: &'static Config, number: u32) {
        let engine = self.engine();
        if !std::ptr::eq(engine.config(), to) {
            engine.reconfigure(to, number);
        }
    }
}

/// The most shapes of window a circuit takes in its life (SPEC §12): each
/// is kept as long as its slot, since a verdict that read it may still add
/// to it, so a circuit reshaped this many times refuses another shape
/// (build a new circuit for it).
pub(crate) const MAX_SHAPES: usize = 64;

/// The first setting by which `new` gives a circuit of `old` other windows
/// of calls ([`reshapes`]), and its new value.
fn reshaping_setting(old: &Config, new: &Config) -> (&'static str, String) {
    if old.policy() != new.policy() {
        ("policy", new.policy().to_string())
    } else if old.throttle_k().is_some() != new.throttle_k().is_some() {
        ("throttle_k", format!("{:?}", new.throttle_k()))
    } else if old.failure_window() != new.failure_window() {
        ("failure_window", format!("{:?}", new.failure_window()))
    } else {
        ("window_buckets", new.window_buckets().to_string())
    }
}

/// Whether `new` gives a circuit of `old` other windows of calls (SPEC
/// §12: a new one starts empty): another policy, a `rate` or throttle
/// window of another width or number of buckets, or throttling on or off.
/// (Timing on or off changes the word's mark alone.)
pub(crate) fn reshapes(old: &Config, new: &Config) -> bool {
    let windowed =
        |config: &Config| config.policy().counts_calls() || config.throttle_k().is_some();
    old.policy() != new.policy()
        || old.throttle_k().is_some() != new.throttle_k().is_some()
        || ((windowed(old) || windowed(new))
            && (old.failure_window() != new.failure_window()
                || old.window_buckets() != new.window_buckets()))
}

/// `Ok` if `new` names a circuit of `old` as `old` does: what a running
/// circuit of this process can take in place (its shape changes with
/// empty windows, see [`reshapes`]). `key_prefix` is refused, by name.
pub(crate) fn names_kept(old: &Config, new: &Config) -> Result<(), ConfigError> {
    if old.key_prefix() == new.key_prefix() {
        return Ok(());
    }
    Err(ConfigError::new(
        "key_prefix",
        new.key_prefix().to_owned(),
        "cannot change on a running circuit (it names the circuit)".to_owned(),
    ))
}

/// `Ok` if a shared circuit of `old` can take `new` in place; otherwise
/// the first setting that cannot change: its name ([`names_kept`]), and
/// the shape of the window its store's payload keeps.
#[cfg(feature = "store")]
pub(crate) fn in_place(old: &Config, new: &Config) -> Result<(), ConfigError> {
    let windowed =
        |config: &Config| config.policy().counts_calls() || config.throttle_k().is_some();
    let shaped = windowed(old) || windowed(new);
    let window = "its window of calls is kept";
    // Each: the setting, whether it changed what cannot change, its new
    // value, and why it cannot.
    names_kept(old, new)?;
    let fixed = [
        (
            "policy",
            old.policy() != new.policy(),
            new.policy().to_string(),
            "its window is kept",
        ),
        (
            "throttle_k",
            shaped && old.throttle_k().is_some() != new.throttle_k().is_some(),
            format!("{:?}", new.throttle_k()),
            window,
        ),
        (
            "failure_window",
            shaped && old.failure_window() != new.failure_window(),
            format!("{:?}", new.failure_window()),
            window,
        ),
        (
            "window_buckets",
            shaped && old.window_buckets() != new.window_buckets(),
            new.window_buckets().to_string(),
            window,
        ),
        (
            "slow_call_duration",
            shaped && old.times_calls() != new.times_calls(),
            format!("{:?}", new.slow_call_duration()),
            "whether it times its calls is kept",
        ),
    ];
    match fixed.into_iter().find(|(_, changed, _, _)| *changed) {
        Some((setting, _, value, why)) => Err(ConfigError::new(
            setting,
            value,
            format!("cannot change on a running circuit ({why})"),
        )),
        None => Ok(()),
    }
}
