//! Bulk payouts (docs/API.md, `POST /api/payout/bulk`): many payout requests at once, each
//! checked as a single payout is and applied in request order, in one transaction.

use std::collections::HashSet;

use super::ports::{BulkPayoutResult, BulkSlot};
use super::service::{PayoutService, RawPayout, rejected_item, text};
use crate::auth::Caller;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::idempotency::WriteKey;
use crate::validation::ValidationErrors;

/// The most items one bulk request may hold.
pub const MAX_BULK_ITEMS: usize = 1000;

/// Why a bulk request was not processed at all.
#[derive(Debug, thiserror::Error)]
pub enum BulkPayoutError {
    /// The request holds no item or more than [`MAX_BULK_ITEMS`] (`PAYO212`).
    #[error("a bulk request holds 1 to {MAX_BULK_ITEMS} payouts")]
    ItemCount,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

impl PayoutService {
    /// Creates many payouts (docs/API.md, `POST /api/payout/bulk`): each item is checked as
    /// [`Self::create`] checks one (the duplicate warning also counting earlier items; plus
    /// `PAYO210` without a `reference` and `PAYO206` for a reference an earlier item of the
    /// request already has), then the store applies the
    /// items in request order in one transaction, each holding amount + fee from what the
    /// items before it left (`PAYO207` once the balance is short). Partial (`atomic` false):
    /// every item that passes is created. Atomic: all are created or, when any fails, none
    /// (the result then says which failed and why). An item given as `Err` was refused by the
    /// caller already (a malformed body item) and fails with those problems.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, items = raws.len(), atomic)
    )]
    pub async fn create_bulk(
        &self,
        caller: &Caller,
        raws: &[Result<RawPayout, ValidationErrors>],
        atomic: bool,
        key: &WriteKey<BulkPayoutResult>,
    ) -> Result<BulkPayoutResult, BulkPayoutError> {
        if raws.is_empty() || raws.len() > MAX_BULK_ITEMS {
            return Err(BulkPayoutError::ItemCount);
        }
        let mut references = HashSet::new();
        // The items that pass the request's own checks, planned together: one read of the
        // store for all of them.
        let mut slots: Vec<Option<BulkSlot>> = Vec::with_capacity(raws.len());
        let mut to_plan = Vec::new();
        for raw in raws {
            slots.push(match raw {
                Err(errors) => Some(BulkSlot::Rejected(errors.clone())),
                Ok(raw) => match text(&raw.reference) {
                    None => Some(BulkSlot::Rejected(rejected_item(
                        ErrorCode::Payo210,
                        "reference",
                    ))),
                    // Compared as stored (trimmed), so the store's uniqueness would agree.
                    Some(reference) if !references.insert(reference.to_owned()) => Some(
                        BulkSlot::Rejected(rejected_item(ErrorCode::Payo206, "reference")),
                    ),
                    Some(_) => {
                        to_plan.push(raw);
                        None
                    }
                },
            });
        }
        let mut plans = self.plan_many(caller, &to_plan).await?.into_iter();
        // An earlier item to the same account, amount and currency makes an item a duplicate,
        // as an earlier single payout would (the store's look-up cannot see unwritten items).
        let mut paid = HashSet::new();
        let mut planned_slots = Vec::with_capacity(slots.len());
        for slot in slots {
            planned_slots.push(match slot {
                Some(slot) => slot,
                None => match plans.next() {
                    Some(Ok(mut planned)) => {
                        let p = &planned.payout;
                        let first = paid.insert((p.account_id, p.amount.get(), p.asset.code()));
                        planned.payout.duplicate |= !first;
                        BulkSlot::Insert(Box::new(planned))
                    }
                    Some(Err(errors)) => BulkSlot::Rejected(errors),
                    None => {
                        return Err(BulkPayoutError::Port(PortError::unknown(
                            "fewer plans than bulk items handed over",
                        )));
                    }
                },
            });
        }
        let slots = planned_slots;
        Ok(self
            .payouts_store()
            .insert_payout_bulk(&slots, atomic, key)
            .await?)
    }
}
