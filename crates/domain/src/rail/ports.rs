//! Where bank files are kept.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};

use super::file::{RailFile, RailFileState};
use crate::account::PayoutMethod;
use crate::error::PortError;
use crate::ids::{BatchId, RailFileId};
use crate::payout::Payout;

/// A file without its bytes, for listings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailFileSummary {
    /// The file.
    pub id: RailFileId,
    /// Its batch.
    pub batch_id: BatchId,
    /// Its method.
    pub method: PayoutMethod,
    /// Which of the batch's files of the method, from 1.
    pub part: u32,
    /// Its name in the bank's drop.
    pub name: String,
    /// SHA-256 of its bytes.
    pub sha256: [u8; 32],
    /// Its size in bytes.
    pub size: u64,
    /// Its payouts.
    pub payouts: u32,
    /// Where it is.
    pub state: RailFileState,
    /// When its payments take effect.
    pub effective_date: NaiveDate,
    /// When it was written.
    pub created_at: DateTime<Utc>,
}

/// A payout in progress in a file whose answer is in ([`RailFileStore::answered_payouts`]).
#[derive(Debug, Clone, PartialEq)]
pub struct AnsweredPayout {
    /// The payout, `in_progress`.
    pub payout: Payout,
    /// Its file.
    pub file: RailFileId,
    /// The file's name in the bank's drop.
    pub name: String,
    /// Where the file is: `rejected`, `uploaded` or `acknowledged`.
    pub state: RailFileState,
    /// The bank's reason for a rejection.
    pub reason: Option<String>,
}

/// Bank files (docs/RAILS.md, The life of a file): every file is stored here before it is sent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait RailFileStore: Send + Sync {
    /// The file of `batch` for `method` numbered `part`, with its bytes and items, if one was
    /// written.
    async fn find_file(
        &self,
        batch: BatchId,
        method: PayoutMethod,
        part: u32,
    ) -> Result<Option<RailFile>, PortError>;

    /// Every file of `batch` for `method`, with bytes and items, by part.
    async fn find_files(
        &self,
        batch: BatchId,
        method: PayoutMethod,
    ) -> Result<Vec<RailFile>, PortError>;

    /// Takes the next number of `method`'s files: counted per `day` when one is given (the
    /// NACHA file id modifier), else over all time (the CPA-005 file creation number); the
    /// first is 1. Each call takes a number, also when its file is never stored.
    async fn next_file_number(
        &self,
        method: PayoutMethod,
        day: Option<NaiveDate>,
    ) -> Result<u32, PortError>;

    /// Stores a `generated` file with its items and returns it, taken rather than copied (a file
    /// may hold 100,000 payouts); when the batch already has a file for the method and part
    /// (another runner stored one first), stores nothing and returns that one, so a batch never
    /// has two files of one method and part.
    ///
    /// # Errors
    /// `PortError::Unknown` when a payout of the file is already in another file of the batch
    /// and method: nothing is stored.
    async fn insert_file(&self, file: RailFile) -> Result<RailFile, PortError>;

    /// Moves the file from `from` to `to` at `at` (`uploaded_at` for an upload, `answered_at`
    /// and `reason` for an acknowledgement or rejection) where it is still in `from`.
    /// `Ok(false)` when it is not (moved meanwhile); then nothing changed.
    ///
    /// # Errors
    /// `PortError::Unknown` when `from` may not become `to` ([`RailFileState::may_become`]).
    async fn move_file(
        &self,
        id: RailFileId,
        from: RailFileState,
        to: RailFileState,
        at: DateTime<Utc>,
        reason: Option<String>,
    ) -> Result<bool, PortError>;

    /// The files, newest first, optionally only those in `state`, after `before` (the last
    /// file of the previous page: none when it is not a file), at most `limit`.
    async fn list_files(
        &self,
        state: Option<RailFileState>,
        before: Option<RailFileId>,
        limit: u32,
    ) -> Result<Vec<RailFileSummary>, PortError>;

    /// One file with its bytes and items, or `Ok(None)`.
    async fn get_file(&self, id: RailFileId) -> Result<Option<RailFile>, PortError>;

    /// Up to `limit` payouts of submitted batches (`in_progress` batches) still `in_progress`
    /// in a file of `method` that has an answer for them, each with that file: the file is
    /// `rejected`, or, when `paid_from` is given (a method paid on its files' effective date),
    /// `uploaded` or `acknowledged` with an effective date on or before it. Only the payouts
    /// still waiting are read, and files waiting for a later date are passed over however many
    /// payouts they hold.
    async fn answered_payouts(
        &self,
        method: PayoutMethod,
        paid_from: Option<NaiveDate>,
        limit: u32,
    ) -> Result<Vec<AnsweredPayout>, PortError>;
}
