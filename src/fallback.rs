//! [`Fallback`]: what decides for a shared circuit while its store does not
//! answer (SPEC §8). A plain setting, so that a configuration file names it
//! in any build.

crate::choice::choices! {
    /// What decides while the store does not answer (SPEC §8): `local`,
    /// `allow` or `reject` (`fallback` in a file, `FUSE_FALLBACK`).
    ///
    /// ```
    /// use fuse_breaker::config::Fallback;
    /// assert_eq!(Fallback::default(), Fallback::Local);
    /// assert_eq!(Fallback::parse("allow"), Some(Fallback::Allow));
    /// assert_eq!(Fallback::Reject.to_string(), "reject");
    /// ```
    pub enum Fallback ("fallback", "fuse_breaker::config::Fallback") {
        /// An in-process circuit with the same key and configuration decides
        /// until the store answers again.
        Local = "local",
        /// Calls run and nothing is recorded.
        Allow = "allow",
        /// Calls are refused with the store's error.
        Reject = "reject",
    }
}
