//! Receiver accounts: the six create routes, reads, verify.

use super::error::Envelope;
use actix_web::web::{Data, Path};
use actix_web::{HttpResponse, http::StatusCode};
use domain::ErrorCode;
use domain::account::input::RawAccount;
use domain::account::service::{CreateAccountError, GetAccountError, VerifyError, VerifyRequest};
use domain::account::{PayoutMethod, ReceiverAccount};
use domain::receiver::Receiver;
use domain::time::unix_millis;
use domain::validation::ValidationErrors;
use serde::Serialize;
use serde_json::{Map, Value};
use utoipa::PartialSchema;
use utoipa::ToSchema;
use utoipa::openapi::schema::{AnyOfBuilder, Schema};
use utoipa::openapi::{Ref, RefOr};

use super::auth::Authenticated;
use super::body::{BodyProblem, fields_by_name, json_object, merge_field_errors, object};
use super::envelope::{self, Success};
use super::error::ApiError;
use super::idempotency::written;
use super::receivers::AddressData;
use super::schemas::{
    AccountDataSchema, AccountStatusName, AssetCode, ConfirmStatusName, MethodName,
    VerifyAccountDataSchema,
};
use crate::state::AppState;

const CREATE: &str = "Create receiver account";
const GET: &str = "Get receiver account";
const LIST: &str = "List receiver accounts";
const VERIFY: &str = "Verify receiver account";

/// The only message of a refused verify (as in the provider's API: a 400 with `message` and nothing
/// else).
pub const VERIFY_REFUSED: &str = "Missing or invalid subaccount_id or account_data";

fn masked_object(account: &ReceiverAccount) -> Map<String, Value> {
    account
        .data
        .masked()
        .into_iter()
        .map(|(field, v)| (field.name().to_owned(), Value::String(v)))
        .collect()
}

/// A receiver account as the API shows it (the provider's account object; docs/API.md, Receiver
/// accounts). `email`, `reference` and `address_data` are the receiver's.
#[derive(Serialize, ToSchema)]
#[schema(as = ReceiverAccount)]
pub struct AccountDto<'a> {
    #[schema(format = Uuid)]
    id: String,
    #[schema(format = Uuid)]
    receiver_id: String,
    email: &'a str,
    #[schema(value_type = AssetCode)]
    asset: &'static str,
    #[schema(value_type = MethodName)]
    method_name: &'static str,
    reference: &'a str,
    address_data: AddressData<'a>,
    /// The method's fields; identifiers masked (the first characters, at most three and never
    /// more than half, a space and `***`).
    #[schema(value_type = AccountDataSchema)]
    account_data: Map<String, Value>,
    #[schema(value_type = AccountStatusName)]
    status: &'static str,
    #[schema(value_type = ConfirmStatusName)]
    confirm_status: &'static str,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    created_at: String,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    updated_at: String,
}

/// The payload of a created receiver account.
#[derive(Serialize, ToSchema)]
pub struct AccountCreated {
    #[schema(format = Uuid)]
    receiver_account_id: String,
    #[schema(format = Uuid)]
    receiver_id: String,
    /// `pending` for a new account.
    #[schema(value_type = AccountStatusName)]
    status: &'static str,
    /// `unconfirmed` for a new account.
    #[schema(value_type = ConfirmStatusName)]
    confirm_status: &'static str,
}

/// The body of `POST /api/receiver-account/verify`: exactly these two keys.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VerifyBody {
    /// The caller's subaccount.
    #[schema(format = Uuid)]
    pub subaccount_id: String,
    /// A non-empty subset of one method's matchable fields, all strings; normalised as on
    /// create.
    #[schema(value_type = VerifyAccountDataSchema)]
    pub account_data: Map<String, Value>,
}

/// The answer of verify (as in the provider's API: no `message` or `payload`). Without a match only
/// `exists: false`.
#[derive(Serialize, ToSchema)]
pub struct VerifyResult {
    /// Whether an account matched.
    exists: bool,
    /// The matching account's receiver.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, format = Uuid, required = false)]
    receiver_id: Option<String>,
    /// The matching account.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, format = Uuid, required = false)]
    account_id: Option<String>,
    /// The matching account's fields, identifiers masked.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = AccountDataSchema, required = false)]
    account_data: Option<Map<String, Value>>,
}

/// A refused verify (as in the provider's API): a 400 with `message` and nothing else.
#[derive(Serialize, ToSchema)]
pub struct VerifyRefused {
    /// Always `Missing or invalid subaccount_id or account_data`.
    #[schema(value_type = String, pattern = "^Missing or invalid subaccount_id or account_data$")]
    message: &'static str,
}

