//! `POST /api/payout/bulk`: up to 1000 payouts in one request, one transaction.

use std::borrow::Cow;

use actix_web::web::Data;
use actix_web::{HttpResponse, ResponseError};
use domain::ErrorCode;
use domain::payout::bulk::{BulkPayoutError, MAX_BULK_ITEMS};
use domain::payout::ports::{BulkItemOutcome, BulkPayoutResult};
use domain::payout::service::{CreatePayoutError, RawPayout};
use domain::validation::ValidationErrors;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::auth::Authenticated;
use super::body::{json_object, merge_field_errors};
use super::envelope::{self, Success};
use super::error::{ApiError, ErrorItem, MAX_ERROR_ITEMS};
use super::idempotency::written;
use super::payouts::{CreatePayoutBody, raw_payout};
use crate::state::AppState;

const BULK: &str = "Bulk payout";

/// The largest body this route accepts (other routes: [`super::MAX_BODY_BYTES`]).
pub const MAX_BULK_BODY_BYTES: usize = 1024 * 1024;

const PROCESSED: &str = "Bulk payout processed";

/// `POST /api/payout/bulk`.
#[utoipa::path(
    post,
    path = "/api/payout/bulk",
    tag = "Payouts",
    operation_id = "createPayoutsInBulk",
    summary = "Create up to 1000 payouts at once",
    description = "Each item is a `POST /api/payout/single` body whose `reference` is required \
        (`PAYO210`) and unique within the request (`PAYO206`). Items are checked as single \
        payouts are and applied in request order in one transaction: each holds `amount + fee` \
        from what the items before it left (`PAYO207` once the balance is short). Without \
        `atomic` every item that passes is created and the others carry their errors; with \
        `\"atomic\": true` a single failing item means nothing is created: 400 `PAYO209` with \
        the same items. 1 to 1000 items (`PAYO212`); the body may be up to 1 MiB. The answer \
        lists at most 50 problems over all its items, in item order; a failed item past them \
        has an empty `error`, and `unlisted_errors` counts the problems left out.",
    request_body = BulkPayoutBody,
    responses(
        (status = 200, description = "`Bulk payout processed`", body = Success<BulkPayoutAnswer>),
        (status = 400, description = "The failure envelope; with `PAYO209` (an atomic request had a failing item; nothing was created) it also carries `payload` with the items", body = BulkPayoutRefused),
    ),
)]
pub async fn create(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let mut object = json_object(BULK, &request.body)?;
    let mut shape = ValidationErrors::default();
    let atomic = match object.remove("atomic") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(atomic)) => atomic,
        Some(_) => {
            shape.push(ErrorCode::Req004, "atomic");
            false
        }
    };
    let payouts = object.remove("payouts");
    for unknown in object.keys() {
        shape.push(ErrorCode::Req005, unknown.clone());
    }
    let items = match payouts {
        Some(Value::Array(items)) => Some(items),
        None | Some(Value::Null) => {
            shape.push(ErrorCode::Payo212, "payouts");
            None
        }
        Some(_) => {
            shape.push(ErrorCode::Req004, "payouts");
            None
        }
    };
    let Some(items) = items.filter(|_| shape.is_empty()) else {
        return Err(ApiError::fields(BULK, &shape));
    };
    if items.is_empty() || items.len() > MAX_BULK_ITEMS {
        return Err(ApiError::field(BULK, ErrorCode::Payo212, "payouts"));
    }
    let mut raws = Vec::with_capacity(items.len());
    for (index, item) in items.into_iter().enumerate() {
        raws.push(read_item(&state, &request, index, item).await?);
    }
    let key = request.write_key(|result: &BulkPayoutResult| {
        envelope::stored_ok(PROCESSED, BulkPayoutAnswer::of(result))
    });
    match state
        .payouts
        .create_bulk(&request.caller, &raws, atomic, &key)
        .await
    {
        Ok(result) if result.atomic && result.failed() > 0 => Ok(refused(&result)),
        Ok(result) => written(BULK, &key, &result),
        Err(BulkPayoutError::ItemCount) => {
            Err(ApiError::field(BULK, ErrorCode::Payo212, "payouts"))
        }
        Err(BulkPayoutError::Port(e)) => Err(ApiError::port(BULK, &e)),
    }
}

/// Item `index` of the body as a single payout reads it: `Err` with its problems when it is
/// not an object of string fields (with the field checks a single payout would add).
async fn read_item(
    state: &AppState,
    request: &Authenticated,
    index: usize,
    item: Value,
) -> Result<Result<RawPayout, ValidationErrors>, ApiError> {
    let Value::Object(object) = item else {
        let mut errors = ValidationErrors::default();
        errors.push(ErrorCode::Req004, format!("payouts[{index}]"));
        return Ok(Err(errors));
    };
    let mut shape = ValidationErrors::default();
    let raw = raw_payout(object, &mut shape);
    if shape.is_empty() {
        return Ok(Ok(raw));
    }
    match state.payouts.validate(&request.caller, &raw).await {
        Err(CreatePayoutError::Invalid(invalid)) => merge_field_errors(&mut shape, invalid),
        Err(CreatePayoutError::Port(e)) => return Err(ApiError::port(BULK, &e)),
        // Validating writes nothing, so it has no request to admit.
        Err(CreatePayoutError::NotAdmitted) => return Err(ApiError::code(BULK, ErrorCode::Sys500)),
        Ok(()) => {}
    }
    Ok(Err(shape))
}

