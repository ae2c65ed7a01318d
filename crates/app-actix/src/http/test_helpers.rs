//! Sandbox test helpers (docs/API.md, test helpers), registered only in sandbox mode, with the same
//! authentication and tenancy as the rest of `/api`.

use actix_web::HttpResponse;
use actix_web::web::Data;
use domain::ErrorCode;
use domain::account::service::ConfirmError;
use domain::batch::ports::RailResult;
use domain::batch::runner::SettleError;
use domain::ids::{BatchId, PayoutId};
use domain::money::Asset;
use domain::receiver::service::KycOutcomeError;
use domain::receiver::{KycOutcome, Receiver};
use domain::validation::{FieldError, ValidationErrors};
use serde::Serialize;
use utoipa::ToSchema;
use uuid::Uuid;

use super::auth::Authenticated;
use super::body::{json_object, string_fields};
use super::envelope::{self, Success};
use super::error::ApiError;
use super::idempotency::written;
use super::schemas::{AssetCode, AssetInput, BatchStatusName, Nothing};
use crate::state::AppState;

const ACCOUNT: &str = "Test helper";

/// The body of `POST /api/test-helpers/account`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AccountHelperBody {
    /// An account of the caller's subaccount.
    #[schema(format = Uuid)]
    pub receiver_account_id: String,
    /// Only `confirmed`.
    #[schema(pattern = "^confirmed$", examples("confirmed"))]
    pub confirm_status: String,
}

/// The body of `POST /api/test-helpers/kyc`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct KycHelperBody {
    /// A receiver of the caller's subaccount.
    #[schema(format = Uuid)]
    pub receiver_id: String,
    /// `completed` or `failed`.
    #[schema(pattern = "^(completed|failed)$", examples("completed"))]
    pub kyc_status: String,
}

/// The body of `POST /api/test-helpers/status`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusHelperBody {
    /// A payout or batch of the caller's subaccount.
    #[schema(format = Uuid)]
    pub id: String,
    /// `payout` or `batch`.
    #[schema(pattern = "^(payout|batch)$", examples("payout"))]
    pub r#type: String,
    /// `success` or `fail`.
    #[schema(pattern = "^(success|fail)$", examples("success"))]
    pub status: String,
}

/// The body of `POST /api/test-helpers/batch/run`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchRunBody {
    /// The caller's subaccount.
    #[schema(format = Uuid)]
    pub subaccount_id: String,
    /// AUD, USD, CAD, EUR or NZD, either case.
    #[schema(value_type = AssetInput)]
    pub asset: String,
}

/// The batch after a run.
#[derive(Serialize, ToSchema)]
pub struct BatchRun {
    #[schema(format = Uuid)]
    batch_id: String,
    /// `BATCH_<batch_id>`.
    batch_reference: String,
    #[schema(value_type = BatchStatusName)]
    status: &'static str,
    /// Payouts in the batch.
    total_tx: i32,
    /// Their sum, minor units.
    amount: i64,
    #[schema(value_type = AssetCode)]
    currency: &'static str,
}

/// `POST /api/test-helpers/account` `{receiver_account_id, confirm_status: "confirmed"}`.
#[utoipa::path(
    post,
    path = "/api/test-helpers/account",
    tag = "Sandbox",
    operation_id = "sandboxConfirmAccount",
    summary = "Confirm an account as its link would (sandbox mode only)",
    description = "`REAC104` unknown or another subaccount's account, `REQ009` another \
        `confirm_status`, `REAC301` an account that cannot be confirmed. Outside sandbox mode \
        the route does not exist (404).",
    request_body = AccountHelperBody,
    responses((status = 200, description = "`Test helper: Update account status is successful`", body = Success<Nothing>)),
)]
pub async fn account(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let object = json_object(ACCOUNT, &request.body)?;
    let mut errors = ValidationErrors::default();
    let [account_id, confirm_status] = string_fields(
        object,
        ["receiver_account_id", "confirm_status"],
        &mut errors,
    );
    if confirm_status.as_deref() != Some("confirmed") {
        errors.push(ErrorCode::Req009, "confirm_status");
    }
    let Some(account_id) = account_id.filter(|_| errors.is_empty()) else {
        if errors.is_empty() {
            errors.push(ErrorCode::Reac104, "receiver_account_id");
        }
        return Err(ApiError::fields(ACCOUNT, &errors));
    };
    match state
        .accounts
        // An account confirmed already is answered without a write, so the response is
        // stored afterwards.
        .confirm_by_id(&request.caller, &account_id, &request.committing_key())
        .await
    {
        Ok(_) => Ok(envelope::ok(
            "Test helper: Update account status is successful",
            serde_json::Value::Null,
        )),
        Err(ConfirmError::NotFound) => Err(ApiError::field(
            ACCOUNT,
            ErrorCode::Reac104,
            "receiver_account_id",
        )),
        Err(ConfirmError::Invalid) => Err(ApiError::field(
            ACCOUNT,
            ErrorCode::Reac301,
            "receiver_account_id",
        )),
        Err(ConfirmError::Port(e)) => Err(ApiError::port(ACCOUNT, &e)),
    }
}

