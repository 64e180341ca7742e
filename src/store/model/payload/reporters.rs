//! The reporters of a closed window in a payload (SPEC §8's quorum):
//! `fuse.reporters`, bounded and checked as every part of a payload read
//! from a store is.
//!
//! Each entry is `[id, at_us]`: a reporter's id and the time of its newest
//! failure in the window, in microseconds since the Unix epoch; written
//! only while closed and when the window names a reporter, as the last of
//! the `fuse` fields (an [`Increment`](crate::store::Increment) keeps it as
//! it is). A closed payload without it (milon/fuse's, or one written before
//! the quorum) reads as one anonymous reporter
//! ([`ANONYMOUS`](crate::store::model::quorum::ANONYMOUS)) of the newest failure
//! of its window, so that such failures count as one process's.

use crate::config::MAX_MIN_REPORTERS;
use crate::policy::Window;

use super::{Fresh, NANOS_PER_MICRO, PayloadError, checked};
use crate::store::model::quorum::{ANONYMOUS, Report, Reporters};

/// The payload's part of `reporters` (`None`: no reporter to name).
pub(super) fn write(reporters: &Reporters) -> Option<Vec<[u64; 2]>> {
    (!reporters.is_empty()).then(|| {
        reporters
            .reports()
            .iter()
            .map(|report| [report.id, report.at / NANOS_PER_MICRO])
            .collect()
    })
}

/// The reporters `written` under `key` names for `window`, whose `rate`
/// buckets are `width` nanoseconds wide (see the module docs for a payload
/// that names none): refused when they are more than
/// [`MAX_MIN_REPORTERS`], name a reporter twice, or hold a time in the
/// future of the store's clock.
pub(super) fn read(
    key: &str,
    written: Option<&[[u64; 2]]>,
    window: &Window,
    width: u64,
    fresh: Fresh,
) -> Result<Reporters, PayloadError> {
    let Some(written) = written else {
        return Ok(anonymous(window, width));
    };
    let max = MAX_MIN_REPORTERS as usize;
    if written.len() > max {
        return Err(PayloadError::new(
            key,
            format_args!(
                "fuse.reporters holds {} reporters, above the {max} a window keeps",
                written.len()
            ),
        ));
    }
    let mut reports: Vec<Report> = Vec::with_capacity(written.len());
    for &[id, at_us] in written {
        if reports.iter().any(|report| report.id == id) {
            return Err(PayloadError::new(
                key,
                format_args!("fuse.reporters names reporter {id} twice"),
            ));
        }
        let at = checked(
            key,
            "fuse.reporters",
            NANOS_PER_MICRO,
            at_us,
            fresh.latest_event(),
        )?;
        reports.push(Report { id, at });
    }
    Ok(Reporters::from_reports(reports))
}

/// One anonymous reporter of `window`'s newest failure (under `rate`, the
/// start of its newest bucket with a failed or slow call), if it has one.
fn anonymous(window: &Window, width: u64) -> Reporters {
    let newest = match window {
        Window::Count(failures) => failures.times().last().copied(),
        Window::Rate(buckets) => buckets
            .entries()
            .iter()
            .rev()
            .find(|(_, counts)| counts.failed > 0 || counts.slow > 0)
            .map(|&(number, _)| number.saturating_mul(width.max(1))),
    };
    Reporters::from_reports(
        newest
            .map(|at| Report { id: ANONYMOUS, at })
            .into_iter()
            .collect(),
    )
}
