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
mod tests {
    use super::*;

    /// What verify makes of `value` sent as the field named `field`.
    fn normalize_for_match(field: &str, value: &str) -> Option<String> {
        AccountField::from_name(field).and_then(|field| field.normalize_for_match(value))
    }

    fn some(text: &str) -> Option<String> {
        Some(text.to_owned())
    }

    /// A valid request for `method`, with only that method's fields (and spellings that need
    /// normalising).
    fn valid(method: PayoutMethod) -> RawAccount {
        let base = RawAccount {
            receiver_id: some(" rcv_123 "),
            ..RawAccount::default()
        };
        match method {
            PayoutMethod::DirectEntry => RawAccount {
                bsb: some("012-002"),
                account_number: some("12345678"),
                ..base
            },
            PayoutMethod::Ach => RawAccount {
                routing_number: some("021000021"),
                account_number: some("000123456789"),
                account_type: some("Checking"),
                ..base
            },
            PayoutMethod::Eft => RawAccount {
                routing_number: some("12345-003"),
                account_number: some("1234567"),
                account_type: some("SAVINGS"),
                ..base
            },
            PayoutMethod::Digital => RawAccount {
                recipient: some("Jane.Doe@Example.com"),
                name: some(" Jane Doe "),
                description: some(" Rent "),
                ..base
            },
            PayoutMethod::Sepa => RawAccount {
                iban: some("de89 3704 0044 0532 0130 00"),
                bic: some("deutdeff"),
                ..base
            },
            PayoutMethod::DirectCredit => RawAccount {
                account_number: some("01-902-0068389-00"),
                ..base
            },
        }
    }

    /// The codes of a failed parse, with their fields.
    fn failures(method: PayoutMethod, raw: &RawAccount) -> Vec<(ErrorCode, String)> {
        AccountInput::parse(method, raw)
            .unwrap_err()
            .0
            .into_iter()
            .map(|error| (error.code, error.field.into_owned()))
            .collect()
    }

    fn failure(code: ErrorCode, field: &str) -> (ErrorCode, String) {
        (code, field.to_owned())
    }

    #[test]
    fn parses_a_valid_request_per_method() {
        let parsed = |method| AccountInput::parse(method, &valid(method)).unwrap();

        let input = parsed(PayoutMethod::DirectEntry);
        assert_eq!(input.receiver_id, "rcv_123");
        assert_eq!(
            input.details,
            AccountDetails::DirectEntry {
                bsb: Bsb::parse("012002").unwrap(),
                account_number: AuAccountNumber::parse("12345678").unwrap(),
            }
        );

        assert_eq!(
            parsed(PayoutMethod::Ach).details,
            AccountDetails::Ach {
                routing_number: AbaRoutingNumber::parse("021000021").unwrap(),
                account_number: UsAccountNumber::parse("000123456789").unwrap(),
                account_type: AccountType::Checking,
            }
        );

        let AccountDetails::Eft {
            routing_number,
            account_number,
            account_type,
        } = parsed(PayoutMethod::Eft).details
        else {
            panic!("not EFT details");
        };
        assert_eq!(routing_number.as_str(), "000312345");
        assert_eq!(account_number.as_str(), "1234567");
        assert_eq!(account_type, AccountType::Savings);

        assert_eq!(
            parsed(PayoutMethod::Digital).details,
            AccountDetails::Digital {
                recipient: EmailAddress::parse("Jane.Doe@Example.com").unwrap(),
                name: "Jane Doe".to_owned(),
                description: Some("Rent".to_owned()),
            }
        );

        let AccountDetails::Sepa { iban, bic } = parsed(PayoutMethod::Sepa).details else {
            panic!("not SEPA details");
        };
        assert_eq!(iban.as_str(), "DE89370400440532013000");
        assert_eq!(bic.as_str(), "DEUTDEFF");

        let AccountDetails::DirectCredit { account_number } =
            parsed(PayoutMethod::DirectCredit).details
        else {
            panic!("not direct-credit details");
        };
        assert_eq!(account_number.as_str(), "0109020068389000");

        for &method in PayoutMethod::ALL {
            assert_eq!(parsed(method).details.method(), method);
        }
    }

