//! Console failures as pages: every refusal says in words what happened, with the right status.

use actix_web::http::StatusCode;
use actix_web::http::header::LOCATION;
use actix_web::{HttpResponse, ResponseError};
use domain::PortError;
use domain::operators::{Capability, Role};
use maud::html;

use crate::layout::{Header, page};

/// Why a console request was not served.
#[derive(Debug, thiserror::Error)]
pub enum ConsoleError {
    /// No live session: sign in first (`next` is where to go back to, a local path).
    #[error("not signed in")]
    SignIn {
        /// The page asked for.
        next: Option<String>,
    },
    /// The operator's role may not do this.
    #[error("the role {role} may not do this")]
    Forbidden {
        /// The operator's role.
        role: Role,
        /// What was needed.
        capability: Capability,
    },
    /// The form's CSRF token is missing or not this browser's, or the request came from
    /// another site.
    #[error("the form has expired or came from another site")]
    Csrf,
    /// Nothing here.
    #[error("not found")]
    NotFound,
    /// The request is malformed.
    #[error("{0}")]
    BadRequest(String),
    /// The database or another dependency failed.
    #[error(transparent)]
    Port(#[from] PortError),
}

impl From<domain::admin::AdminError> for ConsoleError {
    /// An admin use case's refusal: an unknown subaccount is not found, a failed store is a
    /// failed store, anything else is the operator's input, said as the CLI says it.
    fn from(e: domain::admin::AdminError) -> Self {
        use domain::admin::AdminError;
        match e {
            AdminError::SubaccountNotFound => ConsoleError::NotFound,
            AdminError::Port(e) => ConsoleError::Port(e),
            other => ConsoleError::BadRequest(format!("Nothing was changed: {other}.")),
        }
    }
}

/// What a capability lets one do, in words.
pub fn capability_words(capability: Capability) -> &'static str {
    match capability {
        Capability::Read => "read the console",
        Capability::DecideKyc => "decide KYC",
        Capability::CancelPayouts => "cancel payouts",
        Capability::ResendWebhooks => "resend webhooks",
        Capability::ResendConfirmations => "send confirmation requests again",
        Capability::DownloadBankFiles => "download bank files",
        Capability::ManageSubaccounts => "manage subaccounts",
        Capability::ManageApiKeys => "manage API keys",
        Capability::ManageFees => "set fees",
        Capability::ManageWebhooks => "manage webhook URLs and secrets",
        Capability::FundSubaccounts => "fund subaccounts",
        Capability::ManageOperators => "manage operators",
        Capability::ReadAudit => "read the audit log",
    }
}

fn error_page(status: StatusCode, title: &str, message: &str) -> HttpResponse {
    let body = page(
        title,
        Header::Anonymous,
        html! {
            div.notice.error role="alert" { p { (message) } }
            p { a href="/" { "Back to the console" } }
        },
    );
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .body(body.into_string())
}

impl ResponseError for ConsoleError {
    fn status_code(&self) -> StatusCode {
        match self {
            ConsoleError::SignIn { .. } => StatusCode::SEE_OTHER,
            ConsoleError::Forbidden { .. } | ConsoleError::Csrf => StatusCode::FORBIDDEN,
            ConsoleError::NotFound => StatusCode::NOT_FOUND,
            ConsoleError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ConsoleError::Port(PortError::Unavailable(_)) => StatusCode::SERVICE_UNAVAILABLE,
            ConsoleError::Port(PortError::Unknown(_)) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    fn error_response(&self) -> HttpResponse {
        match self {
            ConsoleError::SignIn { next } => {
                let location = match next.as_deref().filter(|n| is_local_path(n)) {
                    Some(next) if next != "/" => format!(
                        "/login?{}",
                        serde_urlencoded::to_string([("next", next)]).unwrap_or_default()
                    ),
                    _ => "/login".to_owned(),
                };
                HttpResponse::SeeOther()
                    .insert_header((LOCATION, location))
                    .finish()
            }
            ConsoleError::Forbidden { role, capability } => error_page(
                self.status_code(),
                "Not allowed",
                &format!(
                    "Your role ({role}) may not {}. Ask an admin if you need to.",
                    capability_words(*capability)
                ),
            ),
            ConsoleError::Csrf => error_page(
                self.status_code(),
                "Form expired",
                "This form has expired or was sent from another site, so nothing was done. \
                 Go back, reload the page and try again.",
            ),
            ConsoleError::NotFound => error_page(
                self.status_code(),
                "Not found",
                "There is nothing at this address.",
            ),
            ConsoleError::BadRequest(message) => {
                error_page(self.status_code(), "Not understood", message)
            }
            ConsoleError::Port(e) => {
                match e {
                    PortError::Unavailable(_) => {
                        tracing::warn!(error = %e, "console request failed")
                    }
                    PortError::Unknown(_) => tracing::error!(error = %e, "console request failed"),
                }
                error_page(
                    self.status_code(),
                    "Please try again",
                    "The console could not reach its database just now. Nothing was changed \
                     unless the page says so; try again in a moment.",
                )
            }
        }
    }
}

/// Whether `path` is a path on this origin (so a redirect to it stays here): starts with one
/// `/`, not `//` or `/\`, no scheme, no control characters.
pub fn is_local_path(path: &str) -> bool {
    path.starts_with('/')
        && !path.starts_with("//")
        && !path.starts_with("/\\")
        && path.len() <= 1024
        && !path.chars().any(|c| c.is_control() || c == '\\')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_paths_are_redirect_targets() {
        for good in ["/", "/payouts?status=failed", "/payouts/abc"] {
            assert!(is_local_path(good), "{good}");
        }
        for bad in [
            "",
            "https://evil.example",
            "//evil.example",
            "/\\evil",
            "/a\nb",
            "payouts",
        ] {
            assert!(!is_local_path(bad), "{bad}");
        }
    }

    #[test]
    fn refusals_are_said_in_words() {
        let forbidden = ConsoleError::Forbidden {
            role: Role::Viewer,
            capability: Capability::DecideKyc,
        };
        assert_eq!(forbidden.status_code(), StatusCode::FORBIDDEN);
        for capability in Capability::ALL {
            assert!(!capability_words(capability).is_empty());
        }
        let to_login = ConsoleError::SignIn {
            next: Some("//evil.example".to_owned()),
        }
        .error_response();
        assert_eq!(
            to_login
                .headers()
                .get(LOCATION)
                .and_then(|v| v.to_str().ok()),
            Some("/login")
        );
        let back = ConsoleError::SignIn {
            next: Some("/payouts?x=1".to_owned()),
        }
        .error_response();
        assert_eq!(
            back.headers().get(LOCATION).and_then(|v| v.to_str().ok()),
            Some("/login?next=%2Fpayouts%3Fx%3D1")
        );
    }
}
