//! The bank's responder: reads the files payoutd puts in each rail's `outbound` directory and
//! answers them in `inbound` (see [`super`] for what it answers).

use std::{
    collections::HashSet,
    fs,
    path::PathBuf,
    time::{Duration, Instant},
};

use bank_formats::{
    aba, cpa005, ib4b,
    iso20022::{ReasonCode, Status, StatusReason},
    nacha::{self, LineEnding, NachaFile, ReturnCode},
};
use bank_simulator::{
    iso20022::{ReportDecisions, TransactionDecision, read_pain001, status_report, write_pain002},
    nacha::{Answer, AnswerOptions, EntryDecision},
};
use chrono::NaiveDate;
use sha2::{Digest, Sha256};

use super::{RailDirs, RailKind, complete_files, copy_into, stem};

/// The references of `ids` picked for the answer `what`: the `share` of them (rounded) whose
/// SHA-256(`what`:`id`) is smallest. Deterministic for given ids, and exactly the share.
pub fn pick(what: &str, ids: &[String], share: f64) -> HashSet<String> {
    let mut ranked: Vec<(f64, &String)> = ids.iter().map(|id| (fraction(what, id), id)).collect();
    ranked.sort_by(|a, b| a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1)));
    // The count is at most ids.len(): share is from 0 to 1.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let count = (ids.len() as f64 * share).round() as usize;
    ranked
        .into_iter()
        .take(count)
        .map(|(_, id)| id.clone())
        .collect()
}

/// Whether `id` is picked by a coin of weight `share` for the answer `what`.
fn decide(what: &str, id: &str, share: f64) -> bool {
    fraction(what, id) < share
}

fn fraction(what: &str, id: &str) -> f64 {
    let digest = Sha256::digest(format!("{what}:{id}").as_bytes());
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest[..8]);
    // Precision loss is fine: this is a fraction, not an identity.
    #[allow(clippy::cast_precision_loss)]
    let value = u64::from_be_bytes(first) as f64 / 18_446_744_073_709_551_616.0;
    value
}

/// The NACHA return codes a credit comes back with: R02 account closed, R03 no account, R04
/// invalid account number, R16 account frozen, R20 non-transaction account, R23 credit refused
/// by the receiver. (R01, insufficient funds, and the other debit reasons never return a
/// credit.)
pub const ACH_CREDIT_RETURN_CODES: [&str; 6] = ["R02", "R03", "R04", "R16", "R20", "R23"];

/// The Standard 005 reasons a credit comes back with: 905 account closed, 910 payee deceased,
/// 911 account frozen, 912 invalid/incorrect account number, 914 incorrect payee name, 915
/// refused by payee. (901, NSF, and the other debit reasons never return a credit.)
pub const CPA_CREDIT_RETURN_CODES: [u16; 6] = [905, 910, 911, 912, 914, 915];

/// One of `codes` for the answer `what` about `id`, by hash: each equally likely.
fn code_of<T: Copy>(what: &str, id: &str, codes: &[T]) -> Option<T> {
    // The fraction is below 1, so the index is below the length.
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        clippy::cast_precision_loss
    )]
    let index = (fraction(what, id) * codes.len() as f64) as usize;
    codes.get(index).copied()
}

/// The NACHA return code for a returned credit entry, by hash among
/// [`ACH_CREDIT_RETURN_CODES`].
pub fn ach_return_code(trace: &str) -> &'static str {
    code_of("ach-code", trace, &ACH_CREDIT_RETURN_CODES).unwrap_or("R03")
}

/// What the bank decided, for the demo to check payoutd's results against.
#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// Files read from the outbound directories.
    pub files_read: usize,
    /// Files written to the inbound directories.
    pub files_written: usize,
    /// Payments in the files read.
    pub payments: usize,
    /// References rejected or returned before settlement.
    pub rejected: Vec<String>,
    /// References returned after settlement (written).
    pub returned_late: Vec<String>,
    /// Late returns not written yet.
    pub late_pending: usize,
    /// Files that could not be read or answered.
    pub unreadable: Vec<String>,
}

/// A return file written when its original was read, put in the inbound directory once the
/// original's effective date has come and a delay has passed (returns after settlement).
struct LateReturns {
    dirs: RailDirs,
    name: String,
    bytes: Vec<u8>,
    references: Vec<String>,
    effective: Option<NaiveDate>,
    received: Instant,
}

