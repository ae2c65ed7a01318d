//! The guard's decisions, tested as tables over the IANA special-purpose registries: for every
//! block, its first, middle and last address and the addresses just outside it.
//!
//! The expected verdict of an address is the verdict of the MOST SPECIFIC block of the tables
//! below that holds it (or "allowed"); the guard itself decides by an ordered first-match
//! list, so these tests also catch a block listed in the wrong order there.

use super::*;

use ForbiddenRange as R;

/// What a registry block expects of its addresses.
#[derive(Debug, Clone, Copy)]
enum Expect {
    Allowed,
    Refused(ForbiddenRange),
    /// Judged by the IPv4 address inside, as the form says.
    Embeds(Form),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    Compatible,
    Mapped,
    Translated,
    Nat64,
    Nat64LocalUse,
    SixToFour,
    Teredo,
}

const V4_REGISTRY: &[(&str, Expect)] = &[
    ("0.0.0.0/8", Expect::Refused(R::Unspecified)),
    ("0.0.0.0/32", Expect::Refused(R::Unspecified)),
    ("10.0.0.0/8", Expect::Refused(R::Private)),
    ("100.64.0.0/10", Expect::Refused(R::SharedCgnat)),
    ("127.0.0.0/8", Expect::Refused(R::Loopback)),
    ("169.254.0.0/16", Expect::Refused(R::LinkLocal)),
    ("172.16.0.0/12", Expect::Refused(R::Private)),
    ("192.0.0.0/24", Expect::Refused(R::ProtocolAssignments)),
    ("192.0.0.0/29", Expect::Refused(R::ProtocolAssignments)),
    ("192.0.0.8/32", Expect::Refused(R::ProtocolAssignments)),
    ("192.0.0.9/32", Expect::Allowed),
    ("192.0.0.10/32", Expect::Allowed),
    ("192.0.0.170/32", Expect::Refused(R::ProtocolAssignments)),
    ("192.0.0.171/32", Expect::Refused(R::ProtocolAssignments)),
    ("192.0.2.0/24", Expect::Refused(R::Documentation)),
    ("192.31.196.0/24", Expect::Allowed),
    ("192.52.193.0/24", Expect::Allowed),
    ("192.88.99.0/24", Expect::Refused(R::Deprecated)),
    ("192.88.99.2/32", Expect::Refused(R::Deprecated)),
    ("192.168.0.0/16", Expect::Refused(R::Private)),
    ("192.175.48.0/24", Expect::Allowed),
    ("198.18.0.0/15", Expect::Refused(R::Benchmarking)),
    ("198.51.100.0/24", Expect::Refused(R::Documentation)),
    ("203.0.113.0/24", Expect::Refused(R::Documentation)),
    ("224.0.0.0/4", Expect::Refused(R::Multicast)),
    ("240.0.0.0/4", Expect::Refused(R::Reserved)),
    ("255.255.255.255/32", Expect::Refused(R::Broadcast)),
];

const V6_REGISTRY: &[(&str, Expect)] = &[
    // The IANA IPv6 Address Space registry: only 2000::/3 is global unicast.
    ("::/0", Expect::Refused(R::Reserved)),
    ("2000::/3", Expect::Allowed),
    ("::/128", Expect::Refused(R::Unspecified)),
    ("::1/128", Expect::Refused(R::Loopback)),
    ("::/96", Expect::Embeds(Form::Compatible)),
    ("::ffff:0:0/96", Expect::Embeds(Form::Mapped)),
    ("::ffff:0:0:0/96", Expect::Embeds(Form::Translated)),
    ("64:ff9b::/96", Expect::Embeds(Form::Nat64)),
    ("64:ff9b:1::/48", Expect::Embeds(Form::Nat64LocalUse)),
    ("100::/64", Expect::Refused(R::Reserved)),
    ("100:0:0:1::/64", Expect::Refused(R::Reserved)),
    ("2001::/23", Expect::Refused(R::ProtocolAssignments)),
    ("2001::/32", Expect::Embeds(Form::Teredo)),
    ("2001:1::1/128", Expect::Allowed),
    ("2001:1::2/128", Expect::Allowed),
    ("2001:1::3/128", Expect::Allowed),
    ("2001:2::/48", Expect::Refused(R::Benchmarking)),
    ("2001:3::/32", Expect::Allowed),
    ("2001:4:112::/48", Expect::Allowed),
    ("2001:10::/28", Expect::Refused(R::Deprecated)),
    ("2001:20::/28", Expect::Allowed),
    ("2001:30::/28", Expect::Allowed),
    ("2001:db8::/32", Expect::Refused(R::Documentation)),
    ("2002::/16", Expect::Embeds(Form::SixToFour)),
    ("2620:4f:8000::/48", Expect::Allowed),
    ("3fff::/20", Expect::Refused(R::Documentation)),
    ("5f00::/16", Expect::Refused(R::Reserved)),
    ("fc00::/7", Expect::Refused(R::Private)),
    ("fe80::/10", Expect::Refused(R::LinkLocal)),
    ("fec0::/10", Expect::Refused(R::Private)),
    ("ff00::/8", Expect::Refused(R::Multicast)),
];

