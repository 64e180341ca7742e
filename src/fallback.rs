//! [`Fallback`]: what decides for a shared circuit while its store does not
//! answer (SPEC §8). A plain setting, so that a configuration file names it
//! in any build.

use std::fmt;

/// What decides while the store does not answer (SPEC §8).
///
/// ```
/// assert_eq!(fuse_breaker::config::Fallback::default(), fuse_breaker::config::Fallback::Local);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Fallback {
    /// An in-process circuit with the same key and configuration decides
    /// until the store answers again.
    #[default]
    Local,
    /// Calls run and nothing is recorded.
    Allow,
    /// Calls are refused with the store's error.
    Reject,
}

impl Fallback {
    /// The fallback a configuration file or `FUSE_FALLBACK` names.
    ///
    /// ```
    /// use fuse_breaker::config::Fallback;
    /// assert_eq!(Fallback::parse("allow"), Some(Fallback::Allow));
    /// assert_eq!(Fallback::parse("panic"), None);
    /// ```
    pub fn parse(name: &str) -> Option<Fallback> {
        [Fallback::Local, Fallback::Allow, Fallback::Reject]
            .into_iter()
            .find(|fallback| fallback.as_str() == name)
    }

    /// The fallback as configuration files and logs spell it: `local`,
    /// `allow`, `reject`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Fallback::Reject.as_str(), "reject");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Fallback::Local => "local",
            Fallback::Allow => "allow",
            Fallback::Reject => "reject",
        }
    }
}

impl fmt::Display for Fallback {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
