//! The client: configuration, one signed exchange with retries, and the answer read from its
//! envelope.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap, RETRY_AFTER};
use reqwest::{Method, Url};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;

use crate::codes::ErrorCode;
use crate::error::{ApiError, Error, ErrorItem};
use crate::signing::{SignatureVersion, SignedRequest, Signer};

/// The request header of an idempotency key.
pub const IDEMPOTENCY_KEY_HEADER: &str = "idempotency-key";
/// The response header set on a replayed answer (`true`).
pub const REPLAYED_HEADER: &str = "idempotent-replayed";
/// The response header that identifies a request in the server's log.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// When and how often a failed request is sent again.
///
/// A request is retried, with the same idempotency key and a fresh signature, when it got no
/// answer (connection refused or reset, timeout), a 429 (after its `retry-after`), a 503, or
/// a 409 `IDEM001` (an earlier attempt with the same key is still running). Every POST carries
/// an idempotency key, so a retry never runs a request twice: the server replays the first
/// attempt's answer if it was written. Anything else is answered at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1: never retry).
    pub max_attempts: u32,
    /// The wait before the first retry; it doubles with each retry (with jitter: each wait is
    /// between half and all of its step).
    pub initial_backoff: Duration,
    /// The longest wait between two attempts, however many came before.
    pub max_backoff: Duration,
    /// The longest `retry-after` honoured; a 429 asking for more is returned as it is.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    /// Four attempts, waits of about 0.25, 0.5 and 1 s (8 s at most), `retry-after` up to 60 s.
    fn default() -> Self {
        Self {
            max_attempts: 4,
            initial_backoff: Duration::from_millis(250),
            max_backoff: Duration::from_secs(8),
            max_retry_after: Duration::from_secs(60),
        }
    }
}

impl RetryPolicy {
    /// One attempt, no retry.
    pub fn never() -> Self {
        Self {
            max_attempts: 1,
            ..Self::default()
        }
    }

    /// The wait before retry number `retry` (1 for the first), with jitter from `random`.
    fn backoff(&self, retry: u32, random: u64) -> Duration {
        let step = self
            .initial_backoff
            .saturating_mul(
                1_u32
                    .checked_shl(retry.saturating_sub(1))
                    .unwrap_or(u32::MAX),
            )
            .min(self.max_backoff);
        let half = step / 2;
        let spread = u64::try_from((step - half).as_micros()).unwrap_or(u64::MAX);
        half + Duration::from_micros(random % spread.max(1))
    }
}

/// Configures a [`Client`]; made by [`Client::builder`].
#[derive(Debug, Clone)]
pub struct ClientBuilder {
    base_url: String,
    subaccount_id: Uuid,
    signer: Signer,
    get_signature: SignatureVersion,
    post_signature: SignatureVersion,
    retry: RetryPolicy,
    timeout: Duration,
    http: Option<reqwest::Client>,
}

impl ClientBuilder {
    /// Signs GETs with `version` (default v2; v1 also works under the default signature
    /// policy, not under `v2`).
    pub fn get_signature(mut self, version: SignatureVersion) -> Self {
        self.get_signature = version;
        self
    }

    /// Signs POSTs with `version` (default v2). v1 works only for a subaccount whose operator
    /// set the signature policy `any` (docs/API.md, "Signature policies").
    pub fn post_signature(mut self, version: SignatureVersion) -> Self {
        self.post_signature = version;
        self
    }

