//! [`PayoutBuilder`].

use chrono::{DateTime, Utc};
use uuid::Uuid;

use crate::ids::{BatchId, PayoutId, ReceiverAccountId, ReceiverId, SubaccountId};
use crate::money::{Asset, Fee, MinorUnits};
use crate::payout::{Payout, PayoutStatus};
use crate::subaccount::FeeTemplate;

/// When built payouts were created and last changed, unless set: 2023-11-14T22:13:20Z.
pub const BUILT_AT_SECS: i64 = 1_700_000_000;

/// Builds a [`Payout`]. Unless set: a `pending` payout of 10.00 AUD without fee, template,
/// reference, note or batch, with id 1, subaccount 2, receiver 3 and account 4 (UUIDs from
/// those numbers), created and last changed at [`BUILT_AT_SECS`].
#[derive(Debug, Clone)]
pub struct PayoutBuilder {
    payout: Payout,
}

fn uuid(n: u128) -> Uuid {
    Uuid::from_u128(n)
}

impl Default for PayoutBuilder {
    fn default() -> Self {
        let at = DateTime::from_timestamp(BUILT_AT_SECS, 0).unwrap_or_default();
        Self {
            payout: Payout {
                id: PayoutId::from_uuid(uuid(1)),
                subaccount_id: SubaccountId::from_uuid(uuid(2)),
                receiver_id: ReceiverId::from_uuid(uuid(3)),
                account_id: ReceiverAccountId::from_uuid(uuid(4)),
                asset: Asset::Aud,
                amount: MinorUnits::new(1_000).unwrap_or_else(|e| panic!("{e}")),
                fee: Fee::ZERO,
                fee_template: None,
                reference: None,
                note: String::new(),
                status: PayoutStatus::Pending,
                batch_id: None,
                provider_reference: String::new(),
                duplicate: false,
                submitted_at: None,
                receiver_is_invalid: false,
                failure_reason: None,
                return_code: None,
                created_at: at,
                updated_at: at,
            },
        }
    }
}

impl PayoutBuilder {
    /// The default payout (see [`PayoutBuilder`]).
    pub fn new() -> Self {
        Self::default()
    }

    /// The payout's id.
    pub fn id(mut self, id: PayoutId) -> Self {
        self.payout.id = id;
        self
    }

    /// The paying subaccount.
    pub fn subaccount(mut self, subaccount: SubaccountId) -> Self {
        self.payout.subaccount_id = subaccount;
        self
    }

    /// The receiver.
    pub fn receiver(mut self, receiver: ReceiverId) -> Self {
        self.payout.receiver_id = receiver;
        self
    }

    /// The receiver's account.
    pub fn account(mut self, account: ReceiverAccountId) -> Self {
        self.payout.account_id = account;
        self
    }

    /// The currency.
    pub fn asset(mut self, asset: Asset) -> Self {
        self.payout.asset = asset;
        self
    }

    /// The amount, in minor units.
    ///
    /// # Panics
    ///
    /// When it is not an amount (1 to 10^12).
    pub fn amount(mut self, minor_units: i64) -> Self {
        self.payout.amount =
            MinorUnits::new(minor_units).unwrap_or_else(|e| panic!("amount {minor_units}: {e}"));
        self
    }

    /// The fee, in minor units.
    ///
    /// # Panics
    ///
    /// When it is negative.
    pub fn fee(mut self, minor_units: i64) -> Self {
        self.payout.fee =
            Fee::new(minor_units).unwrap_or_else(|e| panic!("fee {minor_units}: {e}"));
        self
    }

    /// The fee template applied.
    pub fn fee_template(mut self, template: FeeTemplate) -> Self {
        self.payout.fee_template = Some(template);
        self
    }

    /// The caller's reference.
    pub fn reference(mut self, reference: &str) -> Self {
        self.payout.reference = Some(reference.to_owned());
        self
    }

    /// The status.
    pub fn status(mut self, status: PayoutStatus) -> Self {
        self.payout.status = status;
        self
    }

    /// The batch it joined.
    pub fn batch(mut self, batch: BatchId) -> Self {
        self.payout.batch_id = Some(batch);
        self
    }

    /// The rail's reference.
    pub fn provider_reference(mut self, reference: &str) -> Self {
        self.payout.provider_reference = reference.to_owned();
        self
    }

    /// When it was submitted to the rail (`None`: not yet).
    pub fn submitted_at(mut self, at: impl Into<Option<DateTime<Utc>>>) -> Self {
        self.payout.submitted_at = at.into();
        self
    }

    /// When it was created, and last changed.
    pub fn created_at(mut self, at: DateTime<Utc>) -> Self {
        self.payout.created_at = at;
        self.payout.updated_at = at;
        self
    }

    /// When it last changed (after [`Self::created_at`], which sets it too).
    pub fn updated_at(mut self, at: DateTime<Utc>) -> Self {
        self.payout.updated_at = at;
        self
    }

    /// The payout.
    pub fn build(self) -> Payout {
        self.payout
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_a_pending_payout_without_fee() {
        let payout = PayoutBuilder::new().build();
        assert_eq!(payout.status, PayoutStatus::Pending);
        assert_eq!((payout.amount.get(), payout.fee), (1_000, Fee::ZERO));
        assert_eq!(payout.created_at, payout.updated_at);
        assert_eq!(payout.created_at.timestamp(), BUILT_AT_SECS);
    }

    #[test]
    fn created_at_moves_both_times_and_updated_at_only_its_own() {
        let at = |s| DateTime::from_timestamp(s, 0).unwrap_or_default();
        let payout = PayoutBuilder::new()
            .created_at(at(10))
            .updated_at(at(20))
            .build();
        assert_eq!((payout.created_at, payout.updated_at), (at(10), at(20)));
    }
}