/// `POST /api/test-helpers/kyc` `{receiver_id, kyc_status: "completed" | "failed"}`: the KYC
/// provider's decision for a receiver of the caller's subaccount.
#[utoipa::path(
    post,
    path = "/api/test-helpers/kyc",
    tag = "Sandbox",
    operation_id = "sandboxDecideKyc",
    summary = "Decide a receiver's KYC check (sandbox mode only)",
    description = "`completed` makes the receiver `active`, `failed` makes it `failed`. \
        `REVR301` already decided, `REVR101` unknown or another subaccount's receiver, \
        `REQ009` another `kyc_status`.",
    request_body = KycHelperBody,
    responses((status = 200, description = "`Test helper: Update KYC status is successful`", body = Success<Nothing>)),
)]
pub async fn kyc(state: Data<AppState>, request: Authenticated) -> Result<HttpResponse, ApiError> {
    const KYC: &str = "Test helper";
    let object = json_object(KYC, &request.body)?;
    let mut errors = ValidationErrors::default();
    let [receiver_id, kyc_status] =
        string_fields(object, ["receiver_id", "kyc_status"], &mut errors);
    let outcome = match kyc_status.as_deref() {
        Some("completed") => Some(KycOutcome::Completed),
        Some("failed") => Some(KycOutcome::Failed),
        _ => {
            errors.push(ErrorCode::Req009, "kyc_status");
            None
        }
    };
    let (Some(receiver_id), Some(outcome), true) = (receiver_id, outcome, errors.is_empty()) else {
        if errors.is_empty() {
            errors.push(ErrorCode::Revr101, "receiver_id");
        }
        return Err(ApiError::fields(KYC, &errors));
    };
    let key = request.write_key(|_: &Receiver| {
        envelope::stored_ok(
            "Test helper: Update KYC status is successful",
            serde_json::Value::Null,
        )
    });
    match state
        .receivers
        .apply_kyc_outcome(request.caller.subaccount_id, &receiver_id, outcome, &key)
        .await
    {
        Ok(receiver) => written(KYC, &key, &receiver),
        Err(KycOutcomeError::NotFound) => {
            Err(ApiError::field(KYC, ErrorCode::Revr101, "receiver_id"))
        }
        Err(KycOutcomeError::AlreadyDecided(_)) => {
            Err(ApiError::field(KYC, ErrorCode::Revr301, "receiver_id"))
        }
        Err(KycOutcomeError::Port(e)) => Err(ApiError::port(KYC, &e)),
    }
}

