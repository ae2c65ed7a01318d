//! Who is asking: the session cookie and its extractor, the pre-session secret of the sign-in
//! and enrolment forms, CSRF checks, and the request's id and client address.
//!
//! Cookies are `__Host-` prefixed (the browser accepts them only with `Secure`, `Path=/` and
//! no `Domain`, so no sibling host can set or shadow them), `Secure`, `HttpOnly` and
//! `SameSite=Strict`, with no expiry of their own: the server ends sessions.

use std::net::IpAddr;

use actix_web::cookie::{Cookie, SameSite};
use actix_web::dev::Payload;
use actix_web::{FromRequest, HttpMessage, HttpRequest, web};
use domain::audit::AuditContext;
use domain::operators::service::Authenticated;
use domain::operators::{BrowserSecret, Capability};
use futures_util::future::LocalBoxFuture;

use crate::error::ConsoleError;
use crate::nav::{Chrome, Section};
use crate::state::Console;

/// The session cookie.
pub const SESSION_COOKIE: &str = "__Host-payoutd_session";

/// The pre-session cookie: the secret the sign-in and enrolment forms' CSRF tokens belong to.
pub const FORM_COOKIE: &str = "__Host-payoutd_form";

/// The request's id (set by the console's request middleware).
#[derive(Debug, Clone)]
pub struct RequestId(pub String);

