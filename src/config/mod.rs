//! What configures a circuit besides [`Config`] itself:
//! [`ConfigBuilder`]; [`ConfigError`]; the values settings take
//! ([`Policy`], [`Factor`], [`Fallback`], [`PayloadKind`],
//! [`PayloadRead`]); a name's [`Overrides`]; the bounds settings are
//! checked against; and a registry's defaults. One job per file: the list
//! of settings (`overrides`: the type, its defaults, the partial and the
//! setters, one entry per setting), the getters (`fields`), how a builder
//! starts and ends, the checks [`build`](ConfigBuilder::build) makes, the
//! error, what the engine derives from a configuration (nanoseconds), and
//! the one `'static` copy of each configuration circuits share.
//!
//! ```
//! use fuse_breaker::Config;
//! use fuse_breaker::config::{ConfigError, MAX_FAILURE_THRESHOLD};
//!
//! let err: ConfigError = Config::builder().failure_threshold(MAX_FAILURE_THRESHOLD + 1).build().unwrap_err();
//! assert!(err.to_string().contains("failure_threshold"));
//! ```

mod builder;
mod check;
mod derived;
mod error;
mod fields;
mod intern;
pub(crate) mod overrides;

pub use crate::factor::Factor;
pub use crate::fallback::Fallback;
pub use crate::limits::{
    DEFAULT_MAX_CIRCUITS, MAX_DURATION, MAX_FAILURE_THRESHOLD, MAX_HALF_OPEN_PROBES,
    MAX_MIN_REPORTERS, MAX_MINIMUM_CALLS, MAX_WINDOW_BUCKETS, OVERFLOW_NAME,
};
pub use crate::payload_kind::{PayloadKind, PayloadRead};
pub use crate::policy::{Policy, UnknownPolicy};
pub(crate) use derived::nanos;
pub use error::ConfigError;
pub(crate) use intern::{count_limits, intern, intern_numbered, number, numbered};
pub(crate) use overrides::Config;
pub use overrides::ConfigBuilder;
pub use overrides::Overrides;

const DEFAULT_STATUSES: [u16; 3] = [502, 503, 504];
/// The default first piece of every key.
pub(crate) const DEFAULT_KEY_PREFIX: &str = "fuse";

#[cfg(test)]
mod tests;
