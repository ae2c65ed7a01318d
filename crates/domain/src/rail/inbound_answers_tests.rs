//! The processor follows each rail's answer table: every (state, answer) pair of a payment, on a
//! rail with returns and on one without, is applied, recorded as repeated, or recorded as an
//! anomaly naming the line it contradicts; money moves only when the table applies an answer,
//! and a settled payout's money only by a real return. Also: a document altered under a unique
//! name is an anomaly, never a new report.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use super::tests::{
    Ledger, Recorded, at, id, items, payout, rail, reader, resolutions, return_of, sent, setup,
};
use super::*;
use crate::ledger::LedgerEntryKind;
use crate::rail::answers::Returns;
use crate::rail::ports::MockRailFileStore;
use crate::rail::report::{ItemOutcome, MockBankFileReader, ReturnReason};

/// The rules of a rail with returns (the bank file rails) and of one without (Interac).
const RULES: [AnswerRules; 2] = [
    AnswerRules::FILE_RAIL,
    AnswerRules {
        returns: Returns::Never,
        names: ReportNames::Unique,
    },
];

/// The payment answers a line of a report can give (an acknowledgement is a file's).
const PAYMENT_ANSWERS: [RailAnswer; 3] = [
    RailAnswer::Settled,
    RailAnswer::Rejected,
    RailAnswer::Returned,
];

fn line_of(answer: RailAnswer) -> ItemReport {
    match answer {
        RailAnswer::Settled => ItemReport {
            reference: "T1".into(),
            outcome: ItemOutcome::Settled,
        },
        RailAnswer::Rejected => ItemReport {
            reference: "T1".into(),
            outcome: ItemOutcome::Rejected(ReturnReason {
                code: "FAILED".into(),
                reason: "the partner could not send the transfer".into(),
                account_is_invalid: false,
            }),
        },
        RailAnswer::Returned => return_of("T1", "R03", true, None),
        RailAnswer::Acknowledged => unreachable!("not a payment line"),
    }
}

/// An earlier document whose one applied line, of `kind`, decided payout 1 of file 900.
fn decided_earlier(recorded: &Recorded, kind: ReportKind) -> BankReportId {
    let line = RecordedReport {
        id: BankReportId::from_uuid(id(7_000)),
        position: 0,
        kind,
        reference: "T1".into(),
        code: None,
        reason: None,
        account_invalid: false,
        amount: None,
        subaccount_id: Some(SubaccountId::from_uuid(id(2))),
        payout_id: Some(PayoutId::from_uuid(id(1))),
        rail_file_id: Some(RailFileId::from_uuid(id(900))),
        resolution: Resolution::Applied,
        contradicts: None,
        created_at: at(10),
    };
    let file = InboundFile {
        id: InboundFileId::from_uuid(id(6_000)),
        method: PayoutMethod::Sepa,
        name: "earlier".into(),
        sha256: [7; 32],
        outcome: InboundOutcome::Read,
        detail: None,
        original: None,
        bytes: Some(b"earlier".to_vec()),
        received_at: at(10),
    };
    let earlier = line.id;
    recorded.lock().unwrap().push((file, vec![line]));
    earlier
}

