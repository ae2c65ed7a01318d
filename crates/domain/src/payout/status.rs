//! Payout statuses (seed §3.1) and the transitions of contract §7.4, as one explicit table.

use strum::VariantArray;

use crate::coded_status::coded_status;

coded_status!(
    /// Where a payout is. Codes are the seed's filter codes.
    PayoutStatus {
        /// Waiting for the account's details to be confirmed.
        Awaiting = (0, "awaiting"),
        /// Ready for the next batch.
        Pending = (1, "pending"),
        /// Waiting for the receiver's KYC.
        Unassessed = (2, "unassessed"),
        /// Submitted to the payout rail.
        InProgress = (3, "in_progress"),
        /// Paid.
        Successful = (4, "successful"),
        /// Cancelled before submission.
        Cancelled = (5, "cancelled"),
        /// Not paid.
        Failed = (6, "failed"),
        /// Reserved (accepted as a filter; never produced by this version).
        SuccessfulPendingKyc = (7, "successful_pending_kyc"),
    }
);

impl PayoutStatus {
    /// Whether the payout's money has reached its end (posted or released).
    pub const fn is_final(self) -> bool {
        matches!(
            self,
            PayoutStatus::Successful | PayoutStatus::Cancelled | PayoutStatus::Failed
        )
    }
}

/// Something that happens to a payout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum PayoutEvent {
    /// The receiver's KYC completed; the account is confirmed.
    KycCompletedConfirmed,
    /// The receiver's KYC completed; the account is not confirmed yet.
    KycCompletedUnconfirmed,
    /// The receiver's KYC failed.
    KycFailed,
    /// The account's details were confirmed.
    AccountConfirmed,
    /// Its batch was submitted to the payout rail.
    Submitted,
    /// The rail paid it.
    RailSucceeded,
    /// The rail could not pay it.
    RailFailed,
    /// The subaccount cancelled it.
    Cancel,
}

impl PayoutEvent {
    /// Every event.
    pub const ALL: &'static [PayoutEvent] = Self::VARIANTS;
}

/// A transition the table does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a {from:?} payout cannot take {event:?}")]
pub struct IllegalTransition {
    /// The current status.
    pub from: PayoutStatus,
    /// What happened.
    pub event: PayoutEvent,
}

/// Every allowed transition (contract §7.4) and nothing else.
pub const TRANSITIONS: &[(PayoutStatus, PayoutEvent, PayoutStatus)] = &[
    (
        PayoutStatus::Unassessed,
        PayoutEvent::KycCompletedConfirmed,
        PayoutStatus::Pending,
    ),
    (
        PayoutStatus::Unassessed,
        PayoutEvent::KycCompletedUnconfirmed,
        PayoutStatus::Awaiting,
    ),
    (
        PayoutStatus::Unassessed,
        PayoutEvent::KycFailed,
        PayoutStatus::Failed,
    ),
    (
        PayoutStatus::Awaiting,
        PayoutEvent::AccountConfirmed,
        PayoutStatus::Pending,
    ),
    (
        PayoutStatus::Pending,
        PayoutEvent::Submitted,
        PayoutStatus::InProgress,
    ),
    (
        PayoutStatus::InProgress,
        PayoutEvent::RailSucceeded,
        PayoutStatus::Successful,
    ),
    (
        PayoutStatus::InProgress,
        PayoutEvent::RailFailed,
        PayoutStatus::Failed,
    ),
    (
        PayoutStatus::Awaiting,
        PayoutEvent::Cancel,
        PayoutStatus::Cancelled,
    ),
    (
        PayoutStatus::Unassessed,
        PayoutEvent::Cancel,
        PayoutStatus::Cancelled,
    ),
    (
        PayoutStatus::Pending,
        PayoutEvent::Cancel,
        PayoutStatus::Cancelled,
    ),
];

/// The status `from` moves to on `event`, or why it cannot.
pub fn transition(
    from: PayoutStatus,
    event: PayoutEvent,
) -> Result<PayoutStatus, IllegalTransition> {
    TRANSITIONS
        .iter()
        .find(|(f, e, _)| *f == from && *e == event)
        .map(|(_, _, to)| *to)
        .ok_or(IllegalTransition { from, event })
}

/// The status a new payout starts in (contract §7.4): `unassessed` while the receiver's KYC is
/// pending, else `awaiting` until the account is confirmed, else `pending`.
pub const fn initial_status(kyc_completed: bool, account_confirmed: bool) -> PayoutStatus {
    match (kyc_completed, account_confirmed) {
        (false, _) => PayoutStatus::Unassessed,
        (true, false) => PayoutStatus::Awaiting,
        (true, true) => PayoutStatus::Pending,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_and_names_follow_the_seed() {
        let table: Vec<(u8, &str)> = PayoutStatus::ALL
            .iter()
            .map(|s| (s.code(), s.as_str()))
            .collect();
        assert_eq!(
            table,
            [
                (0, "awaiting"),
                (1, "pending"),
                (2, "unassessed"),
                (3, "in_progress"),
                (4, "successful"),
                (5, "cancelled"),
                (6, "failed"),
                (7, "successful_pending_kyc")
            ]
        );
        assert_eq!(
            PayoutStatus::parse_code("7"),
            Some(PayoutStatus::SuccessfulPendingKyc)
        );
        for bad in ["8", "01", "", "x", "-1"] {
            assert_eq!(PayoutStatus::parse_code(bad), None, "{bad}");
        }
    }

    /// Every (status, event) pair: exactly the contract's rows are allowed, all others refused.
    #[test]
    fn the_whole_table_exhaustively() {
        use PayoutEvent as E;
        use PayoutStatus as S;
        let expected = |from: S, event: E| -> Option<S> {
            match (from, event) {
                (S::Unassessed, E::KycCompletedConfirmed) => Some(S::Pending),
                (S::Unassessed, E::KycCompletedUnconfirmed) => Some(S::Awaiting),
                (S::Unassessed, E::KycFailed) => Some(S::Failed),
                (S::Awaiting, E::AccountConfirmed) => Some(S::Pending),
                (S::Pending, E::Submitted) => Some(S::InProgress),
                (S::InProgress, E::RailSucceeded) => Some(S::Successful),
                (S::InProgress, E::RailFailed) => Some(S::Failed),
                (S::Awaiting | S::Unassessed | S::Pending, E::Cancel) => Some(S::Cancelled),
                _ => None,
            }
        };
        let mut allowed = 0;
        for &from in PayoutStatus::ALL {
            for &event in PayoutEvent::ALL {
                let got = transition(from, event).ok();
                assert_eq!(got, expected(from, event), "{from:?} on {event:?}");
                allowed += usize::from(got.is_some());
            }
        }
        assert_eq!(allowed, TRANSITIONS.len());
    }

    #[test]
    fn final_statuses_take_nothing() {
        for &from in PayoutStatus::ALL.iter().filter(|s| s.is_final()) {
            for &event in PayoutEvent::ALL {
                assert!(transition(from, event).is_err(), "{from:?} {event:?}");
            }
        }
    }

    #[test]
    fn new_payouts_start_by_kyc_and_confirmation() {
        assert_eq!(initial_status(false, true), PayoutStatus::Unassessed);
        assert_eq!(initial_status(false, false), PayoutStatus::Unassessed);
        assert_eq!(initial_status(true, false), PayoutStatus::Awaiting);
        assert_eq!(initial_status(true, true), PayoutStatus::Pending);
    }
}
