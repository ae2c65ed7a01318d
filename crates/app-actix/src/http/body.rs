//! Request bodies: a JSON object whose fields are strings, read leniently enough to report every
//! problem at once (`REQ001` not an object, `REQ004` wrong type, `REQ005` unknown field).

use domain::ErrorCode;
use domain::validation::ValidationErrors;
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::error::ApiError;

/// The body as a JSON object, or `REQ001`.
pub fn json_object(operation: &'static str, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(ApiError::code(operation, ErrorCode::Req001)),
    }
}

/// Takes the string fields named in `known` out of `object`. `null` counts as absent. Other
/// types are `REQ004`, strings holding NUL `REQ009` and names not in `known` are `REQ005`, all
/// recorded in `errors`.
pub fn string_fields<const N: usize>(
    object: Map<String, Value>,
    known: [&'static str; N],
    errors: &mut ValidationErrors,
) -> [Option<String>; N] {
    let mut found = fields_by_name(object, &known, errors);
    known.map(|name| found.remove(name))
}

/// Adds the field checks of the use case (`invalid`) to the body's own problems (`shape`),
/// leaving out fields already reported: a field of the wrong type also reads as absent.
pub fn merge_field_errors(shape: &mut ValidationErrors, invalid: ValidationErrors) {
    let shaped: Vec<_> = shape.0.iter().map(|e| e.field.clone()).collect();
    shape
        .0
        .extend(invalid.0.into_iter().filter(|e| !shaped.contains(&e.field)));
}

/// [`string_fields`] for a field list known only at run time: the present string fields by name.
pub fn fields_by_name(
    object: Map<String, Value>,
    known: &[&'static str],
    errors: &mut ValidationErrors,
) -> HashMap<&'static str, String> {
    let mut values = HashMap::new();
    for (key, value) in object {
        let Some(name) = known.iter().copied().find(|k| *k == key) else {
            errors.push(ErrorCode::Req005, key);
            continue;
        };
        match value {
            // PostgreSQL text cannot hold NUL, and no field has a use for it.
            Value::String(s) if s.contains('\0') => errors.push(ErrorCode::Req009, name),
            Value::String(s) => {
                values.insert(name, s);
            }
            Value::Null => {}
            _ => errors.push(ErrorCode::Req004, name),
        }
    }
    values
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sorts_fields_into_values_and_problems() {
        let Value::Object(map) = json!({"a": "x", "b": 5, "c": null, "d": "x\0y", "zz": "?"})
        else {
            panic!("object literal")
        };
        let mut errors = ValidationErrors::default();
        let [a, b, c, d] = string_fields(map, ["a", "b", "c", "d"], &mut errors);
        assert_eq!((a.as_deref(), b, c, d), (Some("x"), None, None, None));
        let codes: Vec<_> = errors
            .0
            .iter()
            .map(|e| (e.code, e.field.to_string()))
            .collect();
        assert!(codes.contains(&(ErrorCode::Req004, "b".to_owned())));
        assert!(codes.contains(&(ErrorCode::Req005, "zz".to_owned())));
        assert!(codes.contains(&(ErrorCode::Req009, "d".to_owned())));
    }

    #[test]
    fn only_objects_are_bodies() {
        for bad in [&b""[..], b"[]", b"\"x\"", b"{", b"null", b"\xff"] {
            assert!(json_object("Test", bad).is_err());
        }
        assert!(json_object("Test", b"{}").is_ok());
    }
}