/// A cookie of the console's kind with `value`.
pub fn cookie(name: &'static str, value: String) -> Cookie<'static> {
    Cookie::build(name, value)
        .path("/")
        .secure(true)
        .http_only(true)
        .same_site(SameSite::Strict)
        .finish()
}

/// A cookie that deletes `name`.
pub fn removal(name: &'static str) -> Cookie<'static> {
    let mut gone = cookie(name, String::new());
    gone.make_removal();
    gone
}

/// Where a request comes from, for the audit log and throttling.
#[derive(Debug, Clone)]
pub struct Origin {
    /// The request's id.
    pub request_id: Option<String>,
    /// The client's address (the connection's peer: the console does not trust forwarding
    /// headers).
    pub client: Option<IpAddr>,
}

impl Origin {
    /// Of `req`.
    pub fn of(req: &HttpRequest) -> Self {
        Self {
            request_id: req.extensions().get::<RequestId>().map(|r| r.0.clone()),
            client: req.peer_addr().map(|a| a.ip()),
        }
    }
}

/// A request of a signed-in operator.
pub struct SignedIn {
    /// The operator and session, as stored now.
    pub auth: Authenticated,
    /// The session token (for CSRF tokens and sign-out).
    pub token: BrowserSecret,
    /// Where the request comes from.
    pub origin: Origin,
}

impl SignedIn {
    /// `Ok` when the operator's role allows `capability`.
    ///
    /// # Errors
    /// [`ConsoleError::Forbidden`].
    pub fn require(&self, capability: Capability) -> Result<(), ConsoleError> {
        let role = self.auth.operator.role;
        if role.allows(capability) {
            Ok(())
        } else {
            Err(ConsoleError::Forbidden { role, capability })
        }
    }

    /// Whether the operator's role allows `capability` (to offer a form only to those who may
    /// use it; the handler still [`SignedIn::require`]s it).
    pub fn may(&self, capability: Capability) -> bool {
        self.auth.operator.role.allows(capability)
    }

    /// The CSRF token of this session's forms.
    pub fn csrf(&self) -> String {
        self.token.csrf_token()
    }

    /// `Ok` when `presented` is this session's CSRF token.
    ///
    /// # Errors
    /// [`ConsoleError::Csrf`].
    pub fn check_csrf(&self, presented: &str) -> Result<(), ConsoleError> {
        if self.token.csrf_matches(presented) {
            Ok(())
        } else {
            Err(ConsoleError::Csrf)
        }
    }

    /// The header of its pages.
    pub fn chrome(&self, current: Option<Section>) -> Chrome {
        Chrome {
            email: self.auth.operator.email.as_str().to_owned(),
            role: self.auth.operator.role,
            csrf: self.csrf(),
            current,
        }
    }

    /// The admin use cases, acting for this operator (audited with its request id and
    /// address).
    pub fn admin(&self, console: &Console) -> domain::admin::AdminService {
        domain::admin::AdminService::new(
            console.admin.clone(),
            console.clock.clone(),
            console.ids.clone(),
            self.audit_context(),
        )
    }

    /// The audit context of its changes.
    pub fn audit_context(&self) -> AuditContext {
        self.auth.audit_context(
            self.origin.request_id.clone(),
            self.origin.client.map(|a| a.to_string()),
        )
    }
}

/// The request's path and query, for coming back after sign-in (GET only).
fn next_of(req: &HttpRequest) -> Option<String> {
    (req.method() == actix_web::http::Method::GET).then(|| {
        let uri = req.uri();
        uri.path_and_query()
            .map_or_else(|| uri.path().to_owned(), |p| p.as_str().to_owned())
    })
}

impl FromRequest for SignedIn {
    type Error = ConsoleError;
    type Future = LocalBoxFuture<'static, Result<Self, Self::Error>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let console = req.app_data::<web::Data<Console>>().cloned();
        let token = req
            .cookie(SESSION_COOKIE)
            .and_then(|c| BrowserSecret::parse(c.value()));
        let origin = Origin::of(req);
        let next = next_of(req);
        Box::pin(async move {
            let console = console.ok_or_else(|| {
                ConsoleError::Port(domain::PortError::unknown("console state missing"))
            })?;
            let Some(token) = token else {
                return Err(ConsoleError::SignIn { next });
            };
            match console.operators.authenticate(&token).await? {
                Some(auth) => {
                    crate::fmt::show_times_in(auth.operator.time_zone);
                    Ok(SignedIn {
                        auth,
                        token,
                        origin,
                    })
                }
                None => Err(ConsoleError::SignIn { next }),
            }
        })
    }
}

/// The browser's pre-session secret (sign-in and enrolment forms): the one in its cookie, or a
/// new one the response must set (`fresh`).
pub struct FormSecret {
    /// The secret.
    pub secret: BrowserSecret,
    /// Whether it is new (set the cookie).
    pub fresh: bool,
}

impl FormSecret {
    /// The secret of `req`'s cookie, or a new one.
    pub fn of(req: &HttpRequest, console: &Console) -> Self {
        match req
            .cookie(FORM_COOKIE)
            .and_then(|c| BrowserSecret::parse(c.value()))
        {
            Some(secret) => Self {
                secret,
                fresh: false,
            },
            None => Self {
                secret: BrowserSecret::generate(console.ids.as_ref()),
                fresh: true,
            },
        }
    }

    /// `Ok` when the request carries a form secret and `presented` is its CSRF token.
    ///
    /// # Errors
    /// [`ConsoleError::Csrf`].
    pub fn check(req: &HttpRequest, presented: &str) -> Result<(), ConsoleError> {
        let secret = req
            .cookie(FORM_COOKIE)
            .and_then(|c| BrowserSecret::parse(c.value()))
            .ok_or(ConsoleError::Csrf)?;
        if secret.csrf_matches(presented) {
            Ok(())
        } else {
            Err(ConsoleError::Csrf)
        }
    }

    /// The cookie to set when fresh.
    pub fn cookie(&self) -> Option<Cookie<'static>> {
        self.fresh
            .then(|| cookie(FORM_COOKIE, self.secret.expose().to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_host_only_secure_http_only_and_strict() {
        let c = cookie(SESSION_COOKIE, "v".to_owned()).to_string();
        assert!(c.starts_with("__Host-payoutd_session=v"), "{c}");
        for part in ["Path=/", "Secure", "HttpOnly", "SameSite=Strict"] {
            assert!(c.contains(part), "{c}");
        }
        assert!(
            !c.contains("Domain") && !c.contains("Max-Age") && !c.contains("Expires"),
            "{c}"
        );
        let gone = removal(SESSION_COOKIE).to_string();
        assert!(gone.contains("Max-Age=0"), "{gone}");
    }
}
