//! The sandbox's test helpers (`/api/test-helpers/...`, docs/API.md): what a KYC provider, a
//! receiver and a payout rail would do, on demand. A payoutd in production mode answers them
//! 404 `REQ006`.

use serde::{Deserialize, Serialize};
use serde_json::json;
use uuid::Uuid;

use crate::client::{Answer, Client, Post};
use crate::error::Error;
use crate::types::{Asset, BatchStatus};

/// A KYC provider's decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KycDecision {
    /// The receiver passes: `active`.
    Completed,
    /// The receiver fails: `failed` (its waiting payouts fail too).
    Failed,
}

/// A payout rail's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RailResult {
    /// Paid: `successful`.
    Success,
    /// Not paid: `failed`, the amount back to `available`.
    Fail,
}

/// What a rail result applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SettleTarget {
    /// One `in_progress` payout.
    Payout(Uuid),
    /// Every `in_progress` payout of a batch.
    Batch(Uuid),
}

/// A batch after [`Client::sandbox_run_batch`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BatchRun {
    /// The batch.
    pub batch_id: Uuid,
    /// `BATCH_<batch_id>`.
    pub batch_reference: String,
    /// `in_progress`, or `cancelled` when nothing was left to submit.
    pub status: BatchStatus,
    /// Payouts in it.
    pub total_tx: i64,
    /// Their sum, minor units.
    pub amount: i64,
    /// The asset.
    pub currency: Asset,
}

/// A confirmation request the sandbox notifier sent for an account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SentNotification {
    /// The account it asks to confirm.
    pub receiver_account_id: Uuid,
    /// The receiver's e-mail.
    pub to_email: String,
    /// The confirmation link (`GET` shows the page, `POST` confirms).
    pub confirm_url: String,
    /// The masked details it showed.
    pub masked_details: serde_json::Map<String, serde_json::Value>,
}

/// The sandbox helpers answer `"payload": null`.
fn nothing(answer: Answer) -> Result<(), Error> {
    answer.payload::<Option<serde_json::Value>>().map(drop)
}

impl Client {
    /// `POST /api/test-helpers/kyc`: the KYC provider decides a receiver.
    pub fn sandbox_decide_kyc(&self, receiver_id: Uuid, decision: KycDecision) -> Post<'_, ()> {
        let status = match decision {
            KycDecision::Completed => "completed",
            KycDecision::Failed => "failed",
        };
        let body = json!({"receiver_id": receiver_id, "kyc_status": status});
        self.post_with("/api/test-helpers/kyc", serde_json::to_vec(&body), nothing)
    }

    /// `POST /api/test-helpers/account`: confirms an account as its link would.
    pub fn sandbox_confirm_account(&self, account_id: Uuid) -> Post<'_, ()> {
        let body = json!({"receiver_account_id": account_id, "confirm_status": "confirmed"});
        self.post_with(
            "/api/test-helpers/account",
            serde_json::to_vec(&body),
            nothing,
        )
    }

    /// `GET /api/test-helpers/notifications`: the confirmation requests sent for an account.
    ///
    /// # Errors
    /// See [`Error`].
    pub async fn sandbox_notifications(
        &self,
        account_id: Uuid,
    ) -> Result<Vec<SentNotification>, Error> {
        self.get(&format!(
            "/api/test-helpers/notifications?receiver_account_id={account_id}"
        ))
        .await
    }

    /// `POST /api/test-helpers/batch/run`: runs the open batch of `asset` now (its payouts
    /// become `in_progress`).
    pub fn sandbox_run_batch(&self, asset: Asset) -> Post<'_, BatchRun> {
        let body = json!({"subaccount_id": self.subaccount_id(), "asset": asset.as_str()});
        self.post_with(
            "/api/test-helpers/batch/run",
            serde_json::to_vec(&body),
            Answer::payload,
        )
    }

    /// `POST /api/test-helpers/status`: the rail's result for an `in_progress` payout or
    /// batch.
    pub fn sandbox_settle(&self, target: SettleTarget, result: RailResult) -> Post<'_, ()> {
        let (kind, id) = match target {
            SettleTarget::Payout(id) => ("payout", id),
            SettleTarget::Batch(id) => ("batch", id),
        };
        let status = match result {
            RailResult::Success => "success",
            RailResult::Fail => "fail",
        };
        let body = json!({"id": id, "type": kind, "status": status});
        self.post_with(
            "/api/test-helpers/status",
            serde_json::to_vec(&body),
            nothing,
        )
    }
}
