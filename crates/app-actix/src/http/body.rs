//! Request bodies: a JSON object whose fields are strings, read leniently enough to report every
//! problem at once (`REQ001` not an object, `REQ004` wrong type, `REQ005` unknown field), and
//! strictly enough that nothing is silently dropped: a key repeated at any depth is `REQ011`
//! (naming the key), never "the last one wins".

use std::cell::RefCell;
use std::collections::HashMap;
use std::fmt;

use domain::ErrorCode;
use domain::validation::ValidationErrors;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};

use super::error::ApiError;

/// The body as a JSON object: `REQ011` naming the first repeated key (its path, `a.b` or
/// `items[2].amount`), `REQ004` naming the field whose number no JSON parser here can hold
/// (e.g. a 400-digit `amount`), `REQ001` for anything else that is not one JSON object.
pub fn json_object(operation: &'static str, body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    object(body).map_err(|problem| problem.into_error(operation))
}

/// The body as a JSON object, or why it is not one, for a route that answers some problems in
/// its own way (verify): read exactly as [`json_object`] reads it.
pub fn object(body: &[u8]) -> Result<Map<String, Value>, BodyProblem> {
    match parse_strict(body)? {
        Value::Object(map) => Ok(map),
        _ => Err(BodyProblem::NotJson),
    }
}

/// Why a body is not a JSON object payoutd accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BodyProblem {
    /// Not JSON, more than one value, or not an object.
    NotJson,
    /// A key given twice in one object; its path.
    RepeatedKey(String),
    /// A number beyond what a double can hold; the path of its field.
    NumberOutOfRange(String),
}

impl BodyProblem {
    /// The answer of a route: `REQ001`, `REQ011` or `REQ004` naming the key's path.
    pub fn into_error(self, operation: &'static str) -> ApiError {
        match self {
            BodyProblem::NotJson => ApiError::code(operation, ErrorCode::Req001),
            BodyProblem::RepeatedKey(path) => ApiError::field(operation, ErrorCode::Req011, path),
            BodyProblem::NumberOutOfRange(path) => {
                ApiError::field(operation, ErrorCode::Req004, path)
            }
        }
    }
}

/// Parses one JSON value like `serde_json::from_slice`, in one pass and at the same cost, but
/// refusing a repeated key at any depth and naming where a number overflowed.
fn parse_strict(body: &[u8]) -> Result<Value, BodyProblem> {
    let state = ParseState::default();
    let mut deserializer = serde_json::Deserializer::from_slice(body);
    let parsed = Strict { state: &state }
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value));
    parsed.map_err(|e| {
        if let Some(path) = state.repeated.borrow_mut().take() {
            BodyProblem::RepeatedKey(path)
        } else if e.to_string().starts_with("number out of range") {
            BodyProblem::NumberOutOfRange(state.path())
        } else {
            BodyProblem::NotJson
        }
    })
}

/// Where the parser is (the keys and indexes down to the value being read) and the repeated
/// key it met, if any.
#[derive(Default)]
struct ParseState {
    path: RefCell<Vec<PathStep>>,
    repeated: RefCell<Option<String>>,
}

enum PathStep {
    Key(String),
    Index(usize),
}

impl ParseState {
    fn path(&self) -> String {
        let mut text = String::new();
        for step in self.path.borrow().iter() {
            match step {
                PathStep::Key(key) => {
                    if !text.is_empty() {
                        text.push('.');
                    }
                    text.push_str(key);
                }
                PathStep::Index(i) => text.push_str(&format!("[{i}]")),
            }
        }
        text
    }
}

#[derive(Clone, Copy)]
struct Strict<'a> {
    state: &'a ParseState,
}

