//! Verdicts on permits the store granted: settled here when the mirror
//! shows nothing to send, a step on the store otherwise.

use super::conclusion::Conclusion;
use super::error::StoreError;
use super::shared::SharedFuse;
use super::stored::Ticket;
use crate::verdict::Verdict;

impl SharedFuse {
    /// Ends a permit the store granted; `Ok` also when the verdict was
    /// stale.
    #[inline]
    pub(super) fn conclude_in_store(&self, ticket: Ticket, verdict: Verdict) -> Conclusion<'_> {
        let quiet =
            verdict != Verdict::Failure && self.quiet_ticket().is_some_and(|quiet| quiet == ticket);
        if quiet {
            // A success or an ignore of the quiet circuit's own permit:
            // nothing to clear, nothing to send.
            return Conclusion::settled();
        }
        self.conclude_slow(ticket, verdict)
    }

    /// A verdict the quiet mirror does not settle.
    #[inline(never)]
    fn conclude_slow(&self, ticket: Ticket, verdict: Verdict) -> Conclusion<'_> {
        let settled = self.by_mirror(|mirror, staleness| {
            mirror
                .settles(&self.config, &ticket, verdict, staleness)
                .then_some(())
        });
        if settled.is_some() {
            return Conclusion::settled();
        }
        Conclusion::asking(self.conclude_asking(ticket, verdict))
    }

    /// A verdict that asks the store.
    async fn conclude_asking(&self, ticket: Ticket, verdict: Verdict) -> Result<(), StoreError> {
        let ticket = &ticket;
        let step = self.step(None, |stored, now| {
            stored.verdict(&self.config, ticket, verdict, now)
        });
        self.round_trip(step).await.map(drop)
    }
}
