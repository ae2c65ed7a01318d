//! Status reports a rail's partner pushes (the Interac e-Transfer partner of `cad/digital`):
//! checked before they are read, verified with the rail's shared secret, then applied through
//! the same inbound processor as the reports polled from the partner, so a report pushed and
//! polled, pushed twice or replayed within the signature tolerance is applied once. The HTTP
//! route is [`crate::http::rail_callbacks`].
//!
//! Anyone can send a callback, so what can be refused without the body is refused before it is
//! read ([`RailCallbacks::admit`]): a missing, malformed, stale or early signature header, and a
//! declared length over [`MAX_CALLBACK_BYTES`]. At most [`MAX_CALLBACK_READERS`] bodies are read
//! at once, whatever their senders (a captured header can be replayed with any body for the
//! tolerance, and the body must be read to find its signature wrong). Those refusals are
//! counted, not logged one by one ([`crate::telemetry::Counted`]).

use std::sync::Arc;

use adapters_rails::interac::{CallbackError, CallbackHead, SignatureError, check_callback_head};
use domain::PortError;
use domain::account::PayoutMethod;
use domain::masking::Secret;
use domain::ports::Clock;
use domain::rail::inbound::{InboundPass, InboundProcessor};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::telemetry::{CallbackRefusal, Counted};

/// The largest callback body read: a status report of a large batch, with room to spare.
pub const MAX_CALLBACK_BYTES: usize = 4 * 1024 * 1024;

/// How many callback bodies the process reads at once (at most 32 MiB held). The partner sends
/// a report when it writes one; more at once are told to retry.
pub const MAX_CALLBACK_READERS: usize = 8;

/// The readers of callback bodies of one process, shared by its HTTP workers.
pub fn callback_readers() -> Arc<Semaphore> {
    Arc::new(Semaphore::new(MAX_CALLBACK_READERS))
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
/// dropped.
#[derive(Debug)]
pub struct Admitted {
    head: CallbackHead,
    _reader: OwnedSemaphorePermit,
}

/// The `cad/digital` rail's callbacks: its reports' processor, the secret and tolerance its
/// partner signs with, and the process's readers of callback bodies.
pub struct RailCallbacks {
    processor: Arc<InboundProcessor>,
    secret: Secret<String>,
    tolerance_secs: u64,
    clock: Arc<dyn Clock>,
    readers: Arc<Semaphore>,
}

impl RailCallbacks {
    /// Wires the callbacks to `processor`, which must have a `cad/digital` rail; bodies are
    /// read under `readers` ([`callback_readers`], one per process).
    pub fn new(
        processor: Arc<InboundProcessor>,
        secret: Secret<String>,
        tolerance_secs: u64,
        clock: Arc<dyn Clock>,
        readers: Arc<Semaphore>,
    ) -> Self {
        Self {
            processor,
            secret,
            tolerance_secs,
            clock,
            readers,
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
            .readers
            .clone()
            .try_acquire_owned()
            .map_err(|_| CallbackRefused::counted(CallbackRefusal::Busy))?;
        Ok(Admitted {
            head,
            _reader: reader,
        })
    }

    /// How many callback bodies are being read now (admitted and not yet dropped), of at most
    /// [`MAX_CALLBACK_READERS`].
    pub fn bodies_being_read(&self) -> usize {
        MAX_CALLBACK_READERS.saturating_sub(self.readers.available_permits())
    }

    /// Verifies `body`, read under `admitted`, against its signature (constant time), then
    /// applies the report under its `report_id`. `Ok(None)` when the processor has no
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
        // The reader is not needed to apply the report: free it for the next body.
        drop(admitted);
        self.processor
            .receive(PayoutMethod::Digital, &report.report_id, body)
            .await
            .map_err(CallbackRefused::Store)
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
