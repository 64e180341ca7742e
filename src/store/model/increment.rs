//! [`Increment`]: closed verdicts added to a `rate` window where it is kept,
//! in the store's own atomic step (SPEC §9: "increments that commute").
//!
//! Under `rate` every closed verdict changes the window, so in strict mode
//! every verdict writes. A compare-and-set would make two processes'
//! verdicts race (one of them reads again and retries: a failing process
//! lost to every success landing between its read and its write); an
//! increment does not: the store adds the calls to the payload as it holds
//! it when the step runs, so increments commute with each other.
//!
//! Openings stay decisions of the crate's model: a success never opens a
//! circuit, and a failure or a slow call ([`Increment::reported`]) is an
//! increment that also records its reporter (SPEC §8's quorum) and hands
//! back the payload it wrote, with the store's time; the model reads it
//! and decides whether the window now opens the circuit. Only then does
//! the verdict take a compare-and-set step, the opening (of the ticket's
//! epoch: of two processes that both found their failure opening it, the
//! second finds the epoch over and writes nothing). A failure is never
//! lost: the increment recorded it before any opening was decided.
//!
//! An increment applies only to a payload this crate wrote for a closed circuit
//! of the permit's generation and epoch with a `rate` window of the same
//! width: the payload's text must start with [`Increment::prefix`] (which says
//! all of that), then hold the window's buckets, then end with
//! [`Increment::SUFFIX`] or with the window's reporters (SPEC §8's quorum:
//! [`Increment::REPORTERS`], numbers, `]}}`), which a success leaves as
//! they are. Anything else (an absent key, another epoch, a payload
//! milon/fuse wrote) is not incremented, and the verdict takes the model's
//! step. [`Increment::apply`] is the rule every store applies; a differential
//! test pins it to the model, and the Redis script and SQL statements to it.

use std::collections::BTreeMap;
use std::time::Duration;

use crate::config::Config;
use crate::store::model::payload;
use crate::store::model::stored::Ticket;
use crate::verdict::Verdict;

/// Calls to add to the current bucket of a `rate` window kept in a store,
/// in the store's own atomic step, so that two processes' closed successes
/// commute instead of racing a compare-and-set: the text a payload must
/// start with (a closed circuit of this generation and epoch, with a
/// window of this width),
/// the bucket width in microseconds, how many buckets the window keeps,
/// how many calls to add, and the time-to-live of the written payload.
///
/// ```
/// use std::time::Duration;
/// use fuse_breaker::store::Increment;
///
/// let increment = Increment::new(b"{\"p\":".to_vec(), 6_000_000, 10, 1, Duration::from_secs(120));
/// // 1,700,000,000 s falls in bucket 283,333,333 of 6 s buckets.
/// let now = Duration::from_secs(1_700_000_000);
/// let written = increment.apply(b"{\"p\":[[283333332,4,2,0]]}}}", now).unwrap();
/// assert_eq!(written, b"{\"p\":[[283333332,4,2,0],[283333333,1,0,0]]}}}");
/// // Not a payload of that circuit: not incremented.
/// assert_eq!(increment.apply(b"{\"q\":[]}}}", now), None);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Increment {
    prefix: Vec<u8>,
    width_us: u64,
    buckets: u32,
    calls: u64,
    ttl: Duration,
    /// Of the calls, how many failed and how many were slow.
    failed: u64,
    slow: u64,
    /// Who reported them, and how many reporters the window keeps (a
    /// failure's or a slow call's, see [`Increment::reported`]).
    reporter: Option<(u64, u32)>,
}

impl Increment {
    /// The largest number an increment reads or writes in a bucket (15
    /// digits, so that Redis's Lua, whose numbers are doubles, holds each
    /// exactly).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::Increment::MAX, 999_999_999_999_999);
    /// ```
    pub const MAX: u64 = 999_999_999_999_999;

