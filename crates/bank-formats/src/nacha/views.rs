//! Convenience views of a parsed file: its returns and its notifications of change, one item per
//! addenda record, with the entry they arrived on.

use super::codes::{ChangeCode, ReturnCode, ReturnKind, TransactionCode};
use super::types::{Addenda, EntryDetail, NachaFile};

/// A returned entry: what an Addenda99 record (of any of its three layouts) says about the entry
/// it follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReturnedEntry {
    /// Return, dishonored return or contested dishonored return.
    pub kind: ReturnKind,
    /// The return reason code.
    pub return_code: ReturnCode,
    /// [`ReturnCode::reason`]: NACHA's title of the code, `None` for an unassigned code.
    pub reason: Option<&'static str>,
    /// [`ReturnCode::is_account_error`]: the account details are wrong or the account is gone.
    pub account_error: bool,
    /// Trace number of the entry being returned: the originator's own trace number for a
    /// return, the original entry's for a dishonored or contested one.
    pub original_trace_number: String,
    /// Receiving DFI identification of the original entry, eight digits.
    pub original_receiving_dfi: String,
    /// Amount of the return entry, cents.
    pub amount: u64,
    /// Transaction code of the return entry (21 or 31 for a returned credit).
    pub transaction_code: TransactionCode,
    /// Account number on the return entry.
    pub account_number: String,
    /// Name on the return entry.
    pub individual_name: String,
    /// Trace number of the return entry.
    pub trace_number: String,
    /// Free text from the addenda record (empty for a contested dishonored return).
    pub addenda_information: String,
}

/// A notification of change: an Addenda98 record and the entry it follows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotificationOfChange {
    /// The change code.
    pub change_code: ChangeCode,
    /// [`ChangeCode::reason`].
    pub reason: &'static str,
    /// Trace number of the entry the notification is about.
    pub original_trace_number: String,
    /// Receiving DFI identification of that entry, eight digits.
    pub original_receiving_dfi: String,
    /// The corrected data as written (blank fill removed).
    pub corrected_data: String,
    /// The corrected data read by change code.
    pub correction: Correction,
    /// Account number on the notification entry (the account as originally sent).
    pub account_number: String,
    /// Name on the notification entry.
    pub individual_name: String,
    /// Trace number of the notification entry.
    pub trace_number: String,
}

/// The corrected values a notification of change carries, read from its corrected data by
/// change code: C01 account number; C02 routing number; C03 routing number then account number;
/// C04 individual name; C05 transaction code; C06 account number then transaction code; C07
/// routing number, account number, transaction code; C09 individual identification number.
/// Blanks between the parts may fall anywhere (implementations differ). Other codes, and parts
/// that cannot be read, leave the fields `None`; the raw text stays in
/// [`NotificationOfChange::corrected_data`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Correction {
    /// The correct routing number (nine digits).
    pub routing_number: Option<String>,
    /// The correct DFI account number.
    pub account_number: Option<String>,
    /// The correct transaction code.
    pub transaction_code: Option<TransactionCode>,
    /// The correct individual or receiving company name.
    pub individual_name: Option<String>,
    /// The correct individual identification number.
    pub individual_id: Option<String>,
}

impl Correction {
    /// Reads `corrected_data` as `code` lays it out.
    #[must_use]
    pub fn read(code: ChangeCode, corrected_data: &str) -> Self {
        let data = corrected_data.trim_end();
        let first = |n: usize| non_empty(data.get(..n.min(data.len())).unwrap_or(data));
        let after_routing = data.get(9.min(data.len())..).unwrap_or_default();
        let mut correction = Self::default();
        match code.number() {
            1 => correction.account_number = first(17),
            2 => correction.routing_number = first(9),
            3 => {
                correction.routing_number = first(9);
                correction.account_number = non_empty(after_routing);
            }
            4 => correction.individual_name = first(22),
            5 => correction.transaction_code = transaction_code(data.trim()),
            6 => {
                (correction.account_number, correction.transaction_code) = account_and_code(data);
            }
            7 => {
                correction.routing_number = first(9);
                (correction.account_number, correction.transaction_code) =
                    account_and_code(after_routing);
            }
            9 => correction.individual_id = first(22),
            _ => {}
        }
        correction
    }
}

fn non_empty(value: &str) -> Option<String> {
    let value = value.trim();
    (!value.is_empty()).then(|| value.to_owned())
}

fn transaction_code(value: &str) -> Option<TransactionCode> {
    if value.len() != 2 {
        return None;
    }
    TransactionCode::from_code(value.parse().ok()?)
}

/// An account number, blanks, and a two-digit transaction code at the end.
fn account_and_code(value: &str) -> (Option<String>, Option<TransactionCode>) {
    let value = value.trim();
    match value.rsplit_once(' ') {
        Some((account, code)) if transaction_code(code).is_some() => {
            (non_empty(account), transaction_code(code))
        }
        _ => (non_empty(value), None),
    }
}

