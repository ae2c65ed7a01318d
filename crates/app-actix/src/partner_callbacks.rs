//! Status reports a rail's partner pushes (the Interac e-Transfer partner of `cad/digital`):
//! checked before they are read, verified with the rail's shared secret, then applied through
//! the same inbound processor as the reports polled from the partner, so a report pushed and
//! polled, pushed twice or replayed within the signature tolerance is applied once. The HTTP
//! route is [`crate::http::rail_callbacks`].
//!
//! Anyone can send a callback, so what can be refused without the body is refused before it is
//! read ([`RailCallbacks::admit`]): a missing, malformed, stale or early signature header, and a
//! declared length over [`MAX_CALLBACK_BYTES`]. At most [`MAX_CALLBACK_READERS`] bodies are held
//! at once, whatever their senders (a captured header can be replayed with any body for the
//! tolerance, and the body must be read to find its signature wrong; a captured callback can be
//! replayed whole): a body is held from its reading until its report is applied. Those
//! refusals are counted, not logged one by one ([`crate::telemetry::Counted`]).
//!
//! Reports pushed are applied one at a time in a process: a partner that writes the final
//! reports of many batches at once pushes them together, and applying a report of thousands of
//! payments holds a part of it (2,500 lines and their payouts) in memory, so applying them side
//! by side would hold that many parts at once (eight 8,000-payment reports took payoutd's
//! memory from 214 to 585 MiB). The others wait, their bodies held, and the partner's callback
//! is answered once its report is applied.

use std::sync::Arc;

use adapters_rails::interac::{CallbackError, CallbackHead, SignatureError, check_callback_head};
use domain::PortError;
use domain::account::PayoutMethod;
use domain::masking::Secret;
use domain::ports::Clock;
use domain::rail::inbound::{InboundPass, InboundProcessor};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};

use crate::telemetry::{CallbackRefusal, Counted};

/// The largest callback body read: a status report of a large batch, with room to spare.
pub const MAX_CALLBACK_BYTES: usize = 4 * 1024 * 1024;

/// How many callback bodies the process holds at once, being read or waiting for their report
/// to be applied (at most 32 MiB). The partner sends a report when it writes one; more at once
/// are told to retry.
pub const MAX_CALLBACK_READERS: usize = 8;

/// What one process's callbacks share across its HTTP workers: the readers of callback bodies
/// ([`MAX_CALLBACK_READERS`]) and the right to apply a pushed report (one at a time).
#[derive(Debug, Clone)]
pub struct CallbackCapacity {
    readers: Arc<Semaphore>,
    applier: Arc<Mutex<()>>,
}

impl CallbackCapacity {
    /// A process's capacity: every reader free, no report being applied.
    pub fn new() -> Self {
        Self {
            readers: Arc::new(Semaphore::new(MAX_CALLBACK_READERS)),
            applier: Arc::new(Mutex::new(())),
        }
    }
}

impl Default for CallbackCapacity {
    fn default() -> Self {
        Self::new()
    }
}

/// Why a pushed report was not taken.
#[derive(Debug)]
pub enum CallbackRefused {
    /// Refused before its signature was verified; counted (see the module docs).
    Counted(CallbackRefusal),
    /// Signed, but not a status report of the protocol.
    NotAReport,
    /// The report could not be applied or recorded (the partner retries).
    Store(PortError),
}

impl CallbackRefused {
    /// A refusal before the signature was verified, counted.
    pub fn counted(reason: CallbackRefusal) -> Self {
        Counted::Callback(reason).count();
        Self::Counted(reason)
    }
}

/// A callback whose head passed: its body may be read, holding one of the readers until it is
/// dropped (once its report is applied, or refused).
#[derive(Debug)]
pub struct Admitted {
    head: CallbackHead,
    _reader: OwnedSemaphorePermit,
}

/// The `cad/digital` rail's callbacks: its reports' processor, the secret and tolerance its
/// partner signs with, the process's readers of callback bodies and its applier of pushed
/// reports.
pub struct RailCallbacks {
    processor: Arc<InboundProcessor>,
    secret: Secret<String>,
    tolerance_secs: u64,
    clock: Arc<dyn Clock>,
    capacity: CallbackCapacity,
}

impl RailCallbacks {
    /// Wires the callbacks to `processor`, which must have a `cad/digital` rail; bodies are
    /// held and reports applied within `capacity` (one per process).
    pub fn new(
        processor: Arc<InboundProcessor>,
        secret: Secret<String>,
        tolerance_secs: u64,
        clock: Arc<dyn Clock>,
        capacity: CallbackCapacity,
    ) -> Self {
        Self {
            processor,
            secret,
            tolerance_secs,
            clock,
            capacity,
        }
    }

