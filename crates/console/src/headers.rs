//! The response headers of every console response: nothing may load from another origin, no
//! other site may frame a page, pages are not cached, and no URL leaks in a referrer. The same
//! headers as the receiver's confirmation page, with `default-src 'self'` (the stylesheet and
//! htmx are served from the console's own origin).

use actix_web::body::MessageBody;
use actix_web::dev::{ServiceRequest, ServiceResponse};
use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::middleware::Next;

/// The console's content security policy: everything from this origin only, no plugins, no
/// `<base>`, forms only to this origin, and no framing by anyone.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; object-src 'none'; \
     base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// Pages are personal and current: never stored. (Assets set their own `cache-control`.)
pub const NO_STORE: &str = "no-store";

/// `Strict-Transport-Security` when the console speaks TLS.
pub const HSTS: &str = "max-age=31536000";

/// Whether responses also carry `Strict-Transport-Security` (the listener speaks TLS).
#[derive(Debug, Clone, Copy)]
pub struct Transport {
    /// The listener speaks TLS.
    pub tls: bool,
}

/// The headers every response gets, each unless the handler set it.
pub fn fixed_headers() -> [(HeaderName, HeaderValue); 7] {
    [
        (
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CONTENT_SECURITY_POLICY),
        ),
        (header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY")),
        (
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        ),
        (
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        ),
        (header::CACHE_CONTROL, HeaderValue::from_static(NO_STORE)),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            HeaderValue::from_static("same-origin"),
        ),
        (
            HeaderName::from_static("cross-origin-resource-policy"),
            HeaderValue::from_static("same-origin"),
        ),
    ]
}

/// The middleware (`actix_web::middleware::from_fn`); [`Transport`] comes from app data.
pub async fn security_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let tls = req
        .app_data::<actix_web::web::Data<Transport>>()
        .is_some_and(|t| t.tls);
    let mut response = next.call(req).await?;
    let headers = response.headers_mut();
    for (name, value) in fixed_headers() {
        if !headers.contains_key(&name) {
            headers.insert(name, value);
        }
    }
    if tls {
        headers.insert(
            header::STRICT_TRANSPORT_SECURITY,
            HeaderValue::from_static(HSTS),
        );
    }
    Ok(response)
}
