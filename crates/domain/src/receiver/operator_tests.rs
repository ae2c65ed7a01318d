//! `OperatorKycService` driven through a mocked `KycDecisionStore`.

use crate::audit::{AuditAction, AuditContext};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::*;
use crate::builders::ReceiverBuilder;
use crate::events::EventKind;
use crate::payout::PayoutStatus;
use crate::ports::{MockClock, MockIdGenerator};
use crate::receiver::ReceiverStatus;

const NOW_MS: i64 = 1_700_000_000_000;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(NOW_MS).unwrap_or_default()
}

fn receiver(kyc_status: KycStatus) -> Receiver {
    ReceiverBuilder::new()
        .id(ReceiverId::from_uuid(Uuid::from_u128(1)))
        .subaccount(SubaccountId::from_uuid(Uuid::from_u128(0xA)))
        .status(match kyc_status {
            KycStatus::Completed => ReceiverStatus::Active,
            KycStatus::Failed => ReceiverStatus::Failed,
            _ => ReceiverStatus::Pending,
        })
        .kyc_status(kyc_status)
        .created_at(now())
        .build()
}

fn service(store: MockKycDecisionStore) -> OperatorKycService {
    let mut clock = MockClock::new();
    clock.expect_now().returning(now);
    let mut ids = MockIdGenerator::new();
    let mut n = 100u128;
    ids.expect_new_id().returning(move || {
        n += 1;
        Uuid::from_u128(n)
    });
    OperatorKycService::new(Arc::new(store), Arc::new(clock), Arc::new(ids))
}

fn id() -> String {
    Uuid::from_u128(1).to_string()
}

#[tokio::test]
async fn a_decision_is_applied_like_the_providers_and_recorded_with_it() {
    for (outcome, status, waiting) in [
        (KycOutcome::Completed, ReceiverStatus::Active, "completed"),
        (KycOutcome::Failed, ReceiverStatus::Failed, "failed"),
    ] {
        let mut store = MockKycDecisionStore::new();
        store
            .expect_find_receiver_anywhere()
            .withf(|id| *id == ReceiverId::from_uuid(Uuid::from_u128(1)))
            .returning(|_| Ok(Some(receiver(KycStatus::Pending))));
        store
            .expect_apply_operator_kyc()
            .withf(move |updated, expected, events, reaction, record, audit| {
                updated.status == status
                    && updated.kyc_status.as_str() == waiting
                    && updated.updated_at == now()
                    && *expected == KycStatus::Pending
                    && events.len() == 1
                    && events[0].kind == EventKind::ReceiverKycUpdate
                    && reaction.waiting_status() == PayoutStatus::Unassessed
                    && *record
                        == KycDecisionRecord {
                            receiver_id: updated.id,
                            subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(0xA)),
                            decision: outcome,
                            reason: Some("documents checked".to_owned()),
                            decided_by: "operator:alice".to_owned(),
                            decided_at: now(),
                        }
                    && audit.action == AuditAction::KycDecided
                    && audit.actor.name() == "cli:alice"
                    && audit.object_id == updated.id.to_string()
                    && audit
                        .before
                        .as_ref()
                        .is_some_and(|b| b["kyc_status"] == "pending")
                    && audit.after.as_ref().is_some_and(|a| {
                        a["kyc_status"] == updated.kyc_status.as_str()
                            && a["reason"] == "documents checked"
                    })
            })
            .times(1)
            .returning(|_, _, _, _, _, _| Ok(true));
        let decided = service(store)
            .decide(
                &id(),
                outcome,
                Some("  documents checked "),
                "operator:alice",
                &AuditContext::cli(Some("alice")),
            )
            .await;
        assert_eq!(decided.map(|r| r.status).ok(), Some(status));
    }
}

#[tokio::test]
async fn a_blank_reason_is_none() {
    let mut store = MockKycDecisionStore::new();
    store
        .expect_find_receiver_anywhere()
        .returning(|_| Ok(Some(receiver(KycStatus::Pending))));
    store
        .expect_apply_operator_kyc()
        .withf(|_, _, _, _, record, _| record.reason.is_none())
        .times(1)
        .returning(|_, _, _, _, _, _| Ok(true));
    let decided = service(store)
        .decide(
            &id(),
            KycOutcome::Completed,
            Some("   "),
            "operator",
            &AuditContext::cli(None),
        )
        .await;
    assert!(decided.is_ok(), "{decided:?}");
}

