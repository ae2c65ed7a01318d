//! Account statuses (seed §3.4, contract §5.6): a new account is `pending`/`unconfirmed`;
//! confirmation makes it `completed`/`confirmed`; a payout failing because the receiver's
//! details are invalid makes it `failed` (payouts work).

/// Whether an account can be paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AccountStatus {
    /// Created, not yet confirmed.
    Pending,
    /// Confirmed by the receiver.
    Completed,
    /// Known not to work; cannot receive new payouts.
    Failed,
}

/// Whether the receiver confirmed the details sent to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ConfirmStatus {
    /// Not yet confirmed.
    Unconfirmed,
    /// Confirmed.
    Confirmed,
}

impl AccountStatus {
    /// Every status.
    pub const ALL: [AccountStatus; 3] = [
        AccountStatus::Pending,
        AccountStatus::Completed,
        AccountStatus::Failed,
    ];

    /// The wire and stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            AccountStatus::Pending => "pending",
            AccountStatus::Completed => "completed",
            AccountStatus::Failed => "failed",
        }
    }

    /// The status with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

impl ConfirmStatus {
    /// Every status.
    pub const ALL: [ConfirmStatus; 2] = [ConfirmStatus::Unconfirmed, ConfirmStatus::Confirmed];

    /// The wire and stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            ConfirmStatus::Unconfirmed => "unconfirmed",
            ConfirmStatus::Confirmed => "confirmed",
        }
    }

    /// The status with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// Confirming an account: only an `unconfirmed` account that has not failed can be confirmed,
/// once; it becomes `completed`/`confirmed`.
pub fn confirm(
    status: AccountStatus,
    confirm: ConfirmStatus,
) -> Option<(AccountStatus, ConfirmStatus)> {
    match (status, confirm) {
        (AccountStatus::Pending, ConfirmStatus::Unconfirmed) => {
            Some((AccountStatus::Completed, ConfirmStatus::Confirmed))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in AccountStatus::ALL {
            assert_eq!(AccountStatus::parse(s.as_str()), Some(s));
        }
        for s in ConfirmStatus::ALL {
            assert_eq!(ConfirmStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(AccountStatus::parse("active"), None);
    }

    #[test]
    fn only_a_pending_unconfirmed_account_can_be_confirmed() {
        for status in AccountStatus::ALL {
            for c in ConfirmStatus::ALL {
                let expected = (status == AccountStatus::Pending
                    && c == ConfirmStatus::Unconfirmed)
                    .then_some((AccountStatus::Completed, ConfirmStatus::Confirmed));
                assert_eq!(confirm(status, c), expected, "{status:?} {c:?}");
            }
        }
    }
}
