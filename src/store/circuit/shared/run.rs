//! Running a call under a shared circuit: [`SharedFuse::run_async`] and
//! [`SharedFuse::run_async_with`], judged as [`Fuse`](crate::Fuse)'s are.

use std::future::Future;

use crate::classify::Classify;
use crate::store::backend::error::Error;
use crate::store::circuit::shared::SharedFuse;
use crate::verdict::{Verdict, judge, judge_with};

impl SharedFuse {
    /// Runs `fut` if the circuit admits it and records its outcome (as
    /// [`Fuse::run_async`](crate::Fuse::run_async)). A verdict the store
    /// could not take is reported to the listeners and does not change the
    /// call's result.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// let out = fuse.run_async(async { Err::<(), _>(fuse_breaker::classify::FailureKind::Timeout) }).await;
    /// assert!(out.is_err());
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    pub async fn run_async<T, E, F>(&self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
        E: Classify,
    {
        self.run_judged(fut, |outcome| judge(outcome, || self.settings()))
            .await
    }

    /// Like [`run_async`](Self::run_async), with the classification of
    /// this call given (as
    /// [`Fuse::run_async_with`](crate::Fuse::run_async_with)).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use fuse_breaker::store::{MemoryStore, SharedFuse};
    ///
    /// # futures::executor::block_on(async {
    /// let fuse = fuse_breaker::Fuse::builder("billing").store(Arc::new(MemoryStore::new())).build();
    /// let out = fuse.run_async_with(async { Err::<(), _>("503") }, |e| *e == "503", |_| true).await;
    /// assert!(out.is_err());
    /// assert_eq!(fuse.snapshot().await?.failures.len(), 1);
    /// # Ok::<(), fuse_breaker::store::StoreError>(())
    /// # }).unwrap();
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
        self.run_judged(fut, |outcome| judge_with(outcome, is_failure, is_success))
            .await
    }

    async fn run_judged<T, E, F>(
        &self,
        fut: F,
        judge: impl FnOnce(&Result<T, E>) -> Verdict,
    ) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        // Both round trips, when there are any, are part of this future:
        // no box of their own.
        let permit = self.acquire_in_place().await.map_err(Error::Refused)?;
        let outcome = fut.await;
        // A verdict the store did not take was reported where it failed.
        let _ = permit.conclude_in_place(judge(&outcome), None).await;
        outcome.map_err(Error::Inner)
    }
}
