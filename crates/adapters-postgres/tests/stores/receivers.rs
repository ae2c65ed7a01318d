//! `ReceiverStore`: insert, find (with tenancy), uniqueness, the outbox, keyset listing.

use std::collections::HashSet;
use std::sync::Arc;

use diesel::sql_types::{Integer, Jsonb, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::country::CountryCode;
use domain::idempotency::WriteKey;
use domain::ids::{ReceiverId, SubaccountId};
use domain::paging::{PageRequest, Position};
use domain::receiver::ports::{InsertReceiverError, ReceiverStore};
use domain::receiver::query::ReceiverFilter;
use domain::receiver::{KycStatus, Receiver, ReceiverStatus};
use uuid::Uuid;

use crate::support::{Count, Fixture, PlanLine, at, created_event, receiver};

const T0: i64 = 1_700_000_000_123_456;

async fn insert(fx: &Fixture, r: &Receiver) -> Result<(), InsertReceiverError> {
    fx.store
        .insert_receiver(r, &[created_event(r)], &WriteKey::none())
        .await
}

async fn outbox_rows(fx: &Fixture, subaccount: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM outbox_events WHERE subaccount_id = $1",
        subaccount.as_uuid(),
    )
    .await
}

async fn receiver_rows(fx: &Fixture, subaccount: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM receivers WHERE subaccount_id = $1",
        subaccount.as_uuid(),
    )
    .await
}

#[tokio::test]
async fn inserted_receiver_is_found_by_its_own_subaccount_only() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let mut r = receiver(sub, "Ada.Lovelace@Example.com", at(T0));
    r.middle_name = "King".to_owned();
    r.reference = Some("ref-1".to_owned());
    r.address.address2 = "Unit 4".to_owned();
    r.updated_at = at(T0 + 1);
    insert(&fx, &r).await.unwrap();

    let found = fx.store.find_receiver(sub, r.id).await.unwrap();
    assert_eq!(found, Some(r.clone()));

    // Tenancy: another subaccount does not see it.
    assert!(fx.store.find_receiver(other, r.id).await.unwrap().is_none());
    // The set read: the same receiver, by its own subaccount only; unknown ids left out.
    let asked = [r.id, ReceiverId::from_uuid(Uuid::new_v4())];
    assert_eq!(
        fx.store.find_receivers(sub, &asked).await.unwrap(),
        vec![r.clone()]
    );
    assert!(
        fx.store
            .find_receivers(other, &asked)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(fx.store.find_receivers(sub, &[]).await.unwrap().is_empty());
    // Unknown id.
    let unknown = ReceiverId::from_uuid(Uuid::new_v4());
    assert!(
        fx.store
            .find_receiver(sub, unknown)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn receiver_without_optional_fields_round_trips() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let mut r = receiver(sub, "plain@example.com", at(T0));
    r.gender = None;
    r.status = ReceiverStatus::Active;
    r.kyc_status = KycStatus::Completed;
    insert(&fx, &r).await.unwrap();
    assert_eq!(fx.store.find_receiver(sub, r.id).await.unwrap(), Some(r));
}

#[tokio::test]
async fn duplicate_email_differing_in_case_is_refused_and_writes_no_event() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let first = receiver(sub, "ada@example.com", at(T0));
    insert(&fx, &first).await.unwrap();
    assert_eq!(outbox_rows(&fx, sub).await, 1);

    let second = receiver(sub, "ADA@Example.COM", at(T0 + 1));
    let err = insert(&fx, &second).await.unwrap_err();
    assert!(
        matches!(err, InsertReceiverError::DuplicateEmail),
        "{err:?}"
    );
    // The transaction rolled back: neither the receiver nor its event was written.
    assert_eq!(outbox_rows(&fx, sub).await, 1);
    assert_eq!(receiver_rows(&fx, sub).await, 1);
    assert!(
        fx.store
            .find_receiver(sub, second.id)
            .await
            .unwrap()
            .is_none()
    );

    // The same e-mail in another subaccount is fine.
    let elsewhere = receiver(other, "ada@example.com", at(T0 + 2));
    insert(&fx, &elsewhere).await.unwrap();
    assert_eq!(outbox_rows(&fx, other).await, 1);
}

