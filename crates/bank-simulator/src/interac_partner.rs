//! A local Interac e-Transfer partner bank for the `cad/digital` rail: the partner side of the
//! protocol in `bank_formats::interac` (payoutd's docs/RAILS.md, "Interac e-Transfer partner
//! API"), on 127.0.0.1, with std threads and a minimal HTTP/1.1 server (one request per
//! connection). `cargo xtask bank`, `cargo xtask rails-demo` and the `cutoff` benchmark start it.
//!
//! - `POST /v1/batches`: the signature and its timestamp are checked (401), the
//!   `Idempotency-Key` is required (400), a key seen before answers 200 with the first receipt
//!   when the body is the same and 409 otherwise, the body must be a valid batch request (400)
//!   whose batch id is new (409); a new batch gets 201 and its receipt.
//! - Each accepted batch gets a status report at once (batch accepted, every payment `sent`),
//!   then, after `final_delay` (or as soon as [`PartnerSimulator::release_final_reports`] is
//!   called), a report with every payment's final status.
//! - A payment's fate: the one given for its payment id ([`PartnerSimulator::decide`]) if any;
//!   else `failed` (`INVALID_RECIPIENT`) when the recipient's e-mail local part starts with
//!   `invalid`; otherwise by a hash (SHA-256) of its payment id over the shares of `deposited`,
//!   `declined` and `expired`, so a payment id always meets the same fate.
//! - `GET /v1/reports?after=<id>` lists report ids after `id` (all without it), 100 a page;
//!   `GET /v1/reports/{id}` answers the report. Every answer body is signed.
//! - Each report is also posted as a signed callback to the callback URL (loopback only), with
//!   up to `callback_attempts` tries a report.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use bank_formats::interac::{FailureCode, PaymentStatus};
use chrono::{DateTime, Utc};

use wire::serve;

mod batches;
mod callbacks;
mod wire;

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
    /// How long a callback's answer is waited for.
    pub callback_timeout: Duration,
    /// The partner's clock: its reports' and receipts' times and its signatures' (the rails
    /// demo runs it as far back as payoutd's, so signatures stay within the tolerance).
    pub clock: fn() -> DateTime<Utc>,
}

impl PartnerOptions {
    /// A partner on a free loopback port with `shared_secret`: 80 % deposited, 10 % declined,
    /// 10 % expired, final reports after 2 s, no callbacks, the system clock.
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
            callback_timeout: Duration::from_secs(5),
            clock: Utc::now,
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

/// A payment's final status, given by [`PartnerSimulator::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// The recipient deposits it.
    Deposited,
    /// The recipient declines it.
    Declined,
    /// It expires undeposited.
    Expired,
    /// It cannot be sent, for this reason.
    Failed(FailureCode),
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
    /// Fates given for payment ids, over the drawn ones.
    fates: HashMap<String, Fate>,
}

struct Shared {
    options: PartnerOptions,
    callback: Option<Callback>,
    book: Mutex<Book>,
    counters: Counters,
    stopping: AtomicBool,
    /// Final reports are due now, whatever `final_delay` says.
    released: AtomicBool,
    workers: Mutex<Vec<JoinHandle<()>>>,
}

impl Shared {
    fn book(&self) -> MutexGuard<'_, Book> {
        // A thread that panicked while holding the lock leaves the book as it was: use it.
        self.book
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Now in Unix seconds, by the partner's clock.
    fn unix_now(&self) -> i64 {
        (self.options.clock)().timestamp()
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
            released: AtomicBool::new(false),
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

    /// Gives the payments `fates` (payment id → fate), over the drawn ones, for their final
    /// reports not yet written.
    pub fn decide(&self, fates: impl IntoIterator<Item = (String, Fate)>) {
        self.shared.book().fates.extend(fates);
    }

    /// Writes the final reports of every batch received so far now, and of any later batch as
    /// soon as it arrives, whatever `final_delay` says.
    pub fn release_final_reports(&self) {
        self.shared.released.store(true, Ordering::SeqCst);
    }

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

    /// What it has done so far.
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

#[cfg(test)]
mod tests;
