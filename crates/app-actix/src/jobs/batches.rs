//! The loop that runs the batch job ([`BatchRunner`]): closing due batches, submitting them to
//! the rail and recording its results.

use std::sync::Arc;
use std::time::Duration;

use domain::batch::runner::BatchRunner;

use crate::metrics::Metrics;

/// Runs batch passes until `stop` says so: at once again while a pass found work, else after
/// `poll`. A pass in hand finishes before it stops.
pub async fn run(
    runner: Arc<BatchRunner>,
    poll: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
    metrics: Arc<Metrics>,
) {
    loop {
        if *stop.borrow() {
            return;
        }
        let idle = match runner.run_once().await {
            Ok(pass) => {
                metrics.observe_batch_pass(&pass);
                if !pass.is_idle() {
                    tracing::info!(
                        closed = pass.closed,
                        submitted = pass.submitted,
                        settled = pass.settled,
                        finished = pass.finished,
                        "batch pass"
                    );
                }
                pass.is_idle()
            }
            Err(e) => {
                tracing::warn!(error = %e, "batch pass failed");
                true
            }
        };
        if idle {
            tokio::select! {
                () = tokio::time::sleep(poll) => {}
                _ = stop.changed() => {}
            }
        }
    }
}
