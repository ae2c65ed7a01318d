//! Real HTTP receivers for the sender's tests: hyper 1 servers on 127.0.0.1, port 0, that
//! answer from a script and record every connection and request.

#![allow(dead_code)]

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

/// One answer of a receiver.
#[derive(Debug, Clone)]
pub enum Reply {
    /// Answer with this status, headers and body.
    Status {
        status: u16,
        headers: Vec<(String, String)>,
        body: String,
    },
    /// Read the request, then never answer.
    Hang,
}

impl Reply {
    /// A status with an empty body and no extra header.
    pub fn status(status: u16) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// A status with a body.
    pub fn with_body(status: u16, body: impl Into<String>) -> Self {
        Self::Status {
            status,
            headers: Vec::new(),
            body: body.into(),
        }
    }

    /// A status with one header.
    pub fn with_header(status: u16, name: &str, value: &str) -> Self {
        Self::Status {
            status,
            headers: vec![(name.to_owned(), value.to_owned())],
            body: String::new(),
        }
    }
}

/// A request as the receiver saw it.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    pub path: String,
    /// Every header, names lower-case, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Recorded {
    /// The values of header `name`.
    pub fn header_values(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// The single value of header `name`.
    pub fn header(&self, name: &str) -> &str {
        let values = self.header_values(name);
        assert_eq!(values.len(), 1, "header {name}: {values:?}");
        values[0]
    }
}

#[derive(Default)]
struct State {
    script: Mutex<Vec<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    connections: AtomicUsize,
}

/// A running receiver. It stops with the test's runtime.
pub struct Receiver {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Receiver {
    /// Starts a receiver that gives the replies of `script` in order, then repeats the last.
    pub async fn start(script: Vec<Reply>) -> Self {
        assert!(!script.is_empty());
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            script: Mutex::new(script),
            ..State::default()
        });
        let accepting = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                accepting.connections.fetch_add(1, Ordering::SeqCst);
                let serving = Arc::clone(&accepting);
                tokio::spawn(async move {
                    let service = service_fn(move |request| handle(Arc::clone(&serving), request));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Self { addr, state }
    }

    /// `http://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.addr.port()
    }

    /// `http://localhost:<port><path>`: the same receiver, through DNS.
    pub fn localhost_url(&self, path: &str) -> String {
        format!("http://localhost:{}{path}", self.addr.port())
    }

    /// Every request received so far.
    pub fn requests(&self) -> Vec<Recorded> {
        self.state.requests.lock().unwrap().clone()
    }

    /// How many TCP connections were accepted.
    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    /// Waits a moment for stray connections, so that "none arrived" is meaningful.
    pub async fn settle() {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    let headers = parts
        .headers
        .iter()
        .map(|(n, v)| {
            (
                n.as_str().to_owned(),
                String::from_utf8_lossy(v.as_bytes()).into_owned(),
            )
        })
        .collect();
    state.requests.lock().unwrap().push(Recorded {
        method: parts.method.to_string(),
        path: parts.uri.path().to_owned(),
        headers,
        body,
    });
    let reply = {
        let mut script = state.script.lock().unwrap();
        if script.len() > 1 {
            script.remove(0)
        } else {
            script[0].clone()
        }
    };
    match reply {
        Reply::Hang => std::future::pending().await,
        Reply::Status {
            status,
            headers,
            body,
        } => {
            let mut response = Response::new(Full::new(Bytes::from(body)));
            *response.status_mut() = StatusCode::from_u16(status).unwrap();
            for (name, value) in headers {
                response.headers_mut().insert(
                    hyper::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    hyper::header::HeaderValue::from_str(&value).unwrap(),
                );
            }
            Ok(response)
        }
    }
}
