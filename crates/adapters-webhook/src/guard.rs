//! The SSRF guard of contract §8.2: a postback URL must not reach the service's own network.
//!
//! Two checks, both before any connection is made:
//! - [`check_url`] parses the URL (http and https only) and, when its host is a literal IP
//!   address, classifies that address directly;
//! - [`GuardedResolver`] is the HTTP client's DNS resolver: it resolves a host name and refuses
//!   it when any of its addresses is forbidden. The client connects only to the addresses the
//!   resolver returned, so a DNS answer that changes between check and connect (rebinding)
//!   cannot slip a private address past the check.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use reqwest::Url;
use reqwest::dns::{Addrs, Name, Resolve, Resolving};

/// Why an address may not be a webhook target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForbiddenRange {
    /// 127.0.0.0/8, ::1.
    Loopback,
    /// 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7 (and the deprecated fec0::/10).
    Private,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
    /// 0.0.0.0/8, ::.
    Unspecified,
    /// 255.255.255.255.
    Broadcast,
    /// 100.64.0.0/10, carrier-grade NAT space.
    SharedCgnat,
}

impl fmt::Display for ForbiddenRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Loopback => "loopback",
            Self::Private => "private",
            Self::LinkLocal => "link-local",
            Self::Unspecified => "unspecified",
            Self::Broadcast => "broadcast",
            Self::SharedCgnat => "shared (CGNAT)",
        })
    }
}

/// The forbidden range `ip` falls in, or `None` when it may be a webhook target. An
/// IPv4-mapped IPv6 address (`::ffff:a.b.c.d`) is judged as the IPv4 address it maps.
pub fn forbidden_range(ip: IpAddr) -> Option<ForbiddenRange> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => forbidden_v4(v4),
            None => forbidden_v6(v6),
        },
    }
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<ForbiddenRange> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some(ForbiddenRange::Loopback)
    } else if ip.is_private() {
        Some(ForbiddenRange::Private)
    } else if ip.is_link_local() {
        Some(ForbiddenRange::LinkLocal)
    } else if a == 0 {
        // The whole "this network" block: Linux connects 0.0.0.0 to the local host.
        Some(ForbiddenRange::Unspecified)
    } else if ip.is_broadcast() {
        Some(ForbiddenRange::Broadcast)
    } else if a == 100 && (b & 0b1100_0000) == 64 {
        Some(ForbiddenRange::SharedCgnat)
    } else {
        None
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<ForbiddenRange> {
    let first = ip.segments()[0];
    if ip.is_loopback() {
        Some(ForbiddenRange::Loopback)
    } else if ip.is_unspecified() {
        Some(ForbiddenRange::Unspecified)
    } else if (first & 0xfe00) == 0xfc00 || (first & 0xffc0) == 0xfec0 {
        Some(ForbiddenRange::Private)
    } else if (first & 0xffc0) == 0xfe80 {
        Some(ForbiddenRange::LinkLocal)
    } else {
        None
    }
}

/// Why a target was refused before any connection. Its text names the host and the address,
/// never the rest of the URL (which may carry credentials).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetRefused {
    /// Not a URL at all.
    #[error("the postback URL is malformed: {0}")]
    Malformed(String),
    /// A scheme other than http or https.
    #[error("the postback URL's scheme {0:?} is not http or https")]
    Scheme(String),
    /// No host to connect to.
    #[error("the postback URL has no host")]
    NoHost,
    /// The host is a literal forbidden address.
    #[error("{addr} is a {range} address")]
    ForbiddenAddress {
        /// The address.
        addr: IpAddr,
        /// Its range.
        range: ForbiddenRange,
    },
    /// The host name resolves to a forbidden address.
    #[error("{host} resolves to {addr}, a {range} address")]
    ForbiddenName {
        /// The URL's host.
        host: String,
        /// The offending address.
        addr: IpAddr,
        /// Its range.
        range: ForbiddenRange,
    },
}

/// Parses `raw` as a webhook target: http or https, with a host that, when it is a literal IP
/// address, is allowed. Host names are checked later, by [`GuardedResolver`], when they are
/// resolved for the connection.
pub fn check_url(raw: &str, allow_private: bool) -> Result<Url, TargetRefused> {
    // The parse error's text describes the problem without repeating the URL.
    let url = Url::parse(raw).map_err(|e| TargetRefused::Malformed(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TargetRefused::Scheme(url.scheme().to_owned()));
    }
    let host = url.host_str().ok_or(TargetRefused::NoHost)?;
    // The parser has already normalised IP literals (`2130706433` is `127.0.0.1`); IPv6 ones
    // keep their brackets.
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(addr) = bare.parse::<IpAddr>()
        && !allow_private
        && let Some(range) = forbidden_range(addr)
    {
        return Err(TargetRefused::ForbiddenAddress { addr, range });
    }
    Ok(url)
}

/// The HTTP client's DNS resolver: resolves with the system resolver and fails with
/// [`TargetRefused::ForbiddenName`] when ANY address of the host is forbidden (one forbidden
/// address is enough: the client may pick any of them).
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    allow_private: bool,
}

