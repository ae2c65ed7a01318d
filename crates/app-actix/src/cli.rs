//! The command line: `payoutd serve | migrate | check-config | openapi | admin <command>`. Admin commands print JSON on
//! stdout and exit non-zero with a message on stderr on failure.

use std::sync::Arc;

use adapters_postgres::{create_database_if_missing, create_pool, run_migrations};
use anyhow::Context;
use chrono::{DateTime, Utc};
use clap::{Parser, Subcommand};
use domain::admin::{AdminError, AdminPorts, AdminService};
use domain::auth::SignaturePolicy;
use domain::delivery::history::EventSummary;
use domain::ids::{EventId, SubaccountId};
use domain::ports::{Clock, IdGenerator};
use serde_json::{Value, json};

use crate::admin_rails::Output;
use crate::config::{Config, database_from_env, master_keys_from_env};
use crate::production::Production;
use crate::production_config::ProductionSettings;
use crate::startup::Application;
use crate::system::{RandomIds, SystemClock};

/// The payoutd command line.
#[derive(Debug, Parser)]
#[command(
    name = "payoutd",
    version,
    about = "payoutd: a payout service for a merchant's subaccounts (receivers, balances, payouts)",
    long_about = None
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// Top-level commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP service (configuration from the environment).
    Serve,
    /// Apply pending database migrations.
    Migrate {
        /// Create the database named in DATABASE_URL first if it does not exist.
        #[arg(long)]
        create_database: bool,
    },
    /// Check the TLS certificate and key (when set), the production configuration file named
    /// by PAYOUT_CONFIG, and the master keys and database URL (when given), and print a summary
    /// (enabled methods, transports, next cut-offs, SMTP, TLS, master key ids; every secret
    /// shown as where it came from, masked); exits 1 with the problem on stderr when one is
    /// wrong.
    CheckConfig,
    /// Print the OpenAPI 3.1 document (as served at /openapi.json); `payoutd openapi >
    /// docs/openapi.json` regenerates the committed copy.
    Openapi,
    /// Operator commands.
    #[command(subcommand)]
    Admin(AdminCommand),
}

