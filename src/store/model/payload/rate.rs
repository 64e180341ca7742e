//! The `rate` window in a payload (SPEC §9): `fuse.rate`, bounded and
//! checked as every part of a payload read from a store is.

use serde::{Deserialize, Serialize};

use crate::config::MAX_WINDOW_BUCKETS;
use crate::policy::{Buckets, Counts};

use super::{Fresh, PayloadError, head, write};
use crate::policy::Window;
use crate::snapshot::State;
use crate::store::model::quorum::Reporters;
use crate::store::model::stored::Stored;

/// The `rate` window under `fuse.rate`: the width of a bucket in
/// nanoseconds (`failure_window / window_buckets` of the writer), and the
/// buckets that hold calls, oldest first, each `[bucket, calls, failed,
/// slow]` with `bucket` the bucket's number (its start is `bucket *
/// width_ns` since the Unix epoch). A reader whose width differs puts each
/// bucket's calls in the bucket of its own that holds that start. At most
/// [`MAX_WINDOW_BUCKETS`] buckets (a window never needs more); `failed`
/// and `slow` at most `calls`.
#[derive(Serialize, Deserialize)]
pub(super) struct OwnRate {
    width_ns: u64,
    buckets: Vec<[u64; 4]>,
}

impl OwnRate {
    /// The payload's part of `buckets`, `width` nanoseconds wide.
    pub(super) fn of(buckets: &Buckets, width: u64) -> Self {
        OwnRate {
            width_ns: width.max(1),
            buckets: buckets
                .entries()
                .iter()
                .map(|&(bucket, c)| [bucket, c.calls, c.failed, c.slow])
                .collect(),
        }
    }

    /// The width of the buckets as written, in nanoseconds.
    pub(super) fn width(&self) -> u64 {
        self.width_ns
    }

    /// The `rate` window under `key`, in the reader's buckets (see
    /// [`OwnRate`]): refused when it holds more buckets than a window needs,
    /// a bucket with more failed or slow calls than calls, or one that starts
    /// in the future of the store's clock.
    pub(super) fn read(&self, key: &str, fresh: Fresh) -> Result<Buckets, PayloadError> {
        let rate = self;
        let max = MAX_WINDOW_BUCKETS as usize;
        if rate.buckets.len() > max {
            return Err(PayloadError::new(
                key,
                format_args!(
                    "fuse.rate.buckets holds {} buckets, above the {max} a window needs",
                    rate.buckets.len()
                ),
            ));
        }
        if rate.width_ns == 0 {
            return Err(PayloadError::new(key, "fuse.rate.width_ns is 0"));
        }
        let mut entries = Vec::with_capacity(rate.buckets.len());
        for &[bucket, calls, failed, slow] in &rate.buckets {
            if failed > calls || slow > calls {
                return Err(PayloadError::new(
                    key,
                    format_args!(
                        "fuse.rate.buckets holds bucket {bucket} with {calls} calls, \
                     {failed} failed and {slow} slow: more than its calls"
                    ),
                ));
            }
            let start = u128::from(bucket) * u128::from(rate.width_ns);
            if start > u128::from(fresh.latest_event()) {
                return Err(PayloadError::new(
                    key,
                    format_args!(
                        "fuse.rate.buckets holds bucket {bucket} of {} ns, \
                     in the future of the store's clock",
                        rate.width_ns
                    ),
                ));
            }
            let bucket = match fresh.width {
                0 => bucket,
                // `start` is at most `latest_event`, a u64.
                width => u64::try_from(start / u128::from(width)).unwrap_or(u64::MAX),
            };
            entries.push((
                bucket,
                Counts {
                    calls,
                    failed,
                    slow,
                    // Not stored: a shared circuit's snapshot shows none.
                    slow_failed: 0,
                },
            ));
        }
        Ok(Buckets::from_entries(entries))
    }
}

/// The text a payload of a closed circuit of `generation` and `epoch` with
/// a `rate` window `width` nanoseconds wide starts with, before the
/// window's buckets (what a [`Increment`](super::Increment) applies to): the
/// JSON payload [`write`] makes of it (increments apply to JSON alone),
/// without its buckets and what follows.
pub(crate) fn rate_prefix(generation: u64, epoch: u64, width: u64) -> Vec<u8> {
    let stored = Stored {
        generation,
        epoch,
        head: head(State::Closed, epoch, 0, 0, 0),
        opened_at: 0,
        phase: 0,
        window: Window::Rate(Buckets::default()),
        reporters: Reporters::default(),
        leases: Vec::new(),
        ramp: None,
        opened_by: Vec::new(),
        foreign: false,
    };
    let mut bytes = write(&stored, width, crate::store::Encoding::Json);
    let end = b"[]".len() + crate::store::Increment::SUFFIX.len();
    bytes.truncate(bytes.len().saturating_sub(end));
    bytes
}
