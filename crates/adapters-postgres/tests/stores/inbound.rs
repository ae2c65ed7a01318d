//! `InboundStore`: an inbound file is recorded once per (method, name, content) with its report
//! lines in one transaction (the lines in one statement), sent payments are found by reference
//! (a whole report's references in one read) newest file first, and report
//! lines list newest first, by resolution; documents keep their bytes, an altered document
//! names the one it alters and an anomaly the line it contradicts; the line that decided a
//! payout or a file is found.

use std::collections::BTreeSet;

use diesel_async::RunQueryDsl;
use domain::account::PayoutMethod;
use domain::ids::{BankReportId, InboundFileId, PayoutId, RailFileId};
use domain::rail::file::{RailFile, RailFileState};
use domain::rail::inbound_ports::{
    InboundFile, InboundOutcome, InboundStore, RecordedReport, ReportKind, Resolution,
};
use domain::rail::ports::RailFileStore;
use uuid::Uuid;

use crate::rail_files::{batch_with_payouts, file_of};
use crate::support::{Fixture, at};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;

pub(crate) fn inbound_file(name: &str, content: &[u8], micros: i64) -> InboundFile {
    InboundFile {
        id: InboundFileId::from_uuid(Uuid::new_v4()),
        method: PayoutMethod::Ach,
        name: name.to_owned(),
        sha256: RailFile::digest(content),
        outcome: InboundOutcome::Read,
        detail: None,
        original: None,
        bytes: Some(content.to_vec()),
        received_at: at(micros),
    }
}

