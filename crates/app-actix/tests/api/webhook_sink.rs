//! A webhook sink for tests: a real local HTTP server that plays a subaccount's postback
//! endpoint, records every webhook it is sent and answers with scripted statuses (the last one
//! repeats). Not to be confused with receivers, the payees of `/api/receiver`.

use std::collections::VecDeque;
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix_web::web::{Bytes, Data};
use actix_web::{App, HttpRequest, HttpResponse, HttpServer};

/// One request the sink got.
#[derive(Debug, Clone)]
pub struct ReceivedWebhook {
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl ReceivedWebhook {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

#[derive(Default)]
struct Script {
    statuses: VecDeque<u16>,
    received: Vec<ReceivedWebhook>,
}

#[derive(Clone)]
pub struct WebhookSink {
    pub url: String,
    script: Arc<Mutex<Script>>,
}

/// A scripted status of 0 means: never answer (the sender's timeout ends the attempt).
async fn handle(req: HttpRequest, body: Bytes, script: Data<Mutex<Script>>) -> HttpResponse {
    let status = record(&req, body, &script);
    if status == 0 {
        tokio::time::sleep(Duration::from_secs(600)).await;
    }
    HttpResponse::build(actix_web::http::StatusCode::from_u16(status.max(200)).unwrap()).finish()
}

/// Records the request and returns the scripted status (the last one repeats).
fn record(req: &HttpRequest, body: Bytes, script: &Mutex<Script>) -> u16 {
    let mut script = script.lock().unwrap();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    script.received.push(ReceivedWebhook { headers, body });
    let status = if script.statuses.len() > 1 {
        script.statuses.pop_front()
    } else {
        script.statuses.front().copied()
    };
    status.unwrap_or(200)
}

impl WebhookSink {
    /// Starts a sink answering `statuses` in turn (the last repeats).
    pub fn start(statuses: &[u16]) -> Self {
        let script = Arc::new(Mutex::new(Script {
            statuses: statuses.iter().copied().collect(),
            received: Vec::new(),
        }));
        let data = Data::from(script.clone());
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/hooks",
            listener.local_addr().unwrap().port()
        );
        let server = HttpServer::new(move || {
            App::new()
                .app_data(data.clone())
                .default_service(actix_web::web::to(handle))
        })
        .workers(1)
        .listen(listener)
        .unwrap()
        .run();
        tokio::spawn(server);
        Self { url, script }
    }

    pub fn received(&self) -> Vec<ReceivedWebhook> {
        self.script.lock().unwrap().received.clone()
    }

    /// Waits until at least `n` requests arrived (or `timeout`), then returns them all.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<ReceivedWebhook> {
        let deadline = tokio::time::Instant::now() + timeout;
        while self.received().len() < n && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        self.received()
    }
}
