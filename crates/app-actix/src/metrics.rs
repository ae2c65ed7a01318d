//! `GET /metrics` (Prometheus text format) through `prometheus-client`, the official Rust client:
//! requests by route and status with a latency histogram, webhook delivery outcomes, batch job
//! passes, and, sampled at scrape time, the database pool, the outbox backlog and payouts by
//! status.
//!
//! **Bounded labels.** A series lives as long as the process, so no label value may come from
//! what a request sends: every label is a closed list named once here, an enum matched
//! exhaustively ([`HttpMethod`], [`DeliveryOutcome`], [`PoolState`], payout statuses, callback
//! refusals) or the route patterns of the route tables ([`RoutePattern`], given to
//! [`Metrics::new`]). A method outside the
//! list is `OTHER`, a path no route matches `<unmatched>`; the status is the one payoutd (or
//! actix) answered, never the client's. Whatever arrives, the number of series is bounded.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;

use actix_web::http::Method;
use async_trait::async_trait;
use domain::PortError;
use domain::batch::runner::RunnerPass;
use domain::delivery::NextStep;
use domain::payout::PayoutStatus;
use domain::rail::inbound::InboundPass;
use prometheus_client::encoding::text::encode;
use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use strum::VariantArray;

use crate::telemetry::{CallbackRefusal, Counted};

/// What a scrape reads from the outside: the pool and a few counts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Sample {
    /// Connections open.
    pub pool_size: i64,
    /// Of which idle.
    pub pool_idle: i64,
    /// Requests waiting for a connection.
    pub pool_waiting: i64,
    /// Outbox events not yet delivered.
    pub outbox_pending: i64,
    /// Payouts by status code.
    pub payouts_by_status: Vec<(i16, i64)>,
}

/// Where a scrape samples from.
#[async_trait]
pub trait Sampler: Send + Sync {
    /// The current sample.
    async fn sample(&self) -> Result<Sample, PortError>;
}

/// Every database pool of the process (one per HTTP worker, one for the jobs).
#[derive(Clone, Default)]
pub struct Pools(std::sync::Arc<std::sync::Mutex<Vec<adapters_postgres::DbPool>>>);

impl Pools {
    /// Adds a pool to report.
    pub fn register(&self, pool: adapters_postgres::DbPool) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(pool);
    }

    /// (open, idle, waiting) over every pool.
    fn totals(&self) -> (usize, usize, usize) {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
            .map(|pool| pool.status())
            .fold((0, 0, 0), |(size, idle, waiting), s| {
                (size + s.size, idle + s.available, waiting + s.waiting)
            })
    }
}

/// Samples the process's pools and, through one store, the database's counts.
pub struct StoreSampler {
    store: adapters_postgres::PgStore,
    pools: Pools,
}

impl StoreSampler {
    /// A sampler reading counts through `store` and reporting `pools`.
    pub fn new(store: adapters_postgres::PgStore, pools: Pools) -> Self {
        Self { store, pools }
    }
}

#[async_trait]
impl Sampler for StoreSampler {
    async fn sample(&self) -> Result<Sample, PortError> {
        let (size, idle, waiting) = self.pools.totals();
        let counts = self.store.operational_counts().await?;
        let wide = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        Ok(Sample {
            pool_size: wide(size),
            pool_idle: wide(idle),
            pool_waiting: wide(waiting),
            outbox_pending: counts.outbox_pending,
            payouts_by_status: counts.payouts_by_status,
        })
    }
}

/// A label value from a closed list: each value's text is given once, by `as_str`.
macro_rules! closed_label_value {
    ($($kind:ty),+ $(,)?) => {$(
        impl EncodeLabelValue for $kind {
            fn encode(&self, encoder: &mut LabelValueEncoder) -> Result<(), std::fmt::Error> {
                std::fmt::Write::write_str(encoder, self.as_str())
            }
        }
    )+};
}

closed_label_value!(
    HttpMethod,
    RoutePattern,
    DeliveryOutcome,
    PoolState,
    PayoutStatusLabel,
    CallbackRefusal
);

