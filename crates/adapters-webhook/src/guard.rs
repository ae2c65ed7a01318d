//! The SSRF guard (docs/WEBHOOKS.md, Which webhook targets are refused): a postback URL must not
//! reach the service's own network, nor any address that is not a globally reachable unicast host.
//!
//! Two checks, both before any connection is made, and one decision, [`refused_range`]:
//! - [`check_url`] parses the URL (http and https only, no credentials, a usable port) and,
//!   when its host is a literal IP address, judges that address directly;
//! - [`GuardedResolver`] is the HTTP client's DNS resolver: it resolves a host name and refuses
//!   it when any of its addresses is refused ([`GuardedResolver::check_resolved`]). The client
//!   connects only to the addresses the resolver returned, so a DNS answer that changes between
//!   check and connect (rebinding) cannot slip a private address past the check.
//!
//! # What is refused
//!
//! The ranges follow the IANA IPv4 Special-Purpose Address Registry and the IANA IPv6
//! Special-Purpose Address Registry (RFC 6890 and the RFCs each entry names): every block the
//! registry does not mark "globally reachable" is refused, and the registry's globally
//! reachable exceptions inside refused blocks stay allowed. Multicast (from the IANA multicast
//! registries) and, for IPv6, everything outside the global unicast space 2000::/3 that no
//! entry names (the IANA IPv6 Address Space registry: reserved by the IETF) are refused too.
//! The most specific block decides.
//!
//! IPv4:
//!
//! | Block              | Registry name                          | RFC            | Verdict                 |
//! |--------------------|----------------------------------------|----------------|-------------------------|
//! | 0.0.0.0/8          | "This network" (0.0.0.0/32 this host)  | 791, 1122      | `Unspecified`           |
//! | 10.0.0.0/8         | Private-Use                            | 1918           | `Private`               |
//! | 100.64.0.0/10      | Shared Address Space                   | 6598           | `SharedCgnat`           |
//! | 127.0.0.0/8        | Loopback                               | 1122           | `Loopback`              |
//! | 169.254.0.0/16     | Link Local                             | 3927           | `LinkLocal`             |
//! | 172.16.0.0/12      | Private-Use                            | 1918           | `Private`               |
//! | 192.0.0.0/24       | IETF Protocol Assignments              | 6890           | `ProtocolAssignments`   |
//! | 192.0.0.0/29       | IPv4 Service Continuity Prefix         | 7335           | `ProtocolAssignments`   |
//! | 192.0.0.8/32       | IPv4 dummy address                     | 7600           | `ProtocolAssignments`   |
//! | 192.0.0.9/32       | Port Control Protocol Anycast          | 7723           | allowed (global)        |
//! | 192.0.0.10/32      | Traversal Using Relays around NAT Anycast | 8155        | allowed (global)        |
//! | 192.0.0.170/32, 192.0.0.171/32 | NAT64/DNS64 Discovery      | 8880, 7050     | `ProtocolAssignments`   |
//! | 192.0.2.0/24       | Documentation (TEST-NET-1)             | 5737           | `Documentation`         |
//! | 192.31.196.0/24    | AS112-v4                               | 7535           | allowed (global)        |
//! | 192.52.193.0/24    | AMT                                    | 7450           | allowed (global)        |
//! | 192.88.99.0/24     | Deprecated (6to4 Relay Anycast)        | 7526           | `Deprecated`            |
//! | 192.88.99.2/32     | 6a44-relay anycast address             | 6751           | `Deprecated`            |
//! | 192.168.0.0/16     | Private-Use                            | 1918           | `Private`               |
//! | 192.175.48.0/24    | Direct Delegation AS112 Service        | 7534           | allowed (global)        |
//! | 198.18.0.0/15      | Benchmarking                           | 2544           | `Benchmarking`          |
//! | 198.51.100.0/24    | Documentation (TEST-NET-2)             | 5737           | `Documentation`         |
//! | 203.0.113.0/24     | Documentation (TEST-NET-3)             | 5737           | `Documentation`         |
//! | 224.0.0.0/4        | Multicast (IPv4 Multicast Address Space registry) | 5771 | `Multicast`           |
//! | 240.0.0.0/4        | Reserved                               | 1112           | `Reserved`              |
//! | 255.255.255.255/32 | Limited Broadcast                      | 8190, 919      | `Broadcast`             |
//!
//! IPv6 (forms that embed an IPv4 address are judged by that address, see below):
//!
//! | Block              | Registry name                          | RFC            | Verdict                 |
//! |--------------------|----------------------------------------|----------------|-------------------------|
//! | ::/128             | Unspecified Address                    | 4291           | `Unspecified`           |
//! | ::1/128            | Loopback Address                       | 4291           | `Loopback`              |
//! | ::/96              | IPv4-compatible (deprecated, no longer listed) | 4291 §2.5.5.1 | embedded, else `Deprecated` |
//! | ::ffff:0:0/96      | IPv4-mapped Address                    | 4291           | embedded IPv4's verdict |
//! | ::ffff:0:0:0/96    | IPv4-translated (SIIT, obsolete, not listed) | 2765     | embedded, else `Deprecated` |
//! | 64:ff9b::/96       | IPv4-IPv6 Translat. (global)           | 6052           | embedded IPv4's verdict |
//! | 64:ff9b:1::/48     | IPv4-IPv6 Translat. (local use)        | 8215           | embedded, else `Nat64LocalUse` |
//! | 100::/64           | Discard-Only Address Block             | 6666           | `Reserved`              |
//! | 100:0:0:1::/64     | Dummy IPv6 Prefix                      | 9780           | `Reserved`              |
//! | 2001::/23          | IETF Protocol Assignments              | 2928           | `ProtocolAssignments`   |
//! | 2001::/32          | TEREDO                                 | 4380, 8190     | embedded IPv4s' verdict |
//! | 2001:1::1/128      | Port Control Protocol Anycast          | 7723           | allowed (global)        |
//! | 2001:1::2/128      | Traversal Using Relays around NAT Anycast | 8155        | allowed (global)        |
//! | 2001:1::3/128      | DNS-SD Service Registration Protocol Anycast | 9665     | allowed (global)        |
//! | 2001:2::/48        | Benchmarking                           | 5180           | `Benchmarking`          |
//! | 2001:3::/32        | AMT                                    | 7450           | allowed (global)        |
//! | 2001:4:112::/48    | AS112-v6                               | 7535           | allowed (global)        |
//! | 2001:10::/28       | Deprecated (previously ORCHID)         | 4843           | `Deprecated`            |
//! | 2001:20::/28       | ORCHIDv2                               | 7343           | allowed (global)        |
//! | 2001:30::/28       | Drone Remote ID Protocol Entity Tags (DETs) Prefix | 9374 | allowed (global)     |
//! | 2001:db8::/32      | Documentation                          | 3849           | `Documentation`         |
//! | 2002::/16          | 6to4                                   | 3056           | embedded IPv4's verdict |
//! | 2620:4f:8000::/48  | Direct Delegation AS112 Service        | 7534           | allowed (global)        |
//! | 3fff::/20          | Documentation                          | 9637           | `Documentation`         |
//! | 5f00::/16          | Segment Routing (SRv6) SIDs            | 9602           | `Reserved`              |
//! | fc00::/7           | Unique-Local                           | 4193, 8190     | `Private`               |
//! | fe80::/10          | Link-Local Unicast                     | 4291           | `LinkLocal`             |
//! | fec0::/10          | Site-local (deprecated, not listed)    | 3879           | `Private`               |
//! | ff00::/8           | Multicast (IPv6 Multicast Address Space registry) | 4291 | `Multicast`          |
//! | outside 2000::/3   | Reserved by IETF (IPv6 Address Space registry) | 4291 §2.4 | `Reserved`         |
//!
//! # Embedded IPv4
//!
//! An IPv6 address that carries an IPv4 address reaches (through the host's stack, a
//! translator or a relay) the host of that IPv4 address, so a refused IPv4 part refuses the
//! IPv6 address, with the IPv4 part's range:
//! - IPv4-mapped `::ffff:a.b.c.d` and the NAT64 well-known prefix `64:ff9b::a.b.c.d` (RFC 6052
//!   forbids it for non-global IPv4) are allowed exactly when the IPv4 address is;
//! - 6to4 `2002:AABB:CCDD::/48` carries its IPv4 in bits 16–47; Teredo `2001:0:SSSS:SSSS::`
//!   carries its server's IPv4 in bits 32–63 and its client's, inverted, in the last 32 bits:
//!   both must be allowed. The registry gives neither block a "globally reachable" value, so
//!   with allowed IPv4 parts they are allowed;
//! - IPv4-compatible `::a.b.c.d` (deprecated by RFC 4291) and IPv4-translated
//!   `::ffff:0:a.b.c.d` (RFC 2765, dropped by RFC 6145) lie in the reserved `::/8` and are never
//!   globally reachable: refused always, with the IPv4 part's range when it has one;
//! - the NAT64 local-use prefix 64:ff9b:1::/48 is not globally reachable: refused always, with
//!   the range of the IPv4 in the last 32 bits (the /96 layout) when that is refused.
//!
//! # Private targets allowed
//!
//! With `allow_private` (sandbox and local development), every range is allowed except those
//! that are never a webhook receiver: unspecified, broadcast and multicast
//! ([`ForbiddenRange::is_never_a_receiver`]).

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
    /// 224.0.0.0/4, ff00::/8: a group, never one receiver.
    Multicast,
    /// 192.0.0.0/24 and 2001::/23, IETF protocol assignments, but for their globally reachable
    /// entries.
    ProtocolAssignments,
    /// 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, 2001:db8::/32, 3fff::/20.
    Documentation,
    /// 198.18.0.0/15, 2001:2::/48.
    Benchmarking,
    /// 240.0.0.0/4; IPv6 outside 2000::/3 that no other range names, 100::/64 (discard-only),
    /// 100:0:0:1::/64 (dummy prefix), 5f00::/16 (SRv6 SIDs).
    Reserved,
    /// Retired blocks: 192.88.99.0/24 (6to4 relay anycast), 2001:10::/28 (ORCHID), and the
    /// IPv4-compatible `::/96` and IPv4-translated `::ffff:0:0:0/96` forms.
    Deprecated,
    /// 64:ff9b:1::/48, a NAT64 prefix for one network's own translators.
    Nat64LocalUse,
}