    /// What is checked before the body is read: the `X-Partner-Signature` value `signature`
    /// (present, well-formed, dated within the tolerance of this clock), the declared
    /// `Content-Length` (`None`: chunked, then bounded while it is read), and a free reader.
    ///
    /// # Errors
    /// [`CallbackRefused::Counted`] with `Unsigned`, `MalformedSignature`, `StaleSignature`,
    /// `TooLarge` or `Busy`.
    pub fn admit(
        &self,
        signature: Option<&str>,
        declared_length: Option<u64>,
    ) -> Result<Admitted, CallbackRefused> {
        let now = self.clock.now().timestamp();
        let head = check_callback_head(signature, now, self.tolerance_secs)
            .map_err(|e| CallbackRefused::counted(refusal(&e)))?;
        let limit = u64::try_from(MAX_CALLBACK_BYTES).unwrap_or(u64::MAX);
        if declared_length.is_some_and(|length| length > limit) {
            return Err(CallbackRefused::counted(CallbackRefusal::TooLarge));
        }
        let reader = self
            .capacity
            .readers
            .clone()
            .try_acquire_owned()
            .map_err(|_| CallbackRefused::counted(CallbackRefusal::Busy))?;
        Ok(Admitted {
            head,
            _reader: reader,
        })
    }

    /// How many callback bodies are held now (admitted: being read, or read and waiting for or
    /// under their report's application), of at most [`MAX_CALLBACK_READERS`].
    pub fn bodies_held(&self) -> usize {
        MAX_CALLBACK_READERS.saturating_sub(self.capacity.readers.available_permits())
    }

    /// Verifies `body`, read under `admitted`, against its signature (constant time), then
    /// applies the report under its `report_id` once no other pushed report is being applied in
    /// this process, `admitted` held until then. `Ok(None)` when the processor has no
    /// `cad/digital` rail.
    ///
    /// # Errors
    /// [`CallbackRefused`]; nothing is applied or recorded then.
    pub async fn receive(
        &self,
        admitted: Admitted,
        body: &[u8],
    ) -> Result<Option<InboundPass>, CallbackRefused> {
        let report = admitted
            .head
            .verify_body(body, self.secret.expose().as_bytes())
            .map_err(|e| match e {
                CallbackError::NotAReport(why) => {
                    // Signed with the shared secret: the partner's own mistake, rare enough
                    // to log each time.
                    tracing::warn!(reason = %why, "signed partner callback is not a status report");
                    CallbackRefused::NotAReport
                }
                other => CallbackRefused::counted(refusal(&other)),
            })?;
        // The body stays held (`admitted`) until its report is applied: freeing its reader
        // earlier would let callbacks waiting to be applied, each holding its body, grow
        // without bound.
        let applying = self.capacity.applier.lock().await;
        let applied = self
            .processor
            .receive(PayoutMethod::Digital, &report.report_id, body)
            .await
            .map_err(CallbackRefused::Store);
        drop(applying);
        drop(admitted);
        applied
    }
}

