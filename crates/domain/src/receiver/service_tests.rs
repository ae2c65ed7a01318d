//! `ReceiverService` driven through mocked ports.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use mockall::predicate::always;
use uuid::Uuid;

use super::*;
use crate::builders::ReceiverBuilder;
use crate::ids::ApiKeyId;
use crate::ports::{MockClock, MockIdGenerator, MockKycProvider};
use crate::receiver::KycOutcome;
use crate::receiver::ports::MockReceiverStore;

const NOW_MS: i64 = 1_700_000_000_000;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(NOW_MS).unwrap_or_default()
}

fn caller() -> Caller {
    Caller {
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(0xA)),
        api_key_id: ApiKeyId::from_uuid(Uuid::from_u128(0xB)),
    }
}

fn raw() -> RawReceiver {
    let s = |v: &str| Some(v.to_owned());
    RawReceiver {
        subaccount_id: Some(caller().subaccount_id.to_string()),
        first_name: s("Ada"),
        last_name: s("Lovelace"),
        email: s("Ada@Example.com"),
        dob: s("1990-12-10"),
        dialcode: s("61"),
        phone: s("412345678"),
        address: s("1 Example Street"),
        city: s("Sydney"),
        state: s("NSW"),
        postcode: s("2000"),
        country: s("aus"),
        ..RawReceiver::default()
    }
}

fn clock() -> Arc<MockClock> {
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    Arc::new(clock)
}

fn ids() -> Arc<MockIdGenerator> {
    let mut ids = MockIdGenerator::new();
    let mut next = 0u128;
    ids.expect_new_id().returning(move || {
        next += 1;
        Uuid::from_u128(next)
    });
    Arc::new(ids)
}

fn kyc_ok() -> Arc<MockKycProvider> {
    let mut kyc = MockKycProvider::new();
    kyc.expect_start_check()
        .returning(|_| Ok("app_1".to_owned()));
    Arc::new(kyc)
}

fn service(store: MockReceiverStore, kyc: Arc<MockKycProvider>) -> ReceiverService {
    ReceiverService::new(
        Arc::new(store),
        kyc,
        clock(),
        ids(),
        CursorKey::new([3; 32]),
    )
}

