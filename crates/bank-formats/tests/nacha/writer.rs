//! The writer's output checked field by field at the positions of the NACHA layout. The
//! positions are written here from the layout, not taken from the writer.

use bank_formats::nacha::{
    Addenda, Addenda98, Batch, ChangeCode, Field, LineEnding, Location, NachaFile, Problem,
    SecCode, ServiceClass, TransactionCode, WriteError, WriteOptions, write,
};

use super::support::{
    batch_header, credit, date, field, file_with_entries, header, records, sample, written,
};

const PADDING: &str = "9999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999999";

#[test]
fn records_are_94_characters_joined_by_lf_without_a_final_separator() {
    let text = written(&sample());
    assert!(!text.ends_with('\n'));
    assert!(!text.contains('\r'));
    let lines: Vec<&str> = text.split('\n').collect();
    assert_eq!(lines.len(), 10);
    assert!(lines.iter().all(|l| l.len() == 94 && l.is_ascii()));
    let types: String = lines.iter().map(|l| &l[..1]).collect();
    assert_eq!(types, "1567689999");
}

#[test]
fn crlf_is_an_option() {
    let options = WriteOptions {
        line_ending: LineEnding::CrLf,
    };
    let text = String::from_utf8(write(&sample(), &options).unwrap()).unwrap();
    assert!(!text.ends_with('\n'));
    let lines: Vec<&str> = text.split("\r\n").collect();
    assert_eq!(lines.len(), 10);
    assert!(lines.iter().all(|l| l.len() == 94));
    assert_eq!(text.replace("\r\n", "\n"), written(&sample()));
}

#[test]
fn file_header_record() {
    let r = &records(&sample())[0];
    assert_eq!(field(r, 1, 1), "1", "record type code");
    assert_eq!(field(r, 2, 3), "01", "priority code");
    assert_eq!(field(r, 4, 13), " 021000021", "immediate destination");
    assert_eq!(field(r, 14, 23), "1234567890", "immediate origin");
    assert_eq!(field(r, 24, 29), "250307", "file creation date");
    assert_eq!(field(r, 30, 33), "1405", "file creation time");
    assert_eq!(field(r, 34, 34), "A", "file id modifier");
    assert_eq!(field(r, 35, 37), "094", "record size");
    assert_eq!(field(r, 38, 39), "10", "blocking factor");
    assert_eq!(field(r, 40, 40), "1", "format code");
    assert_eq!(
        field(r, 41, 63),
        "JPMORGAN CHASE         ",
        "destination name"
    );
    assert_eq!(field(r, 64, 86), "PAYOUTD INC            ", "origin name");
    assert_eq!(field(r, 87, 94), "REF00001", "reference code");
}

#[test]
fn file_header_nine_digit_origin_and_no_time() {
    let mut file = sample();
    file.header.immediate_origin = "231380104".into();
    file.header.creation_time = None;
    file.header.reference_code = String::new();
    let r = &records(&file)[0];
    assert_eq!(field(r, 14, 23), " 231380104");
    assert_eq!(field(r, 30, 33), "    ");
    assert_eq!(field(r, 87, 94), "        ");
}

#[test]
fn batch_header_record() {
    let r = &records(&sample())[1];
    assert_eq!(field(r, 1, 1), "5", "record type code");
    assert_eq!(field(r, 2, 4), "220", "service class code");
    assert_eq!(field(r, 5, 20), "PAYOUTD         ", "company name");
    assert_eq!(
        field(r, 21, 40),
        " ".repeat(20),
        "company discretionary data"
    );
    assert_eq!(field(r, 41, 50), "1234567890", "company identification");
    assert_eq!(field(r, 51, 53), "PPD", "standard entry class code");
    assert_eq!(field(r, 54, 63), "PAYOUT    ", "company entry description");
    assert_eq!(field(r, 64, 69), "MAR 07", "company descriptive date");
    assert_eq!(field(r, 70, 75), "250310", "effective entry date");
    assert_eq!(field(r, 76, 78), "   ", "settlement date");
    assert_eq!(field(r, 79, 79), "1", "originator status code");
    assert_eq!(field(r, 80, 87), "02100002", "originating DFI");
    assert_eq!(field(r, 88, 94), "0000001", "batch number");
}

