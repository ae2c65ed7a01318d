//! The file rail framework behind the [`PayoutRail`] port: each closed batch becomes one file per
//! payout method (or several, its parts, when its payouts are more than one file of the format
//! may hold: [`FileLimits`]), stored before it is sent, uploaded under a name derived from the
//! batch and part, and settled from what the file and the bank say.
//!
//! Every step can be interrupted and run again (a runner that dies leaves its batch `queue`,
//! and another runner submits it again once its lease ends):
//! - **after generating**: the file (or some of the parts) is in the store as `generated`; the
//!   retry plans the same parts, finds those stored, never writes a second file of a part,
//!   writes the missing parts, and uploads the stored bytes;
//! - **during the upload**: the transport writes a temporary name and renames it, so the bank
//!   never sees half a file; the retry uploads again;
//! - **after the upload, before recording it**: the retry's upload finds the same bytes under
//!   the same name ([`UploadOutcome::AlreadyThere`]) and sends nothing; then the file is
//!   recorded `uploaded`.
//!
//! The payouts' receipts are the references in the stored file, so a retried submission answers
//! exactly as the first; the batch runner records them only after the upload, so a payout is
//! never `in_progress` with a reference of a file the bank does not have.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};

use super::file::{RailFile, RailFileItem, RailFileState};
use super::instruction::{BankFileWriter, CreditInstruction, FileRequest};
use super::limits::FileLimits;
use super::ports::RailFileStore;
use super::transport::FileTransport;
use crate::account::ports::AccountStore;
use crate::account::{PayoutMethod, ReceiverAccount};
use crate::batch::Batch;
use crate::batch::ports::{PayoutRail, RailOutcome, RailReceipt, RailResult};
use crate::error::PortError;
use crate::ids::{RailFileId, ReceiverAccountId, ReceiverId, SubaccountId};
use crate::payout::Payout;
use crate::ports::{Clock, IdGenerator};
use crate::receiver::Receiver;
use crate::receiver::ports::ReceiverStore;

/// How many payouts' receivers a file's instructions are built from at a time (a receiver
/// with its name and address is about 1 KiB in memory).
pub(crate) const RECEIVERS_READ_AT_ONCE: usize = 2_500;

/// How a method's files are numbered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileNumbering {
    /// From 1 each day (the NACHA file id modifier).
    PerDay,
    /// From 1, over all time (the CPA-005 file creation number).
    Overall,
}

/// How a method's payouts become `successful`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Settlement {
    /// On the file's effective date, unless returned (ABA, NACHA, CPA-005, IB4B).
    OnEffectiveDate,
    /// When the bank confirms it (pain.002 `ACSC`, a partner callback).
    OnConfirmation,
}

/// The effective date of a file written at a given instant (from the rail's calendar).
pub type EffectiveDate = Arc<dyn Fn(DateTime<Utc>) -> NaiveDate + Send + Sync>;

/// A method's rail settings.
pub struct FileRailSettings {
    /// The method.
    pub method: PayoutMethod,
    /// File name prefix (e.g. `PAYOUTD`).
    pub prefix: String,
    /// How files are numbered.
    pub numbering: FileNumbering,
    /// How payouts settle.
    pub settlement: Settlement,
    /// The effective date of a file written at an instant.
    pub effective_date: EffectiveDate,
    /// What one file of the method's format may hold: a batch with more becomes several files.
    pub limits: FileLimits,
}

/// One method's file rail.
pub struct FileRail {
    settings: FileRailSettings,
    writer: Arc<dyn BankFileWriter>,
    transport: Arc<dyn FileTransport>,
    files: Arc<dyn RailFileStore>,
    receivers: Arc<dyn ReceiverStore>,
    clock: Arc<dyn Clock>,
    ids: Arc<dyn IdGenerator>,
}

impl FileRail {
    /// Wires the rail to its ports.
    pub fn new(
        settings: FileRailSettings,
        writer: Arc<dyn BankFileWriter>,
        transport: Arc<dyn FileTransport>,
        files: Arc<dyn RailFileStore>,
        receivers: Arc<dyn ReceiverStore>,
        clock: Arc<dyn Clock>,
        ids: Arc<dyn IdGenerator>,
    ) -> Self {
        Self {
            settings,
            writer,
            transport,
            files,
            receivers,
            clock,
            ids,
        }
    }