#[tokio::test]
async fn duplicate_reference_is_refused_but_many_receivers_may_have_none() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let mut first = receiver(sub, "one@example.com", at(T0));
    first.reference = Some("INV-1".to_owned());
    insert(&fx, &first).await.unwrap();

    let mut second = receiver(sub, "two@example.com", at(T0 + 1));
    second.reference = Some("INV-1".to_owned());
    let err = insert(&fx, &second).await.unwrap_err();
    assert!(
        matches!(err, InsertReceiverError::DuplicateReference),
        "{err:?}"
    );
    assert_eq!(outbox_rows(&fx, sub).await, 1);

    // Two receivers without a reference.
    insert(&fx, &receiver(sub, "three@example.com", at(T0 + 2)))
        .await
        .unwrap();
    insert(&fx, &receiver(sub, "four@example.com", at(T0 + 3)))
        .await
        .unwrap();
    assert_eq!(receiver_rows(&fx, sub).await, 3);

    // The same reference in another subaccount is fine.
    let mut elsewhere = receiver(other, "one@example.com", at(T0));
    elsewhere.reference = Some("INV-1".to_owned());
    insert(&fx, &elsewhere).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_of_one_email_store_exactly_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let barrier = Arc::new(tokio::sync::Barrier::new(16));
    let tasks: Vec<_> = (0..16)
        .map(|i| {
            let store = fx.store.clone();
            let barrier = Arc::clone(&barrier);
            // Different ids, same e-mail (differing in case for half of them).
            let email = if i % 2 == 0 {
                "race@example.com"
            } else {
                "Race@Example.com"
            };
            let r = receiver(sub, email, at(T0 + i));
            tokio::spawn(async move {
                barrier.wait().await;
                store
                    .insert_receiver(&r, &[created_event(&r)], &WriteKey::none())
                    .await
            })
        })
        .collect();
    let mut ok = 0;
    let mut duplicate = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => ok += 1,
            Err(InsertReceiverError::DuplicateEmail) => duplicate += 1,
            Err(e) => panic!("unexpected error: {e:?}"),
        }
    }
    assert_eq!((ok, duplicate), (1, 15));
    assert_eq!(receiver_rows(&fx, sub).await, 1);
    assert_eq!(outbox_rows(&fx, sub).await, 1);
}

#[derive(diesel::QueryableByName)]
struct EventRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Text)]
    event_type: String,
    #[diesel(sql_type = Integer)]
    sequence: i32,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
}

#[tokio::test]
async fn inserting_a_receiver_writes_its_created_event_to_the_outbox() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let r = receiver(sub, "ada@example.com", at(T0));
    let event = created_event(&r);
    fx.store
        .insert_receiver(&r, std::slice::from_ref(&event), &WriteKey::none())
        .await
        .unwrap();

    let mut conn = fx.raw().await;
    let rows: Vec<EventRow> = diesel::sql_query(
        "SELECT id, subaccount_id, event_type, sequence, status, payload \
         FROM outbox_events WHERE object_id = $1",
    )
    .bind::<SqlUuid, _>(r.id.as_uuid())
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.id, event.id.as_uuid());
    assert_eq!(row.subaccount_id, sub.as_uuid());
    assert_eq!(row.event_type, "receiverCreated");
    assert_eq!(row.sequence, 1);
    assert_eq!(row.status, "pending");
    assert_eq!(row.payload["sequence"], serde_json::json!(1));
    assert_eq!(row.payload["event"], "receiverCreated");
    assert_eq!(row.payload["receiver_id"], r.id.to_string());
    assert_eq!(row.payload["subaccount_id"], sub.to_string());
    assert_eq!(row.payload["subccount_id"], sub.to_string());
}

