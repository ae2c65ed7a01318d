//! Each report posted as a signed callback, with retries.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::Ordering;
use std::thread;
use std::time::Duration;

use bank_formats::interac::{SIGNATURE_HEADER, sign};

use super::{Callback, Shared, bump};

/// Posts `report` to the callback URL, signed, trying up to `callback_attempts` times.
pub(super) fn deliver(shared: &Shared, report: &[u8]) {
    let Some(callback) = &shared.callback else {
        return;
    };
    for attempt in 0..shared.options.callback_attempts.max(1) {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        if attempt > 0 {
            thread::sleep(Duration::from_millis(100 * u64::from(attempt)));
        }
        if post_callback(shared, callback, report).is_ok_and(|status| (200..300).contains(&status))
        {
            bump(&shared.counters.callbacks_delivered);
            return;
        }
    }
    bump(&shared.counters.callbacks_failed);
}

pub(super) fn post_callback(
    shared: &Shared,
    callback: &Callback,
    body: &[u8],
) -> Result<u16, String> {
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
    text.split(' ')
        .nth(1)
        .and_then(|status| status.parse().ok())
        .ok_or_else(|| "not an HTTP answer".to_owned())
}
