//! One pass of the delivery worker: claim due events, attempt each, record what happened.

use std::sync::Arc;
use std::time::Duration;

use futures_util::future::join_all;

use super::policy::{NextStep, next_step};
use super::ports::{AttemptRecord, Claim, ClaimedEvent, DeliveryStore};
use super::sender::{WebhookDelivery, WebhookSender};
use crate::error::PortError;
use crate::ports::{Clock, IdGenerator};

/// How a worker claims and sends.
#[derive(Debug, Clone, Copy)]
pub struct WorkerSettings {
    /// Most events claimed (and sent concurrently) per pass.
    pub batch: u32,
    /// How long a claim holds; longer than the sender's timeout, so a live worker never loses
    /// an event it is still sending.
    pub lease: Duration,
}

impl Default for WorkerSettings {
    fn default() -> Self {
        Self {
            batch: 64,
            lease: Duration::from_secs(60),
        }
    }
}

/// What one pass did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PassSummary {
    /// Events claimed.
    pub claimed: usize,
    /// Delivered now.
    pub delivered: usize,
    /// Scheduled for another attempt.
    pub retried: usize,
    /// Given up (no attempts left, endpoint gone, or no enabled endpoint: skipped by the claim).
    pub exhausted: usize,
    /// Outcomes not recorded because another worker took the event over.
    pub superseded: usize,
}

/// Delivers outbox events.
pub struct DeliveryWorker {
    store: Arc<dyn DeliveryStore>,
    sender: Arc<dyn WebhookSender>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
    settings: WorkerSettings,
}

impl DeliveryWorker {
    /// Wires the worker to its ports.
    pub fn new(
        store: Arc<dyn DeliveryStore>,
        sender: Arc<dyn WebhookSender>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
        settings: WorkerSettings,
    ) -> Self {
        Self {
            store,
            sender,
            clock,
            ids,
            settings,
        }
    }

    /// Claims one batch of due events and attempts them concurrently. An empty summary means
    /// nothing was due.
    #[tracing::instrument(level = "trace", skip_all)]
    pub async fn run_once(&self) -> Result<PassSummary, PortError> {
        let claim = self
            .store
            .claim_due(self.clock.now(), self.settings.batch, self.settings.lease)
            .await?;
        let mut summary = PassSummary {
            claimed: claim.taken(),
            exhausted: claim.skipped,
            ..PassSummary::default()
        };
        let results = join_all(claim.events.iter().map(|event| self.attempt(event))).await;
        for result in results {
            match result? {
                None => summary.superseded += 1,
                Some(NextStep::Delivered) => summary.delivered += 1,
                Some(NextStep::RetryAt(_)) => summary.retried += 1,
                Some(NextStep::Exhausted | NextStep::DisableEndpoint) => summary.exhausted += 1,
            }
        }
        Ok(summary)
    }

    /// Claims up to `limit` due events (at most the configured batch) for this worker; those
    /// with nowhere to go are given up by the claim itself.
    #[tracing::instrument(level = "trace", skip_all, fields(limit = limit))]
    pub async fn claim(&self, limit: u32) -> Result<Claim, PortError> {
        let limit = limit.min(self.settings.batch);
        if limit == 0 {
            return Ok(Claim::default());
        }
        self.store
            .claim_due(self.clock.now(), limit, self.settings.lease)
            .await
    }

    /// The most attempts a worker keeps in flight.
    pub fn capacity(&self) -> u32 {
        self.settings.batch
    }

