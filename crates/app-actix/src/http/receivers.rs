//! `POST /api/receiver`, `GET /api/receiver/<id>`, `GET /api/receiver`.

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use domain::ErrorCode;
use domain::receiver::Receiver;
use domain::receiver::input::RawReceiver;
use domain::receiver::query::ListReceiversQuery;
use domain::receiver::service::{CreateReceiverError, GetReceiverError, ListReceiversError};
use domain::time::unix_millis;
use domain::validation::ValidationErrors;
use serde::Serialize;
use utoipa::{IntoParams, ToSchema};

use super::auth::Authenticated;
use super::body::{json_object, merge_field_errors, string_fields};
use super::envelope::{self, Listing, Success};
use super::error::ApiError;
use super::idempotency::written;
use super::query::query_pairs;
use super::schemas::{KycStatusName, ReceiverStatusName};
use crate::state::AppState;

/// `address_data` of a receiver.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = ReceiverAddress)]
pub struct AddressData<'a> {
    address: &'a str,
    address2: &'a str,
    city: &'a str,
    state: &'a str,
    country: &'a str,
    postcode: &'a str,
}

/// A receiver as the API shows it (the provider's receiver object). Optional values that were not
/// given are `""`.
#[derive(Debug, Serialize, ToSchema)]
#[schema(as = Receiver)]
pub struct ReceiverDto<'a> {
    #[schema(format = Uuid)]
    id: String,
    first_name: &'a str,
    last_name: &'a str,
    middle_name: &'a str,
    /// As it was sent.
    email: &'a str,
    /// `M`, `F` or `""`.
    #[schema(pattern = "^(M|F)?$")]
    gender: &'a str,
    /// `YYYY-MM-DD`.
    #[schema(format = Date)]
    dob: String,
    dialcode: &'a str,
    phone: &'a str,
    /// The KYC provider's id; only in `GET /api/receiver/{id}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = String, required = false)]
    applicant_id: Option<&'a str>,
    #[schema(value_type = KycStatusName)]
    kyc_status: &'a str,
    #[schema(value_type = ReceiverStatusName)]
    status: &'a str,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    created_at: String,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    updated_at: String,
    address_data: AddressData<'a>,
    /// The caller's own reference, or `""`.
    reference: &'a str,
}

/// The body of `POST /api/receiver` (read field by field: see [`create`]). Every value is a
/// string or `null` (`null` and blank strings count as absent); unknown fields are `REQ005`.
/// Strings are trimmed and at most 255 characters.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateReceiverBody {
    /// The caller's subaccount (any other value is `SUBA101`).
    #[schema(format = Uuid, examples("0b9f6f2e-3c1d-4e8a-9b7c-5d4e3f2a1b0c"))]
    pub subaccount_id: String,
    /// Letters of any script, spaces, `'`, `’`, `-`.
    #[schema(min_length = 1, max_length = 255, examples("Ada"))]
    pub first_name: String,
    /// Like `first_name`.
    #[schema(max_length = 255, examples("Augusta"))]
    pub middle_name: Option<String>,
    /// Like `first_name`.
    #[schema(min_length = 1, max_length = 255, examples("Lovelace"))]
    pub last_name: String,
    /// A bare address whose domain contains a dot, kept as sent; unique per subaccount by its
    /// comparison key (NFKC, Unicode case folding, needless quotes dropped, IDNA ASCII domain).
    #[schema(format = Email, min_length = 3, max_length = 255, examples("ada@example.com"))]
    pub email: String,
    /// `YYYY-MM-DD`, from 1900-01-01 up to yesterday (UTC).
    #[schema(format = Date, examples("1990-12-10"))]
    pub dob: String,
    /// 1 to 4 digits; a leading `+` is dropped.
    #[schema(pattern = "^\\+?[0-9]{1,4}$", examples("61"))]
    pub dialcode: String,
    /// 4 to 15 digits.
    #[schema(pattern = "^[0-9]{4,15}$", examples("412345678"))]
    pub phone: String,
    /// Any text without `.`.
    #[schema(
        pattern = "^[^.]*[^.\\s][^.]*$",
        max_length = 255,
        examples("1 Example Street")
    )]
    pub address: String,
    /// Any text without `.`.
    #[schema(pattern = "^[^.]*$", max_length = 255, examples("Level 2"))]
    pub address2: Option<String>,
    /// `M` or `F`, either case.
    #[schema(pattern = "^[MFmf]$", examples("F"))]
    pub gender: Option<String>,
    /// Letters, spaces, `'`, `’`, `-`, `.`.
    #[schema(min_length = 1, max_length = 255, examples("Sydney"))]
    pub city: String,
    /// Any text.
    #[schema(min_length = 1, max_length = 255, examples("NSW"))]
    pub state: String,
    /// Any text.
    #[schema(min_length = 1, max_length = 255, examples("2000"))]
    pub postcode: String,
    /// An assigned ISO 3166-1 alpha-3 code, either case.
    #[schema(pattern = "^[A-Za-z]{3}$", examples("AUS"))]
    pub country: String,
    /// The caller's own id, unique per subaccount.
    #[schema(max_length = 255, examples("customer-1001"))]
    pub reference: Option<String>,
}

