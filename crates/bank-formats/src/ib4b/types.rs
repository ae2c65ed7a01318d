//! The typed contents of an IB4B direct credit file and of payoutd's dishonour file.

use chrono::NaiveDate;

use super::codes::{DishonourReason, TransactionCode};

/// Digits of a New Zealand account number in the file: bank (2), branch (4), base (7), suffix
/// (3).
pub const ACCOUNT_DIGITS: usize = 16;
/// Width of the other party's name and of your name.
pub const NAME_WIDTH: usize = 20;
/// Width of the particulars, code and reference fields.
pub const DETAIL_WIDTH: usize = 12;
/// Most digits of a transaction amount (cents).
pub const AMOUNT_DIGITS: usize = 10;
/// Most digits of the control record's total amount (cents).
pub const TOTAL_DIGITS: usize = 11;
/// Most digits of the control record's transaction count.
pub const COUNT_DIGITS: usize = 6;
/// Digits of the hash total.
pub const HASH_DIGITS: usize = 11;
/// Width of a dishonour's reason text.
pub const REASON_TEXT_WIDTH: usize = 40;
/// The header's batch type for a direct credit file.
pub const DIRECT_CREDIT_BATCH_TYPE: &str = "7";
/// The dishonour header's file kind (its second field).
pub const DISHONOUR_KIND: &str = "DISHONOUR";

/// The statement details one party sees: particulars, code and reference (12 characters each).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct StatementDetails {
    /// Particulars.
    pub particulars: String,
    /// Analysis code.
    pub code: String,
    /// Reference.
    pub reference: String,
}

/// The header record (`1`) of a direct credit file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// The BNZ account the credits are paid from, 16 digits.
    pub originating_account: String,
    /// The date the credits are due (paid), written `YYMMDD`.
    pub due_date: NaiveDate,
    /// The date the file was made, written `YYMMDD`.
    pub creation_date: NaiveDate,
}

/// One transaction record (`2`): a direct credit to another party's account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transaction {
    /// The other party's account, 16 digits.
    pub account: String,
    /// The transaction code (`50`).
    pub transaction_code: TransactionCode,
    /// The amount in cents: more than zero, at most [`AMOUNT_DIGITS`] digits.
    pub amount: u64,
    /// The other party's name (free text, cleaned and cut to 20).
    pub other_party_name: String,
    /// What the other party's statement shows (free text, cleaned and cut to 12 each).
    pub other_party: StatementDetails,
    /// The other party alpha reference, which BNZ does not use (free text, 12); blank as
    /// payoutd writes it.
    pub other_party_alpha_reference: String,
    /// Your (the originator's) name as the other party sees it (free text, cleaned and cut to
    /// 20).
    pub your_name: String,
    /// What your statement shows (free text, cleaned and cut to 12 each).
    pub yours: StatementDetails,
}

/// A direct credit file: a header, one or more transactions; the control record is computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectCreditFile {
    /// The header record.
    pub header: Header,
    /// The transaction records, in file order.
    pub transactions: Vec<Transaction>,
}

/// The control record (`3`): computed from the transactions, never given.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Control {
    /// The sum of the amounts, cents.
    pub total_amount: u64,
    /// The number of transactions.
    pub count: u64,
    /// The hash total ([`hash_total`]).
    pub hash_total: u64,
}

/// BNZ's hash total of a file's accounts: for each account, its branch (digits 3–6) and base
/// (digits 7–13) read as one 11-digit number, the bank and suffix ignored; summed; the
/// rightmost 11 digits kept. Accounts that are not 16 digits count as zero (the writer refuses
/// them before).
#[must_use]
pub fn hash_total<'a>(accounts: impl IntoIterator<Item = &'a str>) -> u64 {
    const MODULUS: u64 = 100_000_000_000;
    accounts.into_iter().fold(0, |sum, account| {
        let part = account
            .get(2..13)
            .filter(|_| account.len() == ACCOUNT_DIGITS)
            .and_then(|digits| digits.parse::<u64>().ok())
            .unwrap_or(0);
        (sum + part) % MODULUS
    })
}

fn control<'a>(amounts: impl Iterator<Item = (u64, &'a str)>) -> Control {
    let mut total = 0u64;
    let mut count = 0u64;
    let mut accounts = Vec::new();
    for (amount, account) in amounts {
        total = total.saturating_add(amount);
        count += 1;
        accounts.push(account);
    }
    Control {
        total_amount: total,
        count,
        hash_total: hash_total(accounts),
    }
}

impl DirectCreditFile {
    /// The control record the transactions add up to.
    #[must_use]
    pub fn control(&self) -> Control {
        control(
            self.transactions
                .iter()
                .map(|t| (t.amount, t.account.as_str())),
        )
    }
}

/// The header record (`1`) of a dishonour file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DishonourHeader {
    /// The originating account of the direct credits reported on, 16 digits.
    pub originating_account: String,
    /// The due date of the direct credit file reported on.
    pub due_date: NaiveDate,
    /// The date of the report.
    pub report_date: NaiveDate,
}

/// One dishonour record (`2`): a direct credit the other party's bank sent back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dishonour {
    /// The other party's account of the original transaction, 16 digits.
    pub account: String,
    /// The original transaction code.
    pub transaction_code: TransactionCode,
    /// The amount sent back, cents.
    pub amount: u64,
    /// The original other party name.
    pub other_party_name: String,
    /// The original "your code".
    pub your_code: String,
    /// The original "your reference": how the originator finds its transaction.
    pub your_reference: String,
    /// Why.
    pub reason: DishonourReason,
    /// The reason in words (at most 40 characters of the IB4B set).
    pub reason_text: String,
}

/// payoutd's dishonour file: a header, the dishonoured credits; the control record is
/// computed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DishonourFile {
    /// The header record.
    pub header: DishonourHeader,
    /// The dishonour records, in file order (may be none).
    pub dishonours: Vec<Dishonour>,
}

impl DishonourFile {
    /// The control record the dishonours add up to.
    #[must_use]
    pub fn control(&self) -> Control {
        control(
            self.dishonours
                .iter()
                .map(|d| (d.amount, d.account.as_str())),
        )
    }
}

/// What [`parse`](super::parse()) read: an originated direct credit file or a dishonour file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ib4bFile {
    /// A direct credit file (BNZ's import layout).
    DirectCredit(DirectCreditFile),
    /// A dishonour file (payoutd's layout).
    Dishonour(DishonourFile),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_total_adds_branch_and_base_and_keeps_eleven_digits() {
        // 01-0902-0068389-000: branch 0902, base 0068389 -> 09020068389.
        assert_eq!(hash_total(["0109020068389000"]), 9_020_068_389);
        // Bank and suffix are ignored.
        assert_eq!(hash_total(["9909020068389999"]), 9_020_068_389);
        // 99999999999 + 00000000002 = 100000000001 -> rightmost 11 digits 00000000001.
        assert_eq!(hash_total(["0199999999999000", "0100000000002000"]), 1);
        assert_eq!(hash_total(["12345"]), 0);
        assert_eq!(hash_total(Vec::<&str>::new()), 0);
    }
}
