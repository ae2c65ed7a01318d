//! Schema-only types of the OpenAPI document that the handlers' annotations name: the value
//! lists rendered from domain enums, the amount input, `account_data`, and the shared failure
//! responses. They depend on no handler, so handlers and the document (`openapi`) both use
//! them without a cycle.

use std::borrow::Cow;

use domain::ErrorCode;
use domain::account::{AccountField, AccountStatus, ConfirmStatus, PayoutMethod};
use domain::batch::BatchStatus;
use domain::money::Asset;
use domain::payout::PayoutStatus;
use domain::receiver::{KycStatus, ReceiverStatus};
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::header::{Header, HeaderBuilder};
use utoipa::openapi::response::{Response, ResponseBuilder};
use utoipa::openapi::schema::{AdditionalProperties, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::openapi::{ContentBuilder, Ref, RefOr};
use utoipa::{PartialSchema, ToResponse, ToSchema};

use crate::http::error::Envelope;

/// A string schema whose values are `values`, with `description`.
fn string_enum<V: Into<serde_json::Value>>(
    description: &str,
    values: impl IntoIterator<Item = V>,
) -> Schema {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(values))
        .description(Some(description))
        .into()
}

/// Schema-only types for values the handlers render from domain enums: the allowed values
/// come from the domain's own lists, so a new value cannot be left out.
macro_rules! value_list {
    ($($(#[doc = $doc:literal])+ $name:ident = $values:expr;)+) => {$(
        $(#[doc = $doc])+
        pub struct $name;

        impl PartialSchema for $name {
            fn schema() -> RefOr<Schema> {
                RefOr::T(string_enum(concat!($($doc),+).trim(), $values))
            }
        }

        impl ToSchema for $name {
            fn name() -> Cow<'static, str> {
                Cow::Borrowed(stringify!($name))
            }
        }
    )+};
}

value_list! {
    /// A receiver's status.
    ReceiverStatusName = ReceiverStatus::ALL.iter().map(|s| s.as_str());
    /// A receiver's KYC status.
    KycStatusName = KycStatus::ALL.iter().map(|s| s.as_str());
    /// A receiver account's status.
    AccountStatusName = AccountStatus::ALL.iter().map(|s| s.as_str());
    /// Whether the receiver confirmed the account's details.
    ConfirmStatusName = ConfirmStatus::ALL.iter().map(|s| s.as_str());
    /// A payout's status.
    PayoutStatusName = PayoutStatus::ALL.iter().map(|s| s.as_str());
    /// A batch's status.
    BatchStatusName = BatchStatus::ALL.iter().map(|s| s.as_str());
    /// An ISO 4217 currency code, upper case.
    AssetCode = Asset::ALL.iter().map(|a| a.code());
    /// A payout method.
    MethodName = PayoutMethod::ALL.iter().map(|m| m.name());
}

/// An ISO 4217 currency code on input: upper or lower case. Its `x-enum-varnames` give each
/// value a name of its own (`AUD`, `AUD_LOWER`, ...): generators that name enum members by
/// upper-casing the value (openapi-python-client, openapi-generator) would otherwise see `AUD`
/// twice and stop.
pub struct AssetInput;

impl PartialSchema for AssetInput {
    fn schema() -> RefOr<Schema> {
        let (values, names): (Vec<String>, Vec<String>) = Asset::ALL
            .iter()
            .flat_map(|a| {
                let code = a.code();
                [
                    (code.to_owned(), code.to_owned()),
                    (code.to_ascii_lowercase(), format!("{code}_LOWER")),
                ]
            })
            .unzip();
        ObjectBuilder::new()
            .schema_type(Type::String)
            .enum_values(Some(values))
            .description(Some(
                "An ISO 4217 currency code on input: upper or lower case.",
            ))
            .extensions(Some(
                Extensions::builder().add("x-enum-varnames", names).build(),
            ))
            .into()
    }
}

impl ToSchema for AssetInput {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("AssetInput")
    }
}

/// `amount` on input: a JSON integer or a string of digits (minor units, 1 to 10^12;
/// otherwise `PAYO203`).
pub struct AmountInput;

impl PartialSchema for AmountInput {
    fn schema() -> RefOr<Schema> {
        OneOfBuilder::new()
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::Integer)
                    .minimum(Some(1))
                    .maximum(Some(1_000_000_000_000_i64)),
            )
            .item(
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .pattern(Some("^[0-9]+$")),
            )
            .description(Some(
                "Minor units, 1 to 10^12: a JSON integer or a string of digits.",
            ))
            .into()
    }
}

impl ToSchema for AmountInput {}

/// `null`: the payload of the sandbox helpers.
pub struct Nothing;

impl PartialSchema for Nothing {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new().schema_type(Type::Null).into()
    }
}

impl ToSchema for Nothing {}

/// `account_data`: some of the payout methods' fields, all strings.
pub struct AccountDataSchema;

/// `` `a`, `b` and `c` ``.
fn code_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|name| format!("`{name}`")).collect();
    match quoted.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => quoted.concat(),
    }
}

