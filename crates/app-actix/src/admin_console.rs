//! The console's operators and the audit log from the command line (docs/CONSOLE.md):
//! `payoutd admin create-operator`, `disable-operator`, `set-operator-role`, `operators` and
//! `audit`. They call the same domain services as the console; each change is audited with the
//! actor `cli` (`cli:<USER>` when `USER` is set).

use std::sync::Arc;

use adapters_postgres::PgStore;
use anyhow::Context;
use clap::Args;
use domain::audit::{AuditAction, AuditContext, AuditEntry, AuditLog, AuditQuery};
use domain::ids::AuditEntryId;
use domain::operators::service::OperatorService;
use domain::operators::{Operator, Role};
use serde_json::{Value, json};

use crate::console_config::{console_url_from_env, session_policy_from_env};
use crate::console_server::operator_service;

/// `admin create-operator`.
#[derive(Debug, Args)]
pub struct CreateOperatorArgs {
    /// The operator's e-mail address (the sign-in name).
    #[arg(long)]
    pub email: String,
    /// viewer, operator or admin.
    #[arg(long)]
    pub role: String,
}

/// `admin disable-operator`.
#[derive(Debug, Args)]
pub struct DisableOperatorArgs {
    /// The operator's e-mail address or id.
    #[arg(long)]
    pub operator: String,
}

/// `admin set-operator-role`.
#[derive(Debug, Args)]
pub struct SetOperatorRoleArgs {
    /// The operator's e-mail address or id.
    #[arg(long)]
    pub operator: String,
    /// viewer, operator or admin.
    #[arg(long)]
    pub role: String,
}

/// `admin audit`.
#[derive(Debug, Args)]
pub struct AuditArgs {
    /// Only this action (e.g. receiver.kyc, operator.create).
    #[arg(long)]
    pub action: Option<String>,
    /// Only entries about this object id.
    #[arg(long)]
    pub object: Option<String>,
    /// Only entries whose actor's name contains this.
    #[arg(long)]
    pub actor: Option<String>,
    /// Only entries older than this entry (paging: the last `id` printed).
    #[arg(long)]
    pub before: Option<String>,
    /// At most this many (1 to 500).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub limit: u32,
}

/// Who runs the command, for the audit log.
pub fn cli_context() -> AuditContext {
    AuditContext::cli(std::env::var("USER").ok().as_deref())
}

/// Appends the command's entry for `action` on `object` (changes that are not one transaction,
/// and reads worth recording: a file's bytes downloaded, written before they are printed).
///
/// # Errors
/// When the entry cannot be written (then the command does nothing more).
pub async fn record(
    store: &PgStore,
    action: AuditAction,
    kind: &str,
    object: impl ToString,
    after: Value,
) -> anyhow::Result<()> {
    let entry = cli_context().entry(
        &crate::system::RandomIds::default(),
        &crate::system::SystemClock,
        action,
        kind,
        object,
        None,
        Some(after),
    );
    store
        .append(&entry)
        .await
        .context("writing the audit log entry")
}

fn role(raw: &str) -> anyhow::Result<Role> {
    Role::parse(raw)
        .with_context(|| format!("invalid --role {raw:?}: expected viewer, operator or admin"))
}

fn service(store: &Arc<PgStore>) -> anyhow::Result<OperatorService> {
    operator_service(store, session_policy_from_env()?)
}

fn operator_json(operator: &Operator) -> Value {
    json!({
        "operator_id": operator.id.to_string(),
        "email": operator.email.as_str(),
        "role": operator.role.as_str(),
        "status": operator.status.as_str(),
        "created_at": operator.created_at.to_rfc3339(),
        "enrolled_at": operator.enrolled_at.map(|t| t.to_rfc3339()),
        "disabled_at": operator.disabled_at.map(|t| t.to_rfc3339()),
    })
}

/// Creates the operator and prints its one-time enrolment link (valid 24 hours).
pub async fn create(store: Arc<PgStore>, args: &CreateOperatorArgs) -> anyhow::Result<Value> {
    let role = role(&args.role)?;
    let base = console_url_from_env()?;
    let invitation = service(&store)?
        .invite(&args.email, role, &cli_context())
        .await?;
    let mut out = operator_json(&invitation.operator);
    out["enrolment_link"] = format!("{base}/enrol/{}", invitation.token.expose()).into();
    out["expires_at"] = invitation.expires_at.to_rfc3339().into();
    Ok(out)
}

/// Disables the operator and ends its sessions.
pub async fn disable(store: Arc<PgStore>, args: &DisableOperatorArgs) -> anyhow::Result<Value> {
    let disabled = service(&store)?
        .disable(&args.operator, &cli_context())
        .await?;
    Ok(operator_json(&disabled))
}

/// Changes the operator's role.
pub async fn set_role(store: Arc<PgStore>, args: &SetOperatorRoleArgs) -> anyhow::Result<Value> {
    let role = role(&args.role)?;
    let changed = service(&store)?
        .change_role(&args.operator, role, &cli_context())
        .await?;
    Ok(operator_json(&changed))
}

/// Lists the operators.
pub async fn list(store: Arc<PgStore>) -> anyhow::Result<Value> {
    let operators = service(&store)?.list().await?;
    Ok(Value::Array(operators.iter().map(operator_json).collect()))
}

fn entry_json(entry: &AuditEntry) -> Value {
    json!({
        "id": entry.id.to_string(),
        "at": entry.at.to_rfc3339(),
        "actor": {"kind": entry.actor.kind(), "name": entry.actor.name(), "operator_id": entry.actor.operator_id().map(|id| id.to_string())},
        "action": entry.action.as_str(),
        "object": {"kind": entry.object_kind, "id": entry.object_id},
        "before": entry.before,
        "after": entry.after,
        "request_id": entry.request_id,
        "client_address": entry.client_address,
    })
}

/// Lists audit entries, newest first.
pub async fn audit(store: Arc<PgStore>, args: &AuditArgs) -> anyhow::Result<Value> {
    let action = args
        .action
        .as_deref()
        .map(|raw| {
            AuditAction::parse(raw.trim()).with_context(|| {
                let names: Vec<&str> = AuditAction::ALL.iter().map(|a| a.as_str()).collect();
                format!(
                    "invalid --action {raw:?}: expected one of {}",
                    names.join(", ")
                )
            })
        })
        .transpose()?;
    let before = match args.before.as_deref() {
        None => None,
        Some(raw) => Some(
            AuditEntryId::parse(raw)
                .with_context(|| format!("invalid --before {raw:?}: not an audit entry id"))?,
        ),
    };
    let entries = store
        .list(&AuditQuery {
            action,
            actor: args.actor.clone(),
            object_id: args.object.clone(),
            before,
            limit: args.limit,
        })
        .await?;
    Ok(Value::Array(entries.iter().map(entry_json).collect()))
}
