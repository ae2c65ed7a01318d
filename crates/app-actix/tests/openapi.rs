//! The OpenAPI document: the committed `docs/openapi.json` is the generated one, it documents
//! exactly the routes the server registers, and every `$ref` in it resolves.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;

use app_actix::http::{RouteList, openapi, route_table, sandbox_route_table};
use serde_json::Value;

const REGENERATE: &str = "cargo run -q -p app-actix --bin payoutd -- openapi > docs/openapi.json";

fn generated() -> Value {
    serde_json::from_str(&openapi::to_json().expect("the document renders")).expect("valid JSON")
}

#[test]
fn docs_openapi_json_is_the_generated_document() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/openapi.json");
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    let expected = openapi::to_json().expect("the document renders") + "\n";
    assert!(
        committed == expected,
        "docs/openapi.json is not the document the code generates; regenerate it with\n\n    {REGENERATE}\n"
    );
}

#[test]
fn the_document_is_openapi_3_1() {
    let doc = generated();
    assert_eq!(doc["openapi"], "3.1.0");
    assert_eq!(doc["info"]["title"], "payoutd");
}

/// (METHOD, path) of every operation in the document.
fn documented() -> BTreeSet<(String, String)> {
    let doc = generated();
    let mut operations = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for method in item.as_object().expect("a path item").keys() {
            if [
                "get", "put", "post", "delete", "options", "head", "patch", "trace",
            ]
            .contains(&method.as_str())
            {
                operations.insert((method.to_uppercase(), path.clone()));
            }
        }
    }
    operations
}

#[test]
fn every_registered_route_is_documented_and_nothing_else() {
    let mut routes = RouteList::default();
    route_table(&mut routes);
    sandbox_route_table(&mut routes);
    let registered: BTreeSet<(String, String)> = routes
        .0
        .iter()
        .map(|(method, path)| (method.as_str().to_owned(), path.clone()))
        .collect();
    assert_eq!(
        registered.len(),
        routes.0.len(),
        "a route is registered twice"
    );
    let documented = documented();
    let missing: Vec<_> = registered.difference(&documented).collect();
    let extra: Vec<_> = documented.difference(&registered).collect();
    assert!(
        missing.is_empty(),
        "routes served but not in the OpenAPI document (annotate the handler with \
         #[utoipa::path] and list it in http::openapi::ApiDoc): {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "operations documented but not served: {extra:?}"
    );
}

fn collect_refs(value: &Value, refs: &mut BTreeSet<String>) {
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) => {
                        refs.insert(target.clone());
                    }
                    _ => collect_refs(value, refs),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect_refs(v, refs)),
        _ => {}
    }
}

#[test]
fn every_reference_resolves() {
    let doc = generated();
    let mut refs = BTreeSet::new();
    collect_refs(&doc, &mut refs);
    assert!(!refs.is_empty());
    for target in refs {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{target} is not local"));
        assert!(doc.pointer(pointer).is_some(), "{target} does not resolve");
    }
}

#[test]
fn the_error_code_schema_is_the_catalogue() {
    let doc = generated();
    let schema = &doc["components"]["schemas"]["ErrorCode"];
    let codes: Vec<&str> = schema["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .map(|c| c.as_str().expect("a string"))
        .collect();
    let catalogue: Vec<&str> = domain::ErrorCode::ALL.iter().map(|c| c.as_str()).collect();
    assert_eq!(codes, catalogue);
    for (entry, code) in schema["x-catalogue"]
        .as_array()
        .expect("x-catalogue")
        .iter()
        .zip(domain::ErrorCode::ALL)
    {
        assert_eq!(entry["message"], code.message());
        assert_eq!(entry["status"], code.http_status());
    }
}

#[test]
fn api_operations_need_both_headers_and_the_others_none() {
    let doc = generated();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let security = &operation["security"];
            if path.starts_with("/api/") {
                assert_eq!(
                    security,
                    &serde_json::json!([{"api_key": [], "signature": []}]),
                    "{method} {path}"
                );
                let responses = operation["responses"].as_object().expect("responses");
                for status in ["200", "400", "401", "413", "429", "500", "503"] {
                    assert!(responses.contains_key(status), "{method} {path}: {status}");
                }
            } else {
                assert!(security.is_null(), "{method} {path} needs no API key");
            }
        }
    }
}

/// Generators name enum members by upper-casing the value (openapi-python-client stops at
/// `AUD` twice, and names `1` `VALUE_0`): an enum whose values would collide, or are not
/// words, names its members in `x-enum-varnames`, one distinct name per value.
#[test]
fn every_enum_gives_generators_distinct_member_names() {
    let doc = generated();
    for (name, schema) in doc["components"]["schemas"].as_object().expect("schemas") {
        let Some(values) = schema["enum"].as_array() else {
            continue;
        };
        let names: Vec<String> = match schema["x-enum-varnames"].as_array() {
            Some(names) => {
                assert_eq!(names.len(), values.len(), "{name}: one name per value");
                names
                    .iter()
                    .map(|n| n.as_str().expect("a name").to_owned())
                    .collect()
            }
            None => values
                .iter()
                .map(|v| {
                    let value = v.as_str().expect("a string value");
                    assert!(
                        value.starts_with(|c: char| c.is_ascii_alphabetic()),
                        "{name}: `{value}` is not a word; name it in x-enum-varnames"
                    );
                    value.to_uppercase()
                })
                .collect(),
        };
        let distinct: BTreeSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len(), "{name}: {names:?}");
    }
}

/// A success envelope's payload is its type's named schema, not a copy: one type per payload
/// in a generated client.
#[test]
fn envelopes_refer_to_their_payloads_named_schema() {
    let doc = generated();
    let schemas = doc["components"]["schemas"].as_object().expect("schemas");
    let mut checked = 0;
    for (name, schema) in schemas {
        let payload = &schema["properties"]["payload"];
        let (target, reference) = if let Some(item) = name
            .strip_prefix("Success_Vec_")
            .or_else(|| name.strip_prefix("Listing_"))
        {
            (item, &payload["items"]["$ref"])
        } else if let Some(target) = name.strip_prefix("Success_") {
            (target, &payload["$ref"])
        } else {
            continue;
        };
        assert!(schemas.contains_key(target), "{name}: no schema {target}");
        assert_eq!(
            reference.as_str(),
            Some(format!("#/components/schemas/{target}").as_str()),
            "{name}"
        );
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
}

/// Every operation has an id (generated clients name their functions by it), unique.
#[test]
fn every_operation_has_a_unique_id() {
    let doc = generated();
    let mut ids = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, operation) in item.as_object().expect("a path item") {
            let id = operation["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            assert!(ids.insert(id.to_owned()), "{id} is used twice");
        }
    }
}