impl ForbiddenRange {
    /// Whether the range is never one host that could receive a webhook (unspecified,
    /// broadcast, multicast): refused even when private targets are allowed.
    pub const fn is_never_a_receiver(self) -> bool {
        matches!(self, Self::Unspecified | Self::Broadcast | Self::Multicast)
    }

    /// Whether the range is a network's own space, where a receiver of a local setup would
    /// be (loopback, private, link-local, shared CGNAT): the ranges that `allow_private` is
    /// for. Documentation, benchmarking, reserved and the like are refused for being nobody's
    /// receiver, not for being private.
    pub const fn is_private_network(self) -> bool {
        match self {
            Self::Loopback | Self::Private | Self::LinkLocal | Self::SharedCgnat => true,
            Self::Unspecified
            | Self::Broadcast
            | Self::Multicast
            | Self::ProtocolAssignments
            | Self::Documentation
            | Self::Benchmarking
            | Self::Reserved
            | Self::Deprecated
            | Self::Nat64LocalUse => false,
        }
    }

    /// "a" or "an", for the range's name.
    const fn article(self) -> &'static str {
        match self {
            Self::Unspecified | Self::Nat64LocalUse => "an",
            _ => "a",
        }
    }
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
            Self::Multicast => "multicast",
            Self::ProtocolAssignments => "protocol-assignment",
            Self::Documentation => "documentation",
            Self::Benchmarking => "benchmarking",
            Self::Reserved => "reserved",
            Self::Deprecated => "deprecated",
            Self::Nat64LocalUse => "NAT64 local-use",
        })
    }
}

