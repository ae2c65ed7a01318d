//! Sandbox test helpers (contract §10), registered only in sandbox mode, with the same
//! authentication and tenancy as the rest of `/api`.

use actix_web::HttpResponse;
use actix_web::web::Data;
use domain::ErrorCode;
use domain::account::service::ConfirmError;
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
