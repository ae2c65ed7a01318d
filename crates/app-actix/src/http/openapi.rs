//! The OpenAPI 3.1 document of the service, derived from the code: the handlers'
//! `#[utoipa::path]` annotations, the DTO types the handlers serialize, the route table, the
//! error-code catalogue and the payout methods. Served at `GET /openapi.json` and printed by
//! `payoutd openapi` (which regenerates the committed `docs/openapi.json`).
//!
//! What every `/api` route shares comes from the shared code it runs through (the
//! [`Authenticated`](super::auth::Authenticated) extractor, the idempotency and rate-limit
//! checks), so [`ApiConventions`] adds it to each `/api` operation rather than each handler
//! repeating it.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use actix_web::HttpResponse;
use actix_web::http::header::CONTENT_TYPE;
use domain::ErrorCode;
use domain::account::PayoutMethod;
use domain::idempotency::{HEADER as IDEMPOTENCY_HEADER, REPLAYED_HEADER};
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::header::HeaderBuilder;
use utoipa::openapi::path::{
    HttpMethod, Operation, OperationBuilder, Parameter, ParameterBuilder, ParameterIn,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{
    AdditionalProperties, ArrayItems, KnownFormat, ObjectBuilder, Schema, SchemaFormat, SchemaType,
    Type,
};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi as Document, Ref, RefOr, Required};
use utoipa::{Modify, OpenApi, ToResponse};

use super::accounts::{AccountCreated, VerifyRefused};
use super::envelope::Success;
use super::error::{ApiError, CatalogueCode, Envelope, ErrorItem};
use super::schemas::*;
use super::{accounts, bulk_payouts, health, payouts, receivers, subaccounts, test_helpers};

/// `GET /openapi.json`.
#[utoipa::path(
    get,
    path = "/openapi.json",
    tag = "Operations",
    operation_id = "openapi",
    summary = "This document",
    description = "The OpenAPI 3.1 document of every route (also `payoutd openapi`). No API key.",
    responses(
        (status = 200, description = "The document", content_type = "application/json", body = Object),
        (status = 500, response = InternalError),
    ),
)]
pub async fn serve() -> HttpResponse {
    static RENDERED: OnceLock<Result<String, String>> = OnceLock::new();
    let rendered = RENDERED.get_or_init(|| to_json().map_err(|e| e.to_string()));
    match rendered {
        Ok(json) => HttpResponse::Ok()
            .insert_header((CONTENT_TYPE, "application/json"))
            .body(json.clone()),
        Err(e) => {
            tracing::error!(error = %e, "rendering the OpenAPI document failed");
            actix_web::ResponseError::error_response(&ApiError::code("Request", ErrorCode::Sys500))
        }
    }
}

const SUMMARY: &str = "\
A payout service for a merchant's subaccounts: receivers, their bank accounts, payouts, balances \
and webhooks. `docs/API.md` describes each route in prose.

**Envelopes.** Success: HTTP 200, `{\"message\", \"payload\"}`; lists add a top-level `lastkey` \
(`null` on the last page). Failure: `{\"message\": \"<operation> failed\", \"error\": [{\"code\", \
\"message\", \"field\"?}]}` (`FailureEnvelope`), listing every problem found; the HTTP status is \
the catalogue status of the first code (`ErrorCode` lists the catalogue). The only exception is \
verify's refusal (as in the provider's API), `{\"message\"}` alone.