    #[test]
    fn the_description_is_optional() {
        for description in [None, some(""), some("  \t")] {
            let raw = RawAccount {
                description,
                ..valid(PayoutMethod::Digital)
            };
            let input = AccountInput::parse(PayoutMethod::Digital, &raw).unwrap();
            let AccountDetails::Digital { description, .. } = input.details else {
                panic!("not digital details");
            };
            assert_eq!(description, None);
        }
    }

    #[test]
    fn an_empty_request_gives_exactly_the_required_codes() {
        use ErrorCode as C;
        let cases = [
            (
                PayoutMethod::DirectEntry,
                vec![
                    failure(C::Reac201, "receiver_id"),
                    failure(C::Reac202, "bsb"),
                    failure(C::Reac204, "account_number"),
                ],
            ),
            (
                PayoutMethod::Ach,
                vec![
                    failure(C::Reac201, "receiver_id"),
                    failure(C::Reac206, "routing_number"),
                    failure(C::Reac204, "account_number"),
                    failure(C::Reac210, "account_type"),
                ],
            ),
            (
                PayoutMethod::Eft,
                vec![
                    failure(C::Reac201, "receiver_id"),
                    failure(C::Reac206, "routing_number"),
                    failure(C::Reac204, "account_number"),
                    failure(C::Reac210, "account_type"),
                ],
            ),
            (
                PayoutMethod::Digital,
                vec![
                    failure(C::Reac201, "receiver_id"),
                    failure(C::Reac221, "recipient"),
                    failure(C::Reac223, "name"),
                ],
            ),
            (
                PayoutMethod::Sepa,
                vec![
                    failure(C::Reac201, "receiver_id"),
                    failure(C::Reac213, "iban"),
                    failure(C::Reac217, "bic"),
                ],
            ),
            (
                PayoutMethod::DirectCredit,
                vec![
                    failure(C::Reac201, "receiver_id"),
                    failure(C::Reac204, "account_number"),
                ],
            ),
        ];
        for (method, expected) in cases {
            assert_eq!(
                failures(method, &RawAccount::default()),
                expected,
                "{method:?}"
            );
            // Blank values are missing values.
            let blank = RawAccount {
                receiver_id: some(" "),
                bsb: some("\t"),
                account_number: some(""),
                routing_number: some(" "),
                account_type: some(" "),
                iban: some(" "),
                bic: some("\n"),
                recipient: some(" "),
                name: some("  "),
                description: some(" "),
            };
            assert_eq!(failures(method, &blank), expected, "{method:?}");
        }
    }

    #[test]
    fn fields_of_other_methods_are_ignored() {
        for &method in PayoutMethod::ALL {
            let mut raw = valid(method);
            for &field in AccountField::ALL {
                if !method.has_field(field) {
                    *raw.slot(field) = Some("x".repeat(300));
                }
            }
            assert!(AccountInput::parse(method, &raw).is_ok(), "{method:?}");
        }
    }