/// Operator commands (docs/OPERATIONS.md, Commands).
#[derive(Debug, Subcommand)]
pub enum AdminCommand {
    /// Decide a receiver's KYC (manual KYC), with the same effects as the provider's decision;
    /// recorded in `kyc_decisions`. Prints {receiver_id, kyc_status, status}.
    Kyc(crate::admin_kyc::KycArgs),
    /// List the production rails' bank files, newest first (without their bytes).
    RailFiles(crate::admin_rails::RailFilesArgs),
    /// Show one bank file with its payouts and references; with --raw, its bytes as sent.
    RailFile(crate::admin_rails::RailFileArgs),
    /// Run a rail's cut-off now: the open batches of the method's currency that hold payouts
    /// are closed and filed by the serving instances at their next pass (audited). Refused when
    /// nothing is waiting or a file of that currency is being sent. Prints the batches.
    RunCutoff(crate::admin_rails::RunCutoffArgs),
    /// List what the bank's inbound files said and what was done with each line, newest first
    /// (an anomaly names the line and document it contradicts).
    BankReports(crate::admin_rails::BankReportsArgs),
    /// List the documents read from the rails (bank files, partner reports), newest first.
    InboundFiles(crate::admin_rails::InboundFilesArgs),
    /// Show one document read from a rail with its lines; with --raw, its bytes as received.
    InboundFile(crate::admin_rails::InboundFileArgs),
    /// Create a subaccount; prints {subaccount_id, merchant_id}.
    CreateSubaccount {
        /// Display name.
        #[arg(long)]
        name: String,
        /// Contact e-mail.
        #[arg(long)]
        email: Option<String>,
        /// Webhook URL.
        #[arg(long)]
        postback_url: Option<String>,
        /// Which signature versions its requests may use: v2_for_posts (the default), v2, or
        /// any (see `signature-policy`).
        #[arg(long)]
        signature_policy: Option<String>,
    },
    /// Issue an API key; prints {api_key, api_secret} (the secret is shown only now).
    IssueKey {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
    },
    /// Revoke an API key at once.
    RevokeKey {
        /// The API key.
        #[arg(long)]
        api_key: String,
    },
    /// Set the webhook URL and a new signing secret; prints {postback_url, webhook_secret}.
    SetWebhook {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
        /// Webhook URL.
        #[arg(long)]
        url: String,
    },
    /// Credit the available balance, for a reason kept in the audit log; prints {asset,
    /// available, pending}.
    Fund {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
        /// AUD, USD, CAD, EUR or NZD.
        #[arg(long)]
        asset: String,
        /// Minor units (cents).
        #[arg(long)]
        amount: String,
        /// Why (1 to 500 characters), kept in the audit log: "initial float", "top-up from
        /// wire 2026-11-28", ...
        #[arg(long)]
        reason: String,
    },
    /// Set the fee template of an asset.
    SetFee {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
        /// AUD, USD, CAD, EUR or NZD.
        #[arg(long)]
        asset: String,
        /// Fixed part, minor units.
        #[arg(long)]
        fixed: String,
        /// Percentage of the amount, up to 4 decimals.
        #[arg(long)]
        percentage: String,
        /// Smallest fee, minor units.
        #[arg(long)]
        min_amount: String,
    },
    /// Compare every balance with the sum of its ledger entries; prints the report and exits 1
    /// when any differs.
    CheckLedger,
    /// Require signature version 2 for every request of the subaccount (the same as
    /// `signature-policy --policy v2`).
    RequireSignatureV2 {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
    },
    /// Set which signature versions the subaccount's requests may use: `v2_for_posts` (the
    /// default of new subaccounts: v1 on GET only), `v2` (every request), or `any` (v1 on POST
    /// too, for a client that can sign only v1: a captured v1 signature can then sign a POST).
    /// Prints {subaccount_id, signature_policy}.
    SignaturePolicy {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
        /// any, v2_for_posts or v2.
        #[arg(long)]
        policy: String,
    },
    /// Issue a new webhook secret; the current one keeps signing (both signatures are sent)
    /// for the overlap. Prints {webhook_secret, previous_valid_until}.
    RotateWebhookSecret {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
        /// Hours the current secret stays valid alongside the new one.
        #[arg(long, default_value_t = 24)]
        overlap_hours: u64,
    },
    /// List a subaccount's webhook events with their delivery attempts (newest first).
    Events {
        /// Subaccount id.
        #[arg(long)]
        subaccount: String,
        /// pending, delivered or exhausted.
        #[arg(long)]
        status: Option<String>,
        /// Only events created at or after this RFC 3339 time.
        #[arg(long)]
        since: Option<String>,
        /// Most events listed.
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Queue events for delivery again with a fresh retry schedule: one event, or every event of
    /// a subaccount created in [--since, --until).
    Resend {
        /// One event id.
        #[arg(long, conflicts_with_all = ["subaccount", "since", "until"])]
        event: Option<String>,
        /// Subaccount id (with --since and --until).
        #[arg(long, requires_all = ["since", "until"])]
        subaccount: Option<String>,
        /// From, RFC 3339, inclusive.
        #[arg(long)]
        since: Option<String>,
        /// To, RFC 3339, exclusive.
        #[arg(long)]
        until: Option<String>,
    },
    /// Move every secret, account and fingerprint still under PAYOUT_PREVIOUS_MASTER_KEY (or
    /// sealed before ciphertexts named their key) to PAYOUT_MASTER_KEY, in small transactions,
    /// beside serving instances; safe to run again after it stopped anywhere. Prints
    /// {tables, rotated, remaining, complete, failures}; exits 1 when a row could not be moved.
    RotateMasterKey {
        /// Rows per transaction (1..=10000).
        #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(i64).range(1..=10_000))]
        batch_size: i64,
        /// Pause between transactions, in milliseconds, to spare a busy database.
        #[arg(long, default_value_t = 0)]
        pause_ms: u64,
    },
    /// Create an operator of the console; prints it with a one-time enrolment link (valid 24
    /// hours) where the operator sets a password and enrols an authenticator app.
    CreateOperator(crate::admin_console::CreateOperatorArgs),
    /// Disable a console operator at once: its sessions end on every instance.
    DisableOperator(crate::admin_console::DisableOperatorArgs),
    /// Change a console operator's role; it applies to the operator's next request.
    SetOperatorRole(crate::admin_console::SetOperatorRoleArgs),
    /// List the console's operators.
    Operators,
    /// List the audit log (every change made in the console or with `payoutd admin`), newest
    /// first.
    Audit(crate::admin_console::AuditArgs),
    /// List queued confirmation requests (newest first), without recipients or links.
    Notifications {
        /// pending, sent or failed.
        #[arg(long)]
        status: Option<String>,
        /// Most notifications listed.
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
}

fn timestamp(flag: &str, raw: &str) -> anyhow::Result<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(raw)
        .map(|t| t.with_timezone(&Utc))
        .with_context(|| {
            format!(
                "invalid {flag} {raw:?}: expected an RFC 3339 time such as 2026-11-21T12:00:00Z"
            )
        })
}

/// `payoutd admin notifications`: what an operator sees of each one, no recipient, no link.
async fn notifications(
    store: &adapters_postgres::PgStore,
    status: Option<&str>,
    limit: u32,
) -> anyhow::Result<Value> {
    use domain::account::notification::NotificationStatus;
    use domain::account::notification::ports::NotificationStore;
    let status = status
        .map(|raw| {
            NotificationStatus::parse(raw).with_context(|| {
                format!("invalid --status {raw:?}: expected pending, sent or failed")
            })
        })
        .transpose()?;
    let listed = store.list_notifications(status, None, limit).await?;
    Ok(Value::Array(
        listed
            .iter()
            .map(|n| {
                json!({
                    "notification_id": n.id.to_string(),
                    "subaccount_id": n.subaccount_id.to_string(),
                    "account_id": n.account_id.to_string(),
                    "channel": n.channel.as_str(),
                    "status": n.status.as_str(),
                    "attempts": n.attempts,
                    "next_attempt_at": n.next_attempt_at.map(|t| t.to_rfc3339()),
                    "last_error": n.last_error,
                    "created_at": n.created_at.to_rfc3339(),
                    "sent_at": n.sent_at.map(|t| t.to_rfc3339()),
                })
            })
            .collect(),
    ))
}

/// `payoutd admin rotate-master-key`: one line on stderr per batch that moved rows, the summary
/// on stdout; fails naming every row it could not move (by table and id, never its data).
async fn rotate_master_key(
    store: &adapters_postgres::PgStore,
    batch_size: i64,
    pause_ms: u64,
) -> anyhow::Result<Output> {
    let summary = store
        .rotate_master_key(
            batch_size,
            std::time::Duration::from_millis(pause_ms),
            |table, batch| {
                if batch.rotated > 0 {
                    eprintln!("{}: {} row(s) re-sealed", table.name(), batch.rotated);
                }
            },
        )
        .await?;
    let rotated: u64 = summary.tables.iter().map(|t| t.rotated).sum();
    if rotated > 0 {
        // Many small transactions, each its own commit: the entry records what this run did.
        crate::admin_console::record(
            store,
            domain::audit::AuditAction::MasterKeyRotated,
            "vault",
            "master_key",
            json!({
                "rotated": rotated,
                "remaining": summary.remaining(),
                "complete": summary.complete(),
                "failures": summary.failures.len(),
            }),
        )
        .await?;
    }
    let report = json!({
        "tables": summary.tables.iter().map(|t| (t.table.to_owned(), json!({
            "rotated": t.rotated,
            "remaining": t.remaining,
        }))).collect::<serde_json::Map<_, _>>(),
        "rotated": summary.tables.iter().map(|t| t.rotated).sum::<u64>(),
        "remaining": summary.remaining(),
        "complete": summary.complete(),
        "failures": summary.failures.iter().map(|f| json!({
            "table": f.table,
            "row": f.row.to_string(),
            "problem": f.problem,
        })).collect::<Vec<_>>(),
    });
    if summary.complete() {
        return Ok(Output::Json(report));
    }
    Output::Json(report).print()?;
    let named: Vec<String> = summary
        .failures
        .iter()
        .map(|f| format!("{} {}: {}", f.table, f.row, f.problem))
        .collect();
    if named.is_empty() {
        anyhow::bail!(
            "rotation incomplete: {} row(s) are still under another key (written meanwhile by \
             an instance without the new PAYOUT_MASTER_KEY?); run it again",
            summary.remaining()
        );
    }
    anyhow::bail!(
        "rotation incomplete: {} row(s) could not be moved to the current key:\n{}",
        named.len(),
        named.join("\n")
    );
}

fn event_json(event: &EventSummary) -> Value {
    json!({
        "event_id": event.id.to_string(),
        "event": event.event_type,
        "object_id": event.object_id.to_string(),
        "sequence": event.sequence,
        "status": event.status,
        "created_at": event.created_at.to_rfc3339(),
        "next_attempt_at": event.next_attempt_at.to_rfc3339(),
        "delivered_at": event.delivered_at.map(|t| t.to_rfc3339()),
        "last_error": event.last_error,
        "attempts": event.attempts.iter().map(|a| json!({
            "attempt": a.attempt,
            "attempted_at": a.attempted_at.to_rfc3339(),
            "outcome": a.outcome,
            "status_code": a.status_code,
            "latency_ms": a.latency_ms,
            "error": a.error,
        })).collect::<Vec<_>>(),
    })
}

/// Runs the parsed command.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve => {
            let config = Config::from_env()?;
            let app = if config.sandbox {
                Application::build(&config)?
            } else {
                // Production mode: the file is checked first, so a wrong setting stops here
                // with its name; then the adapters are built (nothing is connected yet).
                let production = ProductionSettings::from_env()?;
                let enabled: Vec<String> = production
                    .enabled_methods()
                    .iter()
                    .map(|m| m.route())
                    .collect();
                tracing::info!(config = %production.path.display(), enabled = ?enabled, "production mode");
                Application::build_production(&config, Production::from_settings(production)?)?
            };
            tracing::info!(
                port = app.port(),
                tls = config.tls.is_some(),
                sandbox = config.sandbox,
                console_port = app.console_port(),
                "payoutd listening"
            );
            if config.previous_master_key.is_some() {
                let config = config.clone();
                tokio::spawn(
                    async move { crate::startup::report_master_key_rotation(&config).await },
                );
            }
            app.run_until_stopped().await?;
            Ok(())
        }
        Command::Migrate { create_database } => {
            let db = database_from_env()?;
            if create_database && create_database_if_missing(&db.url).await? {
                tracing::info!("created the database");
            }
            let applied = run_migrations(&db.url).await?;
            println!("{}", json!({ "applied": applied }));
            Ok(())
        }
        Command::CheckConfig => {
            // The listener's certificate and key first: `serve` would refuse them as well.
            let tls = crate::tls::tls_from_env()?;
            let production = ProductionSettings::from_env()?;
            let mut summary = production.summary(Utc::now());
            let master_keys = crate::config::master_keys_summary()?;
            let database = crate::config::database_summary()?;
            if let Value::Object(fields) = &mut summary {
                if let Some(keys) = master_keys {
                    fields.insert("master_keys".to_owned(), keys);
                }
                if let Some(database) = database {
                    fields.insert("database".to_owned(), database);
                }
                fields.insert(
                    "tls".to_owned(),
                    tls.map_or(Value::Null, |tls| {
                        json!({
                            "certificate": tls.cert_path.display().to_string(),
                            "chain_length": tls.chain_length,
                            "key": crate::secret_source::masked(&tls.key_source),
                        })
                    }),
                );
            }
            let summary =
                serde_json::to_string_pretty(&summary).context("rendering the summary")?;
            println!("{summary}");
            Ok(())
        }
        Command::Openapi => {
            let document =
                crate::http::openapi::to_json().context("rendering the OpenAPI document")?;
            println!("{document}");
            Ok(())
        }
        Command::Admin(command) => admin(command).await?.print(),
    }
}

