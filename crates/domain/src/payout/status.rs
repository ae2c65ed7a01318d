//! Payout statuses (seed §3.1) and the transitions of contract §7.4, as one explicit table.

/// Where a payout is. Codes are the seed's filter codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PayoutStatus {
    /// Waiting for the account's details to be confirmed.
    Awaiting,
    /// Ready for the next batch.
    Pending,
    /// Waiting for the receiver's KYC.
    Unassessed,
    /// Submitted to the payout rail.
    InProgress,
    /// Paid.
    Successful,
    /// Cancelled before submission.
    Cancelled,
    /// Not paid.
    Failed,
    /// Reserved (accepted as a filter; never produced by this version).
    SuccessfulPendingKyc,
}

impl PayoutStatus {
    /// Every status, in code order.
    pub const ALL: [PayoutStatus; 8] = [
        PayoutStatus::Awaiting,
        PayoutStatus::Pending,
        PayoutStatus::Unassessed,
        PayoutStatus::InProgress,
        PayoutStatus::Successful,
        PayoutStatus::Cancelled,
        PayoutStatus::Failed,
        PayoutStatus::SuccessfulPendingKyc,
    ];

    /// The seed's numeric filter code.
    pub const fn code(self) -> u8 {
        match self {
            PayoutStatus::Awaiting => 0,
            PayoutStatus::Pending => 1,
            PayoutStatus::Unassessed => 2,
            PayoutStatus::InProgress => 3,
            PayoutStatus::Successful => 4,
            PayoutStatus::Cancelled => 5,
            PayoutStatus::Failed => 6,
            PayoutStatus::SuccessfulPendingKyc => 7,
        }
    }

    /// The lower-case name responses show.
    pub const fn as_str(self) -> &'static str {
        match self {
            PayoutStatus::Awaiting => "awaiting",
            PayoutStatus::Pending => "pending",
            PayoutStatus::Unassessed => "unassessed",
            PayoutStatus::InProgress => "in_progress",
            PayoutStatus::Successful => "successful",
            PayoutStatus::Cancelled => "cancelled",
            PayoutStatus::Failed => "failed",
            PayoutStatus::SuccessfulPendingKyc => "successful_pending_kyc",
        }
    }

    /// The status with this code.
    pub fn from_code(code: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.code() == code)
    }

    /// Parses a filter value: the code as one digit.
    pub fn parse_code(raw: &str) -> Option<Self> {
        if raw.len() != 1 {
            return None;
        }
        raw.parse::<u8>().ok().and_then(Self::from_code)
    }

    /// Whether the payout's money has reached its end (posted or released).
    pub const fn is_final(self) -> bool {
        matches!(
            self,
            PayoutStatus::Successful | PayoutStatus::Cancelled | PayoutStatus::Failed
        )
    }
}

/// What moves a payout from one status to another: the input of the state machine of
/// contract §7.4 ([`transition`]). Not an [`OutboxEvent`](crate::events::OutboxEvent), though a
/// change it causes writes some (see [`plan_change`](super::change::plan_change)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
}

impl PayoutTrigger {
    /// Every trigger.
    pub const ALL: [PayoutTrigger; 8] = [
        PayoutTrigger::KycCompletedConfirmed,
        PayoutTrigger::KycCompletedUnconfirmed,
        PayoutTrigger::KycFailed,
        PayoutTrigger::AccountConfirmed,
        PayoutTrigger::Submitted,
        PayoutTrigger::RailSucceeded,
        PayoutTrigger::RailFailed,
        PayoutTrigger::Cancel,
    ];
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

/// Every allowed transition (contract §7.4) and nothing else.
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

    /// Every (status, trigger) pair: exactly the contract's rows are allowed, all others refused.
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
                _ => None,
            }
        };
        let mut allowed = 0;
        for from in PayoutStatus::ALL {
            for trigger in PayoutTrigger::ALL {
                let got = transition(from, trigger).ok();
                assert_eq!(got, expected(from, trigger), "{from:?} on {trigger:?}");
                allowed += usize::from(got.is_some());
            }
        }
        assert_eq!(allowed, TRANSITIONS.len());
    }

    #[test]
    fn final_statuses_take_nothing() {
        for from in PayoutStatus::ALL.into_iter().filter(|s| s.is_final()) {
            for trigger in PayoutTrigger::ALL {
                assert!(transition(from, trigger).is_err(), "{from:?} {trigger:?}");
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
