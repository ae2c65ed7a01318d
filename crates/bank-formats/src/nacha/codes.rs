//! The code lists of the format: transaction codes, service class codes, standard entry class
//! codes, return reason codes and change codes.

use std::fmt;

/// The kind of account an entry posts to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccountType {
    /// Demand deposit (checking), transaction codes 2x.
    Checking,
    /// Savings, transaction codes 3x.
    Savings,
}

/// Entry detail transaction code (positions 2–3), for checking (2x) and savings (3x) accounts.
///
/// The writer writes only [`CheckingCredit`](Self::CheckingCredit) (22),
/// [`SavingsCredit`](Self::SavingsCredit) (32) and their prenotes (23, 33). The parser also
/// reads the return / notification-of-change codes (21, 26, 31, 36), debits and zero-dollar
/// entries, which appear in return and NOC files. General ledger and loan codes (4x, 5x) are
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TransactionCode {
    /// 21: return or notification of change of a checking credit.
    CheckingCreditReturn,
    /// 22: checking credit.
    CheckingCredit,
    /// 23: prenotification of a checking credit.
    CheckingCreditPrenote,
    /// 24: zero-dollar checking credit with remittance data.
    CheckingCreditZeroDollar,
    /// 26: return or notification of change of a checking debit.
    CheckingDebitReturn,
    /// 27: checking debit.
    CheckingDebit,
    /// 28: prenotification of a checking debit.
    CheckingDebitPrenote,
    /// 29: zero-dollar checking debit with remittance data.
    CheckingDebitZeroDollar,
    /// 31: return or notification of change of a savings credit.
    SavingsCreditReturn,
    /// 32: savings credit.
    SavingsCredit,
    /// 33: prenotification of a savings credit.
    SavingsCreditPrenote,
    /// 34: zero-dollar savings credit with remittance data.
    SavingsCreditZeroDollar,
    /// 36: return or notification of change of a savings debit.
    SavingsDebitReturn,
    /// 37: savings debit.
    SavingsDebit,
    /// 38: prenotification of a savings debit.
    SavingsDebitPrenote,
    /// 39: zero-dollar savings debit with remittance data.
    SavingsDebitZeroDollar,
}

impl TransactionCode {
    /// Every transaction code this module knows, in code order.
    pub const ALL: [Self; 16] = [
        Self::CheckingCreditReturn,
        Self::CheckingCredit,
        Self::CheckingCreditPrenote,
        Self::CheckingCreditZeroDollar,
        Self::CheckingDebitReturn,
        Self::CheckingDebit,
        Self::CheckingDebitPrenote,
        Self::CheckingDebitZeroDollar,
        Self::SavingsCreditReturn,
        Self::SavingsCredit,
        Self::SavingsCreditPrenote,
        Self::SavingsCreditZeroDollar,
        Self::SavingsDebitReturn,
        Self::SavingsDebit,
        Self::SavingsDebitPrenote,
        Self::SavingsDebitZeroDollar,
    ];

    /// The two-digit code.
    #[must_use]
    pub const fn code(self) -> u8 {
        match self {
            Self::CheckingCreditReturn => 21,
            Self::CheckingCredit => 22,
            Self::CheckingCreditPrenote => 23,
            Self::CheckingCreditZeroDollar => 24,
            Self::CheckingDebitReturn => 26,
            Self::CheckingDebit => 27,
            Self::CheckingDebitPrenote => 28,
            Self::CheckingDebitZeroDollar => 29,
            Self::SavingsCreditReturn => 31,
            Self::SavingsCredit => 32,
            Self::SavingsCreditPrenote => 33,
            Self::SavingsCreditZeroDollar => 34,
            Self::SavingsDebitReturn => 36,
            Self::SavingsDebit => 37,
            Self::SavingsDebitPrenote => 38,
            Self::SavingsDebitZeroDollar => 39,
        }
    }

