//! A closed-loop load generator: `concurrency` workers, each sending one signed request at a
//! time and waiting for the whole response before the next, until `requests` have been sent.
//! Latency is measured from just before the request is sent until its body has been read, in
//! microseconds, into HDR histograms (overall and per request kind).
//!
//! Closed loop means a slow response delays the next request instead of queueing behind it, so
//! the percentiles describe the service at the throughput it reached, not at a fixed offered
//! rate (no coordinated-omission correction is applied).

use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::client::conn::http1;
use hyper_util::rt::TokioIo;
use nix::sys::time::TimeSpec;
use nix::sys::timerfd::{ClockId, Expiration, TimerFd, TimerFlags, TimerSetTimeFlags};
use payoutd_client::Signer;
use tokio::io::unix::AsyncFd;

/// Largest latency the histograms track: one minute, in microseconds.
const MAX_MICROS: u64 = 60_000_000;

/// An open-loop worker's wait for the moment its next request is due, to the microsecond.
///
/// tokio's own timer rounds every deadline up to its next millisecond tick, so a request sent
/// after `tokio::time::sleep_until` left 0–1 ms after it was due; since an open loop counts
/// latency from when each request was due, that lateness of the generator's clock was counted
/// as the server's (about half a millisecond on every request), while `pgbench --rate`, the
/// reference it is compared with, waits to the microsecond. A one-shot `timerfd` (the kernel's
/// high-resolution timer, polled by the runtime like a socket) fires at the due moment.
struct Pacer(AsyncFd<Timer>);

/// A `timerfd` as tokio's [`AsyncFd`] takes it.
struct Timer(TimerFd);

impl AsRawFd for Timer {
    fn as_raw_fd(&self) -> RawFd {
        self.0.as_fd().as_raw_fd()
    }
}

impl Pacer {
    fn new() -> anyhow::Result<Self> {
        let timer = TimerFd::new(
            ClockId::CLOCK_MONOTONIC,
            TimerFlags::TFD_NONBLOCK | TimerFlags::TFD_CLOEXEC,
        )
        .context("creating a timerfd")?;
        // `AsyncFd::new` is deprecated because a registered descriptor could be closed, and its
        // number reused, while tokio still polls it; that cannot happen here: `Timer` owns the
        // descriptor and keeps it open for as long as the `AsyncFd` that owns the `Timer`. Its
        // replacement, `AsyncFd::register`, is `unsafe`, which the workspace forbids.
        #[allow(deprecated)]
        let registered = AsyncFd::new(Timer(timer))?;
        Ok(Self(registered))
    }

    /// Returns at `due` (at once when it has passed), never before it.
    async fn until(&self, due: Instant) -> anyhow::Result<()> {
        let wait = due.saturating_duration_since(Instant::now());
        if wait.is_zero() {
            return Ok(());
        }
        self.0
            .get_ref()
            .0
            .set(
                Expiration::OneShot(TimeSpec::from_duration(wait)),
                TimerSetTimeFlags::empty(),
            )
            .context("setting the timerfd")?;
        loop {
            let mut ready = self.0.readable().await?;
            // Reading the expiry count re-arms readiness; before expiry it would block.
            match ready.try_io(|timer| timer.get_ref().0.wait().map_err(std::io::Error::from)) {
                Ok(expired) => return Ok(expired?),
                Err(_would_block) => continue,
            }
        }
    }
}

/// An API key and its secret. Requests are signed by the client crate's [`Signer`], the one
/// signer of the project's tools and tests: it keys the HMAC once, and its nonces strictly
/// increase per API key across clones and workers (POST nonces are single use).
#[derive(Clone)]
pub struct Credentials {
    /// The API key (`x-api-key`).
    pub api_key: String,
    /// The API secret (only to hand on; requests are signed by `signer`).
    pub api_secret: String,
    signer: Signer,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("api_key", &self.api_key)
            .finish_non_exhaustive()
    }
}

