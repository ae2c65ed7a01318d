//! The payout entity.

use chrono::{DateTime, Utc};

use super::status::PayoutStatus;
use crate::ids::{BatchId, PayoutId, ReceiverAccountId, ReceiverId, SubaccountId};
use crate::money::{Asset, Fee, MinorUnits};
use crate::subaccount::FeeTemplate;

/// Money sent from a subaccount's balance to one of its receivers' accounts.
#[derive(Debug, Clone, PartialEq)]
pub struct Payout {
    /// Identifier.
    pub id: PayoutId,
    /// The paying subaccount.
    pub subaccount_id: SubaccountId,
    /// The receiver.
    pub receiver_id: ReceiverId,
    /// The receiver's account paid into.
    pub account_id: ReceiverAccountId,
    /// The currency (the account's).
    pub asset: Asset,
    /// What the receiver gets, minor units.
    pub amount: MinorUnits,
    /// What the subaccount pays on top, minor units.
    pub fee: Fee,
    /// The fee template applied, if any (shown as `fee_data`).
    pub fee_template: Option<FeeTemplate>,
    /// The caller's reference, unique among the subaccount's payouts.
    pub reference: Option<String>,
    /// The caller's note.
    pub note: String,
    /// Where it is.
    pub status: PayoutStatus,
    /// The batch it joined, once it did.
    pub batch_id: Option<BatchId>,
    /// The rail's reference, once submitted.
    pub provider_reference: String,
    /// Another payout to the same account with the same amount and currency was created in the
    /// previous 24 hours (a warning, not a refusal).
    pub duplicate: bool,
    /// When its batch submitted it to the payout rail.
    pub submitted_at: Option<DateTime<Utc>>,
    /// The rail failed it because the receiver's account cannot be paid.
    pub receiver_is_invalid: bool,
    /// Why the rail failed it.
    pub failure_reason: Option<String>,
    /// The bank's code when it refused or returned the payment (a NACHA return code such as
    /// `R03`, an ISO 20022 reason such as `AC04`); `failure_reason` says what it means.
    pub return_code: Option<String>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl Payout {
    /// What the subaccount is debited: amount plus fee.
    pub fn total(&self) -> i64 {
        self.amount.get().saturating_add(self.fee.get())
    }
}
