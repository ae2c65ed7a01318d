//! The operator console: server-rendered pages over the domain's services, mounted by
//! `app-actix` on a listener of its own (`PAYOUT_CONSOLE_BIND`), never on the API's.
//!
//! Templates are [maud](https://maud.lambda.xyz/) expressions: HTML written in Rust, checked by
//! the compiler (a missing variable or a closed tag that was never opened does not build),
//! escaped by default (text can only become markup through an explicit `PreEscaped`), and
//! composed as plain functions (a form is a function that always includes its CSRF field).
//! askama's separate template files would add a second language and files to keep in step
//! with their structs, for no gain here.
//!
//! The console holds no rule and no SQL: each handler parses the request, calls the same
//! domain service the CLI calls, and renders the answer.

pub mod assets;
pub mod chart;
pub mod context;
pub mod error;
pub mod fmt;
pub mod headers;
pub mod layout;
pub mod nav;
pub mod pages;
pub mod session;
pub mod state;

use actix_web::middleware::from_fn;
use actix_web::{HttpRequest, HttpResponse, web};

pub use headers::Transport;
pub use state::Console;

/// The most a console form may carry.
pub const FORM_LIMIT: usize = 16 * 1024;

/// `GET /assets/{file}`: an embedded asset, cacheable for a year (its name changes with its
/// content).
async fn asset(file: web::Path<String>) -> HttpResponse {
    match assets::find(&file) {
        Some(asset) => HttpResponse::Ok()
            .content_type(asset.content_type)
            .insert_header(("cache-control", "public, max-age=31536000, immutable"))
            .body(asset.bytes),
        None => actix_web::ResponseError::error_response(&error::ConsoleError::NotFound),
    }
}

async fn not_found(_: HttpRequest) -> HttpResponse {
    use actix_web::ResponseError;
    error::ConsoleError::NotFound.error_response()
}

/// Every console route, with the middleware (request id and cross-site refusal, security
/// headers) and the form limits. `app-actix` mounts it on the console's own listener, with a
/// `web::Data<Console>` and a `web::Data<Transport>`.
pub fn configure(cfg: &mut web::ServiceConfig) {
    let forms = web::FormConfig::default()
        .limit(FORM_LIMIT)
        .error_handler(|e, _| {
            error::ConsoleError::BadRequest(format!("The form could not be read: {e}.")).into()
        });
    cfg.service(
        web::scope("")
            .app_data(forms)
            .wrap(from_fn(headers::security_headers))
            .wrap(from_fn(context::request_context))
            .route("/assets/{file}", web::get().to(asset))
            .route("/login", web::get().to(pages::auth::login_page))
            .route("/login", web::post().to(pages::auth::login))
            .route("/logout", web::post().to(pages::auth::logout))
            .route("/enrol/{token}", web::get().to(pages::auth::enrol_form))
            .route("/enrol/{token}", web::post().to(pages::auth::enrol))
            .route("/", web::get().to(pages::home::home))
            .route("/account", web::get().to(pages::account::show))
            .route(
                "/account/time-zone",
                web::post().to(pages::account::set_time_zone),
            )
            .route("/kyc", web::get().to(pages::kyc::queue))
            .route("/kyc/{receiver}", web::post().to(pages::kyc::decide))
            .route("/payouts", web::get().to(pages::payouts::search))
            .route("/payouts/{id}", web::get().to(pages::payouts::story))
            .route(
                "/payouts/{id}/cancel",
                web::post().to(pages::payouts::cancel),
            )
            .route("/files", web::get().to(pages::files::list))
            .route("/files/{id}", web::get().to(pages::files::show))
            .route(
                "/files/{id}/download",
                web::post().to(pages::files::download),
            )
            .route("/ledger", web::get().to(pages::ledger::check))
            .route("/answers", web::get().to(pages::answers::list))
            .route("/confirmations", web::get().to(pages::confirmations::list))
            .route(
                "/confirmations/{id}/resend",
                web::post().to(pages::confirmations::resend),
            )
            .route("/subaccounts", web::get().to(pages::subaccounts::list))
            .route(
                "/subaccounts",
                web::post().to(pages::subaccount_changes::create),
            )
            .route(
                "/subaccounts/{id}",
                web::get().to(pages::subaccounts::profile),
            )
            .route(
                "/subaccounts/{id}/fund",
                web::post().to(pages::subaccount_changes::fund),
            )
            .route(
                "/subaccounts/{id}/fees",
                web::post().to(pages::subaccount_changes::set_fee),
            )
            .route(
                "/subaccounts/{id}/policy",
                web::post().to(pages::subaccount_changes::set_policy),
            )
            .route(
                "/subaccounts/{id}/keys",
                web::post().to(pages::subaccount_changes::issue_key),
            )
            .route(
                "/subaccounts/{id}/keys/revoke",
                web::post().to(pages::subaccount_changes::revoke_key),
            )
            .route(
                "/subaccounts/{id}/webhook",
                web::post().to(pages::subaccount_changes::set_webhook),
            )
            .route(
                "/subaccounts/{id}/webhook/rotate",
                web::post().to(pages::subaccount_changes::rotate_webhook_secret),
            )
            .route("/webhooks", web::get().to(pages::webhooks::page_of))
            .route("/webhooks/resend", web::post().to(pages::webhooks::resend))
            .route(
                "/webhooks/resend-range",
                web::post().to(pages::webhooks::resend_range),
            )
            .route("/funding", web::get().to(pages::funding::form))
            .route("/funding", web::post().to(pages::funding::fund))
            .route("/operators", web::get().to(pages::operators::list))
            .route("/operators", web::post().to(pages::operators::create))
            .route(
                "/operators/{id}/role",
                web::post().to(pages::operators::change_role),
            )
            .route(
                "/operators/{id}/disable",
                web::post().to(pages::operators::disable),
            )
            .route("/audit", web::get().to(pages::audit::list))
            .default_service(web::to(not_found)),
    );
}