/// The description of `account_data`, from the fields' descriptions: the matchable fields,
/// then the descriptive ones with the methods that carry them.
fn account_data_description() -> String {
    let matchable: Vec<String> = AccountField::matchable_fields()
        .map(|field| format!("`{}`", field.name()))
        .collect();
    let descriptive: Vec<&str> = AccountField::ALL
        .iter()
        .copied()
        .filter(|field| !field.matchable())
        .map(AccountField::name)
        .collect();
    let carriers: Vec<&str> = PayoutMethod::ALL
        .iter()
        .copied()
        .filter(|method| method.fields().iter().any(|spec| !spec.field.matchable()))
        .map(PayoutMethod::name)
        .collect();
    format!(
        "Fields of a payout method ({}, and for {} accounts {}), all strings. In responses \
         identifiers are masked: the first characters, at most three and never more than half \
         of the value, a space and `***` (three characters or fewer: all stars).",
        matchable.join(", "),
        carriers.join(" and "),
        code_list(&descriptive),
    )
}

impl PartialSchema for AccountDataSchema {
    fn schema() -> RefOr<Schema> {
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(account_data_description()))
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .min_properties(Some(1));
        for &field in AccountField::ALL {
            object = object.property(field.name(), ObjectBuilder::new().schema_type(Type::String));
        }
        object.into()
    }
}

impl ToSchema for AccountDataSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("AccountData")
    }
}

/// `account_data` of verify: matchable fields only (verify refuses `name` and
/// `description`), at least one, all strings.
pub struct VerifyAccountDataSchema;

impl PartialSchema for VerifyAccountDataSchema {
    fn schema() -> RefOr<Schema> {
        let matchable: Vec<String> = AccountField::matchable_fields()
            .map(|field| format!("`{}`", field.name()))
            .collect();
        let mut object = ObjectBuilder::new()
            .schema_type(Type::Object)
            .description(Some(format!(
                "Some of one payout method's matchable fields ({}), all strings, normalised as \
                 on create.",
                matchable.join(", ")
            )))
            .additional_properties(Some(AdditionalProperties::FreeForm(false)))
            .min_properties(Some(1));
        for field in AccountField::matchable_fields() {
            let example = PayoutMethod::ALL
                .iter()
                .flat_map(|method| method.fields())
                .find(|spec| spec.field == field)
                .map(|spec| spec.example);
            object = object.property(
                field.name(),
                ObjectBuilder::new()
                    .schema_type(Type::String)
                    .examples(example),
            );
        }
        object.into()
    }
}

impl ToSchema for VerifyAccountDataSchema {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("VerifyAccountData")
    }
}

pub(super) const REQUEST_ID: &str = "x-request-id";

pub(super) fn request_id_header() -> Header {
    HeaderBuilder::new()
        .schema(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .min_length(Some(1)),
        )
        .description(Some(
            "The request's id: the client's `x-request-id` when it sent 1-128 visible ASCII \
             characters, else a generated UUID. It also appears in the request's log line.",
        ))
        .build()
}

/// A failure response in the envelope, listing the catalogue codes of `status`.
fn failure(status: u16, what: &str) -> ResponseBuilder {
    let mut description = format!("{what}. Codes with this status:");
    for code in ErrorCode::ALL.iter().filter(|c| c.http_status() == status) {
        description.push_str(&format!(" `{}` {};", code.as_str(), code.message()));
    }
    description.pop();
    description.push('.');
    ResponseBuilder::new()
        .description(description)
        .header(REQUEST_ID, request_id_header())
        .content(
            "application/json",
            ContentBuilder::new()
                .schema(Some(Ref::from_schema_name(Envelope::name())))
                .build(),
        )
}

/// Reusable failure responses, one per status.
macro_rules! failure_responses {
    ($($(#[doc = $doc:literal])+ $name:ident => ($status:literal, $what:literal $(, $extra:expr)?);)+) => {$(
        $(#[doc = $doc])+
        pub struct $name;

        impl<'r> ToResponse<'r> for $name {
            fn response() -> (&'r str, RefOr<Response>) {
                let response = failure($status, $what);
                $(let response = $extra(response);)?
                (stringify!($name), RefOr::T(response.build()))
            }
        }
    )+};
}

failure_responses! {
    /// 400.
    BadRequest => (400, "Validation failed or a resource was not found (not-found \
        codes are 400, as in the provider's API)");
    /// 401.
    Unauthorized => (401, "Authentication failed; only the first failing check is reported");
    /// 404.
    NotFound => (404, "No route matches the path (e.g. a path segment that is not valid UTF-8)");
    /// 405.
    MethodNotAllowed => (405, "The path names another route that has no such method (e.g. \
        an id of `single` or `verify`)");
    /// 409.
    Conflict => (409, "The idempotency key is in use by a request still running, was used \
        with a different request, or belongs to a request that was processed but whose response \
        was lost");
    /// 413.
    PayloadTooLarge => (413, "The request body is larger than the route accepts: 64 KiB, 1 MiB for \
        `POST /api/payout/bulk` (checked before authentication)");
    /// 429.
    TooManyRequests => (429, "This API key is over its rate limit", |r: ResponseBuilder| r.header(
        "retry-after",
        HeaderBuilder::new()
            .schema(ObjectBuilder::new().schema_type(Type::String).pattern(Some("^[1-9][0-9]*$")))
            .description(Some("Whole seconds until a request would be accepted (at least 1)."))
            .build(),
    ));
    /// 500.
    InternalError => (500, "Internal error: the cause is logged with the request id, never \
        sent");
    /// 503.
    ServiceUnavailable => (503, "The database is unreachable or its pool exhausted, or the KYC \
        provider is unavailable");
}
