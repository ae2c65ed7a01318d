//! The crate's error catalogue is the server's: every code payoutd can answer is a named
//! variant here, with the same status, and nothing here is unknown to payoutd.

use payoutd_client::ErrorCode;

#[test]
fn every_server_code_is_known_with_its_status_and_no_other() {
    let server: Vec<(&str, u16)> = domain::ErrorCode::ALL
        .iter()
        .map(|code| (code.as_str(), code.http_status()))
        .collect();
    let ours: Vec<(&str, u16)> = ErrorCode::ALL
        .iter()
        .map(|code| (code.as_str(), code.http_status().unwrap_or_default()))
        .collect();
    let missing: Vec<_> = server.iter().filter(|c| !ours.contains(c)).collect();
    let extra: Vec<_> = ours.iter().filter(|c| !server.contains(c)).collect();
    assert!(
        missing.is_empty(),
        "codes the client does not know (or with another status): {missing:?}"
    );
    assert!(
        extra.is_empty(),
        "codes the server does not have: {extra:?}"
    );
}

#[test]
fn a_code_reads_back_as_its_variant_and_an_unknown_one_as_other() {
    for code in ErrorCode::ALL {
        let wire = serde_json::to_string(code).unwrap_or_default();
        let read: Option<ErrorCode> = serde_json::from_str(&wire).ok();
        assert_eq!(read.as_ref(), Some(code));
    }
    let unknown: Option<ErrorCode> = serde_json::from_str("\"ZZZ999\"").ok();
    assert_eq!(unknown, Some(ErrorCode::Other("ZZZ999".to_owned())));
}