    /// The retry policy (default [`RetryPolicy::default`]).
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.retry = policy;
        self
    }

    /// How long one attempt may take, from sending to the whole answer (default 30 s).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// Sends through `http` (your own reqwest client: proxies, TLS roots, connection pool)
    /// instead of one built here; [`ClientBuilder::timeout`] still applies to each attempt.
    pub fn http_client(mut self, http: reqwest::Client) -> Self {
        self.http = Some(http);
        self
    }

    /// The client.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the base URL is not an `http` or `https` URL, and
    /// [`Error::Transport`] when the HTTP client cannot be built.
    pub fn build(self) -> Result<Client, Error> {
        let base = Url::parse(&self.base_url)
            .map_err(|e| Error::Invalid(format!("base URL `{}`: {e}", self.base_url)))?;
        if !matches!(base.scheme(), "http" | "https") || base.host_str().is_none() {
            return Err(Error::Invalid(format!(
                "base URL `{}` must be http:// or https:// with a host",
                self.base_url
            )));
        }
        let http = match self.http {
            Some(http) => http,
            None => {
                install_crypto_provider();
                reqwest::Client::builder()
                    .user_agent(concat!("payoutd-client/", env!("CARGO_PKG_VERSION")))
                    // Idle connections are given up before a server's usual keep-alive (5 s)
                    // ends them, so a request is not sent on a connection being closed.
                    .pool_idle_timeout(Duration::from_secs(4))
                    .build()
                    .map_err(Error::Transport)?
            }
        };
        Ok(Client {
            inner: Arc::new(Inner {
                http,
                base: self.base_url.trim_end_matches('/').to_owned(),
                subaccount_id: self.subaccount_id,
                signer: self.signer,
                get_signature: self.get_signature,
                post_signature: self.post_signature,
                retry: self.retry,
                timeout: self.timeout,
            }),
        })
    }
}

/// Installs rustls's `ring` provider as the process default, unless one is installed already:
/// reqwest is built here with `rustls-no-provider` (no aws-lc, no OpenSSL).
fn install_crypto_provider() {
    // Err only means another provider is installed already, which is as good.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// A client of one subaccount's API key. Cheap to clone (clones share the connection pool and
/// the nonce counter); use one per API key for the life of the process.
///
/// ```no_run
/// # async fn run() -> Result<(), payoutd_client::Error> {
/// use payoutd_client::{Asset, Client};
///
/// let subaccount = "cea098be-aaf9-4c64-ae5c-8aae94da812e".parse().expect("a UUID");
/// let client = Client::new("http://127.0.0.1:8080", "pk_…", "sk_…", subaccount)?;
/// let balance = client.get_balance(Asset::Aud).await?;
/// println!("{} cents available", balance.available);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    http: reqwest::Client,
    base: String,
    subaccount_id: Uuid,
    signer: Signer,
    get_signature: SignatureVersion,
    post_signature: SignatureVersion,
    retry: RetryPolicy,
    timeout: Duration,
}

/// What came back from one exchange.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Vec<u8>,
}

