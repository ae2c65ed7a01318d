//! `GET /api/subaccount/<id>` and `GET /api/subaccount/balance/<id>`.

use actix_web::web::{Data, Path};
use actix_web::{HttpRequest, HttpResponse};
use domain::subaccount::Subaccount;
use domain::subaccount::service::SubaccountQueryError;
use domain::time::unix_millis;
use serde::Serialize;
use utoipa::ToSchema;

use super::auth::Authenticated;
use super::envelope::{self, Success};
use super::error::ApiError;
use super::query::{only_known, query_pairs};
use super::schemas::{AssetCode, AssetInput};
use crate::state::{AppState, NotificationProviders};

/// `address_data` of a subaccount.
#[derive(Serialize, ToSchema)]
#[schema(as = SubaccountAddress)]
pub struct SubaccountAddressDto<'a> {
    address: &'a str,
    suburb: &'a str,
    state: &'a str,
    country: &'a str,
    postcode: &'a str,
}

/// A subaccount as the API shows it (the provider's subaccount object; the provider-prefixed status
/// is `kassi_status`). Fields that operators have not set are empty strings.
#[derive(Serialize, ToSchema)]
#[schema(as = Subaccount)]
pub struct SubaccountDto<'a> {
    #[schema(format = Uuid)]
    id: String,
    #[schema(format = Uuid)]
    merchant_id: String,
    suba_name: &'a str,
    title: &'a str,
    first_name: &'a str,
    last_name: &'a str,
    email: &'a str,
    /// `YYYY-MM-DD` or `""`.
    dob: String,
    /// The provider-prefixed status, e.g. `ACCEPTED`.
    kassi_status: &'a str,
    business_name: &'a str,
    business_or_individual: &'a str,
    support_email: &'a str,
    mobile_dialcode: &'a str,
    mobile: &'a str,
    home_phone_international_dialcode: &'a str,
    home_telephone: &'a str,
    address_data: SubaccountAddressDto<'a>,
    has_passed_kyc: &'a str,
    kyc_status: &'a str,
    postback_url: &'a str,
    sms_provider: &'a str,
    email_provider: &'a str,
    /// Unix milliseconds, as a string of digits.
    #[schema(pattern = "^[0-9]+$")]
    created_at: String,
}

impl<'a> SubaccountDto<'a> {
    /// The subaccount's answer, with the deployment's notifiers as its providers.
    fn new(s: &'a Subaccount, providers: NotificationProviders) -> Self {
        Self {
            id: s.id.to_string(),
            merchant_id: s.merchant_id.to_string(),
            suba_name: &s.name,
            title: &s.title,
            first_name: &s.first_name,
            last_name: &s.last_name,
            email: &s.email,
            dob: s
                .dob
                .map(|d| d.format("%Y-%m-%d").to_string())
                .unwrap_or_default(),
            kassi_status: &s.provider_status,
            business_name: &s.business_name,
            business_or_individual: &s.business_or_individual,
            support_email: &s.support_email,
            mobile_dialcode: &s.mobile_dialcode,
            mobile: &s.mobile,
            home_phone_international_dialcode: &s.home_phone_dialcode,
            home_telephone: &s.home_telephone,
            address_data: SubaccountAddressDto {
                address: &s.address.address,
                suburb: &s.address.suburb,
                state: &s.address.state,
                country: &s.address.country,
                postcode: &s.address.postcode,
            },
            has_passed_kyc: &s.has_passed_kyc,
            kyc_status: &s.kyc_status,
            postback_url: s.postback_url.as_deref().unwrap_or(""),
            sms_provider: providers.sms,
            email_provider: providers.email,
            created_at: unix_millis(s.created_at).to_string(),
        }
    }
}

/// A subaccount's balance in one asset, in minor units.
#[derive(Serialize, ToSchema)]
#[schema(as = Balance)]
pub struct BalanceDto {
    /// Can be paid out.
    available: i64,
    /// Held by payouts not yet settled.
    pending: i64,
    /// Upper case.
    #[schema(value_type = AssetCode)]
    asset: &'static str,
}

const GET: &str = "Get subaccount";
const BALANCE: &str = "Get balance";

fn render(operation: &'static str, e: SubaccountQueryError) -> ApiError {
    match e {
        SubaccountQueryError::Invalid(e) => ApiError::fields(operation, &e),
        SubaccountQueryError::Port(e) => ApiError::port(operation, &e),
    }
}

/// `GET /api/subaccount/<id>`.
#[utoipa::path(
    get,
    path = "/api/subaccount/{id}",
    tag = "Subaccounts",
    operation_id = "getSubaccount",
    summary = "Get the caller's subaccount",
    description = "`SUBA101` (field `subaccount_id`) for any id but the caller's own.",
    params(("id" = String, Path, format = Uuid, description = "The subaccount id.")),
    responses((status = 200, description = "`Subaccount found`", body = Success<SubaccountDto>)),
)]
pub async fn get(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
) -> Result<HttpResponse, ApiError> {
    let subaccount = state
        .subaccounts
        .get(&request.caller, &id)
        .await
        .map_err(|e| render(GET, e))?;
    Ok(envelope::ok(
        "Subaccount found",
        SubaccountDto::new(&subaccount, state.providers),
    ))
}

/// `GET /api/subaccount/balance/<id>?asset=aud`.
#[utoipa::path(
    get,
    path = "/api/subaccount/balance/{id}",
    tag = "Subaccounts",
    operation_id = "getBalance",
    summary = "Get the caller's balance in one asset",
    description = "An asset with no activity reports `0`/`0`. Errors, reported together: \
        `SUBA101` (`subaccount_id`), `SUBA303` (`asset` missing), `SUBA304` (`asset` not \
        supported); any other query parameter is `REQ005`, `asset` twice `REQ002`.",
    params(
        ("id" = String, Path, format = Uuid, description = "The subaccount id."),
        ("asset" = AssetInput, Query, description = "AUD, USD, CAD, EUR or NZD, either case."),
    ),
    responses((status = 200, description = "`Balance found`", body = Success<BalanceDto>)),
)]
pub async fn balance(
    state: Data<AppState>,
    request: Authenticated,
    id: Path<String>,
    http: HttpRequest,
) -> Result<HttpResponse, ApiError> {
    let pairs = query_pairs(BALANCE, &http)?;
    only_known(BALANCE, &pairs, &["asset"])?;
    let asset = pairs
        .iter()
        .find(|(k, _)| k == "asset")
        .map(|(_, v)| v.as_str());
    let balance = state
        .subaccounts
        .balance(&request.caller, &id, asset)
        .await
        .map_err(|e| render(BALANCE, e))?;
    Ok(envelope::ok(
        "Balance found",
        BalanceDto {
            available: balance.available,
            pending: balance.pending,
            asset: balance.asset.code(),
        },
    ))
}
