//! [`PartnerApiTransport`]: the file drop of a partner bank that takes payments through a
//! signed HTTPS API rather than files (the Interac e-Transfer partner protocol of
//! `bank_formats::interac`, described in docs/RAILS.md, "Interac e-Transfer partner API").
//!
//! - upload = `POST {base_url}/v1/batches` with the batch request as body, `Idempotency-Key:
//!   <file name>` and a signature; 201 is [`UploadOutcome::Uploaded`], 200 (the same key with
//!   the same body) [`UploadOutcome::AlreadyThere`], 409 and 422 (the key with another body) an
//!   error;
//! - list = `GET {base_url}/v1/reports?after=<cursor>`: report ids, page by page;
//! - fetch = `GET {base_url}/v1/reports/{report_id}`: the signed report document.
//!
//! Every request is signed (`X-Partner-Signature` over the body of a `POST`, the request target
//! of a `GET`), every successful answer's signature is verified with the same shared secret
//! and a tolerance on its timestamp, and every answer body is read up to a bound.

use std::fmt;
use std::net::IpAddr;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::anyhow;
use async_trait::async_trait;
use bank_formats::interac::{
    self, BatchReceipt, BatchRequest, ErrorAnswer, ReportList, SIGNATURE_HEADER, StatusReport,
};
use domain::PortError;
use domain::masking::Secret;
use domain::rail::transport::{FileTransport, UploadOutcome};
use reqwest::header::{CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use reqwest::{Client, Method, Response, StatusCode, Url, redirect};
use tokio::sync::Mutex;

use crate::names;

/// The longest answer body read, by default: 4 MiB (a report on a 10,000-payment batch).
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// The most pages of report ids one listing reads, by default; the rest waits for the next
/// poll.
pub const DEFAULT_MAX_PAGES: usize = 10;

/// How to reach a partner's API.
#[derive(Clone)]
pub struct PartnerApiSettings {
    /// `https://...` (a path prefix is kept); `http://` only for a loopback host
    /// (`127.0.0.1`, `[::1]`, `localhost`), for tests and the local partner simulator.
    pub base_url: String,
    /// The shared secret that signs both directions.
    pub shared_secret: Secret<String>,
    /// The longest a request may take, answer included.
    pub timeout: Duration,
    /// The longest connecting may take.
    pub connect_timeout: Duration,
    /// How far an answer's signature timestamp may be from this clock, in seconds.
    pub signature_tolerance_seconds: u64,
    /// The longest answer body read; longer answers are errors.
    pub max_response_bytes: usize,
    /// The most pages of report ids one listing reads.
    pub max_pages: usize,
}

impl fmt::Debug for PartnerApiSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartnerApiSettings")
            .field("base_url", &self.base_url)
            .field("shared_secret", &"[REDACTED]")
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field(
                "signature_tolerance_seconds",
                &self.signature_tolerance_seconds,
            )
            .field("max_response_bytes", &self.max_response_bytes)
            .field("max_pages", &self.max_pages)
            .finish()
    }
}

impl PartnerApiSettings {
    /// Settings with the defaults: 30 s per request, 10 s to connect, the protocol's 300 s
    /// signature tolerance, [`DEFAULT_MAX_RESPONSE_BYTES`], [`DEFAULT_MAX_PAGES`].
    pub fn new(base_url: impl Into<String>, shared_secret: Secret<String>) -> Self {
        Self {
            base_url: base_url.into(),
            shared_secret,
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            signature_tolerance_seconds: interac::DEFAULT_TOLERANCE_SECONDS,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
            max_pages: DEFAULT_MAX_PAGES,
        }
    }
}