**Authentication.** Every `/api` route needs `x-api-key` and `signature` \
(`<nonce>.<hex>`): `nonce` is the current Unix time in milliseconds (13 digits, within 300 s of \
the server's clock), `hex` the lower-case HMAC-SHA256, keyed with the API secret, of \
`<nonce>.<api key>` (v1) or, with `x-signature-version: 2`, of \
`<nonce>.<api key>.<METHOD>.<path with query>.<hex SHA-256 of the raw body>` (v2). A POST nonce \
is accepted once per key.

**Idempotency.** Every POST under `/api` accepts `idempotency-key`: a retry with the same key \
and request replays the stored response with `idempotent-replayed: true`.

**Values.** `created_at`/`updated_at` are strings of digits (Unix milliseconds); ids are \
lower-case UUIDs; money is integer minor units.

**HEAD.** Every GET route also answers HEAD exactly as it answers GET (authentication, status, \
headers), without the body; a v2 signature then signs the method `HEAD`. Other methods a route \
does not list are 405 `REQ007`.";

/// The document as derived from the annotated handlers, before [`ApiConventions`] and the
/// receiver-account create routes are added.
#[derive(OpenApi)]
#[openapi(
    info(title = "payoutd", description = SUMMARY),
    paths(
        health::healthz,
        health::readyz,
        health::metrics,
        serve,
        receivers::list,
        receivers::create,
        receivers::get,
        subaccounts::balance,
        subaccounts::get,
        accounts::verify,
        accounts::list,
        super::confirm::show,
        super::confirm::confirm,
        super::rail_callbacks::interac,
        payouts::create,
        bulk_payouts::create,
        payouts::list,
        payouts::list_without_slash,
        payouts::cancel,
        payouts::get,
        accounts::get,
        test_helpers::account,
        test_helpers::kyc,
        test_helpers::notifications,
        test_helpers::status,
        test_helpers::batch_run,
    ),
    components(
        schemas(
            CatalogueCode,
            ErrorItem,
            Envelope,
            VerifyRefused,
            AccountCreated,
            Success<AccountCreated>,
        ),
        responses(
            BadRequest,
            Unauthorized,
            NotFound,
            MethodNotAllowed,
            Conflict,
            PayloadTooLarge,
            TooManyRequests,
            InternalError,
            ServiceUnavailable,
        ),
    ),
    modifiers(&ApiConventions),
    tags(
        (name = "Receivers", description = "People who are paid."),
        (name = "Receiver accounts", description = "Where receivers are paid."),
        (name = "Payouts", description = "Payouts and their lifecycle."),
        (name = "Subaccounts", description = "The caller's subaccount and balances."),
        (name = "Sandbox", description = "Test helpers, registered only in sandbox mode; 404 otherwise."),
        (name = "Operations", description = "Probes, metrics and this document; no API key."),
        (name = "Rails", description = "Endpoints a payment partner calls (production mode); signed with the rail's shared secret, no API key."),
    ),
)]
struct ApiDoc;

/// Adds what the shared code gives every route: the security schemes, the receiver-account
/// create routes (one handler, one route per payout method), and for each `/api` operation
/// its security requirement, the shared headers and the failure responses of the checks that
/// run before the handler; and `x-request-id` on every response.
struct ApiConventions;

impl Modify for ApiConventions {
    fn modify(&self, doc: &mut Document) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            API_KEY,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "x-api-key",
                "The API key (`pk_` + 32 hex digits), issued by `payoutd admin issue-key`.",
            ))),
        );
        components.add_security_scheme(
            SIGNATURE,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "signature",
                "`<nonce>.<hex>`: `nonce` is the client's Unix time in milliseconds (13 digits, \
                 within 300 s of the server's clock; a POST nonce is accepted once per key); \
                 `hex` is the lower-case hex HMAC-SHA256, keyed with the API secret, of \
                 `<nonce>.<api key>` (v1), or with `x-signature-version: 2` of \
                 `<nonce>.<api key>.<METHOD>.<path with query>.<hex SHA-256 of the raw body>` \
                 (v2).",
            ))),
        );
        components.schemas.insert(
            SIGNATURE_VERSION_SCHEMA.to_owned(),
            signature_version_schema(),
        );
        refer_to_named_payloads(&mut components.schemas);
        for &method in PayoutMethod::ALL {
            doc.paths.add_path_operation(
                format!("/api/receiver-account/{}", method.route()),
                vec![HttpMethod::Post],
                create_account_operation(method),
            );
        }
        for (path, item) in &mut doc.paths.paths {
            let operations = [
                (HttpMethod::Get, &mut item.get),
                (HttpMethod::Post, &mut item.post),
            ];
            for (method, operation) in operations {
                if let Some(operation) = operation {
                    if path.starts_with("/api/") {
                        api_conventions(path, &method, operation);
                    }
                    for response in operation.responses.responses.values_mut() {
                        if let RefOr::T(response) = response {
                            response
                                .headers
                                .entry(REQUEST_ID.to_owned())
                                .or_insert_with(request_id_header);
                        }
                    }
                }
            }
        }
    }
}