/// What a block of the tables below says about its addresses.
#[derive(Debug, Clone, Copy)]
enum Verdict {
    /// A globally reachable block (an exception inside a refused one, or global unicast).
    Allowed,
    /// Refused, in this range.
    Refused(ForbiddenRange),
    /// Judged by the IPv4 address the IPv6 address carries.
    Embeds(Embedding),
}

/// Where an IPv6 form carries an IPv4 address.
#[derive(Debug, Clone, Copy)]
enum Embedding {
    /// `::a.b.c.d`, deprecated: refused whatever it carries.
    Compatible,
    /// `::ffff:a.b.c.d`: the host's stack connects to the IPv4 address itself.
    Mapped,
    /// `::ffff:0:a.b.c.d`, obsolete: refused whatever it carries.
    Translated,
    /// `64:ff9b::a.b.c.d`: a NAT64 translator connects to the IPv4 address.
    Nat64WellKnown,
    /// `64:ff9b:1::/48`: refused whatever it carries.
    Nat64LocalUse,
    /// `2002:AABB:CCDD::/48`: a 6to4 relay reaches the IPv4 address in bits 16–47.
    SixToFour,
    /// `2001:0:SSSS:SSSS:…:CCCC:CCCC`: the server's IPv4 in bits 32–63, the client's inverted
    /// in the last 32 bits.
    Teredo,
}