/// The query of `GET /api/receiver`. Every parameter at most once and at most 255
/// characters; unknown ones are `REQ005`. String filters match exactly.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListReceiversParams {
    /// The caller's subaccount (`REVR202` when missing, `SUBA101` when not the caller's).
    #[param(format = Uuid)]
    pub subaccount_id: String,
    /// Page size, 1 to 100 (default 10).
    #[param(pattern = "^(100|[1-9][0-9]?)$")]
    pub limit: Option<String>,
    /// The previous page's cursor; empty means the first page.
    #[param(max_length = 255)]
    pub lastkey: Option<String>,
    /// Status code: 0 creating, 1 pending, 2 active, 3 inactive, 4 failed.
    #[param(pattern = "^[0-4]$")]
    pub status: Option<String>,
    /// KYC code: 0 pending, 1 completed, 2 failed.
    #[param(pattern = "^[0-2]$")]
    pub kyc_status: Option<String>,
    /// `M` or `F`, either case.
    #[param(pattern = "^[MFmf]$")]
    pub gender: Option<String>,
    /// `YYYY-MM-DD`.
    #[param(format = Date, pattern = "^[0-9]{4}-[0-9]{2}-[0-9]{2}$")]
    pub dob: Option<String>,
    /// ISO 3166-1 alpha-3, either case.
    #[param(pattern = "^[A-Za-z]{3}$")]
    pub country: Option<String>,
    /// Case-insensitive.
    #[param(max_length = 255)]
    pub email: Option<String>,
    /// A leading `+` is ignored.
    #[param(max_length = 255)]
    pub dialcode: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub first_name: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub last_name: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub middle_name: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub phone: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub address: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub address2: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub city: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub state: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub postcode: Option<String>,
    /// Exact.
    #[param(max_length = 255)]
    pub reference: Option<String>,
}

impl<'a> AddressData<'a> {
    /// The receiver's address as `address_data`.
    pub fn of(r: &'a Receiver) -> Self {
        Self {
            address: &r.address.address,
            address2: &r.address.address2,
            city: &r.address.city,
            state: &r.address.state,
            country: r.address.country.as_str(),
            postcode: &r.address.postcode,
        }
    }
}

impl<'a> ReceiverDto<'a> {
    /// `with_applicant`: only get-by-id shows `applicant_id` (as in the provider's API).
    pub fn new(r: &'a Receiver, with_applicant: bool) -> Self {
        Self {
            id: r.id.to_string(),
            first_name: &r.first_name,
            last_name: &r.last_name,
            middle_name: &r.middle_name,
            email: &r.email,
            gender: r.gender.map_or("", |g| g.as_str()),
            dob: r.dob.format("%Y-%m-%d").to_string(),
            dialcode: &r.dialcode,
            phone: &r.phone,
            applicant_id: with_applicant.then_some(r.applicant_id.as_str()),
            kyc_status: r.kyc_status.as_str(),
            status: r.status.as_str(),
            created_at: unix_millis(r.created_at).to_string(),
            updated_at: unix_millis(r.updated_at).to_string(),
            address_data: AddressData::of(r),
            reference: r.reference.as_deref().unwrap_or(""),
        }
    }
}

/// The payload of a created receiver.
#[derive(Serialize, ToSchema)]
#[schema(as = ReceiverCreated)]
pub struct Created<'a> {
    #[schema(format = Uuid)]
    receiver_id: String,
    first_name: &'a str,
    last_name: &'a str,
    email: &'a str,
}

const CREATE: &str = "Create receiver";
const GET: &str = "Get receiver";
const LIST: &str = "List receivers";

const FIELDS: [&str; 16] = [
    "subaccount_id",
    "first_name",
    "middle_name",
    "last_name",
    "email",
    "dob",
    "dialcode",
    "phone",
    "address",
    "address2",
    "gender",
    "city",
    "state",
    "postcode",
    "country",
    "reference",
];