/// 400 `PAYO209` with the items: an atomic request that created nothing.
fn refused(result: &BulkPayoutResult) -> HttpResponse {
    let code = ErrorCode::Payo209;
    let status = actix_web::http::StatusCode::from_u16(code.http_status())
        .unwrap_or(actix_web::http::StatusCode::BAD_REQUEST);
    let error = [ErrorItem {
        code: code.as_str(),
        message: Cow::Borrowed(code.message()),
        field: None,
    }];
    let body = BulkPayoutRefused {
        message: format!("{BULK} failed"),
        error: error.to_vec(),
        payload: Some(BulkPayoutAnswer::of(result)),
    };
    match serde_json::to_vec(&body) {
        Ok(bytes) => HttpResponse::build(status)
            .content_type("application/json")
            .body(bytes),
        Err(_) => ApiError::code(BULK, ErrorCode::Sys500).error_response(),
    }
}

/// The body of `POST /api/payout/bulk`. Unknown fields are `REQ005`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BulkPayoutBody {
    /// 1 to 1000 payouts, each a `POST /api/payout/single` body with `reference` required.
    #[schema(min_items = 1, max_items = 1000)]
    pub payouts: Vec<CreatePayoutBody>,
    /// All or nothing (default `false`: every item that passes is created).
    pub atomic: Option<bool>,
}

/// What became of each item, in request order.
#[derive(Serialize, ToSchema)]
pub struct BulkPayoutAnswer {
    /// Payouts created (0 when an atomic request failed).
    created: usize,
    /// Items refused.
    failed: usize,
    /// One per item, in request order.
    items: Vec<BulkPayoutItem>,
    /// The problems found but not listed: the items' `error` lists hold 50 problems at most
    /// in all, in item order. Only when some were left out.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false, minimum = 1)]
    unlisted_errors: Option<usize>,
}

impl BulkPayoutAnswer {
    /// The answer to `result`. Like the failure envelope, it lists at most
    /// [`MAX_ERROR_ITEMS`] problems, so that its size follows the request's: past them, a
    /// failed item's `error` is empty and `unlisted_errors` counts what was left out.
    fn of(result: &BulkPayoutResult) -> Self {
        let written = !result.atomic || result.failed() == 0;
        let mut room = MAX_ERROR_ITEMS;
        let mut unlisted = 0;
        let items = result
            .items
            .iter()
            .enumerate()
            .map(|(index, outcome)| match outcome {
                BulkItemOutcome::Created(id) => BulkPayoutItem {
                    index,
                    payout_id: written.then(|| id.to_string()),
                    error: None,
                },
                BulkItemOutcome::Failed(errors) => {
                    let listed = errors.0.len().min(room);
                    room -= listed;
                    unlisted += errors.0.len() - listed;
                    BulkPayoutItem {
                        index,
                        payout_id: None,
                        error: Some(errors.0[..listed].iter().map(ErrorItem::from).collect()),
                    }
                }
            })
            .collect();
        Self {
            created: result.created(),
            failed: result.failed(),
            items,
            unlisted_errors: (unlisted > 0).then_some(unlisted),
        }
    }
}

/// One item's outcome: `payout_id` when created, `error` when refused; in a refused atomic
/// request an item that passed has neither (it was not created).
#[derive(Serialize, ToSchema)]
pub struct BulkPayoutItem {
    /// Its position in `payouts`, from 0.
    index: usize,
    /// The payout created.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(format = Uuid, required = false)]
    payout_id: Option<String>,
    /// Why it was refused, as in the failure envelope; empty once the answer has listed 50
    /// problems (see `unlisted_errors`).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(required = false)]
    error: Option<Vec<ErrorItem>>,
}

/// A 400 of this route: the failure envelope. With `PAYO209` (an atomic request that created
/// nothing) it also carries the items; the request's other refusals (a malformed body, an item
/// count out of range, an idempotency key problem) are the plain envelope, without `payload`.
#[derive(Serialize, ToSchema)]
pub struct BulkPayoutRefused {
    /// `Bulk payout failed` with `PAYO209`.
    message: String,
    /// The codes; one item, `PAYO209`, when the items are given.
    error: Vec<ErrorItem>,
    /// `PAYO209` only: per item, as on success (`created` is 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<BulkPayoutAnswer>,
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_limit_is_one_mebibyte() {
        assert_eq!(super::MAX_BULK_BODY_BYTES, 1_048_576);
    }
}
