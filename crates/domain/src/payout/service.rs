//! The payout use cases. Creating a payout checks everything it can (docs/API.md,
//! `POST /api/payout/single`) before touching money, then holds amount + fee with one conditional
//! update in the store.

use std::sync::Arc;

use chrono::Duration;

use super::change::plan_change;
use super::fee::fee;
use super::model::Payout;
use super::ports::{
    InsertPayoutError, NewPayout, PayoutListItem, PayoutStore, PlanningFacts, PlanningQuery,
};
use super::query::ListPayoutsQuery;
use super::status::{PayoutStatus, PayoutTrigger, initial_status};
use crate::account::ports::AccountStore;
use crate::account::{AccountStatus, ConfirmStatus};
use crate::auth::Caller;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::events::{EventKind, OutboxEvent};
use crate::idempotency::WriteKey;
use crate::ids::{EventId, LedgerEntryId, PayoutId, ReceiverAccountId, ReceiverId};
use crate::ledger::{LedgerEntry, LedgerEntryKind};
use crate::money::{Asset, MinorUnits};
use crate::paging::cursor::CursorKey;
use crate::paging::{Page, PageRequest, Position, list_start};
use crate::ports::{Clock, IdGenerator};
use crate::receiver::ports::ReceiverStore;
use crate::receiver::values::{BoundedText, BoundedTextError};
use crate::receiver::{KycStatus, ReceiverStatus};
use crate::subaccount::ports::SubaccountStore;
use crate::validation::ValidationErrors;

/// Raw create-payout fields (`amount` already as text: the HTTP layer accepts a JSON integer or
/// a string of digits).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawPayout {
    /// `receiver_id`.
    pub receiver_id: Option<String>,
    /// `account_id` (a receiver account id).
    pub account_id: Option<String>,
    /// `amount`, minor units.
    pub amount: Option<String>,
    /// `currency`.
    pub currency: Option<String>,
    /// `reference`.
    pub reference: Option<String>,
    /// `note`.
    pub note: Option<String>,
}

/// Why a payout was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreatePayoutError {
    /// The request failed its checks (`PAYO201`–`PAYO208`), every independent failure listed.
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// The write was to admit the request itself and could not: nothing was written. Admit
    /// the request, then create again (see [`Admission`](crate::idempotency::Admission)).
    #[error("the payout's write could not admit its request")]
    NotAdmitted,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// How far back a payout to the same account, amount and currency counts as a duplicate.
pub const DUPLICATE_WINDOW_HOURS: i64 = 24;

/// How many times a payout is planned again when its receiver or account changed meanwhile.
const STALE_RETRIES: usize = 3;

fn rejected(code: ErrorCode, field: &'static str) -> CreatePayoutError {
    CreatePayoutError::Invalid(rejected_item(code, field))
}

pub(super) fn text(raw: &Option<String>) -> Option<&str> {
    raw.as_deref().map(str::trim).filter(|s| !s.is_empty())
}

/// Why a payout could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GetPayoutError {
    /// No such payout in the caller's subaccount (`PAYO101`).
    #[error("payout not found")]
    NotFound,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// A payout with everything its get-by-id object shows.
#[derive(Debug, Clone)]
pub struct PayoutDetails {
    /// The payout.
    pub payout: Payout,
    /// Its ledger entries, oldest first (the `transactions`).
    pub entries: Vec<LedgerEntry>,
    /// Its receiver.
    pub receiver: crate::receiver::Receiver,
    /// The account paid into.
    pub account: crate::account::ReceiverAccount,
    /// The subaccount's merchant.
    pub merchant_id: crate::ids::MerchantId,
}

