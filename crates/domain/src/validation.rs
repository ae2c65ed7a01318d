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

/// Reads request text fields the same way everywhere: trimmed, blank counts as absent, and a
/// value over [`FieldReader::MAX_CHARS`] characters is reported as `too_long` before the field's
/// own parse (every field reports an over-long value the same way).
#[derive(Debug, Clone, Copy)]
pub struct FieldReader {
    too_long: ErrorCode,
}

impl FieldReader {
    /// The longest text a field may hold, in characters.
    pub const MAX_CHARS: usize = 255;

    /// A reader that reports over-long values as `too_long`.
    pub const fn new(too_long: ErrorCode) -> Self {
        Self { too_long }
    }

    /// The trimmed text of a field, `None` when absent or blank.
    pub fn present<'a>(
        &self,
        value: Option<&'a str>,
        field: &'static str,
    ) -> Result<Option<&'a str>, FieldError> {
        let Some(text) = value.map(str::trim).filter(|text| !text.is_empty()) else {
            return Ok(None);
        };
        if text.chars().nth(Self::MAX_CHARS).is_some() {
            return Err(FieldError::new(self.too_long, field));
        }
        Ok(Some(text))
    }

    /// A required field: absent or blank gives `missing`, a failed parse gives `code(error)`.
    pub fn required<T, E>(
        &self,
        value: Option<&str>,
        field: &'static str,
        missing: ErrorCode,
        parse: impl FnOnce(&str) -> Result<T, E>,
        code: impl FnOnce(E) -> ErrorCode,
    ) -> Result<T, FieldError> {
        let text = self
            .present(value, field)?
            .ok_or_else(|| FieldError::new(missing, field))?;
        parse(text).map_err(|error| FieldError::new(code(error), field))
    }

    /// An optional field: absent or blank gives `None`, a failed parse gives `code(error)`.
    pub fn optional<T, E>(
        &self,
        value: Option<&str>,
        field: &'static str,
        parse: impl FnOnce(&str) -> Result<T, E>,
        code: impl FnOnce(E) -> ErrorCode,
    ) -> Result<Option<T>, FieldError> {
        self.present(value, field)?
            .map(|text| parse(text).map_err(|error| FieldError::new(code(error), field)))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const READ: FieldReader = FieldReader::new(ErrorCode::Revr226);

    #[test]
    fn trims_treats_blank_as_absent_and_reports_long_values_first() {
        assert_eq!(READ.present(Some("  x  "), "f"), Ok(Some("x")));
        assert_eq!(READ.present(Some("   "), "f"), Ok(None));
        assert_eq!(READ.present(None, "f"), Ok(None));
        let long = "a".repeat(256);
        assert_eq!(
            READ.present(Some(&long), "f"),
            Err(FieldError::new(ErrorCode::Revr226, "f"))
        );
        assert!(
            READ.present(Some(&"é".repeat(255)), "f").is_ok(),
            "characters, not bytes"
        );
        let parse = |s: &str| s.parse::<u8>().map_err(|_| ());
        assert_eq!(
            READ.required(Some("7"), "f", ErrorCode::Revr204, parse, |()| {
                ErrorCode::Revr215
            }),
            Ok(7)
        );
        assert_eq!(
            READ.required(None, "f", ErrorCode::Revr204, parse, |()| {
                ErrorCode::Revr215
            }),
            Err(FieldError::new(ErrorCode::Revr204, "f"))
        );
        assert_eq!(
            READ.optional(Some("x"), "f", parse, |()| ErrorCode::Revr215),
            Err(FieldError::new(ErrorCode::Revr215, "f"))
        );
        assert_eq!(
            READ.optional(Some(" "), "f", parse, |()| ErrorCode::Revr215),
            Ok(None)
        );
    }
}