fn ip(text: &str) -> IpAddr {
    match text.parse() {
        Ok(ip) => ip,
        Err(e) => panic!("{text}: {e}"),
    }
}

fn v4_of(text: &str) -> Ipv4Addr {
    match text.parse() {
        Ok(ip) => ip,
        Err(e) => panic!("{text}: {e}"),
    }
}

/// `network/len` as (network bits, len, bits outside the prefix).
fn block_v4(block: &str) -> (u32, u8) {
    let Some((network, len)) = block.split_once('/') else {
        panic!("{block}: no prefix length");
    };
    let Ok(len) = len.parse::<u8>() else {
        panic!("{block}: bad prefix length");
    };
    (v4_of(network).to_bits(), len)
}

fn block_v6(block: &str) -> (u128, u8) {
    let Some((network, len)) = block.split_once('/') else {
        panic!("{block}: no prefix length");
    };
    let Ok(len) = len.parse::<u8>() else {
        panic!("{block}: bad prefix length");
    };
    let IpAddr::V6(network) = ip(network) else {
        panic!("{block}: not IPv6");
    };
    (network.to_bits(), len)
}

/// The host bits of a `len` prefix in a `width`-bit address, as a mask.
fn host_mask_v4(len: u8) -> u32 {
    u32::MAX.checked_shr(u32::from(len)).unwrap_or(0)
}

fn host_mask_v6(len: u8) -> u128 {
    u128::MAX.checked_shr(u32::from(len)).unwrap_or(0)
}

/// First, middle and last address of the block, then the addresses just below and above it.
fn samples_v4(block: &str) -> (Vec<u32>, Vec<u32>) {
    let (network, len) = block_v4(block);
    let host = host_mask_v4(len);
    let first = network & !host;
    let last = first | host;
    let inside = vec![first, first + host / 2, last];
    let outside = [first.checked_sub(1), last.checked_add(1)]
        .into_iter()
        .flatten()
        .collect();
    (inside, outside)
}

fn samples_v6(block: &str) -> (Vec<u128>, Vec<u128>) {
    let (network, len) = block_v6(block);
    let host = host_mask_v6(len);
    let first = network & !host;
    let last = first | host;
    let inside = vec![first, first + host / 2, last];
    let outside = [first.checked_sub(1), last.checked_add(1)]
        .into_iter()
        .flatten()
        .collect();
    (inside, outside)
}

/// The expectation of the most specific IPv4 block holding `addr`.
fn expected_v4(addr: u32) -> Option<ForbiddenRange> {
    let most_specific = V4_REGISTRY
        .iter()
        .map(|&(block, expect)| (block_v4(block), expect))
        .filter(|&((network, len), _)| addr & !host_mask_v4(len) == network)
        .max_by_key(|&((_, len), _)| len);
    match most_specific {
        Some((_, Expect::Refused(range))) => Some(range),
        Some((_, Expect::Allowed)) | None => None,
        Some((_, Expect::Embeds(form))) => panic!("IPv4 block embeds {form:?}"),
    }
}

