//! The operator's KYC decision (`payoutd admin kyc`): with the `manual` KYC provider, receivers
//! stay KYC `pending` until an operator decides. The decision has the same
//! effects as the provider's (the sandbox helper's): [`plan_kyc`] plans both. The operator
//! knows no subaccount, so the receiver is found across subaccounts, and every decision is
//! recorded for audit in the transaction that applies it.

use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, Utc};

use crate::audit::{AuditAction, AuditContext, AuditEntry};
use crate::error::PortError;
use crate::events::OutboxEvent;
use crate::ids::{ReceiverId, SubaccountId};
use crate::payout::change::PayoutReaction;
use crate::ports::{Clock, IdGenerator};
use crate::receiver::service::plan_kyc;
use crate::receiver::{KycOutcome, KycStatus, Receiver};

/// The longest reason kept.
pub const MAX_REASON_CHARS: usize = 500;

/// The longest `decided_by` kept.
pub const MAX_DECIDED_BY_CHARS: usize = 100;

/// An operator's decision as the audit trail keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KycDecisionRecord {
    /// The receiver decided on.
    pub receiver_id: ReceiverId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// What was decided.
    pub decision: KycOutcome,
    /// Why, as the operator wrote it.
    pub reason: Option<String>,
    /// Who decided (`operator`, or `operator:<OS user>`).
    pub decided_by: String,
    /// When.
    pub decided_at: DateTime<Utc>,
}

/// Receivers as the operator sees them: across subaccounts.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait KycDecisionStore: Send + Sync {
    /// The receiver with this id, whichever subaccount it belongs to, or `Ok(None)`.
    async fn find_receiver_anywhere(&self, id: ReceiverId) -> Result<Option<Receiver>, PortError>;

    /// Applies a KYC decision exactly as
    /// [`ReceiverStore::apply_kyc`](crate::receiver::ports::ReceiverStore::apply_kyc) does
    /// (receiver, `events`, the waiting payouts' `reaction`, only while its KYC status is still
    /// `expected`) and, in the same transaction, inserts `record` into the KYC trail and
    /// `audit` into the audit log. `Ok(false)` when the receiver's KYC is no longer
    /// `expected`; then nothing was written, the record and the entry included.
    async fn apply_operator_kyc(
        &self,
        receiver: &Receiver,
        expected: KycStatus,
        events: &[OutboxEvent],
        reaction: &PayoutReaction,
        record: &KycDecisionRecord,
        audit: &AuditEntry,
    ) -> Result<bool, PortError>;

    /// Receivers of every subaccount whose KYC is pending, oldest first (by creation, then
    /// id), after the receiver `after` when given (the last of the previous page; an unknown
    /// one gives nothing), at most `limit`.
    async fn pending_kyc(
        &self,
        after: Option<ReceiverId>,
        limit: u32,
    ) -> Result<Vec<Receiver>, PortError>;
}