const API_KEY: &str = "api_key";
const SIGNATURE: &str = "signature";
/// The named schema of `x-signature-version`: one type for every operation's header rather
/// than one per operation in a generated client.
const SIGNATURE_VERSION_SCHEMA: &str = "SignatureVersion";

/// `x-signature-version`: `1` or `2`, with member names for generators that need one (a value
/// that is not a word would be named `VALUE_0`).
fn signature_version_schema() -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["1", "2"]))
        .description(Some(
            "The signature scheme: `1` (or no header) signs `<nonce>.<api key>`, `2` also the \
             method, the path with query and the body's hash.",
        ))
        .extensions(Some(
            Extensions::builder()
                .add("x-enum-varnames", ["V1", "V2"])
                .build(),
        ))
        .into()
}

/// utoipa inlines a generic type's argument: `Success_Receiver`'s `payload` is a copy of
/// `Receiver`, so a generated client would get a second receiver type per envelope. Each
/// envelope `Success_<T>`, `Success_Vec_<T>` and `Listing_<T>` whose `T` is a named schema
/// gets its payload (or the payload's items) as a reference to `T` instead.
fn refer_to_named_payloads(schemas: &mut BTreeMap<String, RefOr<Schema>>) {
    let named: BTreeSet<String> = schemas.keys().cloned().collect();
    for (name, schema) in schemas.iter_mut() {
        let (target, array) = if let Some(item) = name
            .strip_prefix("Success_Vec_")
            .or_else(|| name.strip_prefix("Listing_"))
        {
            (item, true)
        } else if let Some(payload) = name.strip_prefix("Success_") {
            (payload, false)
        } else {
            continue;
        };
        if !named.contains(target) {
            continue;
        }
        let RefOr::T(Schema::Object(envelope)) = schema else {
            continue;
        };
        let Some(payload) = envelope.properties.get_mut("payload") else {
            continue;
        };
        let reference = RefOr::Ref(Ref::from_schema_name(target));
        match payload {
            RefOr::T(Schema::Array(items)) if array => {
                items.items = ArrayItems::RefOrSchema(Box::new(reference));
            }
            _ if !array => *payload = reference,
            _ => {}
        }
    }
}

fn header_parameter(name: &str, description: &str, schema: impl Into<RefOr<Schema>>) -> Parameter {
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Header)
        .required(Required::False)
        .description(Some(description))
        .schema(Some(schema))
        .build()
}

fn response_ref<'r, R: ToResponse<'r>>() -> RefOr<Response> {
    RefOr::Ref(Ref::from_response_name(R::response().0))
}

/// The shared part of an `/api` operation.
fn api_conventions(path: &str, method: &HttpMethod, operation: &mut Operation) {
    operation.security = Some(vec![
        SecurityRequirement::new(API_KEY, Vec::<String>::new())
            .add(SIGNATURE, Vec::<String>::new()),
    ]);
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    parameters.push(header_parameter(
        "x-signature-version",
        "Absent or `1` for a v1 signature, `2` for v2; anything else is `AUTH103`.",
        Ref::from_schema_name(SIGNATURE_VERSION_SCHEMA),
    ));
    let post = matches!(method, HttpMethod::Post);
    if post {
        parameters.push(header_parameter(
            IDEMPOTENCY_HEADER,
            "1 to 255 visible ASCII characters, `!` to `~`, without spaces (else `IDEM201`). A retry with the same key and request replays the first response \
             (status below 500) with `idempotent-replayed: true`; the same key with another \
             request is `IDEM002`, while the first still runs `IDEM001` (on \
             `POST /api/payout/single` the key is recorded with the payout, so a retry waits for \
             the first and replays its response); a first request that wrote but whose response \
             was lost (its server died) is `IDEM003`. Kept 24 hours.",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1))
                .max_length(Some(255))
                .pattern(Some("^[\\x21-\\x7e]+$")),
        ));
        if let Some(RefOr::T(ok)) = operation.responses.responses.get_mut("200") {
            ok.headers.insert(
                REPLAYED_HEADER.to_owned(),
                HeaderBuilder::new()
                    .schema(
                        ObjectBuilder::new()
                            .schema_type(Type::String)
                            .enum_values(Some(["true"])),
                    )
                    .description(Some(
                        "`true` when this is the stored response of an earlier request with \
                         the same idempotency key.",
                    ))
                    .build(),
            );
        }
    }
    let has_path_parameter = path.contains('{');
    let shared = [
        ("400", true, response_ref::<BadRequest>()),
        ("401", true, response_ref::<Unauthorized>()),
        ("404", has_path_parameter, response_ref::<NotFound>()),
        (
            "405",
            has_path_parameter,
            response_ref::<MethodNotAllowed>(),
        ),
        ("409", post, response_ref::<Conflict>()),
        ("413", true, response_ref::<PayloadTooLarge>()),
        ("429", true, response_ref::<TooManyRequests>()),
        ("500", true, response_ref::<InternalError>()),
        ("503", true, response_ref::<ServiceUnavailable>()),
    ];
    for (status, applies, response) in shared {
        if applies {
            operation
                .responses
                .responses
                .entry(status.to_owned())
                .or_insert(response);
        }
    }
}

