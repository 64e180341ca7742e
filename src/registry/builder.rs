//! [`RegistryBuilder`].

use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use quanta::Clock;

use super::Registry;
use super::checked::{Configs, check_max_circuits};
use super::map::Circuits;
use crate::backing::sealed::Sealed;
use crate::backing::{Backing, Local};
use crate::builder::FuseBuilder;
use crate::config::Overrides;
use crate::config::{Config, ConfigError};
use crate::fuse::Fuse;
use crate::limits::DEFAULT_MAX_CIRCUITS;
use crate::sync::Tally;

/// Builds a [`Registry`]; [`build`](Self::build) validates every override
/// against the defaults.
///
/// ```
/// use fuse_breaker::{config::Overrides, Registry};
/// let err = Registry::builder()
///     .overrides("billing", Overrides { failure_threshold: Some(0), ..Overrides::default() })
///     .build()
///     .unwrap_err();
/// assert_eq!(err.setting(), "failure_threshold");
/// ```
///
/// The same builder makes a registry of shared circuits (`store`, feature
/// `store`): the setters below are every registry's, whatever the
/// [`Backing`] of its circuits.
#[must_use = "a builder does nothing until `build` is called"]
#[derive(Debug)]
pub struct RegistryBuilder<B: Backing = Local> {
    pub(crate) defaults: Option<Config>,
    pub(crate) overrides: Vec<(String, Overrides)>,
    pub(crate) app: Option<String>,
    pub(crate) clock: Option<Clock>,
    pub(crate) coarse_clock: bool,
    pub(crate) max_circuits: Option<usize>,
    pub(crate) idle_after: Option<Duration>,
    /// What only this backing's circuits are built with.
    pub(crate) options: <B as Sealed>::Options,
}

impl Default for RegistryBuilder {
    fn default() -> Self {
        RegistryBuilder {
            defaults: None,
            overrides: Vec::new(),
            app: None,
            clock: None,
            coarse_clock: false,
            max_circuits: None,
            idle_after: None,
            options: (),
        }
    }
}

