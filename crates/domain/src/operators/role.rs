//! What each console role may do: one table, [`Capability::minimum_role`], read by the console
//! for every route and by the navigation.

use std::fmt;

/// An operator's role. Each role may do everything the one before it may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// Reads every page, with account data masked as the API masks it.
    Viewer,
    /// Also decides KYC, cancels pending payouts, resends webhooks and confirmation requests,
    /// and downloads bank files.
    Operator,
    /// Also manages subaccounts, API keys, fees, webhook URLs, funding and operators, and reads
    /// the audit log.
    Admin,
}

impl Role {
    /// Every role, least powerful first.
    pub const ALL: [Role; 3] = [Role::Viewer, Role::Operator, Role::Admin];

    /// The stored and command-line name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Operator => "operator",
            Role::Admin => "admin",
        }
    }

    /// The role named `raw` (`viewer`, `operator` or `admin`).
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|role| role.as_str() == raw.trim())
    }

    /// Whether this role may do `capability`.
    pub fn allows(self, capability: Capability) -> bool {
        self >= capability.minimum_role()
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Something a console route does, named for the permission it needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Capability {
    /// Read every operational page (masked).
    Read,
    /// Approve or reject a receiver's KYC.
    DecideKyc,
    /// Cancel a payout that has not been sent.
    CancelPayouts,
    /// Queue webhook events for delivery again.
    ResendWebhooks,
    /// Send a failed confirmation request again.
    ResendConfirmations,
    /// Download a bank file's bytes as sent.
    DownloadBankFiles,
    /// Create subaccounts and set their signature policy.
    ManageSubaccounts,
    /// Issue and revoke API keys.
    ManageApiKeys,
    /// Set fee templates.
    ManageFees,
    /// Set webhook URLs and rotate webhook secrets.
    ManageWebhooks,
    /// Credit a subaccount's balance.
    FundSubaccounts,
    /// Create, disable and change the role of operators.
    ManageOperators,
    /// Read the audit log.
    ReadAudit,
}

impl Capability {
    /// Every capability.
    pub const ALL: [Capability; 13] = [
        Capability::Read,
        Capability::DecideKyc,
        Capability::CancelPayouts,
        Capability::ResendWebhooks,
        Capability::ResendConfirmations,
        Capability::DownloadBankFiles,
        Capability::ManageSubaccounts,
        Capability::ManageApiKeys,
        Capability::ManageFees,
        Capability::ManageWebhooks,
        Capability::FundSubaccounts,
        Capability::ManageOperators,
        Capability::ReadAudit,
    ];

    /// The least powerful role that may do it.
    pub const fn minimum_role(self) -> Role {
        match self {
            Capability::Read => Role::Viewer,
            Capability::DecideKyc
            | Capability::CancelPayouts
            | Capability::ResendWebhooks
            | Capability::ResendConfirmations
            | Capability::DownloadBankFiles => Role::Operator,
            Capability::ManageSubaccounts
            | Capability::ManageApiKeys
            | Capability::ManageFees
            | Capability::ManageWebhooks
            | Capability::FundSubaccounts
            | Capability::ManageOperators
            | Capability::ReadAudit => Role::Admin,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for role in Role::ALL {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse(" admin "), Some(Role::Admin));
        assert_eq!(Role::parse("Admin"), None);
        assert_eq!(Role::parse("root"), None);
    }

    #[test]
    fn the_issue_s_table() {
        use Capability::*;
        let table: [(Capability, [bool; 3]); 13] = [
            (Read, [true, true, true]),
            (DecideKyc, [false, true, true]),
            (CancelPayouts, [false, true, true]),
            (ResendWebhooks, [false, true, true]),
            (ResendConfirmations, [false, true, true]),
            (DownloadBankFiles, [false, true, true]),
            (ManageSubaccounts, [false, false, true]),
            (ManageApiKeys, [false, false, true]),
            (ManageFees, [false, false, true]),
            (ManageWebhooks, [false, false, true]),
            (FundSubaccounts, [false, false, true]),
            (ManageOperators, [false, false, true]),
            (ReadAudit, [false, false, true]),
        ];
        assert_eq!(table.len(), Capability::ALL.len());
        for (capability, allowed) in table {
            for (role, allowed) in Role::ALL.into_iter().zip(allowed) {
                assert_eq!(role.allows(capability), allowed, "{role} {capability:?}");
            }
        }
    }

    #[test]
    fn a_more_powerful_role_may_do_everything_a_lesser_one_may() {
        for capability in Capability::ALL {
            for pair in Role::ALL.windows(2) {
                assert!(!pair[0].allows(capability) || pair[1].allows(capability));
            }
        }
    }
}
