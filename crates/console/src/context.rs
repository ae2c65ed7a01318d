//! The console's request middleware: a request id for every request (in the response's
//! `x-request-id`, the log line and the audit log), one log line per request, and the refusal
//! of any state-changing request that a browser says came from another site (`Sec-Fetch-Site`,
//! `Origin`), before any handler runs: defence in depth beside the CSRF token and the
//! `SameSite=Strict` cookies.

use std::time::Instant;

use actix_web::body::{EitherBody, MessageBody};
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::Method;
use actix_web::http::header::{HeaderName, HeaderValue};
use actix_web::middleware::Next;
use actix_web::{HttpMessage, ResponseError};
use uuid::Uuid;

use crate::error::ConsoleError;
use crate::session::RequestId;

/// Whether the browser says the request was made by another site: `Sec-Fetch-Site` other than
/// `same-origin` or `none`, or an `Origin` other than the console's own.
///
/// `Origin: null` says nothing either way: a browser sends it for the console's own plain form
/// posts (a sign-in without JavaScript, say), because the console's `Referrer-Policy:
/// no-referrer` also withholds the origin of a form navigation (Fetch, "append a request Origin
/// header"). Such a request is judged by `Sec-Fetch-Site`, which every current browser sends,
/// and by the CSRF token and the `SameSite=Strict` cookies as every form is.
pub fn cross_site(req: &ServiceRequest) -> bool {
    let header = |name: &str| {
        req.headers()
            .get(name)
            .map(|v| v.to_str().unwrap_or("\u{0}").to_owned())
    };
    if let Some(site) = header("sec-fetch-site")
        && site != "same-origin"
        && site != "none"
    {
        return true;
    }
    if let Some(origin) = header("origin").filter(|o| o != "null") {
        let info = req.connection_info();
        let own = format!("{}://{}", info.scheme(), info.host());
        return !origin.eq_ignore_ascii_case(&own);
    }
    false
}

/// The middleware (`actix_web::middleware::from_fn`).
pub async fn request_context(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<EitherBody<impl MessageBody>>, actix_web::Error> {
    let id = Uuid::new_v4().to_string();
    req.extensions_mut().insert(RequestId(id.clone()));
    let started = Instant::now();
    let method = req.method().clone();
    let safe = matches!(method, Method::GET | Method::HEAD);
    let mut response = if !safe && cross_site(&req) {
        tracing::warn!(request_id = %id, path = %req.path(), "console: cross-site request refused");
        let refusal = ConsoleError::Csrf.error_response();
        req.into_response(refusal).map_into_right_body()
    } else {
        crate::fmt::in_request_scope(next.call(req))
            .await?
            .map_into_left_body()
    };
    if let Ok(value) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert(HeaderName::from_static("x-request-id"), value);
    }
    let route = response
        .request()
        .match_pattern()
        .unwrap_or_else(|| "<unmatched>".to_owned());
    tracing::info!(
        request_id = %id,
        method = %method,
        route = %route,
        status = response.status().as_u16(),
        latency_ms = started.elapsed().as_secs_f64() * 1000.0,
        "console request"
    );
    Ok(response)
}