impl<B: Backing> RegistryBuilder<B> {
    /// The configuration of every circuit without overrides (default:
    /// [`Config::default`]).
    ///
    /// ```
    /// let config = fuse_breaker::Config::builder().failure_threshold(4).build()?;
    /// let registry = fuse_breaker::Registry::builder().defaults(config).build()?;
    /// assert_eq!(registry.get("x").config().failure_threshold(), 4);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn defaults(mut self, defaults: Config) -> Self {
        self.defaults = Some(defaults);
        self
    }

    /// Overrides of the defaults for the circuits named `name` (all their
    /// operations); [`Overrides::from`] a [`Config`] gives a whole
    /// configuration. Given twice for one name, the later wins.
    ///
    /// ```
    /// use fuse_breaker::{Config, config::Overrides, Registry};
    /// let strict = Config::builder().failure_threshold(2).build()?;
    /// let registry = Registry::builder()
    ///     .overrides("billing", Overrides { half_open_probes: Some(5), ..Overrides::default() })
    ///     .overrides("search", Overrides::from(strict))
    ///     .build()?;
    /// assert_eq!(registry.get_operation("billing", "charge").config().half_open_probes(), 5);
    /// assert_eq!(registry.get("search").config().failure_threshold(), 2);
    /// assert_eq!(registry.get("other").config().half_open_probes(), 2);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn overrides(mut self, name: impl Into<String>, overrides: Overrides) -> Self {
        self.overrides.push((name.into(), overrides));
        self
    }

    /// The application piece of every key.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().app("punt").build()?;
    /// assert_eq!(registry.get("billing").key(), "fuse:punt:billing");
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// The clock of every circuit (default: the real clock).
    ///
    /// ```
    /// let (clock, _mock) = quanta::Clock::mock();
    /// let registry = fuse_breaker::Registry::builder().clock(clock).build()?;
    /// registry.get("billing").force_open();
    /// assert_eq!(registry.get("billing").snapshot().opened_at, Some(std::time::Duration::ZERO));
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn clock(mut self, clock: Clock) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Whether every circuit reads its clock coarsely (see
    /// [`FuseBuilder::coarse_clock`](crate::FuseBuilder::coarse_clock)).
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().coarse_clock(true).build()?;
    /// assert_eq!(registry.get("billing").state(), fuse_breaker::State::Closed);
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn coarse_clock(mut self, coarse: bool) -> Self {
        self.coarse_clock = coarse;
        self
    }

    /// The most circuits the registry holds (default
    /// [`DEFAULT_MAX_CIRCUITS`](crate::config::DEFAULT_MAX_CIRCUITS), at least 1).
    /// A new name or operation beyond it first retires an idle circuit; if
    /// every circuit it looks at is busy, the call goes through the
    /// registry's overflow circuit ([`OVERFLOW_NAME`](crate::config::OVERFLOW_NAME)),
    /// and [`Registry::overflows`] counts it.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().max_circuits(1).build()?;
    /// registry.get("billing").force_open();
    /// assert_eq!(registry.get("search").name(), fuse_breaker::config::OVERFLOW_NAME);
    /// assert!(fuse_breaker::Registry::builder().max_circuits(0).build().is_err());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn max_circuits(mut self, max: usize) -> Self {
        self.max_circuits = Some(max);
        self
    }

    /// How long a circuit goes without a lookup before the registry may
    /// retire it, if it is closed, has no failures in its window and
    /// nothing but the registry holds it (default: twice the longer of its
    /// failure window and open duration, milon/fuse's store TTL).
    ///
    /// ```
    /// use std::time::Duration;
    /// let registry = fuse_breaker::Registry::builder()
    ///     .idle_after(Duration::from_secs(600))
    ///     .build()?;
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn idle_after(mut self, idle: Duration) -> Self {
        self.idle_after = Some(idle);
        self
    }

    /// The registry of `configs`, its circuits made by `make`.
    pub(crate) fn finish(
        self,
        configs: Configs,
        make: fn(FuseBuilder<B>) -> Fuse<B>,
    ) -> Registry<B> {
        Registry {
            configs: arc_swap::ArcSwap::from_pointee(configs),
            app: self.app,
            clock: self.clock,
            coarse_clock: self.coarse_clock,
            circuits: Circuits::default(),
            listeners: Arc::default(),
            held: Mutex::default(),
            capacity: self.max_circuits.unwrap_or(DEFAULT_MAX_CIRCUITS),
            idle_after: self.idle_after,
            overflow: OnceLock::new(),
            overflows: Tally::default(),
            retired: Tally::default(),
            options: self.options,
            make,
        }
    }

    /// This builder for another backing, its circuits built with
    /// `options`.
    #[cfg_attr(not(feature = "store"), allow(dead_code))]
    pub(crate) fn backed<C: Backing>(self, options: <C as Sealed>::Options) -> RegistryBuilder<C> {
        RegistryBuilder {
            defaults: self.defaults,
            overrides: self.overrides,
            app: self.app,
            clock: self.clock,
            coarse_clock: self.coarse_clock,
            max_circuits: self.max_circuits,
            idle_after: self.idle_after,
            options,
        }
    }

    /// The defaults and the overrides, checked, and the capacity.
    pub(crate) fn checked(&self) -> Result<(Configs, usize), ConfigError> {
        if let Some(max) = self.max_circuits {
            check_max_circuits(max)?;
        }
        let defaults = self.defaults.clone().unwrap_or_default();
        let configs = Configs::new(defaults, &self.overrides)?;
        Ok((configs, self.max_circuits.unwrap_or(DEFAULT_MAX_CIRCUITS)))
    }
}

impl RegistryBuilder {
    /// The registry, or the first override that makes an invalid
    /// configuration.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::builder().build()?;
    /// assert!(registry.circuits().is_empty());
    /// # Ok::<(), fuse_breaker::config::ConfigError>(())
    /// ```
    pub fn build(self) -> Result<Registry, ConfigError> {
        let (configs, _) = self.checked()?;
        Ok(self.finish(configs, <FuseBuilder>::build))
    }

    /// `build` for a builder without overrides, which cannot fail.
    pub(super) fn build_valid(self) -> Registry {
        let defaults = self.defaults.clone().unwrap_or_default();
        self.finish(Configs::defaults_only(defaults), <FuseBuilder>::build)
    }
}
