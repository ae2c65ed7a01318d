//! `POST /api/payout/single` and `GET /api/payout/<id>`.

use super::query::query_pairs;
use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse, ResponseError};
use domain::ErrorCode;
use domain::account::{PayoutAccountSlot, ReceiverAccount};
use domain::idempotency::KeyMode;
use domain::ids::MerchantId;
use domain::ledger::LedgerEntry;
use domain::ledger::LedgerEntryKind;
use domain::payout::query::ListPayoutsQuery;
use domain::payout::service::{
    CancelPayoutError, CreatePayoutError, GetPayoutError, ListPayoutsError, RawPayout,
};
use domain::payout::{Payout, PayoutStatus};
use domain::receiver::Receiver;
use domain::time::unix_millis;
use domain::validation::ValidationErrors;
use serde::Serialize;
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};

use super::auth::{AdmittedInWrite, Authenticated};
use super::body::{fields_by_name, json_object, merge_field_errors, text_value};
use super::envelope::{self, Listing, Success};
use super::error::ApiError;
use super::idempotency::written;
use super::schemas::{AmountInput, AssetCode, AssetInput, PayoutStatusName};
use crate::state::AppState;

const CREATE: &str = "Create payout";
const GET: &str = "Get payout";
const CANCEL: &str = "Cancel payout";
const LIST: &str = "List payouts";

/// `amount` may be a JSON integer (what clients send) or a string of digits (what the provider's
/// API documents); anything else is reported as the amount being invalid.
/// The fields of a payout body (`POST /api/payout/single`, or an item of a bulk request) as the
/// service reads them; the body's own problems (a field of the wrong type, an unknown field) go
/// to `shape`.
pub(super) fn raw_payout(
    mut object: serde_json::Map<String, Value>,
    shape: &mut ValidationErrors,
) -> RawPayout {
    let amount = object.remove("amount").and_then(|v| amount_text(v, shape));
    let mut fields = fields_by_name(
        object,
        &["receiver_id", "account_id", "currency", "reference", "note"],
        shape,
    );
    RawPayout {
        receiver_id: fields.remove("receiver_id"),
        account_id: fields.remove("account_id"),
        amount,
        currency: fields.remove("currency"),
        reference: fields.remove("reference"),
        note: fields.remove("note"),
    }
}

pub(super) fn amount_text(value: Value, errors: &mut ValidationErrors) -> Option<String> {
    match value {
        Value::String(s) => text_value("amount", s, errors),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Null => None,
        _ => {
            errors.push(ErrorCode::Payo203, "amount");
            None
        }
    }
}

/// `POST /api/payout/single`.
#[utoipa::path(
    post,
    path = "/api/payout/single",
    tag = "Payouts",
    operation_id = "createPayout",
    summary = "Create a payout",
    description = "Holds `amount + fee` from the available balance and writes `payoutCreated`. \
        The payout starts `unassessed` while the receiver's KYC is pending, else `awaiting` \
        until the account is confirmed, else `pending`. Independent failures are reported \
        together (`PAYO201`..`PAYO205`, `PAYO208`, `REQ009`); then `PAYO206` reference taken and \
        `PAYO207` insufficient balance.",
    request_body = CreatePayoutBody,
    responses((status = 200, description = "`Payout created successfully`", body = Success<PayoutCreated>)),
)]
pub async fn create(
    state: Data<AppState>,
    req: HttpRequest,
    request: AdmittedInWrite,
) -> Result<HttpResponse, ApiError> {
    let AdmittedInWrite(mut request) = request;
    match next_action(&request.key, create_once(&state, &request).await) {
        NextAction::Answer(answer) => {
            if answer.is_ok() && request.key.admission().is_some() {
                request.admitted(&req);
            }
            answer
        }
        NextAction::AdmitThenAnswer(refusal) => {
            request.admit(&req).await?;
            Err(refusal)
        }
        NextAction::AdmitThenWrite => {
            request.admit(&req).await?;
            match create_once(&state, &request).await {
                Ok(response) => Ok(response),
                Err(NotCreated::Refused(e)) => Err(e),
                // Claimed now: only a write that admits its request answers this.
                Err(NotCreated::NotAdmitted) => Err(ApiError::code(CREATE, ErrorCode::Sys500)),
            }
        }
    }
}

