//! `KycDecisionStore`: the operator's lookup across subaccounts, and the decision applied with
//! its audit row in one transaction (both or neither), once.

use std::sync::Arc;

use diesel::sql_types::{Nullable, Text, Timestamptz};
use diesel_async::RunQueryDsl;
use domain::idempotency::WriteKey;
use domain::ids::ReceiverId;
use domain::ports::IdGenerator;
use domain::receiver::operator::{KycDecisionRecord, KycDecisionStore};
use domain::receiver::ports::ReceiverStore;
use domain::receiver::service::plan_kyc;
use domain::receiver::{KycOutcome, KycStatus, Receiver, ReceiverStatus};
use uuid::Uuid;

use crate::support::{Fixture, RandomIds, at, created_event, receiver};

const T0: i64 = 1_700_000_000_123_456;

async fn stored_receiver(fx: &Fixture, sub: domain::ids::SubaccountId, email: &str) -> Receiver {
    let r = receiver(sub, email, at(T0));
    fx.store
        .insert_receiver(&r, &[created_event(&r)], &WriteKey::none())
        .await
        .unwrap();
    r
}

fn record(r: &Receiver, decision: KycOutcome, reason: Option<&str>) -> KycDecisionRecord {
    KycDecisionRecord {
        receiver_id: r.id,
        subaccount_id: r.subaccount_id,
        decision,
        reason: reason.map(str::to_owned),
        decided_by: "operator:alice".to_owned(),
        decided_at: at(T0 + 1_000_000),
    }
}

#[derive(diesel::QueryableByName, Debug, PartialEq)]
struct AuditRow {
    #[diesel(sql_type = Text)]
    decision: String,
    #[diesel(sql_type = Nullable<Text>)]
    reason: Option<String>,
    #[diesel(sql_type = Text)]
    decided_by: String,
    #[diesel(sql_type = Timestamptz)]
    decided_at: chrono::DateTime<chrono::Utc>,
    #[diesel(sql_type = Text)]
    subaccount: String,
}

async fn audit_rows(fx: &Fixture, r: &Receiver) -> Vec<AuditRow> {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT decision, reason, decided_by, decided_at, subaccount_id::text AS subaccount \
         FROM kyc_decisions WHERE receiver_id = $1",
    )
    .bind::<diesel::sql_types::Uuid, _>(r.id.as_uuid())
    .load(&mut conn)
    .await
    .unwrap()
}

async fn kyc_updates(fx: &Fixture, r: &Receiver) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM outbox_events \
         WHERE object_id = $1 AND event_type = 'receiverKycUpdate'",
        r.id.as_uuid(),
    )
    .await
}

#[tokio::test]
async fn the_operator_finds_receivers_of_every_subaccount() {
    let fx = Fixture::new().await;
    let a = fx.subaccount("A").await.id;
    let b = fx.subaccount("B").await.id;
    let ra = stored_receiver(&fx, a, "ada@example.com").await;
    let rb = stored_receiver(&fx, b, "bob@example.com").await;
    for r in [&ra, &rb] {
        let found = fx.store.find_receiver_anywhere(r.id).await.unwrap();
        assert_eq!(
            found.map(|f| (f.id, f.subaccount_id)),
            Some((r.id, r.subaccount_id))
        );
    }
    let unknown = ReceiverId::from_uuid(Uuid::new_v4());
    assert!(
        fx.store
            .find_receiver_anywhere(unknown)
            .await
            .unwrap()
            .is_none()
    );
}