    /// The transaction code with this number, if it is one of [`ALL`](Self::ALL).
    #[must_use]
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.code() == code)
    }

    /// Checking or savings.
    #[must_use]
    pub const fn account_type(self) -> AccountType {
        if self.code() < 30 {
            AccountType::Checking
        } else {
            AccountType::Savings
        }
    }

    /// Whether the entry moves money to the receiver (codes x1–x4); its amount counts in the
    /// control records' total credit.
    #[must_use]
    pub const fn is_credit(self) -> bool {
        self.code() % 10 <= 4
    }

    /// Whether the entry takes money from the receiver (codes x6–x9); its amount counts in the
    /// control records' total debit.
    #[must_use]
    pub const fn is_debit(self) -> bool {
        !self.is_credit()
    }

    /// Whether the entry is a prenotification (x3, x8), which carries a zero amount.
    #[must_use]
    pub const fn is_prenote(self) -> bool {
        matches!(self.code() % 10, 3 | 8)
    }

    /// Whether the entry is a return or a notification of change (x1, x6).
    #[must_use]
    pub const fn is_return_or_notification(self) -> bool {
        matches!(self.code() % 10, 1 | 6)
    }
}

impl fmt::Display for TransactionCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:02}", self.code())
    }
}

/// Batch header service class code (positions 2–4).
///
/// The writer writes only [`CreditsOnly`](Self::CreditsOnly); the parser reads all three.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ServiceClass {
    /// 200: mixed debits and credits.
    Mixed,
    /// 220: credits only.
    CreditsOnly,
    /// 225: debits only.
    DebitsOnly,
}

impl ServiceClass {
    /// The three-digit code.
    #[must_use]
    pub const fn code(self) -> u16 {
        match self {
            Self::Mixed => 200,
            Self::CreditsOnly => 220,
            Self::DebitsOnly => 225,
        }
    }

    /// The service class with this code.
    #[must_use]
    pub const fn from_code(code: u16) -> Option<Self> {
        match code {
            200 => Some(Self::Mixed),
            220 => Some(Self::CreditsOnly),
            225 => Some(Self::DebitsOnly),
            _ => None,
        }
    }

    /// Whether a batch of this class may carry an entry with this transaction code.
    #[must_use]
    pub const fn allows(self, code: TransactionCode) -> bool {
        match self {
            Self::Mixed => true,
            Self::CreditsOnly => code.is_credit(),
            Self::DebitsOnly => code.is_debit(),
        }
    }
}

impl fmt::Display for ServiceClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.code())
    }
}

/// Standard entry class code of a batch (positions 51–53 of the batch header).
///
/// The writer writes [`Ppd`](Self::Ppd) and [`Ccd`](Self::Ccd). The parser reads the codes whose
/// entry detail record has the common layout (identification 40–54, name 55–76, discretionary
/// data or payment type 77–78). Codes with other entry layouts (CTX, CIE, IAT, ENR, …) are
/// refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SecCode {
    /// Prearranged payment and deposit (consumer accounts).
    Ppd,
    /// Corporate credit or debit (business accounts).
    Ccd,
    /// Internet-initiated / mobile entry.
    Web,
    /// Telephone-initiated entry.
    Tel,
    /// Point-of-sale entry.
    Pos,
    /// Notification of change or refused notification of change.
    Cor,
}

impl SecCode {
    /// Every code this module reads.
    pub const ALL: [Self; 6] = [
        Self::Ppd,
        Self::Ccd,
        Self::Web,
        Self::Tel,
        Self::Pos,
        Self::Cor,
    ];

    /// The three-letter code.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ppd => "PPD",
            Self::Ccd => "CCD",
            Self::Web => "WEB",
            Self::Tel => "TEL",
            Self::Pos => "POS",
            Self::Cor => "COR",
        }
    }

    /// The code spelled `code`, if this module reads it.
    #[must_use]
    pub fn from_code(code: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == code)
    }
}

impl fmt::Display for SecCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which Addenda99 layout a return reason code selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReturnKind {
    /// A return from the receiving bank (every code outside R61–R77).
    Return,
    /// A dishonored return from the originating bank (R61–R70).
    Dishonored,
    /// A contested dishonored return from the receiving bank (R71–R77).
    Contested,
}

/// A return reason code, `R01` to `R99`.
///
/// Any two-digit number is accepted, because banks use codes NACHA has not assigned (the moov
/// fixture carries `R97`); [`reason`](Self::reason) is `None` for those.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReturnCode(u8);