/// Why a payout was not cancelled.
#[derive(Debug, thiserror::Error)]
pub enum CancelPayoutError {
    /// No such payout in the caller's subaccount (`PAYO101`).
    #[error("payout not found")]
    NotFound,
    /// Not in `awaiting`, `unassessed` or `pending` (`PAYO301`); carries the status it is in.
    #[error("payout cannot be cancelled in status {}", .0.as_str())]
    NotCancellable(PayoutStatus),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why payouts could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ListPayoutsError {
    /// The query is invalid (every problem listed).
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// One page of payouts and the `lastkey` of the next.
#[derive(Debug, Clone)]
pub struct PayoutPage {
    /// The payouts, newest first, with their receivers and accounts.
    pub items: Vec<PayoutListItem>,
    /// The opaque cursor of the next page; `None` on the last page.
    pub lastkey: Option<String>,
}

const CURSOR_SCOPE: &str = "payouts";

/// A payout request that passed every check before storing.
struct Checked {
    amount: MinorUnits,
    asset: Asset,
    receiver: crate::receiver::Receiver,
    account: crate::account::ReceiverAccount,
}

/// Creates and reads payouts.
pub struct PayoutService {
    payouts: Arc<dyn PayoutStore>,
    receivers: Arc<dyn ReceiverStore>,
    accounts: Arc<dyn AccountStore>,
    subaccounts: Arc<dyn SubaccountStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    cursors: CursorKey,
}

impl PayoutService {
    /// Wires the service to its ports.
    pub fn new(
        payouts: Arc<dyn PayoutStore>,
        receivers: Arc<dyn ReceiverStore>,
        accounts: Arc<dyn AccountStore>,
        subaccounts: Arc<dyn SubaccountStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        cursors: CursorKey,
    ) -> Self {
        Self {
            payouts,
            receivers,
            accounts,
            subaccounts,
            clock,
            ids,
            cursors,
        }
    }

    /// The payout store.
    pub(super) fn payouts_store(&self) -> &dyn PayoutStore {
        self.payouts.as_ref()
    }

    /// One page of the caller's payouts matching the query (newest first) and the next page's
    /// `lastkey`.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, limit = query.limit)
    )]
    pub async fn list(
        &self,
        caller: &Caller,
        query: &ListPayoutsQuery,
    ) -> Result<PayoutPage, ListPayoutsError> {
        let after = list_start(
            caller,
            query.subaccount_id.as_deref(),
            ErrorCode::Req002,
            query.lastkey.as_deref(),
            &self.cursors,
            CURSOR_SCOPE,
        )
        .map_err(ListPayoutsError::Invalid)?;
        let page = PageRequest {
            limit: query.limit,
            after,
        };
        let rows = self
            .payouts
            .list_payouts(caller.subaccount_id, &query.filter, &page)
            .await?;
        let page = Page::from_overfetch(rows, query.limit, |item: &PayoutListItem| Position {
            created_at: item.payout.created_at,
            id: item.payout.id.as_uuid(),
        });
        Ok(PayoutPage {
            lastkey: page
                .next
                .map(|p| self.cursors.seal(CURSOR_SCOPE, caller.subaccount_id, &p)),
            items: page.items,
        })
    }

