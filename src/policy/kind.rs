//! [`Policy`]: the name of a closed-state rule, as settings write it,
//! written from the registered policies; and a policy's name read from
//! text.

use std::fmt;

/// Writes [`Policy`] from the registered policies: one variant per
/// policy, named by its text; the first is the default.
macro_rules! policy_enum {
    ($(
        $(#[$doc:meta])*
        $variant:ident = $text:literal => $window:ty,
    )+) => {
        /// Which rule opens a closed circuit (SPEC §9): one variant per
        /// policy (see each), named in settings by [`as_str`](Policy::as_str).
        ///
        /// ```
        /// use fuse_breaker::{Config, config::Policy};
        ///
        /// let config = Config::builder().policy(Policy::Rate).failure_rate(25).build()?;
        /// assert_eq!(config.policy(), Policy::Rate);
        /// assert_eq!(Policy::Rate.as_str(), "rate");
        /// assert_eq!("count".parse::<Policy>(), Ok(Policy::Count));
        /// assert_eq!(Policy::default(), Policy::Count);
        /// # Ok::<(), fuse_breaker::config::ConfigError>(())
        /// ```
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum Policy {
            $(
                $(#[$doc])*
                $variant,
            )+
        }

        impl Policy {
            /// Every policy, in the order the settings document them (the
            /// first is the default).
            ///
            /// ```
            /// assert_eq!(fuse_breaker::config::Policy::ALL.len(), 2);
            /// ```
            pub const ALL: [Policy; [$($text),+].len()] = [$(Policy::$variant),+];

            /// The policy's name in settings and views: `count` or `rate`.
            ///
            /// ```
            /// assert_eq!(fuse_breaker::config::Policy::Count.as_str(), "count");
            /// ```
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Policy::$variant => $text,)+
                }
            }
        }
    };
}

super::registered!(policy_enum);

impl Default for Policy {
    /// The first policy registered: `count`.
    ///
    /// ```
    /// use fuse_breaker::config::Policy;
    /// assert_eq!(Policy::default(), Policy::ALL[0]);
    /// ```
    fn default() -> Self {
        Policy::ALL[0]
    }
}

impl fmt::Display for Policy {
    /// The policy's name.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::Policy::Rate.to_string(), "rate");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error of reading a [`Policy`] from a name that is not one.
///
/// ```
/// let error = "ratio".parse::<fuse_breaker::config::Policy>().unwrap_err();
/// assert_eq!(error.to_string(), "unknown policy \"ratio\": expected count or rate");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownPolicy(String);

impl fmt::Display for UnknownPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<&str> = Policy::ALL.iter().map(|policy| policy.as_str()).collect();
        write!(
            f,
            "unknown policy {:?}: expected {}",
            self.0,
            names.join(" or ")
        )
    }
}

impl std::error::Error for UnknownPolicy {}

impl std::str::FromStr for Policy {
    type Err = UnknownPolicy;

    /// Reads a policy's name (ASCII case ignored, spaces around trimmed).
    ///
    /// ```
    /// assert_eq!(" Rate ".parse::<fuse_breaker::config::Policy>(), Ok(fuse_breaker::config::Policy::Rate));
    /// ```
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let name = text.trim();
        Policy::ALL
            .into_iter()
            .find(|policy| policy.as_str().eq_ignore_ascii_case(name))
            .ok_or_else(|| UnknownPolicy(name.to_owned()))
    }
}