/// What [`create`] does once the use case has run with the request's key as it was taken
/// ([`next_action`] decides, once).
enum NextAction {
    /// Answer with this: the payout created (by a write that admitted its request, or under a
    /// key claimed before), a refusal of a request claimed before or unkeyed, or a server error
    /// (nothing admitted, or the commit in doubt and a retry finds the key).
    Answer(Result<HttpResponse, ApiError>),
    /// The request was to be admitted by its write and was refused before writing: admit it as
    /// any other request (its nonce recorded and its key claimed, with the answers that gives:
    /// `AUTH106`, a replay, `IDEM001`, `IDEM002`), then answer with the refusal, which the
    /// middleware stores with the key.
    AdmitThenAnswer(ApiError),
    /// The write could not admit its request (a nonce or key seen before, or anything that
    /// would refuse the payout) and wrote nothing: admit it, then write it under its claim, the
    /// only way its answer can be known.
    AdmitThenWrite,
}

/// The next action for a request of key `mode` whose use case answered `run`.
fn next_action(mode: &KeyMode, run: Result<HttpResponse, NotCreated>) -> NextAction {
    let admitting = matches!(mode, KeyMode::AdmittedByWrite(_));
    match run {
        Ok(response) => NextAction::Answer(Ok(response)),
        Err(NotCreated::Refused(e)) if admitting && !e.status_code().is_server_error() => {
            NextAction::AdmitThenAnswer(e)
        }
        Err(NotCreated::Refused(e)) => NextAction::Answer(Err(e)),
        Err(NotCreated::NotAdmitted) if admitting => NextAction::AdmitThenWrite,
        // Only a write that admits its request answers this, and this one did not admit.
        Err(NotCreated::NotAdmitted) => {
            NextAction::Answer(Err(ApiError::code(CREATE, ErrorCode::Sys500)))
        }
    }
}

/// Why a run of [`create`] created nothing.
enum NotCreated {
    /// The answer.
    Refused(ApiError),
    /// The write was to admit the request and did not (`CreatePayoutError::NotAdmitted`).
    NotAdmitted,
}

impl From<ApiError> for NotCreated {
    fn from(e: ApiError) -> Self {
        Self::Refused(e)
    }
}

/// One run of the use case with the request's key as it stands (claimed, to be admitted by
/// the write, or none).
async fn create_once(
    state: &AppState,
    request: &Authenticated,
) -> Result<HttpResponse, NotCreated> {
    let object = json_object(CREATE, &request.body)?;
    let mut shape = ValidationErrors::default();
    let raw = raw_payout(object, &mut shape);
    if !shape.is_empty() {
        // The body has problems of its own: report them with the field checks, store nothing.
        match state.payouts.validate(&request.caller, &raw).await {
            Err(CreatePayoutError::Invalid(invalid)) => merge_field_errors(&mut shape, invalid),
            Err(CreatePayoutError::NotAdmitted) => return Err(NotCreated::NotAdmitted),
            Err(CreatePayoutError::Port(e)) => return Err(ApiError::port(CREATE, &e).into()),
            Ok(()) => {}
        }
        return Err(ApiError::fields(CREATE, &shape).into());
    }
    let key = request.write_key(|payout: &Payout| {
        envelope::stored_ok(
            "Payout created successfully",
            PayoutCreated {
                payout_id: payout.id.to_string(),
            },
        )
    });
    match state.payouts.create(&request.caller, &raw, &key).await {
        Ok(payout) => Ok(written(CREATE, &key, &payout)?),
        Err(CreatePayoutError::Invalid(invalid)) => Err(ApiError::fields(CREATE, &invalid).into()),
        Err(CreatePayoutError::NotAdmitted) => Err(NotCreated::NotAdmitted),
        Err(CreatePayoutError::Port(e)) => Err(ApiError::port(CREATE, &e).into()),
    }
}

/// The rail-side status the provider reports in `payout_data.status`.
fn provider_status(status: PayoutStatus) -> &'static str {
    match status {
        PayoutStatus::Awaiting | PayoutStatus::Pending | PayoutStatus::Unassessed => "PENDING",
        PayoutStatus::InProgress => "IN PROGRESS",
        PayoutStatus::Successful | PayoutStatus::SuccessfulPendingKyc => "SUCCESSFUL",
        PayoutStatus::Cancelled => "CANCELLED",
        PayoutStatus::Failed => "FAILED",
    }
}

