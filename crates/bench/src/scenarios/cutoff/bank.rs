//! The bank's side of the `cutoff` scenario: each rail's settings for payoutd's configuration,
//! the drop's directories, the payments in the files payoutd put there, and the answers the
//! bench puts in the inbound directory (a pain.002 settling every payment of a pain.001; return
//! files of the other formats), laid out by `bank-simulator` as the local bank simulator
//! (`cargo xtask bank`) lays them out. `cad/digital` has no drop: its batch requests go to the
//! local Interac partner (`bank_simulator::interac_partner`, started by [`super::setup`]).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use bank_formats::iso20022::Status;
use bank_formats::{aba, cpa005, ib4b, nacha};
use chrono::{DateTime, NaiveDate, Utc};
use domain::account::PayoutMethod;

/// How a rail's payouts become `successful` after their file is sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settles {
    /// On the file's effective date (the cut-off's day here: `settlement_days = 0`), unless
    /// returned: NACHA, ABA, Standard 005, IB4B have no positive confirmation.
    OnEffectiveDate,
    /// When the bank confirms it: a pain.002 with `ACSC` for every transaction.
    OnReport,
    /// When the partner's final report says `deposited` (Interac); a payment it declines or
    /// cannot send fails instead. The bench gives a tenth of the payments such a fate and
    /// releases the partner's final reports.
    ByPartner,
}

/// What the bench knows of a rail: a file rail, or `cad/digital`, whose "files" are the batch
/// requests payoutd stores and posts to the Interac partner.
#[derive(Debug, Clone, Copy)]
pub struct BenchRail {
    /// The method.
    pub method: PayoutMethod,
    /// How its payouts settle.
    pub settles: Settles,
    /// Whether a paid payout can come back (a return file): not on SEPA, whose returns after
    /// settlement come in camt.054, which payoutd does not read.
    pub has_returns: bool,
}

impl BenchRail {
    /// The rail of `method`.
    pub fn of(method: PayoutMethod) -> Self {
        let (settles, has_returns) = match method {
            PayoutMethod::Ach
            | PayoutMethod::DirectEntry
            | PayoutMethod::Eft
            | PayoutMethod::DirectCredit => (Settles::OnEffectiveDate, true),
            PayoutMethod::Sepa => (Settles::OnReport, false),
            // A deposited Interac transfer is final: no returns.
            PayoutMethod::Digital => (Settles::ByPartner, false),
        };
        Self {
            method,
            settles,
            has_returns,
        }
    }

    /// Whether its payouts go to the Interac partner rather than to a bank's drop.
    pub fn has_partner(self) -> bool {
        self.settles == Settles::ByPartner
    }

    /// The reference scripts that do not apply to the rail: the returns where it has none, the
    /// reports' rows where its payouts settle on the effective date (no report is read), the
    /// rejections where no report rejects a payment, the accounts failed where neither a return
    /// nor a rejection fails one.
    pub fn scripts_left_out(self) -> Vec<&'static str> {
        let mut left_out = Vec::new();
        if !self.has_returns {
            left_out.push("cutoff_returned");
        }
        match self.settles {
            Settles::OnEffectiveDate => {
                left_out.extend(["cutoff_settled_report", "cutoff_rejected"])
            }
            Settles::OnReport => left_out.push("cutoff_rejected"),
            Settles::ByPartner => {}
        }
        if !self.has_returns && self.settles != Settles::ByPartner {
            left_out.push("cutoff_accounts_failed");
        }
        left_out
    }

    /// Bytes of one payment's line in the report that settles it, as the bench's bank (pain.002)
    /// and the partner (a final report's `deposited` line) write them; 0 where no report does.
    pub fn report_line_bytes(self) -> usize {
        match self.method {
            PayoutMethod::Sepa => 215,
            PayoutMethod::Digital => 107,
            PayoutMethod::Ach
            | PayoutMethod::DirectEntry
            | PayoutMethod::Eft
            | PayoutMethod::DirectCredit => 0,
        }
    }

    /// The originator settings of the rail's section (TOML lines), as a bank would give them
    /// (the same as `cargo xtask rails-demo`'s).
    pub fn settings(self) -> &'static str {
        match self.method {
            PayoutMethod::Ach => {
                "immediate_destination = \"021000021\"\n\
                 immediate_destination_name = \"BANK SIMULATOR\"\n\
                 immediate_origin = \"1234567890\"\n\
                 immediate_origin_name = \"PAYOUTD BENCH\"\n\
                 company_name = \"PAYOUTD BENCH\"\n\
                 company_id = \"1234567890\"\n\
                 odfi_routing = \"02100002\"\n\
                 entry_description = \"PAYOUT\"\n"
            }
            PayoutMethod::Sepa => {
                "debtor_name = \"Payoutd Bench GmbH\"\n\
                 debtor_iban = \"DE89370400440532013000\"\n\
                 debtor_bic = \"COBADEFFXXX\"\n\
                 initiating_party_name = \"Payoutd Bench GmbH\"\n"
            }
            PayoutMethod::DirectEntry => {
                "bank_mnemonic = \"CBA\"\n\
                 user_name = \"PAYOUTD BENCH PTY LTD\"\n\
                 apca_user_id = \"301500\"\n\
                 description = \"PAYOUTS\"\n\
                 remitter_name = \"PAYOUTD BENCH\"\n\
                 trace_bsb = \"062000\"\n\
                 trace_account = \"10203040\"\n\
                 self_balancing = false\n"
            }
            PayoutMethod::Eft => {
                "originator_id = \"PAYOUTD001\"\n\
                 data_centre = \"00310\"\n\
                 originator_short_name = \"PAYOUTD BENCH\"\n\
                 originator_long_name = \"PAYOUTD BENCH INC\"\n\
                 return_institution = \"000312345\"\n\
                 return_account = \"1234567\"\n\
                 transaction_code = 450\n"
            }
            PayoutMethod::DirectCredit => {
                "originating_account = \"0109020068389099\"\n\
                 originator_name = \"PAYOUTD BENCH\"\n"
            }
            PayoutMethod::Digital => {
                "open_on_weekends = true\n\
                 partner_customer_id = \"PAYOUTD-BENCH\"\n\
                 sender_name = \"Payoutd Bench\"\n\
                 expiry_days = 30\n"
            }
        }
    }
}

