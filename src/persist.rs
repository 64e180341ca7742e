//! Saving a registry's circuits to a file and restoring them at start
//! (SPEC §12's restarts; feature `persist`): [`Registry::save`](crate::Registry::save),
//! [`Registry::restore`](crate::Registry::restore), [`Registry::save_every`](crate::Registry::save_every), and what can go wrong
//! ([`SaveError`], [`RestoreError`]).
//!
//! The file is JSON: `{"fuse_saved": {"version": 1, "saved_at_unix_ms":
//! ..., "crc32": ..., "circuits": [...]}}`, each circuit a
//! [`SavedCircuit`](crate::SavedCircuit), the checksum over the circuits as
//! written. It is replaced whole: written beside the old one, flushed to
//! disk, then renamed over it, so a crash leaves the old file or the new
//! one, never half of one.
//!
//! ```
//! use fuse_breaker::{Config, Registry, State};
//!
//! let dir = std::env::temp_dir().join(format!("fuse-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! let path = dir.join("circuits.json");
//!
//! let registry = Registry::new(Config::default());
//! registry.get("billing").force_open();
//! assert_eq!(registry.save(&path)?, 1);
//!
//! // The next process:
//! let registry = Registry::new(Config::default());
//! assert_eq!(registry.restore(&path)?, 1);
//! assert_eq!(registry.get("billing").state(), State::Open);
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod file;
mod registry;
mod saver;

pub use error::{RestoreError, SaveError};
pub use file::{MAX_FILE_BYTES, VERSION};
pub use saver::Saver;
