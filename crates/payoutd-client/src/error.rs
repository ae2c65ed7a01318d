//! What a call can fail with.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::codes::ErrorCode;

/// One problem the API found with a request: an item of the failure envelope's `error` list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorItem {
    /// The catalogue code, e.g. [`ErrorCode::Revr214`].
    pub code: ErrorCode,
    /// The catalogue message, or a more specific one (e.g. naming a payout's status).
    pub message: String,
    /// The request field or query parameter concerned, as the client spelled it (`email`,
    /// `payouts[2].amount`); only when the problem is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
}

/// A refusal by the API: a response other than 2xx, read from its failure envelope
/// (`{"message": "<operation> failed", "error": [...]}`).
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status: the catalogue status of the first item.
    pub status: u16,
    /// The envelope's `message`, e.g. `Create receiver failed`.
    pub message: String,
    /// Every problem found, in the API's order (empty for verify's refusal, which has only
    /// a `message`, and for an answer that was not an envelope at all).
    pub errors: Vec<ErrorItem>,
    /// The response's `x-request-id`, to quote when asking about it.
    pub request_id: Option<String>,
    /// `retry-after` of a 429 or 503, when the server sent one.
    pub retry_after: Option<Duration>,
    /// The envelope's `payload`, when a refusal carries one: an atomic bulk request refused
    /// with `PAYO209` reports each item there (see [`ApiError::bulk_outcome`]).
    pub payload: Option<serde_json::Value>,
}

impl ApiError {
    /// The codes of [`ApiError::errors`], in order.
    pub fn codes(&self) -> Vec<&ErrorCode> {
        self.errors.iter().map(|item| &item.code).collect()
    }

    /// Whether any item has `code`.
    pub fn has(&self, code: &ErrorCode) -> bool {
        self.errors.iter().any(|item| &item.code == code)
    }

    /// The first item about `field`, if any.
    pub fn field(&self, field: &str) -> Option<&ErrorItem> {
        self.errors
            .iter()
            .find(|item| item.field.as_deref() == Some(field))
    }

    /// The per-item outcome of an atomic bulk request refused with `PAYO209`.
    pub fn bulk_outcome(&self) -> Option<crate::BulkOutcome> {
        self.payload
            .as_ref()
            .and_then(|payload| serde_json::from_value(payload.clone()).ok())
    }
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (HTTP {})", self.message, self.status)?;
        for (i, item) in self.errors.iter().enumerate() {
            f.write_str(if i == 0 { ": " } else { "; " })?;
            write!(f, "{} {}", item.code, item.message)?;
            if let Some(field) = &item.field {
                write!(f, " ({field})")?;
            }
        }
        Ok(())
    }
}

/// Why a call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The API refused the request (after any retries: see [`RetryPolicy`](crate::RetryPolicy)).
    #[error("{0}")]
    Api(Box<ApiError>),
    /// The request never got an answer (connection refused or reset, timeout), after the
    /// retries the policy allows.
    #[error("request failed: {0}")]
    Transport(#[source] reqwest::Error),
    /// An answer came back but was not what the route documents.
    #[error("unexpected answer (HTTP {status}): {reason}")]
    Decode {
        /// The HTTP status of the answer.
        status: u16,
        /// What could not be read.
        reason: String,
    },
    /// The client could not be built or the request could not be made (a bad base URL, an
    /// idempotency key the API would refuse, a body that does not serialize).
    #[error("invalid request: {0}")]
    Invalid(String),
}

impl Error {
    /// The API's refusal, when that is what this is.
    pub fn api(&self) -> Option<&ApiError> {
        match self {
            Error::Api(error) => Some(error),
            _ => None,
        }
    }

    /// Whether the API refused the request with `code` (in any item).
    pub fn has_code(&self, code: &ErrorCode) -> bool {
        self.api().is_some_and(|error| error.has(code))
    }
}

impl From<ApiError> for Error {
    fn from(error: ApiError) -> Self {
        Error::Api(Box::new(error))
    }
}