impl<'a> AccountDto<'a> {
    fn new(account: &ReceiverAccount, receiver: &'a Receiver) -> Self {
        Self {
            id: account.id.to_string(),
            receiver_id: account.receiver_id.to_string(),
            email: &receiver.email,
            asset: account.method.asset().code(),
            method_name: account.method.name(),
            reference: receiver.reference.as_deref().unwrap_or(""),
            address_data: AddressData::of(receiver),
            account_data: masked_object(account),
            status: account.status.as_str(),
            confirm_status: account.confirm_status.as_str(),
            created_at: unix_millis(account.created_at).to_string(),
            updated_at: unix_millis(account.updated_at).to_string(),
        }
    }
}

/// `REAC302`, naming the method.
fn not_enabled(method: PayoutMethod) -> ApiError {
    ApiError::code_with_message(
        CREATE,
        ErrorCode::Reac302,
        format!("Payout method {} is not enabled", method.route()),
    )
}

/// `POST /api/receiver-account/<asset>/<method>`.
pub async fn create(
    state: Data<AppState>,
    request: Authenticated,
    method: PayoutMethod,
) -> Result<HttpResponse, ApiError> {
    let object = json_object(CREATE, &request.body)?;
    let mut known = vec!["receiver_id"];
    known.extend(method.fields().iter().map(|spec| spec.field.name()));
    let mut errors = ValidationErrors::default();
    let mut fields = fields_by_name(object, &known, &mut errors);
    let mut raw = RawAccount {
        receiver_id: fields.remove("receiver_id"),
        ..RawAccount::default()
    };
    for spec in method.fields() {
        *raw.slot(spec.field) = fields.remove(spec.field.name());
    }
    if !errors.is_empty() {
        // The body has problems of its own: report them with the field checks, store nothing.
        match state.accounts.validate(&request.caller, method, &raw).await {
            Err(CreateAccountError::Invalid(invalid)) => merge_field_errors(&mut errors, invalid),
            Err(CreateAccountError::Port(e)) => return Err(ApiError::port(CREATE, &e)),
            Err(CreateAccountError::NotEnabled(method)) => return Err(not_enabled(method)),
            Ok(()) | Err(CreateAccountError::Duplicate) => {}
        }
        return Err(ApiError::fields(CREATE, &errors));
    }
    let key = request.write_key(|account: &ReceiverAccount| {
        envelope::stored_ok(
            "Receiver account created successfully",
            AccountCreated {
                receiver_account_id: account.id.to_string(),
                receiver_id: account.receiver_id.to_string(),
                status: account.status.as_str(),
                confirm_status: account.confirm_status.as_str(),
            },
        )
    });
    let created = match state
        .accounts
        .create(&request.caller, method, &raw, &key)
        .await
    {
        Ok(created) => created,
        Err(CreateAccountError::Invalid(invalid)) => {
            return Err(ApiError::fields(CREATE, &invalid));
        }
        Err(CreateAccountError::Duplicate) => {
            return Err(ApiError::code(CREATE, ErrorCode::Reac230));
        }
        Err(CreateAccountError::NotEnabled(method)) => return Err(not_enabled(method)),
        Err(CreateAccountError::Port(e)) => return Err(ApiError::port(CREATE, &e)),
    };
    if !created.confirmation_sent {
        tracing::warn!(account_id = %created.account.id, "confirmation request could not be sent");
    }
    written(CREATE, &key, &created.account)
}

/// `GET /api/receiver-account/<id>`.
#[utoipa::path(
    get,
    path = "/api/receiver-account/{id}",
    tag = "Receiver accounts",
    operation_id = "getReceiverAccount",
    summary = "Get a receiver account",
    description = "`REAC104` for an unknown id or another subaccount's account.",
    params(("id" = String, Path, format = Uuid, description = "The receiver account id.")),
    responses((status = 200, description = "`Receiver account found`", body = Success<AccountDto>)),
)]
pub async fn get(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    match state.accounts.get(&request.caller, &id).await {
        Ok((account, receiver)) => Ok(envelope::ok(
            "Receiver account found",
            AccountDto::new(&account, &receiver),
        )),
        Err(GetAccountError::NotFound) => Err(ApiError::code(GET, ErrorCode::Reac104)),
        Err(GetAccountError::Port(e)) => Err(ApiError::port(GET, &e)),
    }
}