/// The body of `POST /api/payout/single` (read field by field: see [`create`]). Values are
/// strings or `null` (`amount` may also be an integer); unknown fields are `REQ005`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreatePayoutBody {
    /// A receiver of the caller's subaccount.
    #[schema(format = Uuid, examples("5f0c6a7e-8b9d-4c1e-a2f3-0d4b6e8a1c2f"))]
    pub receiver_id: String,
    /// An account of that receiver.
    #[schema(format = Uuid, examples("9a1b2c3d-4e5f-4a6b-8c7d-0e1f2a3b4c5d"))]
    pub account_id: String,
    /// Minor units, 1 to 10^12: a JSON integer or a string of digits.
    #[schema(value_type = AmountInput)]
    pub amount: String,
    /// The account's asset, either case.
    #[schema(value_type = AssetInput)]
    pub currency: String,
    /// Unique among the subaccount's payouts. No control, format (bidirectional override,
    /// zero-width, …) or invisible character (`REQ009`).
    #[schema(max_length = 255, examples("invoice-1001"))]
    pub reference: Option<String>,
    /// Free text. No control, format or invisible character (`REQ009`).
    #[schema(max_length = 255, examples("November commission"))]
    pub note: Option<String>,
}

/// The query of `GET /api/payout/`. Unknown parameters are `REQ005`.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListPayoutsParams {
    /// The caller's subaccount (missing: `REQ002`; another: `SUBA101`).
    #[param(format = Uuid)]
    pub subaccount_id: String,
    /// Page size, 1 to 100 (default 10).
    #[param(pattern = "^(100|[1-9][0-9]?)$")]
    pub limit: Option<String>,
    /// The previous page's cursor (`REQ003` if tampered or foreign).
    pub lastkey: Option<String>,
    /// Status code: 0 awaiting, 1 pending, 2 unassessed, 3 in progress, 4 successful,
    /// 5 cancelled, 6 failed, 7 successful pending KYC.
    #[param(pattern = "^[0-7]$")]
    pub status: Option<String>,
    /// Created at or after, `YYYY-MM-DD hh:mm` UTC (`PAYO302` if malformed).
    #[param(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}$")]
    pub from: Option<String>,
    /// Created up to this minute inclusive, `YYYY-MM-DD hh:mm` UTC.
    #[param(pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}$")]
    pub to: Option<String>,
    /// The caller's reference.
    #[param(max_length = 255)]
    pub reference: Option<String>,
}

/// `fee_data` of a payout in a list.
#[derive(Serialize, ToSchema)]
#[schema(as = PayoutFeeData)]
pub struct FeeData {
    /// The fee template's id, or `""` without a template.
    feetemplate_id: String,
    /// The fee group's id, or `""`.
    feegroup_id: String,
    /// Fixed part, minor units.
    fixed: i64,
    /// Percentage of the amount.
    percentage: f64,
    /// Smallest fee, minor units.
    min_amount: i64,
}

/// `fee_data` of `GET /api/payout/{id}`: with the fee charged.
#[derive(Serialize, ToSchema)]
#[schema(as = PayoutFeeDataDetail)]
pub struct FeeDataDetail {
    /// The fee charged, minor units, as a string.
    #[schema(pattern = "^[0-9]+$")]
    fee_value: String,
    #[serde(flatten)]
    template: FeeData,
}

/// `payout_data`: the payout as the rail reports it.
#[derive(Serialize, ToSchema)]
pub struct PayoutData {
    /// The rail's status.
    #[schema(value_type = String, pattern = "^(PENDING|IN PROGRESS|SUCCESSFUL|CANCELLED|FAILED)$")]
    status: &'static str,
    /// Another payout of the subaccount had the same account, amount and currency in the
    /// previous 24 hours (a warning).
    transaction_is_duplicated: bool,
    /// The rail refused the receiver's account.
    receiver_is_invalid: bool,
    /// Not cancelled or failed.
    accepted: bool,
    /// The rail's reason for a failure, else `null`.
    errors: Option<Vec<String>>,
    /// The rail's reference, or `""`.
    transaction_id: String,
    /// Always `false`.
    sender_is_invalid: bool,
}

/// `subaccount` / `payout_provider` of a payout.
#[derive(Serialize, ToSchema)]
pub struct IdRef {
    /// The id.
    id: String,
}