impl Credentials {
    /// Keys a signer with `api_secret` once, for every signature to come.
    pub fn new(api_key: &str, api_secret: &str) -> Self {
        Self {
            api_key: api_key.to_owned(),
            api_secret: api_secret.to_owned(),
            signer: Signer::new(api_key, api_secret),
        }
    }

    /// A fresh v1 `signature` header value: `<nonce>.<hex HMAC-SHA256(secret, "<nonce>.<key>")>`.
    pub fn sign_v1(&self) -> String {
        self.signer.sign_v1()
    }
}

/// One request to send, with what the workload needs to judge its answer.
pub struct Request<T> {
    /// HTTP method.
    pub method: reqwest::Method,
    /// Path and query, e.g. `/api/receiver-account/verify`.
    pub path: String,
    /// JSON body (empty for none).
    pub body: Vec<u8>,
    /// Extra headers (e.g. `idempotency-key`), besides the signature.
    pub headers: Vec<(&'static str, String)>,
    /// Index into [`Workload::kinds`].
    pub kind: usize,
    /// Whatever [`Workload::check`] wants to know.
    pub tag: T,
}

/// What a scenario sends.
pub trait Workload: Send + Sync + 'static {
    /// Carried from [`Workload::request`] to [`Workload::check`].
    type Tag: Send;

    /// Names of the request kinds, each reported separately.
    fn kinds(&self) -> &[&'static str];

    /// The request with sequence number `seq` (a pure function of it, so runs repeat).
    fn request(&self, seq: u64) -> Request<Self::Tag>;

    /// Whether a 200 answer is the right one.
    fn check(&self, tag: &Self::Tag, body: &[u8]) -> bool;
}

/// How to drive the load.
#[derive(Clone)]
pub struct LoadConfig {
    /// `http://host:port`.
    pub base_url: String,
    /// Workers, each with one request in flight.
    pub concurrency: usize,
    /// Requests in all (at most, with `duration`).
    pub requests: u64,
    /// When set, workers stop starting requests once this much time has passed.
    pub duration: Option<Duration>,
    /// First sequence number (so a warm-up can use other requests than the measured run).
    pub first_seq: u64,
    /// Worker `w` signs with `keys[w % keys.len()]`.
    pub keys: Vec<Credentials>,
    /// Open loop: requests are due at this many per second (request `i` at `i / rate` seconds
    /// after the start), each sent by the next free worker once due, and its latency counts
    /// from when it was due, so a stall delays the schedule's requests and shows in their
    /// latency instead of hiding in fewer requests sent. `None`: closed loop, each worker sends
    /// its next request as soon as it has the answer to the last.
    pub rate: Option<f64>,
}

/// Latencies and outcomes of one kind of request (or of all).
#[derive(Clone)]
pub struct Stats {
    /// Latencies of completed requests (any status), microseconds.
    pub histogram: Histogram<u64>,
    /// Answers other than 200, and requests that failed to complete.
    pub errors: u64,
    /// 200 answers that were not the expected ones.
    pub wrong: u64,
    /// Requests that got no answer (also counted in `errors`; no latency recorded).
    pub unanswered: u64,
    /// Bytes of response bodies read.
    pub body_bytes: u64,
}

impl Stats {
    fn new() -> anyhow::Result<Self> {
        Ok(Self {
            histogram: Histogram::new_with_bounds(1, MAX_MICROS, 3)?,
            errors: 0,
            wrong: 0,
            unanswered: 0,
            body_bytes: 0,
        })
    }

    fn add(&mut self, other: &Stats) -> anyhow::Result<()> {
        self.histogram.add(&other.histogram)?;
        self.errors += other.errors;
        self.wrong += other.wrong;
        self.unanswered += other.unanswered;
        self.body_bytes += other.body_bytes;
        Ok(())
    }

    /// Requests sent (completed or not).
    pub fn requests(&self) -> u64 {
        self.histogram.len() + self.unanswered
    }

    /// The mean size of a response body, bytes.
    pub fn mean_body_bytes(&self) -> u64 {
        self.body_bytes / self.histogram.len().max(1)
    }

