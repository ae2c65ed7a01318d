//! Query strings, decoded into pairs; undecodable ones are `REQ002`: a name or value whose
//! percent-encoding does not decode to UTF-8 (`%FF`) is refused, never read with replacement
//! characters (which would turn it into an unknown parameter, `REQ005`).

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
    if !decodes_to_utf8(req.query_string()) {
        return Err(ApiError::code(operation, ErrorCode::Req002));
    }
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

/// Whether every name and value of `query` percent-decodes to UTF-8 (`+` is a space).
fn decodes_to_utf8(query: &str) -> bool {
    query
        .split('&')
        .flat_map(|pair| pair.splitn(2, '='))
        .all(|part| {
            percent_encoding::percent_decode_str(&part.replace('+', " "))
                .decode_utf8()
                .is_ok()
        })
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

#[cfg(test)]
mod tests {
    use super::decodes_to_utf8;

    #[test]
    fn only_queries_that_decode_to_utf8_are_read() {
        for good in [
            "",
            "a=1",
            "limit=2&lastkey=abc%3D",
            "name=Zo%C3%AB",
            "q=a+b",
            "x",
            "a=&b",
        ] {
            assert!(decodes_to_utf8(good), "{good}");
        }
        for bad in ["%FF=1", "a=%FF", "a=1&%C3%28=2", "a=%E2%82"] {
            assert!(!decodes_to_utf8(bad), "{bad}");
        }
    }
}
