//! `FileRail` and `MethodRails` over an in-memory file store and bank drop that can fail at each
//! step, the way a crash would interrupt them.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use uuid::Uuid;

use super::*;
use crate::account::AccountField;
use crate::account::ports::MockAccountStore;
use crate::batch::BatchStatus;
use crate::builders::{BatchBuilder, PayoutBuilder, ReceiverAccountBuilder, ReceiverBuilder};
use crate::ids::{BatchId, PayoutId, ReceiverAccountId, ReceiverId};
use crate::money::Asset;
use crate::payout::PayoutStatus;
use crate::ports::{MockClock, MockIdGenerator};
use crate::rail::instruction::WrittenFile;
use crate::rail::ports::{AnsweredPayout, RailFileSummary};
use crate::rail::transport::UploadOutcome;
use crate::receiver::ports::MockReceiverStore;

fn at(secs: i64) -> DateTime<Utc> {
    DateTime::from_timestamp(1_700_000_000 + secs, 0).unwrap()
}

/// Where an injected failure strikes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    /// The drop cannot be reached: nothing is written.
    UploadUnreachable,
    /// The connection drops after the temporary file was written, before the rename.
    UploadInterrupted,
    /// The store cannot record the upload (the process dies after uploading).
    RecordUpload,
    /// The drop cannot be reached once a file was uploaded (the process dies between parts).
    SecondUploadUnreachable,
    /// The store cannot store a file (the process dies before storing it).
    StoreFile,
}

#[derive(Default)]
struct Faults(Mutex<Vec<Fault>>);

impl Faults {
    fn arm(&self, fault: Fault) {
        self.0.lock().unwrap().push(fault);
    }
    fn take(&self, fault: Fault) -> bool {
        let mut armed = self.0.lock().unwrap();
        let found = armed.iter().position(|f| *f == fault);
        found.map(|i| armed.remove(i)).is_some()
    }
}

/// The bank's drop: files by name, temporary files apart, and how many writes happened.
#[derive(Default)]
struct Drop {
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    temporary: Mutex<Vec<String>>,
    writes: AtomicUsize,
    faults: Arc<Faults>,
}

#[async_trait]
impl FileTransport for Drop {
    async fn upload(&self, name: &str, bytes: &[u8]) -> Result<UploadOutcome, PortError> {
        if self.faults.take(Fault::UploadUnreachable)
            || (self.writes.load(Ordering::SeqCst) == 1
                && self.faults.take(Fault::SecondUploadUnreachable))
        {
            return Err(PortError::Unavailable(anyhow::anyhow!(
                "connection refused"
            )));
        }
        if let Some(there) = self.files.lock().unwrap().get(name) {
            return if there == bytes {
                Ok(UploadOutcome::AlreadyThere)
            } else {
                Err(PortError::unknown(format!("{name} holds other bytes")))
            };
        }
        self.temporary.lock().unwrap().push(format!(".{name}.part"));
        if self.faults.take(Fault::UploadInterrupted) {
            return Err(PortError::Unavailable(anyhow::anyhow!("connection reset")));
        }
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.files
            .lock()
            .unwrap()
            .insert(name.to_owned(), bytes.to_vec());
        Ok(UploadOutcome::Uploaded)
    }

    async fn list_inbound(&self) -> Result<Vec<String>, PortError> {
        Ok(Vec::new())
    }

    async fn fetch_inbound(&self, name: &str) -> Result<Vec<u8>, PortError> {
        Err(PortError::unknown(format!("no inbound file {name}")))
    }
}

/// An in-memory `RailFileStore` with the port's semantics; `payouts` are the payouts as the
/// database has them (those of submitted batches).
#[derive(Default)]
struct Files {
    files: Mutex<Vec<RailFile>>,
    payouts: Mutex<Vec<Payout>>,
    numbers: Mutex<BTreeMap<(PayoutMethod, Option<NaiveDate>), u32>>,
    faults: Arc<Faults>,
}

#[async_trait]
impl RailFileStore for Files {
    async fn find_file(
        &self,
        batch: BatchId,
        method: PayoutMethod,
        part: u32,
    ) -> Result<Option<RailFile>, PortError> {
        Ok(self
            .files
            .lock()
            .unwrap()
            .iter()
            .find(|f| f.batch_id == batch && f.method == method && f.part == part)
            .cloned())
    }

