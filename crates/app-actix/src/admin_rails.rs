//! The production rails' operator commands (docs/RAILS.md, The life of a file; Results and
//! returns): `payoutd admin rail-files [--state S] [--limit N]` lists the bank files, newest first;
//! `payoutd admin rail-file --id X [--raw]` shows one (with `--raw`, its bytes exactly as sent);
//! `payoutd admin bank-reports [--resolution R] [--limit N]` lists what the bank's files said and
//! what was done with each line (`unmatched` and `anomaly` ones need an operator; an anomaly
//! names the line and document it contradicts); `payoutd admin inbound-files [--outcome O]
//! [--limit N]` lists the documents read, and `payoutd admin inbound-file --id X [--raw]` shows
//! one with its lines (with `--raw`, its bytes exactly as received).

use std::io::Write;
use std::sync::Arc;

use adapters_postgres::PgStore;
use anyhow::Context;
use clap::Args;
use domain::ids::{InboundFileId, RailFileId};
use domain::rail::bank_files::BankFileError;
use domain::rail::file::{RailFile, RailFileState};
use domain::rail::inbound_ports::{
    InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind, Resolution,
};
use domain::rail::ports::{RailFileStore, RailFileSummary};
use serde_json::{Value, json};

/// What an admin command prints: JSON, or a file's raw bytes.
pub enum Output {
    /// One JSON document and a newline.
    Json(Value),
    /// The bytes, exactly.
    Raw(Vec<u8>),
}

impl Output {
    /// Writes it to stdout.
    ///
    /// # Errors
    /// When stdout cannot be written.
    pub fn print(&self) -> anyhow::Result<()> {
        let mut out = std::io::stdout().lock();
        match self {
            Self::Json(value) => writeln!(out, "{value}"),
            Self::Raw(bytes) => out.write_all(bytes),
        }
        .context("writing to stdout")?;
        out.flush().context("writing to stdout")
    }
}

/// `admin rail-files`.
#[derive(Debug, Args)]
pub struct RailFilesArgs {
    /// Only files in this state: generated, uploaded, acknowledged or rejected.
    #[arg(long)]
    pub state: Option<String>,
    /// At most this many (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
}

/// `admin run-cutoff`.
#[derive(Debug, Args)]
pub struct RunCutoffArgs {
    /// The method whose rail runs its cut-off now, as in the API's routes: aud/direct-entry,
    /// usd/ach, cad/eft, cad/digital, eur/sepa or nzd/direct-credit.
    #[arg(long)]
    pub method: String,
}

/// `admin rail-file`.
#[derive(Debug, Args)]
pub struct RailFileArgs {
    /// The file's id.
    #[arg(long)]
    pub id: String,
    /// Print the file's bytes exactly as sent instead of its description.
    #[arg(long)]
    pub raw: bool,
}

/// `admin bank-reports`.
#[derive(Debug, Args)]
pub struct BankReportsArgs {
    /// Only lines with this resolution: applied, repeated, unmatched, noted or anomaly.
    #[arg(long)]
    pub resolution: Option<String>,
    /// Only lines of this kind: file_accepted, file_settled, file_rejected, settled, rejected,
    /// returned or notice.
    #[arg(long)]
    pub kind: Option<String>,
    /// At most this many (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
}

/// `admin inbound-files`.
#[derive(Debug, Args)]
pub struct InboundFilesArgs {
    /// Only documents with this outcome: read, foreign, unreadable or altered.
    #[arg(long)]
    pub outcome: Option<String>,
    /// At most this many (1 to 1000).
    #[arg(long, default_value_t = 100)]
    pub limit: u32,
}

/// `admin inbound-file`.
#[derive(Debug, Args)]
pub struct InboundFileArgs {
    /// The document's id (`document` in `bank-reports`).
    #[arg(long)]
    pub id: String,
    /// Print the document's bytes exactly as received instead of its description.
    #[arg(long)]
    pub raw: bool,
}

fn limit(raw: u32) -> anyhow::Result<u32> {
    anyhow::ensure!(
        (1..=1000).contains(&raw),
        "invalid --limit {raw}: must be 1 to 1000"
    );
    Ok(raw)
}

