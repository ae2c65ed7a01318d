//! A local Interac e-Transfer partner bank for the `cad/digital` rail: the partner side of the
//! protocol in `bank_formats::interac` (see `docs/rails/interac.md`), on 127.0.0.1, with std
//! threads and a minimal HTTP/1.1 server (one request per connection).
//!
//! - `POST /v1/batches`: the signature and its timestamp are checked (401), the
//!   `Idempotency-Key` is required (400), a key seen before answers 200 with the first receipt
//!   when the body is the same and 409 otherwise, the body must be a valid batch request (400)
//!   whose batch id is new (409); a new batch gets 201 and its receipt.
//! - Each accepted batch gets a status report at once (batch accepted, every payment `sent`),
//!   then, after `final_delay`, a report with every payment's final status.
//! - A payment's fate: `failed` (`INVALID_RECIPIENT`) when the recipient's e-mail local part
//!   starts with `invalid`; otherwise by a hash (SHA-256) of its payment id over the shares of
//!   `deposited`, `declined` and `expired`, so a payment id always meets the same fate.
//! - `GET /v1/reports?after=<id>` lists report ids after `id` (all without it), 100 a page;
//!   `GET /v1/reports/{id}` answers the report. Every answer body is signed.
//! - Each report is also posted as a signed callback to the callback URL (loopback only), with
//!   up to `callback_attempts` tries a report.
// Not wired to a command yet: `cargo xtask bank` and the rails demo start it.

use std::collections::{BTreeMap, HashMap};
use std::io::{Read, Write};
use std::net::{IpAddr, Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use bank_formats::interac::{
    BatchReceipt, BatchRequest, BatchVerdict, ErrorAnswer, FailureCode, PaymentStatus,
    PaymentUpdate, ReportList, SIGNATURE_HEADER, StatusReport, sign, verify_signature,
};
use chrono::SubsecRound;
use sha2::{Digest, Sha256};

/// Report ids one list page holds.
const PAGE_SIZE: usize = 100;

/// The longest request head and body read.
const MAX_HEAD: usize = 16 * 1024;
const MAX_BODY: usize = 8 * 1024 * 1024;

/// How the partner behaves.
#[derive(Debug, Clone)]
pub struct PartnerOptions {
    /// Where to listen: a loopback address (port 0 picks a free port).
    pub bind: SocketAddr,
    /// The shared secret that signs both directions.
    pub shared_secret: String,
    /// Where reports are pushed (`http://127.0.0.1:<port>/<path>`, `[::1]` or `localhost`), if
    /// anywhere.
    pub callback_url: Option<String>,
    /// The weight of `deposited` among the fates of valid recipients.
    pub deposited_share: u32,
    /// The weight of `declined`.
    pub declined_share: u32,
    /// The weight of `expired`.
    pub expired_share: u32,
    /// How long after a batch its final report comes.
    pub final_delay: Duration,
    /// How far a request's signature timestamp may be from this clock, in seconds.
    pub tolerance_seconds: u64,
    /// Tries to deliver one callback.
    pub callback_attempts: u32,
}

impl PartnerOptions {
    /// A partner on a free loopback port with `shared_secret`: 80 % deposited, 10 % declined,
    /// 10 % expired, final reports after 2 s, no callbacks.
    pub fn new(shared_secret: impl Into<String>) -> Self {
        Self {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            shared_secret: shared_secret.into(),
            callback_url: None,
            deposited_share: 80,
            declined_share: 10,
            expired_share: 10,
            final_delay: Duration::from_secs(2),
            tolerance_seconds: bank_formats::interac::DEFAULT_TOLERANCE_SECONDS,
            callback_attempts: 3,
        }
    }
}

/// What the partner has done so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PartnerCounters {
    /// Batches accepted (201).
    pub batches: u64,
    /// Repeated uploads answered 200.
    pub repeats: u64,
    /// Uploads refused: 409 conflicts.
    pub conflicts: u64,
    /// Requests refused for their signature (401).
    pub bad_signatures: u64,
    /// Uploads refused as invalid (400).
    pub invalid: u64,
    /// Reports written.
    pub reports: u64,
    /// Callbacks delivered (a 2xx answer).
    pub callbacks_delivered: u64,
    /// Callbacks given up after every try.
    pub callbacks_failed: u64,
}

