//! What a bank file says about each payout, taken from the payout, its account and its receiver
//! through the account fields' rail roles, and the port of the format writers.

use chrono::{DateTime, NaiveDate, Utc};

use crate::account::us::AccountType;
use crate::account::{AccountField, PayoutMethod, RailRole, ReceiverAccount};
use crate::error::PortError;
use crate::ids::{BatchId, PayoutId, SubaccountId};
use crate::masking::Secret;
use crate::money::{Asset, MinorUnits};
use crate::payout::Payout;
use crate::receiver::Receiver;

/// One credit as a bank file carries it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreditInstruction {
    /// The payout.
    pub payout_id: PayoutId,
    /// The amount the payee receives, minor units.
    pub amount: MinorUnits,
    /// The payee's name: the account's name field where the method has one, else the
    /// receiver's first and last name.
    pub payee_name: String,
    /// The receiving bank or branch (routing number, BSB, BIC), where the method names one.
    pub receiving_bank: Option<Secret<String>>,
    /// The account at that bank (account number, IBAN); the recipient's address for
    /// notification-based methods.
    pub account: Secret<String>,
    /// The account kind (checking or savings), where the method has one.
    pub account_kind: Option<AccountType>,
    /// Remittance text: the account's description, else the payout's reference, else its note,
    /// else the payout id.
    pub remittance: String,
}

/// Why an instruction cannot be built from a payout's account.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstructionError {
    /// The account has no value in the role every method needs.
    #[error("account of payout {payout} has no {role:?} field")]
    Missing {
        /// The payout.
        payout: PayoutId,
        /// The role with no value.
        role: RailRole,
    },
    /// The account's kind is neither checking nor savings (account data that did not come
    /// through the account checks).
    #[error("account of payout {0} has an account type that is neither checking nor savings")]
    AccountKind(PayoutId),
    /// The payout, account and receiver do not belong together.
    #[error("payout {0} does not match its account or receiver")]
    Mismatch(PayoutId),
}

impl CreditInstruction {
    /// The instruction for `payout` to `account` of `receiver`. Each account field lands where
    /// its [`AccountField::rail_role`] says, so a new field or role is placed here or the
    /// build fails to compile.
    pub fn build(
        payout: &Payout,
        account: &ReceiverAccount,
        receiver: &Receiver,
    ) -> Result<Self, InstructionError> {
        if payout.account_id != account.id
            || payout.receiver_id != receiver.id
            || account.receiver_id != receiver.id
        {
            return Err(InstructionError::Mismatch(payout.id));
        }
        let mut receiving_bank = None;
        let mut account_value = None;
        let mut address = None;
        let mut account_kind = None;
        let mut payee_name = None;
        let mut description = None;
        for (field, value) in account.data.expose_pairs() {
            let value = value.to_owned();
            match field.rail_role() {
                RailRole::ReceivingBank => receiving_bank = Some(Secret::new(value)),
                RailRole::Account => account_value = Some(Secret::new(value)),
                RailRole::Address => address = Some(Secret::new(value)),
                RailRole::AccountKind => {
                    account_kind = Some(
                        AccountType::parse(&value)
                            .map_err(|_| InstructionError::AccountKind(payout.id))?,
                    );
                }
                RailRole::PayeeName => payee_name = Some(value),
                RailRole::Remittance => description = Some(value),
            }
        }
        let account_secret = account_value.or(address).ok_or(InstructionError::Missing {
            payout: payout.id,
            role: RailRole::Account,
        })?;
        let payee_name = payee_name
            .filter(|name| !name.trim().is_empty())
            .unwrap_or_else(|| format!("{} {}", receiver.first_name, receiver.last_name));
        let remittance = description
            .filter(|d| !d.trim().is_empty())
            .or_else(|| payout.reference.clone())
            .or_else(|| (!payout.note.trim().is_empty()).then(|| payout.note.clone()))
            .unwrap_or_else(|| payout.id.to_string());
        Ok(Self {
            payout_id: payout.id,
            amount: payout.amount,
            payee_name,
            receiving_bank,
            account: account_secret,
            account_kind,
            remittance,
        })
    }
}