#[tokio::test]
async fn a_decided_receiver_is_refused_and_nothing_is_written() {
    let mut store = MockKycDecisionStore::new();
    store
        .expect_find_receiver_anywhere()
        .returning(|_| Ok(Some(receiver(KycStatus::Completed))));
    store.expect_apply_operator_kyc().never();
    let refused = service(store)
        .decide(
            &id(),
            KycOutcome::Failed,
            None,
            "operator",
            &AuditContext::cli(None),
        )
        .await;
    assert!(
        matches!(
            refused,
            Err(OperatorKycError::AlreadyDecided(KycStatus::Completed))
        ),
        "{refused:?}"
    );

    // Decided by someone else between the read and the write: the stored decision is reported.
    let mut store = MockKycDecisionStore::new();
    let mut reads = 0;
    store
        .expect_find_receiver_anywhere()
        .times(2)
        .returning(move |_| {
            reads += 1;
            Ok(Some(receiver(if reads == 1 {
                KycStatus::Pending
            } else {
                KycStatus::Failed
            })))
        });
    store
        .expect_apply_operator_kyc()
        .times(1)
        .returning(|_, _, _, _, _, _| Ok(false));
    let lost = service(store)
        .decide(
            &id(),
            KycOutcome::Completed,
            None,
            "operator",
            &AuditContext::cli(None),
        )
        .await;
    assert!(
        matches!(
            lost,
            Err(OperatorKycError::AlreadyDecided(KycStatus::Failed))
        ),
        "{lost:?}"
    );
}

#[tokio::test]
async fn bad_arguments_and_unknown_receivers_reach_no_write() {
    let mut store = MockKycDecisionStore::new();
    store
        .expect_find_receiver_anywhere()
        .returning(|_| Ok(None));
    store.expect_apply_operator_kyc().never();
    let service = service(store);
    let long = "x".repeat(MAX_REASON_CHARS + 1);
    for (receiver, reason, by, field) in [
        ("not-a-uuid", None, "operator", "receiver"),
        ("", None, "operator", "receiver"),
        (&id() as &str, Some(long.as_str()), "operator", "reason"),
        (&id(), Some("a\0b"), "operator", "reason"),
        (&id(), None, " ", "decided_by"),
        (&id(), None, "operator:\u{1b}[31m", "decided_by"),
    ] {
        let refused = service
            .decide(
                receiver,
                KycOutcome::Completed,
                reason,
                by,
                &AuditContext::cli(None),
            )
            .await;
        assert!(
            matches!(refused, Err(OperatorKycError::Invalid { field: f, .. }) if f == field),
            "{receiver} {reason:?} {by}: {refused:?}"
        );
    }
    let unknown = service
        .decide(
            &id(),
            KycOutcome::Completed,
            None,
            "operator",
            &AuditContext::cli(None),
        )
        .await;
    assert!(matches!(unknown, Err(OperatorKycError::NotFound)));
    assert_eq!(
        OperatorKycError::AlreadyDecided(KycStatus::Completed).to_string(),
        "the receiver's KYC is already decided (completed); nothing was changed"
    );
}

#[tokio::test]
async fn an_outage_is_reported_as_such() {
    let mut store = MockKycDecisionStore::new();
    store
        .expect_find_receiver_anywhere()
        .returning(|_| Err(PortError::Unavailable(anyhow::anyhow!("down"))));
    store.expect_apply_operator_kyc().never();
    let failed = service(store)
        .decide(
            &id(),
            KycOutcome::Completed,
            None,
            "operator",
            &AuditContext::cli(None),
        )
        .await;
    assert!(matches!(failed, Err(OperatorKycError::Port(_))));
}

#[test]
fn decisions_parse_from_their_names_only() {
    assert_eq!(parse_decision("completed"), Some(KycOutcome::Completed));
    assert_eq!(parse_decision("failed"), Some(KycOutcome::Failed));
    for bad in ["", "approved", "Completed", "pending"] {
        assert_eq!(parse_decision(bad), None, "{bad}");
    }
    assert_eq!(decision_name(KycOutcome::Failed), "failed");
}
