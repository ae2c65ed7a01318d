//! The bank's answer files (returns and notifications of change): written from a parsed
//! origination file, then read back with the project's own parser.

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "../../bank-formats/tests/nacha/support.rs"]
#[allow(dead_code)]
mod support;

use bank_formats::nacha::{
    Addenda, Addenda05, Batch, ChangeCode, Correction, Field, LineEnding, NachaFile, Problem,
    ReturnCode, SecCode, ServiceClass, TransactionCode, WriteError, corrected_data, parse,
    write_answer,
};
use bank_simulator::nacha::{
    Answer, AnswerError, AnswerOptions, EntryDecision, answer_file, write_answer_file,
};
use chrono::NaiveTime;
use proptest::prelude::*;

use support::{batch_header, credit, date, field, header, written};

/// Two PPD batches as payoutd writes them: batch 1 has a checking credit (with an addenda 05),
/// a savings credit and a checking credit; batch 2 a checking credit and a savings credit.
fn origination() -> NachaFile {
    let mut first = credit("011000015", 12_345, 1);
    first.addenda.push(Addenda::PaymentRelated(Addenda05 {
        payment_related_information: "payout 1".into(),
    }));
    let mut second = credit("231380104", 2_500, 2);
    second.transaction_code = TransactionCode::SavingsCredit;
    second.account_number = "987654321".into();
    second.individual_name = "BOB ROE".into();
    let third = credit("011000015", 777, 3);
    let fourth = credit("091000019", 50_000, 4);
    let mut fifth = credit("231380104", 99, 5);
    fifth.transaction_code = TransactionCode::SavingsCredit;
    fifth.individual_id = String::new();
    let mut header2 = batch_header(2);
    header2.sec_code = SecCode::Ccd;
    header2.company_entry_description = "REFUND".into();
    let file = NachaFile {
        header: header(),
        batches: vec![
            Batch {
                header: batch_header(1),
                entries: vec![first, second, third],
            },
            Batch {
                header: header2,
                entries: vec![fourth, fifth],
            },
        ],
    };
    // As the bank sees it: payoutd's written file, parsed.
    parse(written(&file).as_bytes()).unwrap()
}

fn options() -> AnswerOptions {
    AnswerOptions {
        creation_date: date(2025, 3, 12),
        creation_time: NaiveTime::from_hms_opt(9, 30, 0),
        file_id_modifier: 'B',
        line_ending: LineEnding::Lf,
    }
}

fn trace(sequence: u32) -> String {
    format!("02100002{sequence:07}")
}

fn ret(sequence: u32, code: u8, information: &str) -> EntryDecision {
    EntryDecision {
        original_trace_number: trace(sequence),
        answer: Answer::Return {
            code: ReturnCode::new(code).unwrap(),
            date_of_death: None,
            addenda_information: information.into(),
        },
    }
}

fn noc(sequence: u32, code: u8, data: &str) -> EntryDecision {
    EntryDecision {
        original_trace_number: trace(sequence),
        answer: Answer::Notification {
            code: ChangeCode::new(code).unwrap(),
            corrected_data: data.into(),
        },
    }
}

fn decisions() -> Vec<EntryDecision> {
    let mut death = ret(2, 15, "");
    if let Answer::Return { date_of_death, .. } = &mut death.answer {
        *date_of_death = Some(date(2025, 2, 1));
    }
    vec![
        ret(1, 3, "no such account"),
        death,
        noc(3, 1, "1918171614"),
        noc(5, 5, "22"),
        ret(4, 1, ""),
    ]
}

fn answered() -> String {
    String::from_utf8(write_answer_file(&origination(), &decisions(), &options()).unwrap()).unwrap()
}