/// Why an operator's decision was not applied; the message is what the CLI prints.
#[derive(Debug, thiserror::Error)]
pub enum OperatorKycError {
    /// An argument is invalid.
    #[error("invalid {field}: {reason}")]
    Invalid {
        /// The argument.
        field: &'static str,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// No receiver has this id.
    #[error("receiver not found")]
    NotFound,
    /// Its KYC is decided already; nothing was written.
    #[error("the receiver's KYC is already decided ({}); nothing was changed", .0.as_str())]
    AlreadyDecided(KycStatus),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Applies operators' KYC decisions.
pub struct OperatorKycService {
    store: Arc<dyn KycDecisionStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

/// `completed` or `failed`.
pub fn parse_decision(raw: &str) -> Option<KycOutcome> {
    match raw.trim() {
        "completed" => Some(KycOutcome::Completed),
        "failed" => Some(KycOutcome::Failed),
        _ => None,
    }
}

/// The outcome's wire name, as `kyc_status` shows it.
pub const fn decision_name(outcome: KycOutcome) -> &'static str {
    match outcome {
        KycOutcome::Completed => "completed",
        KycOutcome::Failed => "failed",
    }
}

fn invalid(field: &'static str, reason: &'static str) -> OperatorKycError {
    OperatorKycError::Invalid { field, reason }
}

impl OperatorKycService {
    /// Wires the service to its ports.
    pub fn new(
        store: Arc<dyn KycDecisionStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self { store, clock, ids }
    }

    /// Decides the receiver's KYC (`completed` makes it `active`, `failed` makes it `failed`),
    /// with its `receiverKycUpdate` event and its waiting payouts moving on or failing with the
    /// hold voided, and records the decision with `reason` and `decided_by`, and an audit
    /// entry of `context`. A blank reason counts as none; `decided_by` must not be blank.
    #[tracing::instrument(level = "debug", skip_all, fields(outcome = ?outcome))]
    pub async fn decide(
        &self,
        raw_receiver: &str,
        outcome: KycOutcome,
        reason: Option<&str>,
        decided_by: &str,
        context: &AuditContext,
    ) -> Result<Receiver, OperatorKycError> {
        let id = ReceiverId::parse(raw_receiver.trim())
            .ok_or_else(|| invalid("receiver", "not a receiver id (a UUID)"))?;
        let reason = reason.map(str::trim).filter(|r| !r.is_empty());
        if reason.is_some_and(|r| r.chars().count() > MAX_REASON_CHARS || r.contains('\0')) {
            return Err(invalid(
                "reason",
                "must be at most 500 characters, without NUL",
            ));
        }
        let decided_by = decided_by.trim();
        if decided_by.is_empty()
            || decided_by.chars().count() > MAX_DECIDED_BY_CHARS
            || decided_by.chars().any(char::is_control)
        {
            return Err(invalid(
                "decided_by",
                "must be 1 to 100 characters without control characters",
            ));
        }
        let receiver = self
            .store
            .find_receiver_anywhere(id)
            .await?
            .ok_or(OperatorKycError::NotFound)?;
        let now = self.clock.now();
        let before = serde_json::json!({
            "status": receiver.status.as_str(),
            "kyc_status": receiver.kyc_status.as_str(),
        });
        let plan = plan_kyc(receiver, outcome, now, &self.ids)
            .map_err(OperatorKycError::AlreadyDecided)?;
        let audit = context.entry(
            self.ids.as_ref(),
            self.clock.as_ref(),
            AuditAction::KycDecided,
            "receiver",
            plan.updated.id,
            Some(before),
            Some(serde_json::json!({
                "status": plan.updated.status.as_str(),
                "kyc_status": plan.updated.kyc_status.as_str(),
                "reason": reason,
            })),
        );
        let record = KycDecisionRecord {
            receiver_id: plan.updated.id,
            subaccount_id: plan.updated.subaccount_id,
            decision: outcome,
            reason: reason.map(str::to_owned),
            decided_by: decided_by.to_owned(),
            decided_at: now,
        };
        if self
            .store
            .apply_operator_kyc(
                &plan.updated,
                plan.expected,
                &plan.events,
                &plan.reaction,
                &record,
                &audit,
            )
            .await?
        {
            return Ok(plan.updated);
        }
        // Decided concurrently: report what is stored now.
        let stored = self
            .store
            .find_receiver_anywhere(id)
            .await?
            .ok_or(OperatorKycError::NotFound)?;
        Err(OperatorKycError::AlreadyDecided(stored.kyc_status))
    }
}

/// A page of receivers waiting for a KYC decision.
pub const MAX_PENDING_PAGE: u32 = 200;

impl OperatorKycService {
    /// Receivers waiting for a decision, oldest first, after `after` (a receiver id), at most
    /// `limit` (1..=[`MAX_PENDING_PAGE`]).
    ///
    /// # Errors
    /// A malformed `after`, or a port error.
    pub async fn pending(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<Receiver>, OperatorKycError> {
        let after = after
            .map(|raw| ReceiverId::parse(raw).ok_or_else(|| invalid("after", "not a receiver id")))
            .transpose()?;
        Ok(self
            .store
            .pending_kyc(after, limit.clamp(1, MAX_PENDING_PAGE))
            .await?)
    }
}

#[cfg(test)]
#[path = "operator_tests.rs"]
mod tests;