/// Why a partner API transport cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum PartnerApiConfigError {
    /// The base URL is not an `https://` URL (or `http://` on a loopback host).
    #[error("base_url: {0}")]
    BaseUrl(&'static str),
    /// The shared secret is empty.
    #[error("shared_secret: is empty")]
    EmptySecret,
    /// A limit is zero.
    #[error("{0}: must be more than zero")]
    Zero(&'static str),
    /// The HTTP client could not be built.
    #[error("cannot build the partner API's HTTP client: {0}")]
    Client(#[source] reqwest::Error),
}

/// What list calls remember between polls.
#[derive(Debug, Default)]
struct Listing {
    /// The last report id listed: the next listing asks for reports after it.
    after: Option<String>,
    /// Listed ids not fetched yet, oldest first: listed again until fetched.
    pending: Vec<String>,
}

/// The [`FileTransport`] over a partner's signed HTTPS API.
///
/// Listing is bounded: each call asks only for the reports after the last id listed before
/// (at most `max_pages` pages), and returns those plus the ids listed earlier whose fetch has
/// not succeeded yet. The cursor lives in memory: after a restart the first listing starts from
/// the oldest report the partner keeps, which the inbound processor recognises by name and
/// SHA-256 and skips. Errors: a partner that cannot be reached, a timeout, 408, 429 or a 5xx
/// answer is `PortError::Unavailable`; a refusal (4xx), an answer whose signature does not
/// verify, an answer too long or not of the protocol is `PortError::Unknown`. No message
/// contains the secret or a body.
pub struct PartnerApiTransport {
    client: Client,
    base: Url,
    secret: Secret<String>,
    tolerance: u64,
    max_response_bytes: usize,
    max_pages: usize,
    listing: Mutex<Listing>,
}

impl fmt::Debug for PartnerApiTransport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PartnerApiTransport")
            .field("base_url", &self.base.as_str())
            .field("shared_secret", &"[REDACTED]")
            .finish_non_exhaustive()
    }
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The base URL, checked: `https`, or `http` on loopback; no query, fragment or credentials;
/// its path ends with `/` so endpoints join under it.
fn base_url(raw: &str) -> Result<Url, PartnerApiConfigError> {
    let mut url = Url::parse(raw).map_err(|_| PartnerApiConfigError::BaseUrl("is not a URL"))?;
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            return Err(PartnerApiConfigError::BaseUrl(
                "must be https:// (http:// only on a loopback host)",
            ));
        }
        _ => return Err(PartnerApiConfigError::BaseUrl("must be https://")),
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(PartnerApiConfigError::BaseUrl("has no host"));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(PartnerApiConfigError::BaseUrl(
            "must not have a query or fragment",
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(PartnerApiConfigError::BaseUrl("must not carry credentials"));
    }
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

fn unknown(message: String) -> PortError {
    PortError::Unknown(anyhow!(message))
}

fn unavailable(message: String) -> PortError {
    PortError::Unavailable(anyhow!(message))
}

/// The error of an answer that is not a success.
fn refusal(what: &str, status: StatusCode, body: &[u8]) -> PortError {
    let code = ErrorAnswer::parse(body)
        .map(|answer| format!(" ({})", answer.code))
        .unwrap_or_default();
    let message = format!(
        "{what}: the partner answered HTTP {}{code}",
        status.as_u16()
    );
    if status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
    {
        unavailable(message)
    } else {
        unknown(message)
    }
}

impl PartnerApiTransport {
    /// Checks the settings and builds the HTTP client (rustls with the `ring` provider,
    /// redirects off, no proxy, HTTPS only unless the base URL is on loopback). Nothing is
    /// connected yet.
    ///
    /// # Errors
    /// The first wrong setting, or a client that cannot be built.
    pub fn new(settings: PartnerApiSettings) -> Result<Self, PartnerApiConfigError> {
        let base = base_url(&settings.base_url)?;
        if settings.shared_secret.expose().is_empty() {
            return Err(PartnerApiConfigError::EmptySecret);
        }
        if settings.max_response_bytes == 0 {
            return Err(PartnerApiConfigError::Zero("max_response_bytes"));
        }
        if settings.max_pages == 0 {
            return Err(PartnerApiConfigError::Zero("max_pages"));
        }
        if settings.timeout.is_zero() || settings.connect_timeout.is_zero() {
            return Err(PartnerApiConfigError::Zero("timeout"));
        }
        // reqwest is built without a crypto provider: install ring's unless one is installed
        // (`Err` only means one already is).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = Client::builder()
            .redirect(redirect::Policy::none())
            .no_proxy()
            .https_only(base.scheme() == "https")
            .timeout(settings.timeout)
            .connect_timeout(settings.connect_timeout)
            .user_agent("payoutd-partner-api/1")
            .build()
            .map_err(PartnerApiConfigError::Client)?;
        Ok(Self {
            client,
            base,
            secret: settings.shared_secret,
            tolerance: settings.signature_tolerance_seconds,
            max_response_bytes: settings.max_response_bytes,
            max_pages: settings.max_pages,
            listing: Mutex::new(Listing::default()),
        })
    }

    /// The base URL requests go under.
    pub fn base_url(&self) -> &str {
        self.base.as_str()
    }

    fn endpoint(&self, path: &str) -> Result<Url, PortError> {
        self.base
            .join(path)
            .map_err(|_| unknown(format!("cannot build the URL of {path}")))
    }

    fn signature(&self, payload: &[u8]) -> Result<HeaderValue, PortError> {
        let header = interac::sign(self.secret.expose().as_bytes(), unix_now(), payload)
            .map_err(|e| unknown(format!("cannot sign a partner request: {e}")))?;
        HeaderValue::from_str(&header)
            .map_err(|_| unknown("the signature is not a header value".to_owned()))
    }

    /// Sends a request; returns the status and the body, read up to the bound.
    async fn send(
        &self,
        what: &str,
        method: Method,
        url: Url,
        idempotency_key: Option<&str>,
        body: Option<&[u8]>,
    ) -> Result<(StatusCode, Vec<u8>), PortError> {
        let payload = match body {
            Some(body) => body.to_vec(),
            None => {
                let mut target = url.path().to_owned();
                if let Some(query) = url.query() {
                    target.push('?');
                    target.push_str(query);
                }
                target.into_bytes()
            }
        };
        let mut request = self
            .client
            .request(method, url)
            .header(SIGNATURE_HEADER, self.signature(&payload)?);
        if let Some(key) = idempotency_key {
            let key = HeaderValue::from_str(key)
                .map_err(|_| unknown(format!("{what}: the name is not a header value")))?;
            request = request.header("Idempotency-Key", key);
        }
        if let Some(body) = body {
            request = request
                .header(CONTENT_TYPE, "application/json")
                .body(body.to_vec());
        }
        let response = request.send().await.map_err(|e| {
            if e.is_timeout() {
                unavailable(format!("{what}: the partner did not answer in time"))
            } else {
                unavailable(format!(
                    "{what}: cannot reach the partner: {}",
                    describe(&e)
                ))
            }
        })?;
        let status = response.status();
        let signature = response
            .headers()
            .get(SIGNATURE_HEADER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = self.read_body(what, response).await?;
        if status.is_success() {
            let Some(signature) = signature else {
                return Err(unknown(format!(
                    "{what}: the partner's answer is not signed"
                )));
            };
            interac::verify_signature(
                &signature,
                &body,
                self.secret.expose().as_bytes(),
                unix_now(),
                self.tolerance,
            )
            .map_err(|e| unknown(format!("{what}: the partner's answer is refused: {e}")))?;
        }
        Ok((status, body))
    }

    async fn read_body(&self, what: &str, mut response: Response) -> Result<Vec<u8>, PortError> {
        let too_long = || {
            unknown(format!(
                "{what}: the partner's answer is longer than {} bytes",
                self.max_response_bytes
            ))
        };
        let announced = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if announced.is_some_and(|n| n > self.max_response_bytes as u64) {
            return Err(too_long());
        }
        let mut body = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if body.len() + chunk.len() > self.max_response_bytes {
                        return Err(too_long());
                    }
                    body.extend_from_slice(&chunk);
                }
                Ok(None) => return Ok(body),
                Err(e) if e.is_timeout() => {
                    return Err(unavailable(format!(
                        "{what}: the partner's answer did not arrive in time"
                    )));
                }
                Err(e) => {
                    return Err(unavailable(format!(
                        "{what}: the partner's answer broke off: {}",
                        describe(&e)
                    )));
                }
            }
        }
    }
}

