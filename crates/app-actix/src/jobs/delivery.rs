//! The loop that runs the webhook delivery job ([`DeliveryWorker`]): claiming due events,
//! keeping attempts in flight and recording them.

use std::sync::Arc;
use std::time::Duration;

use domain::delivery::NextStep;
use domain::delivery::worker::DeliveryWorker;

use crate::metrics::Metrics;

/// How long the delivery loop waits after a local commit signal before claiming, so that the
/// events other requests are committing at the same moment join the same pass.
pub const DELIVERY_GATHER: Duration = Duration::from_millis(5);

/// The least time between two claims that commit signals bring forward. Under load commits
/// signal continuously, and a claim costs the same whether it finds 5 events or 64 (it walks
/// the due index, dead entries included), so signalled claims are spaced out; when idle the
/// first signal is answered after [`DELIVERY_GATHER`] alone.
pub const DELIVERY_SIGNAL_SPACING: Duration = Duration::from_millis(25);

/// Delivers until `stop` is set, keeping up to the worker's capacity of attempts in flight and
/// claiming more as each one ends, so one slow or hanging endpoint holds only its own attempts,
/// never the other events (or other subaccounts) behind it. Claims are made at once while they
/// come back full, [`DELIVERY_GATHER`] after `committed` signals that this process committed
/// new events (but not within [`DELIVERY_SIGNAL_SPACING`] of the last claim), and otherwise
/// every `poll` (which finds the events other instances wrote). On stop, the attempts in flight
/// finish and are recorded; nothing is left claimed but unrecorded except by a crash (the lease
/// covers that).
pub async fn run(
    worker: Arc<DeliveryWorker>,
    poll: Duration,
    committed: Arc<tokio::sync::Notify>,
    stop: tokio::sync::watch::Receiver<bool>,
    metrics: Arc<Metrics>,
) {
    let mut stop = stop;
    let mut in_flight = tokio::task::JoinSet::new();
    let mut next_claim = tokio::time::Instant::now();
    let mut last_claim = next_claim;
    loop {
        let stopping = *stop.borrow();
        let free = free_slots(&worker, &in_flight);
        if !stopping
            && worth_claiming(&worker, &in_flight)
            && tokio::time::Instant::now() >= next_claim
        {
            last_claim = tokio::time::Instant::now();
            match worker.claim(free).await {
                Ok(claim) => {
                    let full = u32::try_from(claim.taken()).unwrap_or(u32::MAX) == free;
                    // Given up by the claim (no enabled endpoint): already recorded.
                    for _ in 0..claim.skipped {
                        metrics.observe_delivery(Some(&NextStep::Exhausted));
                    }
                    for event in claim.events {
                        let worker = worker.clone();
                        in_flight.spawn(async move {
                            let record = worker.send(&event).await;
                            (event, record)
                        });
                    }
                    // More may be due right away only if this claim came back full.
                    let now = tokio::time::Instant::now();
                    next_claim = if full { now } else { now + poll };
                }
                Err(e) => {
                    tracing::warn!(error = %e, "claiming webhook events failed");
                    next_claim = tokio::time::Instant::now() + poll;
                }
            }
        }
        if stopping && in_flight.is_empty() {
            return;
        }
        tokio::select! {
            Some(first) = in_flight.join_next(), if !in_flight.is_empty() => {
                // Record every attempt that has ended by now in one transaction.
                let mut done = Vec::new();
                let mut next = Some(first);
                while let Some(finished) = next {
                    match finished {
                        Ok(attempt) => done.push(attempt),
                        Err(e) => tracing::warn!(error = %e, "a webhook attempt task ended abnormally"),
                    }
                    next = in_flight.try_join_next();
                }
                match worker.record(&done).await {
                    Ok(steps) => {
                        for step in steps {
                            metrics.observe_delivery(step.as_ref());
                        }
                    }
                    Err(e) => {
                        // The claims stay until their leases end; the events are attempted again.
                        for _ in &done {
                            metrics.observe_delivery_error();
                        }
                        tracing::warn!(error = %e, attempts = done.len(), "recording webhook attempts failed");
                    }
                }
            }
            // Only when a claim could follow: with too few free slots, waking for the timer
            // would spin until an attempt ends.
            () = tokio::time::sleep_until(next_claim), if !stopping && worth_claiming(&worker, &in_flight) => {}
            // Only while a signal could bring the next claim forward. Once the next claim is as
            // early as a signal can make it, further signals change nothing, and waking for
            // each commit (thousands a second under load) would cost a thread wake-up apiece.
            // A signal sent meanwhile is kept (`notify_one`) and answered after that claim.
            () = committed.notified(), if !stopping && next_claim > signalled_claim(last_claim) => {
                // New events are due now: claim soon rather than at the next poll.
                next_claim = next_claim.min(signalled_claim(last_claim));
            }
            _ = stop.changed(), if !stopping => {}
        }
    }
}