    /// The method.
    pub fn method(&self) -> PayoutMethod {
        self.settings.method
    }

    /// Submits `payouts` (each with its account, all of this method) of `batch`: the batch's
    /// files for the method, as many parts as the format's [`FileLimits`] need (each written and
    /// stored once), then each uploaded unless it was; returns each payout's reference, in file
    /// order.
    ///
    /// The payouts are put in file order (creation time, then id) and split by
    /// [`FileLimits::split`], so every attempt plans the same parts; a part already stored is
    /// taken as it is (and must hold exactly the payouts the plan gives it), a missing one is
    /// written. Every part is stored before the first upload.
    pub async fn submit_payouts(
        &self,
        batch: &Batch,
        payouts: &[PayoutToAccount<'_>],
    ) -> Result<Vec<RailReceipt>, PortError> {
        if payouts.is_empty() {
            return Ok(Vec::new());
        }
        let method = self.settings.method;
        let mut ordered: Vec<PayoutToAccount<'_>> = payouts.to_vec();
        ordered.sort_by_key(|(payout, _)| (payout.created_at, payout.id));
        let plan = self
            .settings
            .limits
            .split(ordered.iter().map(|(p, _)| (p.id, p.amount.get())))
            .map_err(|e| {
                PortError::unknown(format!(
                    "batch {} cannot be written as {} files: {e}",
                    batch.id,
                    method.route()
                ))
            })?;
        let mut stored = self.files.find_files(batch.id, method).await?;
        if let Some(extra) = stored
            .iter()
            .find(|f| usize::try_from(f.part).map_or(true, |part| part > plan.len()))
        {
            return Err(PortError::unknown(format!(
                "batch {} has file {} (part {}) beyond the {} its payouts need",
                batch.id,
                extra.name,
                extra.part,
                plan.len()
            )));
        }
        let mut files = Vec::with_capacity(plan.len());
        for (index, range) in plan.into_iter().enumerate() {
            let part = u32::try_from(index + 1)
                .map_err(|_| PortError::unknown("more parts than a u32 counts"))?;
            let chunk = ordered.get(range).unwrap_or_default();
            let file = match stored.iter().position(|f| f.part == part) {
                Some(found) => stored.swap_remove(found),
                None => self.generate(batch, part, chunk).await?,
            };
            let holds_its_chunk = file.items.len() == chunk.len()
                && file
                    .items
                    .iter()
                    .zip(chunk)
                    .all(|(item, (payout, _))| item.payout_id == payout.id);
            if !holds_its_chunk {
                return Err(PortError::unknown(format!(
                    "file {} of batch {} does not hold the payouts its part {part} is planned \
                     to: the batch's payouts changed since it was written",
                    file.name, batch.id
                )));
            }
            files.push(file);
        }
        for file in &files {
            if file.state == RailFileState::Generated {
                self.transport.upload(&file.name, &file.bytes).await?;
                self.files
                    .move_file(
                        file.id,
                        RailFileState::Generated,
                        RailFileState::Uploaded,
                        self.clock.now(),
                        None,
                    )
                    .await?;
            }
        }
        // Each file holds exactly its part of the payouts (checked above), so the files' items
        // are every payout's receipt, once, in file order.
        Ok(files
            .iter()
            .flat_map(|file| &file.items)
            .map(|item| RailReceipt {
                payout_id: item.payout_id,
                provider_reference: item.reference.clone(),
            })
            .collect())
    }

    async fn generate(
        &self,
        batch: &Batch,
        part: u32,
        payouts: &[PayoutToAccount<'_>],
    ) -> Result<RailFile, PortError> {
        let method = self.settings.method;
        let instructions = self.instructions(batch, payouts).await?;
        let now = self.clock.now();
        let day = match self.settings.numbering {
            FileNumbering::PerDay => Some(now.date_naive()),
            FileNumbering::Overall => None,
        };
        let sequence = self.files.next_file_number(method, day).await?;
        let request = FileRequest {
            batch_id: batch.id,
            subaccount_id: batch.subaccount_id,
            method,
            asset: batch.asset,
            part,
            created_at: now,
            effective_date: (self.settings.effective_date)(now),
            sequence,
            instructions,
        };
        let written = self.writer.write(&request)?;
        if written.references.len() != request.instructions.len() {
            return Err(PortError::unknown(format!(
                "the {} writer gave {} references for {} payouts",
                method.route(),
                written.references.len(),
                request.instructions.len()
            )));
        }
        let effective_date = request.effective_date;
        // The instructions (names, account numbers) go before the file is stored: a large
        // part's file is then in memory once, with its items, while the store writes it.
        let payout_ids: Vec<_> = request.instructions.iter().map(|i| i.payout_id).collect();
        drop(request);
        let items = payout_ids
            .into_iter()
            .zip(written.references)
            .map(|(payout_id, reference)| RailFileItem {
                payout_id,
                reference,
            })
            .collect();
        let file = RailFile {
            id: RailFileId::from_uuid(self.ids.new_id()),
            batch_id: batch.id,
            subaccount_id: batch.subaccount_id,
            method,
            part,
            name: RailFile::name_for(
                &self.settings.prefix,
                batch.id,
                method,
                part,
                written.extension,
            ),
            sha256: RailFile::digest(&written.bytes),
            bytes: written.bytes,
            state: RailFileState::Generated,
            effective_date,
            items,
            reason: None,
            created_at: now,
            uploaded_at: None,
            answered_at: None,
        };
        self.files.insert_file(file).await
    }

    /// The credit instruction of each of `payouts` (a part of `batch`), in their order, from
    /// their receivers, read [`RECEIVERS_READ_AT_ONCE`] payouts' worth at a time (one statement
    /// each) and let go once those payouts' instructions are built: a part of 25,000 payouts
    /// never holds its 25,000 receivers at once.
    async fn instructions(
        &self,
        batch: &Batch,
        payouts: &[PayoutToAccount<'_>],
    ) -> Result<Vec<CreditInstruction>, PortError> {
        let mut instructions = Vec::with_capacity(payouts.len());
        for some in payouts.chunks(RECEIVERS_READ_AT_ONCE) {
            let wanted: BTreeSet<ReceiverId> = some.iter().map(|(p, _)| p.receiver_id).collect();
            let wanted: Vec<ReceiverId> = wanted.into_iter().collect();
            let receivers: HashMap<ReceiverId, Receiver> = self
                .receivers
                .find_receivers(batch.subaccount_id, &wanted)
                .await?
                .into_iter()
                .map(|r| (r.id, r))
                .collect();
            for &(payout, account) in some {
                let receiver = receivers
                    .get(&payout.receiver_id)
                    .filter(|_| payout.subaccount_id == batch.subaccount_id)
                    .ok_or_else(|| {
                        PortError::unknown(format!("payout {} has no receiver", payout.id))
                    })?;
                instructions.push(
                    CreditInstruction::build(payout, account, receiver)
                        .map_err(|e| PortError::Unknown(e.into()))?,
                );
            }
        }
        Ok(instructions)
    }

    /// Up to `limit` of this method's payouts in progress whose files answer them, each with
    /// its result: a rejected file fails its payouts; with [`Settlement::OnEffectiveDate`], an
    /// uploaded or acknowledged file pays them from its effective date on. Read from the files
    /// that have an answer ([`RailFileStore::answered_payouts`]), so payouts waiting for a
    /// later date never hide those that are due.
    pub async fn results(&self, limit: u32) -> Result<Vec<RailOutcome>, PortError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let paid_from = match self.settings.settlement {
            Settlement::OnEffectiveDate => Some(self.clock.now().date_naive()),
            Settlement::OnConfirmation => None,
        };
        let answered = self
            .files
            .answered_payouts(self.settings.method, paid_from, limit)
            .await?;
        Ok(answered
            .into_iter()
            .filter_map(|answered| {
                let result = match answered.state {
                    RailFileState::Generated => None,
                    RailFileState::Rejected => Some(RailResult::Failed {
                        code: None,
                        receiver_is_invalid: false,
                        reason: format!(
                            "the bank rejected file {}: {}",
                            answered.name,
                            answered.reason.as_deref().unwrap_or("no reason given")
                        ),
                    }),
                    RailFileState::Uploaded | RailFileState::Acknowledged => {
                        paid_from.map(|_| RailResult::Paid)
                    }
                }?;
                Some(RailOutcome {
                    payout: answered.payout,
                    result,
                })
            })
            .collect())
    }
}

/// Payouts' accounts by subaccount and id.
type AccountsOf = HashMap<(SubaccountId, ReceiverAccountId), ReceiverAccount>;

/// A payout with its account, both borrowed.
type PayoutToAccount<'a> = (&'a Payout, &'a ReceiverAccount);

/// The production [`PayoutRail`]: routes each payout to the file rail of its account's method.
/// A batch (one subaccount, one asset) of a currency with two methods (CAD) becomes one file per
/// method.
pub struct MethodRails {
    rails: BTreeMap<PayoutMethod, FileRail>,
    accounts: Arc<dyn AccountStore>,
}

impl MethodRails {
    /// The rails, one per enabled method.
    pub fn new(rails: Vec<FileRail>, accounts: Arc<dyn AccountStore>) -> Self {
        Self {
            rails: rails.into_iter().map(|r| (r.method(), r)).collect(),
            accounts,
        }
    }

    /// Whether `method` has a rail (is enabled).
    pub fn enables(&self, method: PayoutMethod) -> bool {
        self.rails.contains_key(&method)
    }

    /// The accounts of `payouts`, each subaccount's in one read (a batch is one subaccount's).
    async fn accounts_of(&self, payouts: &[Payout]) -> Result<AccountsOf, PortError> {
        let mut wanted: BTreeMap<SubaccountId, BTreeSet<ReceiverAccountId>> = BTreeMap::new();
        for payout in payouts {
            wanted
                .entry(payout.subaccount_id)
                .or_default()
                .insert(payout.account_id);
        }
        let mut accounts = HashMap::new();
        for (subaccount, ids) in wanted {
            let ids: Vec<ReceiverAccountId> = ids.into_iter().collect();
            for account in self.accounts.find_accounts(subaccount, &ids).await? {
                accounts.insert((subaccount, account.id), account);
            }
        }
        Ok(accounts)
    }

    /// `payouts` grouped by their account's method, each with its account, borrowed (a batch
    /// of 100,000 payouts is not copied to be grouped).
    fn by_method<'a>(
        payouts: &'a [Payout],
        accounts: &'a AccountsOf,
    ) -> Result<BTreeMap<PayoutMethod, Vec<PayoutToAccount<'a>>>, PortError> {
        let mut grouped: BTreeMap<PayoutMethod, Vec<PayoutToAccount<'a>>> = BTreeMap::new();
        for payout in payouts {
            let account = accounts
                .get(&(payout.subaccount_id, payout.account_id))
                .ok_or_else(|| {
                    PortError::unknown(format!("payout {} has no account", payout.id))
                })?;
            grouped
                .entry(account.method)
                .or_default()
                .push((payout, account));
        }
        Ok(grouped)
    }

