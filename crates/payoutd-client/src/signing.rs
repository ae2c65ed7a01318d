//! Request signing: the `x-api-key`, `signature` and `x-signature-version` headers.
//!
//! A signature is `<nonce>.<hex>`, where `nonce` is the Unix time in milliseconds (13 digits)
//! and `hex` the lower-case HMAC-SHA256, keyed with the API secret, of
//!
//! * v1: `<nonce>.<api key>`;
//! * v2: `<nonce>.<api key>.<METHOD>.<path with query>.<hex SHA-256 of the raw body>`.
//!
//! v1 signs only the nonce and the key, so whoever sees one (a proxy's log, say) may send it
//! again with another method, path and body within the server's freshness window; v2 binds the
//! signature to one request. New subaccounts accept only v2 on POST, which is why
//! [`Client`](crate::Client) signs POSTs with v2 unless told otherwise.
//!
//! A POST nonce is accepted once per API key, so every [`Signer`] of one key in the process
//! draws its nonces from one counter: `max(now_ms, last + 1)`.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};

/// The request header that carries the API key.
pub const API_KEY_HEADER: &str = "x-api-key";
/// The request header that carries the signature (`<nonce>.<hex>`).
pub const SIGNATURE_HEADER: &str = "signature";
/// The request header that names the signature version (absent means v1).
pub const SIGNATURE_VERSION_HEADER: &str = "x-signature-version";

/// Which message a signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SignatureVersion {
    /// `<nonce>.<api key>`: the provider's original scheme. Not bound to the request, so new
    /// subaccounts refuse it on POST (their signature policy is `v2_for_posts`).
    V1,
    /// `<nonce>.<api key>.<METHOD>.<path with query>.<hex SHA-256 of the body>`: bound to one
    /// request. Every signature policy accepts it.
    #[default]
    V2,
}

impl SignatureVersion {
    /// The value of `x-signature-version`: `"1"` or `"2"`.
    pub const fn header_value(self) -> &'static str {
        match self {
            SignatureVersion::V1 => "1",
            SignatureVersion::V2 => "2",
        }
    }
}

/// The parts of a request that a v2 signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignedRequest<'a> {
    /// The HTTP method; upper-cased before signing.
    pub method: &'a str,
    /// The path and query exactly as sent on the request line, e.g. `/api/receiver?limit=5`.
    pub path_and_query: &'a str,
    /// The exact body bytes sent (empty for none).
    pub body: &'a [u8],
}

/// The headers that authenticate one request.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthHeaders {
    /// The nonce the signature was made with (Unix milliseconds).
    pub nonce: u64,
    /// The version signed.
    pub version: SignatureVersion,
    /// The value of `x-api-key`.
    pub api_key: String,
    /// The value of `signature`: `<nonce>.<64 hex digits>`.
    pub signature: String,
}

impl AuthHeaders {
    /// `(name, value)` pairs to add to the request: `x-api-key`, `signature`, and for v2
    /// `x-signature-version: 2` (v1 sends no version header, as the provider's clients do).
    pub fn pairs(&self) -> Vec<(&'static str, &str)> {
        let mut pairs = vec![
            (API_KEY_HEADER, self.api_key.as_str()),
            (SIGNATURE_HEADER, self.signature.as_str()),
        ];
        if self.version == SignatureVersion::V2 {
            pairs.push((SIGNATURE_VERSION_HEADER, self.version.header_value()));
        }
        pairs
    }
}