/// `receiver` of a payout (note the provider's spelling of the names).
#[derive(Serialize, ToSchema)]
pub struct PayoutReceiver {
    #[schema(format = Uuid)]
    id: String,
    firstname: String,
    lastname: String,
    email: String,
}

/// `receiver_account` of a payout: values masked, `""` where the method has none.
#[derive(Serialize, ToSchema)]
pub struct PayoutAccount {
    #[schema(format = Uuid)]
    id: String,
    /// The receiver's e-mail.
    email: String,
    bsb: String,
    /// Routing number or BIC.
    bank_code: String,
    /// Account number, IBAN or e-mail recipient.
    account_number: String,
}

/// The fields of a payout shared by the list and the get-by-id object (the provider's payout
/// object).
#[derive(Serialize, ToSchema)]
pub struct PayoutCommon {
    #[schema(format = Uuid)]
    id: String,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    created_at: String,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    updated_at: String,
    /// The rail's reference, or `""` before submission.
    provider_reference: String,
    /// The batch, or `""` before the payout joins one.
    batch_id: String,
    #[schema(value_type = AssetCode)]
    asset: &'static str,
    /// The caller's reference, or `""`.
    reference: String,
    note: String,
    payout_data: PayoutData,
    #[schema(value_type = PayoutStatusName)]
    status: &'static str,
    subaccount: IdRef,
    receiver: PayoutReceiver,
    receiver_account: PayoutAccount,
    payout_provider: IdRef,
}

/// A payout in `GET /api/payout/`: `amount` is a string (as in the provider's API).
#[derive(Serialize, ToSchema)]
#[schema(as = PayoutListItem)]
pub struct PayoutItem {
    #[serde(flatten)]
    common: PayoutCommon,
    /// Minor units, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    amount: String,
    fee_data: FeeData,
}

/// A payout in `GET /api/payout/{id}`: `amount` a number, with `merchant` and `transactions`.
#[derive(Serialize, ToSchema)]
#[schema(as = Payout)]
pub struct PayoutDetail {
    #[serde(flatten)]
    common: PayoutCommon,
    /// Minor units.
    amount: i64,
    /// `MERC#<merchant id>`.
    merchant: String,
    fee_data: FeeDataDetail,
    /// Holds negative, reversals positive.
    transactions: Vec<Transaction>,
}

/// One money movement of a payout.
#[derive(Serialize, ToSchema)]
#[schema(as = PayoutTransaction)]
pub struct Transaction {
    #[schema(format = Uuid)]
    transaction_id: String,
    /// Minor units: negative for a hold, positive for its reversal.
    amount: i64,
    #[schema(value_type = AssetCode)]
    asset: &'static str,
    /// Always `complete`.
    #[schema(value_type = String, pattern = "^complete$")]
    status: &'static str,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    created_at: String,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    updated_at: String,
    /// `payout` or `fee`.
    #[schema(value_type = String, pattern = "^(payout|fee)$")]
    transaction_type: &'static str,
}

/// The payload of a created payout.
#[derive(Serialize, ToSchema)]
pub struct PayoutCreated {
    #[schema(format = Uuid)]
    payout_id: String,
}

/// The payload of a cancelled payout.
#[derive(Serialize, ToSchema)]
pub struct PayoutCancelled {
    #[schema(format = Uuid)]
    payout_id: String,
    /// `cancelled`.
    #[schema(value_type = PayoutStatusName)]
    status: &'static str,
}

fn fee_data(payout: &Payout) -> FeeData {
    let t = payout.fee_template.as_ref();
    FeeData {
        feetemplate_id: t.map(|t| t.id.to_string()).unwrap_or_default(),
        feegroup_id: t.map(|t| t.group_id.to_string()).unwrap_or_default(),
        fixed: t.map_or(0, |t| t.fixed),
        percentage: t.map_or(0.0, |t| t.percentage.as_f64()),
        min_amount: t.map_or(0, |t| t.min_amount),
    }
}

/// The masked values of `receiver_account`, `""` where the method has none.
#[derive(Default)]
struct PayoutAccountSlots {
    bsb: String,
    bank_code: String,
    account_number: String,
}

