//! A webhook receiver inside the bench process: a hyper 1 HTTP/1.1 server on `127.0.0.1:0`
//! that answers every request `200` at once and records, per `webhook-id`, when it first
//! arrived and how many times.
//!
//! A sample of the requests (the first, then every `sample_every`-th) is checked the way a
//! merchant checks it, with the client crate's [`Verifier`] rather than payoutd's signing code:
//! `webhook-signature` must hold a `v1,` entry equal to `base64(HMAC-SHA256(key, id "." ts "."
//! body))`, the timestamp must be within five minutes, and the body must be an event whose
//! `event_id` is the `webhook-id`.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use anyhow::Context;
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HeaderMap;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use payoutd_client::webhooks::Verifier;
use tokio::net::TcpListener;
use uuid::Uuid;

/// When and how often one event arrived.
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// When its first request reached the handler (before the body was read).
    pub first: Instant,
    /// Requests that carried its id.
    pub count: u32,
}

/// What the receiver has seen so far.
#[derive(Debug, Clone, Default)]
pub struct ReceiverStats {
    /// Requests received.
    pub requests: u64,
    /// Requests without a `webhook-id` that is a UUID.
    pub malformed: u64,
    /// Signatures checked.
    pub signatures_checked: u64,
    /// Checked requests that failed (signature, timestamp or body).
    pub signatures_bad: u64,
    /// Why the first bad one was bad.
    pub first_bad: Option<String>,
}

#[derive(Default)]
struct Shared {
    arrivals: Mutex<HashMap<Uuid, Arrival>>,
    requests: AtomicU64,
    malformed: AtomicU64,
    checked: AtomicU64,
    bad: AtomicU64,
    first_bad: Mutex<Option<String>>,
    /// Checks signatures with the subaccount's `whsec_` secret.
    verifier: OnceLock<Verifier>,
    sample_every: u64,
}