/// An IPv4 block: the network's bits, its prefix length and its verdict.
type V4Block = (u32, u8, Verdict);
/// An IPv6 block: the network's bits, its prefix length and its verdict.
type V6Block = (u128, u8, Verdict);

const fn v4(a: u8, b: u8, c: u8, d: u8) -> u32 {
    Ipv4Addr::new(a, b, c, d).to_bits()
}

#[allow(clippy::too_many_arguments)]
const fn v6(a: u16, b: u16, c: u16, d: u16, e: u16, f: u16, g: u16, h: u16) -> u128 {
    Ipv6Addr::new(a, b, c, d, e, f, g, h).to_bits()
}

use ForbiddenRange as R;

/// The IPv4 blocks, most specific first (the first that holds an address decides); an address
/// in none of them is allowed.
// One block a line, as in the registries.
#[rustfmt::skip]
const V4_BLOCKS: &[V4Block] = &[
    (v4(192, 0, 0, 9), 32, Verdict::Allowed),
    (v4(192, 0, 0, 10), 32, Verdict::Allowed),
    (v4(255, 255, 255, 255), 32, Verdict::Refused(R::Broadcast)),
    (v4(0, 0, 0, 0), 8, Verdict::Refused(R::Unspecified)),
    (v4(10, 0, 0, 0), 8, Verdict::Refused(R::Private)),
    (v4(100, 64, 0, 0), 10, Verdict::Refused(R::SharedCgnat)),
    (v4(127, 0, 0, 0), 8, Verdict::Refused(R::Loopback)),
    (v4(169, 254, 0, 0), 16, Verdict::Refused(R::LinkLocal)),
    (v4(172, 16, 0, 0), 12, Verdict::Refused(R::Private)),
    (v4(192, 0, 0, 0), 24, Verdict::Refused(R::ProtocolAssignments)),
    (v4(192, 0, 2, 0), 24, Verdict::Refused(R::Documentation)),
    (v4(192, 88, 99, 0), 24, Verdict::Refused(R::Deprecated)),
    (v4(192, 168, 0, 0), 16, Verdict::Refused(R::Private)),
    (v4(198, 18, 0, 0), 15, Verdict::Refused(R::Benchmarking)),
    (v4(198, 51, 100, 0), 24, Verdict::Refused(R::Documentation)),
    (v4(203, 0, 113, 0), 24, Verdict::Refused(R::Documentation)),
    (v4(224, 0, 0, 0), 4, Verdict::Refused(R::Multicast)),
    (v4(240, 0, 0, 0), 4, Verdict::Refused(R::Reserved)),
];