/// The IPv4 part's verdict, as the form judges it.
fn expected_embedded(form: Form, ip: Ipv6Addr) -> Option<ForbiddenRange> {
    let bits = ip.to_bits();
    let low = u32::try_from(bits & 0xffff_ffff).unwrap_or_default();
    match form {
        Form::Mapped | Form::Nat64 => expected_v4(low),
        Form::Compatible | Form::Translated => Some(expected_v4(low).unwrap_or(R::Deprecated)),
        Form::Nat64LocalUse => Some(expected_v4(low).unwrap_or(R::Nat64LocalUse)),
        Form::SixToFour => {
            expected_v4(u32::try_from((bits >> 80) & 0xffff_ffff).unwrap_or_default())
        }
        Form::Teredo => {
            let server = u32::try_from((bits >> 64) & 0xffff_ffff).unwrap_or_default();
            expected_v4(server).or_else(|| expected_v4(!low))
        }
    }
}

fn expected_v6(addr: u128) -> Option<ForbiddenRange> {
    let most_specific = V6_REGISTRY
        .iter()
        .map(|&(block, expect)| (block_v6(block), expect))
        .filter(|&((network, len), _)| addr & !host_mask_v6(len) == network)
        .max_by_key(|&((_, len), _)| len);
    match most_specific {
        Some((_, Expect::Refused(range))) => Some(range),
        Some((_, Expect::Allowed)) | None => None,
        Some((_, Expect::Embeds(form))) => expected_embedded(form, Ipv6Addr::from_bits(addr)),
    }
}

#[test]
fn every_ipv4_registry_block_its_edges_and_its_neighbours() {
    let mut checked = 0;
    for &(block, expect) in V4_REGISTRY {
        let (inside, outside) = samples_v4(block);
        for addr in inside.iter().chain(&outside) {
            let addr = Ipv4Addr::from_bits(*addr);
            assert_eq!(
                forbidden_range(IpAddr::V4(addr)),
                expected_v4(addr.to_bits()),
                "{addr} (block {block})"
            );
            checked += 1;
        }
        // A more specific block may cover some samples, but never all three.
        let own = |addr: u32| match expect {
            Expect::Refused(range) => Some(range),
            Expect::Allowed | Expect::Embeds(_) => None,
        } == forbidden_range(IpAddr::V4(Ipv4Addr::from_bits(addr)));
        assert!(inside.iter().any(|&addr| own(addr)), "{block}");
    }
    assert!(checked >= 3 * V4_REGISTRY.len());
}

#[test]
fn every_ipv6_registry_block_its_edges_and_its_neighbours() {
    for &(block, expect) in V6_REGISTRY {
        let (inside, outside) = samples_v6(block);
        for addr in inside.iter().chain(&outside) {
            let addr = Ipv6Addr::from_bits(*addr);
            assert_eq!(
                forbidden_range(IpAddr::V6(addr)),
                expected_v6(addr.to_bits()),
                "{addr} (block {block})"
            );
        }
        let own = |addr: u128| {
            let addr = Ipv6Addr::from_bits(addr);
            forbidden_range(IpAddr::V6(addr))
                == match expect {
                    Expect::Refused(range) => Some(range),
                    Expect::Allowed => None,
                    Expect::Embeds(form) => expected_embedded(form, addr),
                }
        };
        assert!(inside.iter().any(|&addr| own(addr)), "{block}");
    }
}