/// The name `components(schemas(Success<AccountCreated>))` registers: the one answer of every
/// receiver-account create route (one type in a generated client, not one per route).
const ACCOUNT_CREATED_ENVELOPE: &str = "Success_AccountCreated";

/// `POST /api/receiver-account/<asset>/<method>`: served by [`accounts::create`] for every
/// payout method.
fn create_account_operation(method: PayoutMethod) -> Operation {
    let mut body = ObjectBuilder::new()
        .schema_type(Type::Object)
        .additional_properties(Some(AdditionalProperties::FreeForm(false)))
        .property(
            "receiver_id",
            ObjectBuilder::new()
                .schema_type(Type::String)
                .format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)))
                .description(Some(
                    "A receiver of the caller's subaccount (any other value is `REAC211`).",
                )),
        )
        .required("receiver_id");
    for spec in method.fields() {
        let schema = if spec.required {
            ObjectBuilder::new().schema_type(Type::String)
        } else {
            ObjectBuilder::new().schema_type(SchemaType::Array(vec![Type::String, Type::Null]))
        };
        let schema = schema
            .min_length(spec.required.then_some(1))
            .max_length(Some(255))
            .pattern(spec.pattern)
            .description(Some(spec.description))
            .examples([spec.example]);
        body = body.property(spec.field.name(), schema);
        if spec.required {
            body = body.required(spec.field.name());
        }
    }
    let asset = method.asset().code();
    let name = method.name();
    let camel: String = name
        .split('-')
        .map(|part| {
            let mut chars = part.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + chars.as_str()
            })
        })
        .collect();
    OperationBuilder::new()
        .tag("Receiver accounts")
        .operation_id(Some(format!(
            "createReceiverAccount{}{camel}",
            asset
                .chars()
                .next()
                .map_or_else(String::new, |c| c.to_string())
                + &asset[1..].to_ascii_lowercase()
        )))
        .summary(Some(format!(
            "Create a receiver account: {asset}, `{name}`"
        )))
        .description(Some(format!(
            "Creates a `{name}` account in {asset} for a receiver of the caller's subaccount \
             (`status: pending`, `confirm_status: unconfirmed`), writes `accountCreated` and \
             sends the receiver a confirmation request. The body is a JSON object of strings \
             (`null` counts as absent; fields of other methods are `REQ005`); every problem is \
             reported at once: `REAC201` receiver id missing, `REAC211` unknown or another \
             subaccount's receiver, the `REAC2xx` field codes, `REAC226` over 255 characters; \
             then `REAC230` for the same details twice. Served by one handler for every payout \
             method."
        )))
        .request_body(Some(
            RequestBodyBuilder::new()
                .required(Some(Required::True))
                .content(
                    "application/json",
                    ContentBuilder::new().schema(Some(body)).build(),
                )
                .build(),
        ))
        .response(
            "200",
            ResponseBuilder::new()
                .description("`Receiver account created successfully`")
                .content(
                    "application/json",
                    ContentBuilder::new()
                        .schema(Some(Ref::from_schema_name(ACCOUNT_CREATED_ENVELOPE)))
                        .build(),
                ),
        )
        .build()
}

/// The document.
pub fn document() -> Document {
    ApiDoc::openapi()
}

/// The document as pretty-printed JSON (what `docs/openapi.json` holds, less its final
/// newline).
pub fn to_json() -> Result<String, serde_json::Error> {
    document().to_pretty_json()
}
