//! A status change with everything it writes: the payout after it, the ledger entries that move
//! its hold, and its events. Every transition of the payout lifecycle (docs/API.md, Payouts,
//! Lifecycle) after creation is planned here, so cancel, KYC, confirmation, submission and the
//! rail's results move money the same way.

use std::fmt;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::model::Payout;
use super::status::{IllegalTransition, PayoutStatus, PayoutTrigger, transition};
use crate::events::{EventKind, OutboxEvent};
use crate::ids::{EventId, LedgerEntryId, ReceiverAccountId};
use crate::ledger::{LedgerEntry, LedgerEntryKind};
use crate::ports::IdGenerator;

/// One planned transition. The store applies it only where the payout is still in
/// `expected` (a conditional update), so it can never apply twice.
#[derive(Debug, Clone, PartialEq)]
pub struct PayoutChange {
    /// The status the payout must still have.
    pub expected: PayoutStatus,
    /// The payout after the change.
    pub payout: Payout,
    /// The ledger entries moving its hold (none for a change that moves no money).
    pub entries: Vec<LedgerEntry>,
    /// `payoutUpdated`, and `payoutFailure` for a change to `failed`.
    pub events: Vec<OutboxEvent>,
    /// The account to mark `failed` with the change (the rail said the receiver is invalid).
    pub account_failure: Option<AccountFailure>,
    /// The audit entry of a change a person asked for (an operator's cancel), written in the
    /// change's transaction; `None` for the merchant's own requests and the rails' answers.
    pub audit: Option<crate::audit::AuditEntry>,
}

/// An account that becomes `failed` together with a payout's failure (docs/API.md,
/// `POST /api/test-helpers/status`).
#[derive(Debug, Clone, PartialEq)]
pub struct AccountFailure {
    /// The account.
    pub account_id: ReceiverAccountId,
    /// When.
    pub updated_at: DateTime<Utc>,
    /// Its `accountUpdate`, written only if the account was not failed already.
    pub event: OutboxEvent,
}

impl PayoutChange {
    /// The change to `balances` the entries add up to: (available, pending).
    pub fn balance_delta(&self) -> (i64, i64) {
        self.entries.iter().fold((0, 0), |(a, p), e| {
            (
                a.saturating_add(e.available_delta),
                p.saturating_add(e.pending_delta),
            )
        })
    }
}

/// How a change from `from` to `to` moves the payout's money: its hold voided back to available
/// when it fails or is cancelled, posted out of pending when it is paid; a paid payout the bank
/// returns gets its amount back in available (`payout_return`; the fee stays charged);
/// untouched otherwise.
fn hold_entries(
    payout: &Payout,
    from: PayoutStatus,
    to: PayoutStatus,
    now: DateTime<Utc>,
    ids: &dyn IdGenerator,
) -> Vec<LedgerEntry> {
    if from == PayoutStatus::Successful {
        return match to {
            PayoutStatus::Failed => vec![LedgerEntry {
                id: LedgerEntryId::from_uuid(ids.new_id()),
                subaccount_id: payout.subaccount_id,
                asset: payout.asset,
                kind: LedgerEntryKind::PayoutReturn,
                available_delta: payout.amount.get(),
                pending_delta: 0,
                payout_id: Some(payout.id),
                created_at: now,
            }],
            _ => Vec::new(),
        };
    }
    let (amount_kind, fee_kind, released) = match to {
        PayoutStatus::Failed | PayoutStatus::Cancelled => {
            (LedgerEntryKind::PayoutVoid, LedgerEntryKind::FeeVoid, true)
        }
        PayoutStatus::Successful => (LedgerEntryKind::PayoutPost, LedgerEntryKind::FeePost, false),
        _ => return Vec::new(),
    };
    let entry = |kind, amount: i64| LedgerEntry {
        id: LedgerEntryId::from_uuid(ids.new_id()),
        subaccount_id: payout.subaccount_id,
        asset: payout.asset,
        kind,
        available_delta: if released { amount } else { 0 },
        pending_delta: -amount,
        payout_id: Some(payout.id),
        created_at: now,
    };
    let mut entries = vec![entry(amount_kind, payout.amount.get())];
    if !payout.fee.is_zero() {
        entries.push(entry(fee_kind, payout.fee.get()));
    }
    entries
}

/// Plans `trigger` for `payout`: the status the table allows, `adjust` for the fields the change
/// also sets (the rail's failure details, the submission time), the hold's entries and the
/// events, all as of `now`.
pub fn plan_change(
    payout: &Payout,
    trigger: PayoutTrigger,
    now: DateTime<Utc>,
    ids: &dyn IdGenerator,
    adjust: impl FnOnce(&mut Payout),
) -> Result<PayoutChange, IllegalTransition> {
    let to = transition(payout.status, trigger)?;
    let mut after = Payout {
        status: to,
        updated_at: now,
        ..payout.clone()
    };
    adjust(&mut after);
    let entries = hold_entries(&after, payout.status, to, now, ids);
    let mut events = vec![OutboxEvent::payout(
        EventKind::PayoutUpdated,
        EventId::from_uuid(ids.new_id()),
        &after,
        now,
    )];
    if to == PayoutStatus::Failed {
        events.push(OutboxEvent::payout(
            EventKind::PayoutFailure,
            EventId::from_uuid(ids.new_id()),
            &after,
            now,
        ));
    }
    Ok(PayoutChange {
        expected: payout.status,
        payout: after,
        entries,
        events,
        account_failure: None,
        audit: None,
    })
}