fn summary_json(file: &RailFileSummary) -> Value {
    json!({
        "id": file.id.to_string(),
        "name": file.name,
        "method": file.method.route(),
        "batch_id": file.batch_id.to_string(),
        "state": file.state.as_str(),
        "payouts": file.payouts,
        "size": file.size,
        "sha256": hex::encode(file.sha256),
        "effective_date": file.effective_date.to_string(),
        "created_at": file.created_at.to_rfc3339(),
    })
}

fn file_json(file: &RailFile) -> Value {
    json!({
        "id": file.id.to_string(),
        "name": file.name,
        "method": file.method.route(),
        "batch_id": file.batch_id.to_string(),
        "subaccount_id": file.subaccount_id.to_string(),
        "state": file.state.as_str(),
        "reason": file.reason,
        "size": file.bytes.len(),
        "sha256": hex::encode(file.sha256),
        "effective_date": file.effective_date.to_string(),
        "created_at": file.created_at.to_rfc3339(),
        "uploaded_at": file.uploaded_at.map(|t| t.to_rfc3339()),
        "answered_at": file.answered_at.map(|t| t.to_rfc3339()),
        "payouts": file.items.iter().map(|item| json!({
            "payout_id": item.payout_id.to_string(),
            "reference": item.reference,
        })).collect::<Vec<_>>(),
    })
}

/// `admin rail-files`: the files, newest first, without their bytes.
pub async fn list_files(store: Arc<PgStore>, args: &RailFilesArgs) -> anyhow::Result<Output> {
    let state = match &args.state {
        Some(raw) => Some(RailFileState::parse(raw).with_context(|| {
            format!(
                "invalid --state {raw:?}: expected generated, uploaded, acknowledged or rejected"
            )
        })?),
        None => None,
    };
    let files = store.list_files(state, None, limit(args.limit)?).await?;
    Ok(Output::Json(Value::Array(
        files.iter().map(summary_json).collect(),
    )))
}

/// `admin rail-file`: one file's description with its payouts, or its bytes (a download,
/// recorded in the audit log before the bytes are printed, by the same use case as the
/// console's).
pub async fn show_file(store: Arc<PgStore>, args: &RailFileArgs) -> anyhow::Result<Output> {
    let id = RailFileId::parse(&args.id)
        .with_context(|| format!("invalid --id {:?}: not a UUID", args.id))?;
    if args.raw {
        let file = crate::console_server::bank_files(&store)
            .download(&id.to_string(), &crate::admin_console::cli_context())
            .await
            .map_err(|e| match e {
                BankFileError::NotFound => anyhow::anyhow!("no rail file {id}"),
                BankFileError::Port(e) => anyhow::Error::new(e).context("the download"),
            })?;
        return Ok(Output::Raw(file.bytes));
    }
    let file = store
        .get_file(id)
        .await?
        .with_context(|| format!("no rail file {id}"))?;
    Ok(Output::Json(file_json(&file)))
}

fn line_json(r: &RecordedReport) -> Value {
    json!({
        "id": r.id.to_string(),
        "position": r.position,
        "kind": r.kind.as_str(),
        "reference": r.reference,
        "code": r.code,
        "reason": r.reason,
        "account_invalid": r.account_invalid,
        "amount": r.amount,
        "subaccount_id": r.subaccount_id.map(|s| s.to_string()),
        "payout_id": r.payout_id.map(|p| p.to_string()),
        "rail_file_id": r.rail_file_id.map(|f| f.to_string()),
        "resolution": r.resolution.as_str(),
        "contradicts": r.contradicts.map(|c| c.to_string()),
        "created_at": r.created_at.to_rfc3339(),
    })
}

fn inbound_json(file: &InboundFile) -> Value {
    json!({
        "id": file.id.to_string(),
        "method": file.method.route(),
        "name": file.name,
        "outcome": file.outcome.as_str(),
        "detail": file.detail,
        "original": file.original.map(|o| o.to_string()),
        "sha256": hex::encode(file.sha256),
        "size": file.bytes.as_ref().map(Vec::len),
        "received_at": file.received_at.to_rfc3339(),
    })
}

