//! A minimal HTTP/1.1 client for xtask's own loopback servers (payoutd's API and console, the
//! demo bank): one request per connection, no TLS, no redirects. It refuses any address that
//! is not loopback, so no tool can send a packet off the machine by mistake.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// An answer: status, headers (names lower-cased) and body (as text).
#[derive(Debug)]
pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: String,
}

impl Response {
    /// The values of header `name` (lower case).
    pub(crate) fn header<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> {
        self.headers
            .iter()
            .filter(move |(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// Sends one request to `addr` (loopback only) and reads the whole answer.
pub(crate) fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: &[u8],
) -> Result<Response, String> {
    if !addr.ip().is_loopback() {
        return Err(format!("{method} {path}: {addr} is not a loopback address"));
    }
    let fail = |err: std::io::Error| format!("{method} {path}: {err}");
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).map_err(fail)?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .map_err(fail)?;
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).map_err(fail)?;
    stream.write_all(body).map_err(fail)?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).map_err(fail)?;
    parse(&answer).ok_or_else(|| format!("{method} {path}: not an HTTP response"))
}

fn parse(answer: &[u8]) -> Option<Response> {
    let text = String::from_utf8_lossy(answer);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let mut lines = head.lines();
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        let mut rest = body;
        let mut out = String::new();
        loop {
            let (size, after) = rest.split_once("\r\n")?;
            let size = usize::from_str_radix(size.trim(), 16).ok()?;
            if size == 0 {
                break out;
            }
            out.push_str(after.get(..size)?);
            rest = after.get(size + 2..)?;
        }
    } else {
        body.to_owned()
    };
    Some(Response {
        status,
        headers,
        body,
    })
}

/// `pairs` as an `application/x-www-form-urlencoded` body.
pub(crate) fn form(pairs: &[(&str, &str)]) -> String {
    let encode = |s: &str| {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect::<String>()
    };
    pairs
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_parsed_with_their_headers_plain_or_chunked() {
        let plain = parse(b"HTTP/1.1 303 See Other\r\nLocation: /x\r\nSet-Cookie: a=1; Path=/\r\nSet-Cookie: b=2\r\n\r\nhi").unwrap();
        assert_eq!(plain.status, 303);
        assert_eq!(plain.header("location").collect::<Vec<_>>(), ["/x"]);
        assert_eq!(plain.header("set-cookie").count(), 2);
        assert_eq!(plain.body, "hi");
        let chunked = parse(
            b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n",
        )
        .unwrap();
        assert_eq!(chunked.body, "abcde");
        assert!(parse(b"garbage").is_none());
    }

    #[test]
    fn forms_are_percent_encoded_and_only_loopback_is_asked() {
        assert_eq!(
            form(&[("email", "a+b@x.co"), ("n", "1 2")]),
            "email=a%2Bb%40x.co&n=1%202"
        );
        let outside: SocketAddr = "192.0.2.1:80".parse().unwrap();
        let refused = request(outside, "GET", "/", &[], b"").unwrap_err();
        assert!(refused.contains("not a loopback address"), "{refused}");
    }
}