/// Writes a return file for some references of a file.
type WriteReturns<'a> = dyn Fn(&[String], u8) -> Result<Vec<u8>, String> + 'a;

/// A file of a format answered by return files: its payments' references and effective date,
/// and how to write a return file for some of them.
struct ReturnsAnswer<'a> {
    /// The name of the file read.
    name: &'a str,
    /// The extension of the return files.
    extension: &'a str,
    /// The references of the payments, in file order.
    references: Vec<String>,
    /// When the payments take effect.
    effective: Option<NaiveDate>,
    /// Writes a return file for these references; the second argument tells the first return
    /// file of an original (`0`) from the later one (`1`).
    write: &'a WriteReturns<'a>,
}

/// Reads what payoutd uploads and answers it.
pub struct Responder {
    rails: Vec<RailDirs>,
    share: f64,
    late_after: Duration,
    seen: HashSet<PathBuf>,
    late: Vec<LateReturns>,
    tally: Tally,
    sequence: u32,
}

impl Responder {
    pub fn new(rails: Vec<RailDirs>, share: f64, late_after: Duration) -> Self {
        Self {
            rails,
            share,
            late_after,
            seen: HashSet::new(),
            late: Vec::new(),
            tally: Tally::default(),
            sequence: 0,
        }
    }

    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Answers every new file, and writes the late returns that are due; one line per file on
    /// stderr.
    pub fn poll(&mut self) -> Result<(), String> {
        for dirs in self.rails.clone() {
            for name in complete_files(&dirs.outbound)? {
                let path = dirs.outbound.join(&name);
                if !self.seen.insert(path.clone()) {
                    continue;
                }
                let bytes = fs::read(&path)
                    .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
                copy_into(&dirs.read, &name, &bytes)?;
                self.tally.files_read += 1;
                let answered = match dirs.kind {
                    RailKind::Sepa => self.answer_pain001(&dirs, &name, &bytes),
                    RailKind::Ach => self.answer_nacha(&dirs, &name, &bytes),
                    RailKind::DirectEntry => self.answer_aba(&dirs, &name, &bytes),
                    RailKind::Eft => self.answer_cpa005(&dirs, &name, &bytes),
                    RailKind::DirectCredit => self.answer_ib4b(&dirs, &name, &bytes),
                };
                // A file the bank cannot read is reported and left unanswered, as a bank would.
                if let Err(err) = answered {
                    eprintln!("bank: {}: cannot answer {name}: {err}", dirs.kind.route());
                    self.tally.unreadable.push(name);
                }
            }
        }
        self.write_due_late_returns()
    }

    fn answer_pain001(&mut self, dirs: &RailDirs, name: &str, bytes: &[u8]) -> Result<(), String> {
        let summary = read_pain001(bytes).map_err(|err| format!("bank: {name}: {err}"))?;
        let ids: Vec<String> = summary
            .transactions()
            .map(|(_, tx)| tx.end_to_end_id.clone())
            .collect();
        let rejected = pick("sepa-reject", &ids, self.share);
        let mut transactions = Vec::new();
        for id in &ids {
            self.tally.payments += 1;
            let reject = rejected.contains(id);
            if reject {
                self.tally.rejected.push(id.clone());
            }
            transactions.push(TransactionDecision {
                end_to_end_id: id.clone(),
                status: if reject {
                    Status::Rejected
                } else {
                    Status::AcceptedSettlementCompleted
                },
                reasons: if reject {
                    vec![StatusReason {
                        code: Some(ReasonCode::new("AC04")),
                        proprietary: None,
                        additional_info: vec!["Closed account (bank simulator)".to_owned()],
                    }]
                } else {
                    Vec::new()
                },
            });
        }
        self.sequence += 1;
        let decisions = ReportDecisions {
            message_id: format!(
                "BANKSIM-{}-{}",
                crate::clock::now().format("%Y%m%d%H%M%S"),
                self.sequence
            ),
            created_at: crate::clock::now().naive_utc(),
            group_status: Status::AcceptedCustomerProfile,
            group_reasons: Vec::new(),
            transactions,
        };
        let report =
            status_report(&summary, &decisions).map_err(|err| format!("bank: {name}: {err}"))?;
        let xml = write_pain002(&report).map_err(|err| format!("bank: {name}: {err}"))?;
        self.write_answer(dirs, &format!("{}-pain002.xml", stem(name)), &xml)
    }