#[test]
fn returns_and_notifications_read_back_as_decided() {
    let original = origination();
    let file = parse(answered().as_bytes()).unwrap();

    let returns = file.returns();
    let got: Vec<_> = returns
        .iter()
        .map(|r| {
            (
                r.return_code.to_string(),
                r.original_trace_number.clone(),
                r.amount,
                r.transaction_code.code(),
                r.original_receiving_dfi.clone(),
                r.addenda_information.clone(),
            )
        })
        .collect();
    let expected = vec![
        (
            "R03".to_owned(),
            trace(1),
            12_345,
            21,
            "01100001".to_owned(),
            "NO SUCH ACCOUNT".to_owned(),
        ),
        (
            "R15".to_owned(),
            trace(2),
            2_500,
            31,
            "23138010".to_owned(),
            String::new(),
        ),
        (
            "R01".to_owned(),
            trace(4),
            50_000,
            21,
            "09100001".to_owned(),
            String::new(),
        ),
    ];
    assert_eq!(got, expected);
    assert!(returns[0].account_error);
    assert_eq!(returns[0].account_number, "12345678901");
    assert_eq!(returns[1].account_number, "987654321");
    assert_eq!(returns[1].individual_name, "BOB ROE");

    let nocs = file.notifications_of_change();
    assert_eq!(nocs.len(), 2);
    assert_eq!(nocs[0].change_code.to_string(), "C01");
    assert_eq!(nocs[0].original_trace_number, trace(3));
    assert_eq!(nocs[0].original_receiving_dfi, "01100001");
    assert_eq!(
        nocs[0].correction.account_number.as_deref(),
        Some("1918171614")
    );
    assert_eq!(nocs[1].change_code.to_string(), "C05");
    assert_eq!(nocs[1].original_trace_number, trace(5));
    assert_eq!(
        nocs[1].correction.transaction_code,
        Some(TransactionCode::CheckingCredit)
    );

    // Batches: returns of batch 1 (PPD), its NOC (COR), returns of batch 2 (CCD), its NOC.
    let shape: Vec<_> = file
        .batches
        .iter()
        .map(|b| (b.header.sec_code, b.header.batch_number, b.entries.len()))
        .collect();
    assert_eq!(
        shape,
        vec![
            (SecCode::Ppd, 1, 2),
            (SecCode::Cor, 2, 1),
            (SecCode::Ccd, 3, 1),
            (SecCode::Cor, 4, 1)
        ]
    );
    for batch in &file.batches {
        assert_eq!(batch.header.service_class, ServiceClass::CreditsOnly);
        assert_eq!(batch.header.originating_dfi, "02100002");
        assert_eq!(batch.header.effective_entry_date, Some(date(2025, 3, 12)));
        for entry in &batch.entries {
            // The return goes back to the ODFI.
            assert_eq!(entry.receiving_dfi, "021000021");
            assert!(entry.trace_number.starts_with("02100002"));
        }
    }
    assert_eq!(file.batches[2].header.company_entry_description, "REFUND");
    // NOC entries carry no amount.
    assert!(file.batches[1].entries.iter().all(|e| e.amount == 0));
    // Trace numbers of the answers are new, ascending through the file.
    let traces: Vec<_> = file
        .batches
        .iter()
        .flat_map(|b| b.entries.iter().map(|e| e.trace_number.clone()))
        .collect();
    assert_eq!(traces, (1..=5).map(trace).collect::<Vec<_>>());

    // Header swapped: the ten-digit company id cannot be a destination, so the ODFI is.
    assert_eq!(
        file.header.immediate_origin,
        original.header.immediate_destination
    );
    assert_eq!(file.header.immediate_destination, "021000021");
    assert_eq!(file.header.immediate_destination_name, "PAYOUTD INC");
    assert_eq!(file.header.immediate_origin_name, "JPMORGAN CHASE");
    assert_eq!(file.header.file_id_modifier, 'B');

    // Totals: returned credits count as credits, NOCs as zero.
    let control = file.control();
    assert_eq!(control.total_credit, 12_345 + 2_500 + 50_000);
    assert_eq!(control.total_debit, 0);
    assert_eq!(control.entry_addenda_count, 10);
}

