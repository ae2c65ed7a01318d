//! Account statuses (docs/API.md, Receiver accounts): a new account is `pending`/`unconfirmed`;
//! confirmation makes it `completed`/`confirmed`; a payout failing because the receiver's
//! details are invalid makes it `failed` (payouts work).

use strum::{EnumString, IntoStaticStr, VariantArray};

/// Whether an account can be paid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(const_into_str)]
pub enum AccountStatus {
    /// Created, not yet confirmed.
    #[strum(serialize = "pending")]
    Pending,
    /// Confirmed by the receiver.
    #[strum(serialize = "completed")]
    Completed,
    /// Known not to work; cannot receive new payouts.
    #[strum(serialize = "failed")]
    Failed,
}

/// Whether the receiver confirmed the details sent to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, VariantArray, IntoStaticStr, EnumString)]
#[strum(const_into_str)]
pub enum ConfirmStatus {
    /// Not yet confirmed.
    #[strum(serialize = "unconfirmed")]
    Unconfirmed,
    /// Confirmed.
    #[strum(serialize = "confirmed")]
    Confirmed,
}

impl AccountStatus {
    /// Every status.
    pub const ALL: &'static [AccountStatus] = Self::VARIANTS;

    /// The wire and stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The status with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
    }
}

impl ConfirmStatus {
    /// Every status.
    pub const ALL: &'static [ConfirmStatus] = Self::VARIANTS;

    /// The wire and stored name.
    pub const fn as_str(self) -> &'static str {
        self.into_str()
    }

    /// The status with this name.
    pub fn parse(raw: &str) -> Option<Self> {
        raw.parse().ok()
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
        for &s in AccountStatus::ALL {
            assert_eq!(AccountStatus::parse(s.as_str()), Some(s));
        }
        for &s in ConfirmStatus::ALL {
            assert_eq!(ConfirmStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(AccountStatus::parse("active"), None);
    }

    #[test]
    fn only_a_pending_unconfirmed_account_can_be_confirmed() {
        for &status in AccountStatus::ALL {
            for &c in ConfirmStatus::ALL {
                let expected = (status == AccountStatus::Pending
                    && c == ConfirmStatus::Unconfirmed)
                    .then_some((AccountStatus::Completed, ConfirmStatus::Confirmed));
                assert_eq!(confirm(status, c), expected, "{status:?} {c:?}");
            }
        }
    }
}
