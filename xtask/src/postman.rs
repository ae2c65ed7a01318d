//! `cargo xtask postman`: the Postman collection (v2.1) of `docs/openapi.json`, written to
//! `docs/examples/postman/payoutd.postman_collection.json`.
//!
//! One request per operation of the document, in a folder per tag, with example bodies and
//! query values from the schemas; ids the merchant has (the subaccount, a receiver, an account,
//! a payout) are collection variables. A collection-level pre-request script signs every `/api`
//! request with v2 (docs/API.md, "Authentication"). A last folder, "Pay a receiver (sandbox)",
//! runs the sandbox walkthrough in order, each step keeping the id it created for the next:
//! `newman run … --folder "Pay a receiver (sandbox)"` pays a receiver (app-actix's
//! tests/api/openapi_clients.rs runs it against a live payoutd, and checks that the collection
//! has a request for every operation). An xtask test checks the committed file is this output.

use std::{fs, path::PathBuf};

use serde_json::{Map, Value, json};

use crate::paths;

/// The collection file, relative to the workspace root.
pub const COLLECTION: &str = "docs/examples/postman/payoutd.postman_collection.json";

/// The walkthrough folder's name.
pub const WALKTHROUGH: &str = "Pay a receiver (sandbox)";

/// The pre-request script of every request: the v2 signature of docs/API.md over the request
/// as it will be sent (variables resolved). `unique` is set first, fresh for each request, for
/// values that must differ between runs (an e-mail address, a payout reference): dynamic
/// variables such as `{{$guid}}` are resolved again when the request is sent, so a signature
/// computed over them would not match.
const SIGNING_SCRIPT: &str = r#"// Signs every /api request with v2 (docs/API.md, "Authentication").
const last = Number(pm.collectionVariables.get('lastNonce') || 0);
const nonce = Math.max(Date.now(), last + 1); // a POST nonce is accepted once
pm.collectionVariables.set('lastNonce', String(nonce));
pm.collectionVariables.set('unique', String(nonce));
const path = pm.variables.replaceIn(pm.request.url.getPathWithQuery());
if (path.startsWith('/api/')) {
  const apiKey = pm.variables.get('apiKey');
  const body = pm.request.body && pm.request.body.mode === 'raw'
    ? pm.variables.replaceIn(pm.request.body.raw || '') : '';
  const bodyHash = CryptoJS.SHA256(body).toString(CryptoJS.enc.Hex);
  const message = [nonce, apiKey, pm.request.method.toUpperCase(), path, bodyHash].join('.');
  const mac = CryptoJS.HmacSHA256(message, pm.variables.get('apiSecret')).toString(CryptoJS.enc.Hex);
  pm.request.headers.upsert({ key: 'x-api-key', value: apiKey });
  pm.request.headers.upsert({ key: 'x-signature-version', value: '2' });
  pm.request.headers.upsert({ key: 'signature', value: nonce + '.' + mac });
}"#;

/// The collection variables: (name, default value, what it is).
const VARIABLES: [(&str, &str, &str); 8] = [
    ("baseUrl", "http://127.0.0.1:8080", "payoutd's address"),
    ("apiKey", "", "Your API key (`pk_...`)"),
    ("apiSecret", "", "Your API secret (`sk_...`)"),
    ("subaccountId", "", "Your subaccount's id"),
    ("receiverId", "", "A receiver (the walkthrough sets it)"),
    (
        "accountId",
        "",
        "A receiver account (the walkthrough sets it)",
    ),
    ("payoutId", "", "A payout (the walkthrough sets it)"),
    (
        "confirmToken",
        "",
        "The token of a confirmation link (from the e-mail)",
    ),
];

/// Which variable stands for a path parameter: by the segment before it.
fn path_variable(previous_segment: &str) -> Result<&'static str, String> {
    Ok(match previous_segment {
        "receiver" => "receiverId",
        "receiver-account" => "accountId",
        "payout" => "payoutId",
        "subaccount" | "balance" => "subaccountId",
        "confirm" => "confirmToken",
        other => {
            return Err(format!(
                "no collection variable for the path parameter after `{other}`: add one to \
                 xtask/src/postman.rs"
            ));
        }
    })
}