#[derive(Default)]
struct Counters {
    batches: AtomicU64,
    repeats: AtomicU64,
    conflicts: AtomicU64,
    bad_signatures: AtomicU64,
    invalid: AtomicU64,
    reports: AtomicU64,
    callbacks_delivered: AtomicU64,
    callbacks_failed: AtomicU64,
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// The callback target: a loopback address and the request path.
#[derive(Debug, Clone)]
struct Callback {
    addr: SocketAddr,
    host: String,
    path: String,
}

#[derive(Default)]
struct Book {
    /// Idempotency key → (request body, receipt bytes).
    by_key: HashMap<String, (Vec<u8>, Vec<u8>)>,
    /// Batch ids received.
    batches: HashMap<String, String>,
    /// Reports in the order written: (id, bytes).
    reports: Vec<(String, Vec<u8>)>,
    /// Each payment's last reported status.
    statuses: BTreeMap<String, PaymentStatus>,
}

struct Shared {
    options: PartnerOptions,
    callback: Option<Callback>,
    book: Mutex<Book>,
    counters: Counters,
    stopping: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn book(&self) -> MutexGuard<'_, Book> {
        // A thread that panicked while holding the lock leaves the book as it was: use it.
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn spawn(self: &Arc<Self>, work: impl FnOnce(&Arc<Self>) + Send + 'static) {
        let shared = self.clone();
        let handle = thread::spawn(move || work(&shared));
        self.workers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(handle);
    }
}

/// A running partner; stopped by [`PartnerSimulator::stop`] or when dropped.
pub struct PartnerSimulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
}

/// Now in Unix seconds, by the demo's clock ([`crate::clock`]).
fn unix_now() -> i64 {
    crate::clock::now().timestamp()
}

fn loopback_callback(url: &str) -> Result<Callback, String> {
    let refused = || format!("callback URL {url:?}: must be http://<loopback host>:<port>/<path>");
    let rest = url.strip_prefix("http://").ok_or_else(refused)?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let (host, port) = authority.rsplit_once(':').ok_or_else(refused)?;
    let port: u16 = port.parse().map_err(|_| refused())?;
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    let ip: IpAddr = if bare.eq_ignore_ascii_case("localhost") {
        IpAddr::from([127, 0, 0, 1])
    } else {
        bare.parse().map_err(|_| refused())?
    };
    if !ip.is_loopback() || path.contains(char::is_whitespace) {
        return Err(refused());
    }
    Ok(Callback {
        addr: SocketAddr::new(ip, port),
        host: authority.to_owned(),
        path: path.to_owned(),
    })
}

impl PartnerSimulator {
    /// Starts the partner.
    ///
    /// # Errors
    /// A bind address or callback URL off loopback, an empty secret, shares that add up to
    /// zero, or a port that cannot be bound.
    pub fn start(options: PartnerOptions) -> Result<Self, String> {
        if !options.bind.ip().is_loopback() {
            return Err(format!("bind {}: only loopback addresses", options.bind));
        }
        if options.shared_secret.is_empty() {
            return Err("the shared secret is empty".to_owned());
        }
        let shares = u64::from(options.deposited_share)
            + u64::from(options.declined_share)
            + u64::from(options.expired_share);
        if shares == 0 {
            return Err("the deposited, declined and expired shares add up to zero".to_owned());
        }
        let callback = options
            .callback_url
            .as_deref()
            .map(loopback_callback)
            .transpose()?;
        let listener =
            TcpListener::bind(options.bind).map_err(|e| format!("bind {}: {e}", options.bind))?;
        let addr = listener
            .local_addr()
            .map_err(|e| format!("bind {}: {e}", options.bind))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("listen on {addr}: {e}"))?;
        let shared = Arc::new(Shared {
            options,
            callback,
            book: Mutex::new(Book::default()),
            counters: Counters::default(),
            stopping: AtomicBool::new(false),
            workers: Mutex::new(Vec::new()),
        });
        let acceptor = {
            let shared = shared.clone();
            thread::spawn(move || accept(&listener, &shared))
        };
        Ok(Self {
            addr,
            shared,
            acceptor: Some(acceptor),
        })
    }

    /// `http://<address>`: the partner's `base_url`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// What it has done so far.
    /// Each payment's last reported status, by payment id (`sent`, `deposited`, `declined`,
    /// `expired`, `failed`).
    pub fn statuses(&self) -> BTreeMap<String, &'static str> {
        self.shared
            .book()
            .statuses
            .iter()
            .map(|(id, status)| (id.clone(), status.as_str()))
            .collect()
    }

    pub fn counters(&self) -> PartnerCounters {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        PartnerCounters {
            batches: get(&c.batches),
            repeats: get(&c.repeats),
            conflicts: get(&c.conflicts),
            bad_signatures: get(&c.bad_signatures),
            invalid: get(&c.invalid),
            reports: get(&c.reports),
            callbacks_delivered: get(&c.callbacks_delivered),
            callbacks_failed: get(&c.callbacks_failed),
        }
    }

    /// Stops accepting, lets pending work end (reports not yet due are dropped) and waits for
    /// every thread.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
        // Connection threads may start batch threads while being joined: join until none is
        // left.
        loop {
            let workers: Vec<JoinHandle<()>> = std::mem::take(
                &mut *self
                    .shared
                    .workers
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner),
            );
            if workers.is_empty() {
                break;
            }
            for worker in workers {
                let _ = worker.join();
            }
        }
    }
}

