//! The create-account request: its raw fields and their parse into each method's typed
//! details.
//!
//! Only the fields of the request's payout method are looked at (fields of other methods are the
//! HTTP layer's to reject as unknown). Every field is checked and every failure is reported at
//! once, in field order (`receiver_id`, then [`PayoutMethod::fields`] order), each as a
//! catalogue code (`REAC2xx`) against the JSON field name.

use std::convert::Infallible;

use crate::account::au::{AuAccountNumber, AuAccountNumberError, Bsb, BsbError};
use crate::account::ca::{
    CaAccountNumber, CaAccountNumberError, CaRoutingNumber, CaRoutingNumberError,
};
use crate::account::field::AccountField;
use crate::account::method::PayoutMethod;
use crate::account::nz::{NzAccountNumber, NzAccountNumberError};
use crate::account::sepa::{Bic, BicError, Iban, IbanError, bic_matches_iban};
use crate::account::us::{
    AbaRoutingNumber, AbaRoutingNumberError, AccountType, AccountTypeError, UsAccountNumber,
    UsAccountNumberError,
};
use crate::codes::ErrorCode;
use crate::receiver::values::{EmailAddress, EmailAddressError};
use crate::text::{RefusedCharacter, plain_text};
use crate::validation::{FieldError, FieldReader, ValidationErrors};

/// How this request's text fields are read (over-long values are `REAC226`).
const READ: FieldReader = FieldReader::new(ErrorCode::Reac226);

/// Raw create-account fields as sent (strings or absent).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RawAccount {
    /// `receiver_id`: the receiver the account belongs to.
    pub receiver_id: Option<String>,
    /// `bsb` (direct-entry).
    pub bsb: Option<String>,
    /// `account_number` (direct-entry, ACH, EFT, direct-credit).
    pub account_number: Option<String>,
    /// `routing_number` (ACH, EFT).
    pub routing_number: Option<String>,
    /// `account_type`: `checking` or `savings` (ACH, EFT).
    pub account_type: Option<String>,
    /// `iban` (SEPA).
    pub iban: Option<String>,
    /// `bic` (SEPA).
    pub bic: Option<String>,
    /// `recipient`: the payee's e-mail address (digital).
    pub recipient: Option<String>,
    /// `name`: the payee's name (digital).
    pub name: Option<String>,
    /// `description` (digital, optional).
    pub description: Option<String>,
}

impl RawAccount {
    /// The value sent for `field`, if any.
    pub fn get(&self, field: AccountField) -> Option<&str> {
        match field {
            AccountField::Bsb => self.bsb.as_deref(),
            AccountField::AccountNumber => self.account_number.as_deref(),
            AccountField::RoutingNumber => self.routing_number.as_deref(),
            AccountField::AccountType => self.account_type.as_deref(),
            AccountField::Iban => self.iban.as_deref(),
            AccountField::Bic => self.bic.as_deref(),
            AccountField::Recipient => self.recipient.as_deref(),
            AccountField::Name => self.name.as_deref(),
            AccountField::Description => self.description.as_deref(),
        }
    }

    /// Where the value sent for `field` goes.
    pub fn slot(&mut self, field: AccountField) -> &mut Option<String> {
        match field {
            AccountField::Bsb => &mut self.bsb,
            AccountField::AccountNumber => &mut self.account_number,
            AccountField::RoutingNumber => &mut self.routing_number,
            AccountField::AccountType => &mut self.account_type,
            AccountField::Iban => &mut self.iban,
            AccountField::Bic => &mut self.bic,
            AccountField::Recipient => &mut self.recipient,
            AccountField::Name => &mut self.name,
            AccountField::Description => &mut self.description,
        }
    }
}

