//! The people who use the operator console: their accounts (created by `payoutd admin
//! create-operator`, enrolled through a one-time link), roles, sessions and sign-in throttling.
//! The console and the CLI call [`service::OperatorService`]; the rules live here, the stores
//! behind [`ports`].

pub mod password;
pub mod ports;
pub mod role;
pub mod service;
pub mod session;
pub mod throttle;
pub mod time_zone;
pub mod totp;

use chrono::{DateTime, Utc};

use crate::ids::OperatorId;
use crate::receiver::values::EmailAddress;

pub use password::{NewPassword, PasswordError, PasswordHash, PasswordHasher};
pub use role::{Capability, Role};
pub use session::{BrowserSecret, Session, SessionPolicy, SessionVerdict, TokenHash};
pub use throttle::{FailureWindow, ThrottleLimit, ThrottlePolicy, ThrottleSubject};
pub use time_zone::OperatorTimeZone;
pub use totp::TotpSecret;

/// Where an operator's account stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OperatorStatus {
    /// Created; the enrolment link is not used yet. Cannot sign in.
    Invited,
    /// Enrolled: may sign in.
    Active,
    /// Disabled by an admin: cannot sign in, sessions ended.
    Disabled,
}

impl OperatorStatus {
    /// Every status.
    pub const ALL: [OperatorStatus; 3] = [Self::Invited, Self::Active, Self::Disabled];

    /// The stored name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Invited => "invited",
            Self::Active => "active",
            Self::Disabled => "disabled",
        }
    }

    /// The status stored as `raw`.
    pub fn parse(raw: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == raw)
    }
}

/// An operator's e-mail address, the sign-in name: trimmed and lower-cased, so `Ann@Example.com`
/// and `ann@example.com` are one account.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OperatorEmail(String);

impl OperatorEmail {
    /// Parses and normalises `raw`; `None` when it is not an e-mail address.
    pub fn parse(raw: &str) -> Option<Self> {
        EmailAddress::parse(raw)
            .ok()
            .map(|email| Self(email.as_str().to_lowercase()))
    }

    /// The normalised address.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An operator as stored (secrets opened by the store).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Operator {
    /// Its id.
    pub id: OperatorId,
    /// The sign-in name.
    pub email: OperatorEmail,
    /// What it may do.
    pub role: Role,
    /// Where the account stands.
    pub status: OperatorStatus,
    /// The password's hash, once enrolled.
    pub password_hash: Option<PasswordHash>,
    /// The TOTP secret (made when the operator is created, shown on the enrolment page).
    pub totp_secret: TotpSecret,
    /// The last TOTP step accepted (each is accepted once).
    pub last_totp_step: Option<u64>,
    /// The zone the console shows it times in.
    pub time_zone: OperatorTimeZone,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it enrolled.
    pub enrolled_at: Option<DateTime<Utc>>,
    /// When it was disabled.
    pub disabled_at: Option<DateTime<Utc>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn e_mail_addresses_are_one_account_whatever_their_case() {
        assert_eq!(
            OperatorEmail::parse(" Ann@Example.COM ").map(|e| e.0),
            Some("ann@example.com".to_owned())
        );
        assert_eq!(OperatorEmail::parse("not an address"), None);
    }

    #[test]
    fn statuses_round_trip() {
        for status in OperatorStatus::ALL {
            assert_eq!(OperatorStatus::parse(status.as_str()), Some(status));
        }
    }
}