/// `admin bank-reports`: what the bank's files said, newest first. Each line names its
/// `document` (`admin inbound-file --id`); an anomaly also the line it contradicts and that
/// line's document.
pub async fn list_reports(store: Arc<PgStore>, args: &BankReportsArgs) -> anyhow::Result<Output> {
    let resolution = match &args.resolution {
        Some(raw) => Some(Resolution::parse(raw).with_context(|| {
            format!(
                "invalid --resolution {raw:?}: expected applied, repeated, unmatched, noted or anomaly"
            )
        })?),
        None => None,
    };
    let kind = match &args.kind {
        Some(raw) => Some(ReportKind::parse(raw).with_context(|| {
            format!(
                "invalid --kind {raw:?}: expected file_accepted, file_settled, file_rejected, \
                 settled, rejected, returned or notice"
            )
        })?),
        None => None,
    };
    let reports = store
        .list_reports(resolution, kind, None, limit(args.limit)?)
        .await?;
    Ok(Output::Json(Value::Array(
        reports
            .iter()
            .map(|listing| {
                let mut line = line_json(&listing.report);
                line["method"] = json!(listing.method.route());
                line["file"] = json!(listing.file_name);
                line["document"] = json!(listing.inbound_file_id.to_string());
                line["contradicts_document"] =
                    json!(listing.contradicted_file.map(|f| f.to_string()));
                line
            })
            .collect(),
    )))
}

/// `admin inbound-files`: the documents read from the rails, newest first, without bytes.
pub async fn list_inbound(store: Arc<PgStore>, args: &InboundFilesArgs) -> anyhow::Result<Output> {
    let outcome = match &args.outcome {
        Some(raw) => Some(InboundOutcome::parse(raw).with_context(|| {
            format!("invalid --outcome {raw:?}: expected read, foreign, unreadable or altered")
        })?),
        None => None,
    };
    let files = store.list_inbound(outcome, limit(args.limit)?).await?;
    Ok(Output::Json(Value::Array(
        files.iter().map(inbound_json).collect(),
    )))
}

/// `admin inbound-file`: one document with its lines, or its bytes as received.
pub async fn show_inbound(store: Arc<PgStore>, args: &InboundFileArgs) -> anyhow::Result<Output> {
    let id = InboundFileId::parse(&args.id)
        .with_context(|| format!("invalid --id {:?}: not a UUID", args.id))?;
    let (file, lines) = store
        .get_inbound(id)
        .await?
        .with_context(|| format!("no inbound document {id}"))?;
    if args.raw {
        let bytes = file
            .bytes
            .with_context(|| format!("inbound document {id} was not kept (another rail's file)"))?;
        crate::admin_console::record(
            &store,
            domain::audit::AuditAction::InboundFileDownloaded,
            "inbound_file",
            file.id,
            json!({"name": file.name, "size": bytes.len(), "sha256": hex::encode(file.sha256)}),
        )
        .await?;
        return Ok(Output::Raw(bytes));
    }
    let mut shown = inbound_json(&file);
    shown["lines"] = Value::Array(lines.iter().map(line_json).collect());
    Ok(Output::Json(shown))
}

/// `admin run-cutoff --method M`: brings the open batches of the method's currency forward to
/// run now (audited); the serving instances' batch job closes and files them at its next pass
/// (`PAYOUT_BATCH_POLL_MS`), with the effective date the rail's calendar gives a file sent then.
///
/// # Errors
/// An unknown method, nothing waiting, a file of the currency being sent, or the store failing,
/// each said in words.
pub async fn run_cutoff(store: Arc<PgStore>, args: &RunCutoffArgs) -> anyhow::Result<Output> {
    use domain::account::PayoutMethod;
    use domain::batch::cutoff::CutoffService;

    let method = PayoutMethod::from_route(args.method.trim()).with_context(|| {
        let routes: Vec<String> = PayoutMethod::ALL.iter().map(|m| m.route()).collect();
        format!(
            "invalid --method {:?}: expected one of {}",
            args.method,
            routes.join(", ")
        )
    })?;
    let service = CutoffService::new(
        store,
        Arc::new(crate::system::SystemClock),
        Arc::new(crate::system::RandomIds::default()),
    );
    let batches = service
        .run_cutoff(method, &crate::admin_console::cli_context())
        .await?;
    Ok(Output::Json(json!({
        "method": method.route(),
        "asset": method.asset().code(),
        "batches": batches
            .iter()
            .map(|b| json!({
                "batch_id": b.id.to_string(),
                "subaccount_id": b.subaccount_id.to_string(),
                "batch_run_time": b.batch_run_time,
            }))
            .collect::<Vec<_>>(),
        "filed_by": "the batch job of the serving instances, at its next pass",
    })))
}