    #[test]
    fn every_code_is_reported_on_its_field() {
        use ErrorCode as C;
        use PayoutMethod as M;
        let cases: Vec<(M, RawAccount, (ErrorCode, String))> = vec![
            (
                M::DirectEntry,
                RawAccount {
                    bsb: some("01-2002"),
                    ..valid(M::DirectEntry)
                },
                failure(C::Reac203, "bsb"),
            ),
            (
                M::DirectEntry,
                RawAccount {
                    account_number: some("1234"),
                    ..valid(M::DirectEntry)
                },
                failure(C::Reac205, "account_number"),
            ),
            (
                M::Ach,
                RawAccount {
                    account_number: some("12-34"),
                    ..valid(M::Ach)
                },
                failure(C::Reac205, "account_number"),
            ),
            (
                M::Eft,
                RawAccount {
                    account_number: some("123456"),
                    ..valid(M::Eft)
                },
                failure(C::Reac205, "account_number"),
            ),
            (
                M::DirectCredit,
                RawAccount {
                    account_number: some("01-0902-068389-00"),
                    ..valid(M::DirectCredit)
                },
                failure(C::Reac205, "account_number"),
            ),
            (
                M::DirectCredit,
                RawAccount {
                    account_number: some("01-902-0068388-00"),
                    ..valid(M::DirectCredit)
                },
                failure(C::Reac220, "account_number"),
            ),
            (
                M::DirectCredit,
                RawAccount {
                    account_number: some("05-0001-0068389-00"),
                    ..valid(M::DirectCredit)
                },
                failure(C::Reac209, "account_number"),
            ),
            (
                M::Ach,
                RawAccount {
                    routing_number: some("02100002"),
                    ..valid(M::Ach)
                },
                failure(C::Reac207, "routing_number"),
            ),
            (
                M::Ach,
                RawAccount {
                    routing_number: some("021000022"),
                    ..valid(M::Ach)
                },
                failure(C::Reac208, "routing_number"),
            ),
            (
                M::Ach,
                RawAccount {
                    routing_number: some("500000005"),
                    ..valid(M::Ach)
                },
                failure(C::Reac209, "routing_number"),
            ),
            (
                M::Eft,
                RawAccount {
                    routing_number: some("12345003"),
                    ..valid(M::Eft)
                },
                failure(C::Reac207, "routing_number"),
            ),
            (
                M::Eft,
                RawAccount {
                    routing_number: some("12345-999"),
                    ..valid(M::Eft)
                },
                failure(C::Reac209, "routing_number"),
            ),
            (
                M::Ach,
                RawAccount {
                    account_type: some("current"),
                    ..valid(M::Ach)
                },
                failure(C::Reac212, "account_type"),
            ),
            (
                M::Eft,
                RawAccount {
                    account_type: some("chequing"),
                    ..valid(M::Eft)
                },
                failure(C::Reac212, "account_type"),
            ),
            (
                M::Sepa,
                RawAccount {
                    iban: some("DE8937040044053201300"),
                    ..valid(M::Sepa)
                },
                failure(C::Reac214, "iban"),
            ),
            (
                M::Sepa,
                RawAccount {
                    iban: some("DE88370400440532013000"),
                    ..valid(M::Sepa)
                },
                failure(C::Reac215, "iban"),
            ),
            (
                M::Sepa,
                RawAccount {
                    iban: some("TR330006100519786457841326"),
                    ..valid(M::Sepa)
                },
                failure(C::Reac216, "iban"),
            ),
            (
                M::Sepa,
                RawAccount {
                    bic: some("DEUTDEF"),
                    ..valid(M::Sepa)
                },
                failure(C::Reac218, "bic"),
            ),
            (
                M::Sepa,
                RawAccount {
                    bic: some("NWBKGB2L"),
                    ..valid(M::Sepa)
                },
                failure(C::Reac219, "bic"),
            ),
            (
                M::Digital,
                RawAccount {
                    recipient: some("jane@localhost"),
                    ..valid(M::Digital)
                },
                failure(C::Reac222, "recipient"),
            ),
            (
                M::Digital,
                RawAccount {
                    name: some(&"n".repeat(256)),
                    ..valid(M::Digital)
                },
                failure(C::Reac226, "name"),
            ),
            (
                M::Digital,
                RawAccount {
                    name: some("\u{3164}"),
                    ..valid(M::Digital)
                },
                failure(C::Req009, "name"),
            ),
            (
                M::Digital,
                RawAccount {
                    name: some("Jane\u{202E}eoD"),
                    ..valid(M::Digital)
                },
                failure(C::Req009, "name"),
            ),
            (
                M::Digital,
                RawAccount {
                    description: some("Rent\r\nBcc: x"),
                    ..valid(M::Digital)
                },
                failure(C::Req009, "description"),
            ),
            (
                M::Digital,
                RawAccount {
                    description: some("Re\u{200B}nt"),
                    ..valid(M::Digital)
                },
                failure(C::Req009, "description"),
            ),
            (
                M::Digital,
                RawAccount {
                    recipient: some("ja\u{2066}ne@example.com"),
                    ..valid(M::Digital)
                },
                failure(C::Reac222, "recipient"),
            ),
        ];
        for (method, raw, expected) in cases {
            assert_eq!(
                failures(method, &raw),
                vec![expected.clone()],
                "{expected:?}"
            );
        }
    }

