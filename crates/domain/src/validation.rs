//! Field-level validation failures, collected so one response can report every failing field.

use std::borrow::Cow;

use crate::codes::ErrorCode;

/// One failing input field: the code to report and the field it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The catalogue code (its message comes from the catalogue).
    pub code: ErrorCode,
    /// The request field name, as the client spelled it (e.g. `first_name`).
    pub field: Cow<'static, str>,
}

impl FieldError {
    /// A failure of `field` reported as `code`.
    pub fn new(code: ErrorCode, field: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            field: field.into(),
        }
    }
}

/// Every failing field of one request, in the order the fields were checked.
#[derive(Debug, Clone, Default, PartialEq, Eq, thiserror::Error)]
#[error("{} invalid field(s)", .0.len())]
pub struct ValidationErrors(pub Vec<FieldError>);

impl ValidationErrors {
    /// Records a failure.
    pub fn push(&mut self, code: ErrorCode, field: impl Into<Cow<'static, str>>) {
        self.0.push(FieldError::new(code, field));
    }

    /// Records the failure of a parse, if it failed, and passes the parsed value on.
    pub fn check<T>(&mut self, result: Result<T, FieldError>) -> Option<T> {
        match result {
            Ok(value) => Some(value),
            Err(error) => {
                self.0.push(error);
                None
            }
        }
    }

    /// True when nothing failed.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok(())` when nothing failed, else the collected failures.
    pub fn into_result(self) -> Result<(), ValidationErrors> {
        if self.0.is_empty() { Ok(()) } else { Err(self) }
    }
}
