//! Retries, idempotency keys, errors and paging against a scripted server on loopback; every
//! request the client sends is also checked by the server's own authentication rule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use domain::auth::SignaturePolicy;
use futures_util::TryStreamExt;
use payoutd_client::{
    Asset, Error, ErrorCode, NewPayout, PayoutFilter, ReceiverFilter, RetryPolicy, Uuid,
};
use serde_json::json;
use support::{Mock, Reply, Seen, server_verdict};

fn payout() -> NewPayout {
    NewPayout::new(Uuid::from_u128(7), Uuid::from_u128(8), 1_000, Asset::Aud).reference("inv-1")
}

fn created() -> Reply {
    Reply::ok(json!({"payout_id": Uuid::from_u128(9)}))
}

/// Every attempt carries the same idempotency key and its own nonce, and payoutd's rule (a v2
/// policy) accepts each.
async fn same_key_fresh_signatures(seen: &[Seen]) -> String {
    let key = seen[0].header("idempotency-key").unwrap().to_owned();
    let mut nonces = Vec::new();
    for request in seen {
        assert_eq!(request.header("idempotency-key"), Some(key.as_str()));
        assert_eq!(request.body, seen[0].body);
        assert_eq!(
            server_verdict(SignaturePolicy::V2Only, request).await,
            Ok(())
        );
        nonces.push(
            request
                .header("signature")
                .unwrap()
                .split('.')
                .next()
                .unwrap()
                .to_owned(),
        );
    }
    let mut distinct = nonces.clone();
    distinct.dedup();
    assert_eq!(distinct, nonces, "a nonce was sent twice");
    key
}

#[tokio::test]
async fn a_429_is_retried_after_its_retry_after_with_the_same_key() {
    let mock = Mock::start(vec![
        Reply::refusal(429, "REQ010").header("retry-after", "1"),
        created(),
    ])
    .await;
    let created = mock.client().create_payout(&payout()).await.unwrap();
    assert_eq!(created.payout_id, Uuid::from_u128(9));
    let seen = mock.seen();
    assert_eq!(seen.len(), 2);
    let waited = seen[1].at.duration_since(seen[0].at);
    assert!(waited >= Duration::from_secs(1), "retried after {waited:?}");
    let key = same_key_fresh_signatures(&seen).await;
    assert!(
        key.parse::<Uuid>().is_ok(),
        "a generated key is a UUID: {key}"
    );
}

#[tokio::test]
async fn a_429_asking_longer_than_the_policy_allows_is_returned_at_once() {
    let mock = Mock::start(vec![
        Reply::refusal(429, "REQ010").header("retry-after", "3600"),
        created(),
    ])
    .await;
    let error = mock.client().create_payout(&payout()).await.unwrap_err();
    let api = error.api().unwrap();
    assert_eq!(api.status, 429);
    assert_eq!(api.retry_after, Some(Duration::from_secs(3600)));
    assert!(error.has_code(&ErrorCode::Req010));
    assert_eq!(mock.seen().len(), 1);
}

#[tokio::test]
async fn status_503_idem001_and_dropped_connections_are_retried_with_the_same_key() {
    let mock = Mock::start(vec![
        Reply::refusal(503, "SYS503"),
        Reply::Drop,
        Reply::refusal(409, "IDEM001"),
        created(),
    ])
    .await;
    let created = mock
        .client()
        .create_payout(&payout())
        .idempotency_key("invoice-1001")
        .await
        .unwrap();
    assert_eq!(created.payout_id, Uuid::from_u128(9));
    let seen = mock.seen();
    assert_eq!(seen.len(), 4);
    assert_eq!(same_key_fresh_signatures(&seen).await, "invoice-1001");
}

#[tokio::test]
async fn retries_stop_at_the_policys_attempts_and_the_last_answer_is_returned() {
    let mock = Mock::start(vec![Reply::refusal(503, "SYS503"); 6]).await;
    let error = mock.client().create_payout(&payout()).await.unwrap_err();
    assert_eq!(error.api().map(|e| e.status), Some(503));
    assert_eq!(
        mock.seen().len(),
        RetryPolicy::default().max_attempts as usize
    );
    same_key_fresh_signatures(&mock.seen()).await;
}

