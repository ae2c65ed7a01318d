//! A bank file as payoutd keeps it: written once per closed batch, payout method and part (a
//! batch with more payouts than one file may hold has several parts, docs/RAILS.md), stored
//! before it is sent, and moved through its states by what the transport and the bank say.

use chrono::{DateTime, NaiveDate, Utc};
use sha2::{Digest, Sha256};
use strum::{EnumString, IntoStaticStr, VariantArray};

use crate::account::PayoutMethod;
use crate::ids::{BatchId, PayoutId, RailFileId, SubaccountId};

/// Where a file is (docs/RAILS.md, The life of a file): `generated` → `uploaded` → `acknowledged`
/// or `rejected`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(serialize_all = "snake_case", const_into_str)]
pub enum RailFileState {
    /// Written and stored; not yet in the bank's drop.
    Generated,
    /// In the bank's drop.
    Uploaded,
    /// The bank accepted the file.
    Acknowledged,
    /// The bank rejected the whole file.
    Rejected,
}

impl RailFileState {
    /// Every state.
    pub const ALL: &'static [RailFileState] = Self::VARIANTS;

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The state with this stored name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }

    /// Whether a file may move from `self` to `to`. Nothing moves backwards, and an
    /// acknowledgement or rejection only follows an upload.
    pub const fn may_become(self, to: RailFileState) -> bool {
        matches!(
            (self, to),
            (RailFileState::Generated, RailFileState::Uploaded)
                | (
                    RailFileState::Uploaded,
                    RailFileState::Acknowledged | RailFileState::Rejected
                )
        )
    }
}

/// One payout's line in a file, and the reference the bank will quote back for it (a NACHA
/// trace number, an ISO 20022 end-to-end id).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailFileItem {
    /// The payout.
    pub payout_id: PayoutId,
    /// Its reference in the file; also the payout's `provider_reference`.
    pub reference: String,
}

/// A bank file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RailFile {
    /// Identifier.
    pub id: RailFileId,
    /// The batch it pays.
    pub batch_id: BatchId,
    /// The batch's subaccount.
    pub subaccount_id: SubaccountId,
    /// The payout method.
    pub method: PayoutMethod,
    /// Which of the batch's files of the method it is, from 1 (one file per batch, method and
    /// part).
    pub part: u32,
    /// The file name in the bank's drop, derived from the batch and method.
    pub name: String,
    /// SHA-256 of `bytes`.
    pub sha256: [u8; 32],
    /// The file, exactly as sent.
    pub bytes: Vec<u8>,
    /// Where it is.
    pub state: RailFileState,
    /// When the payments take effect (the settlement date of rails without positive
    /// confirmation).
    pub effective_date: NaiveDate,
    /// Its payouts, in file order.
    pub items: Vec<RailFileItem>,
    /// Why the bank rejected it, when it did.
    pub reason: Option<String>,
    /// When it was written.
    pub created_at: DateTime<Utc>,
    /// When it was uploaded.
    pub uploaded_at: Option<DateTime<Utc>>,
    /// When the bank acknowledged or rejected it.
    pub answered_at: Option<DateTime<Utc>>,
}

impl RailFile {
    /// The file's name: `<prefix>-<batch id, 32 hex digits>-<method, `/` as `-`>.<extension>`
    /// for part 1, with `-<part>` before the extension for the parts after it. A batch has one
    /// file per method and part, so a retried upload finds its own file under this name and
    /// never adds a second.
    pub fn name_for(
        prefix: &str,
        batch: BatchId,
        method: PayoutMethod,
        part: u32,
        extension: &str,
    ) -> String {
        let suffix = if part > 1 {
            format!("-{part}")
        } else {
            String::new()
        };
        format!(
            "{prefix}-{}-{}{suffix}.{extension}",
            batch.as_uuid().simple(),
            method.route().replace('/', "-")
        )
    }