/// What happened to a receiver or an account that payouts wait for. [`PayoutReaction::plan`]
/// turns it into the [`PayoutTrigger`] of each waiting payout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReactionTrigger {
    /// The receiver's KYC completed: its `unassessed` payouts move on.
    KycCompleted,
    /// The receiver's KYC failed: its `unassessed` payouts fail and release their holds.
    KycFailed,
    /// The account's details were confirmed: its `awaiting` payouts become `pending`.
    AccountConfirmed,
}

/// The payouts' side of a KYC decision or an account confirmation (docs/API.md, Payouts,
/// Lifecycle). The store applying the decision locks the payouts waiting for it
/// ([`Self::waiting_status`]) in the same transaction and asks [`Self::plan`] what each one
/// becomes, so the decision and its payouts' changes commit together.
#[derive(Clone)]
pub struct PayoutReaction {
    trigger: ReactionTrigger,
    now: DateTime<Utc>,
    ids: Arc<dyn IdGenerator>,
}

impl fmt::Debug for PayoutReaction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PayoutReaction")
            .field("trigger", &self.trigger)
            .field("now", &self.now)
            .finish_non_exhaustive()
    }
}

impl PayoutReaction {
    /// The reaction to `trigger` at `now`, with new ids from `ids`.
    pub fn new(trigger: ReactionTrigger, now: DateTime<Utc>, ids: Arc<dyn IdGenerator>) -> Self {
        Self { trigger, now, ids }
    }

    /// What happened.
    pub fn trigger(&self) -> ReactionTrigger {
        self.trigger
    }

    /// The status of the payouts that wait for this trigger.
    pub fn waiting_status(&self) -> PayoutStatus {
        match self.trigger {
            ReactionTrigger::KycCompleted | ReactionTrigger::KycFailed => PayoutStatus::Unassessed,
            ReactionTrigger::AccountConfirmed => PayoutStatus::Awaiting,
        }
    }