#[test]
fn records_at_their_nacha_positions() {
    let text = answered();
    let records: Vec<&str> = text.split('\n').collect();
    assert_eq!(records.len(), 20, "two blocks of ten");
    assert!(records.iter().all(|r| r.len() == 94));

    let h = records[0];
    assert_eq!(field(h, 1, 3), "101");
    assert_eq!(field(h, 4, 13), " 021000021");
    assert_eq!(field(h, 14, 23), " 021000021");
    assert_eq!(field(h, 24, 33), "2503120930");
    assert_eq!(field(h, 34, 40), "B094101");

    let b = records[1];
    assert_eq!(field(b, 1, 4), "5220");
    assert_eq!(field(b, 5, 20), "PAYOUTD         ");
    assert_eq!(field(b, 41, 50), "1234567890");
    assert_eq!(field(b, 51, 53), "PPD");
    assert_eq!(field(b, 54, 63), "PAYOUT    ");
    assert_eq!(field(b, 64, 69), "MAR 07");
    assert_eq!(field(b, 70, 75), "250312");
    assert_eq!(field(b, 76, 79), "   1");
    assert_eq!(field(b, 80, 94), "021000020000001");

    let e = records[2];
    assert_eq!(field(e, 1, 3), "621");
    assert_eq!(field(e, 4, 12), "021000021");
    assert_eq!(field(e, 13, 29), "12345678901      ");
    assert_eq!(field(e, 30, 39), "0000012345");
    assert_eq!(field(e, 40, 54), "RCV-1          ");
    assert_eq!(field(e, 55, 76), "ANN LEE               ");
    assert_eq!(field(e, 79, 79), "1");
    assert_eq!(field(e, 80, 94), trace(1));

    let a = records[3];
    assert_eq!(field(a, 1, 3), "799");
    assert_eq!(field(a, 4, 6), "R03");
    assert_eq!(field(a, 7, 21), trace(1));
    assert_eq!(field(a, 22, 27), "      ");
    assert_eq!(field(a, 28, 35), "01100001");
    assert_eq!(field(a, 36, 79), format!("{:<44}", "NO SUCH ACCOUNT"));
    assert_eq!(field(a, 80, 94), trace(1));

    let savings = records[4];
    assert_eq!(field(savings, 1, 3), "631");
    assert_eq!(field(savings, 30, 39), "0000002500");
    let death = records[5];
    assert_eq!(field(death, 4, 6), "R15");
    assert_eq!(field(death, 22, 27), "250201");

    let control = records[6];
    assert_eq!(field(control, 1, 4), "8220");
    assert_eq!(field(control, 5, 10), "000004");
    assert_eq!(field(control, 11, 20), "0004200004"); // 02100002 twice
    assert_eq!(field(control, 21, 32), "000000000000");
    assert_eq!(field(control, 33, 44), "000000014845");
    assert_eq!(field(control, 80, 94), "021000020000001");

    let cor = records[7];
    assert_eq!(field(cor, 1, 4), "5220");
    assert_eq!(field(cor, 51, 53), "COR");
    assert_eq!(field(cor, 88, 94), "0000002");
    let noc = records[8];
    assert_eq!(field(noc, 1, 3), "621");
    assert_eq!(field(noc, 30, 39), "0000000000");
    let a98 = records[9];
    assert_eq!(field(a98, 1, 6), "798C01");
    assert_eq!(field(a98, 7, 21), trace(3));
    assert_eq!(field(a98, 22, 27), "      ");
    assert_eq!(field(a98, 28, 35), "01100001");
    assert_eq!(field(a98, 36, 64), format!("{:<29}", "1918171614"));
    assert_eq!(field(a98, 65, 79), " ".repeat(15));
    assert_eq!(field(a98, 80, 94), trace(3));

    let file_control = records[19];
    assert_eq!(field(file_control, 1, 1), "9");
    assert_eq!(field(file_control, 2, 7), "000004");
    assert_eq!(field(file_control, 8, 13), "000002");
    assert_eq!(field(file_control, 14, 21), "00000010");
    assert_eq!(field(file_control, 44, 55), "000000064845");

    // A single return: six records, padded to ten with 9s.
    let one = write_answer_file(&origination(), &[ret(2, 2, "")], &options()).unwrap();
    let one = String::from_utf8(one).unwrap();
    let records: Vec<&str> = one.split('\n').collect();
    assert_eq!(records.len(), 10);
    assert_eq!(field(records[5], 1, 13), "9000001000001");
    assert!(records[6..].iter().all(|r| *r == "9".repeat(94)));
}

