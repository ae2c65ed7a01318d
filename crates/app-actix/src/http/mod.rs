//! The HTTP surface: routes, extractors, the envelope and error rendering.

pub mod accounts;
pub mod auth;
pub mod body;
pub mod confirm;
pub mod context;
pub mod envelope;
pub mod error;
pub mod health;
pub mod idempotency;
pub mod payouts;
pub mod query;
pub mod rate_limit;
pub mod receivers;
pub mod subaccounts;
pub mod test_helpers;

use actix_web::web::{self, ServiceConfig};
use domain::ErrorCode;
use domain::account::PayoutMethod;

use crate::state::AppState;
use error::ApiError;

/// The largest accepted request body (contract §12).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

async fn not_found() -> actix_web::HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::code("Request", ErrorCode::Req006))
}

async fn method_not_allowed() -> actix_web::HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::code("Request", ErrorCode::Req007))
}

/// Registers every route. Each resource answers other methods with 405 in the envelope; unknown
/// paths get 404 in the envelope (installed by the app as its default service).
pub fn routes(cfg: &mut ServiceConfig) {
    let resource =
        |path: &str| web::resource(path.to_owned()).default_service(web::to(method_not_allowed));
    // Handlers parse bodies and queries themselves; these keep any actix extractor failure
    // (e.g. a path segment that is not valid UTF-8) in the envelope instead of plain text.
    let path = web::PathConfig::default()
        .error_handler(|_, _| ApiError::code("Request", ErrorCode::Req006).into());
    let query = web::QueryConfig::default()
        .error_handler(|_, _| ApiError::code("Request", ErrorCode::Req002).into());
    let json = web::JsonConfig::default()
        .limit(MAX_BODY_BYTES)
        .error_handler(|_, _| ApiError::code("Request", ErrorCode::Req001).into());
    cfg.app_data(web::PayloadConfig::new(MAX_BODY_BYTES))
        .app_data(path)
        .app_data(query)
        .app_data(json)
        .service(resource("/healthz").route(web::get().to(health::healthz)))
        .service(resource("/readyz").route(web::get().to(health::readyz)))
        .service(resource("/metrics").route(web::get().to(health::metrics)))
        .service(
            resource("/api/receiver")
                .route(web::get().to(receivers::list))
                .route(web::post().to(receivers::create)),
        )
        .service(resource("/api/receiver/{id}").route(web::get().to(receivers::get)))
        .service(
            resource("/api/subaccount/balance/{id}").route(web::get().to(subaccounts::balance)),
        )
        .service(resource("/api/subaccount/{id}").route(web::get().to(subaccounts::get)))
        .service(resource("/api/receiver-account/verify").route(web::post().to(accounts::verify)))
        .service(
            resource("/api/receiver-account/receiver/{id}").route(web::get().to(accounts::list)),
        )
        .service(resource("/confirm/{token}").route(web::get().to(confirm::confirm)))
        .service(resource("/api/payout/single").route(web::post().to(payouts::create)))
        .service(resource("/api/payout/").route(web::get().to(payouts::list)))
        .service(resource("/api/payout").route(web::get().to(payouts::list)))
        .service(resource("/api/payout/{id}/cancel").route(web::post().to(payouts::cancel)))
        .service(resource("/api/payout/{id}").route(web::get().to(payouts::get)));
    for method in PayoutMethod::ALL {
        cfg.service(
            resource(&format!("/api/receiver-account/{}", method.route())).route(web::post().to(
                move |state: web::Data<AppState>, request: auth::Authenticated| {
                    accounts::create(state, request, method)
                },
            )),
        );
    }
    cfg.service(resource("/api/receiver-account/{id}").route(web::get().to(accounts::get)));
}

/// The sandbox test helpers (contract §10); registered only in sandbox mode, so elsewhere they
/// are unknown routes (404).
pub fn sandbox_routes(cfg: &mut ServiceConfig) {
    let resource =
        |path: &str| web::resource(path.to_owned()).default_service(web::to(method_not_allowed));
    cfg.service(resource("/api/test-helpers/account").route(web::post().to(test_helpers::account)))
        .service(resource("/api/test-helpers/kyc").route(web::post().to(test_helpers::kyc)))
        .service(resource("/api/test-helpers/status").route(web::post().to(test_helpers::status)))
        .service(
            resource("/api/test-helpers/batch/run").route(web::post().to(test_helpers::batch_run)),
        );
}

/// The default service: 404 `REQ006` in the envelope.
pub fn fallback() -> actix_web::Route {
    web::to(not_found)
}