impl GuardedResolver {
    /// A resolver that refuses forbidden addresses unless `allow_private`.
    pub const fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }

    /// Resolves `host` and checks every address.
    pub async fn resolve_checked(
        &self,
        host: &str,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        // Port 0: the client replaces it with the URL's port.
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        if !self.allow_private {
            for addr in &addrs {
                if let Some(range) = forbidden_range(addr.ip()) {
                    return Err(Box::new(TargetRefused::ForbiddenName {
                        host: host.to_owned(),
                        addr: addr.ip(),
                        range,
                    }));
                }
            }
        }
        Ok(addrs)
    }
}

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let resolver = *self;
        Box::pin(async move {
            let addrs = resolver.resolve_checked(name.as_str()).await?;
            Ok(Box::new(addrs.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(ip: &str) -> Option<ForbiddenRange> {
        match ip.parse::<IpAddr>() {
            Ok(ip) => forbidden_range(ip),
            Err(e) => panic!("{ip}: {e}"),
        }
    }

    #[test]
    fn loopback_v4_and_v6() {
        for ip in ["127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1"] {
            assert_eq!(range(ip), Some(ForbiddenRange::Loopback), "{ip}");
        }
    }

    #[test]
    fn private_v4_and_v6() {
        for ip in [
            "10.0.0.1",
            "10.255.255.255",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.0.1",
            "192.168.255.255",
            "fc00::1",
            "fd12:3456:789a::1",
            "fec0::1",
            "::ffff:10.1.2.3",
            "::ffff:172.20.0.1",
            "::ffff:192.168.1.1",
        ] {
            assert_eq!(range(ip), Some(ForbiddenRange::Private), "{ip}");
        }
    }

    #[test]
    fn link_local_v4_and_v6() {
        for ip in [
            "169.254.0.1",
            "169.254.169.254",
            "fe80::1",
            "febf::1",
            "::ffff:169.254.169.254",
        ] {
            assert_eq!(range(ip), Some(ForbiddenRange::LinkLocal), "{ip}");
        }
    }

    #[test]
    fn unspecified_v4_and_v6() {
        for ip in ["0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0"] {
            assert_eq!(range(ip), Some(ForbiddenRange::Unspecified), "{ip}");
        }
    }

    #[test]
    fn broadcast() {
        for ip in ["255.255.255.255", "::ffff:255.255.255.255"] {
            assert_eq!(range(ip), Some(ForbiddenRange::Broadcast), "{ip}");
        }
    }

    #[test]
    fn cgnat() {
        for ip in [
            "100.64.0.1",
            "100.127.255.255",
            "::ffff:100.64.0.1",
            "::ffff:100.100.100.100",
        ] {
            assert_eq!(range(ip), Some(ForbiddenRange::SharedCgnat), "{ip}");
        }
    }

    #[test]
    fn public_addresses_and_range_neighbours_are_allowed() {
        for ip in [
            "93.184.215.14",
            "8.8.8.8",
            "1.1.1.1",
            "9.255.255.255",
            "11.0.0.0",
            "172.15.255.255",
            "172.32.0.0",
            "192.167.255.255",
            "192.169.0.0",
            "169.253.255.255",
            "169.255.0.0",
            "100.63.255.255",
            "100.128.0.0",
            "126.255.255.255",
            "128.0.0.0",
            "255.255.255.254",
            "2606:4700:4700::1111",
            "2001:4860:4860::8888",
            "fbff:ffff::1",
            "fe00::1",
            "ff02::1",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(range(ip), None, "{ip}");
        }
    }

    #[test]
    fn literal_hosts_are_checked_directly() {
        for url in [
            "http://127.0.0.1:8080/hook",
            "https://10.0.0.5/",
            "http://[::1]/",
            "http://[::ffff:192.168.0.1]/",
            "http://[fe80::1]/",
            "http://0.0.0.0/",
            // WHATWG URL parsing turns these into 127.0.0.1.
            "http://2130706433/",
            "http://0x7f.1/",
        ] {
            assert!(
                matches!(
                    check_url(url, false),
                    Err(TargetRefused::ForbiddenAddress { .. })
                ),
                "{url}"
            );
            assert!(check_url(url, true).is_ok(), "{url}");
        }
        assert!(check_url("https://93.184.215.14/hook", false).is_ok());
        assert!(check_url("https://[2606:4700:4700::1111]/hook", false).is_ok());
    }

    #[test]
    fn only_http_urls_with_a_host() {
        assert!(matches!(
            check_url("ftp://example.com/", true),
            Err(TargetRefused::Scheme(_))
        ));
        assert!(matches!(
            check_url("file:///etc/passwd", true),
            Err(TargetRefused::Scheme(_))
        ));
        assert!(matches!(
            check_url("not a url", true),
            Err(TargetRefused::Malformed(_))
        ));
        assert!(matches!(
            check_url("http://", true),
            Err(TargetRefused::Malformed(_))
        ));
        assert!(check_url("https://hooks.example.com/payout", false).is_ok());
    }

    #[test]
    fn refusals_never_repeat_the_url_credentials() {
        let refused = check_url("http://user:hunter2@127.0.0.1/?token=abc", false);
        let text = refused
            .map(|_| String::new())
            .unwrap_or_else(|e| e.to_string());
        assert!(
            text.contains("127.0.0.1") && text.contains("loopback"),
            "{text}"
        );
        assert!(!text.contains("hunter2") && !text.contains("abc"), "{text}");
    }

    #[tokio::test]
    async fn the_resolver_refuses_names_of_forbidden_addresses() {
        let refused = GuardedResolver::new(false)
            .resolve_checked("localhost")
            .await;
        let err = refused.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(err.contains("loopback"), "{err}");
        let allowed = GuardedResolver::new(true)
            .resolve_checked("localhost")
            .await;
        assert!(allowed.is_ok_and(|addrs| !addrs.is_empty()));
    }
}
