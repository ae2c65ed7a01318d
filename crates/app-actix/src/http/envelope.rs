//! The success envelope: `{"message": "...", "payload": ...}`, and for lists a top-level
//! `lastkey` as well.

use actix_web::HttpResponse;
use serde::Serialize;

#[derive(Serialize)]
struct Success<'a, T> {
    message: &'a str,
    payload: T,
}

#[derive(Serialize)]
struct Listing<'a, T> {
    message: &'a str,
    payload: T,
    lastkey: Option<String>,
}

/// 200 with `message` and `payload`.
pub fn ok<T: Serialize>(message: &str, payload: T) -> HttpResponse {
    HttpResponse::Ok().json(Success { message, payload })
}

/// 200 with `message`, the `payload` array and `lastkey` (`null` on the last page).
pub fn list<T: Serialize>(message: &str, payload: T, lastkey: Option<String>) -> HttpResponse {
    HttpResponse::Ok().json(Listing {
        message,
        payload,
        lastkey,
    })
}