    async fn find_files(
        &self,
        batch: BatchId,
        method: PayoutMethod,
    ) -> Result<Vec<RailFile>, PortError> {
        let mut found: Vec<RailFile> = self
            .files
            .lock()
            .unwrap()
            .iter()
            .filter(|f| f.batch_id == batch && f.method == method)
            .cloned()
            .collect();
        found.sort_by_key(|f| f.part);
        Ok(found)
    }

    async fn next_file_number(
        &self,
        method: PayoutMethod,
        day: Option<NaiveDate>,
    ) -> Result<u32, PortError> {
        let mut numbers = self.numbers.lock().unwrap();
        let n = numbers.entry((method, day)).or_insert(0);
        *n += 1;
        Ok(*n)
    }

    async fn insert_file(&self, file: RailFile) -> Result<RailFile, PortError> {
        if self.faults.take(Fault::StoreFile) {
            return Err(PortError::Unavailable(anyhow::anyhow!("database gone")));
        }
        let mut files = self.files.lock().unwrap();
        if let Some(existing) = files
            .iter()
            .find(|f| f.batch_id == file.batch_id && f.method == file.method && f.part == file.part)
        {
            return Ok(existing.clone());
        }
        let ours = |f: &&RailFile| f.batch_id == file.batch_id && f.method == file.method;
        if files.iter().filter(ours).any(|f| {
            f.items
                .iter()
                .any(|i| file.reference_of(i.payout_id).is_some())
        }) {
            return Err(PortError::unknown("a payout in two files of a batch"));
        }
        files.push(file.clone());
        Ok(file)
    }

    async fn move_file(
        &self,
        id: RailFileId,
        from: RailFileState,
        to: RailFileState,
        at: DateTime<Utc>,
        reason: Option<String>,
    ) -> Result<bool, PortError> {
        if self.faults.take(Fault::RecordUpload) {
            return Err(PortError::Unavailable(anyhow::anyhow!("database gone")));
        }
        if !from.may_become(to) {
            return Err(PortError::unknown(format!("{from:?} cannot become {to:?}")));
        }
        let mut files = self.files.lock().unwrap();
        let Some(file) = files.iter_mut().find(|f| f.id == id && f.state == from) else {
            return Ok(false);
        };
        file.state = to;
        if to == RailFileState::Uploaded {
            file.uploaded_at = Some(at);
        } else {
            file.answered_at = Some(at);
            file.reason = reason;
        }
        Ok(true)
    }

    async fn list_files(
        &self,
        _state: Option<RailFileState>,
        _before: Option<RailFileId>,
        _limit: u32,
    ) -> Result<Vec<RailFileSummary>, PortError> {
        Ok(Vec::new())
    }

    async fn get_file(&self, id: RailFileId) -> Result<Option<RailFile>, PortError> {
        Ok(self
            .files
            .lock()
            .unwrap()
            .iter()
            .find(|f| f.id == id)
            .cloned())
    }

    async fn answered_payouts(
        &self,
        method: PayoutMethod,
        paid_from: Option<NaiveDate>,
        limit: u32,
    ) -> Result<Vec<AnsweredPayout>, PortError> {
        let payouts = self.payouts.lock().unwrap();
        let answered = self
            .files
            .lock()
            .unwrap()
            .iter()
            .filter(|f| f.method == method)
            .filter(|f| match f.state {
                RailFileState::Rejected => true,
                RailFileState::Uploaded | RailFileState::Acknowledged => {
                    paid_from.is_some_and(|day| f.effective_date <= day)
                }
                RailFileState::Generated => false,
            })
            .flat_map(|f| {
                f.items.iter().filter_map(|item| {
                    let payout = payouts.iter().find(|p| p.id == item.payout_id)?;
                    (payout.status == PayoutStatus::InProgress).then(|| AnsweredPayout {
                        payout: payout.clone(),
                        file: f.id,
                        name: f.name.clone(),
                        state: f.state,
                        reason: f.reason.clone(),
                    })
                })
            })
            .take(usize::try_from(limit).unwrap())
            .collect();
        Ok(answered)
    }
}

/// A writer whose bytes follow from the request alone, counting its calls.
#[derive(Default)]
struct Writer {
    calls: AtomicUsize,
}