/// An error's causes, without the URL (which holds nothing secret, but is long).
fn describe(error: &reqwest::Error) -> String {
    use std::error::Error as _;
    let mut text = String::new();
    let mut source = error.source();
    while let Some(cause) = source {
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    if text.is_empty() {
        text = "request failed".to_owned();
    }
    text
}

#[async_trait]
impl FileTransport for PartnerApiTransport {
    async fn upload(&self, name: &str, bytes: &[u8]) -> Result<UploadOutcome, PortError> {
        names::check(name)?;
        let what = format!("upload of {name}");
        let request = BatchRequest::parse(bytes)
            .map_err(|e| unknown(format!("{what}: not a batch request of the protocol: {e}")))?;
        let (status, body) = self
            .send(
                &what,
                Method::POST,
                self.endpoint("v1/batches")?,
                Some(name),
                Some(bytes),
            )
            .await?;
        let outcome = match status {
            StatusCode::CREATED => UploadOutcome::Uploaded,
            StatusCode::OK => UploadOutcome::AlreadyThere,
            StatusCode::CONFLICT | StatusCode::UNPROCESSABLE_ENTITY => {
                return Err(unknown(format!(
                    "{what}: the partner holds another batch under this idempotency key (HTTP {})",
                    status.as_u16()
                )));
            }
            other if other.is_success() => {
                return Err(unknown(format!(
                    "{what}: unexpected answer HTTP {}",
                    other.as_u16()
                )));
            }
            other => return Err(refusal(&what, other, &body)),
        };
        let receipt = BatchReceipt::parse(&body)
            .map_err(|e| unknown(format!("{what}: the partner's receipt is refused: {e}")))?;
        let expected = BatchReceipt::of(&request, receipt.received_at);
        if receipt != expected {
            return Err(unknown(format!(
                "{what}: the partner's receipt names batch {} with {} payments of {} cents, not \
                 the batch sent",
                receipt.batch_id, receipt.payment_count, receipt.total_amount
            )));
        }
        Ok(outcome)
    }

    async fn list_inbound(&self) -> Result<Vec<String>, PortError> {
        let mut listing = self.listing.lock().await;
        for _ in 0..self.max_pages {
            let mut url = self.endpoint("v1/reports")?;
            if let Some(after) = &listing.after {
                url.query_pairs_mut().append_pair("after", after);
            }
            let (status, body) = self
                .send("listing of reports", Method::GET, url, None, None)
                .await?;
            if status != StatusCode::OK {
                return Err(refusal("listing of reports", status, &body));
            }
            let page = ReportList::parse(&body).map_err(|e| {
                unknown(format!(
                    "listing of reports: the partner's list is refused: {e}"
                ))
            })?;
            let Some(last) = page.report_ids.last().cloned() else {
                break;
            };
            for id in page.report_ids {
                if !listing.pending.contains(&id) {
                    listing.pending.push(id);
                }
            }
            listing.after = Some(last);
            if !page.has_more {
                break;
            }
        }
        Ok(listing.pending.clone())
    }

    async fn fetch_inbound(&self, name: &str) -> Result<Vec<u8>, PortError> {
        names::check(name)?;
        let what = format!("fetch of report {name}");
        if !interac::is_identifier(name, 64) {
            return Err(unknown(format!("{what}: not a report id of the protocol")));
        }
        let (status, body) = self
            .send(
                &what,
                Method::GET,
                self.endpoint(&format!("v1/reports/{name}"))?,
                None,
                None,
            )
            .await?;
        if status != StatusCode::OK {
            return Err(refusal(&what, status, &body));
        }
        // A report that parses must be the one asked for; one that does not is handed on as it
        // is, for the reader to record as unreadable.
        if let Ok(report) = StatusReport::parse(&body)
            && report.report_id != name
        {
            return Err(unknown(format!(
                "{what}: the partner answered with report {}",
                report.report_id
            )));
        }
        self.listing.lock().await.pending.retain(|id| id != name);
        Ok(body)
    }
}
