//! `POST /api/payout/single` and `GET /api/payout/<id>`.

use super::query::query_pairs;
use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use domain::ErrorCode;
use domain::account::ReceiverAccount;
use domain::ids::MerchantId;
use domain::payout::query::ListPayoutsQuery;
use domain::payout::service::{
    CancelPayoutError, CreatePayoutError, GetPayoutError, ListPayoutsError, RawPayout,
};
use domain::payout::{Payout, PayoutStatus};
use domain::ports::LedgerEntry;
use domain::ports::LedgerEntryKind;
use domain::receiver::Receiver;
use domain::time::unix_millis;
use domain::validation::ValidationErrors;
use serde_json::{Value, json};

use super::auth::Authenticated;
use super::body::{fields_by_name, json_object};
use super::envelope;
use super::error::ApiError;
use crate::state::AppState;

const CREATE: &str = "Create payout";
const GET: &str = "Get payout";
const CANCEL: &str = "Cancel payout";
const LIST: &str = "List payouts";

/// `amount` may be a JSON integer (what clients send) or a string of digits (what the seed
/// documents); anything else is reported as the amount being invalid.
fn amount_text(value: Value, errors: &mut ValidationErrors) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Null => None,
        _ => {
            errors.push(ErrorCode::Payo203, "amount");
            None
        }
    }
}