/// Loads every page of `filter` with `limit` 10, checking the overfetch contract on the way.
async fn all_pages(fx: &Fixture, sub: SubaccountId, filter: &ReceiverFilter) -> Vec<Receiver> {
    let mut all = Vec::new();
    let mut after = None;
    loop {
        let page = PageRequest { limit: 10, after };
        let mut rows = fx.store.list_receivers(sub, filter, &page).await.unwrap();
        assert!(rows.len() <= 11, "at most limit + 1 rows");
        let more = rows.len() > 10;
        rows.truncate(10);
        after = rows.last().map(|r| Position {
            created_at: r.created_at,
            id: r.id.as_uuid(),
        });
        all.extend(rows);
        if !more {
            return all;
        }
        assert!(all.len() <= 1000, "paging does not terminate");
    }
}

fn newest_first(mut receivers: Vec<Receiver>) -> Vec<ReceiverId> {
    receivers.sort_by_key(|r| std::cmp::Reverse((r.created_at, r.id.as_uuid())));
    receivers.into_iter().map(|r| r.id).collect()
}

fn ids(receivers: &[Receiver]) -> Vec<ReceiverId> {
    receivers.iter().map(|r| r.id).collect()
}

#[tokio::test]
async fn listing_pages_through_every_receiver_once_newest_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let mut mine = Vec::new();
    for i in 0..25_i64 {
        // Receivers 14 and 15 share a timestamp: the id breaks the tie. Newest first they are
        // rows 10 and 11, so the first page ends on one of them and the second must start with
        // the other: the row comparison has to use both columns.
        let micros = if i == 15 {
            T0 + 14 * 1_000
        } else {
            T0 + i * 1_000
        };
        let r = receiver(sub, &format!("r{i}@example.com"), at(micros));
        insert(&fx, &r).await.unwrap();
        mine.push(r);
    }
    // Noise in another subaccount, interleaved in time.
    for i in 0..5_i64 {
        let r = receiver(
            other,
            &format!("r{i}@example.com"),
            at(T0 + i * 1_000 + 500),
        );
        insert(&fx, &r).await.unwrap();
    }

    let first = fx
        .store
        .list_receivers(
            sub,
            &ReceiverFilter::default(),
            &PageRequest {
                limit: 10,
                after: None,
            },
        )
        .await
        .unwrap();
    assert_eq!(first.len(), 11, "limit + 1 rows when more exist");
    let boundary: HashSet<_> = [first[9].id, first[10].id].into();
    assert_eq!(boundary, [mine[14].id, mine[15].id].into());

    let listed = all_pages(&fx, sub, &ReceiverFilter::default()).await;
    assert_eq!(ids(&listed), newest_first(mine.clone()));
    let unique: HashSet<_> = listed.iter().map(|r| r.id).collect();
    assert_eq!(unique.len(), 25);
    assert!(listed.iter().all(|r| r.subaccount_id == sub));
    // Each listed receiver is the stored value.
    for r in &listed {
        let original = mine.iter().find(|m| m.id == r.id).unwrap();
        assert_eq!(r, original);
    }

    // Starting right after a tied row still returns its twin (the id breaks the tie).
    let (twin_a, twin_b) = (&mine[14], &mine[15]);
    let (higher, lower) = if twin_a.id.as_uuid() > twin_b.id.as_uuid() {
        (twin_a, twin_b)
    } else {
        (twin_b, twin_a)
    };
    let after_higher = fx
        .store
        .list_receivers(
            sub,
            &ReceiverFilter::default(),
            &PageRequest {
                limit: 1,
                after: Some(Position {
                    created_at: higher.created_at,
                    id: higher.id.as_uuid(),
                }),
            },
        )
        .await
        .unwrap();
    // limit 1: the lower twin, plus the overfetched next-older receiver.
    assert_eq!(ids(&after_higher), vec![lower.id, mine[13].id]);

    // The other subaccount sees only its own five.
    let theirs = all_pages(&fx, other, &ReceiverFilter::default()).await;
    assert_eq!(theirs.len(), 5);
    assert!(theirs.iter().all(|r| r.subaccount_id == other));
}