    fn answer_nacha(&mut self, dirs: &RailDirs, name: &str, bytes: &[u8]) -> Result<(), String> {
        let file = nacha::parse(bytes).map_err(|err| format!("bank: {name}: {err}"))?;
        let write = |references: &[String], which: u8| {
            let decisions = references
                .iter()
                .map(|trace| return_decision(trace))
                .collect::<Result<Vec<_>, _>>()?;
            answer_bytes(&file, &decisions, if which == 0 { 'A' } else { 'B' })
                .map_err(|err| err.to_string())
        };
        self.answer_with_returns(
            dirs,
            &ReturnsAnswer {
                name,
                extension: "ach",
                references: file
                    .batches
                    .iter()
                    .flat_map(|batch| batch.entries.iter().map(|e| e.trace_number.clone()))
                    .collect(),
                effective: file
                    .batches
                    .iter()
                    .filter_map(|batch| batch.header.effective_entry_date)
                    .max(),
                write: &write,
            },
        )
    }

    fn answer_aba(&mut self, dirs: &RailDirs, name: &str, bytes: &[u8]) -> Result<(), String> {
        let file = aba::parse(bytes).map_err(|err| format!("bank: {name}: {err}"))?;
        // The credits, by their position among the detail records (a self-balancing debit
        // is not a payment).
        let credits: Vec<(usize, String)> = file
            .details
            .iter()
            .enumerate()
            .filter(|(_, d)| !d.transaction_code.is_debit())
            .map(|(entry, d)| (entry, d.lodgement_reference.trim().to_owned()))
            .collect();
        let write = |references: &[String], _: u8| {
            let decisions: Vec<bank_simulator::aba::ReturnDecision> = credits
                .iter()
                .filter(|(_, reference)| references.contains(reference))
                .map(|(entry, reference)| bank_simulator::aba::ReturnDecision {
                    entry: *entry,
                    code: if decide("aba-code", reference, 0.5) {
                        aba::ReturnCode::AccountClosed
                    } else {
                        aba::ReturnCode::ReferToCustomer
                    },
                })
                .collect();
            bank_simulator::aba::write_return_file(
                &file,
                &decisions,
                crate::clock::now().date_naive(),
            )
            .map_err(|err| err.to_string())
        };
        self.answer_with_returns(
            dirs,
            &ReturnsAnswer {
                name,
                extension: "aba",
                references: credits.iter().map(|(_, r)| r.clone()).collect(),
                effective: Some(file.descriptive.processing_date),
                write: &write,
            },
        )
    }

    fn answer_cpa005(&mut self, dirs: &RailDirs, name: &str, bytes: &[u8]) -> Result<(), String> {
        let file = cpa005::parse(bytes).map_err(|err| format!("bank: {name}: {err}"))?;
        let items: Vec<(usize, String)> = file
            .transactions
            .iter()
            .enumerate()
            .map(|(item, t)| (item, t.cross_reference.trim().to_owned()))
            .collect();
        let write = |references: &[String], which: u8| {
            let decisions = items
                .iter()
                .filter(|(_, reference)| references.contains(reference))
                .map(|(item, reference)| {
                    let code =
                        code_of("cpa-code", reference, &CPA_CREDIT_RETURN_CODES).unwrap_or(905);
                    cpa005::ReturnCode::new(code)
                        .map(|reason| bank_simulator::cpa005::ReturnDecision {
                            item: *item,
                            reason,
                        })
                        .ok_or_else(|| format!("{code} is not a return code"))
                })
                .collect::<Result<Vec<_>, String>>()?;
            bank_simulator::cpa005::write_return_file(
                &file,
                &decisions,
                &bank_simulator::cpa005::ReturnFileOptions {
                    creation_date: crate::clock::now().date_naive(),
                    file_creation_number: u16::from(which) + 1,
                    trace_prefix: "000300002".to_owned(),
                    write: cpa005::WriteOptions::default(),
                },
            )
            .map_err(|err| err.to_string())
        };
        self.answer_with_returns(
            dirs,
            &ReturnsAnswer {
                name,
                extension: "cpa",
                references: items.iter().map(|(_, r)| r.clone()).collect(),
                effective: file.transactions.iter().map(|t| t.due_date).max(),
                write: &write,
            },
        )
    }

