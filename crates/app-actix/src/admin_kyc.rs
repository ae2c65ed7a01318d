//! `payoutd admin kyc --receiver ID --decision completed|failed [--reason R]` (docs/OPERATIONS.md,
//! `payoutd admin …`): the operator's KYC decision, with the same effects as the provider's
//! (receiver status, a `receiverKycUpdate` event, waiting payouts moving on or failing with their
//! holds voided), recorded in `kyc_decisions` with the decider (`operator`, or `operator:<USER>`).

use std::sync::Arc;

use adapters_postgres::PgStore;
use clap::Args;
use domain::ports::{Clock, IdGenerator};
use domain::receiver::operator::{OperatorKycService, parse_decision};
use serde_json::{Value, json};

use crate::config::operator_from_env;
use crate::system::{RandomIds, SystemClock};

/// The arguments of `admin kyc`.
#[derive(Debug, Args)]
pub struct KycArgs {
    /// Receiver id (of any subaccount).
    #[arg(long)]
    pub receiver: String,
    /// `completed` (the receiver becomes active) or `failed`.
    #[arg(long)]
    pub decision: String,
    /// Why, kept in the audit trail (at most 500 characters).
    #[arg(long)]
    pub reason: Option<String>,
}

/// Decides and prints `{receiver_id, kyc_status, status}`; fails, writing nothing, for an
/// unknown receiver, one already decided, or a bad argument.
pub async fn run(store: Arc<PgStore>, args: &KycArgs) -> anyhow::Result<Value> {
    let Some(outcome) = parse_decision(&args.decision) else {
        anyhow::bail!(
            "invalid --decision {:?}: expected completed or failed",
            args.decision
        );
    };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds::default());
    let service = OperatorKycService::new(store, clock, ids);
    let receiver = service
        .decide(
            &args.receiver,
            outcome,
            args.reason.as_deref(),
            &operator_from_env(),
            &crate::admin_console::cli_context(),
        )
        .await?;
    Ok(json!({
        "receiver_id": receiver.id.to_string(),
        "kyc_status": receiver.kyc_status.as_str(),
        "status": receiver.status.as_str(),
    }))
}
