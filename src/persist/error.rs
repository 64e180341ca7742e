//! What can go wrong saving a registry's circuits, or restoring them.

use std::io;
use std::path::PathBuf;

/// A registry's circuits could not be restored from a file: which file,
/// and what was wrong with it. The registry's circuits then start closed.
///
/// ```
/// use fuse_breaker::{Registry, persist::RestoreError};
/// let registry = Registry::new(Default::default());
/// let err = registry.restore("/nonexistent/circuits.json").unwrap_err();
/// assert!(matches!(err, RestoreError::Missing { .. }));
/// assert_eq!(
///     err.to_string(),
///     "cannot restore circuits from /nonexistent/circuits.json: no such file"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// There is no file at the path.
    #[error("cannot restore circuits from {}: no such file", path.display())]
    Missing {
        /// The file.
        path: PathBuf,
    },
    /// The path is a directory.
    #[error("cannot restore circuits from {}: it is a directory", path.display())]
    Directory {
        /// The path.
        path: PathBuf,
    },
    /// The file could not be read.
    #[error("cannot restore circuits from {}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The file is empty.
    #[error("cannot restore circuits from {}: the file is empty", path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// The file is larger than a saved registry can be.
    #[error(
        "cannot restore circuits from {}: {bytes} bytes, more than the {limit} a saved registry may take",
        path.display()
    )]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        bytes: u64,
        /// The most a saved registry may take ([`MAX_FILE_BYTES`](super::MAX_FILE_BYTES)).
        limit: u64,
    },
    /// The file is not whole, or not what was written: truncated, not
    /// JSON, a field of the wrong kind, or a checksum that does not match.
    #[error("cannot restore circuits from {}: corrupt ({reason})", path.display())]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What was wrong, and where.
        reason: String,
    },
    /// The file is JSON, but not a saved registry.
    #[error("cannot restore circuits from {}: not a saved registry (no \"fuse_saved\")", path.display())]
    Foreign {
        /// The file.
        path: PathBuf,
    },
    /// The file was written by a version of the format this one cannot
    /// read.
    #[error(
        "cannot restore circuits from {}: written in format version {found}, this version reads {supported}",
        path.display()
    )]
    Version {
        /// The file.
        path: PathBuf,
        /// The version it says it is.
        found: u64,
        /// The version this crate writes and reads ([`VERSION`](super::VERSION)).
        supported: u64,
    },
}

/// A registry's circuits could not be saved to a file: which file, and
/// the error of the file system. The file there before, if any, is
/// unchanged.
///
/// ```
/// let registry = fuse_breaker::Registry::new(Default::default());
/// let err = registry.save("/nonexistent/dir/circuits.json").unwrap_err();
/// assert!(err.to_string().starts_with("cannot save circuits to /nonexistent/dir/circuits.json: "));
/// ```
#[derive(Debug, thiserror::Error)]
#[error("cannot save circuits to {}: {source}", path.display())]
pub struct SaveError {
    pub(crate) path: PathBuf,
    #[source]
    pub(crate) source: io::Error,
}

impl SaveError {
    /// The file that could not be written.
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// let err = registry.save("/nonexistent/dir/circuits.json").unwrap_err();
    /// assert_eq!(err.path(), std::path::Path::new("/nonexistent/dir/circuits.json"));
    /// ```
    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}