/// Which variable a body field or query parameter of this name takes.
fn field_variable(name: &str) -> Option<&'static str> {
    match name {
        "subaccount_id" => Some("subaccountId"),
        "receiver_id" => Some("receiverId"),
        "account_id" | "receiver_account_id" => Some("accountId"),
        "payout_id" => Some("payoutId"),
        _ => None,
    }
}

/// `cargo xtask postman`: writes the collection.
pub fn run() -> Result<(), String> {
    let root = paths::workspace_root();
    let collection = generate(&read_document()?)?;
    let path = root.join(COLLECTION);
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    }
    fs::write(&path, render(&collection)?)
        .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
    eprintln!("xtask: wrote {}", path.display());
    Ok(())
}

fn document_path() -> PathBuf {
    paths::workspace_root().join("docs").join("openapi.json")
}

fn read_document() -> Result<Value, String> {
    let path = document_path();
    let text = fs::read_to_string(&path)
        .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
    serde_json::from_str(&text).map_err(|err| format!("{} is not JSON: {err}", path.display()))
}

/// The file's text: pretty JSON and a final newline.
pub fn render(collection: &Value) -> Result<String, String> {
    serde_json::to_string_pretty(collection)
        .map(|text| text + "\n")
        .map_err(|err| format!("cannot render the collection: {err}"))
}

/// The collection of `doc`.
pub fn generate(doc: &Value) -> Result<Value, String> {
    let mut folders: Vec<(String, String, Vec<Value>)> = doc["tags"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|tag| {
            (
                tag["name"].as_str().unwrap_or_default().to_owned(),
                tag["description"].as_str().unwrap_or_default().to_owned(),
                Vec::new(),
            )
        })
        .collect();
    let paths = doc["paths"]
        .as_object()
        .ok_or("the document has no `paths`")?;
    for (path, item) in paths {
        let Some(item) = item.as_object() else {
            continue;
        };
        for (method, operation) in item {
            let tag = operation["tags"][0].as_str().unwrap_or("Other");
            let request = request_item(doc, method, path, operation)?;
            match folders.iter_mut().find(|(name, _, _)| name == tag) {
                Some((_, _, items)) => items.push(request),
                None => folders.push((tag.to_owned(), String::new(), vec![request])),
            }
        }
    }
    let mut items: Vec<Value> = folders
        .into_iter()
        .filter(|(_, _, items)| !items.is_empty())
        .map(|(name, description, item)| json!({"name": name, "description": description, "item": item}))
        .collect();
    items.push(walkthrough(doc)?);
    Ok(json!({
        "info": {
            "name": doc["info"]["title"],
            "description": "Every operation of payoutd's docs/openapi.json, generated by \
                `cargo xtask postman`. Set `baseUrl`, `apiKey`, `apiSecret` and `subaccountId` \
                (collection variables); every /api request is signed with v2 by the collection's \
                pre-request script (docs/API.md, \"Authentication\"). The last folder pays a \
                receiver in the sandbox, step by step.",
            "schema": "https://schema.getpostman.com/json/collection/v2.1.0/collection.json",
        },
        "event": [{
            "listen": "prerequest",
            "script": {"type": "text/javascript", "exec": SIGNING_SCRIPT.lines().collect::<Vec<_>>()},
        }],
        "variable": VARIABLES.iter().map(|(key, value, description)| json!({
            "key": key, "value": value, "type": "string", "description": description,
        })).collect::<Vec<_>>(),
        "item": items,
    }))
}

/// `#/components/schemas/X` resolved (once per level), else the schema itself.
fn resolve<'d>(doc: &'d Value, schema: &'d Value) -> &'d Value {
    match schema["$ref"].as_str() {
        Some(target) => target
            .strip_prefix('#')
            .and_then(|pointer| doc.pointer(pointer))
            .map_or(schema, |found| resolve(doc, found)),
        None => schema,
    }
}

