//! The demo's own webhook endpoint: a small HTTP/1.1 receiver on 127.0.0.1 that checks
//! each delivery's Standard Webhooks signature and prints one line per delivery: the time,
//! the event, the id of the object it is about (and its `status`, when it has one) and
//! whether the signature verified.
//!
//! A delivery is a `POST` with `webhook-id`, `webhook-timestamp` (Unix seconds) and
//! `webhook-signature` (`v1,<base64 HMAC-SHA256>` entries separated by spaces) headers; the
//! HMAC covers `<id>.<timestamp>.<raw body>` keyed with the base64-decoded secret after
//! `whsec_`. A delivery is accepted (200) when its timestamp is within five minutes of our
//! clock and any entry verifies; otherwise it is answered 401 and printed as REJECTED.
//! Requests that are not HTTP, too large, or not a `POST` are answered 400, 413/431 or 405
//! and printed likewise. Every connection is closed after one answer.
//!
//! Verbose ([`Detail::HeadersAndBody`], `cargo xtask serve --verbose`): each delivery's line is
//! followed by its headers and its body exactly as received, so the webhook verification
//! examples of docs/WEBHOOKS.md can be tried on a real delivery.

use std::{
    io::{self, Read, Write},
    net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream},
    thread::{self, JoinHandle},
    time::{Duration, Instant, SystemTime, UNIX_EPOCH},
};

use payoutd_client::webhooks::{self, Verifier};
use serde_json::Value;

/// The path the receiver answers deliveries on.
pub const PATH: &str = "/webhook";
/// Largest request head (request line and headers) read.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Largest body read.
pub const MAX_BODY_BYTES: usize = 1024 * 1024;
/// How far `webhook-timestamp` may be from our clock (replay protection).
pub const TOLERANCE_SECS: u64 = 5 * 60;
/// How long one read may wait, and how long one connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(5);
const REQUEST_DEADLINE: Duration = Duration::from_secs(10);

/// A bound, not yet serving receiver: its port is known before the secret is, so the
/// subaccount can be given the URL first. Connections wait in the backlog until
/// [`Receiver::serve`].
pub struct Receiver {
    listener: TcpListener,
    addr: SocketAddr,
}

impl Receiver {
    /// Binds a free port on 127.0.0.1.
    pub fn bind() -> io::Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        Ok(Self { listener, addr })
    }

    /// The URL deliveries go to.
    pub fn url(&self) -> String {
        format!("http://{}{PATH}", self.addr)
    }

    /// Answers deliveries signed with `secret` on a thread of its own, printing one line
    /// per request to `out` (and, with [`Detail::HeadersAndBody`], the request's headers and
    /// body), until the process exits.
    pub fn serve(
        self,
        secret: String,
        detail: Detail,
        mut out: Box<dyn Write + Send>,
    ) -> JoinHandle<()> {
        thread::spawn(move || {
            for stream in self.listener.incoming() {
                match stream {
                    Ok(stream) => {
                        if let Some(line) = handle(stream, &secret, detail) {
                            // The terminal went away: nothing else to tell.
                            let _ = writeln!(out, "{line}").and_then(|()| out.flush());
                        }
                    }
                    Err(err) => {
                        let _ = writeln!(out, "webhook receiver: accept failed: {err}");
                        thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        })
    }
}

/// How much the receiver prints of each request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Detail {
    /// One line: time, event, object, verdict.
    Line,
    /// The line, then every header and the body as received.
    HeadersAndBody,
}

/// A request the receiver read in full.
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    /// The value of header `name` (lower-case), if sent once.
    fn header(&self, name: &str) -> Option<&str> {
        let mut values = self
            .headers
            .iter()
            .filter(|(header, _)| header == name)
            .map(|(_, value)| value.as_str());
        match (values.next(), values.next()) {
            (Some(value), None) => Some(value),
            _ => None,
        }
    }
}

