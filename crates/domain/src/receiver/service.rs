//! The receiver use cases: create, get, list.

use std::sync::Arc;

use crate::auth::Caller;
use crate::codes::ErrorCode;
use crate::error::PortError;
use crate::events::{EventKind, OutboxEvent};
use crate::idempotency::WriteKey;
use crate::ids::{EventId, ReceiverId, SubaccountId};
use crate::paging::cursor::CursorKey;
use crate::paging::{Page, PageRequest, Position, list_start};
use crate::payout::change::{PayoutReaction, ReactionTrigger};
use crate::ports::{Clock, IdGenerator, KycCheckRequest, KycProvider};
use crate::receiver::input::{RawReceiver, ReceiverInput};
use crate::receiver::ports::{InsertReceiverError, ReceiverStore};
use crate::receiver::query::ListReceiversQuery;
use crate::receiver::{Address, KycOutcome, KycStatus, Receiver, ReceiverStatus};
use crate::validation::ValidationErrors;

/// Why a receiver was not created.
#[derive(Debug, thiserror::Error)]
pub enum CreateReceiverError {
    /// One or more fields failed validation (every failure listed), or the subaccount is not
    /// the caller's (`SUBA101`).
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// The subaccount already has a receiver with this e-mail (`REVR201`).
    #[error("e-mail already used")]
    EmailTaken,
    /// The subaccount already has a receiver with this reference (`REVR225`).
    #[error("reference already used")]
    ReferenceTaken,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why a receiver could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GetReceiverError {
    /// No receiver with this id in the caller's subaccount (`REVR101`).
    #[error("receiver not found")]
    NotFound,
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why receivers could not be listed.
#[derive(Debug, thiserror::Error)]
pub enum ListReceiversError {
    /// The query is invalid (every problem listed).
    #[error(transparent)]
    Invalid(ValidationErrors),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// Why a KYC outcome was not applied.
#[derive(Debug, thiserror::Error)]
pub enum KycOutcomeError {
    /// No such receiver in the subaccount (`REVR101`).
    #[error("receiver not found")]
    NotFound,
    /// Its KYC is already decided (`REVR301`).
    #[error("KYC is already {0:?}")]
    AlreadyDecided(KycStatus),
    /// Infrastructure failure.
    #[error(transparent)]
    Port(#[from] PortError),
}

/// One page of receivers and the `lastkey` of the next page.
#[derive(Debug, Clone, PartialEq)]
pub struct ReceiverPage {
    /// The receivers, newest first.
    pub receivers: Vec<Receiver>,
    /// The opaque cursor of the next page; `None` on the last page.
    pub lastkey: Option<String>,
}

const CURSOR_SCOPE: &str = "receivers";

/// A KYC decision planned for a receiver: what the store applies, in one transaction, while the
/// receiver's KYC is still `expected`.
#[derive(Debug)]
pub struct KycPlan {
    /// The receiver with its new `status`, `kyc_status` and `updated_at`.
    pub updated: Receiver,
    /// The KYC status it must still have (`pending`).
    pub expected: KycStatus,
    /// Its `receiverKycUpdate` event.
    pub events: Vec<OutboxEvent>,
    /// What happens to its payouts waiting for the decision (`unassessed`): on to `awaiting`
    /// or `pending`, or `failed` with the hold voided.
    pub reaction: PayoutReaction,
}

/// Plans `outcome` for `receiver` at `now`: the one decision rule shared by the provider's
/// outcomes, the sandbox helper and the operator's `admin kyc`. `Err` with the stored status
/// when its KYC is already decided.
pub fn plan_kyc(
    receiver: Receiver,
    outcome: KycOutcome,
    now: chrono::DateTime<chrono::Utc>,
    ids: &Arc<dyn IdGenerator>,
) -> Result<KycPlan, KycStatus> {
    let transition = receiver.kyc_status.apply(outcome).map_err(|e| e.from)?;
    let expected = receiver.kyc_status;
    let updated = Receiver {
        status: transition.status,
        kyc_status: transition.kyc_status,
        updated_at: now,
        ..receiver
    };
    let event = OutboxEvent::receiver(
        EventKind::ReceiverKycUpdate,
        EventId::from_uuid(ids.new_id()),
        &updated,
        now,
    );
    let reaction = PayoutReaction::new(
        match outcome {
            KycOutcome::Completed => ReactionTrigger::KycCompleted,
            KycOutcome::Failed => ReactionTrigger::KycFailed,
        },
        now,
        ids.clone(),
    );
    Ok(KycPlan {
        updated,
        expected,
        events: vec![event],
        reaction,
    })
}

/// Creates and reads receivers.
pub struct ReceiverService {
    store: Arc<dyn ReceiverStore>,
    kyc: Arc<dyn KycProvider>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    cursors: CursorKey,
}

impl ReceiverService {
    /// Wires the service to its ports.
    pub fn new(
        store: Arc<dyn ReceiverStore>,
        kyc: Arc<dyn KycProvider>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        cursors: CursorKey,
    ) -> Self {
        Self {
            store,
            kyc,
            clock,
            ids,
            cursors,
        }
    }

    /// Every check of [`Self::create`] that comes before storing (so not `REVR201`/`REVR225`),
    /// writing nothing: for a request whose body also has problems of its own, which must be
    /// reported with these and must not create anything.
    pub fn validate(&self, caller: &Caller, raw: &RawReceiver) -> Result<(), CreateReceiverError> {
        self.checked(caller, raw, self.clock.now().date_naive())
            .map(|_| ())
    }

    fn checked(
        &self,
        caller: &Caller,
        raw: &RawReceiver,
        today: chrono::NaiveDate,
    ) -> Result<ReceiverInput, CreateReceiverError> {
        let parsed = ReceiverInput::parse(raw, today);
        let foreign = raw
            .subaccount_id
            .as_deref()
            .map(str::trim)
            .is_some_and(|id| !id.is_empty() && id.chars().count() <= 255 && !caller.owns(id));
        match (parsed, foreign) {
            (Ok(input), false) => Ok(input),
            (Ok(_), true) => {
                let mut errors = ValidationErrors::default();
                errors.push(ErrorCode::Suba101, "subaccount_id");
                Err(CreateReceiverError::Invalid(errors))
            }
            (Err(mut errors), foreign) => {
                if foreign {
                    errors.0.insert(
                        0,
                        crate::validation::FieldError::new(ErrorCode::Suba101, "subaccount_id"),
                    );
                }
                Err(CreateReceiverError::Invalid(errors))
            }
        }
    }

    /// Validates the request, opens a KYC check, and stores the receiver (`pending`/`pending`)
    /// with its `receiverCreated` event in one transaction.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn create(
        &self,
        caller: &Caller,
        raw: &RawReceiver,
        key: &WriteKey<Receiver>,
    ) -> Result<Receiver, CreateReceiverError> {
        let now = self.clock.now();
        let input = self.checked(caller, raw, now.date_naive())?;
        let id = ReceiverId::from_uuid(self.ids.new_id());
        let full_name = [input.first_name.as_str(), input.last_name.as_str()].join(" ");
        let applicant_id = self
            .kyc
            .start_check(&KycCheckRequest {
                receiver_id: id,
                subaccount_id: caller.subaccount_id,
                full_name,
                email: input.email.as_str().to_owned(),
            })
            .await?;
        let receiver = Receiver {
            id,
            subaccount_id: caller.subaccount_id,
            first_name: input.first_name.as_str().to_owned(),
            middle_name: input
                .middle_name
                .as_ref()
                .map(|n| n.as_str().to_owned())
                .unwrap_or_default(),
            last_name: input.last_name.as_str().to_owned(),
            email: input.email.as_str().to_owned(),
            gender: input.gender,
            dob: input.dob.date(),
            dialcode: input.dialcode.as_str().to_owned(),
            phone: input.phone.as_str().to_owned(),
            address: Address {
                address: input.address.as_str().to_owned(),
                address2: input
                    .address2
                    .as_ref()
                    .map(|a| a.as_str().to_owned())
                    .unwrap_or_default(),
                city: input.city.as_str().to_owned(),
                state: input.state.as_str().to_owned(),
                country: input.country.clone(),
                postcode: input.postcode.as_str().to_owned(),
            },
            reference: input.reference.as_ref().map(|r| r.as_str().to_owned()),
            applicant_id,
            status: ReceiverStatus::Pending,
            kyc_status: KycStatus::Pending,
            created_at: now,
            updated_at: now,
        };
        let event = OutboxEvent::receiver(
            EventKind::ReceiverCreated,
            EventId::from_uuid(self.ids.new_id()),
            &receiver,
            now,
        );
        self.store
            .insert_receiver(&receiver, &[event], key)
            .await
            .map_err(|e| match e {
                InsertReceiverError::DuplicateEmail => CreateReceiverError::EmailTaken,
                InsertReceiverError::DuplicateReference => CreateReceiverError::ReferenceTaken,
                InsertReceiverError::Port(e) => CreateReceiverError::Port(e),
            })?;
        Ok(receiver)
    }

    /// Applies the KYC provider's decision for a receiver of `subaccount` (docs/API.md,
    /// `POST /api/test-helpers/kyc`): `completed` makes it `active`, `failed` makes it `failed`,
    /// with a `receiverKycUpdate` event, once; a second outcome for the same check is refused.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, outcome = ?outcome)
    )]
    pub async fn apply_kyc_outcome(
        &self,
        subaccount: SubaccountId,
        raw_id: &str,
        outcome: KycOutcome,
        key: &WriteKey<Receiver>,
    ) -> Result<Receiver, KycOutcomeError> {
        let id = ReceiverId::parse(raw_id).ok_or(KycOutcomeError::NotFound)?;
        let receiver = self
            .store
            .find_receiver(subaccount, id)
            .await?
            .ok_or(KycOutcomeError::NotFound)?;
        let plan = plan_kyc(receiver, outcome, self.clock.now(), &self.ids)
            .map_err(KycOutcomeError::AlreadyDecided)?;
        if self
            .store
            .apply_kyc(
                &plan.updated,
                plan.expected,
                &plan.events,
                &plan.reaction,
                key,
            )
            .await?
        {
            return Ok(plan.updated);
        }
        // Decided concurrently: report what is stored now.
        let stored = self
            .store
            .find_receiver(subaccount, id)
            .await?
            .ok_or(KycOutcomeError::NotFound)?;
        Err(KycOutcomeError::AlreadyDecided(stored.kyc_status))
    }

    /// The caller's receiver with this id. A malformed id, another subaccount's receiver and a
    /// missing one all answer `NotFound`.
    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %caller.subaccount_id))]
    pub async fn get(&self, caller: &Caller, raw_id: &str) -> Result<Receiver, GetReceiverError> {
        let id = ReceiverId::parse(raw_id).ok_or(GetReceiverError::NotFound)?;
        self.store
            .find_receiver(caller.subaccount_id, id)
            .await?
            .ok_or(GetReceiverError::NotFound)
    }

    /// One page of the caller's receivers matching the query's filters.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %caller.subaccount_id, limit = query.limit)
    )]
    pub async fn list(
        &self,
        caller: &Caller,
        query: &ListReceiversQuery,
    ) -> Result<ReceiverPage, ListReceiversError> {
        let after = list_start(
            caller,
            query.subaccount_id.as_deref(),
            ErrorCode::Revr202,
            query.lastkey.as_deref(),
            &self.cursors,
            CURSOR_SCOPE,
        )
        .map_err(ListReceiversError::Invalid)?;
        let page = PageRequest {
            limit: query.limit,
            after,
        };
        let rows = self
            .store
            .list_receivers(caller.subaccount_id, &query.filter, &page)
            .await?;
        let page = Page::from_overfetch(rows, query.limit, |r: &Receiver| Position {
            created_at: r.created_at,
            id: r.id.as_uuid(),
        });
        Ok(ReceiverPage {
            lastkey: page
                .next
                .map(|p| self.cursors.seal(CURSOR_SCOPE, caller.subaccount_id, &p)),
            receivers: page.items,
        })
    }
}

#[cfg(test)]
#[path = "service_tests.rs"]
mod tests;