/// When a commit signal received now schedules the next claim: after [`DELIVERY_GATHER`], but
/// not within [`DELIVERY_SIGNAL_SPACING`] of the last claim. It only grows with time, so a claim
/// already due by then cannot be brought forward by any later signal.
fn signalled_claim(last_claim: tokio::time::Instant) -> tokio::time::Instant {
    (tokio::time::Instant::now() + DELIVERY_GATHER).max(last_claim + DELIVERY_SIGNAL_SPACING)
}

fn free_slots<T: 'static>(worker: &DeliveryWorker, in_flight: &tokio::task::JoinSet<T>) -> u32 {
    worker
        .capacity()
        .saturating_sub(u32::try_from(in_flight.len()).unwrap_or(u32::MAX))
}

/// Claims go in batches: once a quarter of the slots are free (or none is busy), not for every
/// attempt that ends, which would cost a claiming transaction per event.
fn worth_claiming<T: 'static>(
    worker: &DeliveryWorker,
    in_flight: &tokio::task::JoinSet<T>,
) -> bool {
    free_slots(worker, in_flight) >= (worker.capacity() / 4).max(1) || in_flight.is_empty()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use domain::delivery::ports::{Claim, MockDeliveryStore};
    use domain::delivery::sender::MockWebhookSender;
    use domain::delivery::worker::WorkerSettings;

    use super::*;
    use crate::system::{RandomIds, SystemClock};

    /// A delivery worker whose claims find nothing and are counted.
    fn counting_worker(claims: Arc<AtomicUsize>) -> Arc<DeliveryWorker> {
        let mut store = MockDeliveryStore::new();
        store.expect_claim_due().returning(move |_, _, _| {
            claims.fetch_add(1, Ordering::SeqCst);
            Ok(Claim::default())
        });
        Arc::new(DeliveryWorker::new(
            Arc::new(store),
            Arc::new(MockWebhookSender::new()),
            Arc::new(SystemClock),
            Arc::new(RandomIds::default()),
            WorkerSettings::default(),
        ))
    }

    #[tokio::test(start_paused = true)]
    async fn commit_signals_bring_claims_forward_spaced_out_and_none_is_lost() {
        let claims = Arc::new(AtomicUsize::new(0));
        let count = || claims.load(Ordering::SeqCst);
        let committed = Arc::new(tokio::sync::Notify::new());
        let (stop, stopped) = tokio::sync::watch::channel(false);
        let poll = Duration::from_secs(3600);
        let delivery = tokio::spawn(run(
            counting_worker(Arc::clone(&claims)),
            poll,
            Arc::clone(&committed),
            stopped,
            Arc::new(Metrics::new(crate::http::route_patterns())),
        ));
        let ms = Duration::from_millis;
        tokio::time::sleep(ms(1)).await;
        assert_eq!(count(), 1, "the first claim is made at once");

        // A burst of commits: one claim, spaced from the last one; the signal the loop was not
        // listening for is kept and answered by one more claim, spaced again.
        for _ in 0..100 {
            committed.notify_one();
            tokio::task::yield_now().await;
        }
        tokio::time::sleep(DELIVERY_SIGNAL_SPACING).await;
        assert_eq!(count(), 2);
        tokio::time::sleep(DELIVERY_SIGNAL_SPACING).await;
        assert_eq!(count(), 3);
        // Then nothing until the poll: no claim per signal, no spinning.
        tokio::time::sleep(ms(1000)).await;
        assert_eq!(count(), 3);

        // A lone commit after a quiet spell is answered after the gathering time.
        committed.notify_one();
        tokio::time::sleep(DELIVERY_GATHER + ms(1)).await;
        assert_eq!(count(), 4);
        // And without signals, the poll.
        tokio::time::sleep(poll).await;
        assert_eq!(count(), 5);

        stop.send(true).unwrap();
        delivery.await.unwrap();
    }
}
