//! Domain events, written to the transactional outbox by the same store call that makes the
//! change they describe (docs/WEBHOOKS.md). Payloads follow PaySwiftly's webhook bodies.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};
use uuid::Uuid;

use crate::account::ReceiverAccount;
use crate::account::Visibility;
use crate::ids::{EventId, SubaccountId};
use crate::receiver::Receiver;
use crate::time::unix_millis;

/// The kinds of event the service emits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, strum::IntoStaticStr)]
#[strum(const_into_str)]
pub enum EventKind {
    /// A receiver was created and stored.
    #[strum(serialize = "receiverCreated")]
    ReceiverCreated,
    /// A receiver's KYC status changed.
    #[strum(serialize = "receiverKycUpdate")]
    ReceiverKycUpdate,
    /// A receiver account was created.
    #[strum(serialize = "accountCreated")]
    AccountCreated,
    /// A receiver account changed (confirmed, failed).
    #[strum(serialize = "accountUpdate")]
    AccountUpdate,
    /// A payout was created.
    #[strum(serialize = "payoutCreated")]
    PayoutCreated,
    /// A payout changed status.
    #[strum(serialize = "payoutUpdated")]
    PayoutUpdated,
    /// A payout failed (sent with its `payoutUpdated`).
    #[strum(serialize = "payoutFailure")]
    PayoutFailure,
    /// A batch changed status.
    #[strum(serialize = "batchUpdate")]
    BatchUpdate,
}

impl EventKind {
    /// The `event` value of the payload.
    pub const fn name(self) -> &'static str {
        self.into_str()
    }
}

/// One event as the outbox stores it. The store assigns the per-object `sequence` when it
/// writes the event, and adds it to the payload.
///
/// "Event" on its own means this throughout the code: a fact written to the outbox and sent as a
/// webhook. Two neighbours are something else: a
/// [`PayoutTrigger`](crate::payout::PayoutTrigger) is the input that moves a payout's status (a
/// change it causes writes events), and a
/// [`ClaimedEvent`](crate::delivery::ports::ClaimedEvent) is one delivery attempt's lease on an
/// event.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxEvent {
    /// Event id; also the `webhook-id` of every delivery attempt.
    pub id: EventId,
    /// The subaccount whose postback URL receives it.
    pub subaccount_id: SubaccountId,
    /// The object the event is about (receiver, account, payout, batch). A plain `Uuid` on
    /// purpose: it is any of those kinds (the kind says which), and the outbox numbers each
    /// object's events by it whatever its kind.
    pub object_id: Uuid,
    /// What happened.
    pub kind: EventKind,
    /// The webhook body, without `sequence`.
    pub payload: Value,
    /// When it happened.
    pub occurred_at: DateTime<Utc>,
}

impl OutboxEvent {
    /// `receiverCreated` or `receiverKycUpdate` for `receiver` as it is now.
    pub fn receiver(kind: EventKind, id: EventId, receiver: &Receiver, at: DateTime<Utc>) -> Self {
        let subaccount = receiver.subaccount_id.to_string();
        let payload = json!({
            "event": kind.name(),
            "event_id": id.to_string(),
            "receiver_id": receiver.id.to_string(),
            "subaccount_id": subaccount,
            "subccount_id": subaccount,
            "status": receiver.status.as_str(),
            "kyc_status": receiver.kyc_status.as_str(),
            "timestamp": unix_millis(at),
        });
        Self {
            id,
            subaccount_id: receiver.subaccount_id,
            object_id: receiver.id.as_uuid(),
            kind,
            payload,
            occurred_at: at,
        }
    }
}

impl OutboxEvent {
    /// `accountCreated` or `accountUpdate` for `account` as it is now; identifiers masked.
    pub fn account(
        kind: EventKind,
        id: EventId,
        account: &ReceiverAccount,
        at: DateTime<Utc>,
    ) -> Self {
        let subaccount = account.subaccount_id.to_string();
        let mut payload = json!({
            "event": kind.name(),
            "event_id": id.to_string(),
            "receiver_id": account.receiver_id.to_string(),
            "receiver_account_id": account.id.to_string(),
            "subaccount_id": subaccount,
            "subccount_id": subaccount,
            "method_name": account.method.name(),
            "asset": account.method.asset().code(),
            "status": account.status.as_str(),
            "confirm_status": account.confirm_status.as_str(),
            "timestamp": unix_millis(at),
        });
        // Only the fields that identify the account, each masked.
        for (field, shown) in account.data.masked() {
            if field.visibility() == Visibility::Masked {
                payload[field.name()] = Value::String(shown);
            }
        }
        Self {
            id,
            subaccount_id: account.subaccount_id,
            object_id: account.id.as_uuid(),
            kind,
            payload,
            occurred_at: at,
        }
    }
}

impl OutboxEvent {
    /// A payout event (`payoutCreated`, …) for `payout` as it is now (docs/WEBHOOKS.md, Events).
    pub fn payout(
        kind: EventKind,
        id: EventId,
        payout: &crate::payout::Payout,
        at: DateTime<Utc>,
    ) -> Self {
        let subaccount = payout.subaccount_id.to_string();
        let mut payload = json!({
            "event": kind.name(),
            "event_id": id.to_string(),
            "payout_id": payout.id.to_string(),
            "amount": payout.amount.get(),
            "currency": payout.asset.code(),
            "batch_id": payout.batch_id.map(|b| b.to_string()).unwrap_or_default(),
            // The store fills in the batch's run time when it knows the batch.
            "batch_run_time": Value::Null,
            "receiver_account_id": payout.account_id.to_string(),
            "receiver_id": payout.receiver_id.to_string(),
            "reference": payout.reference.clone().unwrap_or_default(),
            "status": payout.status.as_str(),
            "subaccount_id": subaccount,
            "subccount_id": subaccount,
            "timestamp": unix_millis(at),
        });
        // A bank's refusal or return (production rails) names its code and meaning; payloads
        // without one keep the compatible shape.
        if let (Some(code), Some(object)) = (&payout.return_code, payload.as_object_mut()) {
            object.insert("return_code".to_owned(), json!(code));
            object.insert(
                "return_reason".to_owned(),
                json!(payout.failure_reason.clone().unwrap_or_default()),
            );
        }
        Self {
            id,
            subaccount_id: payout.subaccount_id,
            object_id: payout.id.as_uuid(),
            kind,
            payload,
            occurred_at: at,
        }
    }
}

impl OutboxEvent {
    /// A `batchUpdate` event for `batch` as it is now (the provider's batch
    /// webhook; docs/WEBHOOKS.md, Events).
    pub fn batch(id: EventId, batch: &crate::batch::Batch, at: DateTime<Utc>) -> Self {
        let subaccount = batch.subaccount_id.to_string();
        let payload = json!({
            "event": EventKind::BatchUpdate.name(),
            "event_id": id.to_string(),
            "batch_id": batch.id.to_string(),
            "batch_reference": format!("BATCH_{}", batch.id),
            "status": batch.status.as_str(),
            "amount": batch.amount,
            "currency": batch.asset.code(),
            "batch_run_time": unix_millis(batch.batch_run_time),
            "process_amount": batch.process_amount,
            "total_failed": batch.total_failed,
            "total_tx": batch.total_tx,
            "created_at": unix_millis(batch.created_at).to_string(),
            "subaccount_id": subaccount,
            "subccount_id": subaccount,
            "timestamp": unix_millis(at),
        });
        Self {
            id,
            subaccount_id: batch.subaccount_id,
            object_id: batch.id.as_uuid(),
            kind: EventKind::BatchUpdate,
            payload,
            occurred_at: at,
        }
    }
}
