//! The console's pages, one module per section.

pub mod account;
pub mod answers;
pub mod audit;
pub mod auth;
pub mod confirmations;
pub mod files;
pub mod funding;
pub mod home;
pub mod kyc;
pub mod ledger;
pub mod operators;
pub mod payouts;
pub mod subaccount_changes;
pub mod subaccounts;
pub mod webhooks;

use actix_web::HttpResponse;
use maud::Markup;

/// A 200 HTML response.
pub fn html(markup: Markup) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/html; charset=utf-8")
        .body(markup.into_string())
}

/// A 303 to `location` (after a form's POST).
pub fn see_other(location: &str) -> HttpResponse {
    HttpResponse::SeeOther()
        .insert_header((actix_web::http::header::LOCATION, location.to_owned()))
        .finish()
}
