//! `PayoutStoryStore`: a payout's story holds the payout, its events with their attempts
//! (oldest first), its ledger entries, its batch, the file that carried it with its line, and
//! the bank's lines about it or its whole file (not another payout's); the search filters
//! across subaccounts and pages newest first without gaps or repeats, ties broken by id.

use diesel::sql_types::{Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::ids::{PayoutId, SubaccountId};
use domain::payout::PayoutStatus;
use domain::payout_story::{PayoutCursor, PayoutSearch, PayoutStoryStore};
use domain::rail::inbound_ports::{InboundStore, RecordedReport, ReportKind, Resolution};
use domain::rail::ports::RailFileStore;
use uuid::Uuid;

use crate::inbound::{inbound_file, line};
use crate::rail_files::{batch_with_payouts, file_of};
use crate::support::{Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;

/// An event about `payout` with one failed and one delivered attempt.
async fn event_with_attempts(fx: &Fixture, sub: SubaccountId, payout: PayoutId, micros: i64) {
    let mut conn = fx.raw().await;
    let event = Uuid::new_v4();
    diesel::sql_query(
        "INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, \
         created_at, status, attempts, next_attempt_at, delivered_at) \
         VALUES ($1, $2, $3, 1, 'payoutCreated', '{}', $4, 'delivered', 2, $4, $4)",
    )
    .bind::<SqlUuid, _>(event)
    .bind::<SqlUuid, _>(sub.as_uuid())
    .bind::<SqlUuid, _>(payout.as_uuid())
    .bind::<Timestamptz, _>(at(micros))
    .execute(&mut conn)
    .await
    .unwrap();
    for (attempt, outcome, code) in [(1, "failed", 500i16), (2, "delivered", 200)] {
        diesel::sql_query(
            "INSERT INTO webhook_attempts (event_id, attempt, subaccount_id, attempted_at, \
             outcome, status_code, latency_ms) VALUES ($1, $2, $3, $4, $5, $6, 7)",
        )
        .bind::<SqlUuid, _>(event)
        .bind::<diesel::sql_types::Integer, _>(attempt)
        .bind::<SqlUuid, _>(sub.as_uuid())
        .bind::<Timestamptz, _>(at(micros + i64::from(attempt) * SECOND))
        .bind::<Text, _>(outcome)
        .bind::<diesel::sql_types::SmallInt, _>(code)
        .execute(&mut conn)
        .await
        .unwrap();
    }
}

async fn ledger_entry(fx: &Fixture, sub: SubaccountId, payout: PayoutId, kind: &str, micros: i64) {
    diesel::sql_query(
        "INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, \
         pending_delta, payout_id, created_at) VALUES ($1, $2, 'USD', $3, -1000, 1000, $4, $5)",
    )
    .bind::<SqlUuid, _>(Uuid::new_v4())
    .bind::<SqlUuid, _>(sub.as_uuid())
    .bind::<Text, _>(kind)
    .bind::<SqlUuid, _>(payout.as_uuid())
    .bind::<Timestamptz, _>(at(micros))
    .execute(&mut fx.raw().await)
    .await
    .unwrap();
}

#[tokio::test]
async fn a_story_holds_everything_about_its_payout_and_nothing_about_another() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("story").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 2).await;
    let rail = file_of(sub, batch, &payouts, b"101 NACHA\n");
    fx.store.insert_file(rail.clone()).await.unwrap();
    event_with_attempts(&fx, sub, payouts[0], T0).await;
    event_with_attempts(&fx, sub, payouts[1], T0).await;
    ledger_entry(&fx, sub, payouts[0], "payout_hold", T0).await;
    ledger_entry(&fx, sub, payouts[1], "payout_hold", T0).await;
    let about = |l: RecordedReport, payout: Option<PayoutId>| RecordedReport {
        subaccount_id: Some(sub),
        payout_id: payout,
        rail_file_id: Some(rail.id),
        ..l
    };
    let accepted = about(
        line(0, ReportKind::FileAccepted, Resolution::Applied, T0),
        None,
    );
    let returned = about(
        line(0, ReportKind::Returned, Resolution::Applied, T0 + SECOND),
        Some(payouts[0]),
    );
    let other = about(
        line(1, ReportKind::Returned, Resolution::Applied, T0 + SECOND),
        Some(payouts[1]),
    );
    fx.store
        .record_inbound(
            &inbound_file("ack", b"ack", T0),
            std::slice::from_ref(&accepted),
        )
        .await
        .unwrap();
    fx.store
        .record_inbound(
            &inbound_file("returns", b"returns", T0 + SECOND),
            &[returned.clone(), other],
        )
        .await
        .unwrap();

    let story = fx.store.payout_story(payouts[0]).await.unwrap().unwrap();
    assert_eq!(story.payout.id, payouts[0]);
    assert_eq!(story.payout.subaccount_id, sub);
    assert_eq!(story.events.len(), 1, "only its own event");
    let attempts: Vec<(i32, &str, Option<i16>)> = story.events[0]
        .attempts
        .iter()
        .map(|a| (a.attempt, a.outcome.as_str(), a.status_code))
        .collect();
    assert_eq!(
        attempts,
        [(1, "failed", Some(500)), (2, "delivered", Some(200))]
    );
    assert_eq!(story.ledger.len(), 1, "only its own entries");
    assert_eq!(story.ledger[0].payout_id, Some(payouts[0]));
    assert_eq!(story.batch.as_ref().map(|b| b.id), Some(batch));
    let filed = story.file.as_ref().unwrap();
    assert_eq!(filed.file.id, rail.id);
    assert_eq!(filed.file.payouts, 2);
    assert_eq!(filed.file.size, 10);
    assert_eq!(filed.position, 0);
    assert_eq!(filed.reference, rail.items[0].reference);
    let answers: Vec<_> = story.answers.iter().map(|l| l.report.id).collect();
    assert_eq!(
        answers,
        [accepted.id, returned.id],
        "the file's acceptance and its own return, oldest first; not the other payout's"
    );
    assert_eq!(story.answers[1].file_name, "returns");

    // The second payout's story has its own return and the file's acceptance.
    let second = fx.store.payout_story(payouts[1]).await.unwrap().unwrap();
    assert_eq!(second.answers.len(), 2);
    assert_eq!(second.file.as_ref().map(|f| f.position), Some(1));

    // An unknown payout has no story.
    let unknown = PayoutId::from_uuid(Uuid::new_v4());
    assert!(fx.store.payout_story(unknown).await.unwrap().is_none());
}

