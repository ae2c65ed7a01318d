//! Client connections: keep-alive (`PAYOUT_HTTP_KEEP_ALIVE_SECS`) and the deadline of a request's
//! head (`PAYOUT_HTTP_REQUEST_TIMEOUT_MS`), seen from a raw TCP client.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::helpers::{TestApp, spawn_app_with};

const HEALTHZ: &[u8] = b"GET /healthz HTTP/1.1\r\nHost: payoutd.test\r\n\r\n";

/// Far longer than any timeout under test: only a server that never acts runs into it.
const PATIENCE: Duration = Duration::from_secs(20);

async fn connect(app: &TestApp) -> TcpStream {
    let address = app.base.trim_start_matches("http://");
    TcpStream::connect(address).await.unwrap()
}

/// Reads one response (head, and a body of its `content-length`), returning its head.
async fn response(stream: &mut TcpStream) -> String {
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        if let Some(end) = read.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&read[..end]).to_ascii_lowercase();
            let length: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length:"))
                .map_or(0, |n| n.trim().parse().unwrap());
            if read.len() >= end + 4 + length {
                return head;
            }
        }
        let n = tokio::time::timeout(PATIENCE, stream.read(&mut buf))
            .await
            .expect("the server answers")
            .unwrap();
        assert!(
            n > 0,
            "the connection closed mid-response: {:?}",
            String::from_utf8_lossy(&read)
        );
        read.extend_from_slice(&buf[..n]);
    }
}

/// Waits for the server to close `stream` (end of stream or a reset), failing if it sends
/// anything else or keeps it open past [`PATIENCE`].
async fn closed_by_server(stream: &mut TcpStream) -> Vec<u8> {
    let mut rest = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout(PATIENCE, stream.read(&mut buf)).await {
            Err(_) => panic!("the server kept the connection open"),
            Ok(Ok(0)) | Ok(Err(_)) => return rest,
            Ok(Ok(n)) => rest.extend_from_slice(&buf[..n]),
        }
    }
}

#[tokio::test]
async fn an_idle_connection_is_kept_for_as_long_as_configured_then_closed() {
    // Longer than actix-web's default of 5 s, as behind a load balancer whose idle timeout
    // is longer than that.
    let app = spawn_app_with(|c| c.http.keep_alive = Duration::from_secs(8)).await;
    let mut stream = connect(&app).await;
    stream.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut stream).await.starts_with("http/1.1 200"));
    // Idle past the default: the connection still serves the next request.
    tokio::time::sleep(Duration::from_secs(6)).await;
    stream.write_all(HEALTHZ).await.unwrap();
    let head = response(&mut stream).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(!head.contains("connection: close"), "{head}");
    // Then, idle for longer than the setting, it is closed without a word.
    assert_eq!(closed_by_server(&mut stream).await, b"");
}

#[tokio::test]
async fn a_short_keep_alive_closes_an_idle_connection() {
    let app = spawn_app_with(|c| c.http.keep_alive = Duration::from_secs(1)).await;
    let mut stream = connect(&app).await;
    stream.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut stream).await.starts_with("http/1.1 200"));
    // A request right after the first is served on the same connection.
    stream.write_all(HEALTHZ).await.unwrap();
    assert!(response(&mut stream).await.starts_with("http/1.1 200"));
    assert_eq!(closed_by_server(&mut stream).await, b"");
}

#[tokio::test]
async fn keep_alive_zero_closes_each_connection_after_its_response() {
    let app = spawn_app_with(|c| c.http.keep_alive = Duration::ZERO).await;
    let mut stream = connect(&app).await;
    stream.write_all(HEALTHZ).await.unwrap();
    let head = response(&mut stream).await;
    assert!(head.starts_with("http/1.1 200"), "{head}");
    assert!(head.contains("connection: close"), "{head}");
    assert_eq!(closed_by_server(&mut stream).await, b"");
}

#[tokio::test]
async fn a_client_that_does_not_finish_its_request_head_is_answered_408_and_disconnected() {
    let app = spawn_app_with(|c| c.http.request_timeout = Duration::from_millis(300)).await;
    let mut stream = connect(&app).await;
    // The request line and one header, never the blank line that ends the head.
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: payoutd.test\r\n")
        .await
        .unwrap();
    let answer = closed_by_server(&mut stream).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

#[tokio::test]
async fn a_client_within_the_request_deadline_is_served() {
    let app = spawn_app_with(|c| c.http.request_timeout = Duration::from_secs(15)).await;
    let mut stream = connect(&app).await;
    // The head in two parts, the second after actix-web's default deadline of 5 s but within
    // the one configured.
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: payoutd.test\r\n")
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_secs(6)).await;
    stream.write_all(b"\r\n").await.unwrap();
    assert!(response(&mut stream).await.starts_with("http/1.1 200"));
}
