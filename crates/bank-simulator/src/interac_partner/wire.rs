//! The partner's HTTP side: a request read off the wire, routed, and answered signed.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use bank_formats::interac::{ErrorAnswer, SIGNATURE_HEADER, sign, verify_signature};

use super::batches::{list_reports, post_batch};
use super::{MAX_BODY, MAX_HEAD, Shared, bump};

/// A request as read off the wire.
pub(super) struct Request {
    method: String,
    pub(super) target: String,
    headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Request {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

pub(super) fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if data.len() > MAX_HEAD {
            return None;
        }
    };
    let head = std::str::from_utf8(&data[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(Some(0), |(_, v)| v.parse().ok())?;
    if length > MAX_BODY {
        return None;
    }
    let mut body = data.get(head_end + 4..)?.to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    body.truncate(length);
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

/// A signed answer.
pub(super) struct Answer {
    pub(super) status: u16,
    pub(super) body: Vec<u8>,
}

pub(super) fn error(status: u16, code: &str, message: &str) -> Answer {
    Answer {
        status,
        body: ErrorAnswer {
            code: code.to_owned(),
            message: message.to_owned(),
        }
        .to_bytes(),
    }
}

pub(super) fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        _ => "Other",
    }
}

pub(super) fn serve(mut stream: TcpStream, shared: &Arc<Shared>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let answer = match read_request(&mut stream) {
        Some(request) => route(&request, shared),
        None => error(
            400,
            "BAD_REQUEST",
            "not an HTTP/1.1 request this partner reads",
        ),
    };
    let secret = shared.options.shared_secret.as_bytes();
    let signature = sign(secret, shared.unix_now(), &answer.body).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{SIGNATURE_HEADER}: {signature}\r\nconnection: close\r\n\r\n",
        answer.status,
        reason_phrase(answer.status),
        answer.body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&answer.body);
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

pub(super) fn route(request: &Request, shared: &Arc<Shared>) -> Answer {
    let payload = if request.method == "GET" {
        request.target.as_bytes()
    } else {
        request.body.as_slice()
    };
    let verified = request.header(SIGNATURE_HEADER).is_some_and(|header| {
        verify_signature(
            header,
            payload,
            shared.options.shared_secret.as_bytes(),
            shared.unix_now(),
            shared.options.tolerance_seconds,
        )
        .is_ok()
    });
    if !verified {
        bump(&shared.counters.bad_signatures);
        return error(
            401,
            "BAD_SIGNATURE",
            "the signature is missing, stale or does not match",
        );
    }
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((request.target.as_str(), ""));
    match (request.method.as_str(), path) {
        ("POST", "/v1/batches") => post_batch(request, shared),
        ("GET", "/v1/reports") => list_reports(query, shared),
        ("GET", path) if path.starts_with("/v1/reports/") => {
            let id = &path["/v1/reports/".len()..];
            shared
                .book()
                .reports
                .iter()
                .find(|(report_id, _)| report_id == id)
                .map_or_else(
                    || error(404, "NOT_FOUND", "no report of that id"),
                    |(_, bytes)| Answer {
                        status: 200,
                        body: bytes.clone(),
                    },
                )
        }
        (_, "/v1/batches" | "/v1/reports") => error(405, "METHOD_NOT_ALLOWED", "wrong method"),
        _ => error(404, "NOT_FOUND", "no such endpoint"),
    }
}