pub(crate) fn line(
    position: u32,
    kind: ReportKind,
    resolution: Resolution,
    micros: i64,
) -> RecordedReport {
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
        contradicts: None,
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
    let listed = fx.store.list_reports(None, None, None, 10).await.unwrap();
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
    assert_eq!(
        fx.store
            .list_reports(None, None, None, 10)
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn report_lines_round_trip_and_list_by_resolution_and_kind_newest_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("reports").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 1).await;
    let rail = file_of(sub, batch, &payouts, b"file");
    fx.store.insert_file(rail.clone()).await.unwrap();
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

    let all = fx.store.list_reports(None, None, None, 10).await.unwrap();
    let order: Vec<_> = all
        .iter()
        .map(|l| (l.file_name.as_str(), l.report.position))
        .collect();
    assert_eq!(order, [("r2.ach", 0), ("r2.ach", 1), ("r1.ach", 0)]);
    assert_eq!(all[2].report, matched);

    let unmatched = fx
        .store
        .list_reports(Some(Resolution::Unmatched), None, None, 10)
        .await
        .unwrap();
    assert_eq!(unmatched.len(), 1);
    assert_eq!(unmatched[0].report.resolution, Resolution::Unmatched);
    assert_eq!(
        fx.store
            .list_reports(None, None, None, 1)
            .await
            .unwrap()
            .len(),
        1
    );
    assert!(
        fx.store
            .list_reports(Some(Resolution::Anomaly), None, None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    // By kind, alone and with a resolution.
    let returns = fx
        .store
        .list_reports(None, Some(ReportKind::Returned), None, 10)
        .await
        .unwrap();
    assert_eq!(returns.len(), 3);
    assert!(
        fx.store
            .list_reports(None, Some(ReportKind::Notice), None, 10)
            .await
            .unwrap()
            .is_empty()
    );
    let applied_returns = fx
        .store
        .list_reports(
            Some(Resolution::Applied),
            Some(ReportKind::Returned),
            None,
            10,
        )
        .await
        .unwrap();
    assert_eq!(applied_returns.len(), 1);
    assert_eq!(applied_returns[0].report, matched);

    // Keyset pages of one line walk the same order: a document's lines in order, then the
    // older document.
    let mut paged = Vec::new();
    let mut before = None;
    while let Some(last) = fx
        .store
        .list_reports(None, None, before, 1)
        .await
        .unwrap()
        .pop()
    {
        before = Some(last.report.id);
        paged.push(last.report.id);
    }
    assert_eq!(paged, all.iter().map(|l| l.report.id).collect::<Vec<_>>());
    // Filters hold on later pages; an unknown position pages from nothing.
    let older_returns = fx
        .store
        .list_reports(None, Some(ReportKind::Returned), Some(all[0].report.id), 10)
        .await
        .unwrap();
    assert_eq!(older_returns.len(), 2);
    let nowhere = BankReportId::from_uuid(Uuid::new_v4());
    assert!(
        fx.store
            .list_reports(None, None, Some(nowhere), 10)
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
    fx.store.insert_file(old.clone()).await.unwrap();
    fx.store.insert_file(new.clone()).await.unwrap();

    // Both files' first entries carry the same trace number (a new day).
    let reference = &old.items[0].reference;
    assert_eq!(reference, &new.items[0].reference);
    let sent_of = |method, references: &[&String]| {
        let store = fx.store.clone();
        let references: Vec<String> = references.iter().map(|r| (*r).clone()).collect();
        async move { store.sent_items_of(method, &references).await.unwrap() }
    };
    let found = sent_of(PayoutMethod::Ach, &[reference]).await;
    assert!(found.iter().all(|(r, _)| r == reference));
    let payouts: Vec<PayoutId> = found.iter().map(|(_, s)| s.payout_id).collect();
    assert_eq!(payouts, [new_payouts[0], old_payouts[0]]);
    assert_eq!(found[0].1.file_id, new.id);
    assert_eq!(found[0].1.subaccount_id, sub);
    assert_eq!(found[0].1.file_created_at, new.created_at);
    assert_eq!(found[0].1.file_state, RailFileState::Generated);

    // Several references in one read, each with its own payments, newest file first; an
    // unknown reference adds nothing.
    let nothing = "nothing".to_owned();
    let both = sent_of(
        PayoutMethod::Ach,
        &[&old.items[1].reference, reference, &nothing],
    )
    .await;
    let by_reference: Vec<(&str, PayoutId)> = both
        .iter()
        .map(|(r, s)| (r.as_str(), s.payout_id))
        .collect();
    assert_eq!(by_reference.len(), 3);
    let of = |wanted: &str| -> Vec<PayoutId> {
        by_reference
            .iter()
            .filter(|(r, _)| *r == wanted)
            .map(|(_, p)| *p)
            .collect()
    };
    assert_eq!(of(reference), [new_payouts[0], old_payouts[0]]);
    assert_eq!(
        of(&old.items[1].reference)
            .into_iter()
            .collect::<BTreeSet<_>>(),
        BTreeSet::from([old_payouts[1]])
    );
    assert!(sent_of(PayoutMethod::Sepa, &[reference]).await.is_empty());
    assert!(sent_of(PayoutMethod::Ach, &[&nothing]).await.is_empty());
    assert!(sent_of(PayoutMethod::Ach, &[]).await.is_empty());
}

#[tokio::test]
async fn a_documents_lines_are_recorded_in_one_statement_whatever_their_number() {
    let fx = Fixture::new().await;
    // More lines than one statement could bind one parameter per column and line (65 535).
    let lines: Vec<RecordedReport> = (0..5_000)
        .map(|position| {
            let mut l = line(position, ReportKind::Returned, Resolution::Unmatched, T0);
            l.code = (position % 2 == 0).then(|| "R03".to_owned());
            l.amount = (position % 3 == 0).then_some(i64::from(position));
            l
        })
        .collect();
    let file = inbound_file("big-returns.ach", b"big", T0);
    assert!(fx.store.record_inbound(&file, &lines).await.unwrap());
    let (_, stored) = fx.store.get_inbound(file.id).await.unwrap().unwrap();
    assert_eq!(stored, lines, "every line, in order, as given");
}

#[tokio::test]
async fn an_altered_document_and_an_anomaly_keep_both_documents() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("altered").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 1).await;
    let rail = file_of(sub, batch, &payouts, b"file");
    fx.store.insert_file(rail.clone()).await.unwrap();
    let matched = |mut l: RecordedReport| {
        l.subaccount_id = Some(sub);
        l.payout_id = Some(payouts[0]);
        l.rail_file_id = Some(rail.id);
        l
    };

    // Nothing read under the name yet: an unreadable or foreign document does not count.
    let broken = InboundFile {
        outcome: InboundOutcome::Unreadable,
        ..inbound_file("rpt_1", b"{broken", T0)
    };
    fx.store.record_inbound(&broken, &[]).await.unwrap();
    assert_eq!(
        fx.store
            .read_under(PayoutMethod::Ach, "rpt_1")
            .await
            .unwrap(),
        None
    );
    let first = inbound_file("rpt_1", b"deposited", T0 + SECOND);
    let settled = matched(line(
        0,
        ReportKind::Settled,
        Resolution::Applied,
        T0 + SECOND,
    ));
    fx.store
        .record_inbound(&first, std::slice::from_ref(&settled))
        .await
        .unwrap();
    assert_eq!(
        fx.store
            .read_under(PayoutMethod::Ach, "rpt_1")
            .await
            .unwrap(),
        Some(first.id)
    );
    assert_eq!(
        fx.store
            .read_under(PayoutMethod::Sepa, "rpt_1")
            .await
            .unwrap(),
        None
    );

    // The same name, other content: altered, naming the first; its line contradicts the
    // settlement.
    let altered = InboundFile {
        outcome: InboundOutcome::Altered,
        detail: Some("rpt_1 was first read with other content".to_owned()),
        original: Some(first.id),
        ..inbound_file("rpt_1", b"failed", T0 + 2 * SECOND)
    };
    let mut anomaly = matched(line(
        0,
        ReportKind::Rejected,
        Resolution::Anomaly,
        T0 + 2 * SECOND,
    ));
    anomaly.contradicts = Some(settled.id);
    assert!(
        fx.store
            .record_inbound(&altered, std::slice::from_ref(&anomaly))
            .await
            .unwrap()
    );
    let anomalies = fx
        .store
        .list_reports(Some(Resolution::Anomaly), None, None, 10)
        .await
        .unwrap();
    assert_eq!(anomalies.len(), 1);
    assert_eq!(anomalies[0].report, anomaly);
    assert_eq!(anomalies[0].inbound_file_id, altered.id);
    assert_eq!(anomalies[0].contradicted_file, Some(first.id));
    // A line the previous release recorded as `conflicting` reads as an anomaly.
    let mut conn = fx.raw().await;
    diesel::sql_query("UPDATE bank_reports SET resolution = 'conflicting' WHERE id = $1")
        .bind::<diesel::sql_types::Uuid, _>(anomaly.id.as_uuid())
        .execute(&mut conn)
        .await
        .unwrap();
    let again = fx
        .store
        .list_reports(Some(Resolution::Anomaly), None, None, 10)
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].report, anomaly);

    let (shown, lines) = fx.store.get_inbound(altered.id).await.unwrap().unwrap();
    assert_eq!(shown, altered);
    assert_eq!(lines, [anomaly]);
    let (shown, _) = fx.store.get_inbound(first.id).await.unwrap().unwrap();
    assert_eq!(shown.bytes.as_deref(), Some(&b"deposited"[..]));
    assert!(
        fx.store
            .get_inbound(InboundFileId::from_uuid(Uuid::new_v4()))
            .await
            .unwrap()
            .is_none()
    );
    let listed = fx
        .store
        .list_inbound(Some(InboundOutcome::Altered), 10)
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].id, altered.id);
    assert_eq!(listed[0].bytes, None, "listed without bytes");
    assert_eq!(listed[0].original, Some(first.id));
    let all: Vec<_> = fx
        .store
        .list_inbound(None, 10)
        .await
        .unwrap()
        .into_iter()
        .map(|f| f.id)
        .collect();
    assert_eq!(all, [altered.id, first.id, broken.id], "newest first");
}