/// The `method` label: the methods of HTTP/1.1 (RFC 9110, and PATCH), every other token
/// `OTHER`.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, VariantArray)]
pub enum HttpMethod {
    /// `GET`.
    Get,
    /// `HEAD`.
    Head,
    /// `POST`.
    Post,
    /// `PUT`.
    Put,
    /// `PATCH`.
    Patch,
    /// `DELETE`.
    Delete,
    /// `OPTIONS`.
    Options,
    /// `CONNECT`.
    Connect,
    /// `TRACE`.
    Trace,
    /// Any other method token.
    Other,
}

impl HttpMethod {
    /// Every value.
    pub const ALL: &'static [HttpMethod] = Self::VARIANTS;

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            HttpMethod::Get => "GET",
            HttpMethod::Head => "HEAD",
            HttpMethod::Post => "POST",
            HttpMethod::Put => "PUT",
            HttpMethod::Patch => "PATCH",
            HttpMethod::Delete => "DELETE",
            HttpMethod::Options => "OPTIONS",
            HttpMethod::Connect => "CONNECT",
            HttpMethod::Trace => "TRACE",
            HttpMethod::Other => "OTHER",
        }
    }

    /// The value of a request's method.
    pub fn of(method: &Method) -> Self {
        Self::ALL
            .iter()
            .copied()
            .find(|known| *known != HttpMethod::Other && known.as_str() == method.as_str())
            .unwrap_or(HttpMethod::Other)
    }
}

/// The `route` label: a route pattern of the route table (`/api/receiver/{id}`), or
/// [`RoutePattern::UNMATCHED`].
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub struct RoutePattern(Arc<str>);

impl RoutePattern {
    /// The value of a request no route matched.
    pub const UNMATCHED: &'static str = "<unmatched>";

    fn as_str(&self) -> &str {
        &self.0
    }
}

/// The route patterns a `route` label may hold: those of the route tables, and
/// [`RoutePattern::UNMATCHED`].
struct RoutePatterns {
    known: HashSet<Arc<str>>,
    unmatched: RoutePattern,
}

impl RoutePatterns {
    /// The patterns given (those of the route tables: `crate::http::route_patterns`).
    fn new(patterns: impl IntoIterator<Item = String>) -> Self {
        Self {
            known: patterns.into_iter().map(Arc::from).collect(),
            unmatched: RoutePattern(Arc::from(RoutePattern::UNMATCHED)),
        }
    }

    /// The label for the pattern a request matched, if any.
    fn label(&self, pattern: Option<&str>) -> RoutePattern {
        pattern
            .and_then(|pattern| self.known.get(pattern))
            .map_or_else(
                || self.unmatched.clone(),
                |known| RoutePattern(known.clone()),
            )
    }
}

/// The `outcome` label of `webhook_attempts_total`: what became of an attempt.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, VariantArray)]
pub enum DeliveryOutcome {
    /// The endpoint took it.
    Delivered,
    /// It failed and will be tried again.
    Retry,
    /// It failed for the last time.
    Exhausted,
    /// The endpoint was disabled.
    EndpointDisabled,
    /// Another worker recorded the event first.
    Superseded,
    /// Its result could not be recorded.
    Error,
}

impl DeliveryOutcome {
    /// Every value.
    pub const ALL: &'static [DeliveryOutcome] = Self::VARIANTS;

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            DeliveryOutcome::Delivered => "delivered",
            DeliveryOutcome::Retry => "retry",
            DeliveryOutcome::Exhausted => "exhausted",
            DeliveryOutcome::EndpointDisabled => "endpoint_disabled",
            DeliveryOutcome::Superseded => "superseded",
            DeliveryOutcome::Error => "error",
        }
    }
}

/// The `state` label of `db_pool_connections`.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq, VariantArray)]
pub enum PoolState {
    /// Lent to a request or job.
    InUse,
    /// Open and waiting in the pool.
    Idle,
}

impl PoolState {
    /// Every value.
    pub const ALL: &'static [PoolState] = Self::VARIANTS;