#[test]
fn entry_detail_records() {
    let lines = records(&sample());
    let r = &lines[2];
    assert_eq!(field(r, 1, 1), "6", "record type code");
    assert_eq!(field(r, 2, 3), "22", "transaction code");
    assert_eq!(field(r, 4, 11), "01100001", "receiving DFI identification");
    assert_eq!(field(r, 12, 12), "5", "check digit");
    assert_eq!(field(r, 13, 29), "12345678901      ", "DFI account number");
    assert_eq!(field(r, 30, 39), "0000012345", "amount");
    assert_eq!(
        field(r, 40, 54),
        "RCV-1          ",
        "individual identification number"
    );
    assert_eq!(
        field(r, 55, 76),
        "JOSE MULLER           ",
        "individual name"
    );
    assert_eq!(field(r, 77, 78), "  ", "discretionary data");
    assert_eq!(field(r, 79, 79), "1", "addenda record indicator");
    assert_eq!(field(r, 80, 94), "021000020000001", "trace number");

    let r = &lines[4];
    assert_eq!(field(r, 2, 3), "32");
    assert_eq!(field(r, 4, 11), "23138010");
    assert_eq!(field(r, 12, 12), "4");
    assert_eq!(field(r, 13, 29), "987654321        ");
    assert_eq!(field(r, 30, 39), "0000000001");
    assert_eq!(field(r, 40, 54), " ".repeat(15));
    assert_eq!(field(r, 79, 79), "0");
    assert_eq!(field(r, 80, 94), "021000020000002");
}

#[test]
fn addenda_05_record() {
    let r = &records(&sample())[3];
    assert_eq!(field(r, 1, 1), "7", "record type code");
    assert_eq!(field(r, 2, 3), "05", "addenda type code");
    assert_eq!(
        field(r, 4, 83),
        format!("{:<80}", "INVOICE 42 - THANKS"),
        "payment-related information"
    );
    assert_eq!(field(r, 84, 87), "0001", "addenda sequence number");
    assert_eq!(field(r, 88, 94), "0000001", "entry detail sequence number");
}

#[test]
fn batch_control_record() {
    let r = &records(&sample())[5];
    assert_eq!(field(r, 1, 1), "8", "record type code");
    assert_eq!(field(r, 2, 4), "220", "service class code");
    assert_eq!(field(r, 5, 10), "000003", "entry/addenda count");
    // 01100001 + 23138010
    assert_eq!(field(r, 11, 20), "0024238011", "entry hash");
    assert_eq!(field(r, 21, 32), "000000000000", "total debit");
    assert_eq!(field(r, 33, 44), "000000012346", "total credit");
    assert_eq!(field(r, 45, 54), "1234567890", "company identification");
    assert_eq!(
        field(r, 55, 73),
        " ".repeat(19),
        "message authentication code"
    );
    assert_eq!(field(r, 74, 79), " ".repeat(6), "reserved");
    assert_eq!(field(r, 80, 87), "02100002", "originating DFI");
    assert_eq!(field(r, 88, 94), "0000001", "batch number");
}

#[test]
fn file_control_record() {
    let lines = records(&sample());
    let r = &lines[6];
    assert_eq!(field(r, 1, 1), "9", "record type code");
    assert_eq!(field(r, 2, 7), "000001", "batch count");
    assert_eq!(field(r, 8, 13), "000001", "block count");
    assert_eq!(field(r, 14, 21), "00000003", "entry/addenda count");
    assert_eq!(field(r, 22, 31), "0024238011", "entry hash");
    assert_eq!(field(r, 32, 43), "000000000000", "total debit");
    assert_eq!(field(r, 44, 55), "000000012346", "total credit");
    assert_eq!(field(r, 56, 94), " ".repeat(39), "reserved");
    assert!(lines[7..].iter().all(|l| l == PADDING));
}

#[test]
fn prenotes_carry_a_zero_amount_and_count_in_no_total() {
    let mut file = file_with_entries(2);
    file.batches[0].entries[0].transaction_code = TransactionCode::CheckingCreditPrenote;
    file.batches[0].entries[0].amount = 0;
    file.batches[0].entries[1].transaction_code = TransactionCode::SavingsCreditPrenote;
    file.batches[0].entries[1].amount = 0;
    let lines = records(&file);
    assert_eq!(field(&lines[2], 2, 3), "23");
    assert_eq!(field(&lines[3], 2, 3), "33");
    assert_eq!(field(&lines[2], 30, 39), "0000000000");
    assert_eq!(field(&lines[4], 33, 44), "000000000000");
    assert_eq!(field(&lines[4], 5, 10), "000002");
}