#[tokio::test]
async fn the_line_that_decided_a_payout_or_its_file_is_the_newest_applied_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("deciding").await.id;
    let (batch, payouts) = batch_with_payouts(&fx, sub, 2).await;
    let rail = file_of(sub, batch, &payouts, b"file");
    fx.store.insert_file(rail.clone()).await.unwrap();
    let about = |l: RecordedReport, payout: Option<PayoutId>| RecordedReport {
        subaccount_id: Some(sub),
        payout_id: payout,
        rail_file_id: Some(rail.id),
        ..l
    };
    assert_eq!(
        fx.store
            .deciding_report(Some(payouts[0]), rail.id)
            .await
            .unwrap(),
        None
    );
    // The file accepted, then settled as a whole; later a return of the first payout, and a
    // repeated (not applied) line of the second.
    let accepted = about(
        line(0, ReportKind::FileAccepted, Resolution::Applied, T0),
        None,
    );
    let settled = about(
        line(0, ReportKind::FileSettled, Resolution::Applied, T0 + SECOND),
        None,
    );
    let returned = about(
        line(
            0,
            ReportKind::Returned,
            Resolution::Applied,
            T0 + 2 * SECOND,
        ),
        Some(payouts[0]),
    );
    let repeated = about(
        line(
            1,
            ReportKind::Returned,
            Resolution::Repeated,
            T0 + 2 * SECOND,
        ),
        Some(payouts[1]),
    );
    for (name, when, lines) in [
        ("ack", T0, vec![accepted.clone()]),
        ("settled", T0 + SECOND, vec![settled.clone()]),
        ("returns", T0 + 2 * SECOND, vec![returned.clone(), repeated]),
    ] {
        fx.store
            .record_inbound(&inbound_file(name, name.as_bytes(), when), &lines)
            .await
            .unwrap();
    }
    let deciding = |payout| {
        let store = fx.store.clone();
        async move {
            store
                .deciding_report(payout, rail.id)
                .await
                .unwrap()
                .map(|r| (r.id, r.kind))
        }
    };
    assert_eq!(
        deciding(Some(payouts[0])).await,
        Some((returned.id, ReportKind::Returned)),
        "its own return, newer than the file's settlement"
    );
    assert_eq!(
        deciding(Some(payouts[1])).await,
        Some((settled.id, ReportKind::FileSettled)),
        "the file's settlement; a repeated line decides nothing"
    );
    assert_eq!(
        deciding(None).await,
        Some((settled.id, ReportKind::FileSettled)),
        "the file's newest line"
    );
    // The same answers in one read, in the order asked; a file no line decided has none.
    let other = RailFileId::from_uuid(Uuid::new_v4());
    let queries = [
        (Some(payouts[1]), rail.id),
        (None, other),
        (None, rail.id),
        (Some(payouts[0]), rail.id),
        (Some(payouts[0]), other),
    ];
    let all: Vec<_> = fx
        .store
        .deciding_reports(&queries)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.map(|r| (r.id, r.kind)))
        .collect();
    let mut one_by_one = Vec::new();
    for (payout, file) in queries {
        one_by_one.push(
            fx.store
                .deciding_report(payout, file)
                .await
                .unwrap()
                .map(|r| (r.id, r.kind)),
        );
    }
    assert_eq!(all, one_by_one);
    assert_eq!(
        all,
        [
            Some((settled.id, ReportKind::FileSettled)),
            None,
            Some((settled.id, ReportKind::FileSettled)),
            Some((returned.id, ReportKind::Returned)),
            Some((returned.id, ReportKind::Returned)),
        ]
    );
    assert!(fx.store.deciding_reports(&[]).await.unwrap().is_empty());
}
