//! Sign-in throttling, per account and per client address. Failures are counted in fixed
//! windows in the store (so every instance sees them); once a subject has used its allowance
//! in a window, sign-in is refused for that subject until the window ends, whether or not the
//! password would have been right. Subjects exist for e-mail addresses that name no operator as
//! well, so a throttled answer tells nothing about whether an account exists.

use std::net::IpAddr;

use chrono::{DateTime, Duration, Utc};

/// What failures are counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ThrottleSubject(String);

impl ThrottleSubject {
    /// The account an e-mail address names (whether or not it exists), by its normalised form.
    pub fn account(email_key: &str) -> Self {
        Self(format!("account:{email_key}"))
    }

    /// A client address: an IPv4 address, or an IPv6 address's /64 network (one host
    /// usually holds a whole /64, so counting single IPv6 addresses would count nothing).
    pub fn address(address: IpAddr) -> Self {
        match address {
            IpAddr::V4(v4) => Self(format!("address:{v4}")),
            IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
                Some(v4) => Self(format!("address:{v4}")),
                None => {
                    let s = v6.segments();
                    Self(format!(
                        "address:{:x}:{:x}:{:x}:{:x}::/64",
                        s[0], s[1], s[2], s[3]
                    ))
                }
            },
        }
    }

    /// The stored key.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Failures allowed in a window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottleLimit {
    /// Failures allowed.
    pub failures: u32,
    /// How long a window lasts from its first failure.
    pub window: Duration,
}

/// The limits per account and per client address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ThrottlePolicy {
    /// Per account: few, as a person mistypes a few times at most.
    pub account: ThrottleLimit,
    /// Per client address: more, as offices share an address.
    pub address: ThrottleLimit,
}

impl Default for ThrottlePolicy {
    /// 5 failures per account and 20 per address, in 15-minute windows.
    fn default() -> Self {
        Self {
            account: ThrottleLimit {
                failures: 5,
                window: Duration::minutes(15),
            },
            address: ThrottleLimit {
                failures: 20,
                window: Duration::minutes(15),
            },
        }
    }
}

/// A subject's failures in its current window, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureWindow {
    /// Failures counted.
    pub failures: u32,
    /// When the window's first failure happened.
    pub started_at: DateTime<Utc>,
}

impl ThrottleLimit {
    /// Until when a subject with `window` is refused at `now`; `None` when it may try.
    pub fn blocked_until(
        &self,
        window: &FailureWindow,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let ends = window.started_at + self.window;
        (now < ends && window.failures >= self.failures).then_some(ends)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000, 0).unwrap_or_default() + Duration::minutes(minutes)
    }

    #[test]
    fn a_subject_is_refused_once_its_allowance_is_used_until_the_window_ends() {
        let limit = ThrottlePolicy::default().account;
        let window = |failures| FailureWindow {
            failures,
            started_at: at(0),
        };
        assert_eq!(limit.blocked_until(&window(4), at(1)), None);
        assert_eq!(limit.blocked_until(&window(5), at(1)), Some(at(15)));
        assert_eq!(limit.blocked_until(&window(50), at(14)), Some(at(15)));
        assert_eq!(limit.blocked_until(&window(50), at(15)), None);
    }

    #[test]
    fn subjects_name_accounts_and_addresses() {
        assert_eq!(
            ThrottleSubject::account("ann@example.com").as_str(),
            "account:ann@example.com"
        );
        let v4: IpAddr = "192.0.2.7".parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        assert_eq!(ThrottleSubject::address(v4).as_str(), "address:192.0.2.7");
        let mapped: IpAddr = "::ffff:192.0.2.7".parse().unwrap_or(v4);
        assert_eq!(
            ThrottleSubject::address(mapped).as_str(),
            "address:192.0.2.7"
        );
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap_or(v4);
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap_or(v4);
        assert_eq!(ThrottleSubject::address(a), ThrottleSubject::address(b));
        assert_eq!(
            ThrottleSubject::address(a).as_str(),
            "address:2001:db8:1:2::/64"
        );
    }
}