/// A running receiver; its accept loop stops on drop.
pub struct Receiver {
    /// `http://127.0.0.1:<port>/webhook`.
    pub url: String,
    shared: Arc<Shared>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Receiver {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Receiver {
    /// Binds `127.0.0.1:0` and starts accepting. Every `sample_every`-th request (and the
    /// first) has its signature checked once [`Receiver::set_secret`] has been called.
    pub async fn start(sample_every: u64) -> anyhow::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("binding the webhook receiver")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            sample_every: sample_every.max(1),
            ..Shared::default()
        });
        let accepting = Arc::clone(&shared);
        let accept = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let shared = Arc::clone(&accepting);
                tokio::spawn(async move {
                    let service = service_fn(move |request| handle(Arc::clone(&shared), request));
                    // A connection the sender drops at shutdown ends with an error; nothing
                    // to record.
                    let _ = http1::Builder::new()
                        .keep_alive(true)
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(Self {
            url: format!("http://{addr}/webhook"),
            shared,
            accept,
        })
    }

    /// The `whsec_…` secret that `payoutd admin set-webhook` printed.
    pub fn set_secret(&self, secret: &str) -> anyhow::Result<()> {
        let verifier = Verifier::new([secret]).context("the webhook secret")?;
        self.shared
            .verifier
            .set(verifier)
            .map_err(|_| anyhow::anyhow!("the receiver's secret is set already"))
    }

    /// Distinct event ids received so far.
    pub fn distinct(&self) -> usize {
        self.arrivals().len()
    }

    /// The arrival of each of `ids` (`None`: not received).
    pub fn arrivals_of(&self, ids: &[Uuid]) -> Vec<Option<Arrival>> {
        let arrivals = self.arrivals();
        ids.iter().map(|id| arrivals.get(id).copied()).collect()
    }

    /// Waits until `target` distinct ids have arrived. Fails when none arrives for `stall`.
    pub async fn wait_for_distinct(&self, target: usize, stall: Duration) -> anyhow::Result<()> {
        let mut seen = self.distinct();
        let mut progress = Instant::now();
        while seen < target {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let now = self.distinct();
            if now > seen {
                seen = now;
                progress = Instant::now();
            } else if progress.elapsed() > stall {
                anyhow::bail!(
                    "the receiver has {seen} of {target} events and got nothing new for {stall:?}"
                );
            }
        }
        Ok(())
    }

    /// Counters so far.
    pub fn stats(&self) -> ReceiverStats {
        let shared = &self.shared;
        ReceiverStats {
            requests: shared.requests.load(Ordering::Relaxed),
            malformed: shared.malformed.load(Ordering::Relaxed),
            signatures_checked: shared.checked.load(Ordering::Relaxed),
            signatures_bad: shared.bad.load(Ordering::Relaxed),
            first_bad: shared
                .first_bad
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .clone(),
        }
    }

    fn arrivals(&self) -> std::sync::MutexGuard<'_, HashMap<Uuid, Arrival>> {
        self.shared
            .arrivals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

async fn handle(
    shared: Arc<Shared>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let arrived = Instant::now();
    let ordinal = shared.requests.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = request.into_parts();
    // Always read the body: the connection is kept alive for the next request.
    let body = body
        .collect()
        .await
        .map(|collected| collected.to_bytes())
        .unwrap_or_default();
    let id = parts
        .headers
        .get("webhook-id")
        .and_then(|value| value.to_str().ok())
        .and_then(|value| Uuid::parse_str(value).ok());
    match id {
        Some(id) => {
            let mut arrivals = shared
                .arrivals
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            arrivals
                .entry(id)
                .or_insert(Arrival {
                    first: arrived,
                    count: 0,
                })
                .count += 1;
        }
        None => {
            shared.malformed.fetch_add(1, Ordering::Relaxed);
        }
    }
    if ordinal.is_multiple_of(shared.sample_every)
        && let Some(verifier) = shared.verifier.get()
    {
        shared.checked.fetch_add(1, Ordering::Relaxed);
        if let Err(why) = check(verifier, &parts.headers, &body) {
            shared.bad.fetch_add(1, Ordering::Relaxed);
            let mut first = shared
                .first_bad
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            first.get_or_insert(why);
        }
    }
    let mut response = Response::new(Full::new(Bytes::new()));
    *response.status_mut() = StatusCode::OK;
    Ok(response)
}

/// Checks one delivery as docs/WEBHOOKS.md tells a client to.
fn check(verifier: &Verifier, headers: &HeaderMap, body: &[u8]) -> Result<(), String> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|value| value.to_str().ok())
            .ok_or_else(|| format!("no {name} header"))
    };
    let id = header("webhook-id")?;
    let event = verifier
        .verify(
            id,
            header("webhook-timestamp")?,
            header("webhook-signature")?,
            body,
        )
        .map_err(|rejected| format!("{id}: {rejected}"))?;
    if event.event_id != id {
        return Err(format!("the body's event_id is not the webhook-id {id}"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use hmac::{KeyInit, Mac};
    use std::time::{SystemTime, UNIX_EPOCH};

    const SECRET: &str = "whsec_MDEyMzQ1Njc4OWFiY2RlZg==";

    /// Signs as payoutd does (docs/WEBHOOKS.md): the server's side, which the receiver checks.
    fn signed(secret: &str, id: &str, ts: u64, body: &[u8]) -> String {
        let key = STANDARD
            .decode(secret.trim_start_matches("whsec_"))
            .unwrap_or_default();
        let mut mac = match hmac::Hmac::<sha2::Sha256>::new_from_slice(&key) {
            Ok(mac) => mac,
            Err(e) => panic!("{e}"),
        };
        mac.update(format!("{id}.{ts}.").as_bytes());
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    fn headers(id: &str, ts: u64, signature: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in [
            ("webhook-id", id.to_owned()),
            ("webhook-timestamp", ts.to_string()),
            ("webhook-signature", signature.to_owned()),
        ] {
            if let Ok(value) = value.parse() {
                headers.insert(name, value);
            }
        }
        headers
    }

    fn event(id: &str) -> String {
        format!(
            r#"{{"event":"payoutUpdated","event_id":"{id}","subaccount_id":"s","sequence":1,"timestamp":1}}"#
        )
    }

    fn now() -> u64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    }

    #[test]
    fn a_good_signature_passes_and_a_tampered_body_another_key_or_a_stale_time_fail() {
        let Ok(verifier) = Verifier::new([SECRET]) else {
            panic!("the test secret is whsec_ and base64");
        };
        let id = Uuid::from_u128(7).to_string();
        let body = event(&id);
        let ts = now();
        let good = signed(SECRET, &id, ts, body.as_bytes());
        // Several entries, as during a secret rotation: any one will do.
        let both = headers(&id, ts, &format!("v1,AAAA {good}"));
        assert_eq!(check(&verifier, &both, body.as_bytes()), Ok(()));

        let tampered = body.replace("payoutUpdated", "receiverCreated");
        assert!(check(&verifier, &both, tampered.as_bytes()).is_err());

        let other = signed("whsec_YW5vdGhlciBrZXk=", &id, ts, body.as_bytes());
        assert!(check(&verifier, &headers(&id, ts, &other), body.as_bytes()).is_err());

        let stale = ts - 600;
        let old = signed(SECRET, &id, stale, body.as_bytes());
        assert!(check(&verifier, &headers(&id, stale, &old), body.as_bytes()).is_err());
    }

    #[test]
    fn a_genuine_body_naming_another_event_id_fails() {
        let Ok(verifier) = Verifier::new([SECRET]) else {
            panic!("the test secret is whsec_ and base64");
        };
        let id = Uuid::from_u128(7).to_string();
        let body = event(&Uuid::from_u128(8).to_string());
        let ts = now();
        let good = signed(SECRET, &id, ts, body.as_bytes());
        let why = check(&verifier, &headers(&id, ts, &good), body.as_bytes());
        assert_eq!(
            why,
            Err(format!("the body's event_id is not the webhook-id {id}"))
        );
    }

    #[test]
    fn a_missing_header_is_named() {
        let Ok(verifier) = Verifier::new([SECRET]) else {
            panic!("the test secret is whsec_ and base64");
        };
        assert_eq!(
            check(&verifier, &HeaderMap::new(), b"{}"),
            Err("no webhook-id header".to_owned())
        );
    }
}