#[tokio::test]
async fn a_payout_not_yet_filed_has_no_file_and_no_answers() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("unfiled").await.id;
    let (_, payouts) = batch_with_payouts(&fx, sub, 1).await;
    let story = fx.store.payout_story(payouts[0]).await.unwrap().unwrap();
    assert!(story.file.is_none());
    assert!(story.answers.is_empty());
    assert!(story.events.is_empty() && story.ledger.is_empty());
}

#[tokio::test]
async fn the_search_filters_across_subaccounts_and_pages_without_gaps_or_repeats() {
    let fx = Fixture::new().await;
    let first = fx.subaccount("first").await.id;
    let second = fx.subaccount("second").await.id;
    // Three payouts each, all created at the same instant: pages break the tie by id.
    let (_, mut all) = batch_with_payouts(&fx, first, 3).await;
    let (_, theirs) = batch_with_payouts(&fx, second, 3).await;
    all.extend(theirs.iter().copied());

    let everything = PayoutSearch::default();
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = fx
            .store
            .search_payouts(&everything, after, 4)
            .await
            .unwrap();
        seen.extend(page.iter().map(|p| p.id));
        if page.len() < 4 {
            break;
        }
        after = page.last().map(PayoutCursor::of);
    }
    let mut expected = all.clone();
    expected.sort_by_key(|id| std::cmp::Reverse(id.as_uuid()));
    assert_eq!(
        seen, expected,
        "newest first, ties by id descending, each once"
    );

    let only_second = PayoutSearch {
        subaccount: Some(second),
        ..PayoutSearch::default()
    };
    let found = fx
        .store
        .search_payouts(&only_second, None, 50)
        .await
        .unwrap();
    assert!(found.iter().all(|p| p.subaccount_id == second));
    assert_eq!(found.len(), 3);

    // The test payouts are unassessed: another status finds none; a window before them none.
    let mut in_progress = PayoutSearch::default();
    in_progress.filter.status = Some(PayoutStatus::InProgress);
    assert!(
        fx.store
            .search_payouts(&in_progress, None, 50)
            .await
            .unwrap()
            .is_empty()
    );
    let mut unassessed = PayoutSearch::default();
    unassessed.filter.status = Some(PayoutStatus::Unassessed);
    assert_eq!(
        fx.store
            .search_payouts(&unassessed, None, 50)
            .await
            .unwrap()
            .len(),
        6
    );
    let mut earlier = PayoutSearch::default();
    earlier.filter.created_before = Some(at(T0));
    assert!(
        fx.store
            .search_payouts(&earlier, None, 50)
            .await
            .unwrap()
            .is_empty()
    );
    let mut from = PayoutSearch::default();
    from.filter.created_from = Some(at(T0));
    assert_eq!(
        fx.store
            .search_payouts(&from, None, 50)
            .await
            .unwrap()
            .len(),
        6
    );
    // By receiver: the receiver of the first subaccount's payouts.
    let one = fx.store.payout_story(all[0]).await.unwrap().unwrap().payout;
    let by_receiver = PayoutSearch {
        receiver: Some(one.receiver_id),
        ..PayoutSearch::default()
    };
    let found = fx
        .store
        .search_payouts(&by_receiver, None, 50)
        .await
        .unwrap();
    assert_eq!(found.len(), 3);
    assert!(found.iter().all(|p| p.receiver_id == one.receiver_id));

    // By exact reference.
    diesel::sql_query("UPDATE payouts SET reference = 'inv-7' WHERE id = $1")
        .bind::<SqlUuid, _>(all[4].as_uuid())
        .execute(&mut fx.raw().await)
        .await
        .unwrap();
    let mut by_reference = PayoutSearch::default();
    by_reference.filter.reference = Some("inv-7".to_owned());
    let found = fx
        .store
        .search_payouts(&by_reference, None, 50)
        .await
        .unwrap();
    assert_eq!(found.iter().map(|p| p.id).collect::<Vec<_>>(), [all[4]]);
}