/// `POST /api/payout/single`.
pub async fn create(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let mut object = json_object(CREATE, &request.body)?;
    let mut shape = ValidationErrors::default();
    let amount = object
        .remove("amount")
        .and_then(|v| amount_text(v, &mut shape));
    let mut fields = fields_by_name(
        object,
        &["receiver_id", "account_id", "currency", "reference", "note"],
        &mut shape,
    );
    let raw = RawPayout {
        receiver_id: fields.remove("receiver_id"),
        account_id: fields.remove("account_id"),
        amount,
        currency: fields.remove("currency"),
        reference: fields.remove("reference"),
        note: fields.remove("note"),
    };
    match state.payouts.create(&request.caller, &raw).await {
        Ok(payout) if shape.is_empty() => Ok(envelope::ok(
            "Payout created successfully",
            json!({ "payout_id": payout.id.to_string() }),
        )),
        Ok(_) => Err(ApiError::fields(CREATE, &shape)),
        Err(CreatePayoutError::Invalid(invalid)) => {
            let shaped: Vec<_> = shape.0.iter().map(|e| e.field.clone()).collect();
            shape
                .0
                .extend(invalid.0.into_iter().filter(|e| !shaped.contains(&e.field)));
            Err(ApiError::fields(CREATE, &shape))
        }
        Err(CreatePayoutError::Port(e)) => Err(ApiError::port(CREATE, &e)),
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

fn fee_data(payout: &Payout) -> Value {
    let t = payout.fee_template.as_ref();
    json!({
        "fee_value": payout.fee.to_string(),
        "feetemplate_id": t.map(|t| t.id.to_string()).unwrap_or_default(),
        "feegroup_id": t.map(|t| t.group_id.to_string()).unwrap_or_default(),
        "fixed": t.map_or(0, |t| t.fixed),
        "percentage": t.map_or(0.0, |t| t.percentage.as_f64()),
        "min_amount": t.map_or(0, |t| t.min_amount),
    })
}

/// The payout object of seed §2.1. With `detail` (ledger entries and merchant) it is the
/// get-by-id object: `transactions`, `merchant`, `fee_data.fee_value` and a numeric `amount`;
/// without, the list item: none of those, and `amount` as a string (seed).
fn payout_json(
    p: &Payout,
    receiver: &Receiver,
    account: &ReceiverAccount,
    detail: Option<(&[LedgerEntry], MerchantId)>,
) -> Value {
    let masked = |field: &str| {
        account
            .data
            .masked()
            .into_iter()
            .find(|(k, _)| *k == field)
            .map(|(_, v)| v)
    };
    let mut object = json!({
        "id": p.id.to_string(),
        "created_at": unix_millis(p.created_at).to_string(),
        "updated_at": unix_millis(p.updated_at).to_string(),
        "provider_reference": p.provider_reference,
        "batch_id": p.batch_id.map(|b| b.to_string()).unwrap_or_default(),
        "asset": p.asset.code(),
        "reference": p.reference.clone().unwrap_or_default(),
        "fee_data": fee_data(p),
        "note": p.note,
        "payout_data": {
            "status": provider_status(p.status),
            "transaction_is_duplicated": p.duplicate,
            "receiver_is_invalid": p.receiver_is_invalid,
            "accepted": !matches!(p.status, PayoutStatus::Cancelled | PayoutStatus::Failed),
            "errors": p.failure_reason.as_deref().map_or(Value::Null, |r| json!([r])),
            "transaction_id": p.provider_reference,
            "sender_is_invalid": false,
        },
        "status": p.status.as_str(),
        "amount": p.amount.get().to_string(),
        "subaccount": { "id": p.subaccount_id.to_string() },
        "receiver": {
            "id": receiver.id.to_string(),
            "firstname": receiver.first_name,
            "lastname": receiver.last_name,
            "email": receiver.email,
        },
        "receiver_account": {
            "id": account.id.to_string(),
            "email": receiver.email,
            "bsb": masked("bsb").unwrap_or_default(),
            "bank_code": masked("routing_number").or_else(|| masked("bic")).unwrap_or_default(),
            "account_number": masked("account_number").or_else(|| masked("iban")).or_else(|| masked("recipient")).unwrap_or_default(),
        },
        "payout_provider": { "id": "sandbox" },
    });
    match detail {
        Some((entries, merchant)) => {
            object["amount"] = json!(p.amount.get());
            object["merchant"] = json!(format!("MERC#{merchant}"));
            object["transactions"] = Value::Array(transactions(entries));
        }
        None => {
            if let Some(fee) = object["fee_data"].as_object_mut() {
                fee.remove("fee_value");
            }
        }
    }
    object
}

/// The payout's money movements: holds negative, reversals positive (contract §7.7).
fn transactions(entries: &[LedgerEntry]) -> Vec<Value> {
    entries
        .iter()
        .filter_map(|e| {
            let kind = match e.kind {
                LedgerEntryKind::PayoutHold | LedgerEntryKind::PayoutVoid => "payout",
                LedgerEntryKind::FeeHold | LedgerEntryKind::FeeVoid => "fee",
                // Posting moves the held money out of `pending`; the hold already shows it.
                LedgerEntryKind::Funding
                | LedgerEntryKind::PayoutPost
                | LedgerEntryKind::FeePost => return None,
            };
            Some(json!({
                "transaction_id": e.id.to_string(),
                "amount": e.available_delta,
                "asset": e.asset.code(),
                "status": "complete",
                "created_at": unix_millis(e.created_at).to_string(),
                "updated_at": unix_millis(e.created_at).to_string(),
                "transaction_type": kind,
            }))
        })
        .collect()
}

/// `POST /api/payout/<id>/cancel`.
pub async fn cancel(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    match state.payouts.cancel(&request.caller, &id).await {
        Ok(payout) => Ok(envelope::ok(
            "Payout cancelled successfully",
            json!({ "payout_id": payout.id.to_string(), "status": payout.status.as_str() }),
        )),
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
pub async fn get(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    match state.payouts.get(&request.caller, &id).await {
        Ok(d) => Ok(envelope::ok(
            "Payout found",
            payout_json(
                &d.payout,
                &d.receiver,
                &d.account,
                Some((&d.entries, d.merchant_id)),
            ),
        )),
        Err(GetPayoutError::NotFound) => Err(ApiError::code(GET, ErrorCode::Payo101)),
        Err(GetPayoutError::Port(e)) => Err(ApiError::port(GET, &e)),
    }
}

/// `GET /api/payout/`.
pub async fn list(
    state: Data<AppState>,
    request: Authenticated,
    http: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(LIST, &http)?;
    let query = ListPayoutsQuery::parse(&pairs).map_err(|e| ApiError::fields(LIST, &e))?;
    match state.payouts.list(&request.caller, &query).await {
        Ok(page) => {
            let items: Vec<Value> = page
                .items
                .iter()
                .map(|i| payout_json(&i.payout, &i.receiver, &i.account, None))
                .collect();
            Ok(envelope::list("Payouts found", items, page.lastkey))
        }
        Err(ListPayoutsError::Invalid(e)) => Err(ApiError::fields(LIST, &e)),
        Err(ListPayoutsError::Port(e)) => Err(ApiError::port(LIST, &e)),
    }
}