/// The IPv6 blocks, most specific first (the first that holds an address decides). The last
/// entry, `::/0`, refuses whatever is outside the global unicast space.
// One block a line, as in the registries.
#[rustfmt::skip]
const V6_BLOCKS: &[V6Block] = &[
    (v6(0, 0, 0, 0, 0, 0, 0, 0), 128, Verdict::Refused(R::Unspecified)),
    (v6(0, 0, 0, 0, 0, 0, 0, 1), 128, Verdict::Refused(R::Loopback)),
    (v6(0, 0, 0, 0, 0, 0, 0, 0), 96, Verdict::Embeds(Embedding::Compatible)),
    (v6(0, 0, 0, 0, 0, 0xffff, 0, 0), 96, Verdict::Embeds(Embedding::Mapped)),
    (v6(0, 0, 0, 0, 0xffff, 0, 0, 0), 96, Verdict::Embeds(Embedding::Translated)),
    (v6(0x64, 0xff9b, 0, 0, 0, 0, 0, 0), 96, Verdict::Embeds(Embedding::Nat64WellKnown)),
    (v6(0x64, 0xff9b, 1, 0, 0, 0, 0, 0), 48, Verdict::Embeds(Embedding::Nat64LocalUse)),
    (v6(0x100, 0, 0, 0, 0, 0, 0, 0), 64, Verdict::Refused(R::Reserved)),
    (v6(0x100, 0, 0, 1, 0, 0, 0, 0), 64, Verdict::Refused(R::Reserved)),
    (v6(0x2001, 1, 0, 0, 0, 0, 0, 1), 128, Verdict::Allowed),
    (v6(0x2001, 1, 0, 0, 0, 0, 0, 2), 128, Verdict::Allowed),
    (v6(0x2001, 1, 0, 0, 0, 0, 0, 3), 128, Verdict::Allowed),
    (v6(0x2001, 0, 0, 0, 0, 0, 0, 0), 32, Verdict::Embeds(Embedding::Teredo)),
    (v6(0x2001, 2, 0, 0, 0, 0, 0, 0), 48, Verdict::Refused(R::Benchmarking)),
    (v6(0x2001, 3, 0, 0, 0, 0, 0, 0), 32, Verdict::Allowed),
    (v6(0x2001, 4, 0x112, 0, 0, 0, 0, 0), 48, Verdict::Allowed),
    (v6(0x2001, 0x10, 0, 0, 0, 0, 0, 0), 28, Verdict::Refused(R::Deprecated)),
    (v6(0x2001, 0x20, 0, 0, 0, 0, 0, 0), 28, Verdict::Allowed),
    (v6(0x2001, 0x30, 0, 0, 0, 0, 0, 0), 28, Verdict::Allowed),
    (v6(0x2001, 0, 0, 0, 0, 0, 0, 0), 23, Verdict::Refused(R::ProtocolAssignments)),
    (v6(0x2001, 0xdb8, 0, 0, 0, 0, 0, 0), 32, Verdict::Refused(R::Documentation)),
    (v6(0x2002, 0, 0, 0, 0, 0, 0, 0), 16, Verdict::Embeds(Embedding::SixToFour)),
    (v6(0x3fff, 0, 0, 0, 0, 0, 0, 0), 20, Verdict::Refused(R::Documentation)),
    (v6(0x2000, 0, 0, 0, 0, 0, 0, 0), 3, Verdict::Allowed),
    (v6(0x5f00, 0, 0, 0, 0, 0, 0, 0), 16, Verdict::Refused(R::Reserved)),
    (v6(0xfc00, 0, 0, 0, 0, 0, 0, 0), 7, Verdict::Refused(R::Private)),
    (v6(0xfe80, 0, 0, 0, 0, 0, 0, 0), 10, Verdict::Refused(R::LinkLocal)),
    (v6(0xfec0, 0, 0, 0, 0, 0, 0, 0), 10, Verdict::Refused(R::Private)),
    (v6(0xff00, 0, 0, 0, 0, 0, 0, 0), 8, Verdict::Refused(R::Multicast)),
    (v6(0, 0, 0, 0, 0, 0, 0, 0), 0, Verdict::Refused(R::Reserved)),
];

/// The verdict of the first block holding `bits`, if any.
fn lookup<T>(
    blocks: &[(T, u8, Verdict)],
    bits: T,
    holds: impl Fn(T, T, u8) -> bool,
) -> Option<Verdict>
where
    T: Copy,
{
    blocks
        .iter()
        .find(|&&(network, len, _)| holds(bits, network, len))
        .map(|&(_, _, verdict)| verdict)
}

/// Whether `addr` lies in `network/len`.
fn holds_v4(addr: u32, network: u32, len: u8) -> bool {
    let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
    addr & mask == network & mask
}

/// Whether `addr` lies in `network/len`.
fn holds_v6(addr: u128, network: u128, len: u8) -> bool {
    let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
    addr & mask == network & mask
}

/// The forbidden range `ip` falls in, or `None` when it is a globally reachable unicast
/// address. IPv6 forms that carry an IPv4 address are judged by that address (see the module
/// documentation). This is the verdict without `allow_private`; [`refused_range`] applies it.
pub fn forbidden_range(ip: IpAddr) -> Option<ForbiddenRange> {
    match ip {
        IpAddr::V4(v4) => forbidden_v4(v4),
        IpAddr::V6(v6) => forbidden_v6(v6),
    }
}

