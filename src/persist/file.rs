//! The saved registry's file: its form, its checksum, writing it whole and
//! reading it back with every way it can be wrong named.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{RestoreError, SaveError};
use crate::saved::SavedCircuit;

/// The version of the file's format this crate writes and reads.
pub const VERSION: u64 = 1;

/// The largest file a restore reads: a registry's circuits at their
/// largest (4,096 failures each) fill it at about 1,000 circuits; most
/// registries' files are a few hundred bytes a circuit.
pub const MAX_FILE_BYTES: u64 = 64 << 20;

/// The file: one object, so that any other JSON is recognised as foreign.
#[derive(Serialize, Deserialize)]
struct File {
    fuse_saved: Contents,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Contents {
    version: u64,
    saved_at_unix_ms: u64,
    /// CRC-32 of the circuits as this crate writes them (see [`checksum`]).
    crc32: u32,
    circuits: Vec<SavedCircuit>,
}

/// The checksum of `circuits`: CRC-32 of their JSON as written.
fn checksum(circuits: &[SavedCircuit]) -> u32 {
    let text = serde_json::to_vec(circuits).unwrap_or_default();
    crc32fast::hash(&text)
}

/// Writes `circuits` to `path` whole: into a new file beside it, flushed to
/// disk, then renamed over it (and the directory flushed, where the system
/// allows it).
pub(super) fn write(
    path: &Path,
    circuits: Vec<SavedCircuit>,
    unix_ms: u64,
) -> Result<(), SaveError> {
    let failed = |source: io::Error| SaveError {
        path: path.to_owned(),
        source,
    };
    let file = File {
        fuse_saved: Contents {
            version: VERSION,
            saved_at_unix_ms: unix_ms,
            crc32: checksum(&circuits),
            circuits,
        },
    };
    let text = serde_json::to_vec_pretty(&file).map_err(|err| failed(io::Error::other(err)))?;
    let beside = beside(path);
    let written = (|| {
        let mut out = fs::File::create(&beside)?;
        out.write_all(&text)?;
        out.sync_all()?;
        fs::rename(&beside, path)
    })();
    if let Err(err) = written {
        let _ = fs::remove_file(&beside);
        return Err(failed(err));
    }
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty())
        && let Ok(dir) = fs::File::open(dir)
    {
        // Best effort: the rename is durable once its directory is.
        let _ = dir.sync_all();
    }
    Ok(())
}

/// The new file written beside `path` before it replaces it: named for
/// this process and this save, so that two saves at once (a saver's and
/// the application's) each write their own, and the last rename wins.
fn beside(path: &Path) -> PathBuf {
    static SAVES: crate::sync::Tally = crate::sync::Tally::new();
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let save = SAVES.add(1);
    path.with_file_name(format!(".{name}.{}.{save}.new", std::process::id()))
}

/// The circuits saved in `path`, or what was wrong with it.
pub(super) fn read(path: &Path) -> Result<Vec<SavedCircuit>, RestoreError> {
    let owned = || path.to_owned();
    let metadata = fs::metadata(path).map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => RestoreError::Missing { path: owned() },
        _ => RestoreError::Unreadable {
            path: owned(),
            source,
        },
    })?;
    if metadata.is_dir() {
        return Err(RestoreError::Directory { path: owned() });
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(RestoreError::TooLarge {
            path: owned(),
            bytes: metadata.len(),
            limit: MAX_FILE_BYTES,
        });
    }
    let mut text = Vec::new();
    fs::File::open(path)
        .and_then(|file| file.take(MAX_FILE_BYTES + 1).read_to_end(&mut text))
        .map_err(|source| RestoreError::Unreadable {
            path: owned(),
            source,
        })?;
    if text.len() as u64 > MAX_FILE_BYTES {
        // It grew since its size was read.
        return Err(RestoreError::TooLarge {
            path: owned(),
            bytes: text.len() as u64,
            limit: MAX_FILE_BYTES,
        });
    }
    if text.iter().all(u8::is_ascii_whitespace) {
        return Err(RestoreError::Empty { path: owned() });
    }
    let corrupt = |reason: String| RestoreError::Corrupt {
        path: owned(),
        reason,
    };
    let value: serde_json::Value = serde_json::from_slice(&text).map_err(|err| {
        if err.is_eof() {
            corrupt(format!(
                "truncated: it ends inside its JSON, at line {}",
                err.line()
            ))
        } else {
            corrupt(format!("not JSON: {err}"))
        }
    })?;
    let Some(saved) = value.get("fuse_saved") else {
        return Err(RestoreError::Foreign { path: owned() });
    };
    let version = saved.get("version").and_then(serde_json::Value::as_u64);
    match version {
        Some(VERSION) => {}
        Some(found) => {
            return Err(RestoreError::Version {
                path: owned(),
                found,
                supported: VERSION,
            });
        }
        None => return Err(corrupt("no version number".to_owned())),
    }
    let file: File = serde_json::from_value(value).map_err(|err| corrupt(err.to_string()))?;
    let saved = file.fuse_saved;
    if checksum(&saved.circuits) != saved.crc32 {
        return Err(corrupt(format!(
            "the checksum of its {} circuits does not match: changed since it was written",
            saved.circuits.len()
        )));
    }
    Ok(saved.circuits)
}
