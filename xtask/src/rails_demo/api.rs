//! Signed calls to payoutd's API over loopback.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use payoutd_client::signing::{SignatureVersion, SignedRequest, Signer};
use serde_json::Value;

use crate::clock;
use crate::failure::Failure;

/// Signed calls to payoutd's API (v2 signatures, by the client crate's signer).
pub(super) struct Api {
    addr: SocketAddr,
    signer: Signer,
    /// The slowest call so far, as the client saw it: how long, and which.
    slowest: Option<(Duration, String)>,
}

impl Api {
    pub(super) fn new(addr: SocketAddr, key: &str, secret: &str) -> Self {
        Self {
            addr,
            signer: Signer::new(key, secret),
            slowest: None,
        }
    }

    /// The slowest call so far, for progress lines.
    pub(super) fn slowest(&self) -> String {
        self.slowest.as_ref().map_or_else(
            || "none".to_owned(),
            |(took, call)| format!("{call} in {:.2} s", took.as_secs_f64()),
        )
    }

    pub(super) fn call(&mut self, method: &str, path: &str, body: &[u8]) -> Result<Value, Failure> {
        // payoutd may run days back (a weekend): the nonce is by the demo's clock, which is
        // payoutd's, so it is inside the freshness window.
        let now = clock::unix_millis().map_err(|err| Failure::new("a clock", err))?;
        let nonce = self.signer.next_nonce_at(now);
        let signature = self.signer.signature(
            nonce,
            SignatureVersion::V2,
            &SignedRequest {
                method,
                path_and_query: path,
                body,
            },
        );
        let headers = [
            ("x-api-key", self.signer.api_key().to_owned()),
            ("x-signature-version", "2".to_owned()),
            ("signature", signature),
            ("content-type", "application/json".to_owned()),
        ];
        let sent = Instant::now();
        let answer = http(self.addr, method, path, &headers, body);
        let took = sent.elapsed();
        if self
            .slowest
            .as_ref()
            .is_none_or(|(slowest, _)| took > *slowest)
        {
            self.slowest = Some((took, format!("{method} {path}")));
        }
        let (status, text) = answer.map_err(|err| {
            Failure::new(
                format!("an answer to {method} {path}"),
                format!("{err} after {:.1} s", took.as_secs_f64()),
            )
        })?;
        if status != 200 {
            return Err(Failure::new(
                format!("200 to {method} {path}"),
                format!("{status}: {text}"),
            ));
        }
        serde_json::from_str(&text).map_err(|err| {
            Failure::new(
                format!("JSON in the answer to {method} {path}"),
                format!("{err}: {text}"),
            )
        })
    }

    pub(super) fn get(&mut self, path: &str) -> Result<Value, Failure> {
        self.call("GET", path, b"")
    }

    pub(super) fn post(&mut self, path: &str, body: &Value) -> Result<Value, Failure> {
        self.call("POST", path, body.to_string().as_bytes())
    }
}

/// `payload.<name>` of an answer, as a string.
pub(super) fn payload_str(answer: &Value, name: &str) -> Result<String, String> {
    answer["payload"][name]
        .as_str()
        .map(str::to_owned)
        .ok_or_else(|| format!("no payload.{name} in {answer}"))
}

/// One HTTP/1.1 request over loopback (xtask's client): `(status, body)`.
pub(super) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<(u16, String), String> {
    crate::http::request(addr, method, path, headers, body)
        .map(|answer| (answer.status, answer.body))
}
