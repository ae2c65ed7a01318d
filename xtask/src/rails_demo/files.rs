//! What payoutd sent (files to the bank, batch requests to the Interac partner) and what the bank
//! answered: collected, compared with what the bank received, and validated.

use std::fs;
use std::path::Path;

use domain::account::PayoutMethod;
use serde_json::Value;

use crate::bank::{Bank, RailKind};
use crate::serve::{Payoutd, field};
use crate::{bank, cmd, iso20022};

/// What payoutd sent: files to the bank, batch requests to the Interac partner.
pub(super) struct Sent {
    pub(super) files: usize,
    pub(super) batch_requests: usize,
}

/// Copies every file payoutd sent (its stored bytes) to `sent_dir`, checks each is what the
/// bank received, and validates it; the number of files and of batch requests.
pub(super) fn collect_sent(
    payoutd: &Payoutd,
    bank: &Bank,
    sent_dir: &Path,
    xml_tools: &iso20022::Tools,
) -> Result<Sent, String> {
    let mut sent = Sent {
        files: 0,
        batch_requests: 0,
    };
    let mut command = payoutd.command(&["admin", "rail-files", "--limit", "1000"]);
    let listing = cmd::stdout(&mut command)?;
    let files: Vec<Value> = serde_json::from_str(listing.trim())
        .map_err(|err| format!("`admin rail-files` printed no list: {err}"))?;
    for file in &files {
        let id = field(file, "id")?;
        let name = field(file, "name")?;
        let method = field(file, "method")?;
        let raw = payoutd
            .command(&["admin", "rail-file", "--id", &id, "--raw"])
            .output()
            .map_err(|err| format!("cannot run payoutd admin rail-file: {err}"))?;
        if !raw.status.success() {
            return Err(format!("`payoutd admin rail-file --id {id} --raw` failed"));
        }
        bank::copy_into(sent_dir, &name, &raw.stdout)?;
        let method = PayoutMethod::from_route(&method).ok_or_else(|| {
            format!("file {name} is of method {method}, which payoutd does not have")
        })?;
        let Some(kind) = RailKind::of(method) else {
            bank_formats::interac::BatchRequest::parse(&raw.stdout)
                .map_err(|err| format!("{name} is not a valid Interac batch request: {err}"))?;
            sent.batch_requests += 1;
            continue;
        };
        sent.files += 1;
        let rail = bank
            .rail(kind)
            .ok_or_else(|| format!("no rail {}", kind.route()))?;
        let at_bank = rail.read.join(&name);
        if fs::read(&at_bank).ok().as_deref() != Some(raw.stdout.as_slice()) {
            return Err(format!(
                "{name}: the bank did not receive the bytes payoutd stored"
            ));
        }
        check_sent(kind, &raw.stdout, &sent_dir.join(&name), xml_tools)
            .map_err(|err| format!("{name}: {err}"))?;
    }
    Ok(sent)
}

/// Checks a file payoutd sent on the rail of `kind` (its copy at `path`).
pub(super) fn check_sent(
    kind: RailKind,
    bytes: &[u8],
    path: &Path,
    xml_tools: &iso20022::Tools,
) -> Result<(), String> {
    match kind {
        RailKind::Ach => bank_formats::nacha::parse(bytes)
            .map(drop)
            .map_err(|err| format!("not a valid NACHA file: {err}")),
        RailKind::Sepa => xml_tools.validate_pain001(path),
        RailKind::DirectEntry => {
            bank_format_oracles::aba::check(bytes, bank_format_oracles::aba::Kind::Originated)?;
            bank_formats::aba::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid ABA file: {err}"))
        }
        RailKind::Eft => {
            bank_format_oracles::cpa005::check(bytes, b"\r\n").map_err(|errs| errs.join("; "))?;
            bank_formats::cpa005::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid Standard 005 file: {err}"))
        }
        RailKind::DirectCredit => match bank_format_oracles::ib4b::check(bytes)? {
            bank_format_oracles::ib4b::Kind::DirectCredit => bank_formats::ib4b::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid IB4B file: {err}")),
            bank_format_oracles::ib4b::Kind::Dishonour => {
                Err("a dishonour file, not a direct credit file".to_owned())
            }
        },
    }
}

/// Checks a file the bank wrote on the rail of `kind`.
pub(super) fn check_answer(kind: RailKind, bytes: &[u8]) -> Result<(), String> {
    match kind {
        RailKind::Ach => bank_formats::nacha::parse(bytes)
            .map(drop)
            .map_err(|err| format!("not a valid NACHA file: {err}")),
        RailKind::Sepa => bank_formats::iso20022::parse_pain002(bytes)
            .map(drop)
            .map_err(|err| format!("not a valid pain.002: {err}")),
        RailKind::DirectEntry => {
            bank_format_oracles::aba::check(bytes, bank_format_oracles::aba::Kind::Returns)?;
            bank_formats::aba::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid ABA return file: {err}"))
        }
        RailKind::Eft => {
            bank_format_oracles::cpa005::check(bytes, b"\r\n").map_err(|errs| errs.join("; "))?;
            bank_formats::cpa005::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid Standard 005 file: {err}"))
        }
        RailKind::DirectCredit => match bank_format_oracles::ib4b::check(bytes)? {
            bank_format_oracles::ib4b::Kind::Dishonour => bank_formats::ib4b::parse(bytes)
                .map(drop)
                .map_err(|err| format!("not a valid IB4B dishonour file: {err}")),
            bank_format_oracles::ib4b::Kind::DirectCredit => {
                Err("a direct credit file, not a dishonour file".to_owned())
            }
        },
    }
}