/// A rail's drop: where payoutd uploads and where the bank answers.
#[derive(Debug, Clone)]
pub struct Drop {
    pub outbound: PathBuf,
    pub inbound: PathBuf,
}

impl Drop {
    /// Empty `outbound` and `inbound` directories under `dir` (emptied if they exist).
    pub fn create(dir: &Path) -> anyhow::Result<Self> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("cannot empty {}", dir.display()))?;
        }
        let drop = Self {
            outbound: std::path::absolute(dir.join("outbound"))?,
            inbound: std::path::absolute(dir.join("inbound"))?,
        };
        for d in [&drop.outbound, &drop.inbound] {
            std::fs::create_dir_all(d).with_context(|| format!("cannot create {}", d.display()))?;
        }
        Ok(drop)
    }

    /// The drop at `outbound` and `inbound` (another process serves them, e.g. sshd), emptied.
    pub fn at(outbound: &Path, inbound: &Path) -> anyhow::Result<Self> {
        for d in [outbound, inbound] {
            if d.exists() {
                for entry in
                    std::fs::read_dir(d).with_context(|| format!("cannot list {}", d.display()))?
                {
                    let path = entry?.path();
                    std::fs::remove_file(&path)
                        .with_context(|| format!("cannot remove {}", path.display()))?;
                }
            } else {
                std::fs::create_dir_all(d)
                    .with_context(|| format!("cannot create {}", d.display()))?;
            }
        }
        Ok(Self {
            outbound: outbound.to_path_buf(),
            inbound: inbound.to_path_buf(),
        })
    }

    /// The complete files payoutd put in `outbound` (no dot files, no partial uploads), sorted.
    pub fn sent(&self) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.outbound)
            .with_context(|| format!("cannot list {}", self.outbound.display()))?
        {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            if entry.file_type().is_ok_and(|t| t.is_file())
                && !name.starts_with('.')
                && !name.ends_with(".part")
            {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// The bytes of the sent file `name`.
    pub fn read(&self, name: &str) -> anyhow::Result<Vec<u8>> {
        let path = self.outbound.join(name);
        std::fs::read(&path).with_context(|| format!("cannot read {}", path.display()))
    }

    /// Puts an answer in `inbound` as a bank does: a dot name first, then renamed, so payoutd
    /// never reads half of it.
    pub fn answer(&self, name: &str, bytes: &[u8]) -> anyhow::Result<()> {
        let partial = self.inbound.join(format!(".{name}.part"));
        let path = self.inbound.join(name);
        std::fs::write(&partial, bytes)
            .and_then(|()| std::fs::rename(&partial, &path))
            .with_context(|| format!("cannot write {}", path.display()))
    }
}

/// The references of the payments in a file payoutd sent on `rail` (the references payoutd
/// stored for its payouts: NACHA trace numbers, pain.001 end-to-end ids, ABA lodgement
/// references, Standard 005 cross references, IB4B "your reference").
pub fn payments(rail: BenchRail, bytes: &[u8]) -> anyhow::Result<Vec<String>> {
    Ok(match rail.method {
        PayoutMethod::Ach => nacha::parse(bytes)?
            .batches
            .iter()
            .flat_map(|b| b.entries.iter().map(|e| e.trace_number.clone()))
            .collect(),
        PayoutMethod::Sepa => bank_simulator::iso20022::read_pain001(bytes)?
            .transactions()
            .map(|(_, t)| t.end_to_end_id.clone())
            .collect(),
        PayoutMethod::DirectEntry => aba::parse(bytes)?
            .details
            .iter()
            .filter(|d| !d.transaction_code.is_debit())
            .map(|d| d.lodgement_reference.trim().to_owned())
            .collect(),
        PayoutMethod::Eft => cpa005::parse(bytes)?
            .transactions
            .iter()
            .map(|t| t.cross_reference.trim().to_owned())
            .collect(),
        PayoutMethod::DirectCredit => match ib4b::parse(bytes)? {
            ib4b::Ib4bFile::DirectCredit(file) => file
                .transactions
                .iter()
                .map(|t| t.yours.reference.clone())
                .collect(),
            ib4b::Ib4bFile::Dishonour(_) => anyhow::bail!("a dishonour file, not a credit file"),
        },
        PayoutMethod::Digital => bank_formats::interac::BatchRequest::parse(bytes)?
            .payments
            .into_iter()
            .map(|p| p.payment_id)
            .collect(),
    })
}

/// The pain.002 that settles every transaction of the pain.001 `bytes` (`ACSC`), named after it.
pub fn settlement_report(
    name: &str,
    bytes: &[u8],
    now: DateTime<Utc>,
) -> anyhow::Result<(String, Vec<u8>)> {
    use bank_simulator::iso20022::{
        ReportDecisions, TransactionDecision, status_report, write_pain002,
    };
    let summary = bank_simulator::iso20022::read_pain001(bytes)?;
    let transactions = summary
        .transactions()
        .map(|(_, t)| TransactionDecision {
            end_to_end_id: t.end_to_end_id.clone(),
            status: Status::AcceptedSettlementCompleted,
            reasons: Vec::new(),
        })
        .collect();
    let decisions = ReportDecisions {
        message_id: format!("BENCH-{}", now.format("%Y%m%d%H%M%S%f")),
        created_at: now.naive_utc(),
        group_status: Status::AcceptedSettlementCompleted,
        group_reasons: Vec::new(),
        transactions,
    };
    let report = status_report(&summary, &decisions)?;
    Ok((
        format!("{}-pain002.xml", stem(name)),
        write_pain002(&report)?,
    ))
}

/// The return file answering the sent file `name` for the payments `returned` (reference →
/// whether the return's code means the account is wrong), named after it; `None` when none of
/// its payments is returned.
pub fn return_file(
    rail: BenchRail,
    name: &str,
    bytes: &[u8],
    returned: &HashMap<String, bool>,
    today: NaiveDate,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<(String, Vec<u8>)>> {
    let answer = match rail.method {
        PayoutMethod::Ach => nacha_returns(bytes, returned, now)?,
        PayoutMethod::DirectEntry => aba_returns(bytes, returned, today)?,
        PayoutMethod::Eft => cpa005_returns(bytes, returned, today)?,
        PayoutMethod::DirectCredit => ib4b_dishonours(bytes, returned, today)?,
        PayoutMethod::Sepa | PayoutMethod::Digital => {
            anyhow::bail!("{} has no return files", rail.method.route())
        }
    };
    let extension = name.rsplit_once('.').map_or("txt", |(_, ext)| ext);
    Ok(answer.map(|bytes| (format!("{}-returns.{extension}", stem(name)), bytes)))
}

fn nacha_returns(
    bytes: &[u8],
    returned: &HashMap<String, bool>,
    now: DateTime<Utc>,
) -> anyhow::Result<Option<Vec<u8>>> {
    use bank_simulator::nacha::{Answer, AnswerOptions, EntryDecision, write_answer_file};
    let file = nacha::parse(bytes)?;
    let mut decisions = Vec::new();
    for entry in file.batches.iter().flat_map(|b| &b.entries) {
        let Some(&account) = returned.get(&entry.trace_number) else {
            continue;
        };
        // R03 (no account) fails the account; R16 (account frozen) does not.
        let code = if account { "R03" } else { "R16" };
        decisions.push(EntryDecision {
            original_trace_number: entry.trace_number.clone(),
            answer: Answer::Return {
                code: nacha::ReturnCode::parse(code).context("a NACHA return code")?,
                date_of_death: None,
                addenda_information: "PAYOUTD BENCH".to_owned(),
            },
        });
    }
    if decisions.is_empty() {
        return Ok(None);
    }
    Ok(Some(write_answer_file(
        &file,
        &decisions,
        &AnswerOptions {
            creation_date: now.date_naive(),
            creation_time: Some(now.time()),
            file_id_modifier: 'A',
            line_ending: nacha::LineEnding::Lf,
        },
    )?))
}

fn aba_returns(
    bytes: &[u8],
    returned: &HashMap<String, bool>,
    today: NaiveDate,
) -> anyhow::Result<Option<Vec<u8>>> {
    use bank_simulator::aba::{ReturnDecision, write_return_file};
    let file = aba::parse(bytes)?;
    let decisions: Vec<ReturnDecision> = file
        .details
        .iter()
        .enumerate()
        .filter(|(_, d)| !d.transaction_code.is_debit())
        .filter_map(|(entry, d)| {
            returned
                .get(d.lodgement_reference.trim())
                .map(|&account| ReturnDecision {
                    entry,
                    // 3 (account closed) fails the account; 6 (refer to customer) does not.
                    code: if account {
                        aba::ReturnCode::AccountClosed
                    } else {
                        aba::ReturnCode::ReferToCustomer
                    },
                })
        })
        .collect();
    if decisions.is_empty() {
        return Ok(None);
    }
    Ok(Some(write_return_file(&file, &decisions, today)?))
}

fn cpa005_returns(
    bytes: &[u8],
    returned: &HashMap<String, bool>,
    today: NaiveDate,
) -> anyhow::Result<Option<Vec<u8>>> {
    use bank_simulator::cpa005::{ReturnDecision, ReturnFileOptions, write_return_file};
    let file = cpa005::parse(bytes)?;
    let mut decisions = Vec::new();
    for (item, t) in file.transactions.iter().enumerate() {
        let Some(&account) = returned.get(t.cross_reference.trim()) else {
            continue;
        };
        // 905 (account closed) fails the account; 915 (refused by payee) does not.
        let code = if account { 905 } else { 915 };
        decisions.push(ReturnDecision {
            item,
            reason: cpa005::ReturnCode::new(code).context("a Standard 005 return code")?,
        });
    }
    if decisions.is_empty() {
        return Ok(None);
    }
    Ok(Some(write_return_file(
        &file,
        &decisions,
        &ReturnFileOptions {
            creation_date: today,
            file_creation_number: 1,
            trace_prefix: "000300002".to_owned(),
            write: cpa005::WriteOptions::default(),
        },
    )?))
}

fn ib4b_dishonours(
    bytes: &[u8],
    returned: &HashMap<String, bool>,
    today: NaiveDate,
) -> anyhow::Result<Option<Vec<u8>>> {
    use bank_simulator::ib4b::{DishonourDecision, write_dishonour_file};
    let ib4b::Ib4bFile::DirectCredit(file) = ib4b::parse(bytes)? else {
        anyhow::bail!("a dishonour file, not a direct credit file");
    };
    let decisions: Vec<DishonourDecision> = file
        .transactions
        .iter()
        .filter_map(|t| {
            returned
                .get(&t.yours.reference)
                .map(|&account| DishonourDecision {
                    your_reference: t.yours.reference.clone(),
                    // 02 (no account) fails the account; 05 (payment refused) does not.
                    reason: if account {
                        ib4b::DishonourReason::NoAccount
                    } else {
                        ib4b::DishonourReason::PaymentRefused
                    },
                })
        })
        .collect();
    if decisions.is_empty() {
        return Ok(None);
    }
    Ok(Some(write_dishonour_file(&file, &decisions, today)?))
}

/// `name` without its extension.
fn stem(name: &str) -> &str {
    name.rsplit_once('.').map_or(name, |(stem, _)| stem)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenarios::cutoff::reference::SCRIPTS;

    #[test]
    fn a_rail_leaves_out_the_references_of_what_it_does_not_do() {
        for &method in PayoutMethod::ALL {
            let rail = BenchRail::of(method);
            for name in rail.scripts_left_out() {
                assert!(SCRIPTS.iter().any(|(script, _)| *script == name), "{name}");
            }
            // A rail settled by a report knows its lines' size.
            let by_report = !rail.scripts_left_out().contains(&"cutoff_settled_report");
            assert_eq!(by_report, rail.report_line_bytes() > 0, "{method:?}");
        }
        let left_out = |method| BenchRail::of(method).scripts_left_out();
        assert_eq!(
            left_out(PayoutMethod::Sepa),
            vec![
                "cutoff_returned",
                "cutoff_rejected",
                "cutoff_accounts_failed"
            ]
        );
        assert_eq!(
            left_out(PayoutMethod::Ach),
            vec!["cutoff_settled_report", "cutoff_rejected"]
        );
        assert_eq!(left_out(PayoutMethod::Digital), vec!["cutoff_returned"]);
        assert!(BenchRail::of(PayoutMethod::Digital).has_partner());
        assert!(!BenchRail::of(PayoutMethod::Eft).has_partner());
    }
}
