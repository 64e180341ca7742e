//! The fleet's throttle window (SPEC §11): the `requests` and `accepts` of
//! a shared circuit's closed epoch, summed over every process.
//!
//! They are kept beside the circuit's key, under [`key`], in a record of
//! their own: buckets of the policy window's width that every process adds
//! its counts to by an [`Increment`] (so that two processes' counts commute
//! and neither is lost), and that every process reads back to compute the
//! share it sheds. The record is
//! `{"fuse_throttle":{"generation":G,"epoch":E,"asked":{"width_us":W,"buckets":[[bucket,requests,refused,0],...]}}}`,
//! `refused` being the requests that were not accepts (an increment's
//! failed calls): the form an increment applies to, named by the closed
//! epoch it counts. A process of a later epoch replaces a record of an
//! earlier one (or of no generation yet, or one it cannot read) by a
//! compare-and-set; a process of an earlier epoch leaves a later one's
//! alone, and its counts are dropped (they are stale: the window they
//! belonged to is over).

use std::time::Duration;

use serde::Deserialize;

use crate::config::{Config, MAX_WINDOW_BUCKETS};
use crate::grade::throttle::Asked;
use crate::store::model::increment::Increment;
use crate::store::model::payload;

/// What a circuit's key is followed by to name its fleet throttle's
/// record (SPEC §11): no circuit's name may end with it. An operator's
/// listing of a store's circuits leaves these keys out.
///
/// ```
/// assert_eq!(fuse_breaker::store::THROTTLE_SUFFIX, "#throttle");
/// ```
pub const THROTTLE_SUFFIX: &str = "#throttle";

/// What a fleet throttle's record starts with.
const START: &str = "{\"fuse_throttle\":";

pub(crate) use crate::store::model::stored::{Share, Tag};

/// The key of the fleet throttle's record of the circuit under `key`.
pub(crate) fn key(key: &str) -> String {
    format!("{key}{THROTTLE_SUFFIX}")
}

/// The increment that adds `counts` to the window of `tag` under
/// `config` (buckets of its policy window's width, in whole microseconds),
/// written to live `ttl`.
pub(crate) fn increment(config: &Config, tag: Tag, counts: Asked, ttl: Duration) -> Increment {
    let width_us = (payload::width(config) / 1_000).max(1);
    let prefix = format!(
        "{START}{{\"generation\":{},\"epoch\":{},\"asked\":{{\"width_us\":{width_us},\"buckets\":",
        tag.generation, tag.epoch
    );
    let refused = counts.requests.saturating_sub(counts.accepts);
    Increment::new(
        prefix.into_bytes(),
        width_us,
        config.window_buckets(),
        counts.requests,
        ttl,
    )
    .counted(refused)
}

/// A record of `increment`'s window holding only its counts, at the
/// store's time `now` (what replaces a record of another epoch).
pub(crate) fn fresh(increment: &Increment, now: Duration) -> Option<Vec<u8>> {
    let empty = [increment.prefix(), b"[]", Increment::SUFFIX.as_bytes()].concat();
    increment.apply(&empty, now)
}

/// What a process of `tag` finds in the record a store holds.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// The record of `tag`'s window, with its requests and accepts at the
    /// time it was read.
    Ours(Asked),
    /// A record of a later epoch of the same generation, or of a named
    /// generation where `tag` has none yet: `tag`'s window is over.
    Later,
    /// Nothing to keep: absent, unreadable, or of an earlier epoch (or
    /// another generation): a process of `tag` writes its own in its place.
    Replaceable,
}

/// What `payload` (the record as a store holds it, read at the store's
/// time `now`) is to a process counting `tag`'s window under `config`.
pub(crate) fn held(config: &Config, payload: Option<&[u8]>, tag: Tag, now: Duration) -> Held {
    let Some(record) = payload.and_then(|p| serde_json::from_slice::<Record>(p).ok()) else {
        return Held::Replaceable;
    };
    let record = record.fuse_throttle;
    let of = Tag {
        generation: record.generation,
        epoch: record.epoch,
    };
    let later = (of.generation == tag.generation && of.epoch > tag.epoch)
        || (tag.generation == 0 && of.generation != 0);
    if later {
        return Held::Later;
    }
    if of != tag {
        return Held::Replaceable;
    }
    record
        .asked
        .sum(config, now)
        .map_or(Held::Replaceable, Held::Ours)
}

/// The share `config`'s throttle sheds for `asked` of `tag`.
pub(crate) fn share(config: &Config, tag: Tag, asked: Asked) -> Share {
    Share {
        tag,
        shed: crate::grade::throttle::shed(config, asked),
    }
}

#[derive(Deserialize)]
struct Record {
    fuse_throttle: Inner,
}

#[derive(Deserialize)]
struct Inner {
    generation: u64,
    epoch: u64,
    asked: Window,
}

#[derive(Deserialize)]
struct Window {
    width_us: u64,
    buckets: Vec<[u64; 4]>,
}

impl Window {
    /// The requests and accepts in the buckets the window of `config`
    /// holds at the store's time `now` (as an increment keeps them: the
    /// current bucket is `now`'s or the newest written, whichever is
    /// later); `None` for a window this crate did not write (another
    /// width, too many buckets, more refused requests than requests).
    fn sum(&self, config: &Config, now: Duration) -> Option<Asked> {
        let width_us = (payload::width(config) / 1_000).max(1);
        if self.width_us != width_us || self.buckets.len() > MAX_WINDOW_BUCKETS as usize {
            return None;
        }
        let now_us = u64::try_from(now.as_micros()).unwrap_or(u64::MAX);
        let newest = self.buckets.iter().map(|b| b[0]).max().unwrap_or(0);
        let current = (now_us / width_us).max(newest);
        let kept = u64::from(config.window_buckets());
        let mut asked = Asked::default();
        for &[bucket, requests, refused, _] in &self.buckets {
            if refused > requests {
                return None;
            }
            if current - bucket < kept {
                asked.requests = asked.requests.saturating_add(requests);
                asked.accepts = asked.accepts.saturating_add(requests - refused);
            }
        }
        Some(asked)
    }
}

#[cfg(test)]
mod tests;