impl Answer {
    /// The refusal this answer holds (any status but 2xx).
    fn refusal(&self) -> ApiError {
        #[derive(Deserialize)]
        struct Failure {
            message: Option<String>,
            #[serde(default)]
            error: Vec<ErrorItem>,
            payload: Option<serde_json::Value>,
        }
        let header = |name: &str| {
            self.headers
                .get(name)
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let retry_after = header(RETRY_AFTER.as_str())
            .and_then(|seconds| seconds.trim().parse::<u64>().ok())
            .map(Duration::from_secs);
        let (message, errors, payload) = match serde_json::from_slice::<Failure>(&self.body) {
            Ok(failure) => (
                failure
                    .message
                    .unwrap_or_else(|| format!("HTTP {}", self.status)),
                failure.error,
                failure.payload.filter(|payload| !payload.is_null()),
            ),
            // Not the envelope (a proxy's page, say): say what it was, briefly.
            Err(_) => (
                format!(
                    "HTTP {}: {}",
                    self.status,
                    String::from_utf8_lossy(&self.body[..self.body.len().min(200)])
                ),
                Vec::new(),
                None,
            ),
        };
        ApiError {
            status: self.status,
            message,
            errors,
            request_id: header(REQUEST_ID_HEADER),
            retry_after,
            payload,
        }
    }

    /// The answer's JSON, as `T`.
    fn json<T: DeserializeOwned>(&self) -> Result<T, Error> {
        serde_json::from_slice(&self.body).map_err(|e| Error::Decode {
            status: self.status,
            reason: e.to_string(),
        })
    }

    /// The `payload` of a success envelope, or the refusal.
    pub(crate) fn payload<T: DeserializeOwned>(self) -> Result<T, Error> {
        #[derive(Deserialize)]
        struct Success<T> {
            payload: T,
        }
        if (200..300).contains(&self.status) {
            Ok(self.json::<Success<T>>()?.payload)
        } else {
            Err(self.refusal().into())
        }
    }

    /// A page of a list: `payload` and `lastkey`.
    pub(crate) fn page<T: DeserializeOwned>(self) -> Result<crate::Page<T>, Error> {
        #[derive(Deserialize)]
        struct Listing<T> {
            payload: Vec<T>,
            lastkey: Option<String>,
        }
        if (200..300).contains(&self.status) {
            let listing = self.json::<Listing<T>>()?;
            Ok(crate::Page {
                items: listing.payload,
                lastkey: listing.lastkey.filter(|key| !key.is_empty()),
            })
        } else {
            Err(self.refusal().into())
        }
    }

    /// The whole body as `T` (verify answers without an envelope), or the refusal.
    pub(crate) fn bare<T: DeserializeOwned>(self) -> Result<T, Error> {
        if (200..300).contains(&self.status) {
            self.json()
        } else {
            Err(self.refusal().into())
        }
    }
}

/// A POST ready to send: `.await` it, or first give it your own idempotency key or signature
/// version.
///
/// ```no_run
/// # async fn run(client: payoutd_client::Client, payout: payoutd_client::NewPayout) -> Result<(), payoutd_client::Error> {
/// // Retrying this call, even from another process, can never pay twice.
/// let created = client.create_payout(&payout).idempotency_key("invoice-1001").await?;
/// # Ok(()) }
/// ```
#[must_use = "a POST is sent only when awaited"]
pub struct Post<'c, T> {
    client: &'c Client,
    path: String,
    body: Result<Vec<u8>, Error>,
    key: Option<String>,
    version: SignatureVersion,
    read: fn(Answer) -> Result<T, Error>,
}

impl<T> std::fmt::Debug for Post<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Post")
            .field("path", &self.path)
            .field("idempotency_key", &self.key)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl<'c, T> Post<'c, T> {
    /// Sends `key` as the idempotency key (1 to 255 visible ASCII characters, `!` to `~`: no
    /// space) instead of a random UUID: retrying with the same key, even after a crash,
    /// replays the first answer instead of running the request again.
    pub fn idempotency_key(mut self, key: impl Into<String>) -> Self {
        self.key = Some(key.into());
        self
    }

    /// Signs this request with `version` instead of the client's POST default.
    pub fn signature(mut self, version: SignatureVersion) -> Self {
        self.version = version;
        self
    }
}

impl<'c, T: Send + 'c> IntoFuture for Post<'c, T> {
    type Output = Result<T, Error>;
    type IntoFuture = Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'c>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move {
            let body = self.body?;
            let key = match self.key {
                Some(key) => check_idempotency_key(key)?,
                None => Uuid::new_v4().to_string(),
            };
            let answer = self
                .client
                .exchange(Method::POST, &self.path, body, Some(&key), self.version)
                .await?;
            (self.read)(answer)
        })
    }
}

/// The key as the API takes it: 1 to 255 visible ASCII characters (`!` to `~`), so a key
/// the API would refuse (`IDEM201`) is never sent.
fn check_idempotency_key(key: String) -> Result<String, Error> {
    if (1..=255).contains(&key.len()) && key.bytes().all(|b| b.is_ascii_graphic()) {
        Ok(key)
    } else {
        Err(Error::Invalid(
            "an idempotency key is 1 to 255 visible ASCII characters".to_owned(),
        ))
    }
}