    /// The latency at `quantile` (0..=1), in milliseconds.
    pub fn millis_at(&self, quantile: f64) -> f64 {
        self.histogram.value_at_quantile(quantile) as f64 / 1000.0
    }
}

/// The outcome of a run.
pub struct LoadResult {
    /// Every request.
    pub overall: Stats,
    /// Per kind, in [`Workload::kinds`] order.
    pub per_kind: Vec<(&'static str, Stats)>,
    /// Wall time from the first request sent to the last answer read.
    pub elapsed: Duration,
    /// How many answers had each status (0: no answer).
    pub statuses: BTreeMap<u16, u64>,
    /// The first unexpected answer, for the report.
    pub first_problem: Option<String>,
}

impl LoadResult {
    /// Adds another run of the same workload (its time is added too, as if run back to back).
    pub fn merge(&mut self, other: LoadResult) -> anyhow::Result<()> {
        self.overall.add(&other.overall)?;
        for ((_, mine), (_, theirs)) in self.per_kind.iter_mut().zip(&other.per_kind) {
            mine.add(theirs)?;
        }
        self.elapsed += other.elapsed;
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_default() += count;
        }
        if self.first_problem.is_none() {
            self.first_problem = other.first_problem;
        }
        Ok(())
    }

    /// Requests per second over the run.
    pub fn throughput(&self) -> f64 {
        self.overall.requests() as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// One worker's tallies.
struct Tally {
    per_kind: Vec<Stats>,
    statuses: BTreeMap<u16, u64>,
    first_problem: Option<String>,
}

/// `request` as sent to `base` (`http://host:port`), signed with `key` (v1) the way a client
/// signs it.
pub fn build<T>(
    client: &reqwest::Client,
    base: &str,
    key: &Credentials,
    request: &Request<T>,
) -> reqwest::RequestBuilder {
    let mut builder = client
        .request(request.method.clone(), format!("{base}{}", request.path))
        .header("x-api-key", &key.api_key)
        .header("signature", key.sign_v1());
    for (name, value) in &request.headers {
        builder = builder.header(*name, value);
    }
    if request.body.is_empty() {
        builder
    } else {
        builder
            .header("content-type", "application/json")
            .body(request.body.clone())
    }
}

/// A client for `concurrency` connections kept alive to one server.
pub fn client(concurrency: usize) -> anyhow::Result<reqwest::Client> {
    reqwest::Client::builder()
        .pool_max_idle_per_host(concurrency)
        .tcp_nodelay(true)
        .timeout(Duration::from_secs(30))
        .build()
        .context("building the HTTP client")
}

/// Sends `request` once and returns the status and body.
pub async fn send<T>(
    client: &reqwest::Client,
    base: &str,
    key: &Credentials,
    request: &Request<T>,
) -> anyhow::Result<(u16, Vec<u8>)> {
    let response = build(client, base, key, request)
        .send()
        .await
        .with_context(|| format!("{} {}", request.method, request.path))?;
    let status = response.status().as_u16();
    Ok((status, response.bytes().await?.to_vec()))
}

/// One kept-alive HTTP/1.1 connection of a load worker, on hyper's connection-level client.
/// Unlike `reqwest::Client` it has no pool, redirect or proxy logic, so the generator takes
/// less of the CPU it shares with payoutd and PostgreSQL (as pgbench and wrk do). It opens the
/// connection on first use and again after a failure.
struct Connection {
    /// `host:port`, also sent as the `host` header.
    host: String,
    sender: Option<http1::SendRequest<Full<Bytes>>>,
}

impl Connection {
    fn new(base_url: &str) -> anyhow::Result<Self> {
        let host = base_url
            .strip_prefix("http://")
            .context("the load generator speaks plain http:// only")?
            .trim_end_matches('/');
        Ok(Self {
            host: host.to_owned(),
            sender: None,
        })
    }

    async fn open(&mut self) -> anyhow::Result<&mut http1::SendRequest<Full<Bytes>>> {
        let sender = match self.sender.take() {
            Some(sender) if !sender.is_closed() => sender,
            _ => {
                let stream = tokio::net::TcpStream::connect(&self.host)
                    .await
                    .with_context(|| format!("connecting to {}", self.host))?;
                stream.set_nodelay(true)?;
                let (sender, connection) = http1::handshake(TokioIo::new(stream)).await?;
                // The connection's I/O runs as its own task; it ends when the sender is dropped.
                tokio::spawn(connection);
                sender
            }
        };
        Ok(self.sender.insert(sender))
    }

    /// Sends a request made by [`Connection::outgoing`] and reads the whole answer (30 s at
    /// most). After any
    /// failure the connection is dropped, and the next request opens a new one.
    async fn send(
        &mut self,
        outgoing: anyhow::Result<hyper::Request<Full<Bytes>>>,
    ) -> anyhow::Result<(u16, Bytes)> {
        let result = match outgoing {
            Ok(outgoing) => tokio::time::timeout(Duration::from_secs(30), self.exchange(outgoing))
                .await
                .unwrap_or_else(|_| Err(anyhow::anyhow!("no answer within 30 s"))),
            Err(e) => Err(e),
        };
        if result.is_err() {
            self.sender = None;
        }
        result
    }

    /// `request` as a client sends it, signed (v1) with `key`.
    fn outgoing<T>(
        &self,
        key: &Credentials,
        request: &Request<T>,
    ) -> anyhow::Result<hyper::Request<Full<Bytes>>> {
        let mut builder = hyper::Request::builder()
            .method(request.method.clone())
            .uri(request.path.as_str())
            .header("host", self.host.as_str())
            .header("x-api-key", key.api_key.as_str())
            .header("signature", key.sign_v1());
        for (name, value) in &request.headers {
            builder = builder.header(*name, value.as_str());
        }
        if !request.body.is_empty() {
            builder = builder.header("content-type", "application/json");
        }
        Ok(builder.body(Full::new(Bytes::from(request.body.clone())))?)
    }

    async fn exchange(
        &mut self,
        outgoing: hyper::Request<Full<Bytes>>,
    ) -> anyhow::Result<(u16, Bytes)> {
        let sender = self.open().await?;
        sender.ready().await?;
        let response = sender.send_request(outgoing).await?;
        let status = response.status().as_u16();
        let body = response.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}

/// Sends `config.requests` requests of `workload`, `config.concurrency` at a time (or as many
/// as fit in `config.duration`).
pub async fn run<W: Workload>(workload: Arc<W>, config: &LoadConfig) -> anyhow::Result<LoadResult> {
    anyhow::ensure!(config.concurrency > 0, "concurrency must be at least 1");
    anyhow::ensure!(!config.keys.is_empty(), "the load needs an API key");
    let next = Arc::new(AtomicU64::new(0));
    let kinds = workload.kinds().to_vec();
    let started = Instant::now();
    let deadline = config.duration.map(|duration| started + duration);
    let mut workers = Vec::with_capacity(config.concurrency);
    for worker in 0..config.concurrency {
        let workload = Arc::clone(&workload);
        let next = Arc::clone(&next);
        let key = config.keys[worker % config.keys.len()].clone();
        let mut connection = Connection::new(&config.base_url)?;
        let (total, first_seq, kind_count) = (config.requests, config.first_seq, kinds.len());
        let rate = config.rate.filter(|rate| *rate > 0.0);
        let pacer = rate.map(|_| Pacer::new()).transpose()?;
        workers.push(tokio::spawn(async move {
            let mut tally = Tally {
                per_kind: (0..kind_count)
                    .map(|_| Stats::new())
                    .collect::<anyhow::Result<_>>()?,
                statuses: BTreeMap::new(),
                first_problem: None,
            };
            loop {
                // Open loop, every request due before the deadline is sent, however late:
                // dropping the late ones would hide the stall that made them late.
                if rate.is_none() && deadline.is_some_and(|deadline| Instant::now() >= deadline) {
                    break;
                }
                let index = next.fetch_add(1, Ordering::Relaxed);
                if index >= total {
                    break;
                }
                let due = rate.map(|rate| started + Duration::from_secs_f64(index as f64 / rate));
                if let Some(due) = due {
                    if deadline.is_some_and(|deadline| due >= deadline) {
                        break;
                    }
                    if let Some(pacer) = &pacer {
                        pacer.until(due).await?;
                    }
                }
                let request = workload.request(first_seq + index);
                let outgoing = connection.outgoing(&key, &request);
                let sent = due.unwrap_or_else(Instant::now);
                let answer = connection.send(outgoing).await;
                let micros = u64::try_from(sent.elapsed().as_micros()).unwrap_or(MAX_MICROS);
                let stats = &mut tally.per_kind[request.kind];
                match answer {
                    Ok((status, body)) => {
                        stats
                            .histogram
                            .saturating_record(micros.clamp(1, MAX_MICROS));
                        stats.body_bytes += body.len() as u64;
                        *tally.statuses.entry(status).or_default() += 1;
                        let problem = if status != 200 {
                            stats.errors += 1;
                            true
                        } else if !workload.check(&request.tag, &body) {
                            stats.wrong += 1;
                            true
                        } else {
                            false
                        };
                        if problem && tally.first_problem.is_none() {
                            tally.first_problem = Some(format!(
                                "{} {} -> {status} {}",
                                request.method,
                                String::from_utf8_lossy(&request.body),
                                String::from_utf8_lossy(&body)
                            ));
                        }
                    }
                    Err(e) => {
                        // Not completed: counted as an error, with no latency recorded.
                        stats.errors += 1;
                        stats.unanswered += 1;
                        *tally.statuses.entry(0).or_default() += 1;
                        if tally.first_problem.is_none() {
                            tally.first_problem = Some(format!("{}: {e}", request.path));
                        }
                    }
                }
            }
            anyhow::Ok(tally)
        }));
    }
    let mut per_kind: Vec<(&'static str, Stats)> = kinds
        .iter()
        .map(|kind| Stats::new().map(|stats| (*kind, stats)))
        .collect::<anyhow::Result<_>>()?;
    let mut statuses = BTreeMap::new();
    let mut first_problem = None;
    for worker in workers {
        let tally = worker.await.context("a load worker panicked")??;
        for ((_, total), stats) in per_kind.iter_mut().zip(&tally.per_kind) {
            total.add(stats)?;
        }
        for (status, count) in tally.statuses {
            *statuses.entry(status).or_default() += count;
        }
        first_problem = first_problem.or(tally.first_problem);
    }
    let elapsed = started.elapsed();
    let mut overall = Stats::new()?;
    for (_, stats) in &per_kind {
        overall.add(stats)?;
    }
    Ok(LoadResult {
        overall,
        per_kind,
        elapsed,
        statuses,
        first_problem,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::AtomicUsize;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::TcpListener;

    use super::*;

    /// Asks for `/echo/<seq>` and expects the path back.
    struct Echo;

    impl Workload for Echo {
        type Tag = String;

        fn kinds(&self) -> &[&'static str] {
            &["echo"]
        }

        fn request(&self, seq: u64) -> Request<String> {
            let path = format!("/echo/{seq}");
            Request {
                method: reqwest::Method::GET,
                path: path.clone(),
                body: Vec::new(),
                headers: Vec::new(),
                kind: 0,
                tag: path,
            }
        }

        fn check(&self, tag: &String, body: &[u8]) -> bool {
            body == tag.as_bytes()
        }
    }

    /// A server that reads one request per connection and, when `answer`, sends the path back
    /// with `connection: close`; otherwise it hangs up without a word. Counts connections.
    async fn one_shot_server(answer: bool) -> (String, Arc<AtomicUsize>) {
        slow_one_shot_server(answer, Duration::ZERO).await
    }

    /// [`one_shot_server`], answering `delay` after reading each request.
    async fn slow_one_shot_server(answer: bool, delay: Duration) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut head = Vec::new();
                    let mut buf = [0u8; 1024];
                    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                        match socket.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => head.extend_from_slice(&buf[..n]),
                        }
                    }
                    tokio::time::sleep(delay).await;
                    if answer {
                        let text = String::from_utf8_lossy(&head).into_owned();
                        let path = text.split(' ').nth(1).unwrap_or("").to_owned();
                        let reply = format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{path}",
                            path.len()
                        );
                        let _ = socket.write_all(reply.as_bytes()).await;
                    }
                });
            }
        });
        (base, accepted)
    }

    fn config(base_url: String, requests: u64) -> LoadConfig {
        LoadConfig {
            rate: None,
            base_url,
            concurrency: 2,
            requests,
            duration: None,
            first_seq: 0,
            keys: vec![Credentials::new("pk_test", "secret")],
        }
    }

    #[tokio::test]
    async fn a_connection_the_server_closes_is_opened_again_for_the_next_request() {
        let (base, accepted) = one_shot_server(true).await;
        let result = run(Arc::new(Echo), &config(base, 20)).await.unwrap();
        assert_eq!(result.overall.requests(), 20);
        assert_eq!((result.overall.errors, result.overall.wrong), (0, 0));
        assert_eq!(result.statuses.get(&200), Some(&20));
        // Every answer closed its connection, so every request opened one.
        assert_eq!(accepted.load(Ordering::SeqCst), 20);
    }

    #[tokio::test]
    async fn requests_without_an_answer_are_counted_not_fatal() {
        let (base, _) = one_shot_server(false).await;
        let result = run(Arc::new(Echo), &config(base, 6)).await.unwrap();
        assert_eq!(result.overall.requests(), 6);
        assert_eq!(result.overall.unanswered, 6);
        assert_eq!(result.overall.errors, 6);
        assert_eq!(result.statuses.get(&0), Some(&6));
        assert!(result.first_problem.is_some());
    }

    #[tokio::test]
    async fn only_plain_http_base_urls_are_accepted() {
        let result = run(Arc::new(Echo), &config("https://127.0.0.1:1".to_owned(), 1)).await;
        assert!(result.is_err());
    }

    #[tokio::test]
    async fn the_pacer_never_returns_before_the_moment_due_and_can_wait_again() {
        let pacer = Pacer::new().unwrap();
        for micros in [300, 1_500, 50, 2_000] {
            let due = Instant::now() + Duration::from_micros(micros);
            pacer.until(due).await.unwrap();
            assert!(
                Instant::now() >= due,
                "returned early for a wait of {micros} µs"
            );
        }
        // A moment already past: returns at once, arming nothing.
        let now = Instant::now();
        pacer
            .until(now.checked_sub(Duration::from_millis(5)).unwrap_or(now))
            .await
            .unwrap();
        let due = Instant::now() + Duration::from_micros(700);
        pacer.until(due).await.unwrap();
        assert!(Instant::now() >= due);
    }

    #[tokio::test]
    async fn open_loop_sends_on_schedule_and_counts_latency_from_when_each_was_due() {
        // One worker, 50 ms per answer, 100 requests due per second for 0.3 s: a closed loop
        // would send about 6; the schedule has 30, so they queue and their waiting counts.
        let (base, _) = slow_one_shot_server(true, Duration::from_millis(50)).await;
        let mut config = config(base, u64::MAX);
        config.concurrency = 1;
        config.duration = Some(Duration::from_millis(300));
        config.rate = Some(100.0);
        let result = run(Arc::new(Echo), &config).await.unwrap();
        assert_eq!(result.overall.requests(), 30);
        assert_eq!(result.overall.errors, 0);
        // The last request, due at 0.29 s, is sent after the 29 before it (about 1.45 s).
        assert!(
            result.overall.millis_at(1.0) > 1_000.0,
            "{}",
            result.overall.millis_at(1.0)
        );
        assert!(result.overall.millis_at(0.0) >= 50.0);
    }
}