#[tokio::test]
async fn every_state_and_answer_of_a_payment_is_decided_by_its_rails_table() {
    for rules in RULES {
        for &state in RailState::ALL {
            for answer in PAYMENT_ANSWERS {
                let case = format!("{:?} {state:?} answered {answer:?}", rules.returns);
                let status = match state {
                    RailState::Sent | RailState::Acknowledged => PayoutStatus::InProgress,
                    RailState::Settled => PayoutStatus::Successful,
                    RailState::Rejected | RailState::Returned => PayoutStatus::Failed,
                };
                let ledger = Ledger::with(vec![payout(1, status, 1_000)]);
                let mut item = sent(1, 900, 0);
                if state == RailState::Acknowledged {
                    item.file_state = RailFileState::Acknowledged;
                }
                let s = setup(&ledger, MockRailFileStore::new(), vec![("T1", item)]);
                let earlier = match state {
                    RailState::Sent | RailState::Acknowledged => None,
                    RailState::Settled => Some(decided_earlier(&s.recorded, ReportKind::Settled)),
                    RailState::Rejected => Some(decided_earlier(&s.recorded, ReportKind::Rejected)),
                    RailState::Returned => Some(decided_earlier(&s.recorded, ReportKind::Returned)),
                };
                let rail = InboundRail {
                    answers: rules,
                    ..rail(reader(items(vec![line_of(answer)])))
                };
                let mut pass = InboundPass::default();
                s.processor
                    .process(&rail, "report", b"report", &mut pass)
                    .await
                    .unwrap();

                let verdict = rules.verdict(state, answer);
                let recorded = s.recorded.lock().unwrap().last().cloned().unwrap();
                let line = &recorded.1[0];
                let applied = ledger.applied.lock().unwrap().clone();
                match verdict {
                    AnswerVerdict::Apply => {
                        assert_eq!(line.resolution, Resolution::Applied, "{case}");
                        assert_eq!(applied.len(), 1, "{case}");
                        let expected = match answer {
                            RailAnswer::Settled => PayoutStatus::Successful,
                            _ => PayoutStatus::Failed,
                        };
                        assert_eq!(ledger.status(1), expected, "{case}");
                        if status == PayoutStatus::Successful {
                            // A settled payout's money moves only by a real return.
                            assert_eq!(answer, RailAnswer::Returned, "{case}");
                            assert_eq!(rules.returns, Returns::AfterSettlement, "{case}");
                            assert_eq!(
                                applied[0].entries[0].kind,
                                LedgerEntryKind::PayoutReturn,
                                "{case}"
                            );
                        }
                    }
                    AnswerVerdict::Repeated | AnswerVerdict::Anomaly => {
                        assert!(applied.is_empty(), "{case}: nothing applied");
                        assert_eq!(ledger.status(1), status, "{case}: unchanged");
                        let expected = if verdict == AnswerVerdict::Repeated {
                            Resolution::Repeated
                        } else {
                            Resolution::Anomaly
                        };
                        assert_eq!(line.resolution, expected, "{case}");
                    }
                }
                if verdict == AnswerVerdict::Anomaly {
                    assert_eq!(line.contradicts, earlier, "{case}: the other document");
                    assert_eq!(pass.anomalies, 1, "{case}");
                } else {
                    assert_eq!(line.contradicts, None, "{case}");
                }
            }
        }
    }
}

/// A reader of the partner's reports: `deposited` settles payment T1, anything else fails it.
fn partner_reader() -> Arc<MockBankFileReader> {
    let mut reader = MockBankFileReader::new();
    reader.expect_read().returning(|_, bytes| {
        let answer = if bytes == b"deposited" {
            RailAnswer::Settled
        } else {
            RailAnswer::Rejected
        };
        Ok(items(vec![line_of(answer)]))
    });
    Arc::new(reader)
}

