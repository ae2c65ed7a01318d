//! The console's sections and the navigation a signed-in operator sees (only what its role may
//! open), with the sign-out form.

use domain::operators::{Capability, Role};
use maud::{Markup, html};

/// A section of the console: one entry of the navigation. Only sections the console serves are
/// listed (docs/CONSOLE.md, Pages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    /// What needs attention, and the operator's session.
    Overview,
    /// Receivers waiting for a KYC decision.
    Kyc,
    /// Payouts: search, and each one's story.
    Payouts,
    /// Bank files and what the bank answered.
    BankFiles,
    /// The banks' answers: returns, notices of change, anomalies.
    Answers,
    /// Requests to confirm bank details: send a failed one again.
    Confirmations,
    /// The ledger check.
    Ledger,
    /// Subaccounts: balances, fees, keys, signature policy, webhook endpoint.
    Subaccounts,
    /// Webhook events: each subaccount's deliveries, resending.
    Webhooks,
    /// Crediting a subaccount's balance (admin).
    Funding,
    /// Operators (admin).
    Operators,
    /// The audit log (admin).
    Audit,
}

impl Section {
    /// Every section, in navigation order.
    pub const ALL: [Section; 12] = [
        Section::Overview,
        Section::Kyc,
        Section::Payouts,
        Section::BankFiles,
        Section::Answers,
        Section::Subaccounts,
        Section::Webhooks,
        Section::Confirmations,
        Section::Ledger,
        Section::Funding,
        Section::Operators,
        Section::Audit,
    ];

    /// Its path.
    pub const fn path(self) -> &'static str {
        match self {
            Section::Overview => "/",
            Section::Kyc => "/kyc",
            Section::Payouts => "/payouts",
            Section::BankFiles => "/files",
            Section::Ledger => "/ledger",
            Section::Answers => "/answers",
            Section::Confirmations => "/confirmations",
            Section::Subaccounts => "/subaccounts",
            Section::Webhooks => "/webhooks",
            Section::Funding => "/funding",
            Section::Operators => "/operators",
            Section::Audit => "/audit",
        }
    }

    /// Its name in the navigation.
    pub const fn label(self) -> &'static str {
        match self {
            Section::Overview => "Overview",
            Section::Kyc => "KYC queue",
            Section::Payouts => "Payouts",
            Section::BankFiles => "Bank files",
            Section::Ledger => "Ledger check",
            Section::Answers => "Bank answers",
            Section::Confirmations => "Confirmations",
            Section::Subaccounts => "Subaccounts",
            Section::Webhooks => "Webhooks",
            Section::Funding => "Funding",
            Section::Operators => "Operators",
            Section::Audit => "Audit log",
        }
    }

    /// What opening it needs.
    pub const fn capability(self) -> Capability {
        match self {
            Section::Overview
            | Section::Kyc
            | Section::Payouts
            | Section::BankFiles
            | Section::Answers
            | Section::Subaccounts
            | Section::Webhooks
            | Section::Confirmations
            | Section::Ledger => Capability::Read,
            Section::Funding => Capability::FundSubaccounts,
            Section::Operators => Capability::ManageOperators,
            Section::Audit => Capability::ReadAudit,
        }
    }
}

/// What the header of a signed-in page shows.
#[derive(Debug, Clone)]
pub struct Chrome {
    /// The operator's e-mail.
    pub email: String,
    /// Its role.
    pub role: Role,
    /// The CSRF token of its session (for the sign-out form).
    pub csrf: String,
    /// The section the page belongs to.
    pub current: Option<Section>,
}

/// The navigation and the operator's name with the sign-out button.
pub fn navigation(chrome: &Chrome) -> Markup {
    html! {
        nav.site-nav aria-label="Sections" {
            ul {
                @for section in Section::ALL.into_iter().filter(|s| chrome.role.allows(s.capability())) {
                    li {
                        @if chrome.current == Some(section) {
                            a href=(section.path()) aria-current="page" { (section.label()) }
                        } @else {
                            a href=(section.path()) { (section.label()) }
                        }
                    }
                }
            }
        }
        div.whoami {
            a href="/account" title="Your account and time zone" { (chrome.email) } span { " · " (chrome.role.as_str()) }
            form method="post" action="/logout" {
                input type="hidden" name="csrf" value=(chrome.csrf);
                button type="submit" { "Sign out" }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_role_sees_the_sections_it_may_open() {
        let links = |role| {
            let chrome = Chrome {
                email: "a@b.co".to_owned(),
                role,
                csrf: "t".to_owned(),
                current: Some(Section::Kyc),
            };
            navigation(&chrome).into_string()
        };
        let viewer = links(Role::Viewer);
        assert!(viewer.contains("href=\"/kyc\" aria-current=\"page\""));
        assert!(!viewer.contains("/operators") && !viewer.contains("/audit"));
        let admin = links(Role::Admin);
        assert!(admin.contains("/operators") && admin.contains("/audit"));
        assert!(admin.contains("name=\"csrf\" value=\"t\""));
    }

    #[test]
    fn paths_are_distinct() {
        let mut paths: Vec<&str> = Section::ALL.iter().map(|s| s.path()).collect();
        paths.sort_unstable();
        paths.dedup();
        assert_eq!(paths.len(), Section::ALL.len());
    }
}