/// Literal verdicts, written out, so the tables above are not the only oracle.
#[test]
fn named_addresses_have_the_registry_verdict() {
    let cases: &[(&str, Option<ForbiddenRange>)] = &[
        // What the security probe found let through.
        ("198.18.0.0", Some(R::Benchmarking)),
        ("198.19.255.255", Some(R::Benchmarking)),
        ("192.0.0.1", Some(R::ProtocolAssignments)),
        ("192.0.0.255", Some(R::ProtocolAssignments)),
        ("240.0.0.1", Some(R::Reserved)),
        ("255.255.255.254", Some(R::Reserved)),
        ("224.0.0.1", Some(R::Multicast)),
        ("239.255.255.255", Some(R::Multicast)),
        ("::127.0.0.1", Some(R::Loopback)),
        ("::ffff:0:7f00:1", Some(R::Loopback)),
        ("2002:7f00:1::1", Some(R::Loopback)),
        ("64:ff9b::a9fe:a9fe", Some(R::LinkLocal)),
        // The registry's globally reachable exceptions.
        ("192.0.0.9", None),
        ("192.0.0.10", None),
        ("192.0.0.11", Some(R::ProtocolAssignments)),
        ("192.31.196.1", None),
        ("192.52.193.1", None),
        ("192.175.48.1", None),
        ("2001:1::1", None),
        ("2001:1::2", None),
        ("2001:1::3", None),
        ("2001:1::4", Some(R::ProtocolAssignments)),
        ("2001:3::1", None),
        ("2001:4:112::1", None),
        ("2001:4:113::1", Some(R::ProtocolAssignments)),
        ("2001:20::1", None),
        ("2001:2f:ffff::1", None),
        ("2001:30::1", None),
        ("2001:10::1", Some(R::Deprecated)),
        ("2001:2::1", Some(R::Benchmarking)),
        ("2001:1ff::1", Some(R::ProtocolAssignments)),
        ("2001:200::1", None),
        ("2620:4f:8000::1", None),
        // Documentation, reserved and the rest.
        ("192.0.2.1", Some(R::Documentation)),
        ("198.51.100.7", Some(R::Documentation)),
        ("203.0.113.200", Some(R::Documentation)),
        ("2001:db8::1", Some(R::Documentation)),
        ("3fff::1", Some(R::Documentation)),
        ("3fff:fff::1", Some(R::Documentation)),
        ("3fff:1000::1", None),
        ("5f00::1", Some(R::Reserved)),
        ("100::1", Some(R::Reserved)),
        ("4000::1", Some(R::Reserved)),
        ("fbff:ffff::1", Some(R::Reserved)),
        ("fe00::1", Some(R::Reserved)),
        ("ff02::1", Some(R::Multicast)),
        ("192.88.99.1", Some(R::Deprecated)),
        ("64:ff9b:1:ffff::5db8:d70e", Some(R::Nat64LocalUse)),
        ("64:ff9b:1::8.8.8.8", Some(R::Nat64LocalUse)),
        ("64:ff9b:1::10.0.0.1", Some(R::Private)),
        ("64:ff9b::1:0:0", Some(R::Reserved)),
        // Public.
        ("8.8.8.8", None),
        ("1.1.1.1", None),
        ("93.184.215.14", None),
        ("2606:4700:4700::1111", None),
        ("2001:4860:4860::8888", None),
    ];
    for &(addr, expected) in cases {
        assert_eq!(forbidden_range(ip(addr)), expected, "{addr}");
    }
}

/// The IPv6 address of `form` carrying `v4` (Teredo: as client, behind the public server
/// 8.8.8.8, and as server, with the public client 8.8.4.4).
fn embed(form: Form, v4: Ipv4Addr) -> Vec<Ipv6Addr> {
    let v4 = v4.to_bits();
    let [hi, lo] = [(v4 >> 16) as u16, (v4 & 0xffff) as u16];
    let public_server = Ipv4Addr::new(8, 8, 8, 8).to_bits();
    let public_client = Ipv4Addr::new(8, 8, 4, 4).to_bits();
    let teredo = |server: u32, client: u32| {
        let client = !client;
        Ipv6Addr::new(
            0x2001,
            0,
            (server >> 16) as u16,
            (server & 0xffff) as u16,
            0x8000,
            0xcfb3,
            (client >> 16) as u16,
            (client & 0xffff) as u16,
        )
    };
    match form {
        Form::Compatible => vec![Ipv6Addr::new(0, 0, 0, 0, 0, 0, hi, lo)],
        Form::Mapped => vec![Ipv6Addr::new(0, 0, 0, 0, 0, 0xffff, hi, lo)],
        Form::Translated => vec![Ipv6Addr::new(0, 0, 0, 0, 0xffff, 0, hi, lo)],
        Form::Nat64 => vec![Ipv6Addr::new(0x64, 0xff9b, 0, 0, 0, 0, hi, lo)],
        Form::Nat64LocalUse => vec![Ipv6Addr::new(0x64, 0xff9b, 1, 0, 0, 0, hi, lo)],
        Form::SixToFour => vec![
            Ipv6Addr::new(0x2002, hi, lo, 0, 0, 0, 0, 0),
            Ipv6Addr::new(0x2002, hi, lo, 0xffff, 0xffff, 0xffff, 0xffff, 0xffff),
        ],
        Form::Teredo => vec![teredo(public_server, v4), teredo(v4, public_client)],
    }
}