/// `POST /api/test-helpers/status` `{id, type: "payout" | "batch", status: "success" | "fail"}`
/// (compat): the rail's result for an `in_progress` payout, or for every `in_progress` payout of
/// a batch, with its webhooks.
#[utoipa::path(
    post,
    path = "/api/test-helpers/status",
    tag = "Sandbox",
    operation_id = "sandboxSettle",
    summary = "Settle an in-progress payout or batch (sandbox mode only)",
    description = "`success` makes the payout `successful`, `fail` makes it `failed`. \
        `PAYO101`/`PAYO102` unknown or another subaccount's payout/batch, `PAYO303` not in \
        progress, `REQ009` another `type` or `status`.",
    request_body = StatusHelperBody,
    responses((status = 200, description = "`Test helper: Update payout status is successful`", body = Success<Nothing>)),
)]
pub async fn status(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    const STATUS: &str = "Test helper";
    let object = json_object(STATUS, &request.body)?;
    let mut errors = ValidationErrors::default();
    let [id, kind, status] = string_fields(object, ["id", "type", "status"], &mut errors);
    let result = match status.as_deref() {
        Some("success") => Some(RailResult::Paid),
        Some("fail") => Some(RailResult::Failed {
            code: None,
            receiver_is_invalid: false,
            reason: "sandbox: failed by the status helper".to_owned(),
        }),
        _ => {
            errors.push(ErrorCode::Req009, "status");
            None
        }
    };
    let batch = match kind.as_deref() {
        Some("payout") => Some(false),
        Some("batch") => Some(true),
        _ => {
            errors.push(ErrorCode::Req009, "type");
            None
        }
    };
    let (Some(result), Some(batch), true) = (result, batch, errors.is_empty()) else {
        return Err(ApiError::fields(STATUS, &errors));
    };
    let id = id.unwrap_or_default();
    // Several transactions for a batch: the response is stored once they are all done.
    let key = request.committing_key();
    let settled = if batch {
        // Any form `Uuid::parse_str` reads, as before batch ids were typed (`BatchId::parse`
        // takes only the hyphenated form).
        match Uuid::parse_str(id.trim()).map(BatchId::from_uuid) {
            Ok(batch) => state
                .batches
                .settle_batch(&request.caller, batch, &result, &key)
                .await
                .map(|_| ()),
            Err(_) => Err(SettleError::NotFound),
        }
    } else {
        match PayoutId::parse(&id) {
            Some(payout) => {
                state
                    .batches
                    .settle_payout(&request.caller, payout, &result, &key)
                    .await
            }
            None => Err(SettleError::NotFound),
        }
    };
    let (missing, field) = if batch {
        (ErrorCode::Payo102, "id")
    } else {
        (ErrorCode::Payo101, "id")
    };
    match settled {
        Ok(()) => Ok(envelope::ok(
            "Test helper: Update payout status is successful",
            serde_json::Value::Null,
        )),
        Err(SettleError::NotFound) => Err(ApiError::field(STATUS, missing, field)),
        Err(SettleError::NotInProgress(Some(now))) => Err(ApiError::code_with_message(
            STATUS,
            ErrorCode::Payo303,
            format!("Payout is not in progress: it is {}", now.as_str()),
        )),
        Err(SettleError::NotInProgress(None)) => {
            Err(ApiError::field(STATUS, ErrorCode::Payo303, field))
        }
        Err(SettleError::Port(e)) => Err(ApiError::port(STATUS, &e)),
    }
}

/// `POST /api/test-helpers/batch/run` `{subaccount_id, asset}`: runs the caller's open batch in
/// `asset` now (closes it and submits its payouts to the rail). Answers with the batch as it is
/// afterwards.
#[utoipa::path(
    post,
    path = "/api/test-helpers/batch/run",
    tag = "Sandbox",
    operation_id = "sandboxRunBatch",
    summary = "Run the open batch now (sandbox mode only)",
    description = "`SUBA101` another subaccount, `SUBA303`/`SUBA304` missing or unsupported \
        asset, `PAYO304` no open batch.",
    request_body = BatchRunBody,
    responses((status = 200, description = "`Test helper: Batch run is successful`", body = Success<BatchRun>)),
)]
pub async fn batch_run(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    const RUN: &str = "Test helper";
    let object = json_object(RUN, &request.body)?;
    let mut errors = ValidationErrors::default();
    let [subaccount_id, asset] = string_fields(object, ["subaccount_id", "asset"], &mut errors);
    let asset = match asset.as_deref().map(str::trim) {
        None | Some("") => {
            errors.push(ErrorCode::Suba303, "asset");
            None
        }
        Some(raw) => {
            let parsed = Asset::parse(raw);
            if parsed.is_none() {
                errors.push(ErrorCode::Suba304, "asset");
            }
            parsed
        }
    };
    let own = subaccount_id
        .as_deref()
        .is_some_and(|id| request.caller.owns(id));
    if !own {
        errors
            .0
            .insert(0, FieldError::new(ErrorCode::Suba101, "subaccount_id"));
    }
    let (Some(asset), true) = (asset, errors.is_empty()) else {
        return Err(ApiError::fields(RUN, &errors));
    };
    let mut ran = state
        .batches
        .run_open_batch_now(&request.caller, asset)
        .await;
    // The background batch job (of this or another instance) may have claimed the batch the
    // moment it became due: wait for that runner to submit it, so the answer says what
    // happened rather than a passing `queue`.
    for _ in 0..200 {
        let Ok(Some(batch)) = &ran else { break };
        if batch.status != domain::batch::BatchStatus::Queue {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(25)).await;
        ran = state.batches.find_batch(&request.caller, batch.id).await;
    }
    match ran {
        Ok(Some(batch)) => Ok(envelope::ok(
            "Test helper: Batch run is successful",
            BatchRun {
                batch_id: batch.id.to_string(),
                batch_reference: format!("BATCH_{}", batch.id),
                status: batch.status.as_str(),
                total_tx: batch.total_tx,
                amount: batch.amount,
                currency: batch.asset.code(),
            },
        )),
        Ok(None) => Err(ApiError::field(RUN, ErrorCode::Payo304, "asset")),
        Err(e) => Err(ApiError::port(RUN, &e)),
    }
}