/// Why a request was not read.
#[derive(Debug, PartialEq, Eq)]
enum Unreadable {
    /// The peer closed or stalled before sending a whole request: nothing to answer.
    Gone,
    /// Not HTTP/1.x as this receiver reads it.
    Malformed(&'static str),
    /// The head exceeds [`MAX_HEAD_BYTES`].
    HeadTooLarge,
    /// The body exceeds [`MAX_BODY_BYTES`].
    BodyTooLarge,
    /// A body without `content-length` (chunked).
    LengthRequired,
}

impl Unreadable {
    fn status(&self) -> Option<&'static str> {
        match self {
            Self::Gone => None,
            Self::Malformed(_) => Some("400 Bad Request"),
            Self::HeadTooLarge => Some("431 Request Header Fields Too Large"),
            Self::BodyTooLarge => Some("413 Content Too Large"),
            Self::LengthRequired => Some("411 Length Required"),
        }
    }

    fn reason(&self) -> String {
        match self {
            Self::Gone => "connection closed before a whole request".to_owned(),
            Self::Malformed(why) => format!("not an HTTP request ({why})"),
            Self::HeadTooLarge => format!("headers over {MAX_HEAD_BYTES} bytes"),
            Self::BodyTooLarge => format!("body over {MAX_BODY_BYTES} bytes"),
            Self::LengthRequired => "body without content-length".to_owned(),
        }
    }
}

/// Why a delivery's signature was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rejected {
    /// A `webhook-*` header is missing or sent twice.
    MissingHeader(&'static str),
    /// `webhook-timestamp` is not a number or is more than [`TOLERANCE_SECS`] from now.
    Timestamp,
    /// No `v1,` entry of `webhook-signature` signs this id, timestamp and body.
    Signature,
    /// The secret is not `whsec_` followed by base64.
    Secret,
}

impl Rejected {
    fn reason(self) -> String {
        match self {
            Self::MissingHeader(name) => format!("no single {name} header"),
            Self::Timestamp => "webhook-timestamp more than 5 minutes from now".to_owned(),
            Self::Signature => "signature does not match".to_owned(),
            Self::Secret => "the demo's webhook secret is not whsec_<base64>".to_owned(),
        }
    }
}

/// Checks one delivery against `secret` at `now` (Unix seconds), with the client crate's
/// verifier: the one a merchant's Rust code uses.
pub fn verify(
    secret: &str,
    id: &str,
    timestamp: &str,
    signatures: &str,
    body: &[u8],
    now: u64,
) -> Result<(), Rejected> {
    let verifier = Verifier::new([secret])
        .map_err(|_| Rejected::Secret)?
        .tolerance(Duration::from_secs(TOLERANCE_SECS));
    verifier
        .verify_signature_at(
            id,
            timestamp,
            signatures,
            body,
            UNIX_EPOCH + Duration::from_secs(now),
        )
        .map_err(|rejected| match rejected {
            webhooks::Rejected::Timestamp => Rejected::Timestamp,
            // `Signature`, and whatever a later version of the crate adds: not accepted.
            _ => Rejected::Signature,
        })
}

/// Reads one request from `stream`, answers it and returns the line to print (none for a
/// connection that sent nothing).
fn handle(mut stream: TcpStream, secret: &str, detail: Detail) -> Option<String> {
    let time = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
    // Without timeouts a silent peer would hold the receiver forever.
    let timeouts = stream
        .set_read_timeout(Some(READ_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(READ_TIMEOUT)));
    if timeouts.is_err() {
        return None;
    }
    let request = match read_request(&mut stream) {
        Ok(request) => request,
        Err(unreadable) => {
            let status = unreadable.status()?;
            respond(&mut stream, status, &unreadable.reason());
            linger(&mut stream);
            return Some(format!(
                "{time} webhook REJECTED ({status}): {}",
                unreadable.reason()
            ));
        }
    };
    if request.method != "POST" {
        respond(
            &mut stream,
            "405 Method Not Allowed",
            "deliveries are POSTs",
        );
        return Some(format!(
            "{time} webhook REJECTED (405): {} {}",
            printable(&request.method),
            printable(&request.target)
        ));
    }
    let (event, resource) = describe(&request.body);
    let verdict = signature_verdict(&request, secret);
    let mut line = match verdict {
        Ok(()) => {
            respond(&mut stream, "200 OK", "ok");
            format!("{time} webhook {event} {resource} signature verified")
        }
        Err(rejected) => {
            respond(&mut stream, "401 Unauthorized", &rejected.reason());
            format!(
                "{time} webhook {event} {resource} REJECTED: {}",
                rejected.reason()
            )
        }
    };
    if detail == Detail::HeadersAndBody {
        line.push_str(&headers_and_body(&request));
    }
    Some(line)
}

