//! `GET /metrics` (Prometheus text format) through `prometheus-client`, the official Rust client:
//! requests by route and status with a latency histogram, webhook delivery outcomes, batch job
//! passes, and, sampled at scrape time, the database pool, the outbox backlog and payouts by
//! status.

use async_trait::async_trait;
use domain::PortError;
use domain::batch::runner::RunnerPass;
use domain::delivery::NextStep;
use domain::payout::PayoutStatus;
use domain::rail::inbound::InboundPass;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

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

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    method: String,
    route: String,
    status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RouteLabels {
    method: String,
    route: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StatusLabels {
    status: String,
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
    requests: Family<RequestLabels, Counter>,
    latency: LatencyFamily,
    deliveries: Family<OutcomeLabels, Counter>,
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
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Registers every metric.
    pub fn new() -> Self {
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
        let deliveries = Family::<OutcomeLabels, Counter>::default();
        registry.register(
            "webhook_attempts",
            "Webhook delivery attempts recorded, by outcome (delivered, retry, exhausted, endpoint_disabled, superseded, error)",
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
            "Database connections of this process, by state (in_use, idle)",
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
        Self {
            registry,
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
        }
    }

    /// Counts one answered request.
    pub fn observe_request(&self, method: &str, route: &str, status: u16, seconds: f64) {
        self.requests
            .get_or_create(&RequestLabels {
                method: method.to_owned(),
                route: route.to_owned(),
                status,
            })
            .inc();
        self.latency
            .get_or_create(&RouteLabels {
                method: method.to_owned(),
                route: route.to_owned(),
            })
            .observe(seconds);
    }

    /// Counts one webhook attempt by what happened next (`None`: superseded by another worker).
    pub fn observe_delivery(&self, next: Option<&NextStep>) {
        let outcome = match next {
            Some(NextStep::Delivered) => "delivered",
            Some(NextStep::RetryAt(_)) => "retry",
            Some(NextStep::Exhausted) => "exhausted",
            Some(NextStep::DisableEndpoint) => "endpoint_disabled",
            None => "superseded",
        };
        self.count_delivery(outcome);
    }

    /// Counts one webhook attempt whose recording failed.
    pub fn observe_delivery_error(&self) {
        self.count_delivery("error");
    }

    fn count_delivery(&self, outcome: &str) {
        self.deliveries
            .get_or_create(&OutcomeLabels {
                outcome: outcome.to_owned(),
            })
            .inc();
    }

    /// Counts what a poll of the inbound bank files did.
    pub fn observe_inbound_pass(&self, pass: &InboundPass) {
        let wide = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let count = |family: &Family<OutcomeLabels, Counter>, outcome: &str, n: usize| {
            if n > 0 {
                family
                    .get_or_create(&OutcomeLabels {
                        outcome: outcome.to_owned(),
                    })
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
        let counted = crate::telemetry::connection_errors();
        let shown = self.connection_errors.get();
        if counted > shown {
            self.connection_errors.inc_by(counted - shown);
        }
        let mut text = String::new();
        if encode(&mut text, &self.registry).is_err() {
            text.clear();
        }
        text
    }

    fn apply(&self, sample: &Sample) {
        let state = |s: &str| StateLabels {
            state: s.to_owned(),
        };
        self.pool
            .get_or_create(&state("in_use"))
            .set(sample.pool_size.saturating_sub(sample.pool_idle).max(0));
        self.pool
            .get_or_create(&state("idle"))
            .set(sample.pool_idle);
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
                    status: status.as_str().to_owned(),
                })
                .set(count);
        }
    }
}

#[cfg(test)]
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
        let metrics = Metrics::new();
        metrics.observe_request("GET", "/api/payout/{id}", 200, 0.002);
        metrics.observe_request("GET", "/api/payout/{id}", 200, 0.004);
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
}