impl Client {
    /// A client of the API at `base_url` (e.g. `https://payouts.example.com`) for the
    /// subaccount `subaccount_id` with its API key and secret, with the default settings.
    ///
    /// # Errors
    /// As [`ClientBuilder::build`].
    pub fn new(
        base_url: &str,
        api_key: &str,
        api_secret: &str,
        subaccount_id: Uuid,
    ) -> Result<Self, Error> {
        Self::builder(base_url, api_key, api_secret, subaccount_id).build()
    }

    /// A [`ClientBuilder`] to change the defaults: v2 signatures on every request, a random
    /// idempotency key on every POST, [`RetryPolicy::default`], 30 s per attempt.
    pub fn builder(
        base_url: &str,
        api_key: &str,
        api_secret: &str,
        subaccount_id: Uuid,
    ) -> ClientBuilder {
        ClientBuilder {
            base_url: base_url.to_owned(),
            subaccount_id,
            signer: Signer::new(api_key, api_secret),
            get_signature: SignatureVersion::V2,
            post_signature: SignatureVersion::V2,
            retry: RetryPolicy::default(),
            timeout: Duration::from_secs(30),
            http: None,
        }
    }

    /// The subaccount this client acts for.
    pub fn subaccount_id(&self) -> Uuid {
        self.inner.subaccount_id
    }

    /// The signer of this client's API key (to sign requests of your own).
    pub fn signer(&self) -> &Signer {
        &self.inner.signer
    }

    /// A signed GET of `path_and_query` (e.g. `/api/receiver/<id>`), its `payload` read as `T`.
    /// The typed methods cover every route; this is for what they do not.
    ///
    /// # Errors
    /// As every call: see [`Error`].
    pub async fn get<T: DeserializeOwned>(&self, path_and_query: &str) -> Result<T, Error> {
        self.get_answer(path_and_query).await?.payload()
    }

    /// A signed POST of `body` (JSON) to `path`, its `payload` read as `T`. The typed methods
    /// cover every route; this is for what they do not.
    pub fn post<T: DeserializeOwned + Send>(
        &self,
        path: &str,
        body: &impl serde::Serialize,
    ) -> Post<'_, T> {
        self.post_with(path, serde_json::to_vec(body), Answer::payload)
    }

    pub(crate) fn post_with<T>(
        &self,
        path: &str,
        body: Result<Vec<u8>, serde_json::Error>,
        read: fn(Answer) -> Result<T, Error>,
    ) -> Post<'_, T> {
        Post {
            client: self,
            path: path.to_owned(),
            body: body.map_err(|e| Error::Invalid(format!("the body does not serialize: {e}"))),
            key: None,
            version: self.inner.post_signature,
            read,
        }
    }

    pub(crate) async fn get_answer(&self, path_and_query: &str) -> Result<Answer, Error> {
        self.exchange(
            Method::GET,
            path_and_query,
            Vec::new(),
            None,
            self.inner.get_signature,
        )
        .await
    }

    /// Sends one request, retrying as the policy allows; each attempt is signed afresh.
    async fn exchange(
        &self,
        method: Method,
        path_and_query: &str,
        body: Vec<u8>,
        idempotency_key: Option<&str>,
        version: SignatureVersion,
    ) -> Result<Answer, Error> {
        let inner = &self.inner;
        let url = Url::parse(&format!("{}{path_and_query}", inner.base))
            .map_err(|e| Error::Invalid(format!("`{path_and_query}`: {e}")))?;
        // Signed exactly as it goes on the request line.
        let signed_path = match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_owned(),
        };
        let policy = inner.retry;
        let mut attempt = 1;
        loop {
            let headers = inner.signer.sign(
                version,
                &SignedRequest {
                    method: method.as_str(),
                    path_and_query: &signed_path,
                    body: &body,
                },
            );
            let mut request = inner
                .http
                .request(method.clone(), url.clone())
                .timeout(inner.timeout);
            for (name, value) in headers.pairs() {
                request = request.header(name, value);
            }
            if let Some(key) = idempotency_key {
                request = request.header(IDEMPOTENCY_KEY_HEADER, key);
            }
            if method == Method::POST {
                request = request
                    .header(CONTENT_TYPE, "application/json")
                    .body(body.clone());
            }
            let outcome = match request.send().await {
                Ok(response) => read_answer(response).await,
                Err(error) => Err(Error::Transport(error)),
            };
            let retries_left = attempt < policy.max_attempts;
            let wait = match &outcome {
                Err(Error::Transport(error)) if error.is_builder() => None,
                Err(Error::Transport(_)) => Some(policy.backoff(attempt, random())),
                // An answer too large to read: the same request would get it again.
                Err(_) => None,
                Ok(answer) => retry_wait(answer, &policy, attempt),
            };
            match (wait, retries_left) {
                (Some(wait), true) => {
                    tokio::time::sleep(wait).await;
                    attempt += 1;
                }
                _ => return outcome,
            }
        }
    }
}