/// `GET /api/receiver-account/receiver/<receiver_id>`.
#[utoipa::path(
    get,
    path = "/api/receiver-account/receiver/{id}",
    tag = "Receiver accounts",
    operation_id = "listReceiverAccounts",
    summary = "List a receiver's accounts",
    description = "Oldest first. `REAC101` for an unknown receiver or another subaccount's.",
    params(("id" = String, Path, format = Uuid, description = "The receiver id.")),
    responses((status = 200, description = "`Receiver accounts found`", body = Success<Vec<AccountDto>>)),
)]
pub async fn list(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    match state.accounts.list_for_receiver(&request.caller, &id).await {
        Ok((receiver, accounts)) => {
            let items: Vec<_> = accounts
                .iter()
                .map(|a| AccountDto::new(a, &receiver))
                .collect();
            Ok(envelope::ok("Receiver accounts found", items))
        }
        Err(GetAccountError::NotFound) => Err(ApiError::code(LIST, ErrorCode::Reac101)),
        Err(GetAccountError::Port(e)) => Err(ApiError::port(LIST, &e)),
    }
}

fn verify_refused() -> HttpResponse {
    HttpResponse::build(StatusCode::BAD_REQUEST).json(VerifyRefused {
        message: VERIFY_REFUSED,
    })
}

/// Reads the verify body as every body is read ([`object`]): a key repeated at any depth is
/// `REQ011` naming it, never "the last one wins". Otherwise `None` (refused, `message` only)
/// unless it is exactly `subaccount_id` (string) and `account_data` (object of strings).
fn verify_request(body: &[u8]) -> Result<Option<VerifyRequest>, ApiError> {
    match object(body) {
        Ok(object) => Ok(verify_fields(object)),
        Err(BodyProblem::RepeatedKey(path)) => {
            Err(BodyProblem::RepeatedKey(path).into_error(VERIFY))
        }
        Err(BodyProblem::NotJson | BodyProblem::NumberOutOfRange(_)) => Ok(None),
    }
}

/// The verify request of a body's object, if it is exactly the two fields.
fn verify_fields(mut object: Map<String, Value>) -> Option<VerifyRequest> {
    let subaccount_id = match object.remove("subaccount_id")? {
        Value::String(s) => s,
        _ => return None,
    };
    let Value::Object(data) = object.remove("account_data")? else {
        return None;
    };
    if !object.is_empty() {
        return None;
    }
    let mut account_data = Vec::with_capacity(data.len());
    for (field, value) in data {
        let Value::String(value) = value else {
            return None;
        };
        // No account value holds NUL (and PostgreSQL text cannot).
        if value.contains('\0') || subaccount_id.contains('\0') {
            return None;
        }
        account_data.push((field, value));
    }
    Some(VerifyRequest {
        subaccount_id: Some(subaccount_id),
        account_data,
    })
}

/// `POST /api/receiver-account/verify`.
#[utoipa::path(
    post,
    path = "/api/receiver-account/verify",
    tag = "Receiver accounts",
    operation_id = "verifyReceiverAccount",
    summary = "Find an account of the caller's subaccount by its details",
    description = "The oldest account of the subaccount having every given value: a subset is \
        a partial match, all of a method's fields an exact one. No match (also for a value that \
        could not be any account's): `{\"exists\": false}`. Missing or another subaccount's \
        `subaccount_id`, `account_data` not an object, empty, with an unknown field or a \
        non-string value, or any other top-level key: 400 with `message` only. The body is \
        read as every body is: a key given twice at any depth is 400 `REQ011` naming it.",
    request_body = VerifyBody,
    responses(
        (status = 200, description = "The match, or `exists: false`", body = VerifyResult),
        (status = 400, description = "A refused body (`message` only), or the failure envelope \
            of the shared checks (`REQ011` a key repeated at any depth, named in `field`; \
            `IDEM201`; `REQ001` is not used: a body that is not an object is refused)", body = VerifyFailure),
    ),
)]
pub async fn verify(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let Some(query) = verify_request(&request.body)? else {
        return Ok(verify_refused());
    };
    match state.accounts.verify(&request.caller, &query).await {
        Ok(Some(account)) => Ok(HttpResponse::Ok().json(VerifyResult {
            exists: true,
            receiver_id: Some(account.receiver_id.to_string()),
            account_id: Some(account.id.to_string()),
            account_data: Some(masked_object(&account)),
        })),
        Ok(None) => Ok(HttpResponse::Ok().json(VerifyResult {
            exists: false,
            receiver_id: None,
            account_id: None,
            account_data: None,
        })),
        Err(VerifyError::Invalid) => Ok(verify_refused()),
        Err(VerifyError::Port(e)) => Err(ApiError::port(VERIFY, &e)),
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