#[test]
fn every_embedded_ipv4_form_is_judged_by_its_ipv4_part() {
    let carried: &[(&str, Option<ForbiddenRange>)] = &[
        ("127.0.0.1", Some(R::Loopback)),
        ("10.1.2.3", Some(R::Private)),
        ("172.20.0.1", Some(R::Private)),
        ("192.168.1.1", Some(R::Private)),
        ("169.254.169.254", Some(R::LinkLocal)),
        ("100.100.100.100", Some(R::SharedCgnat)),
        ("0.0.0.0", Some(R::Unspecified)),
        ("255.255.255.255", Some(R::Broadcast)),
        ("224.0.0.251", Some(R::Multicast)),
        ("198.18.0.1", Some(R::Benchmarking)),
        ("192.0.2.1", Some(R::Documentation)),
        ("8.8.8.8", None),
        ("93.184.215.14", None),
    ];
    // Refused even with a public IPv4 part: the form is not globally reachable.
    let always_refused = [
        (Form::Compatible, R::Deprecated),
        (Form::Translated, R::Deprecated),
        (Form::Nat64LocalUse, R::Nat64LocalUse),
    ];
    for form in [
        Form::Compatible,
        Form::Mapped,
        Form::Translated,
        Form::Nat64,
        Form::Nat64LocalUse,
        Form::SixToFour,
        Form::Teredo,
    ] {
        let otherwise = always_refused
            .iter()
            .find(|(refusing, _)| *refusing == form)
            .map(|&(_, range)| range);
        for &(v4, range) in carried {
            for v6 in embed(form, v4_of(v4)) {
                assert_eq!(
                    forbidden_range(IpAddr::V6(v6)),
                    range.or(otherwise),
                    "{v6} ({form:?} carrying {v4})"
                );
            }
        }
    }
}

#[test]
fn embedded_forms_written_out() {
    let cases: &[(&str, Option<ForbiddenRange>)] = &[
        ("::ffff:127.0.0.1", Some(R::Loopback)),
        ("::ffff:7f00:1", Some(R::Loopback)),
        ("::ffff:169.254.169.254", Some(R::LinkLocal)),
        ("::ffff:8.8.8.8", None),
        ("::10.0.0.1", Some(R::Private)),
        ("::8.8.8.8", Some(R::Deprecated)),
        ("::ffff:0:a9fe:a9fe", Some(R::LinkLocal)),
        ("::ffff:0:8.8.8.8", Some(R::Deprecated)),
        ("64:ff9b::127.0.0.1", Some(R::Loopback)),
        ("64:ff9b::192.168.0.1", Some(R::Private)),
        ("64:ff9b::8.8.8.8", None),
        ("2002:a9fe:a9fe::1", Some(R::LinkLocal)),
        ("2002:c0a8:101::1", Some(R::Private)),
        ("2002:808:808::1", None),
        // Teredo: server 8.8.8.8, client 127.0.0.1 (inverted 80ff:fffe).
        ("2001:0:808:808:8000:cfb3:80ff:fffe", Some(R::Loopback)),
        // Server 10.0.0.1, client 8.8.4.4 (inverted f7f7:fbfb).
        ("2001:0:a00:1:8000:cfb3:f7f7:fbfb", Some(R::Private)),
        ("2001:0:808:808:8000:cfb3:f7f7:fbfb", None),
        // Client 0.0.0.0 is all ones inverted.
        ("2001:0:808:808::ffff:ffff", Some(R::Unspecified)),
    ];
    for &(addr, expected) in cases {
        assert_eq!(forbidden_range(ip(addr)), expected, "{addr}");
    }
}