impl ReturnCode {
    /// The code `R{number:02}`, for 1 to 99.
    #[must_use]
    pub fn new(number: u8) -> Option<Self> {
        (1..=99).contains(&number).then_some(Self(number))
    }

    /// Reads `R` followed by two digits.
    #[must_use]
    pub fn parse(code: &str) -> Option<Self> {
        let digits = code.strip_prefix('R')?;
        if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Self::new(digits.parse().ok()?)
    }

    /// The number after the `R`.
    #[must_use]
    pub const fn number(self) -> u8 {
        self.0
    }

    /// The Addenda99 layout the code selects.
    #[must_use]
    pub const fn kind(self) -> ReturnKind {
        match self.0 {
            61..=70 => ReturnKind::Dishonored,
            71..=77 => ReturnKind::Contested,
            _ => ReturnKind::Return,
        }
    }

    /// Whether the code says the receiver's account details are wrong or the account cannot
    /// take entries any more, so the account should not be paid again as it is: R02 (closed),
    /// R03 (no account / unable to locate), R04 (invalid account number), R12 (sold to another
    /// bank), R13 (invalid routing number) and R20 (non-transaction account).
    #[must_use]
    pub const fn is_account_error(self) -> bool {
        matches!(self.0, 2 | 3 | 4 | 12 | 13 | 20)
    }

    /// NACHA's title of the code, or a general one for the dishonored (R61–R70) and contested
    /// (R71–R77) ranges; `None` for a code NACHA has not assigned.
    #[must_use]
    pub const fn reason(self) -> Option<&'static str> {
        Some(match self.0 {
            1 => "Insufficient funds",
            2 => "Account closed",
            3 => "No account / unable to locate account",
            4 => "Invalid account number structure",
            5 => "Unauthorized debit to consumer account using corporate SEC code",
            6 => "Returned per ODFI's request",
            7 => "Authorization revoked by customer",
            8 => "Payment stopped",
            9 => "Uncollected funds",
            10 => "Customer advises originator is not known or not authorized",
            11 => "Customer advises entry not in accordance with the terms of the authorization",
            12 => "Account sold to another DFI",
            13 => "Invalid ACH routing number",
            14 => "Representative payee deceased or unable to continue in that capacity",
            15 => "Beneficiary or account holder deceased",
            16 => "Account frozen / entry returned per OFAC instruction",
            17 => "File record edit criteria / entry initiated under questionable circumstances",
            18 => "Improper effective entry date",
            19 => "Amount field error",
            20 => "Non-transaction account",
            21 => "Invalid company identification",
            22 => "Invalid individual ID number",
            23 => "Credit entry refused by receiver",
            24 => "Duplicate entry",
            25 => "Addenda error",
            26 => "Mandatory field error",
            27 => "Trace number error",
            28 => "Routing number check digit error",
            29 => "Corporate customer advises not authorized",
            31 => "Permissible return entry (CCD and CTX only)",
            61 => "Dishonored return: misrouted return",
            62 => "Dishonored return: return of erroneous or reversing debit",
            67 => "Dishonored return: duplicate return",
            68 => "Dishonored return: untimely return",
            69 => "Dishonored return: field error(s)",
            70 => "Dishonored return: permissible return entry not accepted",
            63..=66 => "Dishonored return",
            71 => "Contested dishonored return: misrouted dishonored return",
            72 => "Contested dishonored return: untimely dishonored return",
            73 => "Contested dishonored return: timely original return",
            74 => "Contested dishonored return: corrected return",
            75 => "Contested dishonored return: return not a duplicate",
            76 => "Contested dishonored return: no errors found",
            77 => "Contested dishonored return: non-acceptance of R62 dishonored return",
            _ => return None,
        })
    }
}

impl fmt::Display for ReturnCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "R{:02}", self.0)
    }
}

/// A notification-of-change code, `C01` to `C14`.
///
/// Refused notifications of change (C61–C69) have another addenda layout and are not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ChangeCode(u8);

impl ChangeCode {
    /// The code `C{number:02}`, for 1 to 14.
    #[must_use]
    pub fn new(number: u8) -> Option<Self> {
        (1..=14).contains(&number).then_some(Self(number))
    }