    /// One attempt of one claimed event; `None` when its outcome could not be recorded because
    /// the claim had passed to another worker.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(event = %event.event_id, attempt = event.attempt)
    )]
    pub async fn attempt(&self, event: &ClaimedEvent) -> Result<Option<NextStep>, PortError> {
        let record = self.send(event).await;
        let applied = self.store.record_attempt(event, &record).await?;
        Ok(applied.then_some(record.next))
    }

    /// Records attempts made with [`DeliveryWorker::send`] in one transaction; for each, in
    /// order, the step applied, or `None` when its claim had passed to another worker.
    #[tracing::instrument(level = "debug", skip_all, fields(attempts = done.len()))]
    pub async fn record(
        &self,
        done: &[(ClaimedEvent, AttemptRecord)],
    ) -> Result<Vec<Option<NextStep>>, PortError> {
        if done.is_empty() {
            return Ok(Vec::new());
        }
        let applied = self.store.record_attempts(done).await?;
        Ok(done
            .iter()
            .zip(applied)
            .map(|((_, record), applied)| applied.then_some(record.next))
            .collect())
    }

    /// Sends one claimed event and decides its next step, without recording anything.
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(event = %event.event_id, attempt = event.attempt)
    )]
    pub async fn send(&self, event: &ClaimedEvent) -> AttemptRecord {
        let attempted_at = self.clock.now();
        let delivery = WebhookDelivery {
            url: event.url.clone(),
            event_id: event.event_id,
            attempted_at,
            body: event.body.clone(),
            secrets: event.secrets.clone(),
        };
        let sent = self.sender.send(&delivery).await;
        let jitter = f64::from(self.ids.random_bytes()[0]) / 255.0;
        let finished = self.clock.now();
        AttemptRecord {
            attempted_at,
            next: next_step(event.attempt, &sent.outcome, finished, jitter),
            outcome: sent.outcome,
            latency: sent.latency,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::ports::MockDeliveryStore;
    use crate::delivery::sender::{DeliveryAttempt, DeliveryOutcome, MockWebhookSender};
    use crate::ids::{EventId, SubaccountId};
    use crate::masking::Secret;
    use crate::ports::{MockClock, MockIdGenerator};
    use chrono::{DateTime, Utc};
    use uuid::Uuid;

    fn event(n: u128, url: &str, attempt: u32) -> ClaimedEvent {
        ClaimedEvent {
            event_id: EventId::from_uuid(Uuid::from_u128(n)),
            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(1)),
            attempt,
            claimed_until: DateTime::<Utc>::from_timestamp(1_700_000_060, 0).unwrap_or_default(),
            body: br#"{"event":"receiverCreated"}"#.to_vec(),
            url: url.to_owned(),
            secrets: vec![Secret::new("whsec_AAAA".to_owned())],
        }
    }

    fn worker(store: MockDeliveryStore, sender: MockWebhookSender) -> DeliveryWorker {
        let mut clock = MockClock::new();
        clock
            .expect_now()
            .returning(|| DateTime::<Utc>::from_timestamp(1_700_000_000, 0).unwrap_or_default());
        let mut ids = MockIdGenerator::new();
        ids.expect_random_bytes().returning(|| [128; 32]);
        DeliveryWorker::new(
            Arc::new(store),
            Arc::new(sender),
            Arc::new(clock),
            Arc::new(ids),
            WorkerSettings::default(),
        )
    }

    fn outcome_for(url: &str) -> DeliveryOutcome {
        match url {
            "https://ok.example" => DeliveryOutcome::Delivered { status: 200 },
            "https://gone.example" => DeliveryOutcome::Gone,
            _ => DeliveryOutcome::Failed {
                status: Some(500),
                retry_after: None,
                error: "boom".to_owned(),
            },
        }
    }

    #[tokio::test]
    async fn each_claimed_event_is_attempted_once_and_its_next_step_recorded() {
        let mut store = MockDeliveryStore::new();
        store.expect_claim_due().times(1).returning(|_, _, _| {
            Ok(Claim {
                events: vec![
                    event(1, "https://ok.example", 1),
                    event(2, "https://down.example", 1),
                    event(3, "https://down.example", 8),
                    event(4, "https://gone.example", 2),
                ],
                // Given up by the claim: counted, never sent or recorded here.
                skipped: 2,
            })
        });
        store
            .expect_record_attempt()
            .times(4)
            .returning(|event, record| {
                let n = event.event_id.as_uuid().as_u128();
                let expected = match n {
                    1 => matches!(record.next, NextStep::Delivered),
                    2 => matches!(record.next, NextStep::RetryAt(_)),
                    3 => matches!(record.next, NextStep::Exhausted),
                    4 => matches!(record.next, NextStep::DisableEndpoint),
                    _ => false,
                };
                assert!(expected, "event {n}: {:?}", record.next);
                Ok(true)
            });
        let mut sender = MockWebhookSender::new();
        sender
            .expect_send()
            .times(4)
            .returning(|delivery| DeliveryAttempt {
                outcome: outcome_for(&delivery.url),
                latency: Duration::from_millis(3),
            });
        let summary = worker(store, sender).run_once().await;
        assert_eq!(
            summary.ok(),
            Some(PassSummary {
                claimed: 6,
                delivered: 1,
                retried: 1,
                exhausted: 4,
                superseded: 0
            })
        );
    }

    #[tokio::test]
    async fn an_outcome_the_store_refuses_counts_as_superseded() {
        let mut store = MockDeliveryStore::new();
        store.expect_claim_due().returning(|_, _, _| {
            Ok(Claim {
                events: vec![event(1, "https://ok.example", 1)],
                skipped: 0,
            })
        });
        store.expect_record_attempt().returning(|_, _| Ok(false));
        let mut sender = MockWebhookSender::new();
        sender.expect_send().returning(|_| DeliveryAttempt {
            outcome: DeliveryOutcome::Delivered { status: 200 },
            latency: Duration::ZERO,
        });
        let summary = worker(store, sender).run_once().await;
        assert_eq!(summary.map(|s| s.superseded).ok(), Some(1));
    }

    #[tokio::test]
    async fn nothing_due_sends_nothing() {
        let mut store = MockDeliveryStore::new();
        store
            .expect_claim_due()
            .returning(|_, _, _| Ok(Claim::default()));
        store.expect_record_attempt().never();
        let mut sender = MockWebhookSender::new();
        sender.expect_send().never();
        assert_eq!(
            worker(store, sender).run_once().await.ok(),
            Some(PassSummary::default())
        );
    }

    #[tokio::test]
    async fn sent_attempts_are_recorded_together_and_superseded_ones_say_so() {
        let mut store = MockDeliveryStore::new();
        store.expect_record_attempt().never();
        store
            .expect_record_attempts()
            .withf(|done| {
                done.len() == 2
                    && done[0].1.next == NextStep::Delivered
                    && done[1].1.next == NextStep::DisableEndpoint
            })
            .times(1)
            .returning(|_| Ok(vec![true, false]));
        let mut sender = MockWebhookSender::new();
        sender
            .expect_send()
            .times(2)
            .returning(|delivery| DeliveryAttempt {
                outcome: outcome_for(&delivery.url),
                latency: Duration::from_millis(3),
            });
        let worker = worker(store, sender);
        let events = [
            event(1, "https://ok.example", 1),
            event(2, "https://gone.example", 1),
        ];
        let mut done = Vec::new();
        for e in events {
            let record = worker.send(&e).await;
            done.push((e, record));
        }
        let steps = worker.record(&done).await.ok();
        assert_eq!(steps, Some(vec![Some(NextStep::Delivered), None]));
        assert_eq!(worker.record(&[]).await.ok(), Some(Vec::new()));
    }
}
