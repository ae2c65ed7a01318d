//! The HTTP surface: routes, extractors, the envelope and error rendering.

pub mod auth;
pub mod body;
pub mod context;
pub mod envelope;
pub mod error;
pub mod health;
pub mod query;
pub mod receivers;
pub mod subaccounts;

use actix_web::web::{self, ServiceConfig};
use domain::ErrorCode;

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
        .service(
            resource("/api/receiver")
                .route(web::get().to(receivers::list))
                .route(web::post().to(receivers::create)),
        )
        .service(resource("/api/receiver/{id}").route(web::get().to(receivers::get)))
        .service(
            resource("/api/subaccount/balance/{id}").route(web::get().to(subaccounts::balance)),
        )
        .service(resource("/api/subaccount/{id}").route(web::get().to(subaccounts::get)));
}

/// The default service: 404 `REQ006` in the envelope.
pub fn fallback() -> actix_web::Route {
    web::to(not_found)
}