fn invalid_codes<T: std::fmt::Debug>(result: Result<T, CreateReceiverError>) -> Vec<ErrorCode> {
    match result {
        Err(CreateReceiverError::Invalid(errors)) => errors.0.into_iter().map(|e| e.code).collect(),
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[tokio::test]
async fn creates_a_pending_receiver_with_its_event_in_one_store_call() {
    let mut store = MockReceiverStore::new();
    store
        .expect_insert_receiver()
        .withf(|receiver, events, _| {
            let event = &events[0];
            events.len() == 1
                && receiver.status == ReceiverStatus::Pending
                && receiver.kyc_status == KycStatus::Pending
                && receiver.applicant_id == "app_1"
                && receiver.address.country.as_str() == "AUS"
                && event.kind == EventKind::ReceiverCreated
                && event.object_id == receiver.id.as_uuid()
                && event.payload["subaccount_id"] == event.payload["subccount_id"]
                && event.payload["timestamp"] == NOW_MS
                && event.payload["status"] == "pending"
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    let created = service(store, kyc_ok())
        .create(&caller(), &raw(), &WriteKey::none())
        .await;
    let Ok(created) = created else {
        panic!("{created:?}")
    };
    assert_eq!(created.subaccount_id, caller().subaccount_id);
    assert_eq!(created.email, "Ada@Example.com");
    assert_eq!(created.created_at, now());
}

#[tokio::test]
async fn invalid_input_reaches_neither_the_kyc_provider_nor_the_store() {
    let mut store = MockReceiverStore::new();
    store.expect_insert_receiver().never();
    let mut kyc = MockKycProvider::new();
    kyc.expect_start_check().never();
    let mut bad = raw();
    bad.email = Some("not-an-email".to_owned());
    bad.phone = Some("12".to_owned());
    let codes = invalid_codes(
        service(store, Arc::new(kyc))
            .create(&caller(), &bad, &WriteKey::none())
            .await,
    );
    assert_eq!(codes, [ErrorCode::Revr214, ErrorCode::Revr219]);
}

#[tokio::test]
async fn another_subaccounts_id_is_answered_as_not_found() {
    let mut store = MockReceiverStore::new();
    store.expect_insert_receiver().never();
    let mut foreign = raw();
    foreign.subaccount_id = Some(Uuid::from_u128(0xF).to_string());
    let codes = invalid_codes(
        service(store, kyc_ok())
            .create(&caller(), &foreign, &WriteKey::none())
            .await,
    );
    assert_eq!(codes, [ErrorCode::Suba101]);

    let mut store = MockReceiverStore::new();
    store.expect_insert_receiver().never();
    foreign.city = None;
    let codes = invalid_codes(
        service(store, kyc_ok())
            .create(&caller(), &foreign, &WriteKey::none())
            .await,
    );
    assert_eq!(codes, [ErrorCode::Suba101, ErrorCode::Revr210]);
}

#[tokio::test]
async fn duplicates_map_to_their_own_errors() {
    for (outcome, expected) in [
        (InsertReceiverError::DuplicateEmail, "EmailTaken"),
        (InsertReceiverError::DuplicateReference, "ReferenceTaken"),
    ] {
        let mut store = MockReceiverStore::new();
        let mut outcome = Some(outcome);
        store
            .expect_insert_receiver()
            .times(1)
            .returning(move |_, _, _| {
                Err(outcome
                    .take()
                    .unwrap_or(InsertReceiverError::DuplicateEmail))
            });
        let result = service(store, kyc_ok())
            .create(&caller(), &raw(), &WriteKey::none())
            .await;
        let got = match result {
            Err(CreateReceiverError::EmailTaken) => "EmailTaken",
            Err(CreateReceiverError::ReferenceTaken) => "ReferenceTaken",
            other => panic!("{other:?}"),
        };
        assert_eq!(got, expected);
    }
}

#[tokio::test]
async fn a_kyc_outage_stores_nothing() {
    let mut store = MockReceiverStore::new();
    store.expect_insert_receiver().never();
    let mut kyc = MockKycProvider::new();
    kyc.expect_start_check()
        .returning(|_| Err(PortError::Unavailable(anyhow::anyhow!("down"))));
    let result = service(store, Arc::new(kyc))
        .create(&caller(), &raw(), &WriteKey::none())
        .await;
    assert!(matches!(
        result,
        Err(CreateReceiverError::Port(PortError::Unavailable(_)))
    ));
}

#[tokio::test]
async fn get_answers_not_found_for_malformed_and_missing_ids() {
    let mut store = MockReceiverStore::new();
    store
        .expect_find_receiver()
        .with(mockall::predicate::eq(caller().subaccount_id), always())
        .times(1)
        .returning(|_, _| Ok(None));
    let service = service(store, kyc_ok());
    assert!(matches!(
        service.get(&caller(), "not-a-uuid").await,
        Err(GetReceiverError::NotFound)
    ));
    let missing = Uuid::from_u128(77).to_string();
    assert!(matches!(
        service.get(&caller(), &missing).await,
        Err(GetReceiverError::NotFound)
    ));
}

fn receiver_at(n: u128) -> Receiver {
    ReceiverBuilder::new()
        .id(ReceiverId::from_uuid(Uuid::from_u128(n)))
        .subaccount(caller().subaccount_id)
        .email(&format!("ada{n}@example.com"))
        .status(ReceiverStatus::Pending)
        .kyc_status(KycStatus::Pending)
        .created_at(now())
        .build()
}

fn list_query(lastkey: Option<String>) -> ListReceiversQuery {
    ListReceiversQuery {
        subaccount_id: Some(caller().subaccount_id.to_string()),
        filter: Default::default(),
        limit: 2,
        lastkey,
    }
}

#[tokio::test]
async fn list_seals_a_cursor_that_opens_to_the_last_item_of_the_page() {
    let mut store = MockReceiverStore::new();
    store
        .expect_list_receivers()
        .withf(|_, _, page| page.after.is_none() && page.limit == 2)
        .times(1)
        .returning(|_, _, _| Ok(vec![receiver_at(3), receiver_at(2), receiver_at(1)]));
    store
        .expect_list_receivers()
        .withf(|_, _, page| page.after.map(|p| p.id) == Some(Uuid::from_u128(2)))
        .times(1)
        .returning(|_, _, _| Ok(vec![receiver_at(1)]));
    let service = service(store, kyc_ok());
    let first = service.list(&caller(), &list_query(None)).await;
    let Ok(first) = first else {
        panic!("{first:?}")
    };
    assert_eq!(first.receivers.len(), 2);
    let lastkey = first
        .lastkey
        .unwrap_or_else(|| panic!("a next page exists"));
    let second = service.list(&caller(), &list_query(Some(lastkey))).await;
    let Ok(second) = second else {
        panic!("{second:?}")
    };
    assert_eq!(second.receivers.len(), 1);
    assert_eq!(second.lastkey, None);
}

#[tokio::test]
async fn list_rejects_missing_foreign_subaccounts_and_bad_cursors() {
    let mut store = MockReceiverStore::new();
    store.expect_list_receivers().never();
    let service = service(store, kyc_ok());
    let codes = |r: Result<ReceiverPage, ListReceiversError>| match r {
        Err(ListReceiversError::Invalid(e)) => e.0.into_iter().map(|e| e.code).collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    let mut missing = list_query(None);
    missing.subaccount_id = None;
    assert_eq!(
        codes(service.list(&caller(), &missing).await),
        [ErrorCode::Revr202]
    );
    let mut foreign = list_query(Some("garbage".to_owned()));
    foreign.subaccount_id = Some(Uuid::from_u128(0xF).to_string());
    assert_eq!(
        codes(service.list(&caller(), &foreign).await),
        [ErrorCode::Suba101, ErrorCode::Req003]
    );
}

#[tokio::test]
async fn a_kyc_outcome_moves_a_pending_receiver_once_with_its_event() {
    let mut store = MockReceiverStore::new();
    store
        .expect_find_receiver()
        .times(1)
        .returning(|_, _| Ok(Some(receiver_at(1))));
    store
        .expect_apply_kyc()
        .withf(|receiver, expected, events, reaction, _| {
            reaction.trigger() == crate::payout::change::ReactionTrigger::KycCompleted
                && receiver.status == ReceiverStatus::Active
                && receiver.kyc_status == KycStatus::Completed
                && *expected == KycStatus::Pending
                && events.len() == 1
                && events[0].kind == EventKind::ReceiverKycUpdate
                && events[0].payload["kyc_status"] == "completed"
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let id = Uuid::from_u128(1).to_string();
    let applied = service(store, kyc_ok())
        .apply_kyc_outcome(
            caller().subaccount_id,
            &id,
            KycOutcome::Completed,
            &WriteKey::none(),
        )
        .await;
    assert_eq!(applied.map(|r| r.status).ok(), Some(ReceiverStatus::Active));
}

#[tokio::test]
async fn a_decided_or_concurrently_decided_check_is_refused() {
    let decided = Receiver {
        kyc_status: KycStatus::Failed,
        status: ReceiverStatus::Failed,
        ..receiver_at(1)
    };
    let mut store = MockReceiverStore::new();
    store
        .expect_find_receiver()
        .returning(move |_, _| Ok(Some(decided.clone())));
    store.expect_apply_kyc().never();
    let id = Uuid::from_u128(1).to_string();
    let refused = service(store, kyc_ok())
        .apply_kyc_outcome(
            caller().subaccount_id,
            &id,
            KycOutcome::Completed,
            &WriteKey::none(),
        )
        .await;
    assert!(matches!(
        refused,
        Err(KycOutcomeError::AlreadyDecided(KycStatus::Failed))
    ));

    // Lost the race: the conditional update did not apply; the stored decision is reported.
    let mut store = MockReceiverStore::new();
    let mut reads = 0;
    store
        .expect_find_receiver()
        .times(2)
        .returning(move |_, _| {
            reads += 1;
            Ok(Some(if reads == 1 {
                receiver_at(1)
            } else {
                Receiver {
                    kyc_status: KycStatus::Completed,
                    status: ReceiverStatus::Active,
                    ..receiver_at(1)
                }
            }))
        });
    store
        .expect_apply_kyc()
        .times(1)
        .returning(|_, _, _, _, _| Ok(false));
    let raced = service(store, kyc_ok())
        .apply_kyc_outcome(
            caller().subaccount_id,
            &id,
            KycOutcome::Failed,
            &WriteKey::none(),
        )
        .await;
    assert!(matches!(
        raced,
        Err(KycOutcomeError::AlreadyDecided(KycStatus::Completed))
    ));
    let mut store = MockReceiverStore::new();
    store.expect_find_receiver().returning(|_, _| Ok(None));
    let missing = service(store, kyc_ok())
        .apply_kyc_outcome(
            caller().subaccount_id,
            "nope",
            KycOutcome::Failed,
            &WriteKey::none(),
        )
        .await;
    assert!(matches!(missing, Err(KycOutcomeError::NotFound)));
}

#[tokio::test]
async fn the_request_key_reaches_the_store_with_the_response_of_what_it_writes() {
    use crate::idempotency::{IdempotencyKey, KeyClaim, KeyMode, StoredResponse};
    let claim = KeyClaim {
        subaccount: caller().subaccount_id,
        key: IdempotencyKey::parse("create-1").unwrap_or_else(|| unreachable!()),
        lease_until: now(),
    };
    let expected = claim.clone();
    let mut store = MockReceiverStore::new();
    store
        .expect_insert_receiver()
        .withf(move |receiver, _, key| {
            key.commit(receiver).is_some_and(|c| {
                c.claim == &expected
                    && c.response.as_ref().map(|r| r.body.clone())
                        == Some(receiver.email.clone().into_bytes())
            })
        })
        .times(1)
        .returning(|_, _, _| Ok(()));
    let key = WriteKey::new(
        KeyMode::Claimed(claim),
        Arc::new(|r: &Receiver| {
            Some(StoredResponse {
                status: 200,
                body: r.email.clone().into_bytes(),
            })
        }),
    );
    let created = service(store, kyc_ok())
        .create(&caller(), &raw(), &key)
        .await;
    assert!(created.is_ok(), "{created:?}");
}
