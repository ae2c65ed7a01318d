//! `GET /confirm/<token>`: the page a receiver opens from the confirmation e-mail or SMS. No API
//! key: the single-use, expiring token is the credential.

use actix_web::HttpResponse;
use actix_web::http::StatusCode;
use actix_web::web::{Data, Path};
use domain::account::service::ConfirmError;

use crate::state::AppState;

fn page(status: StatusCode, title: &str, text: &str) -> HttpResponse {
    let html = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title}</title></head>\
         <body style=\"font-family: system-ui, sans-serif; max-width: 32rem; margin: 4rem auto; padding: 0 1rem\">\
         <h1>{title}</h1><p>{text}</p></body></html>\n"
    );
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        // The token is in the URL: keep it out of caches and other sites' referrer logs.
        .insert_header(("cache-control", "no-store"))
        .insert_header(("referrer-policy", "no-referrer"))
        .body(html)
}

/// `GET /confirm/<token>`.
#[utoipa::path(
    get,
    path = "/confirm/{token}",
    tag = "Receiver accounts",
    operation_id = "confirmAccount",
    summary = "Confirm bank details (the link sent to the receiver)",
    description = "The page a receiver opens from the confirmation e-mail or SMS. No API key: \
        the random, single-use token (valid 7 days) is the credential. A valid token confirms \
        the account (`status: completed`, `confirm_status: confirmed`); opening it again shows \
        the same page. Responses carry `cache-control: no-store` and \
        `referrer-policy: no-referrer`.",
    params(("token" = String, Path, description = "The token from the link.")),
    responses(
        (status = 200, description = "Confirmed", content_type = "text/html; charset=utf-8", body = String),
        (status = 404, description = "Unknown, expired or unusable token", content_type = "text/html; charset=utf-8", body = String),
        (status = 503, description = "The database is unavailable: try again later", content_type = "text/html; charset=utf-8", body = String),
    ),
)]
pub async fn confirm(state: Data<AppState>, token: Path<String>) -> HttpResponse {
    match state.accounts.confirm_with_token(&token).await {
        Ok(_) => page(
            StatusCode::OK,
            "Bank details confirmed",
            "Thank you. Your bank details are confirmed and payouts to this account can now be sent.",
        ),
        Err(ConfirmError::Invalid | ConfirmError::NotFound) => page(
            StatusCode::NOT_FOUND,
            "Link not valid",
            "This confirmation link is not valid or has expired. Please contact the sender for a new one.",
        ),
        Err(ConfirmError::Port(e)) => {
            tracing::warn!(error = %e, "confirmation failed");
            page(
                StatusCode::SERVICE_UNAVAILABLE,
                "Please try again",
                "We could not confirm your details just now. Please open the link again in a few minutes.",
            )
        }
    }
}