#[test]
fn allowing_private_targets_still_refuses_what_is_never_a_receiver() {
    let never: &[(&str, ForbiddenRange)] = &[
        ("0.0.0.0", R::Unspecified),
        ("0.1.2.3", R::Unspecified),
        ("::", R::Unspecified),
        ("::ffff:0.0.0.0", R::Unspecified),
        ("255.255.255.255", R::Broadcast),
        ("::ffff:255.255.255.255", R::Broadcast),
        ("224.0.0.1", R::Multicast),
        ("239.255.255.250", R::Multicast),
        ("ff02::1", R::Multicast),
        ("ff0e::1", R::Multicast),
        ("64:ff9b::224.0.0.1", R::Multicast),
    ];
    for &(addr, range) in never {
        assert_eq!(refused_range(ip(addr), true), Some(range), "{addr}");
        assert_eq!(refused_range(ip(addr), false), Some(range), "{addr}");
    }
    let local = [
        "127.0.0.1",
        "::1",
        "::ffff:127.0.0.1",
        "10.0.0.1",
        "192.168.1.1",
        "fd00::1",
        "169.254.169.254",
        "fe80::1",
        "100.64.0.1",
        "198.18.0.1",
        "192.0.2.1",
        "240.0.0.1",
    ];
    for addr in local {
        assert_eq!(refused_range(ip(addr), true), None, "{addr}");
        assert!(refused_range(ip(addr), false).is_some(), "{addr}");
    }
    for addr in ["8.8.8.8", "2606:4700:4700::1111"] {
        assert_eq!(refused_range(ip(addr), true), None, "{addr}");
        assert_eq!(refused_range(ip(addr), false), None, "{addr}");
    }
}

fn refused(url: &str, allow_private: bool) -> TargetRefused {
    match check_url(url, allow_private) {
        Ok(parsed) => panic!("{url} was allowed as {parsed}"),
        Err(refused) => refused,
    }
}

#[test]
fn literal_hosts_are_judged_in_their_normalised_form() {
    // (URL, the address the parser normalises its host to, its range)
    let cases: &[(&str, &str, ForbiddenRange)] = &[
        ("http://127.0.0.1:8080/hook", "127.0.0.1", R::Loopback),
        ("https://10.0.0.5/", "10.0.0.5", R::Private),
        ("http://[::1]/", "::1", R::Loopback),
        (
            "http://[::ffff:192.168.0.1]/",
            "::ffff:192.168.0.1",
            R::Private,
        ),
        (
            "http://[::ffff:127.0.0.1]/",
            "::ffff:127.0.0.1",
            R::Loopback,
        ),
        ("http://[::ffff:7f00:1]/", "::ffff:127.0.0.1", R::Loopback),
        ("http://[::127.0.0.1]/", "::127.0.0.1", R::Loopback),
        ("http://[::ffff:0:7f00:1]/", "::ffff:0:7f00:1", R::Loopback),
        ("http://[2002:7f00:1::1]/", "2002:7f00:1::1", R::Loopback),
        (
            "http://[64:ff9b::a9fe:a9fe]/",
            "64:ff9b::a9fe:a9fe",
            R::LinkLocal,
        ),
        ("http://[fe80::1]/", "fe80::1", R::LinkLocal),
        ("http://0.0.0.0/", "0.0.0.0", R::Unspecified),
        ("http://2130706433/", "127.0.0.1", R::Loopback),
        ("http://0x7f.1/", "127.0.0.1", R::Loopback),
        ("http://0177.0.0.1/", "127.0.0.1", R::Loopback),
        ("http://127.1/", "127.0.0.1", R::Loopback),
        ("http://127.0.0.%31/", "127.0.0.1", R::Loopback),
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
            R::LinkLocal,
        ),
        ("http://0xa9fea9fe/", "169.254.169.254", R::LinkLocal),
        ("http://198.18.0.1/", "198.18.0.1", R::Benchmarking),
        ("http://192.0.0.1/", "192.0.0.1", R::ProtocolAssignments),
        ("http://240.0.0.1/", "240.0.0.1", R::Reserved),
        ("http://224.0.0.1/", "224.0.0.1", R::Multicast),
        ("http://[ff02::1]/", "ff02::1", R::Multicast),
        ("http://[2001:db8::1]/", "2001:db8::1", R::Documentation),
    ];
    for &(url, addr, range) in cases {
        assert_eq!(
            refused(url, false),
            TargetRefused::ForbiddenAddress {
                addr: ip(addr),
                range
            },
            "{url}"
        );
        let with_private = check_url(url, true);
        if range.is_never_a_receiver() {
            assert!(with_private.is_err(), "{url}");
        } else {
            assert!(with_private.is_ok(), "{url}");
        }
    }
    for url in [
        "https://93.184.215.14/hook",
        "https://[2606:4700:4700::1111]/hook",
        "https://[64:ff9b::808:808]/hook",
        "https://[::ffff:8.8.8.8]/hook",
        "https://[2002:808:808::1]/hook",
        "https://192.0.0.9/",
        "https://[2001:4:112::1]/",
        "https://hooks.example.com:8443/payout",
        "http://hooks.example.com:65535/payout",
    ] {
        assert!(check_url(url, false).is_ok(), "{url}");
    }
}

