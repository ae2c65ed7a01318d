//! Query strings, decoded into pairs; undecodable ones are `REQ002`.

use actix_web::HttpRequest;
use domain::ErrorCode;

use super::error::ApiError;

/// The decoded `key=value` pairs of the request's query string, in order. A parameter whose
/// name or value holds NUL (`%00`) is `REQ002`: PostgreSQL text cannot hold it, and no
/// parameter has a use for it.
pub fn query_pairs(
    operation: &'static str,
    req: &HttpRequest,
) -> Result<Vec<(String, String)>, ApiError> {
    let pairs = serde_urlencoded::from_str::<Vec<(String, String)>>(req.query_string())
        .map_err(|_| ApiError::code(operation, ErrorCode::Req002))?;
    let mut errors = domain::validation::ValidationErrors::default();
    for (key, value) in &pairs {
        if key.contains('\0') || value.contains('\0') {
            errors.push(ErrorCode::Req002, key.replace('\0', ""));
        }
    }
    if errors.is_empty() {
        Ok(pairs)
    } else {
        Err(ApiError::fields(operation, &errors))
    }
}

/// Checks that `pairs` use only `known` parameter names (`REQ005` otherwise) and none twice
/// (`REQ002`), reporting every problem.
pub fn only_known(
    operation: &'static str,
    pairs: &[(String, String)],
    known: &[&str],
) -> Result<(), ApiError> {
    let mut errors = domain::validation::ValidationErrors::default();
    for (index, (key, _)) in pairs.iter().enumerate() {
        if !known.contains(&key.as_str()) {
            errors.push(ErrorCode::Req005, key.clone());
        } else if pairs[..index].iter().any(|(k, _)| k == key) {
            errors.push(ErrorCode::Req002, key.clone());
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ApiError::fields(operation, &errors))
    }
}
