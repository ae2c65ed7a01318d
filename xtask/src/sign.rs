//! `cargo xtask sign`: the `signature` header value for an API request.
//!
//! The value is `<nonce>.<hex>`: the nonce is the Unix time in milliseconds
//! and hex is the lower-case HMAC-SHA256, keyed with the API secret, of
//!
//! * v1: `<nonce>.<api key>`;
//! * v2 (the request also sends `x-signature-version: 2`):
//!   `<nonce>.<api key>.<METHOD>.<path with query>.<hex SHA-256 of the body>`.

use crate::{failure::Failure, flags::Flags};

/// The parts of a request that a v2 signature covers.
pub struct Request<'a> {
    /// HTTP method; upper-cased before signing.
    pub method: &'a str,
    /// Path including the query string, e.g. `/api/receiver?limit=5`.
    pub path: &'a str,
    /// Raw body bytes (empty for none).
    pub body: &'a [u8],
}

/// Parses the flags of `cargo xtask sign` and prints the header value.
pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let mut flags = Flags::new(args);
    let api_key = flags.required("--api-key")?;
    let api_secret = flags.required("--api-secret")?;
    let method = flags.value("--method")?;
    let path = flags.value("--path")?;
    let body = flags.value("--body")?;
    let nonce = flags.value("--nonce")?;
    let v2 = flags.switch("--v2");
    flags.finish()?;

    let nonce = match nonce {
        Some(nonce) => nonce
            .parse()
            .map_err(|_| format!("--nonce must be a number of milliseconds, got `{nonce}`"))?,
        None => now_millis()?,
    };
    let request = if v2 {
        Some(Request {
            method: method.as_deref().unwrap_or("GET"),
            path: path
                .as_deref()
                .ok_or_else(|| Failure::new("--path with --v2", "no --path"))?,
            body: body.as_deref().unwrap_or_default().as_bytes(),
        })
    } else if method.is_some() || path.is_some() || body.is_some() {
        return Err(Failure::new(
            "--method, --path and --body only with --v2",
            "them without --v2",
        ));
    } else {
        None
    };
    println!(
        "{}",
        signature(&api_key, &api_secret, nonce, request.as_ref())?
    );
    Ok(())
}

/// The header value for `nonce`: v1 without `request`, v2 with it. Signed by the client crate
/// (`payoutd_client::Signer`), the one signer of the project's tools and tests.
pub fn signature(
    api_key: &str,
    api_secret: &str,
    nonce: u64,
    request: Option<&Request<'_>>,
) -> Result<String, String> {
    use payoutd_client::signing::{SignatureVersion, SignedRequest, Signer};

    let signer = Signer::new(api_key, api_secret);
    Ok(match request {
        None => signer.signature(
            nonce,
            SignatureVersion::V1,
            &SignedRequest {
                method: "GET",
                path_and_query: "",
                body: b"",
            },
        ),
        Some(request) => signer.signature(
            nonce,
            SignatureVersion::V2,
            &SignedRequest {
                method: request.method,
                path_and_query: request.path,
                body: request.body,
            },
        ),
    })
}

/// The current Unix time in milliseconds (by the demo's clock: [`crate::clock`]).
fn now_millis() -> Result<u64, String> {
    crate::clock::unix_millis()
}

#[cfg(test)]
mod tests {
    use super::{Request, now_millis, signature};

    // Expected values computed independently with Python's hmac/hashlib, e.g.
    // hmac.new(b"sk_test", b"1700000000000.pk_test", hashlib.sha256).hexdigest()

    const NONCE: u64 = 1_700_000_000_000;

    #[test]
    fn v1_known_answer() {
        assert_eq!(
            signature("pk_test", "sk_test", NONCE, None).as_deref(),
            Ok("1700000000000.f96ea2e662c00d99c9d1e2d0d2117458f04e50d95e6d03c0ddc1b777cb30c1ee")
        );
    }

    #[test]
    fn v2_known_answer_with_body() {
        // Message: 1700000000000.pk_test.POST./api/receiver?limit=5.
        // f3b31356fa4fdf8f8e7dda563e436cfd34686fa334ade3526321e551c4321cb7
        let request = Request {
            method: "post",
            path: "/api/receiver?limit=5",
            body: br#"{"subaccount_id":"sa_1","first_name":"Ada"}"#,
        };
        assert_eq!(
            signature("pk_test", "sk_test", NONCE, Some(&request)).as_deref(),
            Ok("1700000000000.4b561b3d186a27386400605fc6fbdd6e6fda7a9700c33e06d40aec401f65c585")
        );
    }

    #[test]
    fn v2_known_answer_empty_body() {
        // The body hash is SHA-256 of nothing:
        // e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855
        let request = Request {
            method: "GET",
            path: "/api/subaccount/balance/sa_1?asset=aud",
            body: b"",
        };
        assert_eq!(
            signature("pk_test", "sk_test", NONCE, Some(&request)).as_deref(),
            Ok("1700000000000.b8772e930a4faf24635253b4bb487752d047183c55c57edd9ce2c9c0c67ccaa6")
        );
    }

    #[test]
    fn nonce_is_thirteen_digits_of_milliseconds() {
        assert_eq!(now_millis().map(|nonce| nonce.to_string().len()), Ok(13));
    }
}