/// An example value of `schema` for a field named `name`, or `None` when it has none worth
/// sending (an optional field without an example is left out by the caller).
fn example(doc: &Value, name: &str, schema: &Value) -> Option<Value> {
    if let Some(variable) = field_variable(name) {
        return Some(Value::String(format!("{{{{{variable}}}}}")));
    }
    if let Some(first) = schema["examples"].get(0) {
        return Some(first.clone());
    }
    let schema = resolve(doc, schema);
    if let Some(first) = schema["examples"].get(0).or(schema["enum"].get(0)) {
        return Some(first.clone());
    }
    for composite in ["oneOf", "anyOf", "allOf"] {
        if let Some(first) = schema[composite].get(0) {
            return example(doc, name, first);
        }
    }
    let kind = match &schema["type"] {
        Value::Array(kinds) => kinds.first().and_then(Value::as_str).unwrap_or(""),
        kind => kind.as_str().unwrap_or(""),
    };
    match kind {
        "object" => Some(object_example(doc, schema)),
        "array" => Some(Value::Array(
            example(doc, name, &schema["items"]).into_iter().collect(),
        )),
        "integer" => Some(schema["minimum"].as_i64().unwrap_or(1).into()),
        "boolean" => Some(false.into()),
        "string" => Some("".into()),
        _ => None,
    }
}

/// An object of the required properties and those with an example.
fn object_example(doc: &Value, schema: &Value) -> Value {
    let required: Vec<&str> = schema["required"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let mut object = Map::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let wanted = required.contains(&name.as_str())
            || property["examples"].get(0).is_some()
            || field_variable(name).is_some();
        if let Some(value) = wanted.then(|| example(doc, name, property)).flatten() {
            object.insert(name.clone(), value);
        }
    }
    Value::Object(object)
}

/// The Postman URL of `path` (`{param}` as its collection variable) with `query`.
fn url(path: &str, query: Vec<Value>) -> Result<Value, String> {
    let mut segments = Vec::new();
    let mut previous = "";
    for segment in path.trim_start_matches('/').split('/') {
        if segment.starts_with('{') && segment.ends_with('}') {
            segments.push(format!("{{{{{}}}}}", path_variable(previous)?));
        } else {
            segments.push(segment.to_owned());
        }
        previous = segment;
    }
    let enabled: Vec<String> = query
        .iter()
        .filter(|param| param["disabled"] != true)
        .map(|param| {
            format!(
                "{}={}",
                param["key"].as_str().unwrap_or_default(),
                param["value"].as_str().unwrap_or_default()
            )
        })
        .collect();
    let mut raw = format!("{{{{baseUrl}}}}/{}", segments.join("/"));
    if !enabled.is_empty() {
        raw = format!("{raw}?{}", enabled.join("&"));
    }
    let mut url = json!({"raw": raw, "host": ["{{baseUrl}}"], "path": segments});
    if !query.is_empty() {
        url["query"] = Value::Array(query);
    }
    Ok(url)
}

/// The request of one operation.
fn request_item(doc: &Value, method: &str, path: &str, operation: &Value) -> Result<Value, String> {
    let mut query = Vec::new();
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        if parameter["in"] != "query" {
            continue;
        }
        let name = parameter["name"].as_str().unwrap_or_default();
        let value = match example(doc, name, &parameter["schema"]) {
            Some(Value::String(text)) => text,
            Some(other) => other.to_string(),
            None => String::new(),
        };
        let mut param = json!({"key": name, "value": value});
        if let Some(description) = parameter["description"].as_str() {
            param["description"] = description.into();
        }
        if parameter["required"] != true {
            param["disabled"] = true.into();
        }
        query.push(param);
    }
    let mut request = json!({
        "method": method.to_uppercase(),
        "header": [],
        "url": url(path, query)?,
    });
    if let Some(description) = operation["description"].as_str() {
        request["description"] = description.into();
    }
    let content = &operation["requestBody"]["content"];
    if let Some(schema) = content
        .get("application/json")
        .map(|media| &media["schema"])
    {
        let body = example(doc, "", schema).unwrap_or_else(|| json!({}));
        request["body"] = raw_json(&body)?;
        request["header"] = json!([{"key": "content-type", "value": "application/json"}]);
    } else if content.get("application/x-www-form-urlencoded").is_some() {
        request["body"] = json!({"mode": "urlencoded", "urlencoded": []});
    }
    let name = operation["summary"]
        .as_str()
        .or(operation["operationId"].as_str())
        .unwrap_or(path);
    Ok(json!({"name": name, "request": request}))
}

fn raw_json(body: &Value) -> Result<Value, String> {
    Ok(json!({
        "mode": "raw",
        "raw": serde_json::to_string_pretty(body).map_err(|err| err.to_string())?,
        "options": {"raw": {"language": "json"}},
    }))
}