/// 101 entries to a bank whose identification is 99999999: the sum, 10 099 999 899, has eleven
/// digits and the entry hash keeps the rightmost ten.
#[test]
fn entry_hash_keeps_the_rightmost_ten_digits() {
    let mut file = file_with_entries(101);
    for entry in &mut file.batches[0].entries {
        entry.receiving_dfi = "999999992".into();
    }
    let lines = records(&file);
    let control = lines.iter().find(|l| l.starts_with('8')).unwrap();
    assert_eq!(field(control, 11, 20), "0099999899");
    let file_control = lines
        .iter()
        .find(|l| l.starts_with('9') && *l != PADDING)
        .unwrap();
    assert_eq!(field(file_control, 22, 31), "0099999899");
}

/// Two batches of 60 entries to 99999999: each batch hash is 5 999 999 940, and the file's is
/// their sum, 11 999 999 880, cut to ten digits.
#[test]
fn file_entry_hash_keeps_the_rightmost_ten_digits_of_the_batches_sum() {
    let batch = |number: u32| {
        let mut entries: Vec<_> = (1..=60).map(|n| credit("999999992", 100, n)).collect();
        entries.iter_mut().for_each(|e| e.amount = 250);
        Batch {
            header: batch_header(number),
            entries,
        }
    };
    let file = NachaFile {
        header: header(),
        batches: vec![batch(1), batch(2)],
    };
    let lines = records(&file);
    let controls: Vec<&String> = lines.iter().filter(|l| l.starts_with('8')).collect();
    assert_eq!(controls.len(), 2);
    for control in &controls {
        assert_eq!(field(control, 11, 20), "5999999940");
        assert_eq!(field(control, 33, 44), "000000015000");
    }
    assert_eq!(field(controls[1], 88, 94), "0000002");
    let file_control = lines
        .iter()
        .find(|l| l.starts_with('9') && *l != PADDING)
        .unwrap();
    assert_eq!(field(file_control, 2, 7), "000002");
    assert_eq!(field(file_control, 14, 21), "00000120");
    assert_eq!(field(file_control, 22, 31), "1999999880");
    assert_eq!(field(file_control, 44, 55), "000000030000");
    // 2 + 2 × 62 = 126 records: 13 blocks, 4 padding records.
    assert_eq!(lines.len(), 130);
    assert_eq!(field(file_control, 8, 13), "000013");
    assert!(lines[126..].iter().all(|l| l == PADDING));
}

/// A batch of n entries makes n + 4 records (file header, batch header, batch control, file
/// control): 1 entry → 5 records, 5 → 9, 6 → 10 (no padding), 7 → 11, 16 → 20, 17 → 21.
#[test]
fn block_count_and_padding() {
    for entries in 1..=27u32 {
        let records_before_padding = entries as usize + 4;
        let blocks = records_before_padding.div_ceil(10);
        let lines = records(&file_with_entries(entries));
        assert_eq!(lines.len(), blocks * 10, "{entries} entries");
        let file_control = &lines[records_before_padding - 1];
        assert!(file_control.starts_with('9') && file_control != PADDING);
        assert_eq!(
            field(file_control, 8, 13),
            format!("{blocks:06}"),
            "{entries} entries"
        );
        assert_eq!(field(file_control, 14, 21), format!("{entries:08}"));
        assert!(
            lines[records_before_padding..].iter().all(|l| l == PADDING),
            "{entries} entries"
        );
        assert!(lines[..records_before_padding].iter().all(|l| l != PADDING));
    }
    assert_eq!(records(&file_with_entries(6)).len(), 10);
    assert_eq!(records(&file_with_entries(7)).len(), 20);
}

#[test]
fn the_bytes_are_sized_for_the_whole_file_up_front() {
    // Written into one buffer of the file's exact size: never grown (a file of 100,000
    // entries would briefly need twice its size), never larger than the file.
    for line_ending in [LineEnding::Lf, LineEnding::CrLf] {
        for entries in [1, 6, 7, 250] {
            let bytes = write(&file_with_entries(entries), &WriteOptions { line_ending }).unwrap();
            assert_eq!(
                bytes.capacity(),
                bytes.len(),
                "{entries} entries, {line_ending:?}"
            );
        }
    }
}

#[test]
fn free_text_is_cleaned_and_cut() {
    let mut file = sample();
    file.batches[0].header.company_name = "Zoë Ångström-Öberg GmbH & Co".into();
    file.batches[0].entries[1].individual_name = "Straße ~{weird}~ name that is long".into();
    let lines = records(&file);
    assert_eq!(field(&lines[1], 5, 20), "ZOE ANGSTROM-OBE");
    assert_eq!(field(&lines[4], 55, 76), "STRASSE   WEIRD   NAME");
}