#[test]
fn urls_that_can_never_be_sent_to_are_refused() {
    for url in [
        "ftp://example.com/",
        "file:///etc/passwd",
        "javascript:alert(1)",
    ] {
        assert!(
            matches!(refused(url, true), TargetRefused::Scheme(_)),
            "{url}"
        );
    }
    for url in [
        "http://user:pass@example.com/",
        "http://user@example.com/",
        "https://:pass@example.com/",
    ] {
        assert_eq!(refused(url, true), TargetRefused::Credentials, "{url}");
    }
    assert_eq!(
        refused("http://example.com:0/", true),
        TargetRefused::PortZero
    );
    for url in [
        "not a url",
        "http://",
        "http://:80/",
        "https:///",
        "http://example.com:65536/",
        "http://example.com:99999999/",
        "http://example.com:-1/",
        "http://exa mple.com/",
        "http://exa\0mple.com/",
        "http://exa\tmple.com/",
        "http://example.com/\n",
        " http://example.com/",
        "http://exa%00mple.com/",
        "http://exa%20mple.com/",
        "http://exa<mple.com/",
        "http://[::1/",
        "http://[127.0.0.1]/",
        "http://1.2.3.4.5/",
        "http://256.0.0.1/",
    ] {
        assert!(
            matches!(
                refused(url, true),
                TargetRefused::Malformed(_) | TargetRefused::NoHost
            ),
            "{url:?}"
        );
    }
}

#[test]
fn refusals_never_repeat_the_url_credentials() {
    for (url, allow_private) in [
        ("http://user:hunter2@127.0.0.1/?token=abc", false),
        ("http://user:hunter2@hooks.example.com/?token=abc", true),
        (
            "http://user:hunter2@hooks.example.com:99999/?token=abc",
            true,
        ),
        ("http://user:hunter2@exa%00mple.com/?token=abc", true),
    ] {
        let text = refused(url, allow_private).to_string();
        assert!(!text.contains("hunter2") && !text.contains("abc"), "{text}");
        assert!(!text.contains("user:"), "{text}");
    }
    let text = TargetRefused::ForbiddenAddress {
        addr: ip("127.0.0.1"),
        range: R::Loopback,
    }
    .to_string();
    assert_eq!(text, "127.0.0.1 is a loopback address");
    let text = TargetRefused::ForbiddenAddress {
        addr: ip("0.0.0.0"),
        range: R::Unspecified,
    }
    .to_string();
    assert_eq!(text, "0.0.0.0 is an unspecified address");
}

fn socket(addr: &str) -> SocketAddr {
    SocketAddr::new(ip(addr), 0)
}