impl NachaFile {
    /// Every return in the file (Addenda99 records of all three layouts), in file order.
    #[must_use]
    pub fn returns(&self) -> Vec<ReturnedEntry> {
        self.entries()
            .flat_map(|entry| {
                entry
                    .addenda
                    .iter()
                    .filter_map(move |addenda| returned(entry, addenda))
            })
            .collect()
    }

    /// Every notification of change in the file (Addenda98 records), in file order.
    #[must_use]
    pub fn notifications_of_change(&self) -> Vec<NotificationOfChange> {
        self.entries()
            .flat_map(|entry| {
                entry
                    .addenda
                    .iter()
                    .filter_map(move |addenda| match addenda {
                        Addenda::Notification(a) => Some(NotificationOfChange {
                            change_code: a.change_code,
                            reason: a.change_code.reason(),
                            original_trace_number: a.original_trace_number.clone(),
                            original_receiving_dfi: a.original_receiving_dfi.clone(),
                            corrected_data: a.corrected_data.clone(),
                            correction: Correction::read(a.change_code, &a.corrected_data),
                            account_number: entry.account_number.clone(),
                            individual_name: entry.individual_name.clone(),
                            trace_number: entry.trace_number.clone(),
                        }),
                        _ => None,
                    })
            })
            .collect()
    }

    fn entries(&self) -> impl Iterator<Item = &EntryDetail> {
        self.batches.iter().flat_map(|batch| batch.entries.iter())
    }
}

fn returned(entry: &EntryDetail, addenda: &Addenda) -> Option<ReturnedEntry> {
    let (return_code, original_trace_number, original_receiving_dfi, information) = match addenda {
        Addenda::Return(a) => (
            a.return_code,
            &a.original_trace_number,
            &a.original_receiving_dfi,
            a.addenda_information.as_str(),
        ),
        Addenda::DishonoredReturn(a) => (
            a.return_code,
            &a.original_trace_number,
            &a.original_receiving_dfi,
            a.addenda_information.as_str(),
        ),
        Addenda::ContestedReturn(a) => (
            a.return_code,
            &a.original_trace_number,
            &a.original_receiving_dfi,
            "",
        ),
        Addenda::PaymentRelated(_) | Addenda::Notification(_) => return None,
    };
    Some(ReturnedEntry {
        kind: return_code.kind(),
        return_code,
        reason: return_code.reason(),
        account_error: return_code.is_account_error(),
        original_trace_number: original_trace_number.clone(),
        original_receiving_dfi: original_receiving_dfi.clone(),
        amount: entry.amount,
        transaction_code: entry.transaction_code,
        account_number: entry.account_number.clone(),
        individual_name: entry.individual_name.clone(),
        trace_number: entry.trace_number.clone(),
        addenda_information: information.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(code: u8, data: &str) -> Correction {
        ChangeCode::new(code).map_or_else(Correction::default, |c| Correction::read(c, data))
    }

    #[test]
    fn corrections_by_change_code() {
        assert_eq!(
            read(1, "1918171614                   ")
                .account_number
                .as_deref(),
            Some("1918171614")
        );
        assert_eq!(
            read(2, "021000021").routing_number.as_deref(),
            Some("021000021")
        );
        // C03 as NACHA lays it out (account at 13) and with the account elsewhere.
        for data in ["021000021   12345678", "021000021         12345678"] {
            let c = read(3, data);
            assert_eq!(c.routing_number.as_deref(), Some("021000021"), "{data}");
            assert_eq!(c.account_number.as_deref(), Some("12345678"), "{data}");
        }
        assert_eq!(
            read(5, "32").transaction_code,
            Some(TransactionCode::SavingsCredit)
        );
        for data in ["12345678              32", "12345678                   32"] {
            let c = read(6, data);
            assert_eq!(c.account_number.as_deref(), Some("12345678"), "{data}");
            assert_eq!(c.transaction_code, Some(TransactionCode::SavingsCredit));
        }
        let c = read(7, "02100002112345678         22");
        assert_eq!(c.routing_number.as_deref(), Some("021000021"));
        assert_eq!(c.account_number.as_deref(), Some("12345678"));
        assert_eq!(c.transaction_code, Some(TransactionCode::CheckingCredit));
        assert_eq!(
            read(4, "JANE DOE").individual_name.as_deref(),
            Some("JANE DOE")
        );
        assert_eq!(read(9, "ID-42").individual_id.as_deref(), Some("ID-42"));
        assert_eq!(read(13, "whatever"), Correction::default());
        assert_eq!(read(5, "9"), Correction::default());
    }
}