    /// The identifier of a batch's file `part` where a format names its files by the batch
    /// (a pain.001 `MsgId`, an Interac batch id), quoted back by the bank's answers: the batch
    /// id's 32 hex digits, then `-<part>` from part 2 on (35 characters up to part 99).
    pub fn batch_file_id(batch: BatchId, part: u32) -> String {
        let hex = batch.as_uuid().simple().to_string();
        if part > 1 {
            format!("{hex}-{part}")
        } else {
            hex
        }
    }

    /// The batch and part an identifier of [`RailFile::batch_file_id`] names; `None` for any
    /// other text (`-1` is not written, so it names nothing).
    pub fn parse_batch_file_id(id: &str) -> Option<(BatchId, u32)> {
        let (hex, part) = match id.split_once('-') {
            Some((hex, part)) => {
                let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
                let part: u32 = part.parse().ok().filter(|p| digits && *p > 1)?;
                if part.to_string().len() != id.len() - hex.len() - 1 {
                    return None;
                }
                (hex, part)
            }
            None => (id, 1),
        };
        if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let batch = uuid::Uuid::try_parse(hex).ok().map(BatchId::from_uuid)?;
        Some((batch, part))
    }

    /// SHA-256 of `bytes`.
    pub fn digest(bytes: &[u8]) -> [u8; 32] {
        Sha256::digest(bytes).into()
    }

    /// The reference of `payout` in this file.
    pub fn reference_of(&self, payout: PayoutId) -> Option<&str> {
        self.items
            .iter()
            .find(|item| item.payout_id == payout)
            .map(|item| item.reference.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use uuid::Uuid;

    #[test]
    fn states_move_forward_only() {
        use RailFileState::*;
        let allowed = [
            (Generated, Uploaded),
            (Uploaded, Acknowledged),
            (Uploaded, Rejected),
        ];
        for &from in RailFileState::ALL {
            for &to in RailFileState::ALL {
                assert_eq!(
                    from.may_become(to),
                    allowed.contains(&(from, to)),
                    "{from:?} -> {to:?}"
                );
            }
            assert_eq!(RailFileState::parse(from.as_str()), Some(from));
        }
        assert_eq!(RailFileState::parse("sent"), None);
    }

    #[test]
    fn names_derive_from_batch_and_method() {
        let batch = BatchId::from_uuid(Uuid::from_u128(0xABC));
        let name = RailFile::name_for("PAYOUTD", batch, PayoutMethod::Ach, 1, "ach");
        assert_eq!(name, "PAYOUTD-00000000000000000000000000000abc-usd-ach.ach");
        assert!(crate::rail::transport::is_plain_file_name(&name));
        assert_ne!(
            name,
            RailFile::name_for("PAYOUTD", batch, PayoutMethod::Sepa, 1, "xml")
        );
        let second = RailFile::name_for("PAYOUTD", batch, PayoutMethod::Ach, 2, "ach");
        assert_eq!(
            second,
            "PAYOUTD-00000000000000000000000000000abc-usd-ach-2.ach"
        );
        assert!(crate::rail::transport::is_plain_file_name(&second));
    }

    #[test]
    fn batch_file_ids_name_the_batch_and_part_and_read_back() {
        let batch = BatchId::from_uuid(Uuid::from_u128(0xABC));
        let first = RailFile::batch_file_id(batch, 1);
        assert_eq!(first, "00000000000000000000000000000abc");
        assert_eq!(RailFile::parse_batch_file_id(&first), Some((batch, 1)));
        let last = RailFile::batch_file_id(batch, 99);
        assert_eq!(last.len(), 35, "a pain.001 MsgId holds 35 characters");
        assert_eq!(RailFile::parse_batch_file_id(&last), Some((batch, 99)));
        for other in [
            "00000000000000000000000000000abc-1",
            "00000000000000000000000000000abc-02",
            "00000000000000000000000000000abc-",
            "00000000000000000000000000000abc-+2",
            "00000000000000000000000000000abc-2-1",
            "0000000000000000000000000000abc",
            "PAYOUTD-20261126-0001",
            "",
        ] {
            assert_eq!(RailFile::parse_batch_file_id(other), None, "{other}");
        }
    }
}