    #[test]
    fn any_field_over_255_characters_is_reac226() {
        let long = "é".repeat(256);
        for &method in PayoutMethod::ALL {
            let mut fields = vec![None];
            fields.extend(method.fields().iter().map(|spec| Some(spec.field)));
            for field in fields {
                let mut raw = valid(method);
                let (slot, field) = match field {
                    None => (&mut raw.receiver_id, "receiver_id"),
                    Some(field) => (raw.slot(field), field.name()),
                };
                *slot = Some(long.clone());
                assert_eq!(
                    failures(method, &raw),
                    vec![failure(ErrorCode::Reac226, field)],
                    "{method:?} {field}"
                );
            }
        }
        // 255 characters (of two bytes each) are within the limit.
        let raw = RawAccount {
            receiver_id: Some("é".repeat(255)),
            description: Some(format!("  {}  ", "é".repeat(255))),
            ..valid(PayoutMethod::Digital)
        };
        assert!(AccountInput::parse(PayoutMethod::Digital, &raw).is_ok());
    }

    #[test]
    fn reports_several_failures_at_once_in_field_order() {
        use ErrorCode as C;
        let raw = RawAccount {
            receiver_id: None,
            iban: some("GB82WEST12345698765433"),
            bic: some("DEUTDEFF5"),
            ..RawAccount::default()
        };
        assert_eq!(
            failures(PayoutMethod::Sepa, &raw),
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac215, "iban"),
                failure(C::Reac218, "bic"),
            ]
        );
        let raw = RawAccount {
            receiver_id: some("rcv_1"),
            routing_number: some("99999-999"),
            account_number: some("12"),
            account_type: some("both"),
            ..RawAccount::default()
        };
        assert_eq!(
            failures(PayoutMethod::Eft, &raw),
            vec![
                failure(C::Reac209, "routing_number"),
                failure(C::Reac205, "account_number"),
                failure(C::Reac212, "account_type"),
            ]
        );
        let raw = RawAccount {
            recipient: some("not an address"),
            name: None,
            description: Some("d".repeat(300)),
            ..RawAccount::default()
        };
        assert_eq!(
            failures(PayoutMethod::Digital, &raw),
            vec![
                failure(C::Reac201, "receiver_id"),
                failure(C::Reac222, "recipient"),
                failure(C::Reac223, "name"),
                failure(C::Reac226, "description"),
            ]
        );
    }

    #[test]
    fn a_bic_is_only_compared_with_a_fully_valid_iban() {
        // A non-SEPA IBAN with a BIC of its own country: only the IBAN fails.
        let raw = RawAccount {
            iban: some("TR330006100519786457841326"),
            bic: some("TCZBTR2A"),
            ..valid(PayoutMethod::Sepa)
        };
        assert_eq!(
            failures(PayoutMethod::Sepa, &raw),
            vec![failure(ErrorCode::Reac216, "iban")]
        );
        // A Jersey BIC goes with a GB IBAN.
        let raw = RawAccount {
            iban: some("GB82WEST12345698765432"),
            bic: some("ABCDJESH"),
            ..valid(PayoutMethod::Sepa)
        };
        assert!(AccountInput::parse(PayoutMethod::Sepa, &raw).is_ok());
    }

    #[test]
    fn values_are_the_methods_fields_in_stored_order() {
        for &method in PayoutMethod::ALL {
            let details = AccountInput::parse(method, &valid(method)).unwrap().details;
            let mut names: Vec<AccountField> =
                details.values().iter().map(|(field, _)| *field).collect();
            names.sort();
            let mut expected: Vec<AccountField> =
                method.fields().iter().map(|spec| spec.field).collect();
            expected.sort();
            assert_eq!(names, expected, "{method:?}");
            assert_eq!(details.method(), method);
        }
        let digital = AccountInput::parse(PayoutMethod::Digital, &valid(PayoutMethod::Digital))
            .unwrap()
            .details;
        assert_eq!(
            digital.values(),
            vec![
                (AccountField::Recipient, "jane.doe@example.com".to_owned()),
                (AccountField::Name, "Jane Doe".to_owned()),
                (AccountField::Description, "Rent".to_owned()),
            ]
        );
        let nz = AccountInput::parse(
            PayoutMethod::DirectCredit,
            &valid(PayoutMethod::DirectCredit),
        )
        .unwrap()
        .details;
        assert_eq!(
            nz.values(),
            vec![(AccountField::AccountNumber, "0109020068389000".to_owned())]
        );
    }

    #[test]
    fn stored_and_queried_values_normalise_alike() {
        for &method in PayoutMethod::ALL {
            let raw = valid(method);
            let details = AccountInput::parse(method, &raw).unwrap().details;
            for (field, stored) in details.values() {
                if !field.matchable() {
                    continue;
                }
                assert_eq!(
                    field.normalize_for_match(&stored).as_deref(),
                    Some(stored.as_str()),
                    "{method:?} {field:?} (stored)"
                );
                let sent = raw.get(field).unwrap();
                assert_eq!(
                    field.normalize_for_match(sent).as_deref(),
                    Some(stored.as_str()),
                    "{method:?} {field:?} (as sent)"
                );
            }
        }
    }

    #[test]
    fn normalize_for_match_known_answers() {
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("bsb", "012-002", Some("012002")),
            ("bsb", " 012002 ", Some("012002")),
            ("bsb", "01200", None),
            ("account_number", " 12345678 ", Some("12345678")),
            ("account_number", "1234", Some("1234")),
            (
                "account_number",
                "12345678901234567",
                Some("12345678901234567"),
            ),
            ("account_number", "123", None),
            ("account_number", "123456789012345678", None),
            (
                "account_number",
                "01-902-0068389-00",
                Some("0109020068389000"),
            ),
            (
                "account_number",
                "01 0902 0068389 000",
                Some("0109020068389000"),
            ),
            (
                "account_number",
                "0109020068389000",
                Some("0109020068389000"),
            ),
            ("account_number", "1234-5678", None),
            ("account_number", "01-902-0068388-00", None),
            ("account_number", "１２３４５", None),
            ("routing_number", "021000021", Some("021000021")),
            ("routing_number", "12345-003", Some("000312345")),
            ("routing_number", "000312345", Some("000312345")),
            ("routing_number", "021000022", None),
            ("account_type", " Savings ", Some("savings")),
            ("account_type", "chequing", None),
            (
                "iban",
                "gb82 west 1234 5698 7654 32",
                Some("GB82WEST12345698765432"),
            ),
            ("iban", "TR330006100519786457841326", None),
            ("bic", "deutdeff500", Some("DEUTDEFF500")),
            ("recipient", " Jane@Example.COM ", Some("jane@example.com")),
            ("name", "Jane", None),
            ("description", "Rent", None),
        ];
        for &(field, value, expected) in cases {
            assert_eq!(
                normalize_for_match(field, value).as_deref(),
                expected,
                "{field} {value}"
            );
        }
        for field in AccountField::ALL.iter().map(|f| f.name()) {
            for odd in [
                "",
                "   ",
                "🤷",
                "\u{0000}",
                "é\u{0301}",
                &"9".repeat(100_000),
            ] {
                assert_eq!(normalize_for_match(field, odd), None, "{field} {odd:.10}");
            }
        }
    }
}