#[tokio::test]
async fn a_deposited_transfer_stays_paid_whatever_the_partner_says_next() {
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::InProgress, 1_000)]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("T1", sent(1, 900, 0))],
    );
    let rail = InboundRail {
        method: PayoutMethod::Digital,
        answers: RULES[1],
        ..rail(partner_reader())
    };
    let mut pass = InboundPass::default();
    s.processor
        .process(&rail, "rpt_1", b"deposited", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Successful);
    let deposit = s.recorded.lock().unwrap()[0].clone();
    let deposit_line = deposit.1[0].id;

    // Another report saying the transfer failed: an anomaly naming the deposit; still paid.
    s.processor
        .process(&rail, "rpt_2", b"failed", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Successful);
    let failed = s.recorded.lock().unwrap()[1].clone();
    assert_eq!(failed.0.outcome, InboundOutcome::Read);
    assert_eq!(failed.1[0].resolution, Resolution::Anomaly);
    assert_eq!(failed.1[0].contradicts, Some(deposit_line));

    // The first report's id again with another body: an altered document, kept with its bytes,
    // its line an anomaly naming the deposit; nothing applied, whatever it says.
    s.processor
        .process(&rail, "rpt_1", b"failed after all", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::Successful);
    let altered = s.recorded.lock().unwrap()[2].clone();
    assert_eq!(altered.0.outcome, InboundOutcome::Altered);
    assert_eq!(altered.0.original, Some(deposit.0.id));
    assert_eq!(altered.0.bytes.as_deref(), Some(&b"failed after all"[..]));
    assert!(
        altered
            .0
            .detail
            .unwrap()
            .contains(&deposit.0.id.to_string())
    );
    assert_eq!(altered.1[0].resolution, Resolution::Anomaly);
    assert_eq!(altered.1[0].contradicts, Some(deposit_line));
    assert_eq!((pass.altered, pass.anomalies), (1, 2));
    // And that altered body again: already recorded, nothing new.
    s.processor
        .process(&rail, "rpt_1", b"failed after all", &mut pass)
        .await
        .unwrap();
    assert_eq!(s.recorded.lock().unwrap().len(), 3);
    assert_eq!(ledger.applied.lock().unwrap().len(), 1, "only the deposit");
}

#[tokio::test]
async fn an_altered_document_that_would_settle_a_payout_settles_nothing() {
    let ledger = Ledger::with(vec![payout(1, PayoutStatus::InProgress, 1_000)]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("T1", sent(1, 900, 0))],
    );
    let rail = InboundRail {
        method: PayoutMethod::Digital,
        answers: RULES[1],
        ..rail(partner_reader())
    };
    let mut pass = InboundPass::default();
    // A report that says nothing of T1 yet (it was `sent`), then the same id saying deposited.
    s.recorded.lock().unwrap().push((
        InboundFile {
            id: InboundFileId::from_uuid(id(6_001)),
            method: PayoutMethod::Digital,
            name: "rpt_1".into(),
            sha256: [1; 32],
            outcome: InboundOutcome::Read,
            detail: None,
            original: None,
            bytes: Some(b"sent".to_vec()),
            received_at: at(5),
        },
        Vec::new(),
    ));
    s.processor
        .process(&rail, "rpt_1", b"deposited", &mut pass)
        .await
        .unwrap();
    assert_eq!(ledger.status(1), PayoutStatus::InProgress);
    assert!(ledger.applied.lock().unwrap().is_empty());
    assert_eq!(resolutions(&s), [Resolution::Anomaly]);
    assert_eq!(pass.altered, 1);
}

#[tokio::test]
async fn a_drop_directory_may_reuse_a_name_for_a_new_file() {
    let ledger = Ledger::with(vec![
        payout(1, PayoutStatus::Successful, 1_000),
        payout(2, PayoutStatus::Successful, 1_000),
    ]);
    let s = setup(
        &ledger,
        MockRailFileStore::new(),
        vec![("T1", sent(1, 900, 0)), ("T2", sent(2, 900, 0))],
    );
    let mut reader = MockBankFileReader::new();
    reader.expect_read().returning(|_, bytes| {
        let reference = if bytes == b"monday" { "T1" } else { "T2" };
        Ok(items(vec![return_of(reference, "R03", false, None)]))
    });
    let rail = rail(Arc::new(reader));
    assert_eq!(rail.answers.names, ReportNames::Reusable);
    let mut pass = InboundPass::default();
    for bytes in [&b"monday"[..], b"tuesday"] {
        s.processor
            .process(&rail, "RETURNS.ACH", bytes, &mut pass)
            .await
            .unwrap();
    }
    assert_eq!(ledger.status(1), PayoutStatus::Failed);
    assert_eq!(ledger.status(2), PayoutStatus::Failed);
    assert_eq!(resolutions(&s), [Resolution::Applied, Resolution::Applied]);
    assert_eq!(pass.altered, 0);
    assert!(
        s.recorded
            .lock()
            .unwrap()
            .iter()
            .all(|(f, _)| f.outcome == InboundOutcome::Read)
    );
}