fn subaccount_id(raw: &str) -> anyhow::Result<SubaccountId> {
    SubaccountId::parse(raw).with_context(|| format!("invalid --subaccount {raw:?}: not a UUID"))
}

/// Creates the subaccount; with a postback URL, also issues its webhook signing secret (a URL
/// without a secret could not be signed for).
fn parse_policy(raw: &str) -> anyhow::Result<SignaturePolicy> {
    SignaturePolicy::parse(raw).with_context(|| {
        format!("invalid signature policy {raw:?}: expected any, v2_for_posts or v2")
    })
}

async fn create_subaccount(
    service: &AdminService,
    name: &str,
    email: Option<&str>,
    postback_url: Option<&str>,
    policy: Option<SignaturePolicy>,
) -> Result<Value, AdminError> {
    // Checked before the subaccount is created, so a refused URL leaves nothing behind.
    if let Some(url) = postback_url {
        service.check_webhook_target(url)?;
    }
    let subaccount = service.create_subaccount(name, email, None).await?;
    let mut policy_now = subaccount.signature_policy;
    if let Some(policy) = policy.filter(|p| *p != policy_now) {
        service.set_signature_policy(subaccount.id, policy).await?;
        policy_now = policy;
    }
    let mut output = json!({
        "subaccount_id": subaccount.id.to_string(),
        "merchant_id": subaccount.merchant_id.to_string(),
        "signature_policy": policy_now.as_str(),
    });
    if let Some(url) = postback_url {
        let (url, secret) = service.set_webhook(subaccount.id, url).await?;
        output["postback_url"] = url.into();
        output["webhook_secret"] = secret.expose().clone().into();
    }
    Ok(output)
}

