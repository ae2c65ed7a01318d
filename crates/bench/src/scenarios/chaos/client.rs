//! A signed client of one server, and what one request got.

use std::time::Duration;

use serde_json::Value;

use crate::load::Credentials;

/// A signed client of one server.
#[derive(Clone)]
pub(super) struct Api {
    client: reqwest::Client,
    base: String,
}

/// What one request got.
#[derive(Debug, Clone)]
pub(super) enum Answer {
    /// An HTTP answer: status and body (JSON, or `null`).
    Http(u16, Value),
    /// No answer: the connection failed or timed out.
    Lost(String),
}

impl Api {
    pub(super) fn new(base: &str) -> anyhow::Result<Self> {
        Ok(Self {
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(15))
                .build()?,
            base: base.to_owned(),
        })
    }

    pub(super) async fn call(
        &self,
        key: &Credentials,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
    ) -> Answer {
        self.send(key, method, path, body, headers, key.sign_v1())
            .await
    }

    pub(super) async fn send(
        &self,
        key: &Credentials,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        headers: &[(&str, String)],
        signature: String,
    ) -> Answer {
        let mut request = self
            .client
            .request(method, format!("{}{path}", self.base))
            .header("x-api-key", &key.api_key)
            .header("signature", signature);
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", "application/json")
                .body(serde_json::to_vec(body).unwrap_or_default());
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                match response.bytes().await {
                    Ok(bytes) => Answer::Http(
                        status,
                        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
                    ),
                    Err(e) => Answer::Lost(e.to_string()),
                }
            }
            Err(e) => Answer::Lost(e.to_string()),
        }
    }

    /// A call that must answer 200; returns its payload.
    pub(super) async fn ok(
        &self,
        key: &Credentials,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<Value> {
        match self.call(key, method, path, body, &[]).await {
            Answer::Http(200, body) => Ok(body["payload"].clone()),
            other => anyhow::bail!("{path} answered {other:?}"),
        }
    }
}
