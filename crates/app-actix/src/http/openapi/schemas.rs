//! Schema-only types of the OpenAPI document: the value lists rendered from domain enums, the
//! error-code catalogue, the amount input, `account_data` and the other schemas no DTO type
//! derives.

use std::borrow::Cow;

use domain::ErrorCode;
use domain::account::{AccountField, AccountStatus, ConfirmStatus, PayoutMethod};
use domain::batch::BatchStatus;
use domain::money::Asset;
use domain::payout::PayoutStatus;
use domain::receiver::{KycStatus, ReceiverStatus};
use serde_json::json;
use utoipa::openapi::extensions::Extensions;
use utoipa::openapi::schema::{
    AdditionalProperties, AnyOfBuilder, ObjectBuilder, OneOfBuilder, Schema, Type,
};
use utoipa::openapi::{Ref, RefOr};
use utoipa::{PartialSchema, ToSchema};

use crate::http::accounts::VerifyRefused;
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
    /// An ISO 4217 currency code on input: upper or lower case.
    AssetInput = Asset::ALL
        .iter()
        .flat_map(|a| [a.code().to_owned(), a.code().to_ascii_lowercase()]);
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
         identifiers are masked: the first three characters, a space and `***` (three \
         characters or fewer: all stars).",
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

/// The 400 of verify: refused (`message` only), or the failure envelope of a shared check.
pub struct VerifyFailure;

impl PartialSchema for VerifyFailure {
    fn schema() -> RefOr<Schema> {
        AnyOfBuilder::new()
            .item(Ref::from_schema_name(VerifyRefused::name()))
            .item(Ref::from_schema_name(Envelope::name()))
            .into()
    }
}

impl ToSchema for VerifyFailure {
    fn schemas(schemas: &mut Vec<(String, RefOr<Schema>)>) {
        schemas.push((VerifyRefused::name().into(), VerifyRefused::schema()));
        schemas.push((Envelope::name().into(), Envelope::schema()));
        VerifyRefused::schemas(schemas);
        Envelope::schemas(schemas);
    }
}