#[tokio::test]
async fn listing_filters_match_exactly_and_email_case_insensitively() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let mut mine = Vec::new();
    for i in 0..12_i64 {
        let mut r = receiver(sub, &format!("Person{i}@Example.com"), at(T0 + i * 1_000));
        if i % 3 == 0 {
            r.status = ReceiverStatus::Active;
            r.kyc_status = KycStatus::Completed;
        }
        if i % 4 == 0 {
            r.first_name = "Grace".to_owned();
            r.address.country = CountryCode::parse("NZL").unwrap();
        }
        if i == 5 {
            r.reference = Some("REF-5".to_owned());
        }
        insert(&fx, &r).await.unwrap();
        mine.push(r);
    }
    // Another subaccount with receivers matching every filter below.
    for i in 0..3_i64 {
        let mut r = receiver(other, &format!("Person{i}@Example.com"), at(T0 + i));
        r.status = ReceiverStatus::Active;
        r.kyc_status = KycStatus::Completed;
        r.first_name = "Grace".to_owned();
        r.address.country = CountryCode::parse("NZL").unwrap();
        if i == 0 {
            r.reference = Some("REF-5".to_owned());
        }
        insert(&fx, &r).await.unwrap();
    }

    let expect = |pred: &dyn Fn(&Receiver) -> bool| {
        newest_first(mine.iter().filter(|r| pred(r)).cloned().collect())
    };
    let check = async |filter: ReceiverFilter, expected: Vec<ReceiverId>| {
        let listed = all_pages(&fx, sub, &filter).await;
        assert!(!expected.is_empty() || listed.is_empty());
        assert_eq!(ids(&listed), expected, "{filter:?}");
    };

    check(
        ReceiverFilter {
            status: Some(ReceiverStatus::Active),
            ..Default::default()
        },
        expect(&|r| r.status == ReceiverStatus::Active),
    )
    .await;
    check(
        ReceiverFilter {
            kyc_status: Some(KycStatus::Pending),
            ..Default::default()
        },
        expect(&|r| r.kyc_status == KycStatus::Pending),
    )
    .await;
    // The filter carries the lower-cased e-mail (as `ListReceiversQuery::parse` builds it); the
    // stored e-mail has capitals.
    check(
        ReceiverFilter {
            email: Some("person7@example.com".to_owned()),
            ..Default::default()
        },
        vec![mine[7].id],
    )
    .await;
    check(
        ReceiverFilter {
            first_name: Some("Grace".to_owned()),
            ..Default::default()
        },
        expect(&|r| r.first_name == "Grace"),
    )
    .await;
    // First name is exact, not case-insensitive or a prefix.
    check(
        ReceiverFilter {
            first_name: Some("grace".to_owned()),
            ..Default::default()
        },
        Vec::new(),
    )
    .await;
    check(
        ReceiverFilter {
            first_name: Some("Gra".to_owned()),
            ..Default::default()
        },
        Vec::new(),
    )
    .await;
    check(
        ReceiverFilter {
            country: Some(CountryCode::parse("NZL").unwrap()),
            ..Default::default()
        },
        expect(&|r| r.address.country.as_str() == "NZL"),
    )
    .await;
    check(
        ReceiverFilter {
            reference: Some("REF-5".to_owned()),
            ..Default::default()
        },
        vec![mine[5].id],
    )
    .await;
    // Filters combine with AND.
    check(
        ReceiverFilter {
            status: Some(ReceiverStatus::Active),
            first_name: Some("Grace".to_owned()),
            ..Default::default()
        },
        expect(&|r| r.status == ReceiverStatus::Active && r.first_name == "Grace"),
    )
    .await;
    // Filters matching nothing.
    check(
        ReceiverFilter {
            status: Some(ReceiverStatus::Failed),
            ..Default::default()
        },
        Vec::new(),
    )
    .await;
    check(
        ReceiverFilter {
            email: Some("nobody@example.com".to_owned()),
            ..Default::default()
        },
        Vec::new(),
    )
    .await;
    check(
        ReceiverFilter {
            reference: Some("REF-404".to_owned()),
            ..Default::default()
        },
        Vec::new(),
    )
    .await;
}