/// The range that refuses `ip` as a webhook target, or `None` when it may be one: the one
/// decision [`check_url`] and [`GuardedResolver`] both apply. With `allow_private`, only the
/// ranges that are never a receiver ([`ForbiddenRange::is_never_a_receiver`]) are refused.
pub fn refused_range(ip: IpAddr, allow_private: bool) -> Option<ForbiddenRange> {
    forbidden_range(ip).filter(|range| !allow_private || range.is_never_a_receiver())
}

fn forbidden_v4(ip: Ipv4Addr) -> Option<ForbiddenRange> {
    match lookup(V4_BLOCKS, ip.to_bits(), holds_v4) {
        Some(Verdict::Refused(range)) => Some(range),
        // No IPv4 block embeds another address.
        Some(Verdict::Allowed | Verdict::Embeds(_)) | None => None,
    }
}

fn forbidden_v6(ip: Ipv6Addr) -> Option<ForbiddenRange> {
    match lookup(V6_BLOCKS, ip.to_bits(), holds_v6) {
        Some(Verdict::Refused(range)) => Some(range),
        Some(Verdict::Embeds(embedding)) => forbidden_embedding(ip, embedding),
        Some(Verdict::Allowed) | None => None,
    }
}

/// The verdict on an IPv6 address that carries an IPv4 address as `embedding` says.
fn forbidden_embedding(ip: Ipv6Addr, embedding: Embedding) -> Option<ForbiddenRange> {
    let o = ip.octets();
    let last = Ipv4Addr::new(o[12], o[13], o[14], o[15]);
    match embedding {
        Embedding::Mapped | Embedding::Nat64WellKnown => forbidden_v4(last),
        Embedding::Compatible | Embedding::Translated => {
            Some(forbidden_v4(last).unwrap_or(ForbiddenRange::Deprecated))
        }
        Embedding::Nat64LocalUse => {
            Some(forbidden_v4(last).unwrap_or(ForbiddenRange::Nat64LocalUse))
        }
        Embedding::SixToFour => forbidden_v4(Ipv4Addr::new(o[2], o[3], o[4], o[5])),
        Embedding::Teredo => {
            let server = Ipv4Addr::new(o[4], o[5], o[6], o[7]);
            let client = Ipv4Addr::from_bits(!last.to_bits());
            forbidden_v4(server).or_else(|| forbidden_v4(client))
        }
    }
}

/// Why a target was refused before any connection. Its text names the host and the address,
/// never the rest of the URL (which may carry credentials).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TargetRefused {
    /// Not a URL at all; the text is the parser's, which never repeats the URL.
    #[error("the postback URL is malformed: {0}")]
    Malformed(String),
    /// A scheme other than http or https.
    #[error("the postback URL's scheme {0:?} is not http or https")]
    Scheme(String),
    /// A user name or password in the URL: webhooks authenticate by signature, and the URL
    /// would carry the secret into every log line that shows it.
    #[error("the postback URL must not carry a user name or password")]
    Credentials,
    /// Port 0, which nothing can be connected to (a port above 65535 is [`Self::Malformed`]).
    #[error("the postback URL's port 0 cannot be connected to")]
    PortZero,
    /// No host to connect to.
    #[error("the postback URL has no host")]
    NoHost,
    /// The host is a literal forbidden address.
    #[error("{addr} is {article} {range} address", article = range.article())]
    ForbiddenAddress {
        /// The address (as the URL parser normalised it).
        addr: IpAddr,
        /// Its range.
        range: ForbiddenRange,
    },
    /// The host name resolves to a forbidden address.
    #[error("{host} resolves to {addr}, {article} {range} address", article = range.article())]
    ForbiddenName {
        /// The URL's host.
        host: String,
        /// The offending address.
        addr: IpAddr,
        /// Its range.
        range: ForbiddenRange,
    },
}

/// The guard as the domain asks it before a webhook URL is stored (the CLI's and the
/// console's `set-webhook`): [`check_url`] with the deployment's `allow_private`.
#[derive(Debug, Clone, Copy)]
pub struct TargetGuard {
    allow_private: bool,
}

