//! The loop that reads the production rails' inbound directories ([`InboundProcessor`]): the
//! bank's acknowledgements, status reports, returns and notifications of change.

use std::sync::Arc;
use std::time::Duration;

use domain::rail::inbound::InboundProcessor;

use crate::metrics::Metrics;

/// Polls every `interval` until `stop` says so; a poll in hand finishes first.
pub async fn run(
    processor: Arc<InboundProcessor>,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
    metrics: Arc<Metrics>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        match processor.poll().await {
            Ok(pass) => {
                metrics.observe_inbound_pass(&pass);
                if pass.files > 0 {
                    tracing::info!(
                        files = pass.files,
                        applied = pass.applied,
                        repeated = pass.repeated,
                        unmatched = pass.unmatched,
                        noted = pass.noted,
                        anomalies = pass.anomalies,
                        altered = pass.altered,
                        unreadable = pass.unreadable,
                        "inbound bank files read"
                    );
                }
            }
            Err(e) => tracing::warn!(error = %e, "reading the inbound bank files failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(interval) => {}
            _ = stop.changed() => {}
        }
    }
}
