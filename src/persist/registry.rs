//! [`Registry::save`] and [`Registry::restore`].

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{RestoreError, SaveError, file};
use crate::registry::Registry;

impl Registry {
    /// Saves every circuit the registry holds to `path`, whole (a new file
    /// beside it, flushed, then renamed over it: a crash leaves the old
    /// file or the new one), and returns how many. See [`crate::persist`].
    ///
    /// ```
    /// let registry = fuse_breaker::Registry::new(Default::default());
    /// registry.get("billing");
    /// let path = std::env::temp_dir().join(format!("fuse-save-{}.json", std::process::id()));
    /// assert_eq!(registry.save(&path)?, 1);
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn save(&self, path: impl AsRef<Path>) -> Result<usize, SaveError> {
        let circuits: Vec<_> = self.circuits().iter().map(|fuse| fuse.save()).collect();
        let count = circuits.len();
        file::write(path.as_ref(), circuits, unix_ms())?;
        Ok(count)
    }

    /// Restores the circuits saved in `path` (SPEC §12): each one the
    /// registry does not hold yet is made with its name's settings, in the
    /// state it was saved in (open for what remained of its opening on the
    /// wall clock, keeping how many openings in a row it is, or closed
    /// with its window), in a new epoch. Returns how many it restored.
    ///
    /// A file that cannot be read (missing, a directory, empty, too large,
    /// truncated, changed since it was written, not a saved registry, or
    /// written by an incompatible version) is an error naming the file and
    /// what was wrong: nothing is restored, every circuit starts closed,
    /// and with feature `tracing` a warning says so.
    ///
    /// ```
    /// use fuse_breaker::{Registry, persist::RestoreError};
    /// let path = std::env::temp_dir().join(format!("fuse-restore-{}.json", std::process::id()));
    /// std::fs::write(&path, "{\"something\": \"else\"}")?;
    /// let err = Registry::new(Default::default()).restore(&path).unwrap_err();
    /// assert!(matches!(err, RestoreError::Foreign { .. }), "{err}");
    /// # std::fs::remove_file(&path)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn restore(&self, path: impl AsRef<Path>) -> Result<usize, RestoreError> {
        let path = path.as_ref();
        let saved = match file::read(path) {
            Ok(saved) => saved,
            Err(err) => {
                #[cfg(feature = "tracing")]
                tracing::warn!(
                    target: "fuse_breaker",
                    path = %path.display(),
                    error = %err,
                    "{err}: every circuit starts closed"
                );
                return Err(err);
            }
        };
        let mut restored = 0;
        for circuit in &saved {
            let (name, operation) = (circuit.name.as_str(), circuit.operation.as_str());
            if self.existing(name, operation).is_some() {
                continue;
            }
            let fuse = self.create_with(name, operation, None, |builder| builder.restore(circuit));
            if fuse.name() == name && fuse.operation().unwrap_or_default() == operation {
                restored += 1;
            }
        }
        Ok(restored)
    }
}

/// Milliseconds since the Unix epoch, now.
fn unix_ms() -> u64 {
    let since = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO);
    u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
}