/// How long to wait before retrying after `answer`, or `None` when it is final.
fn retry_wait(answer: &Answer, policy: &RetryPolicy, attempt: u32) -> Option<Duration> {
    match answer.status {
        429 => {
            let asked = answer.refusal().retry_after.unwrap_or(Duration::ZERO);
            (asked <= policy.max_retry_after)
                .then(|| asked.max(policy.backoff(attempt, random()) / 4))
        }
        503 => {
            let backoff = policy.backoff(attempt, random());
            let asked = answer.refusal().retry_after.unwrap_or(Duration::ZERO);
            (asked <= policy.max_retry_after).then(|| asked.max(backoff))
        }
        409 if answer.refusal().has(&ErrorCode::Idem001) => Some(policy.backoff(attempt, random())),
        _ => None,
    }
}

/// 64 random bits (for jitter): a fresh v4 UUID's.
fn random() -> u64 {
    let bytes = Uuid::new_v4().into_bytes();
    u64::from_le_bytes([
        bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[9], bytes[10],
    ])
}

/// The largest answer read: the API's largest (a bulk answer of 1,000 payouts) is a small
/// fraction of it, so anything bigger is not the API's and is not held in memory.
pub const MAX_ANSWER_BYTES: usize = 16 * 1024 * 1024;

/// Reads `response` whole, refusing (as [`Error::Decode`]) one larger than
/// [`MAX_ANSWER_BYTES`] as soon as it is, without holding more of it.
async fn read_answer(mut response: reqwest::Response) -> Result<Answer, Error> {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let too_large = || Error::Decode {
        status,
        reason: format!("the answer is larger than {MAX_ANSWER_BYTES} bytes"),
    };
    if response
        .content_length()
        .is_some_and(|length| length > MAX_ANSWER_BYTES as u64)
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(Error::Transport)? {
        if body.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Answer {
        status,
        headers,
        body,
    })
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::{RetryPolicy, check_idempotency_key};

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        let policy = RetryPolicy::default();
        for random in [0, 1, u64::MAX / 3, u64::MAX] {
            let first = policy.backoff(1, random);
            assert!(first >= Duration::from_millis(125) && first <= Duration::from_millis(250));
            let third = policy.backoff(3, random);
            assert!(third >= Duration::from_millis(500) && third <= Duration::from_secs(1));
            let late = policy.backoff(40, random);
            assert!(late >= Duration::from_secs(4) && late <= Duration::from_secs(8));
        }
    }

    #[test]
    fn idempotency_keys_are_checked_as_the_api_does() {
        assert!(check_idempotency_key("order-42/retry_1!~".to_owned()).is_ok());
        assert!(check_idempotency_key("x".repeat(255)).is_ok());
        for bad in [
            "",
            " lead",
            "trail ",
            "in side",
            "tab\there",
            "é",
            &"x".repeat(256),
        ] {
            assert!(check_idempotency_key(bad.to_owned()).is_err(), "{bad:?}");
        }
    }
}