/// The refusal a signature check gives.
fn refusal(error: &CallbackError) -> CallbackRefusal {
    match error {
        CallbackError::Unsigned => CallbackRefusal::Unsigned,
        CallbackError::Signature(SignatureError::Malformed(_)) => {
            CallbackRefusal::MalformedSignature
        }
        CallbackError::Signature(
            SignatureError::Expired { .. } | SignatureError::FromTheFuture { .. },
        ) => CallbackRefusal::StaleSignature,
        // An empty secret is refused when the configuration is read (were it not, no signature
        // could match); a report is read only once its signature matched, so `NotAReport`
        // never comes here.
        CallbackError::Signature(SignatureError::Mismatch | SignatureError::EmptySecret)
        | CallbackError::NotAReport(_) => CallbackRefusal::BadSignature,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use std::sync::mpsc;
    use std::time::Duration;

    use adapters_rails::interac::{ANSWERS, InteracReader};
    use bank_formats::interac::{StatusReport, sign};
    use domain::account::ports::MockAccountStore;
    use domain::batch::ports::{MockBatchStore, MockPayoutRail};
    use domain::batch::runner::BatchRunner;
    use domain::payout::ports::MockPayoutStore;
    use domain::ports::{MockClock, MockIdGenerator};
    use domain::rail::inbound::InboundRail;
    use domain::rail::inbound_ports::MockInboundStore;
    use domain::rail::ports::MockRailFileStore;
    use domain::rail::transport::MockFileTransport;

    use super::*;

    const SECRET: &str = "partner-secret";

    fn clock() -> Arc<dyn Clock> {
        let mut clock = MockClock::new();
        clock.expect_now().returning(chrono::Utc::now);
        Arc::new(clock)
    }

    /// Callbacks whose processor tells `entered` when it starts on a report (is it known?),
    /// then waits for `release` in its next store call (was the name read before?), which
    /// fails: nothing is applied. (The wait is in a second method: mockall holds a method's
    /// expectation while it answers, so a call waiting in it would also stop the next caller
    /// of that method.)
    fn callbacks(entered: mpsc::Sender<()>, release: mpsc::Receiver<()>) -> Arc<RailCallbacks> {
        let mut inbound = MockInboundStore::new();
        inbound
            .expect_inbound_known()
            .times(2)
            .returning(move |_, _, _| {
                entered.send(()).unwrap();
                Ok(false)
            });
        inbound.expect_read_under().times(2).returning(move |_, _| {
            release.recv_timeout(Duration::from_secs(10)).unwrap();
            Err(PortError::unknown("the test's store"))
        });
        let mut ids = MockIdGenerator::new();
        ids.expect_new_id().returning(uuid::Uuid::new_v4);
        let ids: Arc<dyn domain::ports::IdGenerator> = Arc::new(ids);
        let runner = Arc::new(BatchRunner::new(
            Arc::new(MockBatchStore::new()),
            Arc::new(MockPayoutStore::new()),
            Arc::new(MockAccountStore::new()),
            Arc::new(MockPayoutRail::new()),
            clock(),
            ids.clone(),
            chrono::Duration::seconds(60),
        ));
        let processor = InboundProcessor::new(
            vec![InboundRail {
                method: PayoutMethod::Digital,
                transport: Arc::new(MockFileTransport::new()),
                reader: Arc::new(InteracReader),
                answers: ANSWERS,
                poll_interval: Duration::from_secs(10),
            }],
            Arc::new(MockRailFileStore::new()),
            Arc::new(inbound),
            Arc::new(MockPayoutStore::new()),
            runner,
            clock(),
            ids,
        );
        Arc::new(RailCallbacks::new(
            Arc::new(processor),
            Secret::new(SECRET.to_owned()),
            300,
            clock(),
            CallbackCapacity::new(),
        ))
    }

    /// A signed status report `id`: its signature header and body.
    fn signed_report(id: &str) -> (String, Vec<u8>) {
        let body = StatusReport {
            report_id: id.to_owned(),
            batch_id: "0193a3c4e0f27d6a9b1c2d3e4f5a6b7c".to_owned(),
            created_at: chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap(),
            batch_status: None,
            payments: Vec::new(),
        }
        .to_bytes()
        .unwrap();
        let now = chrono::Utc::now().timestamp();
        (sign(SECRET.as_bytes(), now, &body).unwrap(), body)
    }

    fn push(
        callbacks: &Arc<RailCallbacks>,
        id: &str,
    ) -> tokio::task::JoinHandle<Result<Option<InboundPass>, CallbackRefused>> {
        let (signature, body) = signed_report(id);
        let admitted = callbacks
            .admit(Some(&signature), Some(body.len() as u64))
            .unwrap();
        let callbacks = callbacks.clone();
        tokio::spawn(async move { callbacks.receive(admitted, &body).await })
    }

    async fn wait_entered(entered: &Arc<std::sync::Mutex<mpsc::Receiver<()>>>) -> bool {
        let entered = entered.clone();
        tokio::task::spawn_blocking(move || {
            entered
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_millis(300))
                .is_ok()
        })
        .await
        .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    async fn pushed_reports_are_applied_one_at_a_time_their_bodies_held_until_then() {
        let (entered_tx, entered_rx) = mpsc::channel();
        let (release, release_rx) = mpsc::channel();
        let entered = Arc::new(std::sync::Mutex::new(entered_rx));
        let callbacks = callbacks(entered_tx, release_rx);

        let first = push(&callbacks, "rpt_1");
        assert!(wait_entered(&entered).await, "the first report is applied");
        let second = push(&callbacks, "rpt_2");
        assert!(
            !wait_entered(&entered).await,
            "the second report waits while the first is applied"
        );
        assert_eq!(callbacks.bodies_held(), 2, "both bodies are held");

        release.send(()).unwrap();
        assert!(matches!(
            first.await.unwrap(),
            Err(CallbackRefused::Store(_))
        ));
        assert!(wait_entered(&entered).await, "then the second is applied");
        assert_eq!(callbacks.bodies_held(), 1);
        release.send(()).unwrap();
        assert!(matches!(
            second.await.unwrap(),
            Err(CallbackRefused::Store(_))
        ));
        assert_eq!(callbacks.bodies_held(), 0, "every body let go once applied");
    }
}