#[test]
fn a_ten_digit_routing_origin_is_swapped_as_is() {
    let mut original = origination();
    original.header.immediate_origin = "091000019".into();
    let file = answer_file(&original, &[ret(1, 2, "")], &options()).unwrap();
    assert_eq!(file.header.immediate_destination, "091000019");
    assert_eq!(file.header.immediate_origin, "021000021");
    assert_eq!(file.batches.len(), 1);
}

#[test]
fn decisions_that_cannot_be_written_are_refused() {
    let original = origination();
    let answer = |decisions: &[EntryDecision]| answer_file(&original, decisions, &options());
    assert_eq!(answer(&[]), Err(AnswerError::NoDecisions));
    assert_eq!(
        answer(&[ret(1, 3, ""), ret(9, 3, "")]),
        Err(AnswerError::UnknownTraceNumber {
            trace_number: trace(9)
        })
    );
    assert_eq!(
        answer(&[ret(1, 3, ""), noc(1, 1, "1")]),
        Err(AnswerError::DuplicateDecision {
            trace_number: trace(1)
        })
    );
    for dishonored in [61, 69, 71, 77] {
        assert_eq!(
            answer(&[ret(1, dishonored, "")]),
            Err(AnswerError::ReturnCodeNotWritable {
                code: ReturnCode::new(dishonored).unwrap()
            })
        );
    }

    // Corrected data is written as given, or refused.
    let refused = |data: &str| match write_answer_file(&original, &[noc(1, 1, data)], &options()) {
        Err(AnswerError::Write(WriteError::Field { field, problem, .. })) => {
            assert_eq!(field, Field::CorrectedData, "{data:?}");
            problem
        }
        other => panic!("{data:?}: {other:?}"),
    };
    assert_eq!(refused("   "), Problem::Required);
    assert_eq!(refused(&"1".repeat(30)), Problem::TooLong { max: 29 });
    assert_eq!(refused("12é"), Problem::Character { found: 'é' });

    // A return file cannot itself be returned.
    let returns = parse(answered().as_bytes()).unwrap();
    let first = returns.batches[0].entries[0].trace_number.clone();
    let decision = EntryDecision {
        original_trace_number: first.clone(),
        answer: Answer::Return {
            code: ReturnCode::new(1).unwrap(),
            date_of_death: None,
            addenda_information: String::new(),
        },
    };
    assert_eq!(
        answer_file(&returns, &[decision], &options()),
        Err(AnswerError::NotAnswerable {
            trace_number: first,
            code: TransactionCode::CheckingCreditReturn
        })
    );
}

#[test]
fn the_answer_writer_refuses_what_is_not_an_answer() {
    // An origination file is not an answer file: code 22 is refused.
    let err = write_answer(&origination(), LineEnding::Lf).unwrap_err();
    assert!(
        matches!(
            err,
            WriteError::Field {
                field: Field::TransactionCode,
                problem: Problem::NotWritable { .. },
                ..
            }
        ),
        "{err}"
    );
    // A NOC entry with an amount.
    let mut file = answer_file(&origination(), &[noc(3, 1, "1")], &options()).unwrap();
    file.batches[0].entries[0].amount = 5;
    assert!(write_answer(&file, LineEnding::Lf).is_err());
    // An answer entry without its addenda.
    let mut file = answer_file(&origination(), &[ret(3, 1, "")], &options()).unwrap();
    file.batches[0].entries[0].addenda.clear();
    assert!(write_answer(&file, LineEnding::Lf).is_err());
    // No batch.
    file.batches.clear();
    assert_eq!(
        write_answer(&file, LineEnding::Lf),
        Err(WriteError::NoBatches)
    );
}

#[test]
fn crlf_answers_parse() {
    let mut opts = options();
    opts.line_ending = LineEnding::CrLf;
    let bytes = write_answer_file(&origination(), &decisions(), &opts).unwrap();
    assert!(String::from_utf8_lossy(&bytes).contains("\r\n"));
    assert_eq!(parse(&bytes).unwrap().returns().len(), 3);
}