const NOTIFICATIONS: &str = "Test helper";

/// One confirmation request the sandbox notifier sent.
#[derive(Serialize, ToSchema)]
pub struct SentNotificationDto {
    /// The account it asks to confirm.
    #[schema(format = Uuid)]
    pub receiver_account_id: String,
    /// Where it went: the receiver's e-mail.
    pub to_email: String,
    /// The link that confirms the account: `GET` shows the page, its form `POST`s.
    pub confirm_url: String,
    /// The account details it showed, masked.
    pub masked_details: serde_json::Map<String, serde_json::Value>,
}

/// `GET /api/test-helpers/notifications?receiver_account_id=<id>`.
#[utoipa::path(
    get,
    path = "/api/test-helpers/notifications",
    tag = "Sandbox",
    operation_id = "sandboxNotifications",
    summary = "The confirmation requests sent for an account (sandbox mode only)",
    description = "What the sandbox notifier sent for the account, oldest first, with each \
        confirmation link, so an integration can follow the real path (`GET` the link to see \
        the page, `POST` it to confirm) instead of the `account` helper. `REQ002` without \
        `receiver_account_id`, `REQ005` another parameter, `REAC104` an unknown account or \
        another subaccount's. Requests sent by another instance of the service are not listed \
        (the sandbox notifier keeps them in memory). Outside sandbox mode the route does not \
        exist (404).",
    params(("receiver_account_id" = String, Query, description = "An account of the caller's subaccount.")),
    responses((status = 200, description = "`Notifications found`", body = Success<Vec<SentNotificationDto>>)),
)]
pub async fn notifications(
    state: Data<AppState>,
    request: Authenticated,
    http: actix_web::HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = super::query::query_pairs(NOTIFICATIONS, &http)?;
    super::query::only_known(NOTIFICATIONS, &pairs, &["receiver_account_id"])?;
    let Some((_, account_id)) = pairs.iter().find(|(k, _)| k == "receiver_account_id") else {
        return Err(ApiError::field(
            NOTIFICATIONS,
            ErrorCode::Req002,
            "receiver_account_id",
        ));
    };
    let account = match state.accounts.get(&request.caller, account_id).await {
        Ok((account, _)) => account,
        Err(domain::account::service::GetAccountError::NotFound) => {
            return Err(ApiError::field(
                NOTIFICATIONS,
                ErrorCode::Reac104,
                "receiver_account_id",
            ));
        }
        Err(domain::account::service::GetAccountError::Port(e)) => {
            return Err(ApiError::port(NOTIFICATIONS, &e));
        }
    };
    let Some(notifier) = state.sandbox_notifier.as_ref() else {
        return Err(ApiError::code("Request", ErrorCode::Req006));
    };
    let sent: Vec<SentNotificationDto> = notifier
        .sent()
        .into_iter()
        .filter(|sent| sent.account_id == account.id && sent.subaccount_id == account.subaccount_id)
        .map(|sent| SentNotificationDto {
            receiver_account_id: sent.account_id.to_string(),
            to_email: sent.to_email.clone(),
            confirm_url: sent.confirm_url.expose().clone(),
            masked_details: sent
                .masked_details
                .iter()
                .map(|(field, value)| {
                    (
                        field.name().to_owned(),
                        serde_json::Value::from(value.as_str()),
                    )
                })
                .collect(),
        })
        .collect();
    Ok(envelope::ok("Notifications found", sent))
}
