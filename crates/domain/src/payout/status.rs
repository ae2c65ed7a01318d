//! Payout statuses (with the provider's filter codes) and the transitions of the payout
//! lifecycle (docs/API.md, Payouts, Lifecycle), as one explicit table.

use strum::VariantArray;

use crate::coded_status::coded_status;

coded_status!(
    /// Where a payout is. Codes are the provider's filter codes.
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
    /// Whether the payout's money has reached its end (posted or released). Only a bank's
    /// return moves a final payout again: `successful` → `failed` ([`PayoutTrigger::Returned`]).
    pub const fn is_final(self) -> bool {
        matches!(
            self,
            PayoutStatus::Successful | PayoutStatus::Cancelled | PayoutStatus::Failed
        )
    }
}

/// What moves a payout from one status to another: the input of the state machine of
/// the payout lifecycle ([`transition`]). Not an [`OutboxEvent`](crate::events::OutboxEvent),
/// though a change it causes writes some (see [`plan_change`](super::change::plan_change)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray)]
pub enum PayoutTrigger {
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
    /// The bank sent a paid payout back (production rails' returns).
    Returned,
}

impl PayoutTrigger {
    /// Every trigger.
    pub const ALL: &'static [PayoutTrigger] = Self::VARIANTS;
}

/// A transition the table does not allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a {from:?} payout cannot take {trigger:?}")]
pub struct IllegalTransition {
    /// The current status.
    pub from: PayoutStatus,
    /// What happened.
    pub trigger: PayoutTrigger,
}

/// Every allowed transition (docs/API.md, Payouts, Lifecycle) and nothing else.
pub const TRANSITIONS: &[(PayoutStatus, PayoutTrigger, PayoutStatus)] = &[
    (
        PayoutStatus::Unassessed,
        PayoutTrigger::KycCompletedConfirmed,
        PayoutStatus::Pending,
    ),
    (
        PayoutStatus::Unassessed,
        PayoutTrigger::KycCompletedUnconfirmed,
        PayoutStatus::Awaiting,
    ),
    (
        PayoutStatus::Unassessed,
        PayoutTrigger::KycFailed,
        PayoutStatus::Failed,
    ),
    (
        PayoutStatus::Awaiting,
        PayoutTrigger::AccountConfirmed,
        PayoutStatus::Pending,
    ),
    (
        PayoutStatus::Pending,
        PayoutTrigger::Submitted,
        PayoutStatus::InProgress,
    ),
    (
        PayoutStatus::InProgress,
        PayoutTrigger::RailSucceeded,
        PayoutStatus::Successful,
    ),
    (
        PayoutStatus::InProgress,
        PayoutTrigger::RailFailed,
        PayoutStatus::Failed,
    ),
    (
        PayoutStatus::Awaiting,
        PayoutTrigger::Cancel,
        PayoutStatus::Cancelled,
    ),
    (
        PayoutStatus::Unassessed,
        PayoutTrigger::Cancel,
        PayoutStatus::Cancelled,
    ),
    (
        PayoutStatus::Pending,
        PayoutTrigger::Cancel,
        PayoutStatus::Cancelled,
    ),
    (
        PayoutStatus::Successful,
        PayoutTrigger::Returned,
        PayoutStatus::Failed,
    ),
];

/// The status `from` moves to on `trigger`, or why it cannot.
pub fn transition(
    from: PayoutStatus,
    trigger: PayoutTrigger,
) -> Result<PayoutStatus, IllegalTransition> {
    TRANSITIONS
        .iter()
        .find(|(f, e, _)| *f == from && *e == trigger)
        .map(|(_, _, to)| *to)
        .ok_or(IllegalTransition { from, trigger })
}

/// The status a new payout starts in (docs/API.md, Payouts, Lifecycle): `unassessed` while the
/// receiver's KYC is pending, else `awaiting` until the account is confirmed, else `pending`.
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
        for status in PayoutStatus::ALL {
            assert_eq!(PayoutStatus::parse_name(status.as_str()), Some(*status));
        }
        for bad in ["", "Pending", "in progress", "4"] {
            assert_eq!(PayoutStatus::parse_name(bad), None, "{bad}");
        }
    }

    /// Every (status, trigger) pair: exactly the lifecycle's rows are allowed, all others refused.
    #[test]
    fn the_whole_table_exhaustively() {
        use PayoutStatus as S;
        use PayoutTrigger as T;
        let expected = |from: S, trigger: T| -> Option<S> {
            match (from, trigger) {
                (S::Unassessed, T::KycCompletedConfirmed) => Some(S::Pending),
                (S::Unassessed, T::KycCompletedUnconfirmed) => Some(S::Awaiting),
                (S::Unassessed, T::KycFailed) => Some(S::Failed),
                (S::Awaiting, T::AccountConfirmed) => Some(S::Pending),
                (S::Pending, T::Submitted) => Some(S::InProgress),
                (S::InProgress, T::RailSucceeded) => Some(S::Successful),
                (S::InProgress, T::RailFailed) => Some(S::Failed),
                (S::Awaiting | S::Unassessed | S::Pending, T::Cancel) => Some(S::Cancelled),
                (S::Successful, T::Returned) => Some(S::Failed),
                _ => None,
            }
        };
        let mut allowed = 0;
        for &from in PayoutStatus::ALL {
            for &trigger in PayoutTrigger::ALL {
                let got = transition(from, trigger).ok();
                assert_eq!(got, expected(from, trigger), "{from:?} on {trigger:?}");
                allowed += usize::from(got.is_some());
            }
        }
        assert_eq!(allowed, TRANSITIONS.len());
    }

    #[test]
    fn final_statuses_take_nothing_but_a_return_of_a_paid_payout() {
        for &from in PayoutStatus::ALL.iter().filter(|s| s.is_final()) {
            for &trigger in PayoutTrigger::ALL {
                let returned =
                    from == PayoutStatus::Successful && trigger == PayoutTrigger::Returned;
                assert_eq!(
                    transition(from, trigger).is_ok(),
                    returned,
                    "{from:?} {trigger:?}"
                );
            }
        }
        assert_eq!(
            transition(PayoutStatus::Failed, PayoutTrigger::Returned),
            Err(IllegalTransition {
                from: PayoutStatus::Failed,
                trigger: PayoutTrigger::Returned
            }),
            "a return is applied once"
        );
    }

    #[test]
    fn new_payouts_start_by_kyc_and_confirmation() {
        assert_eq!(initial_status(false, true), PayoutStatus::Unassessed);
        assert_eq!(initial_status(false, false), PayoutStatus::Unassessed);
        assert_eq!(initial_status(true, false), PayoutStatus::Awaiting);
        assert_eq!(initial_status(true, true), PayoutStatus::Pending);
    }
}
