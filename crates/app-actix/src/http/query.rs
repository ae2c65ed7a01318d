//! Query strings, decoded into pairs; undecodable ones are `REQ002`.

use actix_web::HttpRequest;
use domain::ErrorCode;

use super::error::ApiError;

/// The decoded `key=value` pairs of the request's query string, in order.
pub fn query_pairs(
    operation: &'static str,
    req: &HttpRequest,
) -> Result<Vec<(String, String)>, ApiError> {
    serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
        .map_err(|_| ApiError::code(operation, ErrorCode::Req002))
}