#[test]
fn resolved_addresses_are_refused_when_any_one_is() {
    let guarded = GuardedResolver::new(false);
    let public = vec![socket("93.184.215.14"), socket("2606:4700:4700::1111")];
    assert_eq!(
        guarded.check_resolved("hooks.example.com", public.clone()),
        Ok(public)
    );
    // Every registry block's first address, among public ones.
    for &(block, _) in V4_REGISTRY.iter().chain(V6_REGISTRY) {
        let Some(first) = block.split('/').next() else {
            continue;
        };
        let expected = match ip(first) {
            IpAddr::V4(v4) => expected_v4(v4.to_bits()),
            IpAddr::V6(v6) => expected_v6(v6.to_bits()),
        };
        let addrs = vec![
            socket("8.8.8.8"),
            socket(first),
            socket("2001:4860:4860::8888"),
        ];
        let checked = guarded.check_resolved("rebind.example.com", addrs.clone());
        match expected {
            None => assert_eq!(checked, Ok(addrs), "{block}"),
            Some(range) => assert_eq!(
                checked,
                Err(TargetRefused::ForbiddenName {
                    host: "rebind.example.com".to_owned(),
                    addr: ip(first),
                    range,
                }),
                "{block}"
            ),
        }
    }
}

#[test]
fn resolved_addresses_with_private_targets_allowed() {
    let local = GuardedResolver::new(true);
    let addrs = vec![socket("127.0.0.1"), socket("::1"), socket("10.0.0.1")];
    assert_eq!(local.check_resolved("localhost", addrs.clone()), Ok(addrs));
    for never in ["0.0.0.0", "::", "255.255.255.255", "224.0.0.1", "ff02::1"] {
        let checked = local.check_resolved("odd.example", vec![socket("127.0.0.1"), socket(never)]);
        assert!(
            matches!(checked, Err(TargetRefused::ForbiddenName { addr, .. }) if addr == ip(never)),
            "{never}"
        );
    }
}

/// Resolves `localhost` only (the hosts file): no packet leaves the machine.
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

#[test]
fn private_networks_are_exactly_what_allowing_private_targets_lets_in_for_a_local_receiver() {
    for (_, expect) in V4_REGISTRY.iter().chain(V6_REGISTRY) {
        let Expect::Refused(range) = *expect else {
            continue;
        };
        // A private network's receiver is let in by `allow_private`; a range refused even
        // then is never a private network.
        if range.is_private_network() {
            assert!(!range.is_never_a_receiver(), "{range:?}");
        }
        if range.is_never_a_receiver() {
            assert!(!range.is_private_network(), "{range:?}");
        }
    }
    for (private, text) in [
        (true, "127.0.0.1"),
        (true, "10.1.2.3"),
        (true, "169.254.169.254"),
        (true, "100.64.0.1"),
        (true, "fd00::1"),
        (false, "224.0.0.1"),
        (false, "0.0.0.0"),
        (false, "240.0.0.1"),
        (false, "192.0.2.1"),
        (false, "ff02::1"),
    ] {
        let Some(range) = forbidden_range(ip(text)) else {
            panic!("{text} is refused");
        };
        assert_eq!(range.is_private_network(), private, "{text}: {range:?}");
    }
}

#[test]
fn the_domains_guard_refuses_what_the_worker_would_and_says_how_to_allow_a_local_receiver() {
    use domain::delivery::ports::WebhookTargetGuard;
    let production = TargetGuard::new(false);
    assert!(production.check_target("https://example.com/hooks").is_ok());
    let Err(local) = production.check_target("http://127.0.0.1:9000/hooks") else {
        panic!("loopback is refused in production");
    };
    assert!(local.0.contains("127.0.0.1"), "{local}");
    assert!(
        local.0.contains("PAYOUT_WEBHOOK_ALLOW_PRIVATE=true"),
        "{local}"
    );
    // No setting makes a documentation address a receiver: no hint.
    let Err(doc) = production.check_target("http://192.0.2.1/") else {
        panic!("documentation addresses are refused");
    };
    assert!(!doc.0.contains("PAYOUT_WEBHOOK_ALLOW_PRIVATE"), "{doc}");
    let Err(creds) = production.check_target("https://user:pw@example.com/") else {
        panic!("credentials are refused");
    };
    assert!(!creds.0.contains("pw"), "{creds}");
    let sandbox = TargetGuard::new(true);
    assert!(sandbox.check_target("http://127.0.0.1:9000/hooks").is_ok());
    assert!(sandbox.check_target("http://0.0.0.0/").is_err());
}