impl PayoutAccountSlots {
    fn get(&mut self, slot: PayoutAccountSlot) -> &mut String {
        match slot {
            PayoutAccountSlot::Bsb => &mut self.bsb,
            PayoutAccountSlot::BankCode => &mut self.bank_code,
            PayoutAccountSlot::AccountNumber => &mut self.account_number,
        }
    }
}

/// The fields of the provider's payout object that the list and the get-by-id object share.
fn payout_common(p: &Payout, receiver: &Receiver, account: &ReceiverAccount) -> PayoutCommon {
    let mut slots = PayoutAccountSlots::default();
    for (field, shown) in account.data.masked() {
        if let Some(slot) = field.payout_slot() {
            *slots.get(slot) = shown;
        }
    }
    PayoutCommon {
        id: p.id.to_string(),
        created_at: unix_millis(p.created_at).to_string(),
        updated_at: unix_millis(p.updated_at).to_string(),
        provider_reference: p.provider_reference.clone(),
        batch_id: p.batch_id.map(|b| b.to_string()).unwrap_or_default(),
        asset: p.asset.code(),
        reference: p.reference.clone().unwrap_or_default(),
        note: p.note.clone(),
        payout_data: PayoutData {
            status: provider_status(p.status),
            transaction_is_duplicated: p.duplicate,
            receiver_is_invalid: p.receiver_is_invalid,
            accepted: !matches!(p.status, PayoutStatus::Cancelled | PayoutStatus::Failed),
            errors: p.failure_reason.clone().map(|r| vec![r]),
            transaction_id: p.provider_reference.clone(),
            sender_is_invalid: false,
        },
        status: p.status.as_str(),
        subaccount: IdRef {
            id: p.subaccount_id.to_string(),
        },
        receiver: PayoutReceiver {
            id: receiver.id.to_string(),
            firstname: receiver.first_name.clone(),
            lastname: receiver.last_name.clone(),
            email: receiver.email.clone(),
        },
        receiver_account: PayoutAccount {
            id: account.id.to_string(),
            email: receiver.email.clone(),
            bsb: slots.bsb,
            bank_code: slots.bank_code,
            account_number: slots.account_number,
        },
        payout_provider: IdRef {
            id: "sandbox".to_owned(),
        },
    }
}

/// The payout object of `GET /api/payout/{id}`: with `transactions`, `merchant`,
/// `fee_data.fee_value` and a numeric `amount`.
fn payout_detail(
    p: &Payout,
    receiver: &Receiver,
    account: &ReceiverAccount,
    entries: &[LedgerEntry],
    merchant: MerchantId,
) -> PayoutDetail {
    PayoutDetail {
        common: payout_common(p, receiver, account),
        amount: p.amount.get(),
        merchant: format!("MERC#{merchant}"),
        fee_data: FeeDataDetail {
            fee_value: p.fee.get().to_string(),
            template: fee_data(p),
        },
        transactions: transactions(entries),
    }
}

/// A payout of the list: none of the detail, and `amount` as a string (as in the provider's API).
fn payout_item(p: &Payout, receiver: &Receiver, account: &ReceiverAccount) -> PayoutItem {
    PayoutItem {
        common: payout_common(p, receiver, account),
        amount: p.amount.get().to_string(),
        fee_data: fee_data(p),
    }
}

/// The payout's money movements: holds negative, reversals (and a bank's return of a paid
/// payout's amount) positive (docs/API.md, `GET /api/payout/{id}`).
fn transactions(entries: &[LedgerEntry]) -> Vec<Transaction> {
    entries
        .iter()
        .filter_map(|e| {
            let kind = match e.kind {
                LedgerEntryKind::PayoutHold
                | LedgerEntryKind::PayoutVoid
                | LedgerEntryKind::PayoutReturn => "payout",
                LedgerEntryKind::FeeHold | LedgerEntryKind::FeeVoid => "fee",
                // Posting moves the held money out of `pending`; the hold already shows it.
                LedgerEntryKind::Funding
                | LedgerEntryKind::PayoutPost
                | LedgerEntryKind::FeePost => return None,
            };
            Some(Transaction {
                transaction_id: e.id.to_string(),
                amount: e.available_delta,
                asset: e.asset.code(),
                status: "complete",
                created_at: unix_millis(e.created_at).to_string(),
                updated_at: unix_millis(e.created_at).to_string(),
                transaction_type: kind,
            })
        })
        .collect()
}