impl<'de> DeserializeSeed<'de> for Strict<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        // serde_json hands over finite doubles only.
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        loop {
            self.state
                .path
                .borrow_mut()
                .push(PathStep::Index(items.len()));
            let Some(item) = seq.next_element_seed(self)? else {
                self.state.path.borrow_mut().pop();
                return Ok(Value::Array(items));
            };
            self.state.path.borrow_mut().pop();
            items.push(item);
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            self.state
                .path
                .borrow_mut()
                .push(PathStep::Key(key.clone()));
            let value = map.next_value_seed(self)?;
            if object.insert(key, value).is_some() {
                *self.state.repeated.borrow_mut() = Some(self.state.path());
                return Err(de::Error::custom("repeated key"));
            }
            self.state.path.borrow_mut().pop();
        }
        Ok(Value::Object(object))
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
            Value::String(s) => {
                if let Some(s) = text_value(name, s, errors) {
                    values.insert(name, s);
                }
            }
            Value::Null => {}
            _ => errors.push(ErrorCode::Req004, name),
        }
    }
    values
}

/// A string field's value, or `REQ009` on `name` when it holds NUL: PostgreSQL text cannot hold
/// it, and no field has a use for it (docs/API.md, Values).
pub fn text_value(
    name: &'static str,
    value: String,
    errors: &mut ValidationErrors,
) -> Option<String> {
    if value.contains('\0') {
        errors.push(ErrorCode::Req009, name);
        None
    } else {
        Some(value)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
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
    fn a_repeated_key_is_refused_at_any_depth_with_its_path() {
        for (body, path) in [
            (r#"{"amount":1,"amount":5000}"#, "amount"),
            (r#"{"a":{"b":1,"c":2,"b":3}}"#, "a.b"),
            (r#"{"items":[{"x":1},{"x":1,"x":2}]}"#, "items[1].x"),
            (r#"{"a":"1","b":{},"a":null}"#, "a"),
        ] {
            assert_eq!(
                parse_strict(body.as_bytes()),
                Err(BodyProblem::RepeatedKey(path.to_owned())),
                "{body}"
            );
        }
        // The same key in different objects is no repetition.
        let same_in_two = r#"{"a":{"x":1},"b":{"x":1},"c":[{"x":1},{"x":2}]}"#;
        assert_eq!(
            parse_strict(same_in_two.as_bytes()),
            Ok(serde_json::from_str::<Value>(same_in_two).unwrap())
        );
    }

    #[test]
    fn a_number_too_large_names_its_field() {
        let huge = format!(r#"{{"currency":"USD","amount":1{}}}"#, "0".repeat(400));
        assert_eq!(
            parse_strict(huge.as_bytes()),
            Err(BodyProblem::NumberOutOfRange("amount".to_owned()))
        );
        let nested = format!(r#"{{"a":[1,{{"b":-1{}}}]}}"#, "0".repeat(400));
        assert_eq!(
            parse_strict(nested.as_bytes()),
            Err(BodyProblem::NumberOutOfRange("a[1].b".to_owned()))
        );
        let error = json_object("Test", huge.as_bytes()).unwrap_err();
        assert_eq!(error.codes(), ["REQ004"]);
    }

    #[test]
    fn strict_parsing_gives_what_serde_json_gives() {
        for body in [
            r#"{}"#,
            r#"{"a":"x","n":-12,"u":18446744073709551615,"f":1.5e300,"t":true,"z":null}"#,
            r#"{"deep":{"list":[[1,2],[],{"k":"v"}],"s":"\u00e9\n"}}"#,
            r#"[1,"two",{"three":3}]"#,
            r#""text""#,
        ] {
            assert_eq!(
                parse_strict(body.as_bytes()),
                Ok(serde_json::from_str::<Value>(body).unwrap()),
                "{body}"
            );
        }
        for bad in [
            &b""[..],
            b"{",
            b"{} {}",
            b"{\"a\":}",
            b"\xff",
            b"{\"a\":1,}",
        ] {
            assert_eq!(parse_strict(bad), Err(BodyProblem::NotJson), "{bad:?}");
        }
    }

    #[test]
    fn only_objects_are_bodies() {
        for bad in [&b""[..], b"[]", b"\"x\"", b"{", b"null", b"\xff"] {
            assert!(json_object("Test", bad).is_err());
        }
        assert!(json_object("Test", b"{}").is_ok());
    }
}