    /// Cancels the caller's payout (docs/API.md, `POST /api/payout/{id}/cancel`): only from
    /// `awaiting`, `unassessed` or `pending`, releasing its hold (void entries back to available)
    /// with a `payoutUpdated` event, as one conditional change.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn cancel(
        &self,
        caller: &Caller,
        raw_id: &str,
        key: &WriteKey<Payout>,
    ) -> Result<Payout, CancelPayoutError> {
        let id = PayoutId::parse(raw_id).ok_or(CancelPayoutError::NotFound)?;
        let (payout, _) = self
            .payouts
            .find_payout(caller.subaccount_id, id)
            .await?
            .ok_or(CancelPayoutError::NotFound)?;
        let expected = payout.status;
        let change = plan_change(
            &payout,
            PayoutTrigger::Cancel,
            self.clock.now(),
            self.ids.as_ref(),
            |_| {},
        )
        .map_err(|e| CancelPayoutError::NotCancellable(e.from))?;
        if self.payouts.apply_transition(&change, key).await? {
            return Ok(change.payout);
        }
        // Changed meanwhile (submitted, cancelled by another request): report where it is now.
        let now_status = self
            .payouts
            .find_payout(caller.subaccount_id, id)
            .await?
            .map_or(expected, |(p, _)| p.status);
        Err(CancelPayoutError::NotCancellable(now_status))
    }

    /// The caller's payout with this id, with its ledger entries, receiver, account and merchant.
    /// A malformed id, another subaccount's payout and a missing one are all `NotFound`.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn get(
        &self,
        caller: &Caller,
        raw_id: &str,
    ) -> Result<PayoutDetails, GetPayoutError> {
        let id = PayoutId::parse(raw_id).ok_or(GetPayoutError::NotFound)?;
        let (payout, entries) = self
            .payouts
            .find_payout(caller.subaccount_id, id)
            .await?
            .ok_or(GetPayoutError::NotFound)?;
        let missing = |what: &str| PortError::Unknown(anyhow::anyhow!("payout {id} has no {what}"));
        let receiver = self
            .receivers
            .find_receiver(caller.subaccount_id, payout.receiver_id)
            .await?
            .ok_or_else(|| missing("receiver"))?;
        let account = self
            .accounts
            .find_account(caller.subaccount_id, payout.account_id)
            .await?
            .ok_or_else(|| missing("account"))?;
        let merchant_id = self
            .subaccounts
            .find_subaccount(caller.subaccount_id)
            .await?
            .ok_or_else(|| missing("subaccount"))?
            .merchant_id;
        Ok(PayoutDetails {
            payout,
            entries,
            receiver,
            account,
            merchant_id,
        })
    }

    /// Creates a payout (docs/API.md, `POST /api/payout/single`): checks the receiver (`PAYO201`),
    /// the account (`PAYO202`), the amount (`PAYO203`), the currency (`PAYO204`) and whether both
    /// can be paid (`PAYO205`), reporting independent failures together; then computes the fee, the
    /// initial status and the duplicate warning, and has the store hold amount + fee, append the
    /// ledger entries and write `payoutCreated` in one transaction (`PAYO206`, `PAYO207` from
    /// there).
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn create(
        &self,
        caller: &Caller,
        raw: &RawPayout,
        key: &WriteKey<Payout>,
    ) -> Result<Payout, CreatePayoutError> {
        // The store refuses a plan whose receiver or account changed after they were read
        // (`Stale`); planning again reads them afresh. Three changes in a row are a storm
        // worth reporting rather than chasing.
        for _ in 0..STALE_RETRIES {
            if let Some(payout) = self.try_create(caller, raw, key).await? {
                return Ok(payout);
            }
        }
        Err(CreatePayoutError::Port(PortError::Unavailable(
            anyhow::anyhow!("the receiver or account kept changing while the payout was created"),
        )))
    }

    /// Whether [`Self::create`] can admit its request in the payout's own write (see
    /// [`Admission`](crate::idempotency::Admission)); when it cannot, requests are admitted
    /// before they run.
    pub async fn admits_in_write(&self) -> Result<bool, PortError> {
        self.payouts.admits_in_write().await
    }

    /// Every check of [`Self::create`] that comes before storing (so not `PAYO206`/`PAYO207`),
    /// writing nothing: for a request whose body also has problems of its own.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn validate(
        &self,
        caller: &Caller,
        raw: &RawPayout,
    ) -> Result<(), CreatePayoutError> {
        self.checked(caller, raw).await.map(|_| ())
    }

    async fn checked(
        &self,
        caller: &Caller,
        raw: &RawPayout,
    ) -> Result<Checked, CreatePayoutError> {
        let parsed = Parsed::from(raw);
        let facts = self
            .facts(caller, std::slice::from_ref(&parsed), self.clock.now())
            .await?;
        parsed.check(&facts).map_err(CreatePayoutError::Invalid)
    }

    /// What planning the `parsed` requests reads, in one call to the store.
    async fn facts(
        &self,
        caller: &Caller,
        parsed: &[Parsed],
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<PlanningFacts, PortError> {
        let mut query = PlanningQuery {
            receivers: Vec::new(),
            accounts: Vec::new(),
            assets: Vec::new(),
            similar: Vec::new(),
            since: now - Duration::hours(DUPLICATE_WINDOW_HOURS),
        };
        for p in parsed {
            query.receivers.extend(p.receiver_id);
            query.accounts.extend(p.account_id);
            query.assets.extend(p.currency);
            if let (Some(account), Some(amount), Some(asset)) = (p.account_id, p.amount, p.currency)
            {
                query.similar.push((account, amount, asset));
            }
        }
        query.receivers.sort_unstable();
        query.receivers.dedup();
        query.accounts.sort_unstable();
        query.accounts.dedup();
        query.assets.sort_unstable();
        query.assets.dedup();
        query.similar.sort_unstable();
        query.similar.dedup();
        self.payouts
            .planning_facts(caller.subaccount_id, &query)
            .await
    }

    /// One attempt of [`Self::create`]; `Ok(None)` when the plan was stale.
    async fn try_create(
        &self,
        caller: &Caller,
        raw: &RawPayout,
        key: &WriteKey<Payout>,
    ) -> Result<Option<Payout>, CreatePayoutError> {
        let NewPayout {
            mut payout,
            entries,
            events,
        } = self.plan(caller, raw).await?;
        payout.batch_id = match self
            .payouts
            .insert_payout(&payout, &entries, &events, key)
            .await
        {
            Ok(batch) => batch,
            Err(InsertPayoutError::Stale) => return Ok(None),
            Err(InsertPayoutError::InsufficientBalance) => {
                return Err(rejected(ErrorCode::Payo207, "amount"));
            }
            Err(InsertPayoutError::DuplicateReference) => {
                return Err(rejected(ErrorCode::Payo206, "reference"));
            }
            Err(InsertPayoutError::NotAdmitted) => return Err(CreatePayoutError::NotAdmitted),
            Err(InsertPayoutError::Port(e)) => return Err(CreatePayoutError::Port(e)),
        };
        Ok(Some(payout))
    }

    /// Checks a payout request ([`Self::checked`]) and plans the payout it creates: fee,
    /// initial status, duplicate warning, hold entries and its `payoutCreated` event.
    pub(super) async fn plan(
        &self,
        caller: &Caller,
        raw: &RawPayout,
    ) -> Result<NewPayout, CreatePayoutError> {
        let now = self.clock.now();
        let parsed = Parsed::from(raw);
        let facts = self
            .facts(caller, std::slice::from_ref(&parsed), now)
            .await?;
        let checked = parsed.check(&facts).map_err(CreatePayoutError::Invalid)?;
        Ok(self.planned(caller, raw, checked, &facts, now))
    }

    /// [`Self::plan`] for many requests, reading what they need in one call to the store:
    /// each request's plan or its own failure, in order.
    pub(super) async fn plan_many(
        &self,
        caller: &Caller,
        raws: &[&RawPayout],
    ) -> Result<Vec<Result<NewPayout, ValidationErrors>>, PortError> {
        let now = self.clock.now();
        let parsed: Vec<Parsed> = raws.iter().map(|raw| Parsed::from(*raw)).collect();
        let facts = self.facts(caller, &parsed, now).await?;
        Ok(parsed
            .into_iter()
            .zip(raws)
            .map(|(p, raw)| {
                p.check(&facts)
                    .map(|checked| self.planned(caller, raw, checked, &facts, now))
            })
            .collect())
    }

    /// The payout a checked request creates, with its holds and `payoutCreated`.
    fn planned(
        &self,
        caller: &Caller,
        raw: &RawPayout,
        checked: Checked,
        facts: &PlanningFacts,
        now: chrono::DateTime<chrono::Utc>,
    ) -> NewPayout {
        let Checked {
            amount,
            asset,
            receiver,
            account,
        } = checked;
        let template = facts.fee_templates.get(&asset).copied();
        let duplicate = facts.paid_since.contains(&(account.id, amount, asset));
        let payout = Payout {
            id: PayoutId::from_uuid(self.ids.new_id()),
            subaccount_id: caller.subaccount_id,
            receiver_id: receiver.id,
            account_id: account.id,
            asset,
            amount,
            fee: fee(amount, template.as_ref()),
            fee_template: template,
            reference: text(&raw.reference).map(str::to_owned),
            note: text(&raw.note).unwrap_or_default().to_owned(),
            status: initial_status(
                receiver.kyc_status == KycStatus::Completed,
                account.confirm_status == ConfirmStatus::Confirmed,
            ),
            batch_id: None,
            provider_reference: String::new(),
            duplicate,
            submitted_at: None,
            receiver_is_invalid: false,
            failure_reason: None,
            return_code: None,
            created_at: now,
            updated_at: now,
        };
        let hold = |kind, delta: i64| LedgerEntry {
            id: LedgerEntryId::from_uuid(self.ids.new_id()),
            subaccount_id: payout.subaccount_id,
            asset,
            kind,
            available_delta: -delta,
            pending_delta: delta,
            payout_id: Some(payout.id),
            created_at: now,
        };
        let mut entries = vec![hold(LedgerEntryKind::PayoutHold, amount.get())];
        if !payout.fee.is_zero() {
            entries.push(hold(LedgerEntryKind::FeeHold, payout.fee.get()));
        }
        let event = OutboxEvent::payout(
            EventKind::PayoutCreated,
            EventId::from_uuid(self.ids.new_id()),
            &payout,
            now,
        );
        NewPayout {
            payout,
            entries,
            events: vec![event],
        }
    }
}

