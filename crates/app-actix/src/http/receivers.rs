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

use super::auth::Authenticated;
use super::body::{json_object, string_fields};
use super::envelope;
use super::error::ApiError;
use super::query::query_pairs;
use crate::state::AppState;

/// `address_data` of a receiver.
#[derive(Debug, Serialize)]
pub struct AddressData<'a> {
    address: &'a str,
    address2: &'a str,
    city: &'a str,
    state: &'a str,
    country: &'a str,
    postcode: &'a str,
}

/// A receiver as the API shows it (seed §2.2).
#[derive(Debug, Serialize)]
pub struct ReceiverDto<'a> {
    id: String,
    first_name: &'a str,
    last_name: &'a str,
    middle_name: &'a str,
    email: &'a str,
    gender: &'a str,
    dob: String,
    dialcode: &'a str,
    phone: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    applicant_id: Option<&'a str>,
    kyc_status: &'a str,
    status: &'a str,
    created_at: String,
    updated_at: String,
    address_data: AddressData<'a>,
    reference: &'a str,
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
    /// `with_applicant`: only get-by-id shows `applicant_id` (seed).
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

#[derive(Serialize)]
struct Created<'a> {
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
    // Shape problems (wrong types, unknown fields) and field validation are reported together.
    let result = state.receivers.create(&request.caller, &raw).await;
    let mut errors = shape;
    let receiver = match result {
        Ok(receiver) if errors.is_empty() => receiver,
        Ok(_) => return Err(ApiError::fields(CREATE, &errors)),
        Err(CreateReceiverError::Invalid(invalid)) => {
            // A field of the wrong type also reads as absent; report only its type error.
            let shaped: Vec<_> = errors.0.iter().map(|e| e.field.clone()).collect();
            errors
                .0
                .extend(invalid.0.into_iter().filter(|e| !shaped.contains(&e.field)));
            return Err(ApiError::fields(CREATE, &errors));
        }
        Err(CreateReceiverError::EmailTaken) => {
            return Err(ApiError::field(CREATE, ErrorCode::Revr201, "email"));
        }
        Err(CreateReceiverError::ReferenceTaken) => {
            return Err(ApiError::field(CREATE, ErrorCode::Revr225, "reference"));
        }
        Err(CreateReceiverError::Port(e)) => return Err(ApiError::port(CREATE, &e)),
    };
    Ok(envelope::ok(
        "Receiver created successfully",
        Created {
            receiver_id: receiver.id.to_string(),
            first_name: &receiver.first_name,
            last_name: &receiver.last_name,
            email: &receiver.email,
        },
    ))
}

/// `GET /api/receiver/<id>`.
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
