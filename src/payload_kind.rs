//! [`PayloadKind`] and [`PayloadRead`]: how a shared store spells its
//! payloads and where it keeps them, as settings name it (`payload`,
//! `payload_read`). Plain settings, so that a configuration file names
//! them in any build, as it names a [`Fallback`](crate::config::Fallback).

use std::fmt;

/// What a shared store writes, and where (`payload`, `FUSE_PAYLOAD`, the
/// `fuse` command's `--payload`, a Redis URL's `?payload=`).
///
/// ```
/// use fuse_breaker::config::PayloadKind;
/// assert_eq!(PayloadKind::default(), PayloadKind::Json);
/// assert_eq!(PayloadKind::parse("laravel"), Some(PayloadKind::Laravel));
/// assert_eq!(PayloadKind::parse("xml"), None);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PayloadKind {
    /// JSON under the circuit's key (milon/fuse's `DatabaseStore`, and
    /// the crate's default).
    #[default]
    Json,
    /// PHP's `serialize()` of milon/fuse's array, under the circuit's key.
    Php,
    /// PHP's `serialize()` of milon/fuse's array under Laravel's cache key
    /// of the circuit's key (a Redis store only: its connection's prefix,
    /// then its cache's, then the key), what milon/fuse keeps through
    /// Laravel's cache.
    Laravel,
}

impl PayloadKind {
    /// Every payload, in the order errors list them.
    const ALL: [PayloadKind; 3] = [PayloadKind::Json, PayloadKind::Php, PayloadKind::Laravel];

    /// The payload a setting names: `json`, `php` or `laravel`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::PayloadKind::parse("php"), Some(fuse_breaker::config::PayloadKind::Php));
    /// ```
    pub fn parse(name: &str) -> Option<PayloadKind> {
        Self::ALL.into_iter().find(|kind| kind.as_str() == name)
    }

    /// The payload as settings spell it.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::PayloadKind::Laravel.as_str(), "laravel");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadKind::Json => "json",
            PayloadKind::Php => "php",
            PayloadKind::Laravel => "laravel",
        }
    }

    /// What an error says the payloads are.
    #[cfg(any(feature = "config-file", feature = "redis"))]
    pub(crate) const CHOICES: &str = "`json`, `php` and `laravel`";
}

impl fmt::Display for PayloadKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a shared store reads (`payload_read`, `FUSE_PAYLOAD_READ`, the
/// `fuse` command's `--payload-read`, a Redis URL's `?payload_read=`):
/// the encoding it writes alone, or either encoding (`auto`, while a key
/// moves from JSON to PHP's `serialize()` or back).
///
/// ```
/// use fuse_breaker::config::PayloadRead;
/// assert_eq!(PayloadRead::default(), PayloadRead::Written);
/// assert_eq!(PayloadRead::parse("auto"), Some(PayloadRead::Auto));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PayloadRead {
    /// The encoding written alone; a payload in the other is not a circuit.
    #[default]
    Written,
    /// JSON and PHP's `serialize()` alike.
    Auto,
}

impl PayloadRead {
    /// What a setting names: `written` or `auto`.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::PayloadRead::parse("any"), None);
    /// ```
    pub fn parse(name: &str) -> Option<PayloadRead> {
        [PayloadRead::Written, PayloadRead::Auto]
            .into_iter()
            .find(|read| read.as_str() == name)
    }

    /// As settings spell it.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::config::PayloadRead::Auto.as_str(), "auto");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadRead::Written => "written",
            PayloadRead::Auto => "auto",
        }
    }

    /// What an error says the choices are.
    #[cfg(any(feature = "config-file", feature = "redis"))]
    pub(crate) const CHOICES: &str = "`written` and `auto`";
}

impl fmt::Display for PayloadRead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