impl BankFileWriter for Writer {
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let mut bytes = format!(
            "{} part {} #{}\n",
            request.batch_id, request.part, request.sequence
        )
        .into_bytes();
        let mut references = Vec::new();
        for (n, instruction) in request.instructions.iter().enumerate() {
            bytes.extend(
                format!(
                    "{} {} {}\n",
                    instruction.payout_id,
                    instruction.amount.get(),
                    instruction.account.expose()
                )
                .into_bytes(),
            );
            references.push(format!("T{:03}{:04}", request.sequence, n + 1));
        }
        Ok(WrittenFile {
            extension: "txt",
            bytes,
            references,
        })
    }
}

struct World {
    drop: Arc<Drop>,
    files: Arc<Files>,
    writer: Arc<Writer>,
    faults: Arc<Faults>,
    batch: Batch,
    payouts: Vec<(Payout, ReceiverAccount)>,
}

impl World {
    /// The payouts with their accounts, as the rail takes them.
    fn pairs(&self) -> Vec<(&Payout, &ReceiverAccount)> {
        self.payouts.iter().map(|(p, a)| (p, a)).collect()
    }
}

fn account_of(payout: &Payout, method: PayoutMethod, number: &str) -> ReceiverAccount {
    ReceiverAccountBuilder::new()
        .id(payout.account_id)
        .receiver(payout.receiver_id)
        .subaccount(payout.subaccount_id)
        .method(method)
        .data(&[
            (AccountField::RoutingNumber, "011000015"),
            (AccountField::AccountNumber, number),
        ])
        .created_at(at(0))
        .build()
}

fn world() -> World {
    let faults = Arc::new(Faults::default());
    let batch = BatchBuilder::new()
        .status(BatchStatus::Queue)
        .totals(2, 3_000)
        .at(at(0))
        .build();
    let payouts = (1..=2u128)
        .map(|n| {
            let payout = PayoutBuilder::new()
                .id(PayoutId::from_uuid(Uuid::from_u128(100 + n)))
                .account(ReceiverAccountId::from_uuid(Uuid::from_u128(200 + n)))
                .asset(Asset::Usd)
                .amount(i64::try_from(n).unwrap() * 1_000)
                .status(PayoutStatus::InProgress)
                .batch(batch.id)
                .build();
            let account = account_of(&payout, PayoutMethod::Ach, &format!("12345678{n}"));
            (payout, account)
        })
        .collect();
    World {
        drop: Arc::new(Drop {
            faults: faults.clone(),
            ..Drop::default()
        }),
        files: Arc::new(Files {
            faults: faults.clone(),
            ..Files::default()
        }),
        writer: Arc::new(Writer::default()),
        faults,
        batch,
        payouts,
    }
}

fn rail(w: &World, method: PayoutMethod, now: DateTime<Utc>, settlement: Settlement) -> FileRail {
    rail_within(w, method, now, settlement, FileLimits::NONE)
}

fn rail_within(
    w: &World,
    method: PayoutMethod,
    now: DateTime<Utc>,
    settlement: Settlement,
    limits: FileLimits,
) -> FileRail {
    let receivers = receivers_found(Arc::new(Mutex::new(Vec::new())));
    rail_reading(w, method, now, settlement, limits, receivers)
}

/// A receiver store that finds every receiver asked for, and records in `reads` how many each
/// read asked for. A file's receivers are read in sets, never one by one.
fn receivers_found(reads: Arc<Mutex<Vec<usize>>>) -> MockReceiverStore {
    let mut receivers = MockReceiverStore::new();
    receivers
        .expect_find_receivers()
        .returning(move |subaccount, ids| {
            reads.lock().unwrap().push(ids.len());
            Ok(ids
                .iter()
                .map(|id| {
                    ReceiverBuilder::new()
                        .id(*id)
                        .subaccount(subaccount)
                        .build()
                })
                .collect())
        });
    receivers.expect_find_receiver().never();
    receivers
}

/// A rail whose receivers come from `receivers`.
fn rail_reading(
    w: &World,
    method: PayoutMethod,
    now: DateTime<Utc>,
    settlement: Settlement,
    limits: FileLimits,
    receivers: MockReceiverStore,
) -> FileRail {
    let mut clock = MockClock::new();
    clock.expect_now().returning(move || now);
    let mut ids = MockIdGenerator::new();
    ids.expect_new_id().returning(Uuid::new_v4);
    FileRail::new(
        FileRailSettings {
            method,
            prefix: "PAYOUTD".to_owned(),
            numbering: FileNumbering::PerDay,
            settlement,
            effective_date: Arc::new(|t: DateTime<Utc>| t.date_naive() + Duration::days(1)),
            limits,
        },
        w.writer.clone(),
        w.drop.clone(),
        w.files.clone(),
        Arc::new(receivers),
        Arc::new(clock),
        Arc::new(ids),
    )
}