#[tokio::test]
async fn a_4xx_is_not_retried_and_carries_the_apis_codes_messages_and_fields() {
    let mock = Mock::start(vec![
        Reply::json(
            400,
            json!({"message": "Create payout failed", "error": [
                {"code": "PAYO201", "message": "Receiver not found", "field": "receiver_id"},
                {"code": "XYZ999", "message": "A newer server's code"}]}),
        ),
        created(),
    ])
    .await;
    let error = mock.client().create_payout(&payout()).await.unwrap_err();
    let Error::Api(api) = &error else {
        panic!("not an API error: {error:?}")
    };
    assert_eq!(api.status, 400);
    assert_eq!(api.message, "Create payout failed");
    assert_eq!(api.request_id.as_deref(), Some("req-mock"));
    assert_eq!(
        api.codes(),
        [&ErrorCode::Payo201, &ErrorCode::Other("XYZ999".to_owned())]
    );
    let amount = api.field("receiver_id").unwrap();
    assert_eq!(amount.message, "Receiver not found");
    assert_eq!(mock.seen().len(), 1);
    assert!(
        error
            .to_string()
            .contains("PAYO201 Receiver not found (receiver_id)")
    );
}

#[tokio::test]
async fn an_answer_that_is_not_the_envelope_is_a_decode_error_or_a_plain_refusal() {
    let mock = Mock::start(vec![
        Reply::json(200, json!({"unexpected": true})),
        Reply::Answer {
            status: 502,
            headers: Vec::new(),
            body: "<html>bad gateway</html>".to_owned(),
        },
    ])
    .await;
    let client = mock.client();
    let decode = client.get_payout(Uuid::from_u128(1)).await.unwrap_err();
    assert!(
        matches!(decode, Error::Decode { status: 200, .. }),
        "{decode:?}"
    );
    let refusal = client.get_payout(Uuid::from_u128(1)).await.unwrap_err();
    let api = refusal.api().unwrap();
    assert_eq!((api.status, api.errors.len()), (502, 0));
    assert!(api.message.contains("bad gateway"));
}

#[tokio::test]
async fn an_answer_larger_than_the_cap_is_refused_unread_and_not_retried() {
    let mock = Mock::start(vec![Reply::Answer {
        status: 200,
        headers: Vec::new(),
        body: "x".repeat(payoutd_client::MAX_ANSWER_BYTES + 1),
    }])
    .await;
    let error = mock
        .client()
        .get_payout(Uuid::from_u128(1))
        .await
        .unwrap_err();
    assert!(
        matches!(&error, Error::Decode { status: 200, reason } if reason.contains("larger than")),
        "{error:?}"
    );
    assert_eq!(mock.seen().len(), 1, "not retried");
}

#[tokio::test]
async fn gets_carry_no_idempotency_key_and_v2_signatures_by_default() {
    let mock = Mock::start(vec![Reply::ok(
        json!({"available": 5000, "pending": 100, "asset": "AUD"}),
    )])
    .await;
    let balance = mock.client().get_balance(Asset::Aud).await.unwrap();
    assert_eq!((balance.available, balance.pending), (5000, 100));
    let seen = &mock.seen()[0];
    assert_eq!(seen.method, "GET");
    assert_eq!(
        seen.path_and_query,
        format!("/api/subaccount/balance/{}?asset=AUD", support::SUBACCOUNT)
    );
    assert_eq!(seen.header("idempotency-key"), None);
    assert_eq!(seen.header("x-signature-version"), Some("2"));
    assert_eq!(server_verdict(SignaturePolicy::V2Only, seen).await, Ok(()));
}

fn receiver(n: u128) -> serde_json::Value {
    json!({"id": Uuid::from_u128(n), "first_name": "Ada", "last_name": "L", "email": "a@b.c",
        "dob": "1990-01-01", "dialcode": "61", "phone": "412345678", "kyc_status": "pending",
        "status": "pending", "created_at": "1795271698837", "updated_at": "1795271698837",
        "address_data": {"address": "1 A St", "city": "Sydney", "state": "NSW",
            "country": "AUS", "postcode": "2000"}})
}

