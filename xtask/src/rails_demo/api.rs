//! Signed calls to payoutd's API over loopback.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
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

/// One HTTP/1.1 request over loopback: `(status, body)`.
pub(super) fn http(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<(u16, String), String> {
    let fail = |err: std::io::Error| format!("{method} {path}: {err}");
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(fail)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(fail)?;
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).map_err(fail)?;
    stream.write_all(body).map_err(fail)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(fail)?;
    parse_response(&answer).ok_or_else(|| format!("{method} {path}: not an HTTP response"))
}

pub(super) fn parse_response(answer: &[u8]) -> Option<(u16, String)> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status = head.split(' ').nth(1)?.parse().ok()?;
    let chunked = head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:") && l.contains("chunked"));
    if !chunked {
        return Some((status, body.to_owned()));
    }
    let mut rest = body;
    let mut out = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.trim(), 16).ok()?;
        if size == 0 {
            return Some((status, out));
        }
        out.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn responses_plain_and_chunked() {
        assert_eq!(
            parse_response(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}"),
            Some((200, "{}".to_owned()))
        );
        assert_eq!(
            parse_response(b"HTTP/1.1 400 Bad\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n"),
            Some((400, "abcde".to_owned()))
        );
        assert_eq!(parse_response(b"garbage"), None);
    }
}