#[tokio::test]
async fn keyset_page_query_uses_the_receivers_page_index() {
    let fx = Fixture::new().await;
    let subs = [
        fx.subaccount("A").await.id,
        fx.subaccount("B").await.id,
        fx.subaccount("C").await.id,
        fx.subaccount("D").await.id,
    ];
    let mut conn = fx.raw().await;
    // ~2000 rows spread over four subaccounts, inserted in bulk.
    for sub in subs {
        diesel::sql_query(
            "INSERT INTO receivers (id, subaccount_id, first_name, last_name, email, email_normalized, dob, \
               dialcode, phone, address, city, state, country, postcode, applicant_id, status, \
               kyc_status, created_at, updated_at) \
             SELECT gen_random_uuid(), $1, 'Ada', 'Lovelace', 'r' || g || '@example.com', \
               'r' || g || '@example.com', \
               DATE '1990-01-31', '61', '0412345678', '12 Smith St', 'Sydney', 'NSW', 'AUS', \
               '2000', 'app_' || g, 1, 0, \
               TIMESTAMPTZ '2024-01-01' + g * INTERVAL '1 minute', \
               TIMESTAMPTZ '2024-01-01' + g * INTERVAL '1 minute' \
             FROM generate_series(1, 500) AS g",
        )
        .bind::<SqlUuid, _>(sub.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    }
    let n: Count = diesel::sql_query("SELECT count(*) AS n FROM receivers")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(n.n, 2000);
    diesel::sql_query("ANALYZE receivers")
        .execute(&mut conn)
        .await
        .unwrap();

    // The query `list_receivers` sends for a second page, without filters. No planner settings
    // are changed (no `enable_seqscan = off`): the index must win on its own.
    let plan: Vec<PlanLine> = diesel::sql_query(
        "EXPLAIN SELECT * FROM receivers \
         WHERE subaccount_id = $1 AND (created_at, id) < ($2, $3) \
         ORDER BY created_at DESC, id DESC LIMIT 11",
    )
    .bind::<SqlUuid, _>(subs[1].as_uuid())
    .bind::<diesel::sql_types::Timestamptz, _>(at(1_704_067_200_000_000 + 250 * 60_000_000))
    .bind::<SqlUuid, _>(Uuid::max())
    .load(&mut conn)
    .await
    .unwrap();
    let plan = plan
        .into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(plan.contains("receivers_page"), "plan:\n{plan}");
    assert!(!plan.contains("Sort"), "no sort needed:\n{plan}");
}

#[derive(diesel::QueryableByName, Debug, PartialEq, Eq)]
struct SequencedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    object_id: Uuid,
    #[diesel(sql_type = Integer)]
    sequence: i32,
    #[diesel(sql_type = Integer)]
    payload_sequence: i32,
}