fn error_of(file: &NachaFile) -> WriteError {
    write(file, &WriteOptions::default()).unwrap_err()
}

fn field_error(location: Location, field: Field, problem: Problem) -> WriteError {
    WriteError::Field {
        location,
        field,
        problem,
    }
}

const ENTRY_0: Location = Location::Entry { batch: 0, entry: 0 };
const BATCH_0: Location = Location::BatchHeader { batch: 0 };

#[test]
fn routing_numbers_are_checked() {
    let mut file = sample();
    file.batches[0].entries[0].receiving_dfi = "011000016".into();
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::CheckDigit,
            Problem::CheckDigit { expected: 5 }
        )
    );
    file.batches[0].entries[0].receiving_dfi = "01100001".into();
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::ReceivingDfi,
            Problem::NotDigits { digits: 9 }
        )
    );
    let mut file = sample();
    file.header.immediate_destination = "021000022".into();
    assert_eq!(
        error_of(&file),
        field_error(
            Location::FileHeader,
            Field::ImmediateDestination,
            Problem::CheckDigit { expected: 1 }
        )
    );
}

#[test]
fn numeric_fields_are_checked() {
    let mut file = sample();
    file.batches[0].header.originating_dfi = "0210000A".into();
    assert_eq!(
        error_of(&file),
        field_error(
            BATCH_0,
            Field::OriginatingDfi,
            Problem::NotDigits { digits: 8 }
        )
    );
    let mut file = sample();
    file.header.immediate_origin = "12345678".into();
    assert!(matches!(
        error_of(&file),
        WriteError::Field {
            field: Field::ImmediateOrigin,
            ..
        }
    ));
    let mut file = sample();
    file.batches[0].entries[0].trace_number = "02100002000001".into();
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::TraceNumber,
            Problem::NotDigits { digits: 15 }
        )
    );
}

#[test]
fn identifiers_are_refused_not_altered() {
    let mut file = sample();
    file.batches[0].entries[0].account_number = "123456789012345678".into();
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::DfiAccountNumber,
            Problem::TooLong { max: 17 }
        )
    );
    file.batches[0].entries[0].account_number = "12345é".into();
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::DfiAccountNumber,
            Problem::Character { found: 'é' }
        )
    );
    file.batches[0].entries[0].account_number = String::new();
    assert_eq!(
        error_of(&file),
        field_error(ENTRY_0, Field::DfiAccountNumber, Problem::Required)
    );
    let mut file = sample();
    file.batches[0].header.company_identification = "12345678901".into();
    assert_eq!(
        error_of(&file),
        field_error(
            BATCH_0,
            Field::CompanyIdentification,
            Problem::TooLong { max: 10 }
        )
    );
    let mut file = sample();
    file.batches[0].entries[0].individual_id = "ref-1".into();
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::IndividualIdentificationNumber,
            Problem::Character { found: 'r' }
        )
    );
}

#[test]
fn required_text_fields() {
    let mut file = sample();
    file.batches[0].header.company_name = " ~~ ".into();
    assert_eq!(
        error_of(&file),
        field_error(BATCH_0, Field::CompanyName, Problem::Required)
    );
    let mut file = sample();
    file.batches[0].entries[0].individual_name = String::new();
    assert_eq!(
        error_of(&file),
        field_error(ENTRY_0, Field::IndividualName, Problem::Required)
    );
    let mut file = sample();
    file.batches[0].header.effective_entry_date = None;
    assert_eq!(
        error_of(&file),
        field_error(BATCH_0, Field::EffectiveEntryDate, Problem::Required)
    );
}

#[test]
fn dates_and_modifier() {
    let mut file = sample();
    file.header.creation_date = date(1999, 12, 31);
    assert_eq!(
        error_of(&file),
        field_error(
            Location::FileHeader,
            Field::FileCreationDate,
            Problem::DateOutOfRange
        )
    );
    let mut file = sample();
    file.header.file_id_modifier = 'a';
    assert!(matches!(
        error_of(&file),
        WriteError::Field {
            field: Field::FileIdModifier,
            ..
        }
    ));
}