    fn answer_ib4b(&mut self, dirs: &RailDirs, name: &str, bytes: &[u8]) -> Result<(), String> {
        let ib4b::Ib4bFile::DirectCredit(file) =
            ib4b::parse(bytes).map_err(|err| format!("bank: {name}: {err}"))?
        else {
            return Err(format!(
                "bank: {name}: a dishonour file, not a direct credit file"
            ));
        };
        let write = |references: &[String], _: u8| {
            let decisions: Vec<bank_simulator::ib4b::DishonourDecision> = references
                .iter()
                .map(|reference| bank_simulator::ib4b::DishonourDecision {
                    your_reference: reference.clone(),
                    reason: if decide("ib4b-code", reference, 0.5) {
                        ib4b::DishonourReason::NoAccount
                    } else {
                        ib4b::DishonourReason::PaymentRefused
                    },
                })
                .collect();
            bank_simulator::ib4b::write_dishonour_file(
                &file,
                &decisions,
                crate::clock::now().date_naive(),
            )
            .map_err(|err| err.to_string())
        };
        self.answer_with_returns(
            dirs,
            &ReturnsAnswer {
                name,
                extension: "csv",
                references: file
                    .transactions
                    .iter()
                    .map(|t| t.yours.reference.clone())
                    .collect(),
                effective: Some(file.header.due_date),
                write: &write,
            },
        )
    }

    /// Answers a file of a format without acknowledgements: a return file at once for a share
    /// of its payments, and one after settlement for a share of the others.
    fn answer_with_returns(
        &mut self,
        dirs: &RailDirs,
        answer: &ReturnsAnswer<'_>,
    ) -> Result<(), String> {
        let what = dirs.kind.dir_name();
        let what = what.as_str();
        let references = &answer.references;
        self.tally.payments += references.len();
        let returned_now = pick(&format!("{what}-return"), references, self.share);
        let settled: Vec<String> = references
            .iter()
            .filter(|r| !returned_now.contains(*r))
            .cloned()
            .collect();
        let returned_later = pick(&format!("{what}-late-return"), &settled, self.share);
        let in_order = |set: &HashSet<String>| -> Vec<String> {
            references
                .iter()
                .filter(|r| set.contains(*r))
                .cloned()
                .collect()
        };
        let (now, later) = (in_order(&returned_now), in_order(&returned_later));
        let stem = stem(answer.name);
        let fail = |err: String| format!("bank: {}: {err}", answer.name);
        if !now.is_empty() {
            let bytes = (answer.write)(&now, 0).map_err(fail)?;
            self.tally.rejected.extend(now);
            self.write_answer(
                dirs,
                &format!("{stem}-returns.{}", answer.extension),
                &bytes,
            )?;
        }
        if !later.is_empty() {
            let bytes = (answer.write)(&later, 1).map_err(fail)?;
            self.tally.late_pending += later.len();
            self.late.push(LateReturns {
                dirs: dirs.clone(),
                name: format!("{stem}-late-returns.{}", answer.extension),
                bytes,
                references: later,
                effective: answer.effective,
                received: Instant::now(),
            });
        }
        Ok(())
    }

    fn write_due_late_returns(&mut self) -> Result<(), String> {
        let today = crate::clock::now().date_naive();
        let (due, waiting): (Vec<_>, Vec<_>) = std::mem::take(&mut self.late)
            .into_iter()
            .partition(|late| {
                late.effective.is_none_or(|date| date <= today)
                    && late.received.elapsed() >= self.late_after
            });
        self.late = waiting;
        for late in due {
            self.write_answer(&late.dirs, &late.name, &late.bytes)?;
            self.tally.late_pending -= late.references.len();
            self.tally.returned_late.extend(late.references);
        }
        Ok(())
    }

    /// Writes `name` into the inbound directory (under a dot name, then renamed) and copies it.
    fn write_answer(&mut self, dirs: &RailDirs, name: &str, bytes: &[u8]) -> Result<(), String> {
        let temporary = dirs.inbound.join(format!(".{name}.part"));
        let path = dirs.inbound.join(name);
        fs::write(&temporary, bytes)
            .and_then(|()| fs::rename(&temporary, &path))
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        copy_into(&dirs.written, name, bytes)?;
        self.tally.files_written += 1;
        eprintln!("bank: {}: wrote {name}", dirs.kind.route());
        Ok(())
    }
}

fn return_decision(trace: &str) -> Result<EntryDecision, String> {
    let code = ach_return_code(trace);
    let code = ReturnCode::parse(code).ok_or_else(|| format!("unknown return code {code}"))?;
    Ok(EntryDecision {
        original_trace_number: trace.to_owned(),
        answer: Answer::Return {
            code,
            date_of_death: None,
            addenda_information: "BANK SIMULATOR".to_owned(),
        },
    })
}