#[tokio::test]
async fn events_written_together_take_their_objects_next_sequences_in_order() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("sequences").await.id;
    let (first, second) = (
        receiver(sub, "first@example.com", at(T0)),
        receiver(sub, "second@example.com", at(T0 + 1)),
    );
    let kyc = |r: &Receiver| {
        domain::events::OutboxEvent::receiver(
            domain::events::EventKind::ReceiverKycUpdate,
            domain::ids::EventId::from_uuid(Uuid::new_v4()),
            r,
            r.created_at,
        )
    };
    // One statement for the first event, one for the other three (two objects, one of them
    // twice); then, in a later transaction, one for the first again and one for two more of
    // `first`, which continue its numbers.
    let together = [
        created_event(&first),
        kyc(&first),
        created_event(&second),
        kyc(&first),
    ];
    fx.store
        .insert_receiver(&first, &together, &WriteKey::none())
        .await
        .unwrap();
    let later = [created_event(&second), kyc(&first), kyc(&first)];
    fx.store
        .insert_receiver(&second, &later, &WriteKey::none())
        .await
        .unwrap();

    let mut conn = fx.raw().await;
    let rows: Vec<SequencedRow> = diesel::sql_query(
        "SELECT id, object_id, sequence, (payload->>'sequence')::int AS payload_sequence \
         FROM outbox_events WHERE subaccount_id = $1",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .load(&mut conn)
    .await
    .unwrap();
    let expected = [
        (&together[0], first.id, 1),
        (&together[1], first.id, 2),
        (&together[2], second.id, 1),
        (&together[3], first.id, 3),
        (&later[0], second.id, 2),
        (&later[1], first.id, 4),
        (&later[2], first.id, 5),
    ];
    assert_eq!(rows.len(), expected.len());
    for (event, object, sequence) in expected {
        let row = rows
            .iter()
            .find(|r| r.id == event.id.as_uuid())
            .unwrap_or_else(|| panic!("event {} missing", event.id));
        assert_eq!(
            (row.object_id, row.sequence, row.payload_sequence),
            (object.as_uuid(), sequence, sequence),
            "{row:?}"
        );
    }
}

#[derive(diesel::QueryableByName)]
struct EmailKey {
    #[diesel(sql_type = Text)]
    email: String,
    #[diesel(sql_type = Text)]
    email_normalized: String,
}

async fn email_key(fx: &Fixture, id: ReceiverId) -> EmailKey {
    let mut conn = fx.raw().await;
    diesel::sql_query("SELECT email, email_normalized FROM receivers WHERE id = $1")
        .bind::<SqlUuid, _>(id.as_uuid())
        .get_result(&mut conn)
        .await
        .unwrap()
}

#[tokio::test]
async fn emails_differing_by_width_quoting_case_folding_or_idna_collide_and_are_kept_as_sent() {
    let fx = Fixture::new().await;
    for (n, (first, second)) in [
        ("jose@example.com", "ｊｏｓｅ@example.com"),
        ("jose@example.com", "\"jose\"@example.com"),
        ("straße@example.com", "STRASSE@example.com"),
        ("jose@exämple.com", "jose@xn--exmple-cua.com"),
        ("jose@xn--exmple-cua.com", "JOSE@EXÄMPLE.COM"),
    ]
    .into_iter()
    .enumerate()
    {
        let sub = fx.subaccount(&format!("Acme {n}")).await.id;
        let kept = receiver(sub, first, at(T0));
        insert(&fx, &kept).await.unwrap();
        let stored = email_key(&fx, kept.id).await;
        assert_eq!(stored.email, first, "stored as sent");
        let duplicate = receiver(sub, second, at(T0 + 1));
        let err = insert(&fx, &duplicate).await.unwrap_err();
        assert!(
            matches!(err, InsertReceiverError::DuplicateEmail),
            "{first} / {second}: {err:?}"
        );
        assert_eq!(receiver_rows(&fx, sub).await, 1);
        // The list filter finds the receiver by the other spelling, and returns it as sent.
        let found = fx
            .store
            .list_receivers(
                sub,
                &ReceiverFilter {
                    email: Some(second.to_owned()),
                    ..Default::default()
                },
                &PageRequest {
                    limit: 10,
                    after: None,
                },
            )
            .await
            .unwrap();
        assert_eq!(
            found.iter().map(|r| r.email.as_str()).collect::<Vec<_>>(),
            vec![first]
        );
    }
    // A quoted local part that is not a dot-atom is another mailbox.
    let sub = fx.subaccount("Quoted").await.id;
    insert(&fx, &receiver(sub, "jose@example.com", at(T0)))
        .await
        .unwrap();
    insert(&fx, &receiver(sub, "\"jo se\"@example.com", at(T0 + 1)))
        .await
        .unwrap();
}