async fn admin(command: AdminCommand) -> anyhow::Result<Output> {
    let db = database_from_env()?;
    let vault = master_keys_from_env()?.vault()?;
    let mut db = db;
    db.max_size = 2;
    let store = Arc::new(adapters_postgres::PgStore::new(
        create_pool(&db)?,
        Arc::new(vault),
    ));
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds::default());
    let service = AdminService::new(
        AdminPorts::all(
            store.clone(),
            Arc::new(adapters_webhook::guard::TargetGuard::new(
                crate::config::webhook_targets_may_be_private()?,
            )),
        ),
        clock,
        ids,
        crate::admin_console::cli_context(),
    );
    let result: Result<Value, AdminError> = match command {
        AdminCommand::Kyc(args) => {
            return crate::admin_kyc::run(store, &args).await.map(Output::Json);
        }
        AdminCommand::CreateOperator(args) => {
            return crate::admin_console::create(store, &args).await.map(Output::Json);
        }
        AdminCommand::DisableOperator(args) => {
            return crate::admin_console::disable(store, &args).await.map(Output::Json);
        }
        AdminCommand::SetOperatorRole(args) => {
            return crate::admin_console::set_role(store, &args).await.map(Output::Json);
        }
        AdminCommand::Operators => return crate::admin_console::list(store).await.map(Output::Json),
        AdminCommand::Audit(args) => {
            return crate::admin_console::audit(store, &args).await.map(Output::Json);
        }
        AdminCommand::RailFiles(args) => return crate::admin_rails::list_files(store, &args).await,
        AdminCommand::RailFile(args) => return crate::admin_rails::show_file(store, &args).await,
        AdminCommand::RunCutoff(args) => return crate::admin_rails::run_cutoff(store, &args).await,
        AdminCommand::BankReports(args) => {
            return crate::admin_rails::list_reports(store, &args).await;
        }
        AdminCommand::InboundFiles(args) => {
            return crate::admin_rails::list_inbound(store, &args).await;
        }
        AdminCommand::InboundFile(args) => {
            return crate::admin_rails::show_inbound(store, &args).await;
        }
        AdminCommand::CreateSubaccount { name, email, postback_url, signature_policy } => {
            let policy = signature_policy.as_deref().map(parse_policy).transpose()?;
            create_subaccount(&service, &name, email.as_deref(), postback_url.as_deref(), policy)
                .await
        }
        AdminCommand::IssueKey { subaccount } => service
            .issue_key(subaccount_id(&subaccount)?)
            .await
            .map(|k| json!({"api_key": k.api_key, "api_secret": k.api_secret.expose()})),
        AdminCommand::RevokeKey { api_key } => {
            service.revoke_key(&api_key).await.map(|()| json!({"api_key": api_key, "revoked": true}))
        }
        AdminCommand::SetWebhook { subaccount, url } => {
            service
                .set_webhook(subaccount_id(&subaccount)?, &url)
                .await
                .map(|(url, secret)| json!({"postback_url": url, "webhook_secret": secret.expose()}))
        }
        AdminCommand::Fund { subaccount, asset, amount, reason } => service
            .fund(subaccount_id(&subaccount)?, &asset, &amount, &reason)
            .await
            .map(|b| json!({"asset": b.asset.code(), "available": b.available, "pending": b.pending})),
        AdminCommand::SetFee { subaccount, asset, fixed, percentage, min_amount } => service
            .set_fee(subaccount_id(&subaccount)?, &asset, &fixed, &percentage, &min_amount)
            .await
            .map(|t| {
                json!({
                    "asset": t.asset.code(),
                    "feetemplate_id": t.id.to_string(),
                    "feegroup_id": t.group_id.to_string(),
                    "fixed": t.fixed,
                    "percentage": t.percentage.as_f64(),
                    "min_amount": t.min_amount,
                })
            }),
        AdminCommand::RotateWebhookSecret { subaccount, overlap_hours } => {
            let overlap = std::time::Duration::from_secs(overlap_hours.saturating_mul(3600));
            let until = Utc::now() + chrono::Duration::from_std(overlap).unwrap_or(chrono::Duration::MAX);
            service
                .rotate_webhook_secret(subaccount_id(&subaccount)?, overlap)
                .await
                .map(|secret| json!({"webhook_secret": secret.expose(), "previous_valid_until": until.to_rfc3339()}))
        }
        AdminCommand::Events { subaccount, status, since, limit } => {
            let since = since.map(|raw| timestamp("--since", &raw)).transpose()?;
            service
                .events(subaccount_id(&subaccount)?, status.as_deref(), since, None, limit)
                .await
                .map(|events| Value::Array(events.iter().map(event_json).collect()))
        }
        AdminCommand::Resend { event, subaccount, since, until } => match (event, subaccount, since, until) {
            (Some(event), None, None, None) => {
                let id = EventId::parse(&event).with_context(|| format!("invalid --event {event:?}: not a UUID"))?;
                service.resend_event(id).await.map(|n| json!({"queued": n}))
            }
            (None, Some(subaccount), Some(since), Some(until)) => service
                .resend_range(subaccount_id(&subaccount)?, timestamp("--since", &since)?, timestamp("--until", &until)?)
                .await
                .map(|n| json!({"queued": n})),
            _ => anyhow::bail!("resend needs --event ID, or --subaccount ID --since T --until T"),
        },
                AdminCommand::CheckLedger => {
            let check = service.check_ledger().await?;
            let report = json!({
                "balances_checked": check.checked,
                "discrepancies": check.discrepancies.iter().map(|d| json!({
                    "subaccount_id": d.subaccount_id.to_string(),
                    "asset": d.asset,
                    "available": d.available,
                    "pending": d.pending,
                    "ledger_available": d.ledger_available,
                    "ledger_pending": d.ledger_pending,
                })).collect::<Vec<_>>(),
            });
            if check.discrepancies.is_empty() {
                Ok(report)
            } else {
                println!("{report}");
                anyhow::bail!(
                    "ledger check failed: {} balance(s) differ from the sum of their ledger entries",
                    check.discrepancies.len()
                );
            }
        }
        AdminCommand::RotateMasterKey { batch_size, pause_ms } => {
            return rotate_master_key(&store, batch_size, pause_ms).await;
        }
        AdminCommand::Notifications { status, limit } => {
            return notifications(&store, status.as_deref(), limit)
                .await
                .map(Output::Json);
        }
        AdminCommand::RequireSignatureV2 { subaccount } => {
            let id = subaccount_id(&subaccount)?;
            service
                .set_signature_policy(id, SignaturePolicy::V2Only)
                .await
                .map(|()| {
                    json!({
                        "subaccount_id": id.to_string(),
                        "require_signature_v2": true,
                        "signature_policy": SignaturePolicy::V2Only.as_str(),
                    })
                })
        }
        AdminCommand::SignaturePolicy { subaccount, policy } => {
            let id = subaccount_id(&subaccount)?;
            let policy = parse_policy(&policy)?;
            service
                .set_signature_policy(id, policy)
                .await
                .map(|()| json!({"subaccount_id": id.to_string(), "signature_policy": policy.as_str()}))
        }
    };
    Ok(Output::Json(result?))
}