impl fmt::Debug for AuthHeaders {
    // The signature is a credential for as long as its nonce is fresh.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AuthHeaders")
            .field("nonce", &self.nonce)
            .field("version", &self.version)
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

/// Signs requests with one API key and its secret.
///
/// The HMAC is keyed once, so each signature costs two SHA-256 compressions of the key
/// schedule less. Clones share the nonce counter; so do separately made signers of the same
/// API key in one process.
#[derive(Clone)]
pub struct Signer {
    api_key: String,
    mac: Hmac<Sha256>,
    nonces: Arc<AtomicU64>,
}

impl fmt::Debug for Signer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Signer")
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl Signer {
    /// A signer for `api_key` (`pk_…`) with its secret (`sk_…`).
    pub fn new(api_key: &str, api_secret: &str) -> Self {
        Self {
            api_key: api_key.to_owned(),
            mac: keyed(api_secret.as_bytes()),
            nonces: nonce_counter(api_key),
        }
    }

    /// The API key this signer signs for.
    pub fn api_key(&self) -> &str {
        &self.api_key
    }

    /// The next nonce of this API key: the current Unix time in milliseconds, or one more than
    /// the last nonce handed out when that is not smaller (several requests within one
    /// millisecond, or a clock that stepped back), so no two are ever equal.
    pub fn next_nonce(&self) -> u64 {
        self.next_nonce_at(unix_millis())
    }

    /// The next nonce of this API key by a clock of the caller's: `now_millis` (Unix time in
    /// milliseconds), or one more than the last nonce handed out when that is not smaller. For
    /// a client whose notion of now is not the system clock's (a test or a demo that runs on
    /// another date), with [`Signer::signature`].
    pub fn next_nonce_at(&self, now_millis: u64) -> u64 {
        let now = now_millis;
        let mut last = self.nonces.load(Ordering::Relaxed);
        loop {
            let next = now.max(last.saturating_add(1));
            match self
                .nonces
                .compare_exchange_weak(last, next, Ordering::AcqRel, Ordering::Relaxed)
            {
                Ok(_) => return next,
                Err(current) => last = current,
            }
        }
    }

    /// The headers for one request with a fresh nonce: v1 signs only the nonce and the key,
    /// v2 also `request`.
    pub fn sign(&self, version: SignatureVersion, request: &SignedRequest<'_>) -> AuthHeaders {
        let nonce = self.next_nonce();
        AuthHeaders {
            nonce,
            version,
            api_key: self.api_key.clone(),
            signature: self.signature(nonce, version, request),
        }
    }

    /// A fresh v1 `signature` header value (`<nonce>.<hex>`).
    pub fn sign_v1(&self) -> String {
        let nonce = self.next_nonce();
        self.signature_v1(nonce)
    }

    /// A fresh v2 `signature` header value for `request` (send `x-signature-version: 2` too).
    pub fn sign_v2(&self, request: &SignedRequest<'_>) -> String {
        let nonce = self.next_nonce();
        self.signature(nonce, SignatureVersion::V2, request)
    }

    /// The `signature` value for a given nonce: deterministic, for tests and tools that need a
    /// chosen nonce (`request` is ignored for v1).
    pub fn signature(
        &self,
        nonce: u64,
        version: SignatureVersion,
        request: &SignedRequest<'_>,
    ) -> String {
        match version {
            SignatureVersion::V1 => self.signature_v1(nonce),
            SignatureVersion::V2 => {
                let mut mac = self.mac.clone();
                mac.update(format!("{nonce}.{}.", self.api_key).as_bytes());
                mac.update(request.method.to_ascii_uppercase().as_bytes());
                mac.update(b".");
                mac.update(request.path_and_query.as_bytes());
                mac.update(b".");
                mac.update(hex::encode(Sha256::digest(request.body)).as_bytes());
                format!("{nonce}.{}", hex::encode(mac.finalize().into_bytes()))
            }
        }
    }

    fn signature_v1(&self, nonce: u64) -> String {
        let mut mac = self.mac.clone();
        mac.update(format!("{nonce}.{}", self.api_key).as_bytes());
        format!("{nonce}.{}", hex::encode(mac.finalize().into_bytes()))
    }
}

/// An HMAC-SHA256 keyed with `key`.
fn keyed(key: &[u8]) -> Hmac<Sha256> {
    match Hmac::<Sha256>::new_from_slice(key) {
        Ok(mac) => mac,
        // HMAC takes keys of any length: longer ones are hashed, shorter ones padded.
        Err(_) => unreachable!("HMAC-SHA256 accepts a key of any length"),
    }
}

/// The process's nonce counter of `api_key`, shared by every signer of that key.
fn nonce_counter(api_key: &str) -> Arc<AtomicU64> {
    static COUNTERS: OnceLock<Mutex<HashMap<String, Arc<AtomicU64>>>> = OnceLock::new();
    let counters = COUNTERS.get_or_init(Default::default);
    // A poisoned lock only means another thread panicked while inserting: the map is intact.
    let mut counters = counters
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(counters.entry(api_key.to_owned()).or_default())
}

/// The current Unix time in milliseconds (0 before 1970, which no real clock reports).
fn unix_millis() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX)
        })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    const NONCE: u64 = 1_700_000_000_000;

    fn signer() -> Signer {
        Signer::new("pk_test", "sk_test")
    }

    /// docs/API.md, "Worked example", v1.
    #[test]
    fn v1_known_answer_of_the_api_reference() {
        let empty = SignedRequest {
            method: "GET",
            path_and_query: "/ignored",
            body: b"ignored",
        };
        assert_eq!(
            signer().signature(NONCE, SignatureVersion::V1, &empty),
            "1700000000000.f96ea2e662c00d99c9d1e2d0d2117458f04e50d95e6d03c0ddc1b777cb30c1ee"
        );
    }

    /// docs/API.md, "Worked example", v2: `POST /api/receiver?x=1` with `{"a":1}`.
    #[test]
    fn v2_known_answer_of_the_api_reference() {
        let request = SignedRequest {
            method: "POST",
            path_and_query: "/api/receiver?x=1",
            body: br#"{"a":1}"#,
        };
        assert_eq!(
            signer().signature(NONCE, SignatureVersion::V2, &request),
            "1700000000000.10ea23e674b157afa9d42772c7dfe11da6e7aacb1856206c71d4320576651a5e"
        );
    }

    /// Computed independently with Python's hmac and hashlib; the method is upper-cased.
    #[test]
    fn v2_known_answers_lower_case_method_and_empty_body() {
        let post = SignedRequest {
            method: "post",
            path_and_query: "/api/receiver?limit=5",
            body: br#"{"subaccount_id":"sa_1","first_name":"Ada"}"#,
        };
        assert_eq!(
            signer().signature(NONCE, SignatureVersion::V2, &post),
            "1700000000000.4b561b3d186a27386400605fc6fbdd6e6fda7a9700c33e06d40aec401f65c585"
        );
        let get = SignedRequest {
            method: "GET",
            path_and_query: "/api/subaccount/balance/sa_1?asset=aud",
            body: b"",
        };
        assert_eq!(
            signer().signature(NONCE, SignatureVersion::V2, &get),
            "1700000000000.b8772e930a4faf24635253b4bb487752d047183c55c57edd9ce2c9c0c67ccaa6"
        );
    }

    #[test]
    fn headers_name_the_version_only_for_v2() {
        let request = SignedRequest {
            method: "GET",
            path_and_query: "/api/receiver",
            body: b"",
        };
        let v1 = signer().sign(SignatureVersion::V1, &request);
        let names: Vec<&str> = v1.pairs().iter().map(|(name, _)| *name).collect();
        assert_eq!(names, ["x-api-key", "signature"]);
        let v2 = signer().sign(SignatureVersion::V2, &request);
        assert!(v2.pairs().contains(&("x-signature-version", "2")));
        assert!(v2.signature.starts_with(&format!("{}.", v2.nonce)));
        assert_eq!(v2.signature.len(), 13 + 1 + 64);
    }

    #[test]
    fn nonces_are_thirteen_digits_and_strictly_increase_across_signers_of_a_key() {
        let (one, two) = (
            Signer::new("pk_nonce_test", "a"),
            Signer::new("pk_nonce_test", "b"),
        );
        let mut seen = HashSet::new();
        let mut last = 0;
        for i in 0..10_000 {
            let nonce = if i % 2 == 0 {
                one.next_nonce()
            } else {
                two.next_nonce()
            };
            assert_eq!(nonce.to_string().len(), 13);
            assert!(nonce > last, "{nonce} after {last}");
            assert!(seen.insert(nonce));
            last = nonce;
        }
    }

    #[test]
    fn nonces_by_a_callers_clock_follow_it_and_never_repeat() {
        let signer = Signer::new("pk_clock_test", "s");
        let two_days_ago = unix_millis() - 2 * 86_400_000;
        assert_eq!(signer.next_nonce_at(two_days_ago), two_days_ago);
        assert_eq!(signer.next_nonce_at(two_days_ago), two_days_ago + 1);
        assert_eq!(signer.next_nonce_at(two_days_ago - 5), two_days_ago + 2);
        assert_eq!(signer.next_nonce_at(two_days_ago + 10), two_days_ago + 10);
    }

    #[test]
    fn nonces_are_unique_across_threads() {
        let signer = Signer::new("pk_threads_test", "s");
        let handles: Vec<_> = (0..4)
            .map(|_| {
                let signer = signer.clone();
                std::thread::spawn(move || {
                    (0..2_000).map(|_| signer.next_nonce()).collect::<Vec<_>>()
                })
            })
            .collect();
        let mut all = HashSet::new();
        for handle in handles {
            for nonce in handle.join().unwrap_or_default() {
                assert!(all.insert(nonce), "nonce {nonce} handed out twice");
            }
        }
        assert_eq!(all.len(), 8_000);
    }

    #[test]
    fn debug_output_shows_no_secret_or_signature() {
        let signer = Signer::new("pk_dbg", "sk_very_secret");
        assert!(!format!("{signer:?}").contains("sk_very_secret"));
        let headers = signer.sign(
            SignatureVersion::V2,
            &SignedRequest {
                method: "GET",
                path_and_query: "/",
                body: b"",
            },
        );
        assert!(!format!("{headers:?}").contains(&headers.signature));
    }
}