/// What a format writer is asked to write: one closed batch's payouts of one method, or one
/// part of them when they need several files (docs/RAILS.md, Limits of a file).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileRequest {
    /// The batch.
    pub batch_id: BatchId,
    /// Its subaccount.
    pub subaccount_id: SubaccountId,
    /// The method (the writer's format).
    pub method: PayoutMethod,
    /// The currency.
    pub asset: Asset,
    /// Which of the batch's files of the method this is, from 1; identifiers a format builds
    /// from the batch id (a pain.001 `MsgId`) take it so that each part's are its own.
    pub part: u32,
    /// When the file is written.
    pub created_at: DateTime<Utc>,
    /// When its payments take effect.
    pub effective_date: NaiveDate,
    /// The file's number among this method's files: per day for formats that count per day
    /// (the NACHA file id modifier), overall for formats that count files (CPA-005); starts at 1.
    pub sequence: u32,
    /// The credits, in file order.
    pub instructions: Vec<CreditInstruction>,
}

/// A written file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenFile {
    /// The file name extension (`ach`, `xml`, ...).
    pub extension: &'static str,
    /// The bytes.
    pub bytes: Vec<u8>,
    /// Each instruction's reference in the file, in the request's order.
    pub references: Vec<String>,
}

/// A bank file format with its originator settings (a rail adapter).
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait BankFileWriter: Send + Sync {
    /// Writes the file. Pure: the same request gives the same bytes.
    ///
    /// # Errors
    /// `PortError::Unknown` when the request cannot be written in the format (a value the
    /// format cannot carry); nothing is sent then.
    fn write(&self, request: &FileRequest) -> Result<WrittenFile, PortError>;
}

/// The account field that carries each role for `method`, for documentation and checks: the
/// method's fields with their roles.
pub fn roles_of(method: PayoutMethod) -> Vec<(AccountField, RailRole)> {
    method
        .fields()
        .iter()
        .map(|spec| (spec.field, spec.field.rail_role()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builders::{PayoutBuilder, ReceiverAccountBuilder, ReceiverBuilder};
    use crate::ids::{ReceiverAccountId, ReceiverId};

    fn parts(pairs: Vec<(AccountField, &str)>) -> (Payout, ReceiverAccount, Receiver) {
        let receiver = ReceiverBuilder::new().build();
        let account = ReceiverAccountBuilder::new()
            .id(ReceiverAccountId::from_uuid(uuid::Uuid::from_u128(7)))
            .owner(&receiver)
            .method(PayoutMethod::Ach)
            .data(&pairs)
            .created_at(receiver.created_at)
            .build();
        let payout = PayoutBuilder::new()
            .receiver(receiver.id)
            .account(account.id)
            .build();
        (payout, account, receiver)
    }

    #[test]
    fn fields_land_by_role() {
        let (payout, account, receiver) = parts(vec![
            (AccountField::RoutingNumber, "011000015"),
            (AccountField::AccountNumber, "123456789"),
            (AccountField::AccountType, "savings"),
        ]);
        let built = CreditInstruction::build(&payout, &account, &receiver);
        let Ok(built) = built else {
            panic!("{built:?}")
        };
        assert_eq!(
            built.receiving_bank.as_ref().map(Secret::expose),
            Some(&"011000015".to_owned())
        );
        assert_eq!(built.account.expose(), "123456789");
        assert_eq!(built.account_kind, Some(AccountType::Savings));
        assert_eq!(
            built.payee_name,
            format!("{} {}", receiver.first_name, receiver.last_name)
        );
        assert_eq!(built.amount, payout.amount);
    }

    #[test]
    fn a_missing_account_or_a_stranger_is_refused() {
        let (payout, account, receiver) = parts(vec![(AccountField::RoutingNumber, "011000015")]);
        assert!(matches!(
            CreditInstruction::build(&payout, &account, &receiver),
            Err(InstructionError::Missing {
                role: RailRole::Account,
                ..
            })
        ));
        let (payout, account, mut receiver) =
            parts(vec![(AccountField::AccountNumber, "123456789")]);
        receiver.id = ReceiverId::from_uuid(uuid::Uuid::from_u128(99));
        assert_eq!(
            CreditInstruction::build(&payout, &account, &receiver),
            Err(InstructionError::Mismatch(payout.id))
        );
    }

    #[test]
    fn an_account_kind_that_is_no_kind_is_refused() {
        let (payout, account, receiver) = parts(vec![
            (AccountField::RoutingNumber, "011000015"),
            (AccountField::AccountNumber, "123456789"),
            (AccountField::AccountType, "brokerage"),
        ]);
        assert_eq!(
            CreditInstruction::build(&payout, &account, &receiver),
            Err(InstructionError::AccountKind(payout.id))
        );
    }

    #[test]
    fn every_method_has_an_account_role() {
        for &method in PayoutMethod::ALL {
            let roles = roles_of(method);
            assert!(
                roles
                    .iter()
                    .any(|(_, r)| matches!(r, RailRole::Account | RailRole::Address)),
                "{method:?}"
            );
        }
    }
}