    /// What an incremented payload ends with, after its buckets, when its
    /// window names no reporter.
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::Increment::SUFFIX, "}}}");
    /// ```
    pub const SUFFIX: &'static str = "}}}";

    /// What follows an incremented payload's buckets when its window names
    /// reporters: then `[id,at_us]` entries, and `]}}` (kept as written).
    ///
    /// ```
    /// assert_eq!(fuse_breaker::store::Increment::REPORTERS, "},\"reporters\":[");
    /// ```
    pub const REPORTERS: &'static str = "},\"reporters\":[";

    /// An increment of `calls` calls on payloads starting with `prefix`, in
    /// buckets `width_us` microseconds wide (at least one), a window of
    /// `buckets` buckets, written to live `ttl`.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 0, 10, 1, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.width_us(), 1);
    /// ```
    pub fn new(prefix: Vec<u8>, width_us: u64, buckets: u32, calls: u64, ttl: Duration) -> Self {
        Increment {
            prefix,
            width_us: width_us.max(1),
            buckets: buckets.max(1),
            calls,
            ttl,
            failed: 0,
            slow: 0,
            reporter: None,
        }
    }

    /// This increment with `failed` of its calls failed and `slow` of them
    /// slow (each at most the calls), reported by `reporter` (SPEC §8's
    /// quorum: a number of at most [`Increment::MAX`]) in a window that
    /// keeps `kept` reporters (`min_reporters`, at least one): it records
    /// the reporter as the model does, and [`answers`](Self::answers).
    ///
    /// ```
    /// use std::time::Duration;
    /// use fuse_breaker::store::Increment;
    ///
    /// let failure = Increment::new(b"[".to_vec(), 1_000_000, 10, 1, Duration::from_secs(60))
    ///     .reported(1, 0, 7, 2);
    /// assert_eq!((failure.failed(), failure.slow(), failure.reporter()), (1, 0, Some(7)));
    /// assert!(failure.answers());
    /// // Reporter 7's failure at 10 s joins reporter 9's of 9 s.
    /// let after = failure.apply(b"[[[9,4,1,0]]},\"reporters\":[[9,9000000]]}}", Duration::from_secs(10));
    /// assert_eq!(
    ///     after.as_deref(),
    ///     Some(&b"[[[9,4,1,0],[10,1,1,0]]},\"reporters\":[[9,9000000],[7,10000000]]}}"[..])
    /// );
    /// ```
    #[must_use]
    pub fn reported(self, failed: u64, slow: u64, reporter: u64, kept: u32) -> Self {
        Increment {
            failed: failed.min(self.calls),
            slow: slow.min(self.calls),
            reporter: Some((reporter, kept.max(1))),
            ..self
        }
    }

    /// This increment with `failed` of its calls failed (at most the
    /// calls) and no reporter recorded: counts that decide nothing (the
    /// fleet throttle's refused requests, kept beside a circuit's key), so
    /// it does not answer.
    #[must_use]
    pub(crate) fn counted(self, failed: u64) -> Self {
        Increment {
            failed: failed.min(self.calls),
            ..self
        }
    }

    /// The increment of one closed success of `ticket` under `config`, if a
    /// store can apply one: the `rate` policy, a bucket width of whole
    /// microseconds (the stores' time unit), and a ticket of a named
    /// generation.
    pub(crate) fn success(config: &Config, ticket: &Ticket, ttl: Duration) -> Option<Self> {
        let width = payload::width(config);
        let fits = config.policy().counts_calls()
            && width.is_multiple_of(1_000)
            && ticket.generation != 0
            && !ticket.is_probe();
        fits.then(|| {
            let prefix = payload::rate_prefix(ticket.generation, ticket.epoch, width);
            Increment::new(prefix, width / 1_000, config.window_buckets(), 1, ttl)
        })
    }

    /// The increment of the closed `verdict` of `ticket` under `config` on
    /// a call that was `slow` or not, reported by `reporter`, if a store
    /// can apply one (see [`success`](Self::success)): a success that was
    /// not slow, or a failure or a slow call, which records its reporter
    /// and answers with the payload written. `None` for an ignore, a
    /// probe, or a reporter above [`Increment::MAX`].
    pub(crate) fn verdict(
        config: &Config,
        ticket: &Ticket,
        verdict: Verdict,
        slow: bool,
        reporter: u64,
        ttl: Duration,
    ) -> Option<Self> {
        let success = Increment::success(config, ticket, ttl)?;
        let failed = verdict == Verdict::Failure;
        match verdict {
            Verdict::Ignore => None,
            Verdict::Success if !slow => Some(success),
            _ => (reporter <= Increment::MAX).then(|| {
                success.reported(
                    u64::from(failed),
                    u64::from(slow),
                    reporter,
                    config.min_reporters(),
                )
            }),
        }
    }

    /// The text an incremented payload starts with, before its buckets.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 1, 10, 1, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.prefix(), b"{");
    /// ```
    pub fn prefix(&self) -> &[u8] {
        &self.prefix
    }

    /// The bucket width, in microseconds.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 1, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.width_us(), 6);
    /// ```
    pub fn width_us(&self) -> u64 {
        self.width_us
    }

    /// How many buckets the window keeps.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 1, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.buckets(), 10);
    /// ```
    pub fn buckets(&self) -> u32 {
        self.buckets
    }

    /// How many calls the increment adds.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.calls(), 3);
    /// ```
    pub fn calls(&self) -> u64 {
        self.calls
    }

    /// How many of the calls failed.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.failed(), 0);
    /// assert_eq!(increment.reported(2, 0, 1, 1).failed(), 2);
    /// ```
    pub fn failed(&self) -> u64 {
        self.failed
    }

    /// How many of the calls were slow.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.reported(0, 1, 1, 1).slow(), 1);
    /// ```
    pub fn slow(&self) -> u64 {
        self.slow
    }

    /// Who reported the calls, for an increment of failed or slow calls
    /// ([`reported`](Self::reported)).
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.reporter(), None);
    /// assert_eq!(increment.reported(1, 0, 5, 2).reporter(), Some(5));
    /// ```
    pub fn reporter(&self) -> Option<u64> {
        self.reporter.map(|(id, _)| id)
    }

    /// How many reporters the window keeps (1 for an increment that
    /// records none).
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.reported(1, 0, 5, 3).reporters_kept(), 3);
    /// ```
    pub fn reporters_kept(&self) -> u32 {
        self.reporter.map_or(1, |(_, kept)| kept)
    }

    /// Whether a store hands back the payload it wrote and its time
    /// ([`Incremented::Wrote`](crate::store::Incremented::Wrote)): an increment of failed or slow calls,
    /// whose caller decides from them whether the circuit opens.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert!(!increment.answers());
    /// assert!(increment.reported(1, 0, 5, 2).answers());
    /// ```
    pub fn answers(&self) -> bool {
        self.reporter.is_some()
    }

    /// How long the written payload lives.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6, 10, 3, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.ttl(), std::time::Duration::from_secs(1));
    /// ```
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// The bucket the store's time `now` falls in.
    ///
    /// ```
    /// let increment = fuse_breaker::store::Increment::new(b"{".to_vec(), 6_000_000, 10, 1, std::time::Duration::from_secs(1));
    /// assert_eq!(increment.bucket(std::time::Duration::from_secs(12)), 2);
    /// ```
    pub fn bucket(&self, now: Duration) -> u64 {
        micros(now) / self.width_us
    }

    /// The payload after the increment, at the store's time `now`, or `None`
    /// when `payload` is not one it applies to: the text between
    /// [`prefix`](Self::prefix) and the first `}` after it must be a
    /// JSON array of `[bucket, calls, failed, slow]` arrays of numbers no
    /// larger than [`Increment::MAX`] (written without spaces, as the crate
    /// writes it), and every sum too; what follows must be
    /// [`SUFFIX`](Self::SUFFIX), or [`REPORTERS`](Self::REPORTERS), digits,
    /// commas and brackets, and `]}}`, and is kept as it is.
    ///
    /// An increment of failed or slow calls ([`reported`](Self::reported))
    /// records its reporter as the model does: the reporters follow the
    /// buckets as `[id, at_us]` entries ([`REPORTERS`](Self::REPORTERS),
    /// each id once, ids no larger than [`Increment::MAX`], times below
    /// 2^53), or there
    /// are none (`}}}`, which it applies to only if no bucket holds a
    /// failed or slow call: such a window's failures are an anonymous
    /// reporter's, and the model's step decides); the reporter's entry
    /// becomes the later of its own and `now`, the entries whose time is
    /// not in a live bucket are dropped, then all but the `kept` newest
    /// (by time, then id), and they are written by time, then id (none
    /// left: `}}}`).
    ///
    /// The rule (the model's, for a closed success): the current bucket is
    /// `now`'s, or the newest in the window if that is later (a clock that
    /// went back); buckets that are not the current one or among the
    /// `buckets - 1` before it are dropped; the calls are added to `now`'s
    /// bucket if it is one of those (a clock that went back by more than
    /// the window leaves them out), so that no more than `buckets` buckets
    /// are ever written; buckets are written oldest first, one entry each.
    ///
    /// ```
    /// # use std::time::Duration;
    /// let increment = fuse_breaker::store::Increment::new(b"[".to_vec(), 1_000_000, 2, 1, Duration::from_secs(1));
    /// // Window of 2 one-second buckets at 10 s: buckets 9 and 10; 8 leaves.
    /// let after = increment.apply(b"[[[8,1,1,0],[9,2,0,0]]}}}", Duration::from_secs(10));
    /// assert_eq!(after.as_deref(), Some(&b"[[[9,2,0,0],[10,1,0,0]]}}}"[..]));
    /// // The window's reporters are kept.
    /// let named = increment.apply(b"[[[9,2,1,0]]},\"reporters\":[[7,9000000]]}}", Duration::from_secs(10));
    /// assert_eq!(named.as_deref(), Some(&b"[[[9,2,1,0],[10,1,0,0]]},\"reporters\":[[7,9000000]]}}"[..]));
    /// ```
    pub fn apply(&self, payload: &[u8], now: Duration) -> Option<Vec<u8>> {
        let rest = payload.strip_prefix(self.prefix.as_slice())?;
        let (body, tail) = rest.split_at(rest.iter().position(|&b| b == b'}')?);
        if body.iter().any(u8::is_ascii_whitespace) || !Self::kept(tail) {
            return None;
        }
        let entries: Vec<[u64; 4]> = serde_json::from_slice(body).ok()?;
        if entries.iter().flatten().any(|&n| n > Increment::MAX) {
            return None;
        }
        let bucket = self.bucket(now);
        if bucket > Increment::MAX {
            return None;
        }
        let newest = entries.iter().map(|e| e[0]).max().unwrap_or(0);
        let current = bucket.max(newest);
        let live = |b: u64| b <= current && current - b < u64::from(self.buckets);
        let mut window: BTreeMap<u64, [u64; 3]> = BTreeMap::new();
        let sums = entries
            .iter()
            .filter(|e| live(e[0]))
            .map(|e| (e[0], [e[1], e[2], e[3]]))
            .chain(live(bucket).then_some((bucket, [self.calls, self.failed, self.slow])));
        for (b, counts) in sums {
            let sum = window.entry(b).or_default();
            for (total, n) in sum.iter_mut().zip(counts) {
                *total = total.checked_add(n).filter(|&t| t <= Increment::MAX)?;
            }
        }
        let mut written = self.prefix.clone();
        written.push(b'[');
        for (at, (b, [calls, failed, slow])) in window.into_iter().enumerate() {
            if at > 0 {
                written.push(b',');
            }
            written.extend(format!("[{b},{calls},{failed},{slow}]").into_bytes());
        }
        written.push(b']');
        match self.reporter {
            None => written.extend_from_slice(tail),
            Some((id, kept)) => {
                let reports = Self::reports(&entries, tail)?;
                let at = Some(micros(now)).filter(|&at| at <= MAX_TIME_US)?;
                let covered = |at: u64| live(at / self.width_us);
                written.extend(Self::report(reports, id, kept, at, covered));
            }
        }
        Some(written)
    }

    /// The reporters `tail` names, as `(at_us, id)`, if an increment of
    /// failed or slow calls applies to it (see [`apply`](Self::apply)).
    fn reports(entries: &[[u64; 4]], tail: &[u8]) -> Option<Vec<(u64, u64)>> {
        if tail == Self::SUFFIX.as_bytes() {
            let failures = entries.iter().any(|e| e[2] > 0 || e[3] > 0);
            return (!failures).then(Vec::new);
        }
        let named = tail.strip_prefix(Self::REPORTERS.as_bytes())?;
        let list = [b"[", named.strip_suffix(b"]}}")?, b"]"].concat();
        let list: Vec<[u64; 2]> = serde_json::from_slice(&list).ok()?;
        let mut reports = Vec::with_capacity(list.len());
        for [id, at] in list {
            if id > Increment::MAX
                || at > MAX_TIME_US
                || reports.iter().any(|r: &(u64, u64)| r.1 == id)
            {
                return None;
            }
            reports.push((at, id));
        }
        Some(reports)
    }

    /// What follows the buckets once reporter `id`'s call at `at`
    /// microseconds is recorded among `reports` (see
    /// [`apply`](Self::apply)), `covered` saying whether a time is in a
    /// live bucket.
    fn report(
        mut reports: Vec<(u64, u64)>,
        id: u64,
        kept: u32,
        at: u64,
        covered: impl Fn(u64) -> bool,
    ) -> Vec<u8> {
        let at = match reports.iter().position(|r| r.1 == id) {
            Some(found) => reports.remove(found).0.max(at),
            None => at,
        };
        reports.push((at, id));
        reports.retain(|r| covered(r.0));
        reports.sort_unstable();
        let extra = reports.len().saturating_sub(kept as usize);
        reports.drain(..extra);
        if reports.is_empty() {
            return Self::SUFFIX.as_bytes().to_vec();
        }
        let entries: Vec<String> = reports
            .iter()
            .map(|(at, id)| format!("[{id},{at}]"))
            .collect();
        format!("{}{}]}}}}", Self::REPORTERS, entries.join(",")).into_bytes()
    }

    /// Whether `tail`, what follows a payload's buckets, is one an
    /// increment keeps: [`SUFFIX`](Self::SUFFIX), or the window's
    /// reporters.
    fn kept(tail: &[u8]) -> bool {
        if tail == Self::SUFFIX.as_bytes() {
            return true;
        }
        tail.strip_prefix(Self::REPORTERS.as_bytes())
            .and_then(|rest| rest.strip_suffix(b"]}}"))
            .is_some_and(|entries| {
                entries
                    .iter()
                    .all(|b| b.is_ascii_digit() || matches!(b, b',' | b'[' | b']'))
            })
    }
}

/// The latest reporter's time an increment reads or writes, in
/// microseconds (2^53 - 1, in the year 2255, so that Redis's Lua holds each
/// exactly).
const MAX_TIME_US: u64 = (1 << 53) - 1;

/// `now` in whole microseconds.
fn micros(now: Duration) -> u64 {
    u64::try_from(now.as_micros()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests;
