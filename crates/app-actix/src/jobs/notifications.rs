//! The loop that retries confirmation requests ([`NotificationWorker::run_due`]).

use std::sync::Arc;
use std::time::Duration;

use domain::account::notification::worker::NotificationWorker;

/// How often the retry job looks for due notifications when the last pass found few.
pub const POLL: Duration = Duration::from_secs(5);

/// Runs passes until `stop` is set: at once again while a pass comes back full (more may be
/// due), otherwise every `poll`. A pass that fails (database down) is logged and retried at the
/// next poll. Several instances may run it: each pass claims its rows.
pub async fn run(
    worker: Arc<NotificationWorker>,
    poll: Duration,
    stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut stop = stop;
    let batch = usize::try_from(worker.settings().batch).unwrap_or(usize::MAX);
    loop {
        if *stop.borrow() {
            return;
        }
        let wait = match worker.run_due().await {
            Ok(report) => {
                if report.claimed > 0 {
                    tracing::info!(
                        claimed = report.claimed,
                        sent = report.sent,
                        retried = report.retried,
                        failed = report.failed,
                        unrecorded = report.unrecorded,
                        "confirmation request retries"
                    );
                }
                if report.claimed >= batch {
                    Duration::ZERO
                } else {
                    poll
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "claiming due notifications failed");
                poll
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {}
        }
    }
}