#[tokio::test]
async fn a_decision_is_applied_and_audited_in_one_transaction_once() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let r = stored_receiver(&fx, sub, "ada@example.com").await;
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds);

    let plan = plan_kyc(r.clone(), KycOutcome::Failed, at(T0 + 1_000_000), &ids).unwrap();
    let applied = fx
        .store
        .apply_operator_kyc(
            &plan.updated,
            plan.expected,
            &plan.events,
            &plan.reaction,
            &record(&r, KycOutcome::Failed, Some("documents forged")),
            &audit_entry(),
        )
        .await
        .unwrap();
    assert!(applied);
    let audited = domain::audit::AuditLog::list(
        &fx.store,
        &domain::audit::AuditQuery {
            // The fixture's subaccount was created (and audited) through the admin service.
            action: Some(domain::audit::AuditAction::KycDecided),
            limit: 10,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        audited.len(),
        1,
        "the audit entry is written with the decision"
    );
    let stored = fx.store.find_receiver(sub, r.id).await.unwrap().unwrap();
    assert_eq!(
        (stored.status, stored.kyc_status, stored.updated_at),
        (
            ReceiverStatus::Failed,
            KycStatus::Failed,
            at(T0 + 1_000_000)
        )
    );
    assert_eq!(
        audit_rows(&fx, &r).await,
        vec![AuditRow {
            decision: "failed".to_owned(),
            reason: Some("documents forged".to_owned()),
            decided_by: "operator:alice".to_owned(),
            decided_at: at(T0 + 1_000_000),
            subaccount: sub.to_string(),
        }]
    );
    assert_eq!(kyc_updates(&fx, &r).await, 1);

    // Decided: a second decision (planned from the stale read) writes nothing, audit included.
    let again = plan_kyc(r.clone(), KycOutcome::Completed, at(T0 + 2_000_000), &ids).unwrap();
    let applied = fx
        .store
        .apply_operator_kyc(
            &again.updated,
            again.expected,
            &again.events,
            &again.reaction,
            &record(&r, KycOutcome::Completed, None),
            &audit_entry(),
        )
        .await
        .unwrap();
    assert!(!applied);
    assert_eq!(audit_rows(&fx, &r).await.len(), 1);
    assert_eq!(kyc_updates(&fx, &r).await, 1);
    let stored = fx.store.find_receiver(sub, r.id).await.unwrap().unwrap();
    assert_eq!(stored.kyc_status, KycStatus::Failed);
}

#[tokio::test]
async fn an_audit_row_that_cannot_be_written_undoes_the_decision() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let r = stored_receiver(&fx, sub, "ada@example.com").await;
    let ids: Arc<dyn IdGenerator> = Arc::new(RandomIds);
    let plan = plan_kyc(r.clone(), KycOutcome::Completed, at(T0 + 1_000_000), &ids).unwrap();
    // The table refuses an empty decided_by (the service never sends one).
    let refused = KycDecisionRecord {
        decided_by: String::new(),
        ..record(&r, KycOutcome::Completed, None)
    };
    let result = fx
        .store
        .apply_operator_kyc(
            &plan.updated,
            plan.expected,
            &plan.events,
            &plan.reaction,
            &refused,
            &audit_entry(),
        )
        .await;
    assert!(result.is_err(), "{result:?}");
    let stored = fx.store.find_receiver(sub, r.id).await.unwrap().unwrap();
    assert_eq!(
        stored.kyc_status,
        KycStatus::Pending,
        "rolled back with the audit row"
    );
    assert_eq!(kyc_updates(&fx, &r).await, 0);
    assert!(audit_rows(&fx, &r).await.is_empty());
}

fn audit_entry() -> domain::audit::AuditEntry {
    domain::audit::AuditContext::cli(Some("test")).entry(
        &RandomIds,
        &crate::support::FixedClock(at(T0)),
        domain::audit::AuditAction::KycDecided,
        "receiver",
        "r",
        None,
        None,
    )
}

#[tokio::test]
async fn the_queue_lists_pending_receivers_of_every_subaccount_oldest_first_in_pages() {
    let fx = Fixture::new().await;
    let a = fx.subaccount("Acme").await.id;
    let b = fx.subaccount("Beta").await.id;
    let first = stored_receiver(&fx, a, "first@example.com").await;
    let second = stored_receiver(&fx, b, "second@example.com").await;
    let third = stored_receiver(&fx, a, "third@example.com").await;
    let all = fx.store.pending_kyc(None, 10).await.unwrap();
    let ids: Vec<ReceiverId> = all.iter().map(|r| r.id).collect();
    let mut expected = [first, second, third];
    expected.sort_by_key(|r| (r.created_at, r.id.as_uuid()));
    assert_eq!(ids, expected.iter().map(|r| r.id).collect::<Vec<_>>());
    let page = fx.store.pending_kyc(None, 2).await.unwrap();
    assert_eq!(page.len(), 2);
    let rest = fx.store.pending_kyc(Some(page[1].id), 2).await.unwrap();
    assert_eq!(
        rest.iter().map(|r| r.id).collect::<Vec<_>>(),
        [expected[2].id]
    );
    // Decided receivers leave the queue.
    let ids_gen: Arc<dyn IdGenerator> = Arc::new(RandomIds);
    let plan = plan_kyc(
        expected[0].clone(),
        KycOutcome::Completed,
        at(T0 + 1_000_000),
        &ids_gen,
    )
    .unwrap();
    assert!(
        fx.store
            .apply_operator_kyc(
                &plan.updated,
                plan.expected,
                &plan.events,
                &plan.reaction,
                &record(&expected[0], KycOutcome::Completed, None),
                &audit_entry()
            )
            .await
            .unwrap()
    );
    assert_eq!(fx.store.pending_kyc(None, 10).await.unwrap().len(), 2);
}