/// The parsed details of one account, per method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AccountDetails {
    /// Australian direct entry.
    DirectEntry {
        /// The branch's BSB.
        bsb: Bsb,
        /// The account number.
        account_number: AuAccountNumber,
    },
    /// US ACH.
    Ach {
        /// The bank's ABA routing number.
        routing_number: AbaRoutingNumber,
        /// The account number.
        account_number: UsAccountNumber,
        /// Checking or savings.
        account_type: AccountType,
    },
    /// Canadian EFT.
    Eft {
        /// The branch's routing number, electronic form.
        routing_number: CaRoutingNumber,
        /// The account number.
        account_number: CaAccountNumber,
        /// Chequing or savings.
        account_type: AccountType,
    },
    /// Canadian digital payment to an e-mail recipient.
    Digital {
        /// The payee's e-mail address.
        recipient: EmailAddress,
        /// The payee's name, trimmed, at most 255 characters.
        name: String,
        /// A free-text description, trimmed, at most 255 characters, if one was given.
        description: Option<String>,
    },
    /// SEPA credit transfer.
    Sepa {
        /// The account's IBAN, in a SEPA country.
        iban: Iban,
        /// The bank's BIC, of the IBAN's country.
        bic: Bic,
    },
    /// New Zealand direct credit.
    DirectCredit {
        /// The full account number.
        account_number: NzAccountNumber,
    },
}

impl AccountDetails {
    /// The payout method these details are for.
    pub fn method(&self) -> PayoutMethod {
        match self {
            AccountDetails::DirectEntry { .. } => PayoutMethod::DirectEntry,
            AccountDetails::Ach { .. } => PayoutMethod::Ach,
            AccountDetails::Eft { .. } => PayoutMethod::Eft,
            AccountDetails::Digital { .. } => PayoutMethod::Digital,
            AccountDetails::Sepa { .. } => PayoutMethod::Sepa,
            AccountDetails::DirectCredit { .. } => PayoutMethod::DirectCredit,
        }
    }

    /// Every field with its normalised value (what is stored), in [`AccountField::ALL`]
    /// order.
    ///
    /// Each matchable value is what [`AccountField::normalize_for_match`] makes of any accepted
    /// spelling of it; the recipient is lower-cased, as e-mail addresses are compared
    /// case-insensitively.
    pub fn values(&self) -> Vec<(AccountField, String)> {
        use AccountField as F;
        match self {
            AccountDetails::DirectEntry {
                bsb,
                account_number,
            } => vec![
                (F::Bsb, bsb.as_str().to_owned()),
                (F::AccountNumber, account_number.as_str().to_owned()),
            ],
            AccountDetails::Ach {
                routing_number,
                account_number,
                account_type,
            } => vec![
                (F::AccountNumber, account_number.as_str().to_owned()),
                (F::RoutingNumber, routing_number.as_str().to_owned()),
                (F::AccountType, account_type.as_str().to_owned()),
            ],
            AccountDetails::Eft {
                routing_number,
                account_number,
                account_type,
            } => vec![
                (F::AccountNumber, account_number.as_str().to_owned()),
                (F::RoutingNumber, routing_number.as_str().to_owned()),
                (F::AccountType, account_type.as_str().to_owned()),
            ],
            AccountDetails::Digital {
                recipient,
                name,
                description,
            } => {
                let mut values = vec![
                    (F::Recipient, recipient.normalized()),
                    (F::Name, name.clone()),
                ];
                if let Some(description) = description {
                    values.push((F::Description, description.clone()));
                }
                values
            }
            AccountDetails::Sepa { iban, bic } => vec![
                (F::Iban, iban.as_str().to_owned()),
                (F::Bic, bic.as_str().to_owned()),
            ],
            AccountDetails::DirectCredit { account_number } => {
                vec![(F::AccountNumber, account_number.as_str().to_owned())]
            }
        }
    }
}

/// A create-account request whose every field parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountInput {
    /// Trimmed and non-empty; the service checks it names one of the caller's receivers.
    pub receiver_id: String,
    /// The method's account details.
    pub details: AccountDetails,
}

