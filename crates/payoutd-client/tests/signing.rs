//! What the crate signs is what payoutd accepts: each signature is checked by the server's own
//! rule (domain's `AuthService::verify`, its whole check order, by the real clock), and the
//! rule is shown to refuse what it should, so the checks can fail.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use domain::ErrorCode as ServerCode;
use domain::auth::{SignaturePolicy, SignedRequest as ServerRequest};
use payoutd_client::signing::{SignatureVersion, SignedRequest, Signer};
use support::{SECRET, api_key, server_verdict_of};

/// Requests of every shape the client sends: both methods, queries with encoded characters,
/// empty, JSON and non-ASCII bodies.
const REQUESTS: &[(&str, &str, &[u8])] = &[
    ("GET", "/api/receiver", b""),
    (
        "GET",
        "/api/receiver?subaccount_id=cea098be-aaf9-4c64-ae5c-8aae94da812e&limit=100&email=a%2Bb%40example.com",
        b"",
    ),
    (
        "GET",
        "/api/payout/?lastkey=AAZgykPi%2F%3D%3D&status=5",
        b"",
    ),
    (
        "POST",
        "/api/receiver",
        br#"{"first_name":"Zo\u00eb","last_name":"\xc3\x9f"}"#,
    ),
    (
        "POST",
        "/api/payout/single",
        "{\"note\":\"caf\u{e9} \u{1f4b8}\"}".as_bytes(),
    ),
    (
        "POST",
        "/api/payout/0f0a8c0b-7e11-4a5a-9d3f-2f1c7bd26f61/cancel",
        b"",
    ),
];

fn server_request<'a>(
    signature: &'a str,
    version: Option<&'a str>,
    method: &'a str,
    path_and_query: &'a str,
    body: &'a [u8],
) -> ServerRequest<'a> {
    ServerRequest {
        api_key: Some(KEY),
        signature: Some(signature),
        signature_version: version,
        method,
        path_and_query,
        body,
        carries_idempotency_key: true,
    }
}

const KEY: &str = "pk_0123456789abcdef0123456789abcdef";

#[tokio::test]
async fn v2_signatures_are_accepted_by_the_servers_rule_under_every_policy() {
    assert_eq!(api_key(), KEY);
    let signer = Signer::new(KEY, SECRET);
    for policy in [
        SignaturePolicy::V2Only,
        SignaturePolicy::V2ForPosts,
        SignaturePolicy::AnyVersion,
    ] {
        for (method, path, body) in REQUESTS {
            let signed = SignedRequest {
                method,
                path_and_query: path,
                body,
            };
            let headers = signer.sign(SignatureVersion::V2, &signed);
            let pairs = headers.pairs();
            let header = |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
            assert_eq!(header("x-api-key"), Some(KEY));
            let request = ServerRequest {
                signature_version: header("x-signature-version"),
                ..server_request(&headers.signature, None, method, path, body)
            };
            assert_eq!(
                server_verdict_of(policy, &request).await,
                Ok(()),
                "{policy:?} {method} {path}"
            );
        }
    }
}

#[tokio::test]
async fn v1_signatures_are_accepted_where_the_policy_allows_v1() {
    let signer = Signer::new(KEY, SECRET);
    for (method, path, body) in REQUESTS {
        let signature = signer.sign_v1();
        let request = server_request(&signature, None, method, path, body);
        assert_eq!(
            server_verdict_of(SignaturePolicy::AnyVersion, &request).await,
            Ok(())
        );
        let expected = if *method == "GET" {
            Ok(())
        } else {
            Err(ServerCode::Auth107)
        };
        assert_eq!(
            server_verdict_of(SignaturePolicy::V2ForPosts, &request).await,
            expected,
            "{method} {path}"
        );
    }
}

#[tokio::test]
async fn the_servers_rule_refuses_a_v2_signature_of_another_request_or_secret() {
    let signer = Signer::new(KEY, SECRET);
    let signed = SignedRequest {
        method: "POST",
        path_and_query: "/api/payout/single",
        body: br#"{"amount":100}"#,
    };
    let signature = signer.sign_v2(&signed);
    let verdict = |method: &'static str, path: &'static str, body: &'static [u8]| {
        let signature = signature.clone();
        async move {
            let request = server_request(&signature, Some("2"), method, path, body);
            server_verdict_of(SignaturePolicy::V2Only, &request).await
        }
    };
    assert_eq!(
        verdict("POST", "/api/payout/single", br#"{"amount":100}"#).await,
        Ok(())
    );
    for (method, path, body) in [
        ("POST", "/api/payout/single", &br#"{"amount":900}"#[..]),
        ("POST", "/api/payout/bulk", br#"{"amount":100}"#),
        ("POST", "/api/payout/single?x=1", br#"{"amount":100}"#),
        ("GET", "/api/payout/single", br#"{"amount":100}"#),
    ] {
        assert_eq!(
            verdict(method, path, body).await,
            Err(ServerCode::Auth104),
            "{method} {path}"
        );
    }
    let other_secret = Signer::new(KEY, "sk_another").sign_v2(&signed);
    let request = server_request(
        &other_secret,
        Some("2"),
        "POST",
        "/api/payout/single",
        br#"{"amount":100}"#,
    );
    assert_eq!(
        server_verdict_of(SignaturePolicy::V2Only, &request).await,
        Err(ServerCode::Auth104)
    );
}

/// The signature of a chosen nonce is exactly the server's own `sign` of the same parts.
#[test]
fn fixed_nonce_signatures_equal_the_servers_own() {
    use domain::auth::signature::{SignedParts, sign};
    let signer = Signer::new(KEY, SECRET);
    for (nonce, (method, path, body)) in (1_700_000_000_000_u64..).zip(REQUESTS) {
        let signed = SignedRequest {
            method,
            path_and_query: path,
            body,
        };
        for (ours, theirs) in [
            (SignatureVersion::V1, domain::auth::SignatureVersion::V1),
            (SignatureVersion::V2, domain::auth::SignatureVersion::V2),
        ] {
            let server = sign(
                SECRET,
                &SignedParts {
                    version: theirs,
                    nonce: i64::try_from(nonce).unwrap(),
                    api_key: KEY,
                    method,
                    path_and_query: path,
                    body,
                },
            );
            assert_eq!(signer.signature(nonce, ours, &signed), server);
        }
    }
}

/// Nonces the server would refuse as replays (`AUTH106`) never come out of one key's signers,
/// however many sign at once.
#[test]
fn concurrent_signers_of_one_key_never_repeat_a_nonce() {
    let signers: Vec<Signer> = (0..4).map(|_| Signer::new("pk_concurrent", "s")).collect();
    let handles: Vec<_> = signers
        .into_iter()
        .map(|signer| {
            std::thread::spawn(move || (0..5_000).map(|_| signer.next_nonce()).collect::<Vec<_>>())
        })
        .collect();
    let mut all: Vec<u64> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let count = all.len();
    all.sort_unstable();
    all.dedup();
    assert_eq!(all.len(), count);
}
