//! The request signature: `signature: <nonce>.<hex>` where `nonce` is the client's Unix time in
//! milliseconds and `hex` the lower-case HMAC-SHA256 under the API secret of
//! - v1: `<nonce>.<api key>`
//! - v2 (`x-signature-version: 2`): `<nonce>.<api key>.<METHOD>.<path with query>.<hex sha256 of body>`.

use hmac::{KeyInit, Mac};
use sha2::{Digest, Sha256};

type HmacSha256 = hmac::Hmac<Sha256>;

/// Which message the signature covers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignatureVersion {
    /// Nonce and key only (compat).
    V1,
    /// Also method, path with query and body hash.
    V2,
}

impl SignatureVersion {
    /// Parses the `x-signature-version` header; absent means v1.
    pub fn from_header(raw: Option<&str>) -> Option<Self> {
        match raw.map(str::trim) {
            None | Some("1") => Some(Self::V1),
            Some("2") => Some(Self::V2),
            Some(_) => None,
        }
    }
}

/// A well-formed `signature` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureHeader {
    /// Client time, Unix milliseconds.
    pub nonce: i64,
    /// The 32 MAC bytes.
    pub mac: [u8; 32],
}

impl SignatureHeader {
    /// Parses `<13 digits>.<64 lower- or upper-case hex digits>`.
    pub fn parse(raw: &str) -> Option<Self> {
        let (nonce, hex_mac) = raw.trim().split_once('.')?;
        if nonce.len() != 13 || !nonce.bytes().all(|b| b.is_ascii_digit()) || hex_mac.len() != 64 {
            return None;
        }
        let mut mac = [0u8; 32];
        hex::decode_to_slice(hex_mac, &mut mac).ok()?;
        Some(Self {
            nonce: nonce.parse().ok()?,
            mac,
        })
    }
}

/// The signed parts of a request.
#[derive(Debug, Clone, Copy)]
pub struct SignedParts<'a> {
    /// Signature version.
    pub version: SignatureVersion,
    /// The nonce, as sent.
    pub nonce: i64,
    /// The API key, as sent.
    pub api_key: &'a str,
    /// HTTP method, upper case.
    pub method: &'a str,
    /// Path with query string, as sent.
    pub path_and_query: &'a str,
    /// The raw body.
    pub body: &'a [u8],
}

impl SignedParts<'_> {
    /// The exact message the HMAC covers.
    pub fn message(&self) -> String {
        match self.version {
            SignatureVersion::V1 => format!("{}.{}", self.nonce, self.api_key),
            SignatureVersion::V2 => format!(
                "{}.{}.{}.{}.{}",
                self.nonce,
                self.api_key,
                self.method.to_ascii_uppercase(),
                self.path_and_query,
                hex::encode(Sha256::digest(self.body)),
            ),
        }
    }
}

fn mac_for(secret: &str, message: &str) -> HmacSha256 {
    // HMAC accepts keys of any length, so this cannot fail; keep the error path total anyway.
    let mut mac = match HmacSha256::new_from_slice(secret.as_bytes()) {
        Ok(mac) => mac,
        Err(_) => <HmacSha256 as KeyInit>::new(&Default::default()),
    };
    mac.update(message.as_bytes());
    mac
}

/// The header value a client sends: `<nonce>.<hex>`.
pub fn sign(secret: &str, parts: &SignedParts<'_>) -> String {
    let tag = mac_for(secret, &parts.message()).finalize().into_bytes();
    format!("{}.{}", parts.nonce, hex::encode(tag))
}

/// Checks `mac` against the expected HMAC in constant time.
pub fn verify(secret: &str, parts: &SignedParts<'_>, mac: &[u8; 32]) -> bool {
    mac_for(secret, &parts.message()).verify_slice(mac).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const V1: SignedParts<'static> = SignedParts {
        version: SignatureVersion::V1,
        nonce: 1_700_000_000_000,
        api_key: "pk_test",
        method: "GET",
        path_and_query: "/api/receiver",
        body: b"",
    };

    // Known answers computed independently:
    // python3 -c 'import hmac,hashlib;print(hmac.new(b"sk_test",b"1700000000000.pk_test",hashlib.sha256).hexdigest())'
    #[test]
    fn v1_known_answer() {
        assert_eq!(V1.message(), "1700000000000.pk_test");
        assert_eq!(
            sign("sk_test", &V1),
            "1700000000000.f96ea2e662c00d99c9d1e2d0d2117458f04e50d95e6d03c0ddc1b777cb30c1ee"
        );
    }

    // python3 -c 'import hmac,hashlib;b=hashlib.sha256(b"{\"a\":1}").hexdigest();print(hmac.new(b"sk_test",("1700000000000.pk_test.POST./api/receiver?x=1."+b).encode(),hashlib.sha256).hexdigest())'
    #[test]
    fn v2_known_answer() {
        let parts = SignedParts {
            version: SignatureVersion::V2,
            method: "post",
            path_and_query: "/api/receiver?x=1",
            body: br#"{"a":1}"#,
            ..V1
        };
        assert!(
            parts
                .message()
                .starts_with("1700000000000.pk_test.POST./api/receiver?x=1.")
        );
        assert_eq!(
            sign("sk_test", &parts),
            "1700000000000.10ea23e674b157afa9d42772c7dfe11da6e7aacb1856206c71d4320576651a5e"
        );
    }

    #[test]
    fn verify_accepts_the_signature_and_nothing_else() {
        let header = SignatureHeader::parse(&sign("sk_test", &V1));
        let Some(header) = header else {
            panic!("own signature must parse")
        };
        assert!(verify("sk_test", &V1, &header.mac));
        assert!(!verify("sk_other", &V1, &header.mac));
        let other_key = SignedParts {
            api_key: "pk_other",
            ..V1
        };
        assert!(!verify("sk_test", &other_key, &header.mac));
        let mut flipped = header.mac;
        flipped[0] ^= 1;
        assert!(!verify("sk_test", &V1, &flipped));
    }

    #[test]
    fn header_parsing_is_strict() {
        let hex64 = "ab".repeat(32);
        assert!(SignatureHeader::parse(&format!("1700000000000.{hex64}")).is_some());
        for bad in [
            String::new(),
            "1700000000000".to_owned(),
            format!("170000000000.{hex64}"),
            format!("17000000000001.{hex64}"),
            format!("1700000000000.{}", &hex64[..62]),
            format!("1700000000000.{}zz", &hex64[..62]),
            format!("-700000000000.{hex64}"),
            format!("1700000000000:{hex64}"),
        ] {
            assert_eq!(SignatureHeader::parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn version_header() {
        assert_eq!(
            SignatureVersion::from_header(None),
            Some(SignatureVersion::V1)
        );
        assert_eq!(
            SignatureVersion::from_header(Some("2")),
            Some(SignatureVersion::V2)
        );
        assert_eq!(SignatureVersion::from_header(Some("3")), None);
    }
}