    /// The label value.
    pub const fn as_str(self) -> &'static str {
        match self {
            PoolState::InUse => "in_use",
            PoolState::Idle => "idle",
        }
    }
}

/// The `status` label of `payouts`: a payout status.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
struct PayoutStatusLabel(PayoutStatus);

impl PayoutStatusLabel {
    const fn as_str(self) -> &'static str {
        self.0.as_str()
    }
}

/// The values of a closed list, for a metric's help text: `(a, b, c)`.
fn listed<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> String {
    let names: Vec<_> = all.iter().map(|value| name(*value)).collect();
    format!("({})", names.join(", "))
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: HttpMethod,
    route: RoutePattern,
    /// The status answered: chosen by payoutd or actix, never by the client.
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: HttpMethod,
    route: RoutePattern,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct DeliveryLabels {
    outcome: DeliveryOutcome,
}

/// An outcome named by a string literal of this module (`&'static str`: never a request's).
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: PoolState,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: PayoutStatusLabel,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RefusalLabels {
    reason: CallbackRefusal,
}

fn latency_histogram() -> Histogram {
    // 0.5 ms to ~4 s.
    Histogram::new(prometheus_client::metrics::histogram::exponential_buckets(
        0.000_5, 2.0, 14,
    ))
}

type LatencyFamily = Family<RouteLabels, Histogram, fn() -> Histogram>;

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    routes: RoutePatterns,
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    deliveries: Family<DeliveryLabels, Counter>,
    batch_passes: Counter,
    batches_closed: Counter,
    batches_submitted: Counter,
    batches_finished: Counter,
    payouts_settled: Counter,
    inbound_files: Family<OutcomeLabels, Counter>,
    bank_report_lines: Family<OutcomeLabels, Counter>,
    pool: Family<StateLabels, Gauge>,
    pool_waiting: Gauge,
    outbox_pending: Gauge,
    payouts: Family<StatusLabels, Gauge>,
    scrape_failures: Counter,
    connection_errors: Counter,
    callback_refusals: Family<RefusalLabels, Counter>,
    callback_bodies_held: Gauge,
}