#[tokio::test]
async fn a_list_streams_every_page_over_the_cursor_with_the_same_filters() {
    let page = |items: Vec<serde_json::Value>, lastkey: Option<&str>| {
        Reply::json(
            200,
            json!({"message": "Receivers found", "payload": items, "lastkey": lastkey}),
        )
    };
    let mock = Mock::start(vec![
        page(vec![receiver(1), receiver(2)], Some("k/1+")),
        page(vec![receiver(3)], Some("k2")),
        page(vec![], None),
    ])
    .await;
    let filter = ReceiverFilter {
        email: Some("a+b@example.com".to_owned()),
        ..ReceiverFilter::default()
    };
    let ids: Vec<Uuid> = mock
        .client()
        .list_receivers(filter)
        .map_ok(|receiver| receiver.id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ids, [1, 2, 3].map(Uuid::from_u128));
    let seen = mock.seen();
    assert_eq!(seen.len(), 3);
    let queries: Vec<Vec<(String, String)>> = seen
        .iter()
        .map(|s| {
            let query = s.path_and_query.split_once('?').unwrap().1;
            serde_urlencoded::from_str(query).unwrap()
        })
        .collect();
    for query in &queries {
        assert!(query.contains(&("email".to_owned(), "a+b@example.com".to_owned())));
        assert!(query.contains(&("limit".to_owned(), "100".to_owned())));
    }
    let lastkeys: Vec<Option<&str>> = queries
        .iter()
        .map(|q| {
            q.iter()
                .find(|(n, _)| n == "lastkey")
                .map(|(_, v)| v.as_str())
        })
        .collect();
    assert_eq!(lastkeys, [None, Some("k/1+"), Some("k2")]);
    for request in &seen {
        assert_eq!(
            server_verdict(SignaturePolicy::V2Only, request).await,
            Ok(())
        );
    }
}

#[tokio::test]
async fn a_list_that_repeats_its_cursor_ends_in_an_error_not_a_loop() {
    let looping = Reply::json(
        200,
        json!({"message": "Payouts found", "payload": [], "lastkey": "same"}),
    );
    let mock = Mock::start(vec![looping.clone(), looping.clone(), looping]).await;
    let result: Result<Vec<_>, _> = mock
        .client()
        .list_payouts(PayoutFilter::default())
        .try_collect()
        .await;
    assert!(matches!(result, Err(Error::Decode { .. })), "{result:?}");
    assert_eq!(mock.seen().len(), 2);
}

/// The keys the client sends are exactly those the server's rule (domain's
/// `IdempotencyKey::parse`) takes: any other is refused before anything is sent.
#[tokio::test]
async fn the_client_sends_exactly_the_keys_the_server_accepts() {
    let long = "k".repeat(255);
    let too_long = "k".repeat(256);
    let candidates = [
        "invoice-1001",
        "a",
        "!~",
        &long,
        &too_long,
        "",
        " a",
        "a ",
        "in side",
        "tab\tkey",
        "new\nline",
        "caf\u{e9}",
        "\u{7f}",
    ];
    for candidate in candidates {
        let mock = Mock::start(vec![created()]).await;
        let sent = mock
            .client()
            .create_payout(&payout())
            .idempotency_key(candidate)
            .await;
        let server_accepts = domain::idempotency::IdempotencyKey::parse(candidate).is_some();
        assert_eq!(sent.is_ok(), server_accepts, "{candidate:?}");
        assert_eq!(
            mock.seen().len(),
            usize::from(server_accepts),
            "{candidate:?}"
        );
        if let Err(error) = sent {
            assert!(matches!(error, Error::Invalid(_)), "{error:?}");
        }
    }
}

#[tokio::test]
async fn a_bad_idempotency_key_is_refused_before_anything_is_sent() {
    let mock = Mock::start(vec![created()]).await;
    let error = mock
        .client()
        .create_payout(&payout())
        .idempotency_key(" leading space")
        .await
        .unwrap_err();
    assert!(matches!(error, Error::Invalid(_)), "{error:?}");
    assert!(mock.seen().is_empty());
}