/// A request's fields as parsed, and the problems parsing found (`PAYO203`, `PAYO204`,
/// `PAYO208`), before anything is read.
struct Parsed {
    amount: Option<MinorUnits>,
    currency: Option<Asset>,
    receiver_id: Option<ReceiverId>,
    account_id: Option<ReceiverAccountId>,
    errors: ValidationErrors,
}

impl From<&RawPayout> for Parsed {
    fn from(raw: &RawPayout) -> Self {
        let mut errors = ValidationErrors::default();
        let amount = match text(&raw.amount).map(MinorUnits::parse) {
            Some(Ok(amount)) => Some(amount),
            _ => {
                errors.push(ErrorCode::Payo203, "amount");
                None
            }
        };
        let currency = text(&raw.currency).and_then(Asset::parse);
        if currency.is_none() {
            errors.push(ErrorCode::Payo204, "currency");
        }
        // The receiver's free-text rule, so that two references that look alike (one with a
        // bidi override or a zero-width space) cannot both be "unique".
        for (value, field) in [(&raw.reference, "reference"), (&raw.note, "note")] {
            match value.as_deref().map(BoundedText::parse) {
                None | Some(Ok(_) | Err(BoundedTextError::Empty)) => {}
                Some(Err(BoundedTextError::TooLong)) => errors.push(ErrorCode::Payo208, field),
                Some(Err(BoundedTextError::Invalid)) => errors.push(ErrorCode::Req009, field),
            }
        }
        Self {
            amount,
            currency,
            receiver_id: text(&raw.receiver_id).and_then(ReceiverId::parse),
            account_id: text(&raw.account_id).and_then(ReceiverAccountId::parse),
            errors,
        }
    }
}