    fn rail(&self, method: PayoutMethod) -> Result<&FileRail, PortError> {
        self.rails.get(&method).ok_or_else(|| {
            PortError::unknown(format!(
                "payout method {} has no rail configured",
                method.route()
            ))
        })
    }
}

#[async_trait]
impl PayoutRail for MethodRails {
    async fn submit(
        &self,
        batch: &Batch,
        payouts: &[Payout],
    ) -> Result<Vec<RailReceipt>, PortError> {
        let mut receipts = Vec::with_capacity(payouts.len());
        let accounts = self.accounts_of(payouts).await?;
        for (method, group) in Self::by_method(payouts, &accounts)? {
            receipts.extend(self.rail(method)?.submit_payouts(batch, &group).await?);
        }
        Ok(receipts)
    }

    async fn results(&self, limit: u32) -> Result<Vec<RailOutcome>, PortError> {
        let mut outcomes = Vec::new();
        for rail in self.rails.values() {
            let room = limit.saturating_sub(u32::try_from(outcomes.len()).unwrap_or(u32::MAX));
            if room == 0 {
                break;
            }
            outcomes.extend(rail.results(room).await?);
        }
        Ok(outcomes)
    }
}

#[cfg(test)]
#[path = "file_rail_tests.rs"]
mod tests;