fn answer_bytes(
    original: &NachaFile,
    decisions: &[EntryDecision],
    modifier: char,
) -> Result<Vec<u8>, bank_simulator::nacha::AnswerError> {
    let now = crate::clock::now();
    bank_simulator::nacha::write_answer_file(
        original,
        decisions,
        &AnswerOptions {
            creation_date: now.date_naive(),
            creation_time: Some(now.time()),
            file_id_modifier: modifier,
            line_ending: LineEnding::Lf,
        },
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::path::PathBuf;

    use chrono::Utc;

    use bank_formats::{
        iso20022::{
            CreditTransfer, CreditTransferInitiation, DebtorAgent, InitiatingParty, PaymentBatch,
            parse_pain002, write_pain001,
        },
        nacha::{
            Batch, BatchHeader, EntryDetail, FileHeader, SecCode, ServiceClass, TransactionCode,
            WriteOptions,
        },
    };

    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-bank-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        dir
    }

    fn nacha_file(entries: u32) -> Vec<u8> {
        let date = Utc::now().date_naive();
        let file = NachaFile {
            header: FileHeader {
                immediate_destination: "021000021".into(),
                immediate_origin: "1234567890".into(),
                creation_date: date,
                creation_time: None,
                file_id_modifier: 'A',
                immediate_destination_name: "BANK".into(),
                immediate_origin_name: "PAYOUTD".into(),
                reference_code: String::new(),
            },
            batches: vec![Batch {
                header: BatchHeader {
                    service_class: ServiceClass::CreditsOnly,
                    company_name: "PAYOUTD".into(),
                    company_discretionary_data: String::new(),
                    company_identification: "1234567890".into(),
                    sec_code: SecCode::Ppd,
                    company_entry_description: "PAYOUT".into(),
                    company_descriptive_date: String::new(),
                    effective_entry_date: Some(date),
                    originating_dfi: "02100002".into(),
                    batch_number: 1,
                },
                entries: (1..=entries)
                    .map(|n| EntryDetail {
                        transaction_code: TransactionCode::CheckingCredit,
                        receiving_dfi: "021000021".into(),
                        account_number: format!("{}", 100_000 + n),
                        amount: u64::from(1_000 + n),
                        individual_id: format!("P{n}"),
                        individual_name: "RECEIVER".into(),
                        discretionary_data: String::new(),
                        trace_number: format!("02100002{n:07}"),
                        addenda: Vec::new(),
                    })
                    .collect(),
            }],
        };
        nacha::write(&file, &WriteOptions::default()).unwrap()
    }

    fn pain001_file(transactions: u32) -> Vec<u8> {
        let now = Utc::now();
        write_pain001(&CreditTransferInitiation {
            message_id: "MSG1".into(),
            created_at: now,
            initiating_party: InitiatingParty {
                name: "Payoutd".into(),
                id: None,
            },
            batches: vec![PaymentBatch {
                payment_info_id: "MSG1-1".into(),
                batch_booking: false,
                execution_date: now.date_naive(),
                debtor_name: "Payoutd".into(),
                debtor_iban: "DE89370400440532013000".into(),
                debtor_agent: DebtorAgent::NotProvided,
                transactions: (1..=transactions)
                    .map(|n| CreditTransfer {
                        instruction_id: format!("I{n}"),
                        end_to_end_id: format!("E2E{n}"),
                        amount_cents: u64::from(1_000 + n),
                        creditor_agent_bic: None,
                        creditor_name: "Receiver".into(),
                        creditor_iban: "DE89370400440532013000".into(),
                        remittance: None,
                    })
                    .collect(),
            }],
        })
        .unwrap()
    }

    #[test]
    fn the_responder_answers_each_file_once_with_the_share() {
        let root = scratch("responder");
        let rails: Vec<RailDirs> = RailKind::all()
            .map(|k| RailDirs::create(&root, k).unwrap())
            .collect();
        let of = |kind: RailKind| rails.iter().find(|r| r.kind == kind).unwrap().clone();
        let (ach, sepa) = (of(RailKind::Ach), of(RailKind::Sepa));
        let mut responder = Responder::new(rails, 0.2, Duration::ZERO);
        fs::write(ach.outbound.join("F1-usd-ach.ach"), nacha_file(10)).unwrap();
        fs::write(ach.outbound.join(".F2-usd-ach.ach.part"), b"half").unwrap();
        fs::write(sepa.outbound.join("F1-eur-sepa.xml"), pain001_file(10)).unwrap();
        fs::write(sepa.outbound.join("broken.xml"), b"<not pain").unwrap();
        responder.poll().unwrap();
        responder.poll().unwrap();

        let tally = responder.tally().clone();
        assert_eq!(tally.files_read, 3, "the .part file is not read");
        assert_eq!(tally.payments, 20);
        assert_eq!(tally.unreadable, ["broken.xml"]);
        // 2 of 10 rejected per rail at once; 2 of the 8 settled ACH entries returned later.
        assert_eq!(tally.rejected.len(), 4);
        assert_eq!(tally.returned_late.len(), 2);
        assert_eq!(tally.late_pending, 0);
        assert!(
            tally
                .rejected
                .iter()
                .all(|r| !tally.returned_late.contains(r))
        );
        assert_eq!(
            complete_files(&ach.inbound).unwrap(),
            ["F1-usd-ach-late-returns.ach", "F1-usd-ach-returns.ach"]
        );
        assert_eq!(complete_files(&ach.written).unwrap().len(), 2);
        assert_eq!(complete_files(&ach.read).unwrap(), ["F1-usd-ach.ach"]);

        let returns = nacha::parse(&fs::read(ach.inbound.join("F1-usd-ach-returns.ach")).unwrap())
            .unwrap()
            .returns();
        let mut returned: Vec<String> = returns
            .iter()
            .map(|r| r.original_trace_number.clone())
            .collect();
        returned.sort();
        let mut rejected: Vec<String> = tally
            .rejected
            .iter()
            .filter(|r| r.starts_with("0210"))
            .cloned()
            .collect();
        rejected.sort();
        assert_eq!(returned, rejected);

        let report =
            parse_pain002(&fs::read(sepa.inbound.join("F1-eur-sepa-pain002.xml")).unwrap())
                .unwrap();
        assert_eq!(report.original_message_id, "MSG1");
        assert_eq!(report.group_status, Some(Status::AcceptedCustomerProfile));
        let rejected: Vec<_> = report
            .transactions()
            .filter(|t| t.status == Some(Status::Rejected))
            .collect();
        assert_eq!(rejected.len(), 2);
        assert!(rejected.iter().all(|t| t.means_wrong_account()));
        assert_eq!(report.transactions().count(), 10);
        let _ = fs::remove_dir_all(&root);
    }

    #[test]
    fn picks_are_deterministic_and_exactly_the_share() {
        let ids: Vec<String> = (0..10).map(|i| format!("02100002{i:07}")).collect();
        let picked = pick("ach-return", &ids, 0.2);
        assert_eq!(picked.len(), 2);
        assert_eq!(picked, pick("ach-return", &ids, 0.2));
        assert!(picked.iter().all(|id| ids.contains(id)));
        // Another answer ranks the ids otherwise; the share is rounded.
        assert_eq!(pick("ach-late-return", &ids[..8], 0.2).len(), 2);
        assert_eq!(pick("x", &ids, 0.04).len(), 0);
        assert_eq!(pick("x", &ids, 1.0).len(), 10);
        assert!(pick("x", &[], 0.5).is_empty());
        // A larger share picks a superset.
        assert!(picked.is_subset(&pick("ach-return", &ids, 0.5)));
        // Different answers pick independently.
        let both = (0..10_000)
            .filter(|i| {
                let id = format!("{i:015}");
                decide("a", &id, 0.5) == decide("b", &id, 0.5)
            })
            .count();
        assert!((4_500..5_500).contains(&both), "{both}");
        // Credits come back with credit reasons only, and every one of them is used.
        let ach: HashSet<&str> = (0..1_000)
            .map(|i| ach_return_code(&format!("{i:015}")))
            .collect();
        assert_eq!(ach, ACH_CREDIT_RETURN_CODES.into_iter().collect());
        let cpa: HashSet<u16> = (0..1_000)
            .filter_map(|i| code_of("cpa-code", &format!("{i:019}"), &CPA_CREDIT_RETURN_CODES))
            .collect();
        assert_eq!(cpa, CPA_CREDIT_RETURN_CODES.into_iter().collect());
        for code in ACH_CREDIT_RETURN_CODES {
            assert!(ReturnCode::parse(code).is_some(), "{code}");
        }
        for code in CPA_CREDIT_RETURN_CODES {
            assert!(cpa005::ReturnCode::new(code).is_some(), "{code}");
        }
    }
}