/// `POST /api/receiver`.
#[utoipa::path(
    post,
    path = "/api/receiver",
    tag = "Receivers",
    operation_id = "createReceiver",
    summary = "Create a receiver",
    description = "Creates a receiver (status `pending`, KYC `pending`), requests its KYC check \
        and writes a `receiverCreated` event. Every failing field is reported at once \
        (`REQ004`/`REQ005`, `SUBA101`, then the `REVR2xx` field codes); `REVR201` (e-mail taken) \
        and `REVR225` (reference taken) come alone. 503 `SYS503` when the KYC provider is \
        unavailable.",
    request_body = CreateReceiverBody,
    responses((status = 200, description = "`Receiver created successfully`", body = Success<Created>)),
)]
pub async fn create(
    state: Data<AppState>,
    request: Authenticated,
) -> Result<HttpResponse, ApiError> {
    let object = json_object(CREATE, &request.body)?;
    let mut shape = ValidationErrors::default();
    let [
        subaccount_id,
        first_name,
        middle_name,
        last_name,
        email,
        dob,
        dialcode,
        phone,
        address,
        address2,
        gender,
        city,
        state_,
        postcode,
        country,
        reference,
    ] = string_fields(object, FIELDS, &mut shape);
    let raw = RawReceiver {
        subaccount_id,
        first_name,
        middle_name,
        last_name,
        email,
        dob,
        dialcode,
        phone,
        address,
        address2,
        gender,
        city,
        state: state_,
        postcode,
        country,
        reference,
    };
    // Shape problems (wrong types, unknown fields) and field validation are reported together,
    // and such a request stores nothing.
    let mut errors = shape;
    if !errors.is_empty() {
        match state.receivers.validate(&request.caller, &raw) {
            Err(CreateReceiverError::Invalid(invalid)) => merge_field_errors(&mut errors, invalid),
            Err(CreateReceiverError::Port(e)) => return Err(ApiError::port(CREATE, &e)),
            Ok(()) | Err(CreateReceiverError::EmailTaken | CreateReceiverError::ReferenceTaken) => {
            }
        }
        return Err(ApiError::fields(CREATE, &errors));
    }
    let key = request.write_key(|receiver: &Receiver| {
        envelope::stored_ok(
            "Receiver created successfully",
            Created {
                receiver_id: receiver.id.to_string(),
                first_name: &receiver.first_name,
                last_name: &receiver.last_name,
                email: &receiver.email,
            },
        )
    });
    let receiver = match state.receivers.create(&request.caller, &raw, &key).await {
        Ok(receiver) => receiver,
        Err(CreateReceiverError::Invalid(invalid)) => {
            return Err(ApiError::fields(CREATE, &invalid));
        }
        Err(CreateReceiverError::EmailTaken) => {
            return Err(ApiError::field(CREATE, ErrorCode::Revr201, "email"));
        }
        Err(CreateReceiverError::ReferenceTaken) => {
            return Err(ApiError::field(CREATE, ErrorCode::Revr225, "reference"));
        }
        Err(CreateReceiverError::Port(e)) => return Err(ApiError::port(CREATE, &e)),
    };
    written(CREATE, &key, &receiver)
}

/// `GET /api/receiver/<id>`.
#[utoipa::path(
    get,
    path = "/api/receiver/{id}",
    tag = "Receivers",
    operation_id = "getReceiver",
    summary = "Get a receiver",
    description = "`REVR101` for a malformed id, another subaccount's receiver or a missing one.",
    params(("id" = String, Path, format = Uuid, description = "The receiver id.")),
    responses((status = 200, description = "`Receiver found`", body = Success<ReceiverDto>)),
)]
pub async fn get(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    match state.receivers.get(&request.caller, &id).await {
        Ok(receiver) => Ok(envelope::ok(
            "Receiver found",
            ReceiverDto::new(&receiver, true),
        )),
        Err(GetReceiverError::NotFound) => Err(ApiError::code(GET, ErrorCode::Revr101)),
        Err(GetReceiverError::Port(e)) => Err(ApiError::port(GET, &e)),
    }
}

/// `GET /api/receiver`.
#[utoipa::path(
    get,
    path = "/api/receiver",
    tag = "Receivers",
    operation_id = "listReceivers",
    summary = "List receivers",
    description = "The caller's receivers, newest first, keyset paged. Items have no \
        `applicant_id`. Every query problem is reported: `REQ005` unknown parameter, `REQ002` \
        repeated or bad value, `REQ003` tampered cursor.",
    params(ListReceiversParams),
    responses((status = 200, description = "`Receivers found`", body = Listing<ReceiverDto>)),
)]
pub async fn list(
    state: Data<AppState>,
    request: Authenticated,
    http: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(LIST, &http)?;
    let query = ListReceiversQuery::parse(&pairs).map_err(|e| ApiError::fields(LIST, &e))?;
    match state.receivers.list(&request.caller, &query).await {
        Ok(page) => {
            let items: Vec<_> = page
                .receivers
                .iter()
                .map(|r| ReceiverDto::new(r, false))
                .collect();
            Ok(envelope::list("Receivers found", items, page.lastkey))
        }
        Err(ListReceiversError::Invalid(e)) => Err(ApiError::fields(LIST, &e)),
        Err(ListReceiversError::Port(e)) => Err(ApiError::port(LIST, &e)),
    }
}
