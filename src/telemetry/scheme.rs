//! Which names the `metrics` feature gives its series: the crate's own,
//! or resilience4j's (what dashboards and alerts built for resilience4j
//! query). One scheme per process, like the recorder it goes with.

use std::sync::OnceLock;

/// The naming scheme of the `metrics` feature's series (feature
/// `metrics`): chosen once per process, before the first circuit is
/// built, like the recorder.
///
/// - [`Fuse`](Self::Fuse), the default: the crate's own series
///   (`fuse_state`, `fuse_calls_admitted_total`, ...), labelled `key`.
/// - [`Resilience4j`](Self::Resilience4j): the series resilience4j's
///   Micrometer binding exposes to Prometheus, with its names, label keys
///   and values, and units, labelled `name` (the circuit's key), so that a
///   dashboard or an alert rule written for resilience4j reads a Fuse
///   circuit unchanged. See `docs/operations.md` for the two side by side.
///
/// ```
/// use fuse_breaker::MetricNames;
///
/// // Before any circuit is built (and once per process):
/// MetricNames::Resilience4j.install()?;
/// assert_eq!(MetricNames::current(), MetricNames::Resilience4j);
/// // Another scheme afterwards is refused, naming the one in use.
/// assert_eq!(MetricNames::Fuse.install(), Err(MetricNames::Resilience4j));
/// # Ok::<(), MetricNames>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MetricNames {
    /// The crate's own series (see the `metrics` feature in the README).
    #[default]
    Fuse,
    /// resilience4j's series (`resilience4j_circuitbreaker_state`,
    /// `resilience4j_circuitbreaker_calls_seconds_count`, ...).
    Resilience4j,
}

/// The scheme of this process: set by [`MetricNames::install`], or the
/// default when the first circuit reads it.
static SCHEME: OnceLock<MetricNames> = OnceLock::new();

impl MetricNames {
    /// Makes `self` the scheme of every circuit this process builds from
    /// now on. `Err` with the scheme in use if another one was installed,
    /// or if a circuit was already built (it took the default, `Fuse`):
    /// install the scheme before building circuits.
    ///
    /// ```
    /// use fuse_breaker::MetricNames;
    ///
    /// MetricNames::Fuse.install()?;
    /// // The same scheme again is not an error.
    /// MetricNames::Fuse.install()?;
    /// # Ok::<(), MetricNames>(())
    /// ```
    ///
    /// # Errors
    ///
    /// The scheme already in use, when it is another one.
    pub fn install(self) -> Result<(), MetricNames> {
        let installed = *SCHEME.get_or_init(|| self);
        if installed == self {
            Ok(())
        } else {
            Err(installed)
        }
    }

    /// The scheme of this process: the one installed, or the default
    /// (which this call then fixes).
    ///
    /// ```
    /// use fuse_breaker::MetricNames;
    ///
    /// let _circuit = fuse_breaker::Fuse::builder("billing").build();
    /// assert_eq!(MetricNames::current(), MetricNames::Fuse);
    /// ```
    #[must_use]
    pub fn current() -> MetricNames {
        *SCHEME.get_or_init(MetricNames::default)
    }

    /// The scheme's name, as `FUSE_METRIC_NAMES` and `docs/operations.md`
    /// spell it: `fuse` or `resilience4j`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::MetricNames::Resilience4j.as_str(), "resilience4j");
    /// ```
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            MetricNames::Fuse => "fuse",
            MetricNames::Resilience4j => "resilience4j",
        }
    }
}

impl std::fmt::Display for MetricNames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for MetricNames {
    type Err = String;

    /// `fuse` or `resilience4j`, as [`as_str`](MetricNames::as_str)
    /// writes them.
    ///
    /// ```
    /// use fuse_breaker::MetricNames;
    ///
    /// assert_eq!("resilience4j".parse(), Ok(MetricNames::Resilience4j));
    /// assert!("micrometer".parse::<MetricNames>().unwrap_err().contains("micrometer"));
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        match text {
            "fuse" => Ok(MetricNames::Fuse),
            "resilience4j" => Ok(MetricNames::Resilience4j),
            other => Err(format!(
                "unknown metric names {other:?}: expected \"fuse\" or \"resilience4j\""
            )),
        }
    }
}