impl AccountInput {
    /// Parses `receiver_id` and the fields of `method` in `raw`; other fields are ignored.
    ///
    /// On failure, returns one [`FieldError`] per failing field, in field order: a missing or
    /// blank required field gives its "required" code, a field over 255 characters gives
    /// `REAC226`, and any other failure gives that field's code for what is wrong (format,
    /// checksum, unknown bank or institution, not SEPA). A BIC whose country does not go with a
    /// valid IBAN's gives `REAC219` on `bic`.
    pub fn parse(method: PayoutMethod, raw: &RawAccount) -> Result<AccountInput, ValidationErrors> {
        use AccountField as F;
        use ErrorCode as C;

        let mut errors = ValidationErrors::default();
        let receiver_id = errors.check(READ.required(
            raw.receiver_id.as_deref(),
            "receiver_id",
            C::Reac201,
            |text| Ok::<_, Infallible>(text.to_owned()),
            |never| match never {},
        ));
        let details = match method {
            PayoutMethod::DirectEntry => {
                let bsb = errors.check(READ.required(
                    raw.get(F::Bsb),
                    F::Bsb.name(),
                    C::Reac202,
                    Bsb::parse,
                    |error| match error {
                        BsbError::Empty => C::Reac202,
                        BsbError::Format => C::Reac203,
                    },
                ));
                let account_number = errors.check(READ.required(
                    raw.get(F::AccountNumber),
                    F::AccountNumber.name(),
                    C::Reac204,
                    AuAccountNumber::parse,
                    |error| match error {
                        AuAccountNumberError::Empty => C::Reac204,
                        AuAccountNumberError::Format => C::Reac205,
                    },
                ));
                bsb.zip(account_number)
                    .map(|(bsb, account_number)| AccountDetails::DirectEntry {
                        bsb,
                        account_number,
                    })
            }
            PayoutMethod::Ach => {
                let routing_number = errors.check(READ.required(
                    raw.get(F::RoutingNumber),
                    F::RoutingNumber.name(),
                    C::Reac206,
                    AbaRoutingNumber::parse,
                    |error| match error {
                        AbaRoutingNumberError::Empty => C::Reac206,
                        AbaRoutingNumberError::Format => C::Reac207,
                        AbaRoutingNumberError::Checksum => C::Reac208,
                        AbaRoutingNumberError::UnknownInstitution => C::Reac209,
                    },
                ));
                let account_number = errors.check(READ.required(
                    raw.get(F::AccountNumber),
                    F::AccountNumber.name(),
                    C::Reac204,
                    UsAccountNumber::parse,
                    |error| match error {
                        UsAccountNumberError::Empty => C::Reac204,
                        UsAccountNumberError::Format => C::Reac205,
                    },
                ));
                let account_type = errors.check(account_type(raw));
                match (routing_number, account_number, account_type) {
                    (Some(routing_number), Some(account_number), Some(account_type)) => {
                        Some(AccountDetails::Ach {
                            routing_number,
                            account_number,
                            account_type,
                        })
                    }
                    _ => None,
                }
            }
            PayoutMethod::Eft => {
                let routing_number = errors.check(READ.required(
                    raw.get(F::RoutingNumber),
                    F::RoutingNumber.name(),
                    C::Reac206,
                    CaRoutingNumber::parse,
                    |error| match error {
                        CaRoutingNumberError::Empty => C::Reac206,
                        CaRoutingNumberError::Format => C::Reac207,
                        CaRoutingNumberError::UnknownInstitution => C::Reac209,
                    },
                ));
                let account_number = errors.check(READ.required(
                    raw.get(F::AccountNumber),
                    F::AccountNumber.name(),
                    C::Reac204,
                    CaAccountNumber::parse,
                    |error| match error {
                        CaAccountNumberError::Empty => C::Reac204,
                        CaAccountNumberError::Format => C::Reac205,
                    },
                ));
                let account_type = errors.check(account_type(raw));
                match (routing_number, account_number, account_type) {
                    (Some(routing_number), Some(account_number), Some(account_type)) => {
                        Some(AccountDetails::Eft {
                            routing_number,
                            account_number,
                            account_type,
                        })
                    }
                    _ => None,
                }
            }
            PayoutMethod::Digital => {
                let recipient = errors.check(READ.required(
                    raw.get(F::Recipient),
                    F::Recipient.name(),
                    C::Reac221,
                    EmailAddress::parse,
                    |error| match error {
                        EmailAddressError::Empty => C::Reac221,
                        EmailAddressError::TooLong => C::Reac226,
                        EmailAddressError::Invalid => C::Reac222,
                    },
                ));
                // Free text, kept as sent; a control, format or invisible character is `REQ009`
                // (neither field has a "not valid" code of its own).
                let name = errors.check(READ.required(
                    raw.get(F::Name),
                    F::Name.name(),
                    C::Reac223,
                    plain_text,
                    |RefusedCharacter| C::Req009,
                ));
                let description = errors.check(READ.optional(
                    raw.get(F::Description),
                    F::Description.name(),
                    plain_text,
                    |RefusedCharacter| C::Req009,
                ));
                match (recipient, name, description) {
                    (Some(recipient), Some(name), Some(description)) => {
                        Some(AccountDetails::Digital {
                            recipient,
                            name,
                            description,
                        })
                    }
                    _ => None,
                }
            }
            PayoutMethod::Sepa => {
                let iban = errors.check(READ.required(
                    raw.get(F::Iban),
                    F::Iban.name(),
                    C::Reac213,
                    Iban::parse,
                    |error| match error {
                        IbanError::Empty => C::Reac213,
                        IbanError::Format => C::Reac214,
                        IbanError::CheckDigits => C::Reac215,
                        IbanError::NotSepa => C::Reac216,
                    },
                ));
                let bic = errors.check(READ.required(
                    raw.get(F::Bic),
                    F::Bic.name(),
                    C::Reac217,
                    Bic::parse,
                    |error| match error {
                        BicError::Empty => C::Reac217,
                        BicError::Format => C::Reac218,
                    },
                ));
                match (iban, bic) {
                    (Some(iban), Some(bic)) if bic_matches_iban(&bic, &iban) => {
                        Some(AccountDetails::Sepa { iban, bic })
                    }
                    (Some(_), Some(_)) => {
                        errors.push(C::Reac219, F::Bic.name());
                        None
                    }
                    _ => None,
                }
            }
            PayoutMethod::DirectCredit => {
                let account_number = errors.check(READ.required(
                    raw.get(F::AccountNumber),
                    F::AccountNumber.name(),
                    C::Reac204,
                    NzAccountNumber::parse,
                    |error| match error {
                        NzAccountNumberError::Empty => C::Reac204,
                        NzAccountNumberError::Format => C::Reac205,
                        NzAccountNumberError::UnknownBank => C::Reac209,
                        NzAccountNumberError::CheckDigits => C::Reac220,
                    },
                ));
                account_number.map(|account_number| AccountDetails::DirectCredit { account_number })
            }
        };

        // `check` records an error whenever it yields `None`, and the one `None` it does not
        // cover (a BIC of the wrong country) pushes its own, so the fallback arm always carries
        // at least one failure.
        match (receiver_id, details) {
            (Some(receiver_id), Some(details)) if errors.is_empty() => Ok(AccountInput {
                receiver_id,
                details,
            }),
            _ => Err(errors),
        }
    }
}

/// Parses `account_type`, shared by ACH and EFT.
fn account_type(raw: &RawAccount) -> Result<AccountType, FieldError> {
    READ.required(
        raw.get(AccountField::AccountType),
        AccountField::AccountType.name(),
        ErrorCode::Reac210,
        AccountType::parse,
        |error| match error {
            AccountTypeError::Empty => ErrorCode::Reac210,
            AccountTypeError::Invalid => ErrorCode::Reac212,
        },
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
#[path = "input_tests.rs"]
mod tests;
