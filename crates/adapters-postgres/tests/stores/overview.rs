//! `OverviewStore`: payouts counted by UTC day and status inside the window only; balances by
//! subaccount name and asset; the `uploaded` files, oldest first; returns since a time by
//! method; the pending KYC queue's length and oldest; the subaccounts whose recent events are
//! being retried or were given up, with their latest error; and the open batches by asset.

use chrono::{DateTime, Duration, NaiveTime, Utc};
use diesel::sql_types::{BigInt, Int2, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::PayoutMethod;
use domain::ids::{PayoutId, SubaccountId};
use domain::money::Asset;
use domain::overview::{DayStatusCount, OverviewStore, ReturnCount};
use domain::payout::PayoutStatus;
use domain::rail::file::RailFileState;
use domain::rail::inbound_ports::{InboundStore, RecordedReport, ReportKind, Resolution};
use domain::rail::ports::RailFileStore;
use uuid::Uuid;

use crate::accounts::new_receiver;
use crate::inbound::{inbound_file, line};
use crate::rail_files::{batch_with_payouts, file_of};
use crate::support::{Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;
const DAY: i64 = 86_400 * SECOND;

async fn sql(fx: &Fixture, statement: &str) {
    diesel::sql_query(statement)
        .execute(&mut fx.raw().await)
        .await
        .unwrap();
}

async fn move_payout(fx: &Fixture, payout: PayoutId, status: PayoutStatus, created: DateTime<Utc>) {
    diesel::sql_query("UPDATE payouts SET status = $2, created_at = $3 WHERE id = $1")
        .bind::<SqlUuid, _>(payout.as_uuid())
        .bind::<Int2, _>(i16::from(status.code()))
        .bind::<Timestamptz, _>(created)
        .execute(&mut fx.raw().await)
        .await
        .unwrap();
}

fn midnight(t: DateTime<Utc>) -> DateTime<Utc> {
    t.date_naive().and_time(NaiveTime::MIN).and_utc()
}

#[tokio::test]
async fn payouts_are_counted_by_utc_day_and_status_inside_the_window_only() {
    let fx = Fixture::new().await;
    let a = fx.subaccount("alpha").await.id;
    let b = fx.subaccount("beta").await.id;
    let (_, of_a) = batch_with_payouts(&fx, a, 3).await;
    let (_, of_b) = batch_with_payouts(&fx, b, 3).await;
    let today = midnight(at(T0));
    let (from, until) = (today - Duration::days(1), today + Duration::days(1));
    // Yesterday's last microsecond, today's first, and two just outside the window.
    move_payout(
        &fx,
        of_a[0],
        PayoutStatus::Failed,
        today - Duration::microseconds(1),
    )
    .await;
    move_payout(&fx, of_a[1], PayoutStatus::Pending, today).await;
    move_payout(&fx, of_b[0], PayoutStatus::Pending, until).await;
    move_payout(
        &fx,
        of_b[1],
        PayoutStatus::Pending,
        from - Duration::microseconds(1),
    )
    .await;
    // of_a[2] and of_b[2] stay `unassessed` at T0 (today).

    let mut counted = fx.store.payouts_per_day(from, until).await.unwrap();
    counted.sort_by_key(|c| (c.day, c.status.code()));
    let day = |t: DateTime<Utc>| t.date_naive();
    assert_eq!(
        counted,
        [
            DayStatusCount {
                day: day(from),
                status: PayoutStatus::Failed,
                count: 1
            },
            DayStatusCount {
                day: day(today),
                status: PayoutStatus::Pending,
                count: 1
            },
            DayStatusCount {
                day: day(today),
                status: PayoutStatus::Unassessed,
                count: 2
            },
        ]
    );
    let later = until + Duration::days(100);
    assert!(
        fx.store
            .payouts_per_day(later, later + Duration::days(30))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn balances_list_every_subaccount_and_asset_by_name() {
    let fx = Fixture::new().await;
    let a = fx.subaccount("zeta <shop>").await.id;
    let b = fx.subaccount("alpha").await.id;
    for (sub, asset, available, pending) in [
        (a, "USD", 1_000i64, 250i64),
        (b, "USD", 0, 0),
        (b, "AUD", 70, 30),
    ] {
        diesel::sql_query(
            "INSERT INTO balances (subaccount_id, asset, available, pending, updated_at) \
             VALUES ($1, $2, $3, $4, now())",
        )
        .bind::<SqlUuid, _>(sub.as_uuid())
        .bind::<Text, _>(asset)
        .bind::<BigInt, _>(available)
        .bind::<BigInt, _>(pending)
        .execute(&mut fx.raw().await)
        .await
        .unwrap();
    }
    let listed = fx.store.balances(10).await.unwrap();
    let shown: Vec<(SubaccountId, &str, Asset, i64, i64)> = listed
        .iter()
        .map(|b| {
            (
                b.subaccount_id,
                b.name.as_str(),
                b.asset,
                b.available,
                b.pending,
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            (b, "alpha", Asset::Aud, 70, 30),
            (b, "alpha", Asset::Usd, 0, 0),
            (a, "zeta <shop>", Asset::Usd, 1_000, 250),
        ]
    );
    assert_eq!(
        fx.store.balances(2).await.unwrap().len(),
        2,
        "the limit holds"
    );
}

#[tokio::test]
async fn only_uploaded_files_await_an_answer_oldest_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("files").await.id;
    let mut uploaded = Vec::new();
    for (n, state) in [
        (2, RailFileState::Uploaded),
        (1, RailFileState::Uploaded),
        (3, RailFileState::Generated),
        (4, RailFileState::Acknowledged),
    ] {
        let (batch, payouts) = batch_with_payouts(&fx, sub, 1).await;
        let mut file = file_of(sub, batch, &payouts, format!("file {n}").as_bytes());
        file.created_at = at(T0 + n * SECOND);
        fx.store.insert_file(file.clone()).await.unwrap();
        // Placed where the test needs it, as the rail's moves would leave it.
        diesel::sql_query("UPDATE rail_files SET state = $2, uploaded_at = $3 WHERE id = $1")
            .bind::<SqlUuid, _>(file.id.as_uuid())
            .bind::<Text, _>(state.as_str())
            .bind::<Nullable<Timestamptz>, _>((n == 2).then(|| at(T0 + 10 * SECOND)))
            .execute(&mut fx.raw().await)
            .await
            .unwrap();
        if state == RailFileState::Uploaded {
            uploaded.push(file);
        }
    }
    let awaiting = fx.store.awaiting_files(10).await.unwrap();
    assert_eq!(awaiting.count, 2);
    let oldest: Vec<_> = awaiting
        .oldest
        .iter()
        .map(|f| (f.id, f.name.as_str(), f.method, f.uploaded_at))
        .collect();
    assert_eq!(
        oldest,
        [
            (
                uploaded[1].id,
                uploaded[1].name.as_str(),
                PayoutMethod::Ach,
                at(T0 + SECOND)
            ),
            (
                uploaded[0].id,
                uploaded[0].name.as_str(),
                PayoutMethod::Ach,
                at(T0 + 10 * SECOND)
            ),
        ],
        "an upload time is shown when recorded, else the file's creation"
    );
    let one = fx.store.awaiting_files(1).await.unwrap();
    assert_eq!(
        (one.count, one.oldest.len()),
        (2, 1),
        "the count stays exact"
    );
}

#[tokio::test]
async fn returns_are_counted_by_method_since_the_given_time() {
    let fx = Fixture::new().await;
    let kind = |position, kind, micros| line(position, kind, Resolution::Applied, micros);
    let no_amount = RecordedReport {
        amount: None,
        ..kind(1, ReportKind::Returned, T0 + SECOND)
    };
    let lines = [
        kind(0, ReportKind::Returned, T0),
        no_amount,
        kind(2, ReportKind::Settled, T0),
        kind(3, ReportKind::Returned, T0 - 8 * DAY),
    ];
    fx.store
        .record_inbound(&inbound_file("returns.ach", b"returns", T0), &lines)
        .await
        .unwrap();
    let since = at(T0 - 7 * DAY);
    assert_eq!(
        fx.store.returns_since(since).await.unwrap(),
        [ReturnCount {
            method: PayoutMethod::Ach,
            count: 2,
            amount: 1_000
        }]
    );
    assert!(
        fx.store
            .returns_since(at(T0 + DAY))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_kyc_backlog_counts_pending_receivers_and_finds_the_oldest() {
    let fx = Fixture::new().await;
    assert_eq!(fx.store.kyc_backlog().await.unwrap().count, 0);
    let a = fx.subaccount("a").await.id;
    let b = fx.subaccount("b").await.id;
    let mut ids = Vec::new();
    for (sub, email) in [
        (a, "one@example.com"),
        (b, "two@example.com"),
        (a, "three@example.com"),
    ] {
        ids.push(new_receiver(&fx, sub, email).await.id);
    }
    sql(&fx, "UPDATE receivers SET kyc_status = 1").await;
    for (id, created) in [(ids[0], T0 - 3 * DAY), (ids[1], T0 - DAY)] {
        diesel::sql_query("UPDATE receivers SET kyc_status = 0, created_at = $2 WHERE id = $1")
            .bind::<SqlUuid, _>(id.as_uuid())
            .bind::<Timestamptz, _>(at(created))
            .execute(&mut fx.raw().await)
            .await
            .unwrap();
    }
    let backlog = fx.store.kyc_backlog().await.unwrap();
    assert_eq!((backlog.count, backlog.oldest), (2, Some(at(T0 - 3 * DAY))));
}

async fn event(
    fx: &Fixture,
    sub: SubaccountId,
    status: &str,
    attempts: i32,
    micros: i64,
    error: Option<&str>,
) {
    diesel::sql_query(
        "INSERT INTO outbox_events (id, subaccount_id, object_id, sequence, event_type, payload, \
         created_at, status, attempts, next_attempt_at, last_error) \
         VALUES ($1, $2, $3, 1, 'payoutUpdated', '{}', $4, $5, $6, $4, $7)",
    )
    .bind::<SqlUuid, _>(Uuid::new_v4())
    .bind::<SqlUuid, _>(sub.as_uuid())
    .bind::<SqlUuid, _>(Uuid::new_v4())
    .bind::<Timestamptz, _>(at(micros))
    .bind::<Text, _>(status)
    .bind::<Integer, _>(attempts)
    .bind::<Nullable<Text>, _>(error)
    .execute(&mut fx.raw().await)
    .await
    .unwrap();
}

#[tokio::test]
async fn failing_endpoints_are_subaccounts_with_recent_retried_or_given_up_events() {
    let fx = Fixture::new().await;
    let failing = fx.subaccount("failing <b>").await.id;
    let healthy = fx.subaccount("healthy").await.id;
    let old = fx.subaccount("failed last month").await.id;
    let without_url = fx.subaccount("no webhooks").await.id;
    for sub in [failing, healthy, old] {
        diesel::sql_query(
            "UPDATE subaccounts SET postback_url = 'https://hooks.example/in' WHERE id = $1",
        )
        .bind::<SqlUuid, _>(sub.as_uuid())
        .execute(&mut fx.raw().await)
        .await
        .unwrap();
    }
    event(
        &fx,
        without_url,
        "exhausted",
        1,
        T0 + 5 * SECOND,
        Some("no endpoint"),
    )
    .await;
    event(&fx, failing, "exhausted", 8, T0, Some("HTTP 500")).await;
    event(&fx, failing, "pending", 1, T0 + SECOND, Some("timed out")).await;
    event(&fx, failing, "delivered", 1, T0 + 2 * SECOND, None).await;
    event(&fx, healthy, "delivered", 2, T0, None).await;
    event(&fx, healthy, "pending", 0, T0, None).await;
    event(&fx, old, "exhausted", 8, T0 - 8 * DAY, Some("HTTP 404")).await;
    diesel::sql_query(
        "INSERT INTO webhook_endpoints (subaccount_id, secret, disabled_at, updated_at) \
         VALUES ($1, '\\x00', $2, $2) \
         ON CONFLICT (subaccount_id) DO UPDATE SET disabled_at = excluded.disabled_at",
    )
    .bind::<SqlUuid, _>(failing.as_uuid())
    .bind::<Timestamptz, _>(at(T0 + 3 * SECOND))
    .execute(&mut fx.raw().await)
    .await
    .unwrap();

    let found = fx
        .store
        .failing_endpoints(at(T0 - 7 * DAY), 10)
        .await
        .unwrap();
    assert_eq!(
        found.len(),
        1,
        "only the one with a URL and failures: {found:?}"
    );
    let endpoint = &found[0];
    assert_eq!(endpoint.subaccount_id, failing);
    assert_eq!(endpoint.name, "failing <b>");
    assert_eq!((endpoint.retrying, endpoint.exhausted), (1, 1));
    assert_eq!(endpoint.latest, at(T0 + SECOND));
    assert_eq!(endpoint.last_error.as_deref(), Some("timed out"));
    assert_eq!(endpoint.disabled_at, Some(at(T0 + 3 * SECOND)));

    let found = fx
        .store
        .failing_endpoints(at(T0 - 9 * DAY), 10)
        .await
        .unwrap();
    let order: Vec<SubaccountId> = found.iter().map(|e| e.subaccount_id).collect();
    assert_eq!(order, [failing, old], "newest failure first");
    assert_eq!(found[1].disabled_at, None);
    assert_eq!(
        fx.store
            .failing_endpoints(at(T0 - 9 * DAY), 1)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn open_batches_are_counted_with_their_payouts_by_asset() {
    let fx = Fixture::new().await;
    assert!(fx.store.open_batches().await.unwrap().is_empty());
    let a = fx.subaccount("a").await.id;
    let b = fx.subaccount("b").await.id;
    let (first, _) = batch_with_payouts(&fx, a, 3).await;
    let (second, _) = batch_with_payouts(&fx, b, 2).await;
    let (closed, _) = batch_with_payouts(&fx, b, 4).await;
    // Two open USD batches (3 and 2 payouts); the third is being filed.
    for (batch, status) in [(first, "open"), (second, "open"), (closed, "in_progress")] {
        diesel::sql_query("UPDATE batches SET status = $2 WHERE id = $1")
            .bind::<SqlUuid, _>(batch.as_uuid())
            .bind::<Text, _>(status)
            .execute(&mut fx.raw().await)
            .await
            .unwrap();
    }
    assert_eq!(
        fx.store.open_batches().await.unwrap(),
        [domain::overview::OpenBatches {
            asset: Asset::Usd,
            batches: 2,
            payouts: 5
        }]
    );
}
