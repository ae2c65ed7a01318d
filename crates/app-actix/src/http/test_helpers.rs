//! Sandbox test helpers (contract §10), registered only in sandbox mode, with the same
//! authentication and tenancy as the rest of `/api`.

use actix_web::HttpResponse;
use actix_web::web::Data;
use domain::ErrorCode;
use domain::account::service::ConfirmError;
use domain::receiver::KycOutcome;
use domain::receiver::service::KycOutcomeError;
use domain::validation::ValidationErrors;

use super::auth::Authenticated;
use super::body::{json_object, string_fields};
use super::envelope;
use super::error::ApiError;
use crate::state::AppState;

const ACCOUNT: &str = "Test helper";

/// `POST /api/test-helpers/account` `{receiver_account_id, confirm_status: "confirmed"}`.
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
        .confirm_by_id(&request.caller, &account_id)
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
    match state
        .receivers
        .apply_kyc_outcome(request.caller.subaccount_id, &receiver_id, outcome)
        .await
    {
        Ok(_) => Ok(envelope::ok(
            "Test helper: Update KYC status is successful",
            serde_json::Value::Null,
        )),
        Err(KycOutcomeError::NotFound) => {
            Err(ApiError::field(KYC, ErrorCode::Revr101, "receiver_id"))
        }
        Err(KycOutcomeError::AlreadyDecided(_)) => {
            Err(ApiError::field(KYC, ErrorCode::Revr301, "receiver_id"))
        }
        Err(KycOutcomeError::Port(e)) => Err(ApiError::port(KYC, &e)),
    }
}