impl Parsed {
    /// Every check of a payout request against what the store read: the receiver (`PAYO201`,
    /// then nothing else about parties), the account of that receiver (`PAYO202`), the
    /// currency against the account's (`PAYO204`), and whether both can be paid (`PAYO205`).
    fn check(self, facts: &PlanningFacts) -> Result<Checked, ValidationErrors> {
        let Parsed {
            amount,
            currency,
            receiver_id,
            account_id,
            mut errors,
        } = self;
        let receiver = receiver_id.and_then(|id| facts.receivers.get(&id)).cloned();
        let Some(receiver) = receiver else {
            errors.0.insert(
                0,
                crate::validation::FieldError::new(ErrorCode::Payo201, "receiver_id"),
            );
            return Err(errors);
        };
        let account = account_id
            .and_then(|id| facts.accounts.get(&id))
            .filter(|a| a.receiver_id == receiver.id)
            .cloned();
        let Some(account) = account else {
            errors.push(ErrorCode::Payo202, "account_id");
            return Err(errors);
        };
        if currency.is_some_and(|c| c != account.method.asset())
            && !errors.0.iter().any(|e| e.code == ErrorCode::Payo204)
        {
            errors.push(ErrorCode::Payo204, "currency");
        }
        let unpayable = matches!(
            receiver.status,
            ReceiverStatus::Failed | ReceiverStatus::Inactive
        ) || account.status == AccountStatus::Failed;
        if unpayable {
            errors.push(ErrorCode::Payo205, "receiver_id");
        }
        let (Some(amount), Some(asset), true) = (amount, currency, errors.is_empty()) else {
            return Err(errors);
        };
        Ok(Checked {
            amount,
            asset,
            receiver,
            account,
        })
    }
}

/// The failure a single payout request reports for `code` on `field`.
pub(super) fn rejected_item(code: ErrorCode, field: &'static str) -> ValidationErrors {
    let mut errors = ValidationErrors::default();
    errors.push(code, field);
    errors
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