/// A walkthrough step: `operation_id`'s request with `body`, checking for 200 and keeping
/// `keep` (`(variable, payload field)`) from the answer.
fn step(
    doc: &Value,
    name: &str,
    operation_id: &str,
    body: Option<Value>,
    keep: Option<(&str, &str)>,
) -> Result<Value, String> {
    let (method, path, operation) = doc["paths"]
        .as_object()
        .into_iter()
        .flatten()
        .flat_map(|(path, item)| {
            item.as_object()
                .into_iter()
                .flatten()
                .map(move |(method, operation)| (method, path, operation))
        })
        .find(|(_, _, operation)| operation["operationId"] == operation_id)
        .ok_or_else(|| format!("the document has no operation `{operation_id}`"))?;
    let mut item = request_item(doc, method, path, operation)?;
    item["name"] = name.into();
    if let Some(body) = body {
        item["request"]["body"] = raw_json(&body)?;
    }
    let mut test = vec![format!(
        "pm.test('{operation_id} answers 200', () => pm.response.to.have.status(200));"
    )];
    if let Some((variable, field)) = keep {
        test.push(format!(
            "pm.collectionVariables.set('{variable}', pm.response.json().payload.{field});"
        ));
    }
    item["event"] =
        json!([{"listen": "test", "script": {"type": "text/javascript", "exec": test}}]);
    Ok(item)
}

/// The sandbox walkthrough: a receiver, its KYC, an AUD account confirmed, a payout, each
/// read back.
fn walkthrough(doc: &Value) -> Result<Value, String> {
    let receiver = json!({
        "subaccount_id": "{{subaccountId}}",
        "first_name": "Ada",
        "last_name": "Lovelace",
        "email": "ada.{{unique}}@example.com",
        "dob": "1990-12-10",
        "dialcode": "61",
        "phone": "412345678",
        "address": "1 Example Street",
        "city": "Sydney",
        "state": "NSW",
        "postcode": "2000",
        "country": "AUS",
    });
    let steps = vec![
        step(
            doc,
            "1. Create a receiver",
            "createReceiver",
            Some(receiver),
            Some(("receiverId", "receiver_id")),
        )?,
        step(
            doc,
            "2. Complete its KYC (sandbox)",
            "sandboxDecideKyc",
            Some(json!({"receiver_id": "{{receiverId}}", "kyc_status": "completed"})),
            None,
        )?,
        step(doc, "3. Read the receiver back", "getReceiver", None, None)?,
        step(
            doc,
            "4. Give it an AUD account",
            "createReceiverAccountAudDirectEntry",
            Some(
                json!({"receiver_id": "{{receiverId}}", "bsb": "012-002", "account_number": "123456789"}),
            ),
            Some(("accountId", "receiver_account_id")),
        )?,
        step(
            doc,
            "5. Confirm the account (sandbox)",
            "sandboxConfirmAccount",
            Some(json!({"receiver_account_id": "{{accountId}}", "confirm_status": "confirmed"})),
            None,
        )?,
        step(
            doc,
            "6. Pay 100.00 AUD",
            "createPayout",
            Some(json!({
                "receiver_id": "{{receiverId}}",
                "account_id": "{{accountId}}",
                "amount": 10000,
                "currency": "AUD",
                "reference": "invoice-{{unique}}",
            })),
            Some(("payoutId", "payout_id")),
        )?,
        step(doc, "7. Read the payout back", "getPayout", None, None)?,
    ];
    Ok(json!({
        "name": WALKTHROUGH,
        "description": "Pays a receiver in the sandbox, step by step: run the folder in order \
            (each step keeps the id it created in a collection variable for the next).",
        "item": steps,
    }))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_collection_is_the_generated_one() {
        let doc = read_document().unwrap();
        let expected = render(&generate(&doc).unwrap()).unwrap();
        let committed =
            fs::read_to_string(paths::workspace_root().join(COLLECTION)).unwrap_or_default();
        assert!(
            committed == expected,
            "{COLLECTION} is not the collection of docs/openapi.json; regenerate it with \
             `cargo xtask postman`"
        );
    }

    #[test]
    fn every_path_parameter_is_a_variable_and_unknown_ones_are_refused() {
        let url = url("/api/payout/{id}/cancel", Vec::new()).unwrap();
        assert_eq!(url["raw"], "{{baseUrl}}/api/payout/{{payoutId}}/cancel");
        assert!(path_variable("widget").unwrap_err().contains("widget"));
    }
}