#[tokio::test]
async fn rekeying_recomputes_old_keys_and_leaves_stored_duplicates_their_old_key() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let rows = [
        ("ＳＴＲＡＳＳＥ@example.com", "ｓｔｒａｓｓｅ@example.com"),
        ("jose@exämple.com", "jose@exämple.com"),
        ("ｊｏｓｅ@example.com", "ｊｏｓｅ@example.com"),
        ("jose@example.com", "jose@example.com"),
    ];
    let mut ids = Vec::new();
    for (n, (email, old_key)) in rows.into_iter().enumerate() {
        let r = receiver(sub, email, at(T0 + i64::try_from(n).unwrap()));
        insert(&fx, &r).await.unwrap();
        // Put back the key the previous normalisation (lower-casing only) stored.
        let mut conn = fx.raw().await;
        diesel::sql_query("UPDATE receivers SET email_normalized = $2 WHERE id = $1")
            .bind::<SqlUuid, _>(r.id.as_uuid())
            .bind::<Text, _>(old_key)
            .execute(&mut conn)
            .await
            .unwrap();
        ids.push(r.id);
    }
    let mut conn = fx.raw().await;
    // A database from before this version of the key: the template was migrated (marked
    // current), so take the mark off.
    diesel::sql_query("DELETE FROM maintenance_markers")
        .execute(&mut conn)
        .await
        .unwrap();
    let report = adapters_postgres::rekey_receiver_emails(&mut conn)
        .await
        .unwrap();
    assert_eq!(report.updated, 2);
    assert_eq!(report.kept_old_key, vec![ids[2].as_uuid()]);
    let keys = [
        "strasse@example.com",
        "jose@xn--exmple-cua.com",
        "ｊｏｓｅ@example.com",
        "jose@example.com",
    ];
    for (id, key) in ids.iter().zip(keys) {
        assert_eq!(email_key(&fx, *id).await.email_normalized, key);
    }
    // Marked done: a second run scans nothing; unmarked again, it changes nothing and reports
    // the same duplicate.
    let again = adapters_postgres::rekey_receiver_emails(&mut conn)
        .await
        .unwrap();
    assert_eq!(again, adapters_postgres::EmailRekey::default());
    diesel::sql_query("DELETE FROM maintenance_markers")
        .execute(&mut conn)
        .await
        .unwrap();
    let again = adapters_postgres::rekey_receiver_emails(&mut conn)
        .await
        .unwrap();
    assert_eq!(again.updated, 0);
    assert_eq!(again.kept_old_key, vec![ids[2].as_uuid()]);
    // New receivers now meet the recomputed keys.
    let err = insert(&fx, &receiver(sub, "straße@example.com", at(T0 + 9)))
        .await
        .unwrap_err();
    assert!(
        matches!(err, InsertReceiverError::DuplicateEmail),
        "{err:?}"
    );
}

#[tokio::test]
async fn migrating_recomputes_e_mail_keys_after_the_sql_migrations() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let r = receiver(sub, "STRASSE@Exämple.com", at(T0));
    insert(&fx, &r).await.unwrap();
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE receivers SET email_normalized = lower(email) WHERE id = $1")
        .bind::<SqlUuid, _>(r.id.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    // The data is marked current: migrating again scans nothing.
    let applied = adapters_postgres::run_migrations(fx.db.url())
        .await
        .unwrap();
    assert!(applied.is_empty(), "{applied:?}");
    assert_eq!(
        email_key(&fx, r.id).await.email_normalized,
        "strasse@exämple.com"
    );
    // A database from before this key version (no marker): recomputed once, then marked.
    diesel::sql_query("DELETE FROM maintenance_markers WHERE name = 'email_key'")
        .execute(&mut conn)
        .await
        .unwrap();
    adapters_postgres::run_migrations(fx.db.url())
        .await
        .unwrap();
    assert_eq!(
        email_key(&fx, r.id).await.email_normalized,
        "strasse@xn--exmple-cua.com"
    );
}