/// `POST /api/payout/<id>/cancel`.
#[utoipa::path(
    post,
    path = "/api/payout/{id}/cancel",
    tag = "Payouts",
    operation_id = "cancelPayout",
    summary = "Cancel a payout",
    description = "From `awaiting`, `unassessed` or `pending` only (else `PAYO301`, naming the \
        status); the hold goes back to `available`. `PAYO101` for an unknown id or another \
        subaccount's payout. The body is not read.",
    params(("id" = String, Path, format = Uuid, description = "The payout id.")),
    responses((status = 200, description = "`Payout cancelled successfully`", body = Success<PayoutCancelled>)),
)]
pub async fn cancel(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let key = request.write_key(|payout: &Payout| {
        envelope::stored_ok(
            "Payout cancelled successfully",
            PayoutCancelled {
                payout_id: payout.id.to_string(),
                status: payout.status.as_str(),
            },
        )
    });
    match state.payouts.cancel(&request.caller, &id, &key).await {
        Ok(payout) => written(CANCEL, &key, &payout),
        Err(CancelPayoutError::NotFound) => Err(ApiError::code(CANCEL, ErrorCode::Payo101)),
        Err(CancelPayoutError::NotCancellable(status)) => Err(ApiError::code_with_message(
            CANCEL,
            ErrorCode::Payo301,
            format!("Payout cannot be cancelled in status {}", status.as_str()),
        )),
        Err(CancelPayoutError::Port(e)) => Err(ApiError::port(CANCEL, &e)),
    }
}

/// `GET /api/payout/<id>`.
#[utoipa::path(
    get,
    path = "/api/payout/{id}",
    tag = "Payouts",
    operation_id = "getPayout",
    summary = "Get a payout",
    description = "`PAYO101` for an unknown id or another subaccount's payout.",
    params(("id" = String, Path, format = Uuid, description = "The payout id.")),
    responses((status = 200, description = "`Payout found`", body = Success<PayoutDetail>)),
)]
pub async fn get(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    match state.payouts.get(&request.caller, &id).await {
        Ok(d) => Ok(envelope::ok(
            "Payout found",
            payout_detail(
                &d.payout,
                &d.receiver,
                &d.account,
                &d.entries,
                d.merchant_id,
            ),
        )),
        Err(GetPayoutError::NotFound) => Err(ApiError::code(GET, ErrorCode::Payo101)),
        Err(GetPayoutError::Port(e)) => Err(ApiError::port(GET, &e)),
    }
}

/// `GET /api/payout/` (also served without the trailing slash: see [`list_without_slash`]).
#[utoipa::path(
    get,
    path = "/api/payout/",
    tag = "Payouts",
    operation_id = "listPayouts",
    summary = "List payouts",
    description = "The caller's payouts, newest first, keyset paged; items have no \
        `transactions`, `merchant` or `fee_data.fee_value`, and `amount` is a string.",
    params(ListPayoutsParams),
    responses((status = 200, description = "`Payouts found`", body = Listing<PayoutItem>)),
)]
pub async fn list(
    state: Data<AppState>,
    request: Authenticated,
    http: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(LIST, &http)?;
    let query = ListPayoutsQuery::parse(&pairs).map_err(|e| ApiError::fields(LIST, &e))?;
    match state.payouts.list(&request.caller, &query).await {
        Ok(page) => {
            let items: Vec<PayoutItem> = page
                .items
                .iter()
                .map(|i| payout_item(&i.payout, &i.receiver, &i.account))
                .collect();
            Ok(envelope::list("Payouts found", items, page.lastkey))
        }
        Err(ListPayoutsError::Invalid(e)) => Err(ApiError::fields(LIST, &e)),
        Err(ListPayoutsError::Port(e)) => Err(ApiError::port(LIST, &e)),
    }
}

/// `GET /api/payout`: the same as `GET /api/payout/` (documented separately because it is a
/// route of its own).
#[utoipa::path(
    get,
    path = "/api/payout",
    tag = "Payouts",
    operation_id = "listPayoutsWithoutSlash",
    summary = "List payouts (the same as `GET /api/payout/`)",
    params(ListPayoutsParams),
    responses((status = 200, description = "`Payouts found`", body = Listing<PayoutItem>)),
)]
pub async fn list_without_slash(
    state: Data<AppState>,
    request: Authenticated,
    http: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    list(state, request, http).await
}