impl Drop for PartnerSimulator {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn accept(listener: &TcpListener, shared: &Arc<Shared>) {
    while !shared.stopping.load(Ordering::SeqCst) {
        match listener.accept() {
            Ok((stream, _)) => shared.spawn(move |shared| serve(stream, shared)),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                thread::sleep(Duration::from_millis(10));
            }
            Err(_) => thread::sleep(Duration::from_millis(50)),
        }
    }
}

/// A request as read off the wire.
struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(stream: &mut TcpStream) -> Option<Request> {
    let mut data = Vec::new();
    let mut buf = [0u8; 8192];
    let head_end = loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        data.extend_from_slice(&buf[..n]);
        if let Some(at) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break at;
        }
        if data.len() > MAX_HEAD {
            return None;
        }
    };
    let head = std::str::from_utf8(&data[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_owned();
    let target = first.next()?.to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(n, v)| (n.trim().to_owned(), v.trim().to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
        .map_or(Some(0), |(_, v)| v.parse().ok())?;
    if length > MAX_BODY {
        return None;
    }
    let mut body = data.get(head_end + 4..)?.to_vec();
    while body.len() < length {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&buf[..n]);
    }
    body.truncate(length);
    Some(Request {
        method,
        target,
        headers,
        body,
    })
}

/// A signed answer.
struct Answer {
    status: u16,
    body: Vec<u8>,
}

fn error(status: u16, code: &str, message: &str) -> Answer {
    Answer {
        status,
        body: ErrorAnswer {
            code: code.to_owned(),
            message: message.to_owned(),
        }
        .to_bytes(),
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        _ => "Other",
    }
}

fn serve(mut stream: TcpStream, shared: &Arc<Shared>) {
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let answer = match read_request(&mut stream) {
        Some(request) => route(&request, shared),
        None => error(
            400,
            "BAD_REQUEST",
            "not an HTTP/1.1 request this partner reads",
        ),
    };
    let secret = shared.options.shared_secret.as_bytes();
    let signature = sign(secret, unix_now(), &answer.body).unwrap_or_default();
    let head = format!(
        "HTTP/1.1 {} {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n{SIGNATURE_HEADER}: {signature}\r\nconnection: close\r\n\r\n",
        answer.status,
        reason_phrase(answer.status),
        answer.body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&answer.body);
    let _ = stream.flush();
    let _ = stream.shutdown(Shutdown::Both);
}

fn route(request: &Request, shared: &Arc<Shared>) -> Answer {
    let payload = if request.method == "GET" {
        request.target.as_bytes()
    } else {
        request.body.as_slice()
    };
    let verified = request.header(SIGNATURE_HEADER).is_some_and(|header| {
        verify_signature(
            header,
            payload,
            shared.options.shared_secret.as_bytes(),
            unix_now(),
            shared.options.tolerance_seconds,
        )
        .is_ok()
    });
    if !verified {
        bump(&shared.counters.bad_signatures);
        return error(
            401,
            "BAD_SIGNATURE",
            "the signature is missing, stale or does not match",
        );
    }
    let (path, query) = request
        .target
        .split_once('?')
        .unwrap_or((request.target.as_str(), ""));
    match (request.method.as_str(), path) {
        ("POST", "/v1/batches") => post_batch(request, shared),
        ("GET", "/v1/reports") => list_reports(query, shared),
        ("GET", path) if path.starts_with("/v1/reports/") => {
            let id = &path["/v1/reports/".len()..];
            shared
                .book()
                .reports
                .iter()
                .find(|(report_id, _)| report_id == id)
                .map_or_else(
                    || error(404, "NOT_FOUND", "no report of that id"),
                    |(_, bytes)| Answer {
                        status: 200,
                        body: bytes.clone(),
                    },
                )
        }
        (_, "/v1/batches" | "/v1/reports") => error(405, "METHOD_NOT_ALLOWED", "wrong method"),
        _ => error(404, "NOT_FOUND", "no such endpoint"),
    }
}

fn post_batch(request: &Request, shared: &Arc<Shared>) -> Answer {
    let Some(key) = request.header("Idempotency-Key").map(str::to_owned) else {
        bump(&shared.counters.invalid);
        return error(
            400,
            "MISSING_IDEMPOTENCY_KEY",
            "the Idempotency-Key header is required",
        );
    };
    let mut book = shared.book();
    if let Some((body, receipt)) = book.by_key.get(&key) {
        return if *body == request.body {
            bump(&shared.counters.repeats);
            Answer {
                status: 200,
                body: receipt.clone(),
            }
        } else {
            bump(&shared.counters.conflicts);
            error(
                409,
                "IDEMPOTENCY_CONFLICT",
                "this key was used with another body",
            )
        };
    }
    let batch = match BatchRequest::parse(&request.body) {
        Ok(batch) => batch,
        Err(e) => {
            bump(&shared.counters.invalid);
            let message: String = e.to_string().chars().take(200).collect();
            return error(400, "INVALID_BATCH", &message);
        }
    };
    if book.batches.contains_key(&batch.batch_id) {
        bump(&shared.counters.conflicts);
        return error(
            409,
            "DUPLICATE_BATCH",
            "this batch id came with another key",
        );
    }
    let receipt = BatchReceipt::of(&batch, crate::clock::now().trunc_subsecs(0)).to_bytes();
    book.by_key
        .insert(key.clone(), (request.body.clone(), receipt.clone()));
    book.batches.insert(batch.batch_id.clone(), key);
    bump(&shared.counters.batches);
    // The first report is there before the upload is answered, so a poll right after the upload
    // finds it.
    let sent = report_for(
        &batch,
        &mut book,
        shared,
        Some(BatchVerdict::Accepted),
        |_| (PaymentStatus::Sent, None),
    );
    drop(book);
    shared.spawn(move |shared| {
        if let Some(sent) = sent {
            deliver(shared, &sent);
        }
        let due = Instant::now() + shared.options.final_delay;
        while Instant::now() < due {
            if shared.stopping.load(Ordering::SeqCst) {
                return;
            }
            thread::sleep(
                Duration::from_millis(10).min(due.saturating_duration_since(Instant::now())),
            );
        }
        let finals = report_for(&batch, &mut shared.book(), shared, None, |payment| {
            fate(
                &shared.options,
                &payment.payment_id,
                &payment.recipient_email,
            )
        });
        if let Some(finals) = finals {
            deliver(shared, &finals);
        }
    });
    Answer {
        status: 201,
        body: receipt,
    }
}

/// Writes and keeps a report on `batch` with the batch verdict `verdict` and each payment's
/// status from `status_of`; returns its bytes.
fn report_for(
    batch: &BatchRequest,
    book: &mut Book,
    shared: &Shared,
    verdict: Option<BatchVerdict>,
    status_of: impl Fn(&bank_formats::interac::Payment) -> (PaymentStatus, Option<FailureOrCode>),
) -> Option<Vec<u8>> {
    let now = crate::clock::now().trunc_subsecs(0);
    let report_id = format!("rpt_{:08}", book.reports.len() + 1);
    let payments = batch
        .payments
        .iter()
        .map(|payment| {
            let (status, code) = status_of(payment);
            book.statuses.insert(payment.payment_id.clone(), status);
            PaymentUpdate {
                payment_id: payment.payment_id.clone(),
                status,
                code: code.map(|c| c.code().to_owned()),
                reason: code.map(|c| c.reason().to_owned()),
                updated_at: now,
            }
        })
        .collect();
    let report = StatusReport {
        report_id: report_id.clone(),
        batch_id: batch.batch_id.clone(),
        created_at: now,
        batch_status: verdict,
        payments,
    };
    let bytes = report.to_bytes().ok()?;
    book.reports.push((report_id, bytes.clone()));
    bump(&shared.counters.reports);
    Some(bytes)
}

/// The code a final status carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureOrCode {
    Failure(FailureCode),
    Declined,
    Expired,
}

