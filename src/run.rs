//! Running a call under a circuit: [`Fuse::run`] and its variants.

use std::future::Future;

use crate::classify::Classify;
use crate::error::Error;
use crate::fuse::Fuse;
use crate::permit::Permit;
use crate::verdict::{Verdict, judge_with};

impl Fuse {
    /// Runs `f` if the circuit admits it and records its outcome: `Ok` is a
    /// success; an error is a counted failure when its
    /// [`Classify::failure_kind`] counts under the configuration, and is
    /// ignored otherwise. A panic in `f` is an ignore verdict and goes on
    /// unwinding.
    ///
    /// ```
    /// use std::io::{Error as IoError, ErrorKind};
    /// use fuse_breaker::{Config, Error, Fuse, State};
    ///
    /// let fuse = Fuse::new("billing", Config::builder().failure_threshold(2).build()?);
    /// for _ in 0..2 {
    ///     let out = fuse.run(|| Err::<(), _>(IoError::from(ErrorKind::TimedOut)));
    ///     assert!(matches!(out, Err(Error::Inner(_))));
    /// }
    /// assert_eq!(fuse.state(), State::Open);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[allow(clippy::inline_always)] // measured: the closed path inlines whole
    #[inline(always)]
    pub fn run<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
        E: Classify,
    {
        let permit = self.try_acquire()?;
        settle(permit, f(), |outcome| self.judge(outcome))
    }

    /// Like [`run`](Self::run), with the classification of this call given:
    /// `is_failure(&err)` says whether an error counts; `is_success(&value)`
    /// returning false makes an `Ok` a counted failure (the value is still
    /// returned).
    ///
    /// ```
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let fuse = Fuse::new("search", Config::default());
    /// let hits = fuse.run_with(
    ///     || Ok::<Vec<u32>, String>(vec![]),
    ///     |_err| true,
    ///     |hits| !hits.is_empty(), // an empty answer counts as a failure
    /// );
    /// assert_eq!(hits.ok(), Some(vec![]));
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// ```
    #[allow(clippy::inline_always)] // measured: the closed path inlines whole
    #[inline(always)]
    pub fn run_with<T, E, F, IsFailure, IsSuccess>(
        &self,
        f: F,
        is_failure: IsFailure,
        is_success: IsSuccess,
    ) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
        IsFailure: FnOnce(&E) -> bool,
        IsSuccess: FnOnce(&T) -> bool,
    {
        let permit = self.try_acquire()?;
        settle(permit, f(), |outcome| {
            judge_with(outcome, is_failure, is_success)
        })
    }

    /// Runs the future `fut` if the circuit admits it, like
    /// [`run`](Self::run). Admission happens on the first poll: a future
    /// never polled takes no permit, and a future dropped before it
    /// finishes is an ignore verdict. Works on any executor.
    ///
    /// ```
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let fuse = Fuse::new("billing", Config::default());
    /// let call = fuse.run_async(async { Ok::<_, std::io::Error>(42) });
    /// assert_eq!(futures::executor::block_on(call).ok(), Some(42));
    /// ```
    pub async fn run_async<T, E, F>(&self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
        E: Classify,
    {
        let permit = self.try_acquire()?;
        settle(permit, fut.await, |outcome| self.judge(outcome))
    }

    /// Like [`run_async`](Self::run_async), with the classification of this
    /// call given, as in [`run_with`](Self::run_with).
    ///
    /// ```
    /// use fuse_breaker::{Config, Fuse};
    ///
    /// let fuse = Fuse::new("billing", Config::default());
    /// let call = fuse.run_async_with(async { Err::<(), _>("503") }, |e| *e == "503", |_| true);
    /// assert!(futures::executor::block_on(call).is_err());
    /// assert_eq!(fuse.snapshot().failures.len(), 1);
    /// ```
    pub async fn run_async_with<T, E, F, IsFailure, IsSuccess>(
        &self,
        fut: F,
        is_failure: IsFailure,
        is_success: IsSuccess,
    ) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
        IsFailure: FnOnce(&E) -> bool,
        IsSuccess: FnOnce(&T) -> bool,
    {
        let permit = self.try_acquire()?;
        settle(permit, fut.await, |outcome| {
            judge_with(outcome, is_failure, is_success)
        })
    }

    /// The verdict of [`run`](Self::run): `Ok` is a success, an error is
    /// judged by its kind under this circuit's configuration.
    #[inline]
    fn judge<T, E: Classify>(&self, outcome: &Result<T, E>) -> Verdict {
        // The settings are read for an error only: a success reads none.
        crate::verdict::judge(outcome, || self.config())
    }
}

/// Ends `permit` with the verdict `judge` gives the outcome and hands the
/// outcome back.
#[allow(clippy::inline_always)] // measured: the closed path inlines whole
#[inline(always)]
fn settle<T, E>(
    permit: Permit<'_>,
    outcome: Result<T, E>,
    judge: impl FnOnce(&Result<T, E>) -> Verdict,
) -> Result<T, Error<E>> {
    permit.conclude(judge(&outcome));
    outcome.map_err(Error::Inner)
}