impl TargetGuard {
    /// The guard of a deployment that does (sandbox, a local test) or does not allow private
    /// and loopback receivers (`PAYOUT_WEBHOOK_ALLOW_PRIVATE`).
    pub const fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }
}

impl domain::delivery::ports::WebhookTargetGuard for TargetGuard {
    fn check_target(&self, url: &str) -> Result<(), domain::delivery::ports::TargetRefused> {
        check_url(url, self.allow_private).map(drop).map_err(|e| {
            // The hint names the setting only where it would let a local receiver in (not for
            // multicast, reserved, unspecified or documentation addresses).
            let hint = match &e {
                TargetRefused::ForbiddenAddress { range, .. }
                    if !self.allow_private && range.is_private_network() =>
                {
                    " (private and loopback receivers are allowed only with \
                     PAYOUT_WEBHOOK_ALLOW_PRIVATE=true, the default in sandbox mode)"
                }
                _ => "",
            };
            domain::delivery::ports::TargetRefused(format!("{e}{hint}"))
        })
    }
}

/// Parses `raw` as a webhook target: http or https, without credentials or control
/// characters, with a host and a port other than 0, and a host that, when it is a literal IP
/// address, is allowed ([`refused_range`]). Literal addresses are judged in the form the URL
/// parser normalises them to (`http://2130706433/`, `http://0x7f.1/` and
/// `http://127.0.0.%31/` are all `127.0.0.1`; `[::ffff:7f00:1]` is `[::ffff:127.0.0.1]`), which
/// is the form the client connects to. Host names are checked later, by [`GuardedResolver`],
/// when they are resolved for the connection.
pub fn check_url(raw: &str, allow_private: bool) -> Result<Url, TargetRefused> {
    // The parser silently drops tabs and newlines and trims spaces and controls: refuse them
    // instead, so the URL checked is the URL stored.
    if raw.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(TargetRefused::Malformed(
            "it contains whitespace or a control character".to_owned(),
        ));
    }
    // The parse error's text describes the problem without repeating the URL.
    let url = Url::parse(raw).map_err(|e| TargetRefused::Malformed(e.to_string()))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(TargetRefused::Scheme(url.scheme().to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(TargetRefused::Credentials);
    }
    let host = url
        .host_str()
        .filter(|host| !host.is_empty())
        .ok_or(TargetRefused::NoHost)?;
    if url.port() == Some(0) {
        return Err(TargetRefused::PortZero);
    }
    // IPv6 literals keep their brackets.
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    if let Ok(addr) = bare.parse::<IpAddr>()
        && let Some(range) = refused_range(addr, allow_private)
    {
        return Err(TargetRefused::ForbiddenAddress { addr, range });
    }
    Ok(url)
}

/// The HTTP client's DNS resolver: resolves with the system resolver and fails with
/// [`TargetRefused::ForbiddenName`] when ANY address of the host is refused (one refused
/// address is enough: the client may pick any of them).
#[derive(Debug, Clone, Copy)]
pub struct GuardedResolver {
    allow_private: bool,
}

impl GuardedResolver {
    /// A resolver that refuses forbidden addresses; with `allow_private`, only those that are
    /// never a receiver (see [`refused_range`]).
    pub const fn new(allow_private: bool) -> Self {
        Self { allow_private }
    }

    /// Resolves `host` and checks every address ([`Self::check_resolved`]).
    pub async fn resolve_checked(
        &self,
        host: &str,
    ) -> Result<Vec<SocketAddr>, Box<dyn std::error::Error + Send + Sync>> {
        // Port 0: the client replaces it with the URL's port.
        let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, 0)).await?.collect();
        Ok(self.check_resolved(host, addrs)?)
    }

    /// The addresses `host` resolved to, when none is refused; otherwise the first refused
    /// one, as [`TargetRefused::ForbiddenName`].
    pub fn check_resolved(
        &self,
        host: &str,
        addrs: Vec<SocketAddr>,
    ) -> Result<Vec<SocketAddr>, TargetRefused> {
        let refused = addrs.iter().find_map(|addr| {
            refused_range(addr.ip(), self.allow_private).map(|range| (addr.ip(), range))
        });
        match refused {
            Some((addr, range)) => Err(TargetRefused::ForbiddenName {
                host: host.to_owned(),
                addr,
                range,
            }),
            None => Ok(addrs),
        }
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
mod tests;