/// The request's headers, one per line, then its body as received (control characters but
/// line breaks and tabs shown as `?`; a delivery's JSON has none), indented under the line.
fn headers_and_body(request: &Request) -> String {
    let mut text = String::new();
    for (name, value) in &request.headers {
        text.push_str(&format!("\n    {name}: {}", printable_in_full(value)));
    }
    text.push_str(&format!(
        "\n    body ({} bytes): {}",
        request.body.len(),
        printable_in_full(&String::from_utf8_lossy(&request.body))
    ));
    text
}

/// `text` without control characters (each shown as `?`), whole.
fn printable_in_full(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn signature_verdict(request: &Request, secret: &str) -> Result<(), Rejected> {
    let header = |name: &'static str| request.header(name).ok_or(Rejected::MissingHeader(name));
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_err(|_| Rejected::Timestamp)?
        .as_secs();
    verify(
        secret,
        header("webhook-id")?,
        header("webhook-timestamp")?,
        header("webhook-signature")?,
        &request.body,
        now,
    )
}

/// The event type and the id of the object it is about, from a delivery body.
fn describe(body: &[u8]) -> (String, String) {
    let Ok(Value::Object(fields)) = serde_json::from_slice::<Value>(body) else {
        return ("(body is not a JSON object)".to_owned(), String::new());
    };
    let text = |name: &str| match fields.get(name) {
        Some(Value::String(text)) if !text.is_empty() => Some(printable(text)),
        _ => None,
    };
    let event = text("event").unwrap_or_else(|| "(no event)".to_owned());
    // Most specific first: payout events also carry the receiver and account ids.
    let mut resource = [
        "payout_id",
        "batch_id",
        "receiver_account_id",
        "receiver_id",
    ]
    .iter()
    .find_map(|name| text(name).map(|id| format!("{name}={id}")))
    .unwrap_or_default();
    // Which change it announces: a payout's or batch's new status, say.
    if let Some(status) = text("status") {
        resource.push_str(&format!(" status={status}"));
    }
    (event, resource)
}

/// `text` shortened and without control characters, safe to print.
fn printable(text: &str) -> String {
    text.chars()
        .take(100)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

fn respond(stream: &mut TcpStream, status: &str, body: &str) {
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    // A peer that left does not need its answer.
    let _ = stream
        .write_all(response.as_bytes())
        .and_then(|()| stream.flush());
}

/// Reads (and drops) what the peer still sends after an early answer, so that closing
/// with unread bytes does not reset the connection before the peer reads the answer.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
    let limit = u64::try_from(MAX_HEAD_BYTES + MAX_BODY_BYTES).unwrap_or(u64::MAX);
    let _ = io::copy(&mut stream.take(limit), &mut io::sink());
}

/// Reads a request head and its `content-length` body, within the size limits.
fn read_request(stream: &mut impl Read) -> Result<Request, Unreadable> {
    let deadline = Instant::now() + REQUEST_DEADLINE;
    // One read, unless the request has taken too long already (a peer trickling bytes).
    let mut read_some = |chunk: &mut [u8]| {
        if Instant::now() > deadline {
            return Err(Unreadable::Gone);
        }
        stream.read(chunk).map_err(|_| Unreadable::Gone)
    };
    let mut buffer = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        if let Some(end) = find(&buffer, b"\r\n\r\n") {
            break end;
        }
        if buffer.len() > MAX_HEAD_BYTES {
            return Err(Unreadable::HeadTooLarge);
        }
        let read = read_some(&mut chunk)?;
        if read == 0 {
            return Err(if buffer.is_empty() {
                Unreadable::Gone
            } else {
                Unreadable::Malformed("incomplete head")
            });
        }
        buffer.extend_from_slice(&chunk[..read]);
    };
    if head_end > MAX_HEAD_BYTES {
        return Err(Unreadable::HeadTooLarge);
    }
    let head = std::str::from_utf8(&buffer[..head_end])
        .map_err(|_| Unreadable::Malformed("head is not UTF-8"))?;
    let mut lines = head.split("\r\n");
    let mut request_line = lines.next().unwrap_or_default().split(' ');
    let (Some(method), Some(target), Some(version), None) = (
        request_line.next(),
        request_line.next(),
        request_line.next(),
        request_line.next(),
    ) else {
        return Err(Unreadable::Malformed("bad request line"));
    };
    if !version.starts_with("HTTP/1.") || method.is_empty() || target.is_empty() {
        return Err(Unreadable::Malformed("bad request line"));
    }
    let headers = lines
        .map(|line| {
            line.split_once(':')
                .filter(|(name, _)| !name.is_empty() && !name.contains([' ', '\t']))
                .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
                .ok_or(Unreadable::Malformed("bad header line"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut lengths = headers
        .iter()
        .filter(|(name, _)| name == "content-length")
        .map(|(_, value)| value);
    let length = match (lengths.next(), lengths.next()) {
        (None, _) if headers.iter().any(|(name, _)| name == "transfer-encoding") => {
            return Err(Unreadable::LengthRequired);
        }
        (None, _) => 0,
        (Some(value), None) => value
            .parse::<usize>()
            .map_err(|_| Unreadable::Malformed("bad content-length"))?,
        (Some(_), Some(_)) => return Err(Unreadable::Malformed("two content-length headers")),
    };
    if length > MAX_BODY_BYTES {
        return Err(Unreadable::BodyTooLarge);
    }
    let (method, target) = (method.to_owned(), target.to_owned());
    let mut body = buffer.split_off(head_end + 4);
    if body.len() > length {
        return Err(Unreadable::Malformed("more bytes than content-length"));
    }
    while body.len() < length {
        let wanted = chunk.len().min(length - body.len());
        let read = read_some(&mut chunk[..wanted])?;
        if read == 0 {
            return Err(Unreadable::Gone);
        }
        body.extend_from_slice(&chunk[..read]);
    }
    Ok(Request {
        method,
        target,
        headers,
        body,
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::{
        io::{Read, Write},
        net::{Shutdown, TcpStream},
        sync::{Arc, Mutex},
        time::{Duration, SystemTime, UNIX_EPOCH},
    };

    use base64::{Engine, engine::general_purpose::STANDARD};
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::Sha256;

    use super::{Detail, MAX_BODY_BYTES, MAX_HEAD_BYTES, Receiver, Rejected, verify};

    const SECRET: &str = "whsec_c2VjcmV0LWJ5dGVzLWZvci10aGUtZGVtbw==";
    const OTHER_SECRET: &str = "whsec_b3RoZXItc2VjcmV0LWJ5dGVz";
    const BODY: &str = r#"{"event":"payoutCreated","event_id":"e-1","payout_id":"p-42","receiver_id":"r-7","status":"awaiting"}"#;

    /// What the receiver printed, shared with the test.
    #[derive(Clone, Default)]
    struct Printed(Arc<Mutex<Vec<u8>>>);

    impl Write for Printed {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Printed {
        /// The printed lines, once there are `count` of them.
        fn lines(&self, count: usize) -> Vec<String> {
            for _ in 0..200 {
                let text = String::from_utf8(self.0.lock().unwrap().clone()).unwrap();
                let lines: Vec<String> = text.lines().map(str::to_owned).collect();
                if lines.len() >= count {
                    return lines;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            panic!("fewer than {count} lines printed");
        }
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn sign(secret: &str, id: &str, timestamp: &str, body: &[u8]) -> String {
        let key = STANDARD
            .decode(secret.strip_prefix("whsec_").unwrap())
            .unwrap();
        let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    fn start() -> (String, Printed) {
        start_with(Detail::Line)
    }

    fn start_with(detail: Detail) -> (String, Printed) {
        let receiver = Receiver::bind().unwrap();
        let url = receiver.url();
        let addr = url
            .strip_prefix("http://")
            .and_then(|rest| rest.strip_suffix("/webhook"))
            .unwrap()
            .to_owned();
        let printed = Printed::default();
        receiver.serve(SECRET.to_owned(), detail, Box::new(printed.clone()));
        (addr, printed)
    }

    /// Sends raw bytes and returns the response's status line ("" when none).
    fn send(addr: &str, request: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        // The receiver may answer before reading everything (too large): that is fine.
        let _ = stream.write_all(request);
        let _ = stream.shutdown(Shutdown::Write);
        let mut response = Vec::new();
        let _ = stream.read_to_end(&mut response);
        String::from_utf8_lossy(&response)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    }

    fn delivery(id: &str, timestamp: &str, signature: &str, body: &str) -> Vec<u8> {
        format!(
            "POST /webhook HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n\
             webhook-id: {id}\r\nwebhook-timestamp: {timestamp}\r\nwebhook-signature: {signature}\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes()
    }

    #[test]
    fn a_correctly_signed_delivery_is_accepted_and_printed() {
        let (addr, printed) = start();
        let timestamp = now().to_string();
        let signature = sign(SECRET, "e-1", &timestamp, BODY.as_bytes());
        // A rotation sends two signatures; one stale entry must not matter.
        let signatures = format!(
            "{} {signature}",
            sign(OTHER_SECRET, "e-1", &timestamp, b"x")
        );
        let status = send(&addr, &delivery("e-1", &timestamp, &signatures, BODY));
        assert_eq!(status, "HTTP/1.1 200 OK");
        let lines = printed.lines(1);
        assert!(
            lines[0].ends_with(
                " webhook payoutCreated payout_id=p-42 status=awaiting signature verified"
            ),
            "{lines:?}"
        );
        // The time comes first, as an RFC 3339 UTC timestamp.
        assert!(chrono::DateTime::parse_from_rfc3339(lines[0].split(' ').next().unwrap()).is_ok());
        assert!(!lines[0].contains(SECRET));
    }

    #[test]
    fn verbose_prints_each_header_and_the_body_as_received() {
        let (addr, printed) = start_with(Detail::HeadersAndBody);
        let timestamp = now().to_string();
        let signature = sign(SECRET, "e-7", &timestamp, BODY.as_bytes());
        let status = send(&addr, &delivery("e-7", &timestamp, &signature, BODY));
        assert_eq!(status, "HTTP/1.1 200 OK");
        // The line, six headers, the body.
        let lines = printed.lines(8);
        assert!(lines[0].ends_with("signature verified"), "{lines:?}");
        for header in [
            "    webhook-id: e-7".to_owned(),
            format!("    webhook-timestamp: {timestamp}"),
            format!("    webhook-signature: {signature}"),
            "    content-type: application/json".to_owned(),
        ] {
            assert!(lines.contains(&header), "{header}: {lines:?}");
        }
        assert_eq!(
            lines[7],
            format!("    body ({} bytes): {BODY}", BODY.len()),
            "{lines:?}"
        );
        // The body printed is the one signed: the examples can verify it.
        assert_eq!(
            verify(
                SECRET,
                "e-7",
                &timestamp,
                &signature,
                BODY.as_bytes(),
                now()
            ),
            Ok(())
        );
    }

    #[test]
    fn tampered_body_wrong_secret_and_stale_timestamps_are_rejected() {
        let (addr, printed) = start();
        let timestamp = now().to_string();
        let signature = sign(SECRET, "e-1", &timestamp, BODY.as_bytes());
        let tampered = BODY.replace("p-42", "p-43");
        let wrong_secret = sign(OTHER_SECRET, "e-1", &timestamp, BODY.as_bytes());
        let old = (now() - 6 * 60).to_string();
        let old_signature = sign(SECRET, "e-1", &old, BODY.as_bytes());
        let ahead = (now() + 6 * 60).to_string();
        let ahead_signature = sign(SECRET, "e-1", &ahead, BODY.as_bytes());
        let cases = [
            delivery("e-1", &timestamp, &signature, &tampered),
            delivery("e-1", &timestamp, &wrong_secret, BODY),
            delivery("e-2", &timestamp, &signature, BODY),
            delivery("e-1", &old, &old_signature, BODY),
            delivery("e-1", &ahead, &ahead_signature, BODY),
            delivery("e-1", "soon", &signature, BODY),
            delivery("e-1", &timestamp, "v1,!!!not-base64", BODY),
            format!(
                "POST /webhook HTTP/1.1\r\nwebhook-id: e-1\r\nwebhook-signature: {signature}\r\n\
                 content-length: {}\r\n\r\n{BODY}",
                BODY.len()
            )
            .into_bytes(),
        ];
        for case in &cases {
            assert_eq!(send(&addr, case), "HTTP/1.1 401 Unauthorized");
        }
        let lines = printed.lines(cases.len());
        for line in &lines[..3] {
            assert!(
                line.ends_with("REJECTED: signature does not match"),
                "{line}"
            );
        }
        assert!(
            lines[0].contains("payoutCreated payout_id=p-43 status=awaiting REJECTED"),
            "{}",
            lines[0]
        );
        for line in &lines[3..6] {
            assert!(line.contains("REJECTED: webhook-timestamp"), "{line}");
        }
        assert!(lines[6].ends_with("REJECTED: signature does not match"));
        assert!(lines[7].ends_with("REJECTED: no single webhook-timestamp header"));
    }

    #[test]
    fn garbage_and_oversized_requests_are_answered_without_panicking() {
        let (addr, printed) = start();
        let timestamp = now().to_string();
        let signature = sign(SECRET, "e-1", &timestamp, BODY.as_bytes());
        let mut huge_head = b"POST /webhook HTTP/1.1\r\nx-padding: ".to_vec();
        huge_head.resize(MAX_HEAD_BYTES + 10, b'a');
        huge_head.extend_from_slice(b"\r\n\r\n");
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                b"\x00\xff\x16\x03 garbage\r\n\r\n".to_vec(),
                "400 Bad Request",
            ),
            (b"hello\r\n\r\n".to_vec(), "400 Bad Request"),
            (
                b"POST /webhook HTTP/1.1\r\nno colon here\r\n\r\n".to_vec(),
                "400 Bad Request",
            ),
            (
                b"POST /webhook HTTP/1.1\r\ncontent-length: -1\r\n\r\n".to_vec(),
                "400 Bad Request",
            ),
            (
                b"POST /webhook HTTP/1.1\r\ncontent-length: 1\r\ncontent-length: 2\r\n\r\n"
                    .to_vec(),
                "400 Bad Request",
            ),
            (
                b"POST /webhook HTTP/1.1\r\nhost: x".to_vec(),
                "400 Bad Request",
            ),
            (huge_head, "431 Request Header Fields Too Large"),
            (
                format!(
                    "POST /webhook HTTP/1.1\r\ncontent-length: {}\r\n\r\n",
                    MAX_BODY_BYTES + 1
                )
                .into_bytes(),
                "413 Content Too Large",
            ),
            (
                b"POST /webhook HTTP/1.1\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n".to_vec(),
                "411 Length Required",
            ),
            (
                b"GET /webhook HTTP/1.1\r\nhost: x\r\n\r\n".to_vec(),
                "405 Method Not Allowed",
            ),
            (
                delivery("e-1", &timestamp, &signature, "not json"),
                "401 Unauthorized",
            ),
        ];
        for (request, status) in &cases {
            assert_eq!(send(&addr, request), format!("HTTP/1.1 {status}"));
        }
        // A connection that sends nothing is not a delivery and prints nothing.
        assert_eq!(send(&addr, b""), "");
        // The receiver still works after all that.
        let good = delivery("e-1", &timestamp, &signature, BODY);
        assert_eq!(send(&addr, &good), "HTTP/1.1 200 OK");
        let lines = printed.lines(cases.len() + 1);
        assert_eq!(lines.len(), cases.len() + 1, "{lines:?}");
        for line in &lines[..cases.len() - 1] {
            assert!(line.contains(" webhook REJECTED ("), "{line}");
        }
        assert!(lines[cases.len() - 1].contains("(body is not a JSON object)  REJECTED"));
        assert!(lines[cases.len()].ends_with("signature verified"));
    }

    #[test]
    fn verify_checks_secret_format_and_window_edges() {
        let body = BODY.as_bytes();
        let at = 1_800_000_000;
        let signature = sign(SECRET, "e-1", "1800000000", body);
        assert_eq!(
            verify(SECRET, "e-1", "1800000000", &signature, body, at),
            Ok(())
        );
        assert_eq!(
            verify(SECRET, "e-1", "1800000000", &signature, body, at + 300),
            Ok(())
        );
        assert_eq!(
            verify(SECRET, "e-1", "1800000000", &signature, body, at + 301),
            Err(Rejected::Timestamp)
        );
        assert_eq!(
            verify("c2VjcmV0", "e-1", "1800000000", &signature, body, at),
            Err(Rejected::Secret)
        );
        assert_eq!(
            verify(SECRET, "e-1", "1800000000", "", body, at),
            Err(Rejected::Signature)
        );
    }
}