    /// The change for one waiting payout; `account_confirmed` is its account's current
    /// confirmation (a completed KYC leads to `pending` or `awaiting` by it).
    pub fn plan(
        &self,
        payout: &Payout,
        account_confirmed: bool,
    ) -> Result<PayoutChange, IllegalTransition> {
        let payout_trigger = match (self.trigger, account_confirmed) {
            (ReactionTrigger::KycCompleted, true) => PayoutTrigger::KycCompletedConfirmed,
            (ReactionTrigger::KycCompleted, false) => PayoutTrigger::KycCompletedUnconfirmed,
            (ReactionTrigger::KycFailed, _) => PayoutTrigger::KycFailed,
            (ReactionTrigger::AccountConfirmed, _) => PayoutTrigger::AccountConfirmed,
        };
        plan_change(payout, payout_trigger, self.now, self.ids.as_ref(), |_| {})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::PayoutBuilder;
    use uuid::Uuid;

    struct Counter(std::sync::atomic::AtomicU64);

    impl IdGenerator for Counter {
        fn new_id(&self) -> Uuid {
            Uuid::from_u128(u128::from(
                self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            ))
        }
        fn random_bytes(&self) -> [u8; 32] {
            [7; 32]
        }
    }

    fn ids() -> Arc<dyn IdGenerator> {
        Arc::new(Counter(std::sync::atomic::AtomicU64::new(1)))
    }

    fn payout(status: PayoutStatus, fee: i64) -> Payout {
        PayoutBuilder::new().status(status).fee(fee).build()
    }

    fn now() -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_100, 0).unwrap_or_default()
    }

    fn kinds(change: &PayoutChange) -> Vec<(LedgerEntryKind, i64, i64)> {
        change
            .entries
            .iter()
            .map(|e| (e.kind, e.available_delta, e.pending_delta))
            .collect()
    }

    #[test]
    fn paid_posts_the_hold_out_of_pending() {
        let ids = ids();
        let change = plan_change(
            &payout(PayoutStatus::InProgress, 50),
            PayoutTrigger::RailSucceeded,
            now(),
            ids.as_ref(),
            |_| {},
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(change.expected, PayoutStatus::InProgress);
        assert_eq!(change.payout.status, PayoutStatus::Successful);
        assert_eq!(change.payout.updated_at, now());
        assert_eq!(
            kinds(&change),
            [
                (LedgerEntryKind::PayoutPost, 0, -1_000),
                (LedgerEntryKind::FeePost, 0, -50)
            ]
        );
        assert_eq!(change.balance_delta(), (0, -1_050));
        let names: Vec<_> = change.events.iter().map(|e| e.kind).collect();
        assert_eq!(names, [EventKind::PayoutUpdated]);
    }

    #[test]
    fn failure_voids_the_hold_and_announces_it_twice() {
        let ids = ids();
        let change = plan_change(
            &payout(PayoutStatus::InProgress, 0),
            PayoutTrigger::RailFailed,
            now(),
            ids.as_ref(),
            |p| {
                p.receiver_is_invalid = true;
                p.failure_reason = Some("closed".to_owned());
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        // No fee: one entry only.
        assert_eq!(
            kinds(&change),
            [(LedgerEntryKind::PayoutVoid, 1_000, -1_000)]
        );
        assert!(change.payout.receiver_is_invalid);
        let names: Vec<_> = change.events.iter().map(|e| e.kind).collect();
        assert_eq!(names, [EventKind::PayoutUpdated, EventKind::PayoutFailure]);
        assert_eq!(change.events[1].payload["status"], "failed");
        assert_ne!(change.events[0].id, change.events[1].id);
    }

    #[test]
    fn a_returned_payout_gets_its_amount_back_and_keeps_its_fee_charged() {
        let ids = ids();
        let change = plan_change(
            &payout(PayoutStatus::Successful, 50),
            PayoutTrigger::Returned,
            now(),
            ids.as_ref(),
            |p| {
                p.receiver_is_invalid = true;
                p.failure_reason = Some("Account closed".to_owned());
                p.return_code = Some("R02".to_owned());
            },
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(change.expected, PayoutStatus::Successful);
        assert_eq!(change.payout.status, PayoutStatus::Failed);
        // Posted already, so nothing is pending: the amount goes straight back to available.
        assert_eq!(kinds(&change), [(LedgerEntryKind::PayoutReturn, 1_000, 0)]);
        assert_eq!(change.balance_delta(), (1_000, 0));
        let names: Vec<_> = change.events.iter().map(|e| e.kind).collect();
        assert_eq!(names, [EventKind::PayoutUpdated, EventKind::PayoutFailure]);
        for event in &change.events {
            assert_eq!(event.payload["status"], "failed");
            assert_eq!(event.payload["return_code"], "R02");
            assert_eq!(event.payload["return_reason"], "Account closed");
        }
        // Only a paid payout can be returned.
        for status in [
            PayoutStatus::InProgress,
            PayoutStatus::Failed,
            PayoutStatus::Pending,
        ] {
            assert!(
                plan_change(
                    &payout(status, 0),
                    PayoutTrigger::Returned,
                    now(),
                    ids.as_ref(),
                    |_| {}
                )
                .is_err(),
                "{status:?}"
            );
        }
    }

    #[test]
    fn payloads_without_a_bank_code_keep_their_shape() {
        let ids = ids();
        let change = plan_change(
            &payout(PayoutStatus::InProgress, 0),
            PayoutTrigger::RailFailed,
            now(),
            ids.as_ref(),
            |p| p.failure_reason = Some("sandbox".to_owned()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(change.events[1].payload.get("return_code").is_none());
        assert!(change.events[1].payload.get("return_reason").is_none());
    }

    #[test]
    fn moves_that_keep_the_hold_write_no_entries() {
        let ids = ids();
        let change = plan_change(
            &payout(PayoutStatus::Pending, 50),
            PayoutTrigger::Submitted,
            now(),
            ids.as_ref(),
            |p| p.submitted_at = Some(now()),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert!(change.entries.is_empty());
        assert_eq!(change.payout.submitted_at, Some(now()));
        assert_eq!(change.payout.status, PayoutStatus::InProgress);
    }

    #[test]
    fn illegal_changes_are_refused() {
        let ids = ids();
        let err = plan_change(
            &payout(PayoutStatus::Successful, 0),
            PayoutTrigger::Cancel,
            now(),
            ids.as_ref(),
            |_| {},
        );
        assert!(err.is_err());
    }

    #[test]
    fn reactions_follow_the_table() {
        let cases = [
            (
                ReactionTrigger::KycCompleted,
                true,
                PayoutStatus::Pending,
                0,
            ),
            (
                ReactionTrigger::KycCompleted,
                false,
                PayoutStatus::Awaiting,
                0,
            ),
            (ReactionTrigger::KycFailed, true, PayoutStatus::Failed, 2),
            (
                ReactionTrigger::AccountConfirmed,
                true,
                PayoutStatus::Pending,
                0,
            ),
        ];
        for (trigger, confirmed, to, entries) in cases {
            let reaction = PayoutReaction::new(trigger, now(), ids());
            let from = reaction.waiting_status();
            let change = reaction
                .plan(&payout(from, 50), confirmed)
                .unwrap_or_else(|e| panic!("{trigger:?}: {e}"));
            assert_eq!(change.payout.status, to, "{trigger:?}");
            assert_eq!(change.entries.len(), entries, "{trigger:?}");
        }
        // A payout that moved on meanwhile is refused, not moved again.
        let reaction = PayoutReaction::new(ReactionTrigger::KycCompleted, now(), ids());
        assert!(
            reaction
                .plan(&payout(PayoutStatus::Cancelled, 0), true)
                .is_err()
        );
    }
}
