//! The one place errors become HTTP: the failure envelope
//! `{"message": "<operation> failed", "error": [{"code", "message", "field"?}]}`, with the status
//! from the code catalogue. Causes of 5xx are logged with the request id, never sent.

use std::borrow::Cow;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use domain::validation::{FieldError, ValidationErrors};
use domain::{ErrorCode, PortError};
use serde::Serialize;
use serde_json::json;
use utoipa::openapi::RefOr;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::{PartialSchema, ToSchema};

/// One problem with the request.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ErrorItem {
    /// Catalogue code.
    #[schema(value_type = CatalogueCode)]
    pub code: &'static str,
    /// The catalogue message, or a more specific one (e.g. naming a status).
    #[schema(value_type = String)]
    pub message: Cow<'static, str>,
    /// The request field or query parameter concerned, as the client spelled it; only when
    /// the problem is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    pub field: Option<Cow<'static, str>>,
}

impl From<&FieldError> for ErrorItem {
    fn from(e: &FieldError) -> Self {
        Self {
            code: e.code.as_str(),
            message: Cow::Borrowed(e.code.message()),
            field: Some(e.field.clone()),
        }
    }
}

/// The most problems one response lists; the rest are counted in a last `REQ012` item.
pub const MAX_ERROR_ITEMS: usize = 50;

/// A failed request, rendered in the failure envelope.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    operation: &'static str,
    errors: Vec<ErrorItem>,
    /// Seconds for `retry-after` (429, and a 503 of a capacity limit).
    retry_after: Option<u64>,
}

/// The failure envelope: every error response of the service (docs/API.md, Conventions). The HTTP
/// status is the catalogue status of the first item; items reported together share a status.
#[derive(Serialize, ToSchema)]
#[schema(as = FailureEnvelope)]
pub struct Envelope<'a> {
    /// `<operation> failed`, e.g. `Create receiver failed`.
    #[schema(pattern = "^.+ failed$")]
    message: String,
    /// Every problem found, not just the first.
    #[schema(value_type = Vec<ErrorItem>, min_items = 1)]
    error: &'a [ErrorItem],
}

impl ApiError {
    /// `REQ010` (429) with `retry-after`: whole seconds, at least 1, until a request would be
    /// accepted.
    pub fn rate_limited(wait: std::time::Duration) -> Self {
        let mut error = Self::code("Request", ErrorCode::Req010);
        let seconds = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        error.retry_after = Some(seconds.max(1));
        error
    }

    /// The same error with `retry-after`: whole seconds until a retry may succeed (e.g. a 503
    /// of a capacity limit).
    pub fn retry_after(mut self, seconds: u64) -> Self {
        self.retry_after = Some(seconds.max(1));
        self
    }

    /// One code, no field.
    pub fn code(operation: &'static str, code: ErrorCode) -> Self {
        Self::items(
            operation,
            vec![ErrorItem {
                code: code.as_str(),
                message: Cow::Borrowed(code.message()),
                field: None,
            }],
        )
    }

    /// One code with a message more specific than the catalogue's (e.g. naming a status).
    pub fn code_with_message(operation: &'static str, code: ErrorCode, message: String) -> Self {
        Self::items(
            operation,
            vec![ErrorItem {
                code: code.as_str(),
                message: Cow::Owned(message),
                field: None,
            }],
        )
    }

    /// One code about one field.
    pub fn field(
        operation: &'static str,
        code: ErrorCode,
        field: impl Into<Cow<'static, str>>,
    ) -> Self {
        Self::fields(
            operation,
            &ValidationErrors(vec![FieldError::new(code, field)]),
        )
    }

    /// Every failing field of a request.
    pub fn fields(operation: &'static str, errors: &ValidationErrors) -> Self {
        Self::items(operation, errors.0.iter().map(ErrorItem::from).collect())
    }

    fn items(operation: &'static str, mut errors: Vec<ErrorItem>) -> Self {
        // A response is never much larger than its request: past the cap, one item says how
        // many more problems there were.
        if errors.len() > MAX_ERROR_ITEMS {
            let more = errors.len() - MAX_ERROR_ITEMS;
            errors.truncate(MAX_ERROR_ITEMS);
            errors.push(ErrorItem {
                code: ErrorCode::Req012.as_str(),
                message: Cow::Owned(format!("{more} more problems were found than are listed")),
                field: None,
            });
        }
        let status = errors
            .first()
            .and_then(|item| ErrorCode::ALL.iter().find(|c| c.as_str() == item.code))
            .and_then(|code| StatusCode::from_u16(code.http_status()).ok())
            .unwrap_or(StatusCode::BAD_REQUEST);
        Self {
            status,
            operation,
            errors,
            retry_after: None,
        }
    }

    /// An infrastructure failure: 503 `SYS503` when the dependency is unavailable, else 500
    /// `SYS500`. The cause is logged here and never sent.
    pub fn port(operation: &'static str, e: &PortError) -> Self {
        match e {
            PortError::Unavailable(cause) => {
                tracing::warn!(operation, error = %format!("{cause:#}"), "dependency unavailable");
                Self::code(operation, ErrorCode::Sys503)
            }
            PortError::Unknown(cause) => {
                tracing::error!(operation, error = %format!("{cause:#}"), "internal error");
                Self::code(operation, ErrorCode::Sys500)
            }
        }
    }

    /// The codes carried, for tests and logs.
    pub fn codes(&self) -> Vec<&'static str> {
        self.errors.iter().map(|e| e.code).collect()
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} failed: {}", self.operation, self.codes().join(", "))
    }
}

impl ResponseError for ApiError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        if let Some(seconds) = self.retry_after {
            response.insert_header((actix_web::http::header::RETRY_AFTER, seconds.to_string()));
        }
        response.json(Envelope {
            message: format!("{} failed", self.operation),
            error: &self.errors,
        })
    }
}

/// A code of the error catalogue (`domain::codes`): the enum lists every code, the
/// description and `x-catalogue` give each one's HTTP status and message.
pub struct CatalogueCode;

impl PartialSchema for CatalogueCode {
    fn schema() -> RefOr<Schema> {
        let mut table = String::from(
            "A code of the error catalogue. Prefixes: `REQ` request shape, `AUTH` \
             authentication, `IDEM` idempotency, `REVR` receiver, `REAC` receiver account, \
             `PAYO` payout, `SUBA` subaccount, `SYS` internal; within a prefix 1xx = not found, \
             2xx = validation on create, 3xx = other rules.\n\n| Code | HTTP | Message |\n|---|---|---|\n",
        );
        for code in ErrorCode::ALL {
            table.push_str(&format!(
                "| `{}` | {} | {} |\n",
                code.as_str(),
                code.http_status(),
                code.message()
            ));
        }
        let catalogue: Vec<_> = ErrorCode::ALL
            .iter()
            .map(|c| json!({"code": c.as_str(), "status": c.http_status(), "message": c.message()}))
            .collect();
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(ErrorCode::ALL.iter().map(|c| c.as_str())))
            .description(Some(table))
            .extensions(Some(
                Extensions::builder().add("x-catalogue", catalogue).build(),
            ))
            .into()
    }
}

impl ToSchema for CatalogueCode {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("ErrorCode")
    }
}
