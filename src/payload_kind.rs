//! [`PayloadKind`] and [`PayloadRead`]: how a shared store spells its
//! payloads and where it keeps them, as settings name it (`payload`,
//! `payload_read`). Plain settings, so that a configuration file names
//! them in any build, as it names a [`Fallback`](crate::config::Fallback).

crate::choice::choices! {
    /// What a shared store writes, and where: `json`, `php` or `laravel`
    /// (`payload`, `FUSE_PAYLOAD`, the `fuse` command's `--payload`, a
    /// Redis URL's `?payload=`).
    ///
    /// ```
    /// use fuse_breaker::config::PayloadKind;
    /// assert_eq!(PayloadKind::default(), PayloadKind::Json);
    /// assert_eq!(PayloadKind::parse("laravel"), Some(PayloadKind::Laravel));
    /// assert_eq!(PayloadKind::parse("xml"), None);
    /// ```
    pub enum PayloadKind ("payload", "fuse_breaker::config::PayloadKind") {
        /// JSON under the circuit's key (milon/fuse's `DatabaseStore`, and
        /// the crate's default).
        Json = "json",
        /// PHP's `serialize()` of milon/fuse's array, under the circuit's key.
        Php = "php",
        /// PHP's `serialize()` of milon/fuse's array under Laravel's cache key
        /// of the circuit's key (a Redis store only: its connection's prefix,
        /// then its cache's, then the key), what milon/fuse keeps through
        /// Laravel's cache.
        Laravel = "laravel",
    }
}

crate::choice::choices! {
    /// What a shared store reads (`payload_read`, `FUSE_PAYLOAD_READ`, the
    /// `fuse` command's `--payload-read`, a Redis URL's `?payload_read=`):
    /// the encoding it writes alone (`written`), or either encoding
    /// (`auto`, while a key moves from JSON to PHP's `serialize()` or
    /// back).
    ///
    /// ```
    /// use fuse_breaker::config::PayloadRead;
    /// assert_eq!(PayloadRead::default(), PayloadRead::Written);
    /// assert_eq!(PayloadRead::parse("auto"), Some(PayloadRead::Auto));
    /// ```
    pub enum PayloadRead ("payload_read", "fuse_breaker::config::PayloadRead") {
        /// The encoding written alone; a payload in the other is not a circuit.
        Written = "written",
        /// JSON and PHP's `serialize()` alike.
        Auto = "auto",
    }
}