impl FailureOrCode {
    fn code(self) -> &'static str {
        match self {
            Self::Failure(code) => code.code(),
            Self::Declined => "DECLINED",
            Self::Expired => "EXPIRED",
        }
    }

    fn reason(self) -> &'static str {
        match self {
            Self::Failure(code) => code.reason(),
            Self::Declined => "the recipient declined the transfer",
            Self::Expired => "the recipient did not deposit the transfer before it expired",
        }
    }
}

/// A payment's final status: `failed` for an `invalid...` recipient, else by the hash of its
/// id over the shares.
fn fate(
    options: &PartnerOptions,
    payment_id: &str,
    recipient_email: &str,
) -> (PaymentStatus, Option<FailureOrCode>) {
    let local = recipient_email
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    if local.starts_with("invalid") {
        return (
            PaymentStatus::Failed,
            Some(FailureOrCode::Failure(FailureCode::InvalidRecipient)),
        );
    }
    let digest = Sha256::digest(payment_id.as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    let deposited = u64::from(options.deposited_share);
    let declined = u64::from(options.declined_share);
    let total = deposited + declined + u64::from(options.expired_share);
    let point = u64::from_be_bytes(first) % total.max(1);
    if point < deposited {
        (PaymentStatus::Deposited, None)
    } else if point < deposited + declined {
        (PaymentStatus::Declined, Some(FailureOrCode::Declined))
    } else {
        (PaymentStatus::Expired, Some(FailureOrCode::Expired))
    }
}

fn list_reports(query: &str, shared: &Shared) -> Answer {
    let after = query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(name, _)| *name == "after")
        .map(|(_, value)| value.to_owned());
    let book = shared.book();
    let start = match after {
        None => 0,
        Some(after) => match book.reports.iter().position(|(id, _)| *id == after) {
            Some(at) => at + 1,
            None => return error(400, "UNKNOWN_CURSOR", "no report of that id"),
        },
    };
    let report_ids: Vec<String> = book
        .reports
        .iter()
        .skip(start)
        .take(PAGE_SIZE)
        .map(|(id, _)| id.clone())
        .collect();
    let has_more = start + report_ids.len() < book.reports.len();
    Answer {
        status: 200,
        body: ReportList {
            report_ids,
            has_more,
        }
        .to_bytes(),
    }
}

