//! [`HttpWebhookSender`]: the core's [`WebhookSender`] port over HTTP (reqwest on rustls with
//! the `ring` provider).

use std::error::Error as _;
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use domain::delivery::{DeliveryAttempt, DeliveryOutcome, WebhookDelivery, WebhookSender};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue, RETRY_AFTER};
use reqwest::{Client, Response, StatusCode, redirect};

use crate::config::WebhookSenderConfig;
use crate::guard::{self, GuardedResolver, TargetRefused};
use crate::response::{self, MAX_BODY_BYTES};
use crate::signing::{self, WebhookKey};

/// Why the sender could not be built.
#[derive(Debug, thiserror::Error)]
pub enum SenderBuildError {
    /// The HTTP client rejected the configuration (for example a `user_agent` that is not a
    /// valid header value) or could not initialise TLS.
    #[error("cannot build the webhook HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// Delivers webhooks over HTTP. One instance holds one connection pool; share it.
#[derive(Debug, Clone)]
pub struct HttpWebhookSender {
    client: Client,
    config: WebhookSenderConfig,
}

impl HttpWebhookSender {
    /// Builds the sender and its HTTP client: redirects off, no proxy, the configured
    /// timeouts, and DNS through the SSRF guard.
    pub fn new(config: WebhookSenderConfig) -> Result<Self, SenderBuildError> {
        crate::install_crypto_provider();
        let client = Client::builder()
            .redirect(redirect::Policy::none())
            // A proxy would resolve the host itself, out of the guard's sight.
            .no_proxy()
            .dns_resolver(GuardedResolver::new(config.allow_private_targets))
            .timeout(config.timeout)
            .connect_timeout(config.connect_timeout())
            .user_agent(config.user_agent.as_str())
            .build()
            .map_err(SenderBuildError::Client)?;
        Ok(Self { client, config })
    }

    /// The configuration the sender was built with.
    pub fn config(&self) -> &WebhookSenderConfig {
        &self.config
    }

    async fn attempt(&self, delivery: &WebhookDelivery) -> DeliveryOutcome {
        let url = match guard::check_url(&delivery.url, self.config.allow_private_targets) {
            Ok(url) => url,
            Err(refused) => return refused_because(&refused),
        };
        let headers = match signed_headers(delivery) {
            Ok(headers) => headers,
            Err(reason) => return DeliveryOutcome::Refused { reason },
        };
        let sent = self
            .client
            .post(url)
            .headers(headers)
            .body(delivery.body.clone())
            .send()
            .await;
        match sent {
            Ok(response) => self.outcome_of(response, delivery).await,
            Err(error) => self.outcome_of_error(&error),
        }
    }

    async fn outcome_of(&self, response: Response, delivery: &WebhookDelivery) -> DeliveryOutcome {
        let status = response.status();
        if status.is_success() {
            return DeliveryOutcome::Delivered {
                status: status.as_u16(),
            };
        }
        if status == StatusCode::GONE {
            return DeliveryOutcome::Gone;
        }
        let retry_after = response
            .headers()
            .get(RETRY_AFTER)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| response::parse_retry_after(value, SystemTime::now()));
        let body = read_prefix(response).await;
        let secrets: Vec<&str> = delivery
            .secrets
            .iter()
            .map(|s| s.expose().as_str())
            .collect();
        let mut error = response::body_excerpt(&body, &secrets);
        if error.is_empty() {
            error = format!("HTTP {status}");
            if status.is_redirection() {
                error.push_str(" (redirects are not followed)");
            }
        }
        DeliveryOutcome::Failed {
            status: Some(status.as_u16()),
            retry_after,
            error,
        }
    }

    fn outcome_of_error(&self, error: &reqwest::Error) -> DeliveryOutcome {
        if let Some(refused) = guard_refusal(error) {
            return refused_because(refused);
        }
        let description = if error.is_timeout() {
            format!("timed out (limit {} ms)", self.config.timeout.as_millis())
        } else {
            describe(error)
        };
        DeliveryOutcome::Failed {
            status: None,
            retry_after: None,
            error: response::truncate(&description),
        }
    }
}

#[async_trait]
impl WebhookSender for HttpWebhookSender {
    async fn send(&self, delivery: &WebhookDelivery) -> DeliveryAttempt {
        let started = Instant::now();
        let outcome = self.attempt(delivery).await;
        DeliveryAttempt {
            outcome,
            latency: started.elapsed(),
        }
    }
}

/// `content-type` and the Standard Webhooks headers; the `user-agent` is the client's.
fn signed_headers(delivery: &WebhookDelivery) -> Result<HeaderMap, String> {
    if delivery.secrets.is_empty() {
        return Err("no webhook secret to sign with".to_owned());
    }
    let keys = delivery
        .secrets
        .iter()
        .enumerate()
        .map(|(index, secret)| {
            // The position, never the secret, says which one is wrong.
            WebhookKey::parse(secret.expose())
                .map_err(|e| format!("webhook secret #{} is unusable: {e}", index + 1))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let id = delivery.event_id.to_string();
    let timestamp = delivery.attempted_at.timestamp();
    let signature = signing::signature_header(&keys, &id, timestamp, &delivery.body);

    let mut headers = HeaderMap::new();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    let unusable = |name: &str| format!("the {name} header value is unusable");
    headers.insert(
        "webhook-id",
        HeaderValue::from_str(&id).map_err(|_| unusable("webhook-id"))?,
    );
    headers.insert("webhook-timestamp", HeaderValue::from(timestamp));
    headers.insert(
        "webhook-signature",
        HeaderValue::from_str(&signature).map_err(|_| unusable("webhook-signature"))?,
    );
    Ok(headers)
}

/// Up to [`MAX_BODY_BYTES`] of the body; a body that fails midway yields what arrived.
async fn read_prefix(mut response: Response) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < MAX_BODY_BYTES {
        match response.chunk().await {
            Ok(Some(chunk)) => body.extend_from_slice(&chunk),
            Ok(None) | Err(_) => break,
        }
    }
    body.truncate(MAX_BODY_BYTES);
    body
}

fn refused_because(refused: &TargetRefused) -> DeliveryOutcome {
    DeliveryOutcome::Refused {
        reason: refused.to_string(),
    }
}

/// The guard's refusal, when the resolver is why the request failed.
fn guard_refusal(error: &reqwest::Error) -> Option<&TargetRefused> {
    let mut source = error.source();
    while let Some(cause) = source {
        if let Some(refused) = cause.downcast_ref::<TargetRefused>() {
            return Some(refused);
        }
        source = cause.source();
    }
    None
}

/// The error and its causes, without the URL (which may carry credentials).
fn describe(error: &reqwest::Error) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut source = error.source();
    let top = if error.is_connect() {
        "could not connect"
    } else {
        "request failed"
    };
    parts.push(top.to_owned());
    while let Some(cause) = source {
        let text = cause.to_string();
        if parts.last() != Some(&text) {
            parts.push(text);
        }
        source = cause.source();
    }
    parts.join(": ")
}
