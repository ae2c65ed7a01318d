//! The v2 signature the process-level tests (deploy, shutdown, tls) send with their POSTs, by the
//! client crate's signer.

/// A v2 `signature` of a POST of `body` to `path` (new subaccounts sign their POSTs with v2);
/// send it with `x-signature-version: 2`.
pub fn signature(key: &str, secret: &str, nonce: i64, path: &str, body: &[u8]) -> String {
    use payoutd_client::signing::{SignatureVersion, SignedRequest, Signer};
    Signer::new(key, secret).signature(
        u64::try_from(nonce).unwrap(),
        SignatureVersion::V2,
        &SignedRequest {
            method: "POST",
            path_and_query: path,
            body,
        },
    )
}