#[test]
fn only_credit_origination_is_written() {
    let mut file = sample();
    file.batches[0].header.service_class = ServiceClass::Mixed;
    assert_eq!(
        error_of(&file),
        field_error(
            BATCH_0,
            Field::ServiceClassCode,
            Problem::NotWritable {
                found: "200".into()
            }
        )
    );
    let mut file = sample();
    file.batches[0].header.sec_code = SecCode::Web;
    assert_eq!(
        error_of(&file),
        field_error(
            BATCH_0,
            Field::StandardEntryClassCode,
            Problem::NotWritable {
                found: "WEB".into()
            }
        )
    );
    let mut file = sample();
    file.batches[0].header.sec_code = SecCode::Ccd;
    assert!(write(&file, &WriteOptions::default()).is_ok());
    file.batches[0].entries[0].transaction_code = TransactionCode::CheckingDebit;
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::TransactionCode,
            Problem::NotWritable { found: "27".into() }
        )
    );
    let mut file = sample();
    file.batches[0].entries[0].addenda = vec![Addenda::Notification(Addenda98 {
        change_code: ChangeCode::new(1).unwrap(),
        original_trace_number: "021000020000001".into(),
        original_receiving_dfi: "01100001".into(),
        corrected_data: "1".into(),
        trace_number: "021000020000001".into(),
    })];
    assert_eq!(
        error_of(&file),
        field_error(
            Location::Addenda {
                batch: 0,
                entry: 0,
                addenda: 0
            },
            Field::AddendaTypeCode,
            Problem::NotWritable {
                found: "addenda 98".into()
            }
        )
    );
    let mut file = sample();
    let addenda = file.batches[0].entries[0].addenda[0].clone();
    file.batches[0].entries[0].addenda.push(addenda);
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::AddendaRecordIndicator,
            Problem::TooManyAddenda { max: 1 }
        )
    );
}

#[test]
fn amounts() {
    let mut file = sample();
    file.batches[0].entries[0].amount = 10_000_000_000;
    assert_eq!(
        error_of(&file),
        field_error(
            ENTRY_0,
            Field::Amount,
            Problem::TooLarge {
                value: 10_000_000_000,
                max: 9_999_999_999
            }
        )
    );
    file.batches[0].entries[0].amount = 0;
    assert_eq!(
        error_of(&file),
        field_error(ENTRY_0, Field::Amount, Problem::ZeroAmount)
    );
    file.batches[0].entries[0].transaction_code = TransactionCode::CheckingCreditPrenote;
    file.batches[0].entries[0].amount = 1;
    assert_eq!(
        error_of(&file),
        field_error(ENTRY_0, Field::Amount, Problem::PrenoteAmount)
    );
    // 101 entries of 99 999 999.99: the batch total needs 13 digits.
    let mut file = file_with_entries(101);
    file.batches[0]
        .entries
        .iter_mut()
        .for_each(|e| e.amount = 9_999_999_999);
    assert_eq!(
        error_of(&file),
        field_error(
            Location::BatchControl { batch: 0 },
            Field::TotalCredit,
            Problem::TooLarge {
                value: 1_009_999_999_899,
                max: 999_999_999_999
            }
        )
    );
}

#[test]
fn ordering_and_structure() {
    let mut file = sample();
    file.batches[0].entries.swap(0, 1);
    assert_eq!(
        error_of(&file),
        field_error(
            Location::Entry { batch: 0, entry: 1 },
            Field::TraceNumber,
            Problem::NotAscending
        )
    );
    let mut file = sample();
    file.batches[0].entries[1].trace_number = "021000030000002".into();
    assert_eq!(
        error_of(&file),
        field_error(
            Location::Entry { batch: 0, entry: 1 },
            Field::TraceNumber,
            Problem::OdfiMismatch
        )
    );
    let mut file = sample();
    let mut second = file.batches[0].clone();
    second.header.batch_number = 1;
    file.batches.push(second);
    assert_eq!(
        error_of(&file),
        field_error(
            Location::BatchHeader { batch: 1 },
            Field::BatchNumber,
            Problem::NotAscending
        )
    );
    let mut file = sample();
    file.batches.clear();
    assert_eq!(error_of(&file), WriteError::NoBatches);
    let mut file = sample();
    file.batches[0].entries.clear();
    assert_eq!(error_of(&file), WriteError::EmptyBatch { batch: 0 });
}

#[test]
fn errors_name_the_field() {
    let mut file = sample();
    file.batches[0].entries[0].receiving_dfi = "011000016".into();
    assert_eq!(
        error_of(&file).to_string(),
        "batches[0].entries[0]: check digit fails the routing number check (the check digit should be 5)"
    );
    file.batches[0].entries[0].receiving_dfi = "011000015".into();
    file.batches[0].entries[0].account_number = "x".into();
    assert_eq!(
        error_of(&file).to_string(),
        "batches[0].entries[0]: DFI account number contains 'x', outside the NACHA character set the writer uses"
    );
}
