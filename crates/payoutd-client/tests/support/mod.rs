//! A scripted HTTP server on 127.0.0.1, port 0, that records every request: the stand-in for
//! payoutd in the client's own tests (the live server is exercised by app-actix's tests).

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use payoutd_client::{Client, RetryPolicy, Uuid};
use tokio::net::TcpListener;

/// The subaccount, key and secret the mock's clients use.
pub const SUBACCOUNT: &str = "cea098be-aaf9-4c64-ae5c-8aae94da812e";
pub const SECRET: &str = "sk_mock_secret";

/// One answer of the mock.
#[derive(Debug, Clone)]
pub enum Reply {
    /// This status, headers and JSON body.
    Answer {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// Read the request, then close the connection without answering.
    Drop,
}

impl Reply {
    pub fn ok(payload: serde_json::Value) -> Self {
        Self::json(
            200,
            serde_json::json!({"message": "OK", "payload": payload}),
        )
    }

    pub fn json(status: u16, body: serde_json::Value) -> Self {
        Self::Answer {
            status,
            headers: vec![("x-request-id", "req-mock".to_owned())],
            body: body.to_string(),
        }
    }

    pub fn refusal(status: u16, code: &str) -> Self {
        Self::json(
            status,
            serde_json::json!({"message": "Request failed",
                "error": [{"code": code, "message": "refused by the mock"}]}),
        )
    }

    pub fn header(mut self, name: &'static str, value: &str) -> Self {
        if let Self::Answer { headers, .. } = &mut self {
            headers.push((name, value.to_owned()));
        }
        self
    }
}

/// A request as the mock saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    /// The request line's path and query, exactly as sent.
    pub path_and_query: String,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
    pub at: std::time::Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
}

struct State {
    script: Mutex<Vec<Reply>>,
    seen: Mutex<Vec<Seen>>,
}

/// A running mock; it stops with the test's runtime.
pub struct Mock {
    addr: SocketAddr,
    state: Arc<State>,
}

impl Mock {
    /// Answers with the replies of `script` in order; past its end, 500 `SYS500`.
    pub async fn start(script: Vec<Reply>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(State {
            script: Mutex::new(script.into_iter().rev().collect()),
            seen: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&state);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
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

    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A client of the mock with quick retries (the waits are not what these tests measure,
    /// except `retry-after`, which the client honours whatever its backoff).
    pub fn client(&self) -> Client {
        Client::builder(
            &self.base_url(),
            &api_key(),
            SECRET,
            SUBACCOUNT.parse::<Uuid>().unwrap(),
        )
        .retry(RetryPolicy {
            initial_backoff: std::time::Duration::from_millis(5),
            ..RetryPolicy::default()
        })
        .build()
        .unwrap()
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }
}

/// An API key of this test process only: nonces are counted per key in a process, and each
/// test binary is its own process.
pub fn api_key() -> String {
    "pk_0123456789abcdef0123456789abcdef".to_owned()
}

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::io::Error> {
    let (parts, body) = request.into_parts();
    let body = body
        .collect()
        .await
        .map(|b| b.to_bytes().to_vec())
        .unwrap_or_default();
    state.seen.lock().unwrap().push(Seen {
        method: parts.method.to_string(),
        path_and_query: parts
            .uri
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_default(),
        headers: parts.headers,
        body,
        at: std::time::Instant::now(),
    });
    let reply = state
        .script
        .lock()
        .unwrap()
        .pop()
        .unwrap_or_else(|| Reply::refusal(500, "SYS500"));
    match reply {
        // An error from the service makes hyper close the connection without a response.
        Reply::Drop => Err(std::io::Error::other("dropped by the script")),
        Reply::Answer {
            status,
            headers,
            body,
        } => {
            let mut response = Response::builder()
                .status(status)
                .header("content-type", "application/json");
            for (name, value) in headers {
                response = response.header(name, value);
            }
            Ok(response.body(Full::new(Bytes::from(body))).unwrap())
        }
    }
}

/// The server's own authentication (domain's `AuthService`, the rule payoutd runs) over
/// `request` as it arrived, by the real clock, for a key of `policy` with [`SECRET`]:
/// `Ok` when payoutd would accept it, else the `AUTH1xx` code it would answer.
pub async fn server_verdict(
    policy: domain::auth::SignaturePolicy,
    request: &Seen,
) -> Result<(), domain::ErrorCode> {
    server_verdict_of(
        policy,
        &domain::auth::SignedRequest {
            api_key: request.header("x-api-key"),
            signature: request.header("signature"),
            signature_version: request.header("x-signature-version"),
            method: &request.method,
            path_and_query: &request.path_and_query,
            body: &request.body,
            carries_idempotency_key: request.header("idempotency-key").is_some(),
        },
    )
    .await
}

/// [`server_verdict`] of a request given by its parts.
pub async fn server_verdict_of(
    policy: domain::auth::SignaturePolicy,
    request: &domain::auth::SignedRequest<'_>,
) -> Result<(), domain::ErrorCode> {
    use domain::auth::ports::MockCredentialStore;
    use domain::auth::{AuthError, AuthService, Credential};
    use domain::ids::{ApiKeyId, SubaccountId};
    use domain::masking::Secret;
    use domain::ports::MockClock;

    let mut store = MockCredentialStore::new();
    store.expect_find_credential().returning(move |key| {
        Ok((key == api_key()).then(|| Credential {
            id: ApiKeyId::from_uuid(Uuid::from_u128(1)),
            subaccount_id: SubaccountId::from_uuid(SUBACCOUNT.parse().unwrap_or_default()),
            secret: Secret::new(SECRET.to_owned()),
            signature_policy: policy,
        }))
    });
    // `verify` stops before recording a POST's nonce: nothing is stored here.
    store.expect_record_nonce().never();
    let mut clock = MockClock::new();
    clock.expect_now().returning(chrono::Utc::now);
    let service = AuthService::new(
        Arc::new(store),
        Arc::new(clock),
        chrono::Duration::seconds(300),
    );
    match service.verify(request).await {
        Ok(_) => Ok(()),
        Err(AuthError::Rejected(code)) => Err(code),
        Err(AuthError::Port(error)) => panic!("the mock store failed: {error}"),
    }
}
