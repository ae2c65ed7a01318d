//! The success envelope: `{"message": "...", "payload": ...}`, and for lists a top-level
//! `lastkey` as well.

use actix_web::HttpResponse;
use serde::Serialize;
use utoipa::ToSchema;

use domain::idempotency::StoredResponse;

/// The success envelope.
#[derive(Serialize, ToSchema)]
pub struct Success<'a, T> {
    /// What happened, e.g. `Receiver found`.
    message: &'a str,
    /// The result.
    payload: T,
}

/// The success envelope of a list: a page of items and the cursor of the next one.
#[derive(Serialize, ToSchema)]
pub struct Listing<'a, T> {
    /// What happened, e.g. `Receivers found`.
    message: &'a str,
    /// The page, newest first.
    payload: Vec<T>,
    /// Pass it back as the `lastkey` query parameter for the next page; `null` on the last
    /// page.
    lastkey: Option<String>,
}

/// The body of [`ok`] as a write stores it with its idempotency key (200 with `message` and
/// `payload`; the same bytes `ok` sends).
pub fn stored_ok<T: Serialize>(message: &str, payload: T) -> Option<StoredResponse> {
    serde_json::to_vec(&Success { message, payload })
        .ok()
        .map(|body| StoredResponse { status: 200, body })
}

/// 200 with `message` and `payload`.
pub fn ok<T: Serialize>(message: &str, payload: T) -> HttpResponse {
    HttpResponse::Ok().json(Success { message, payload })
}

/// 200 with `message`, the `payload` array and `lastkey` (`null` on the last page).
pub fn list<T: Serialize>(message: &str, payload: Vec<T>, lastkey: Option<String>) -> HttpResponse {
    HttpResponse::Ok().json(Listing {
        message,
        payload,
        lastkey,
    })
}
