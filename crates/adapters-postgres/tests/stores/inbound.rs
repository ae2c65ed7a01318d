//! `InboundStore`: an inbound file is recorded once per (method, name, content) with its report
//! lines in one transaction, sent payments are found by reference newest file first, and report
//! lines list newest first, by resolution.

use std::collections::BTreeSet;

use domain::account::PayoutMethod;
use domain::ids::{BankReportId, InboundFileId, PayoutId};
use domain::rail::file::RailFile;
use domain::rail::inbound_ports::{
    InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind, Resolution,
};
use domain::rail::ports::RailFileStore;
use uuid::Uuid;

use crate::rail_files::{batch_with_payouts, file_of};
use crate::support::{Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;

fn inbound_file(name: &str, content: &[u8], micros: i64) -> InboundFile {
    InboundFile {
        id: InboundFileId::from_uuid(Uuid::new_v4()),
        method: PayoutMethod::Ach,
        name: name.to_owned(),
        sha256: RailFile::digest(content),
        outcome: InboundOutcome::Read,
        detail: None,
        received_at: at(micros),
    }
}

fn line(position: u32, kind: ReportKind, resolution: Resolution, micros: i64) -> RecordedReport {
    RecordedReport {
        id: BankReportId::from_uuid(Uuid::new_v4()),
        position,
        kind,
        reference: format!("09100001000000{position}"),
        code: Some("R01".to_owned()),
        reason: Some("Insufficient funds".to_owned()),
        account_invalid: false,
        amount: Some(1_000),
        subaccount_id: None,
        payout_id: None,
        rail_file_id: None,
        resolution,
        created_at: at(micros),
    }
}

#[tokio::test]
async fn a_file_is_recorded_once_per_name_and_content() {
    let fx = Fixture::new().await;
    let file = inbound_file("returns.ach", b"one", T0);
    let sha = file.sha256;
    assert!(
        !fx.store
            .inbound_known(PayoutMethod::Ach, "returns.ach", sha)
            .await
            .unwrap()
    );
    let lines = [
        line(0, ReportKind::Returned, Resolution::Unmatched, T0),
        line(1, ReportKind::Notice, Resolution::Unmatched, T0),
    ];
    assert!(fx.store.record_inbound(&file, &lines).await.unwrap());
    assert!(
        fx.store
            .inbound_known(PayoutMethod::Ach, "returns.ach", sha)
            .await
            .unwrap()
    );
    // Another method, another content under the same name: not known.
    assert!(
        !fx.store
            .inbound_known(PayoutMethod::Sepa, "returns.ach", sha)
            .await
            .unwrap()
    );
    let other = RailFile::digest(b"two");
    assert!(
        !fx.store
            .inbound_known(PayoutMethod::Ach, "returns.ach", other)
            .await
            .unwrap()
    );

    // Recording it again (another instance read it too) writes nothing.
    let again = inbound_file("returns.ach", b"one", T0 + SECOND);
    let more = [line(
        0,
        ReportKind::Returned,
        Resolution::Applied,
        T0 + SECOND,
    )];
    assert!(!fx.store.record_inbound(&again, &more).await.unwrap());
    let listed = fx.store.list_reports(None, 10).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert!(
        listed
            .iter()
            .all(|l| l.file_name == "returns.ach" && l.method == PayoutMethod::Ach)
    );
}

#[tokio::test]
async fn concurrent_records_of_one_file_keep_exactly_one() {
    let fx = Fixture::new().await;
    let tasks: Vec<_> = (0..6)
        .map(|i| {
            let store = fx.store.clone();
            tokio::spawn(async move {
                let file = inbound_file("ack.xml", b"same", T0 + i);
                let lines = [line(0, ReportKind::FileAccepted, Resolution::Applied, T0)];
                store.record_inbound(&file, &lines).await.unwrap()
            })
        })
        .collect();
    let mut wins = 0;
    for task in tasks {
        wins += usize::from(task.await.unwrap());
    }
    assert_eq!(wins, 1);
    assert_eq!(fx.store.list_reports(None, 10).await.unwrap().len(), 1);
}

#[tokio::test]
async fn report_lines_round_trip_and_list_by_resolution_newest_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("reports").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 1).await;
    let rail = file_of(sub, batch, &payouts, b"file");
    fx.store.insert_file(&rail).await.unwrap();
    let mut matched = line(0, ReportKind::Returned, Resolution::Applied, T0);
    matched.subaccount_id = Some(sub);
    matched.payout_id = Some(payouts[0]);
    matched.rail_file_id = Some(rail.id);
    matched.account_invalid = true;
    let unread = InboundFile {
        outcome: InboundOutcome::Unreadable,
        detail: Some("line 2: the record is 80 characters long, not 94".to_owned()),
        ..inbound_file("broken.ach", b"broken", T0)
    };
    assert!(fx.store.record_inbound(&unread, &[]).await.unwrap());
    fx.store
        .record_inbound(&inbound_file("r1.ach", b"r1", T0), &[matched.clone()])
        .await
        .unwrap();
    fx.store
        .record_inbound(
            &inbound_file("r2.ach", b"r2", T0 + SECOND),
            &[
                line(0, ReportKind::Returned, Resolution::Unmatched, T0 + SECOND),
                line(1, ReportKind::Returned, Resolution::Repeated, T0 + SECOND),
            ],
        )
        .await
        .unwrap();

    let all = fx.store.list_reports(None, 10).await.unwrap();
    let order: Vec<_> = all
        .iter()
        .map(|l| (l.file_name.as_str(), l.report.position))
        .collect();
    assert_eq!(order, [("r2.ach", 0), ("r2.ach", 1), ("r1.ach", 0)]);
    assert_eq!(all[2].report, matched);

    let unmatched = fx
        .store
        .list_reports(Some(Resolution::Unmatched), 10)
        .await
        .unwrap();
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0].report.resolution, Resolution::Unmatched);
    assert_eq!(fx.store.list_reports(None, 1).await.unwrap().len(), 1);
    assert!(
        fx.store
            .list_reports(Some(Resolution::Conflicting), 10)
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn sent_payments_are_found_by_reference_newest_file_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("sent").await.id;
    let (old_batch, old_payouts) = batch_with_payouts(&fx, sub, 2).await;
    let (new_batch, new_payouts) = batch_with_payouts(&fx, sub, 1).await;
    let old = file_of(sub, old_batch, &old_payouts, b"old");
    let mut new = file_of(sub, new_batch, &new_payouts, b"new");
    new.created_at = at(T0 + 86_400 * SECOND);
    fx.store.insert_file(&old).await.unwrap();
    fx.store.insert_file(&new).await.unwrap();

    // Both files' first entries carry the same trace number (a new day).
    let reference = &old.items[0].reference;
    assert_eq!(reference, &new.items[0].reference);
    let found = fx
        .store
        .sent_items(PayoutMethod::Ach, reference)
        .await
        .unwrap();
    let payouts: Vec<PayoutId> = found.iter().map(|s| s.payout_id).collect();
    assert_eq!(payouts, [new_payouts[0], old_payouts[0]]);
    assert_eq!(found[0].file_id, new.id);
    assert_eq!(found[0].subaccount_id, sub);
    assert_eq!(found[0].file_created_at, new.created_at);

    let second = fx
        .store
        .sent_items(PayoutMethod::Ach, &old.items[1].reference)
        .await
        .unwrap();
    assert_eq!(
        second.iter().map(|s| s.payout_id).collect::<BTreeSet<_>>(),
        BTreeSet::from([old_payouts[1]])
    );
    assert!(
        fx.store
            .sent_items(PayoutMethod::Sepa, reference)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        fx.store
            .sent_items(PayoutMethod::Ach, "nothing")
            .await
            .unwrap()
            .is_empty()
    );
}