/// Posts `report` to the callback URL, signed, trying up to `callback_attempts` times.
fn deliver(shared: &Shared, report: &[u8]) {
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

fn post_callback(shared: &Shared, callback: &Callback, body: &[u8]) -> Result<u16, String> {
    let signature = sign(shared.options.shared_secret.as_bytes(), unix_now(), body)
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
        .set_read_timeout(Some(Duration::from_secs(5)))
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;
    use bank_formats::interac::{Currency, Payment};
    use chrono::TimeDelta;

    const SECRET: &str = "partner-test-secret";

    fn batch(batch_id: &str, emails: &[&str]) -> BatchRequest {
        let created = chrono::Utc::now().trunc_subsecs(0);
        BatchRequest {
            batch_id: batch_id.into(),
            created_at: created,
            originator: "CUST-1".into(),
            sender_name: "Payoutd".into(),
            payments: emails
                .iter()
                .enumerate()
                .map(|(i, email)| Payment {
                    payment_id: format!("{batch_id}p{i}"),
                    amount: 100 + i as u64,
                    currency: Currency::Cad,
                    recipient_name: "Ada".into(),
                    recipient_email: (*email).into(),
                    memo: "Invoice".into(),
                    expires_at: created + TimeDelta::days(30),
                })
                .collect(),
        }
    }

    /// One raw HTTP/1.1 exchange; returns the status, the signature header and the body.
    fn exchange(
        addr: SocketAddr,
        method: &str,
        target: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> (u16, Option<String>, Vec<u8>) {
        let mut stream = TcpStream::connect(addr).unwrap();
        let mut head = format!(
            "{method} {target} HTTP/1.1\r\nhost: {addr}\r\ncontent-length: {}\r\nconnection: close\r\n",
            body.len()
        );
        for (name, value) in headers {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        head.push_str("\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let at = answer.windows(4).position(|w| w == b"\r\n\r\n").unwrap();
        let head = String::from_utf8(answer[..at].to_vec()).unwrap();
        let status = head.split(' ').nth(1).unwrap().parse().unwrap();
        let signature = head
            .split("\r\n")
            .filter_map(|l| l.split_once(':'))
            .find(|(n, _)| n.eq_ignore_ascii_case(SIGNATURE_HEADER))
            .map(|(_, v)| v.trim().to_owned());
        (status, signature, answer[at + 4..].to_vec())
    }

    fn signed_headers(payload: &[u8], key: Option<&str>) -> Vec<(&'static str, String)> {
        let mut headers = vec![(
            SIGNATURE_HEADER,
            sign(SECRET.as_bytes(), unix_now(), payload).unwrap(),
        )];
        if let Some(key) = key {
            headers.push(("Idempotency-Key", key.to_owned()));
        }
        headers
    }

    fn post(addr: SocketAddr, key: Option<&str>, body: &[u8]) -> (u16, Vec<u8>) {
        let (status, signature, answer) = exchange(
            addr,
            "POST",
            "/v1/batches",
            &signed_headers(body, key),
            body,
        );
        assert_verified(signature.as_deref(), &answer);
        (status, answer)
    }

    fn get(addr: SocketAddr, target: &str) -> (u16, Vec<u8>) {
        let (status, signature, answer) = exchange(
            addr,
            "GET",
            target,
            &signed_headers(target.as_bytes(), None),
            b"",
        );
        assert_verified(signature.as_deref(), &answer);
        (status, answer)
    }

    fn assert_verified(signature: Option<&str>, body: &[u8]) {
        let signature = signature.expect("every answer is signed");
        verify_signature(signature, body, SECRET.as_bytes(), unix_now(), 300).unwrap();
    }

    fn reports(addr: SocketAddr) -> Vec<StatusReport> {
        let (status, list) = get(addr, "/v1/reports");
        assert_eq!(status, 200);
        ReportList::parse(&list)
            .unwrap()
            .report_ids
            .iter()
            .map(|id| {
                let (status, bytes) = get(addr, &format!("/v1/reports/{id}"));
                assert_eq!(status, 200);
                StatusReport::parse(&bytes).unwrap()
            })
            .collect()
    }

    fn wait_for(what: &str, mut done: impl FnMut() -> bool) {
        let until = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < until, "timed out waiting for {what}");
            thread::sleep(Duration::from_millis(20));
        }
    }

    fn options() -> PartnerOptions {
        PartnerOptions {
            final_delay: Duration::from_millis(100),
            ..PartnerOptions::new(SECRET)
        }
    }

    #[test]
    fn uploads_are_idempotent_by_key_and_checked() {
        let partner = PartnerSimulator::start(options()).unwrap();
        let addr = partner.addr;
        assert_eq!(partner.base_url(), format!("http://{addr}"));
        let body = batch("b1", &["ada@example.ca"]).to_bytes().unwrap();
        let (status, first) = post(addr, Some("F1.json"), &body);
        assert_eq!(status, 201);
        let receipt = BatchReceipt::parse(&first).unwrap();
        assert_eq!(
            (receipt.batch_id.as_str(), receipt.payment_count),
            ("b1", 1)
        );
        assert_eq!(post(addr, Some("F1.json"), &body), (200, first));

        let other = batch("b1", &["grace@example.ca", "ada@example.ca"])
            .to_bytes()
            .unwrap();
        let (status, answer) = post(addr, Some("F1.json"), &other);
        assert_eq!(status, 409);
        assert_eq!(
            ErrorAnswer::parse(&answer).unwrap().code,
            "IDEMPOTENCY_CONFLICT"
        );
        assert_eq!(
            post(addr, Some("F2.json"), &body).0,
            409,
            "same batch, new key"
        );
        assert_eq!(post(addr, None, &body).0, 400);
        assert_eq!(
            post(addr, Some("F3.json"), b"{\"type\":\"batch_request\"}").0,
            400
        );

        // A bad signature, a stale one, none.
        let forged = vec![(SIGNATURE_HEADER, sign(b"wrong", unix_now(), &body).unwrap())];
        assert_eq!(exchange(addr, "POST", "/v1/batches", &forged, &body).0, 401);
        let stale = vec![(
            SIGNATURE_HEADER,
            sign(SECRET.as_bytes(), unix_now() - 600, &body).unwrap(),
        )];
        assert_eq!(exchange(addr, "POST", "/v1/batches", &stale, &body).0, 401);
        assert_eq!(exchange(addr, "GET", "/v1/reports", &[], b"").0, 401);

        let counters = partner.counters();
        assert_eq!(
            (counters.batches, counters.repeats, counters.conflicts),
            (1, 1, 2)
        );
        assert_eq!((counters.invalid, counters.bad_signatures), (2, 3));
        partner.stop();
    }

    #[test]
    fn a_batch_gets_a_sent_report_then_final_statuses() {
        let partner = PartnerSimulator::start(PartnerOptions {
            deposited_share: 1,
            declined_share: 0,
            expired_share: 0,
            ..options()
        })
        .unwrap();
        let addr = partner.addr;
        let body = batch("b7", &["ada@example.ca", "Invalid.bob@example.ca"])
            .to_bytes()
            .unwrap();
        assert_eq!(post(addr, Some("F7.json"), &body).0, 201);
        let first = reports(addr);
        assert_eq!(first[0].batch_id, "b7");
        assert_eq!(first[0].batch_status, Some(BatchVerdict::Accepted));
        assert!(
            first[0]
                .payments
                .iter()
                .all(|p| p.status == PaymentStatus::Sent)
        );
        wait_for("the final report", || partner.counters().reports == 2);
        let all = reports(addr);
        let [_, finals] = all.as_slice() else {
            panic!("{all:?}")
        };
        assert_eq!(finals.batch_status, None);
        assert_eq!(finals.payments[0].status, PaymentStatus::Deposited);
        assert_eq!(finals.payments[1].status, PaymentStatus::Failed);
        assert_eq!(
            finals.payments[1].code.as_deref(),
            Some("INVALID_RECIPIENT")
        );

        let (status, page) = get(addr, &format!("/v1/reports?after={}", all[0].report_id));
        assert_eq!(status, 200);
        assert_eq!(
            ReportList::parse(&page).unwrap().report_ids,
            vec![finals.report_id.clone()]
        );
        assert_eq!(get(addr, "/v1/reports?after=nope").0, 400);
        assert_eq!(get(addr, "/v1/reports/rpt_99999999").0, 404);
        partner.stop();
    }

    #[test]
    fn fates_follow_the_shares_and_never_change() {
        let options = PartnerOptions::new(SECRET);
        let mut seen = HashMap::new();
        for n in 0..1_000 {
            let id = format!("payment{n}");
            let (status, _) = fate(&options, &id, "ada@example.ca");
            assert_eq!(fate(&options, &id, "ada@example.ca").0, status);
            *seen.entry(status).or_insert(0u32) += 1;
        }
        let deposited = seen[&PaymentStatus::Deposited];
        assert!((700..=900).contains(&deposited), "{seen:?}");
        assert!(seen[&PaymentStatus::Declined] > 50, "{seen:?}");
        assert!(seen[&PaymentStatus::Expired] > 50, "{seen:?}");
        let all_declined = PartnerOptions {
            deposited_share: 0,
            declined_share: 1,
            expired_share: 0,
            ..options
        };
        assert_eq!(
            fate(&all_declined, "x", "a@b.ca").0,
            PaymentStatus::Declined
        );
        assert_eq!(
            fate(&all_declined, "x", "INVALID@b.ca").0,
            PaymentStatus::Failed
        );
    }

    /// A callback receiver on loopback: answers 500 to the first `failures` posts, then 204;
    /// keeps the bodies it accepted with their signatures.
    /// The callbacks a receiver accepted: signature header and body.
    type Pushed = Arc<Mutex<Vec<(String, Vec<u8>)>>>;

    fn receiver(failures: usize) -> (String, Pushed) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "http://{}/rail/interac/callback",
            listener.local_addr().unwrap()
        );
        let got = Arc::new(Mutex::new(Vec::new()));
        let keep = got.clone();
        thread::spawn(move || {
            let mut refused = 0;
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let Some(request) = read_request(&mut stream) else {
                    continue;
                };
                assert_eq!(request.target, "/rail/interac/callback");
                let status = if refused < failures {
                    refused += 1;
                    500
                } else {
                    let signature = request.header(SIGNATURE_HEADER).unwrap().to_owned();
                    keep.lock().unwrap().push((signature, request.body));
                    204
                };
                let _ = stream.write_all(
                    format!(
                        "HTTP/1.1 {status} X\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                    .as_bytes(),
                );
            }
        });
        (url, got)
    }

    #[test]
    fn reports_are_pushed_as_signed_callbacks_with_retries() {
        let (url, got) = receiver(1);
        let partner = PartnerSimulator::start(PartnerOptions {
            callback_url: Some(url),
            ..options()
        })
        .unwrap();
        let addr = partner.addr;
        let body = batch("b9", &["ada@example.ca"]).to_bytes().unwrap();
        assert_eq!(post(addr, Some("F9.json"), &body).0, 201);
        wait_for("two callbacks", || got.lock().unwrap().len() == 2);
        let polled = reports(addr);
        for ((signature, pushed), report) in got.lock().unwrap().iter().zip(&polled) {
            verify_signature(signature, pushed, SECRET.as_bytes(), unix_now(), 300).unwrap();
            assert_eq!(
                *pushed,
                report.to_bytes().unwrap(),
                "pushed and polled are one"
            );
        }
        let counters = partner.counters();
        assert_eq!(
            (counters.callbacks_delivered, counters.callbacks_failed),
            (2, 0)
        );
        partner.stop();
    }

    #[test]
    fn a_callback_nobody_takes_is_given_up() {
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let partner = PartnerSimulator::start(PartnerOptions {
            callback_url: Some(format!("http://{closed}/cb")),
            callback_attempts: 2,
            ..options()
        })
        .unwrap();
        let body = batch("b3", &["ada@example.ca"]).to_bytes().unwrap();
        assert_eq!(post(partner.addr, Some("F.json"), &body).0, 201);
        wait_for("two given-up callbacks", || {
            partner.counters().callbacks_failed == 2
        });
        partner.stop();
    }

    #[test]
    fn only_loopback_is_served_or_called() {
        for url in [
            "http://10.0.0.1:80/cb",
            "https://127.0.0.1:80/cb",
            "http://example.com:80/cb",
            "http://127.0.0.1/cb",
        ] {
            let options = PartnerOptions {
                callback_url: Some(url.to_owned()),
                ..options()
            };
            assert!(PartnerSimulator::start(options).is_err(), "{url}");
        }
        for url in [
            "http://127.0.0.1:9/cb",
            "http://[::1]:9",
            "http://localhost:9/x",
        ] {
            assert!(loopback_callback(url).is_ok(), "{url}");
        }
        let public = PartnerOptions {
            bind: SocketAddr::from(([0, 0, 0, 0], 0)),
            ..options()
        };
        assert!(PartnerSimulator::start(public).is_err());
        assert!(PartnerSimulator::start(PartnerOptions::new("")).is_err());
    }
}
