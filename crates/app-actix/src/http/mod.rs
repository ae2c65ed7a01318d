//! The HTTP surface: routes, extractors, the envelope and error rendering.

pub mod accounts;
pub mod auth;
pub mod body;
pub mod bulk_payouts;
pub mod confirm;
pub mod context;
pub mod envelope;
pub mod error;
pub mod health;
pub mod idempotency;
pub mod openapi;
pub mod payouts;
pub mod query;
pub mod rail_callbacks;
pub mod rate_limit;
pub mod receivers;
pub mod schemas;
pub mod subaccounts;
pub mod test_helpers;

use actix_web::guard;
use actix_web::http::Method;
use actix_web::web::{self, ServiceConfig};
use actix_web::{FromRequest, Handler, Resource, Responder};
use domain::ErrorCode;
use domain::account::PayoutMethod;

use crate::state::AppState;
use error::ApiError;

/// The largest accepted request body (docs/API.md, Conventions).
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// The route that takes bulk payouts, whose bodies may be up to
/// [`bulk_payouts::MAX_BULK_BODY_BYTES`].
pub const BULK_PAYOUT_PATH: &str = "/api/payout/bulk";

async fn not_found() -> actix_web::HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::code("Request", ErrorCode::Req006))
}

async fn method_not_allowed() -> actix_web::HttpResponse {
    actix_web::ResponseError::error_response(&ApiError::code("Request", ErrorCode::Req007))
}

/// Where the route table goes: actix (to serve it) or a plain list (to check the OpenAPI
/// document against it). One table feeds both, so no route can be served but left out.
pub trait RouteTable {
    /// Adds `handler` for `method` on `path` (an actix pattern, e.g. `/api/receiver/{id}`).
    fn route<F, Args>(&mut self, method: Method, path: &str, handler: F)
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static;
}

/// Collects routes into actix resources, one per path, each answering its other methods with
/// 405 in the envelope. A GET route also answers HEAD (RFC 9110 §9.3.2): the same handler runs,
/// and actix sends the status and headers without the body.
#[derive(Default)]
struct Resources(Vec<(String, Resource)>);

impl RouteTable for Resources {
    fn route<F, Args>(&mut self, method: Method, path: &str, handler: F)
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        let route = if method == Method::GET {
            web::route().guard(guard::Any(guard::Get()).or(guard::Head()))
        } else {
            web::route().method(method)
        }
        .to(handler);
        if let Some((_, resource)) = self.0.iter_mut().find(|(p, _)| p == path) {
            let taken = std::mem::replace(resource, web::resource(path.to_owned()));
            *resource = taken.route(route);
        } else {
            let mut resource = web::resource(path.to_owned())
                .default_service(web::to(method_not_allowed))
                .route(route);
            if path == BULK_PAYOUT_PATH {
                resource =
                    resource.app_data(web::PayloadConfig::new(bulk_payouts::MAX_BULK_BODY_BYTES));
            }
            self.0.push((path.to_owned(), resource));
        }
    }
}

impl Resources {
    fn register(self, cfg: &mut ServiceConfig) {
        for (_, resource) in self.0 {
            cfg.service(resource);
        }
    }
}

/// The (method, path) pairs of a route table.
#[derive(Debug, Default)]
pub struct RouteList(pub Vec<(Method, String)>);

impl RouteTable for RouteList {
    fn route<F, Args>(&mut self, method: Method, path: &str, _: F)
    where
        F: Handler<Args>,
        Args: FromRequest + 'static,
        F::Output: Responder + 'static,
    {
        self.0.push((method, path.to_owned()));
    }
}

/// The path patterns of every route, in every mode (sandbox helpers included): the values of
/// the metrics' `route` label.
pub fn route_patterns() -> Vec<String> {
    let mut list = RouteList::default();
    route_table(&mut list);
    sandbox_route_table(&mut list);
    list.0.into_iter().map(|(_, path)| path).collect()
}

/// The routes served in every mode. Order matters where patterns overlap: literal paths come
/// before the patterns that would also match them.
pub fn route_table(t: &mut impl RouteTable) {
    t.route(Method::GET, "/healthz", health::healthz);
    t.route(Method::GET, "/readyz", health::readyz);
    t.route(Method::GET, "/metrics", health::metrics);
    t.route(Method::GET, "/openapi.json", openapi::serve);
    t.route(Method::GET, "/api/receiver", receivers::list);
    t.route(Method::POST, "/api/receiver", receivers::create);
    t.route(Method::GET, "/api/receiver/{id}", receivers::get);
    t.route(
        Method::GET,
        "/api/subaccount/balance/{id}",
        subaccounts::balance,
    );
    t.route(Method::GET, "/api/subaccount/{id}", subaccounts::get);
    t.route(
        Method::POST,
        "/api/receiver-account/verify",
        accounts::verify,
    );
    t.route(
        Method::GET,
        "/api/receiver-account/receiver/{id}",
        accounts::list,
    );
    t.route(Method::GET, "/confirm/{token}", confirm::show);
    t.route(Method::POST, "/confirm/{token}", confirm::confirm);
    t.route(
        Method::POST,
        "/rail/interac/callback",
        rail_callbacks::interac,
    );
    t.route(Method::POST, "/api/payout/single", payouts::create);
    t.route(Method::POST, BULK_PAYOUT_PATH, bulk_payouts::create);
    t.route(Method::GET, "/api/payout/", payouts::list);
    t.route(Method::GET, "/api/payout", payouts::list_without_slash);
    t.route(Method::POST, "/api/payout/{id}/cancel", payouts::cancel);
    t.route(Method::GET, "/api/payout/{id}", payouts::get);
    for &method in PayoutMethod::ALL {
        t.route(
            Method::POST,
            &format!("/api/receiver-account/{}", method.route()),
            move |state: web::Data<AppState>, request: auth::Authenticated| {
                accounts::create(state, request, method)
            },
        );
    }
    t.route(Method::GET, "/api/receiver-account/{id}", accounts::get);
}

/// The sandbox test helpers (docs/API.md, test helpers); registered only in sandbox mode, so
/// elsewhere they are unknown routes (404).
pub fn sandbox_route_table(t: &mut impl RouteTable) {
    t.route(
        Method::POST,
        "/api/test-helpers/account",
        test_helpers::account,
    );
    t.route(Method::POST, "/api/test-helpers/kyc", test_helpers::kyc);
    t.route(
        Method::GET,
        "/api/test-helpers/notifications",
        test_helpers::notifications,
    );
    t.route(
        Method::POST,
        "/api/test-helpers/status",
        test_helpers::status,
    );
    t.route(
        Method::POST,
        "/api/test-helpers/batch/run",
        test_helpers::batch_run,
    );
}

/// Registers every route of [`route_table`], with the extractor settings that keep extractor
/// failures in the envelope. Unknown paths get 404 in the envelope (installed by the app as its
/// default service).
pub fn routes(cfg: &mut ServiceConfig) {
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
        .app_data(json);
    let mut resources = Resources::default();
    route_table(&mut resources);
    resources.register(cfg);
}

/// Registers the sandbox test helpers of [`sandbox_route_table`].
pub fn sandbox_routes(cfg: &mut ServiceConfig) {
    let mut resources = Resources::default();
    sandbox_route_table(&mut resources);
    resources.register(cfg);
}

/// The default service: 404 `REQ006` in the envelope.
pub fn fallback() -> actix_web::Route {
    web::to(not_found)
}