fn ach(w: &World) -> FileRail {
    rail(w, PayoutMethod::Ach, at(0), Settlement::OnEffectiveDate)
}

/// After a submission, interrupted or not: the drop and the store agree, one file each.
fn the_bank_has_the_stored_file_once(w: &World) -> RailFile {
    let files = w.files.files.lock().unwrap().clone();
    assert_eq!(files.len(), 1, "one file per batch and method");
    let file = files[0].clone();
    let drop = w.drop.files.lock().unwrap().clone();
    assert_eq!(drop.len(), 1, "one file in the bank's drop");
    assert_eq!(drop.get(&file.name), Some(&file.bytes), "the stored bytes");
    assert_eq!(w.drop.writes.load(Ordering::SeqCst), 1, "written once");
    assert_eq!(w.writer.calls.load(Ordering::SeqCst), 1, "generated once");
    file
}

#[tokio::test]
async fn a_batch_becomes_one_stored_uploaded_file_and_its_references_are_the_receipts() {
    let w = world();
    let receipts = ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    let file = the_bank_has_the_stored_file_once(&w);
    assert_eq!(file.state, RailFileState::Uploaded);
    assert_eq!(file.uploaded_at, Some(at(0)));
    assert_eq!(file.sha256, RailFile::digest(&file.bytes));
    assert_eq!(
        file.name,
        format!("PAYOUTD-{}-usd-ach.txt", w.batch.id.as_uuid().simple())
    );
    assert_eq!(
        receipts,
        vec![
            RailReceipt {
                payout_id: w.payouts[0].0.id,
                provider_reference: "T0010001".to_owned()
            },
            RailReceipt {
                payout_id: w.payouts[1].0.id,
                provider_reference: "T0010002".to_owned()
            },
        ]
    );
    // A runner that takes the batch over submits again: the same answer, nothing sent.
    let again = ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    assert_eq!(again, receipts);
    the_bank_has_the_stored_file_once(&w);
}

#[tokio::test]
async fn a_crash_after_generating_sends_the_stored_file_on_the_retry() {
    let w = world();
    w.faults.arm(Fault::UploadUnreachable);
    assert!(matches!(
        ach(&w).submit_payouts(&w.batch, &w.pairs()).await,
        Err(PortError::Unavailable(_))
    ));
    let stored = w.files.files.lock().unwrap().clone();
    assert_eq!(stored.len(), 1);
    assert_eq!(
        stored[0].state,
        RailFileState::Generated,
        "stored before sending"
    );
    assert!(w.drop.files.lock().unwrap().is_empty());
    let receipts = ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    let file = the_bank_has_the_stored_file_once(&w);
    assert_eq!(file.state, RailFileState::Uploaded);
    assert_eq!(
        file.bytes, stored[0].bytes,
        "the stored bytes, not new ones"
    );
    assert_eq!(receipts[0].provider_reference, "T0010001");
}

#[tokio::test]
async fn a_crash_during_the_upload_leaves_only_a_temporary_file_and_the_retry_sends_once() {
    let w = world();
    w.faults.arm(Fault::UploadInterrupted);
    assert!(ach(&w).submit_payouts(&w.batch, &w.pairs()).await.is_err());
    assert!(w.drop.files.lock().unwrap().is_empty(), "no half file");
    assert_eq!(w.drop.temporary.lock().unwrap().len(), 1);
    ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    assert_eq!(
        the_bank_has_the_stored_file_once(&w).state,
        RailFileState::Uploaded
    );
}

#[tokio::test]
async fn a_crash_after_the_upload_before_recording_it_never_sends_twice() {
    let w = world();
    w.faults.arm(Fault::RecordUpload);
    assert!(ach(&w).submit_payouts(&w.batch, &w.pairs()).await.is_err());
    assert_eq!(w.drop.files.lock().unwrap().len(), 1, "the bank has it");
    assert_eq!(
        w.files.files.lock().unwrap()[0].state,
        RailFileState::Generated,
        "the store does not know yet"
    );
    let receipts = ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    let file = the_bank_has_the_stored_file_once(&w);
    assert_eq!(file.state, RailFileState::Uploaded);
    assert_eq!(receipts.len(), 2);
}