impl Metrics {
    /// Registers every metric; `route_patterns` are the values the `route` label may take
    /// besides `<unmatched>`: the patterns of the route tables
    /// (`crate::http::route_patterns()`).
    pub fn new(route_patterns: impl IntoIterator<Item = String>) -> Self {
        let mut registry = Registry::with_prefix("payoutd");
        let requests = Family::<RequestLabels, Counter>::default();
        registry.register(
            "http_requests",
            "HTTP requests answered, by method, route and status",
            requests.clone(),
        );
        let latency: LatencyFamily = Family::new_with_constructor(latency_histogram);
        registry.register(
            "http_request_duration_seconds",
            "HTTP request latency, by method and route",
            latency.clone(),
        );
        let deliveries = Family::<DeliveryLabels, Counter>::default();
        registry.register(
            "webhook_attempts",
            format!(
                "Webhook delivery attempts recorded, by outcome {}",
                listed(DeliveryOutcome::ALL, DeliveryOutcome::as_str)
            ),
            deliveries.clone(),
        );
        let batch_passes = Counter::default();
        registry.register(
            "batch_passes",
            "Batch job passes that found work",
            batch_passes.clone(),
        );
        let batches_closed = Counter::default();
        registry.register("batches_closed", "Batches closed", batches_closed.clone());
        let batches_submitted = Counter::default();
        registry.register(
            "batches_submitted",
            "Batches submitted to the payout rail",
            batches_submitted.clone(),
        );
        let batches_finished = Counter::default();
        registry.register(
            "batches_finished",
            "Batches settled or failed",
            batches_finished.clone(),
        );
        let payouts_settled = Counter::default();
        registry.register(
            "payouts_settled",
            "Payout results from the rail applied",
            payouts_settled.clone(),
        );
        let inbound_files = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "inbound_bank_files",
            "Files read from the production rails' inbound directories, by outcome (read, unreadable, altered)",
            inbound_files.clone(),
        );
        let bank_report_lines = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "bank_report_lines",
            "Lines of the banks' reports, by what was done (applied, repeated, unmatched, noted, anomaly)",
            bank_report_lines.clone(),
        );
        let pool = Family::<StateLabels, Gauge>::default();
        registry.register(
            "db_pool_connections",
            format!(
                "Database connections of this process, by state {}",
                listed(PoolState::ALL, PoolState::as_str)
            ),
            pool.clone(),
        );
        let pool_waiting = Gauge::default();
        registry.register(
            "db_pool_waiting",
            "Requests waiting for a database connection",
            pool_waiting.clone(),
        );
        let outbox_pending = Gauge::default();
        registry.register(
            "outbox_pending_events",
            "Events not yet delivered (all instances)",
            outbox_pending.clone(),
        );
        let payouts = Family::<StatusLabels, Gauge>::default();
        registry.register(
            "payouts",
            "Payouts by status (all instances)",
            payouts.clone(),
        );
        let scrape_failures = Counter::default();
        registry.register(
            "scrape_sample_failures",
            "Scrapes whose database sample failed (the gauges keep their last values)",
            scrape_failures.clone(),
        );
        let connection_errors = Counter::default();
        registry.register(
            "http_connection_errors",
            "Connections actix closed on a malformed request (bad framing, an oversized head) or \
             a connection error, answered 400/431 before any handler (this process)",
            connection_errors.clone(),
        );
        let callback_refusals = Family::<RefusalLabels, Counter>::default();
        registry.register(
            "rail_callback_refusals",
            format!(
                "Partner callbacks refused before their signature was verified (this process), \
                 by reason {}",
                listed(CallbackRefusal::ALL, CallbackRefusal::as_str)
            ),
            callback_refusals.clone(),
        );
        let callback_bodies_held = Gauge::default();
        registry.register(
            "rail_callback_bodies_held",
            format!(
                "Partner callback bodies held now, being read or waiting for their report to be \
                 applied (this process; at most {}, a callback beyond that is refused as busy)",
                crate::partner_callbacks::MAX_CALLBACK_READERS
            ),
            callback_bodies_held.clone(),
        );
        Self {
            registry,
            routes: RoutePatterns::new(route_patterns),
            requests,
            latency,
            deliveries,
            batch_passes,
            batches_closed,
            batches_submitted,
            batches_finished,
            payouts_settled,
            inbound_files,
            bank_report_lines,
            pool,
            pool_waiting,
            outbox_pending,
            payouts,
            scrape_failures,
            connection_errors,
            callback_refusals,
            callback_bodies_held,
        }
    }

    /// Sets how many partner callback bodies are held now (sampled when scraped).
    pub fn observe_callback_bodies_held(&self, held: usize) {
        self.callback_bodies_held
            .set(i64::try_from(held).unwrap_or(i64::MAX));
    }

    /// Counts one answered request: its method, the route pattern it matched (`None`: no
    /// route), the status answered and the time taken.
    pub fn observe_request(&self, method: &Method, route: Option<&str>, status: u16, seconds: f64) {
        let method = HttpMethod::of(method);
        let route = self.routes.label(route);
        self.latency
            .get_or_create(&RouteLabels {
                method,
                route: route.clone(),
            })
            .observe(seconds);
        self.requests
            .get_or_create(&RequestLabels {
                method,
                route,
                status,
            })
            .inc();
    }

    /// Counts one webhook attempt by what happened next (`None`: superseded by another worker).
    pub fn observe_delivery(&self, next: Option<&NextStep>) {
        self.count_delivery(match next {
            Some(NextStep::Delivered) => DeliveryOutcome::Delivered,
            Some(NextStep::RetryAt(_)) => DeliveryOutcome::Retry,
            Some(NextStep::Exhausted) => DeliveryOutcome::Exhausted,
            Some(NextStep::DisableEndpoint) => DeliveryOutcome::EndpointDisabled,
            None => DeliveryOutcome::Superseded,
        });
    }

    /// Counts one webhook attempt whose recording failed.
    pub fn observe_delivery_error(&self) {
        self.count_delivery(DeliveryOutcome::Error);
    }

    fn count_delivery(&self, outcome: DeliveryOutcome) {
        self.deliveries
            .get_or_create(&DeliveryLabels { outcome })
            .inc();
    }

    /// Counts what a poll of the inbound bank files did.
    pub fn observe_inbound_pass(&self, pass: &InboundPass) {
        let wide = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let count = |family: &Family<OutcomeLabels, Counter>, outcome: &'static str, n: usize| {
            if n > 0 {
                family
                    .get_or_create(&OutcomeLabels { outcome })
                    .inc_by(wide(n));
            }
        };
        count(
            &self.inbound_files,
            "read",
            pass.files
                .saturating_sub(pass.unreadable)
                .saturating_sub(pass.altered),
        );
        count(&self.inbound_files, "unreadable", pass.unreadable);
        count(&self.inbound_files, "altered", pass.altered);
        count(&self.bank_report_lines, "applied", pass.applied);
        count(&self.bank_report_lines, "repeated", pass.repeated);
        count(&self.bank_report_lines, "unmatched", pass.unmatched);
        count(&self.bank_report_lines, "noted", pass.noted);
        count(&self.bank_report_lines, "anomaly", pass.anomalies);
    }

    /// Counts what a batch job pass did.
    pub fn observe_batch_pass(&self, pass: &RunnerPass) {
        if pass.is_idle() {
            return;
        }
        let wide = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        self.batch_passes.inc();
        self.batches_closed.inc_by(wide(pass.closed));
        self.batches_submitted.inc_by(wide(pass.submitted));
        self.batches_finished.inc_by(wide(pass.finished));
        self.payouts_settled.inc_by(wide(pass.settled));
    }

    /// Samples the gauges from `sampler` and renders everything in the Prometheus text format.
    /// A failed sample is counted and the gauges keep their previous values.
    pub async fn render(&self, sampler: &dyn Sampler) -> String {
        match sampler.sample().await {
            Ok(sample) => self.apply(&sample),
            Err(e) => {
                tracing::warn!(error = %e, "sampling metrics failed");
                self.scrape_failures.inc();
            }
        }
        for &kind in Counted::ALL {
            let total = kind.total();
            // `fetch_max`: two scrapes at once never count an event twice.
            match kind {
                Counted::ConnectionError => {
                    self.connection_errors
                        .inner()
                        .fetch_max(total, Ordering::Relaxed);
                }
                Counted::Callback(reason) => {
                    self.callback_refusals
                        .get_or_create(&RefusalLabels { reason })
                        .inner()
                        .fetch_max(total, Ordering::Relaxed);
                }
            }
        }
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }

    fn apply(&self, sample: &Sample) {
        for &state in PoolState::ALL {
            let count = match state {
                PoolState::InUse => sample.pool_size.saturating_sub(sample.pool_idle).max(0),
                PoolState::Idle => sample.pool_idle,
            };
            self.pool.get_or_create(&StateLabels { state }).set(count);
        }
        self.pool_waiting.set(sample.pool_waiting);
        self.outbox_pending.set(sample.outbox_pending);
        for &status in PayoutStatus::ALL {
            let count = sample
                .payouts_by_status
                .iter()
                .find(|(code, _)| *code == i16::from(status.code()))
                .map_or(0, |(_, n)| *n);
            self.payouts
                .get_or_create(&StatusLabels {
                    status: PayoutStatusLabel(status),
                })
                .set(count);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    struct Fixed(Result<Sample, ()>);

    #[async_trait]
    impl Sampler for Fixed {
        async fn sample(&self) -> Result<Sample, PortError> {
            self.0
                .clone()
                .map_err(|()| PortError::Unavailable(anyhow::anyhow!("down")))
        }
    }

    #[tokio::test]
    async fn renders_counters_histograms_and_sampled_gauges() {
        let metrics = Metrics::new(crate::http::route_patterns());
        metrics.observe_request(&Method::GET, Some("/api/payout/{id}"), 200, 0.002);
        metrics.observe_request(&Method::GET, Some("/api/payout/{id}"), 200, 0.004);
        metrics.observe_delivery(Some(&NextStep::Delivered));
        metrics.observe_batch_pass(&RunnerPass {
            closed: 2,
            submitted: 2,
            settled: 5,
            finished: 1,
        });
        metrics.observe_inbound_pass(&InboundPass {
            files: 3,
            unreadable: 1,
            applied: 4,
            unmatched: 1,
            ..InboundPass::default()
        });
        let sample = Sample {
            pool_size: 5,
            pool_idle: 3,
            pool_waiting: 1,
            outbox_pending: 7,
            payouts_by_status: vec![(1, 4), (4, 9)],
        };
        let text = metrics.render(&Fixed(Ok(sample))).await;
        for line in [
            "payoutd_http_requests_total{method=\"GET\",route=\"/api/payout/{id}\",status=\"200\"} 2",
            "payoutd_http_request_duration_seconds_count{method=\"GET\",route=\"/api/payout/{id}\"} 2",
            "payoutd_webhook_attempts_total{outcome=\"delivered\"} 1",
            "payoutd_payouts_settled_total 5",
            "payoutd_inbound_bank_files_total{outcome=\"read\"} 2",
            "payoutd_inbound_bank_files_total{outcome=\"unreadable\"} 1",
            "payoutd_bank_report_lines_total{outcome=\"applied\"} 4",
            "payoutd_bank_report_lines_total{outcome=\"unmatched\"} 1",
            "payoutd_db_pool_connections{state=\"in_use\"} 2",
            "payoutd_db_pool_waiting 1",
            "payoutd_outbox_pending_events 7",
            "payoutd_payouts{status=\"pending\"} 4",
            "payoutd_payouts{status=\"successful\"} 9",
            "payoutd_payouts{status=\"failed\"} 0",
        ] {
            assert!(text.contains(line), "missing {line:?} in\n{text}");
        }
        // A failed sample keeps the last values and is counted.
        let text = metrics.render(&Fixed(Err(()))).await;
        assert!(text.contains("payoutd_outbox_pending_events 7"));
        assert!(text.contains("payoutd_scrape_sample_failures_total 1"));
    }

    #[test]
    fn methods_outside_the_list_are_other_and_the_rest_are_themselves() {
        for &method in HttpMethod::ALL {
            let parsed = Method::from_bytes(method.as_str().as_bytes()).unwrap();
            // `OTHER` too: a method of that name is no method of the list.
            assert_eq!(HttpMethod::of(&parsed), method, "{method:?}");
        }
        for token in ["XFOO", "get", "PROPFIND", "M-SEARCH"] {
            let method = Method::from_bytes(token.as_bytes()).unwrap();
            assert_eq!(HttpMethod::of(&method), HttpMethod::Other, "{token}");
        }
    }

    #[tokio::test]
    async fn routes_are_the_route_tables_patterns_and_anything_else_is_unmatched() {
        let metrics = Metrics::new(crate::http::route_patterns());
        let mut table = crate::http::RouteList::default();
        crate::http::route_table(&mut table);
        for (_, path) in &table.0 {
            assert_eq!(metrics.routes.label(Some(path)).as_str(), path.as_str());
        }
        for unknown in [Some("/api/receiver/123"), Some("/{tail}*"), None] {
            assert_eq!(
                metrics.routes.label(unknown).as_str(),
                RoutePattern::UNMATCHED
            );
        }
        for n in 0..100 {
            let method = Method::from_bytes(format!("X{n}").as_bytes()).unwrap();
            metrics.observe_request(&method, Some(&format!("/x/{n}")), 404, 0.001);
        }
        metrics.observe_delivery_error();
        let text = metrics.render(&Fixed(Err(()))).await;
        let series = text
            .lines()
            .filter(|line| line.starts_with("payoutd_http_requests_total{"))
            .collect::<Vec<_>>();
        assert_eq!(
            series,
            [
                "payoutd_http_requests_total{method=\"OTHER\",route=\"<unmatched>\",status=\"404\"} 100"
            ]
        );
        assert!(
            text.contains(
                "by outcome (delivered, retry, exhausted, endpoint_disabled, superseded, error)"
            ),
            "{text}"
        );
    }
}
