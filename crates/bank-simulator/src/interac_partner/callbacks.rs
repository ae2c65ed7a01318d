//! Each report posted as a signed callback, with retries.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use bank_formats::interac::{SIGNATURE_HEADER, sign};

use super::{Callback, Shared, bump};

/// The longest `retry-after` the partner waits for.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(10);

/// What a callback's answer said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Answered {
    pub(super) status: u16,
    /// Its `retry-after` in seconds, if any.
    pub(super) retry_after: Option<u64>,
}

/// Posts `report` to the callback URL, signed, trying up to `callback_attempts` times: after
/// 100 ms times the attempts so far, or the `retry-after` payoutd answered (at most 10 s).
pub(super) fn deliver(shared: &Shared, report: &[u8]) {
    let Some(callback) = &shared.callback else {
        return;
    };
    let mut wait = Duration::ZERO;
    for attempt in 0..shared.options.callback_attempts.max(1) {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        thread::sleep(wait);
        let answered = post_callback(shared, callback, report);
        if answered
            .as_ref()
            .is_ok_and(|a| (200..300).contains(&a.status))
        {
            bump(&shared.counters.callbacks_delivered);
            return;
        }
        let asked = answered
            .ok()
            .and_then(|a| a.retry_after)
            .map(|secs| Duration::from_secs(secs).min(MAX_RETRY_AFTER));
        wait = asked.unwrap_or(Duration::from_millis(100 * u64::from(attempt + 1)));
    }
    bump(&shared.counters.callbacks_failed);
}

pub(super) fn post_callback(
    shared: &Shared,
    callback: &Callback,
    body: &[u8],
) -> Result<Answered, String> {
    let signature = sign(
        shared.options.shared_secret.as_bytes(),
        shared.unix_now(),
        body,
    )
    .map_err(|e| e.to_string())?;
    let addr = callback
        .addr
        .to_socket_addrs()
        .map_err(|e| e.to_string())?
        .next()
        .ok_or("no address")?;
    let mut stream =
        TcpStream::connect_timeout(&addr, Duration::from_secs(2)).map_err(|e| e.to_string())?;
    stream
        .set_read_timeout(Some(shared.options.callback_timeout))
        .map_err(|e| e.to_string())?;
    let head = format!(
        "POST {} HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{SIGNATURE_HEADER}: {signature}\r\nconnection: close\r\n\r\n",
        callback.path,
        callback.host,
        body.len()
    );
    stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(body))
        .map_err(|e| e.to_string())?;
    let mut answer = Vec::new();
    stream
        .take(64 * 1024)
        .read_to_end(&mut answer)
        .map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&answer);
    let head = text.split("\r\n\r\n").next().unwrap_or_default();
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| "not an HTTP answer".to_owned())?;
    let retry_after = head
        .split("\r\n")
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("retry-after"))
        .and_then(|(_, value)| value.trim().parse().ok());
    Ok(Answered {
        status,
        retry_after,
    })
}