#[tokio::test]
async fn two_runners_racing_write_one_file() {
    let w = world();
    // The first runner stored its file but has not uploaded; a second runner that generated
    // concurrently gets the first's file from the store and uploads those bytes.
    w.faults.arm(Fault::UploadUnreachable);
    assert!(ach(&w).submit_payouts(&w.batch, &w.pairs()).await.is_err());
    let first = w.files.files.lock().unwrap()[0].clone();
    let second = ach(&w);
    let written = second.generate(&w.batch, 1, &w.pairs()).await.unwrap();
    assert_eq!(written.id, first.id, "the store kept the first file");
    second.submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    assert_eq!(w.files.files.lock().unwrap().len(), 1);
    assert_eq!(w.drop.files.lock().unwrap().len(), 1);
    assert_eq!(
        w.drop.files.lock().unwrap().get(&first.name),
        Some(&first.bytes)
    );
}

#[tokio::test]
async fn a_stored_file_without_a_submitted_payout_is_an_error_not_a_receipt() {
    let w = world();
    ach(&w)
        .submit_payouts(&w.batch, &w.pairs()[..1])
        .await
        .unwrap();
    assert!(matches!(
        ach(&w).submit_payouts(&w.batch, &w.pairs()).await,
        Err(PortError::Unknown(_))
    ));
}

#[tokio::test]
async fn payouts_settle_on_the_effective_date_and_a_rejected_file_fails_them() {
    let w = world();
    ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    let payouts: Vec<Payout> = w.payouts.iter().map(|(p, _)| p.clone()).collect();
    *w.files.payouts.lock().unwrap() = payouts.clone();
    // Written at day 0, effective the next day.
    assert!(ach(&w).results(500).await.unwrap().is_empty());
    let next_day = rail(
        &w,
        PayoutMethod::Ach,
        at(0) + Duration::days(1),
        Settlement::OnEffectiveDate,
    );
    let paid = next_day.results(1).await.unwrap();
    assert_eq!(
        paid,
        vec![RailOutcome {
            payout: payouts[0].clone(),
            result: RailResult::Paid
        }],
        "no more than the limit"
    );
    assert_eq!(next_day.results(500).await.unwrap().len(), 2);
    assert!(next_day.results(0).await.unwrap().is_empty());
    // A payout settled meanwhile is not in progress any more: no result for it.
    w.files.payouts.lock().unwrap()[0].status = PayoutStatus::Successful;
    let rest = next_day.results(500).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].payout.id, payouts[1].id);
    w.files.payouts.lock().unwrap()[0].status = PayoutStatus::InProgress;
    // A rail with positive confirmation waits for the bank whatever the date.
    let confirming = rail(
        &w,
        PayoutMethod::Ach,
        at(0) + Duration::days(9),
        Settlement::OnConfirmation,
    );
    assert!(confirming.results(500).await.unwrap().is_empty());
    // A rejected file fails them all, with the bank's reason.
    let id = w.files.files.lock().unwrap()[0].id;
    assert!(
        w.files
            .move_file(
                id,
                RailFileState::Uploaded,
                RailFileState::Rejected,
                at(60),
                Some("bad control total".to_owned())
            )
            .await
            .unwrap()
    );
    let failed = next_day.results(500).await.unwrap();
    assert_eq!(failed.len(), 2);
    assert!(failed.iter().all(|o| matches!(
        &o.result,
        RailResult::Failed { code: None, receiver_is_invalid: false, reason } if reason.contains("bad control total")
    )));
}