    /// Reads `C` followed by two digits, 01 to 14.
    #[must_use]
    pub fn parse(code: &str) -> Option<Self> {
        let digits = code.strip_prefix('C')?;
        if digits.len() != 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        Self::new(digits.parse().ok()?)
    }

    /// The number after the `C`.
    #[must_use]
    pub const fn number(self) -> u8 {
        self.0
    }

    /// NACHA's title of the code.
    #[must_use]
    pub const fn reason(self) -> &'static str {
        match self.0 {
            1 => "Incorrect DFI account number",
            2 => "Incorrect routing number",
            3 => "Incorrect routing number and incorrect DFI account number",
            4 => "Incorrect individual name / receiving company name",
            5 => "Incorrect transaction code",
            6 => "Incorrect DFI account number and incorrect transaction code",
            7 => {
                "Incorrect routing number, incorrect DFI account number and incorrect transaction code"
            }
            8 => "Incorrect receiving DFI identification (IAT only)",
            9 => "Incorrect individual identification number",
            10 => "Incorrect company name",
            11 => "Incorrect company identification",
            12 => "Incorrect company name and company identification",
            13 => "Addenda format error",
            _ => "Incorrect SEC code for outbound international payment",
        }
    }
}

impl fmt::Display for ChangeCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "C{:02}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transaction_codes_round_trip_and_classify() {
        for code in TransactionCode::ALL {
            assert_eq!(TransactionCode::from_code(code.code()), Some(code));
            assert_ne!(code.is_credit(), code.is_debit());
        }
        assert_eq!(TransactionCode::from_code(25), None);
        assert_eq!(TransactionCode::from_code(42), None);
        assert!(TransactionCode::CheckingCredit.is_credit());
        assert!(TransactionCode::CheckingCreditReturn.is_credit());
        assert!(TransactionCode::SavingsDebitReturn.is_debit());
        assert!(TransactionCode::SavingsCreditPrenote.is_prenote());
        assert_eq!(
            TransactionCode::SavingsCredit.account_type(),
            AccountType::Savings
        );
        assert!(!ServiceClass::CreditsOnly.allows(TransactionCode::CheckingDebit));
        assert!(ServiceClass::DebitsOnly.allows(TransactionCode::CheckingDebitReturn));
    }

    #[test]
    fn return_codes() {
        let r03 = ReturnCode::parse("R03");
        assert_eq!(r03.map(ReturnCode::number), Some(3));
        assert_eq!(r03.map(|c| c.to_string()), Some("R03".to_owned()));
        assert!(r03.is_some_and(ReturnCode::is_account_error));
        assert_eq!(ReturnCode::parse("R00"), None);
        assert_eq!(ReturnCode::parse("R1"), None);
        assert_eq!(ReturnCode::parse("X01"), None);
        assert_eq!(ReturnCode::parse("R+1"), None);
        let r97 = ReturnCode::parse("R97");
        assert_eq!(r97.and_then(ReturnCode::reason), None);
        assert_eq!(r97.map(ReturnCode::kind), Some(ReturnKind::Return));
        assert_eq!(
            ReturnCode::new(68).map(ReturnCode::kind),
            Some(ReturnKind::Dishonored)
        );
        assert_eq!(
            ReturnCode::new(71).map(ReturnCode::kind),
            Some(ReturnKind::Contested)
        );
        for n in (1..=4)
            .chain(6..=10)
            .chain(14..=17)
            .chain([20, 23, 24, 29])
            .chain(61..=77)
        {
            assert!(
                ReturnCode::new(n).and_then(ReturnCode::reason).is_some(),
                "R{n:02}"
            );
        }
    }

    #[test]
    fn change_codes() {
        assert_eq!(ChangeCode::parse("C01").map(ChangeCode::number), Some(1));
        assert_eq!(
            ChangeCode::parse("C13").map(|c| c.to_string()),
            Some("C13".to_owned())
        );
        assert_eq!(ChangeCode::parse("C00"), None);
        assert_eq!(ChangeCode::parse("C61"), None);
        assert_eq!(ChangeCode::parse("R01"), None);
    }
}
