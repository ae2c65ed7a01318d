//! Status reports a rail's partner pushes (the Interac e-Transfer partner of `cad/digital`):
//! verified with the rail's shared secret, then applied through the same inbound processor as
//! the reports polled from the partner, so a report pushed and polled, pushed twice or replayed
//! within the signature tolerance is applied once. The HTTP route is
//! [`crate::http::rail_callbacks`].

use std::sync::Arc;

use adapters_rails::interac::{CallbackError, verify_callback};
use domain::PortError;
use domain::account::PayoutMethod;
use domain::masking::Secret;
use domain::ports::Clock;
use domain::rail::inbound::{InboundPass, InboundProcessor};

/// Why a pushed report was not taken.
#[derive(Debug)]
pub enum CallbackRefused {
    /// No signature header.
    Unsigned,
    /// A malformed, stale, early or wrong signature.
    Signature,
    /// Signed, but not a status report of the protocol.
    NotAReport,
    /// The report could not be applied or recorded (the partner retries).
    Store(PortError),
}

/// The `cad/digital` rail's callbacks: its reports' processor and the secret and tolerance its
/// partner signs with.
pub struct RailCallbacks {
    processor: Arc<InboundProcessor>,
    secret: Secret<String>,
    tolerance_secs: u64,
    clock: Arc<dyn Clock>,
}

impl RailCallbacks {
    /// Wires the callbacks to `processor`, which must have a `cad/digital` rail.
    pub fn new(
        processor: Arc<InboundProcessor>,
        secret: Secret<String>,
        tolerance_secs: u64,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self {
            processor,
            secret,
            tolerance_secs,
            clock,
        }
    }

    /// Verifies `body` against the `X-Partner-Signature` value `signature` (constant time,
    /// within the tolerance of this clock), then applies the report under its `report_id`.
    /// `Ok(None)` when the processor has no `cad/digital` rail.
    ///
    /// # Errors
    /// [`CallbackRefused`]; nothing is applied or recorded then.
    pub async fn receive(
        &self,
        signature: Option<&str>,
        body: &[u8],
    ) -> Result<Option<InboundPass>, CallbackRefused> {
        let now = self.clock.now().timestamp();
        let report = verify_callback(
            signature,
            body,
            self.secret.expose().as_bytes(),
            now,
            self.tolerance_secs,
        )
        .map_err(|e| match e {
            CallbackError::Unsigned => CallbackRefused::Unsigned,
            CallbackError::Signature(why) => {
                tracing::warn!(reason = %why, "partner callback refused");
                CallbackRefused::Signature
            }
            CallbackError::NotAReport(why) => {
                tracing::warn!(reason = %why, "signed partner callback is not a status report");
                CallbackRefused::NotAReport
            }
        })?;
        self.processor
            .receive(PayoutMethod::Digital, &report.report_id, body)
            .await
            .map_err(CallbackRefused::Store)
    }
}