#[tokio::test]
async fn a_payout_whose_receiver_or_account_is_not_found_writes_no_file() {
    let w = world();
    // The second payout is to another receiver, which the set read does not find.
    let mut payouts = w.payouts.clone();
    payouts[1].0.receiver_id = ReceiverId::from_uuid(Uuid::from_u128(0x5EC));
    let first = payouts[0].0.receiver_id;
    let mut receivers = MockReceiverStore::new();
    receivers
        .expect_find_receivers()
        .times(1)
        .returning(move |subaccount, _| {
            Ok(vec![
                ReceiverBuilder::new()
                    .id(first)
                    .subaccount(subaccount)
                    .build(),
            ])
        });
    receivers.expect_find_receiver().never();
    let rail = rail_reading(
        &w,
        PayoutMethod::Ach,
        at(0),
        Settlement::OnEffectiveDate,
        FileLimits::NONE,
        receivers,
    );
    let missing = w.payouts[1].0.id;
    let pairs: Vec<_> = payouts.iter().map(|(p, a)| (p, a)).collect();
    let refused = rail.submit_payouts(&w.batch, &pairs).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains(&format!("payout {missing} has no receiver")),
        "{refused}"
    );
    assert!(w.files.files.lock().unwrap().is_empty(), "nothing stored");
    assert!(w.drop.files.lock().unwrap().is_empty(), "nothing sent");

    // The set read of the batch's accounts finds only the first (the other is not the
    // subaccount's, or gone).
    let known = w.payouts[0].1.clone();
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_find_accounts()
        .times(1)
        .returning(move |_, _| Ok(vec![known.clone()]));
    accounts.expect_find_account().never();
    let rails = MethodRails::new(vec![ach(&w)], Arc::new(accounts));
    let payouts: Vec<Payout> = w.payouts.iter().map(|(p, _)| p.clone()).collect();
    let refused = rails.submit(&w.batch, &payouts).await.unwrap_err();
    assert!(
        refused
            .to_string()
            .contains(&format!("payout {missing} has no account")),
        "{refused}"
    );
    assert!(w.files.files.lock().unwrap().is_empty(), "nothing stored");
}

#[tokio::test]
async fn method_rails_results_ask_each_rail_for_the_room_left() {
    let w = world();
    let next_day = at(0) + Duration::days(1);
    ach(&w).submit_payouts(&w.batch, &w.pairs()).await.unwrap();
    *w.files.payouts.lock().unwrap() = w.payouts.iter().map(|(p, _)| p.clone()).collect();
    let mut accounts = MockAccountStore::new();
    // Results need no account.
    accounts.expect_find_accounts().never();
    accounts.expect_find_account().never();
    let rails = MethodRails::new(
        vec![
            rail(&w, PayoutMethod::Ach, next_day, Settlement::OnEffectiveDate),
            rail(&w, PayoutMethod::Sepa, next_day, Settlement::OnConfirmation),
        ],
        Arc::new(accounts),
    );
    assert_eq!(rails.results(500).await.unwrap().len(), 2);
    assert_eq!(rails.results(1).await.unwrap().len(), 1);
    assert!(rails.results(0).await.unwrap().is_empty());
}

#[tokio::test]
async fn method_rails_route_payouts_by_account_method_and_refuse_a_method_without_rail() {
    let w = world();
    let mut mixed = w.payouts.clone();
    mixed[1].1.method = PayoutMethod::Sepa;
    let accounts: Vec<ReceiverAccount> = mixed.iter().map(|(_, a)| a.clone()).collect();
    let mut store = MockAccountStore::new();
    store.expect_find_accounts().returning(move |_, ids| {
        Ok(accounts
            .iter()
            .filter(|a| ids.contains(&a.id))
            .cloned()
            .collect())
    });
    // A batch's accounts are read as one set, never one by one.
    store.expect_find_account().never();
    let store: Arc<dyn AccountStore> = Arc::new(store);
    let payouts: Vec<Payout> = mixed.iter().map(|(p, _)| p.clone()).collect();
    let only_ach = MethodRails::new(vec![ach(&w)], store.clone());
    assert!(only_ach.enables(PayoutMethod::Ach));
    assert!(!only_ach.enables(PayoutMethod::Sepa));
    assert!(matches!(
        only_ach.submit(&w.batch, &payouts).await,
        Err(PortError::Unknown(_))
    ));
    let both = MethodRails::new(
        vec![
            ach(&w),
            rail(&w, PayoutMethod::Sepa, at(0), Settlement::OnConfirmation),
        ],
        store,
    );
    let receipts = both.submit(&w.batch, &payouts).await.unwrap();
    assert_eq!(receipts.len(), 2);
    let files = w.files.files.lock().unwrap().clone();
    let methods: Vec<PayoutMethod> = files.iter().map(|f| f.method).collect();
    assert!(methods.contains(&PayoutMethod::Ach) && methods.contains(&PayoutMethod::Sepa));
    assert_eq!(w.drop.files.lock().unwrap().len(), 2, "one file per method");
}

/// A batch split into parts at its format's limits.
#[path = "file_rail_parts_tests.rs"]
mod parts;