#[test]
fn corrections_laid_out_by_corrected_data_read_back() {
    let correction = Correction {
        routing_number: Some("091000019".into()),
        account_number: Some("55512345".into()),
        transaction_code: Some(TransactionCode::SavingsCredit),
        individual_name: None,
        individual_id: None,
    };
    let code = ChangeCode::new(7).unwrap();
    let data = corrected_data(code, &correction).unwrap();
    let bytes = write_answer_file(&origination(), &[noc(1, 7, &data)], &options()).unwrap();
    let nocs = parse(&bytes).unwrap().notifications_of_change();
    assert_eq!(nocs.len(), 1);
    assert_eq!(nocs[0].correction, correction);
}

proptest! {
    /// Any subset of entries, any codes, any text: the writer never panics, and what it writes
    /// reads back as decided.
    #[test]
    fn arbitrary_decisions_read_back(
        picks in prop::collection::vec((1u32..=5, any::<bool>(), 1u8..=99, 1u8..=14, ".{0,50}"), 0..5),
    ) {
        let original = origination();
        let decisions: Vec<EntryDecision> = picks
            .iter()
            .map(|(sequence, is_return, r, c, text)| if *is_return {
                ret(*sequence, *r, text)
            } else {
                noc(*sequence, *c, text)
            })
            .collect();
        if let Ok(bytes) = write_answer_file(&original, &decisions, &options()) {
            let file = parse(&bytes).unwrap();
            let mut decided: Vec<(String, String)> = decisions
                .iter()
                .map(|d| match &d.answer {
                    Answer::Return { code, .. } => (d.original_trace_number.clone(), code.to_string()),
                    Answer::Notification { code, .. } => (d.original_trace_number.clone(), code.to_string()),
                })
                .collect();
            let mut read: Vec<(String, String)> = file
                .returns()
                .into_iter()
                .map(|r| (r.original_trace_number, r.return_code.to_string()))
                .chain(
                    file.notifications_of_change()
                        .into_iter()
                        .map(|n| (n.original_trace_number, n.change_code.to_string())),
                )
                .collect();
            decided.sort();
            read.sort();
            prop_assert_eq!(decided, read);
        }
    }

    /// Arbitrary trace numbers never panic.
    #[test]
    fn arbitrary_trace_numbers_never_panic(traces in prop::collection::vec(".{0,20}", 1..4)) {
        let decisions: Vec<EntryDecision> = traces
            .into_iter()
            .map(|t| EntryDecision {
                original_trace_number: t,
                answer: Answer::Notification {
                    code: ChangeCode::new(2).unwrap(),
                    corrected_data: "091000019".into(),
                },
            })
            .collect();
        let _ = write_answer_file(&origination(), &decisions, &options());
    }
}

/// Returns of debits (a file the parser reads but payoutd does not write): code 26 for a
/// checking debit 27, 36 for a savings debit 37, service class 225, debit totals.
#[test]
fn returned_debits_are_debits() {
    let mut file = origination();
    for batch in &mut file.batches {
        batch.header.service_class = ServiceClass::DebitsOnly;
        for entry in &mut batch.entries {
            entry.transaction_code = match entry.transaction_code {
                TransactionCode::SavingsCredit => TransactionCode::SavingsDebit,
                _ => TransactionCode::CheckingDebit,
            };
        }
    }
    let bytes = write_answer_file(&file, &[ret(1, 1, ""), ret(2, 10, "")], &options()).unwrap();
    let answer = parse(&bytes).unwrap();
    let codes: Vec<_> = answer
        .returns()
        .iter()
        .map(|r| r.transaction_code)
        .collect();
    assert_eq!(
        codes,
        vec![
            TransactionCode::CheckingDebitReturn,
            TransactionCode::SavingsDebitReturn
        ]
    );
    assert_eq!(
        answer.batches[0].header.service_class,
        ServiceClass::DebitsOnly
    );
    assert_eq!(answer.control().total_debit, 12_345 + 2_500);
    assert_eq!(answer.control().total_credit, 0);
}
