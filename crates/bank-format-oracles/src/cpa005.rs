//! A Standard 005 checker written from the published layout (Payments Canada, "Standards for
//! the Exchange of Financial Data on AFT Files", as the Canadian banks' AFT guides repeat it),
//! independently of `bank_formats::cpa005`: it reads raw bytes with its own position tables and
//! never calls the crate's writer or parser.
//!
//! It checks the line endings, every record's length and characters, the record types and their
//! order (`A`, then `C`/`D`/`I`/`J`, then `Z`, then nothing), the record counts, the originator's
//! ID and file creation number repeated in every record, every field's position, type
//! (numeric: digits, right-justified and zero-filled; alphanumeric: left-justified and
//! blank-filled, upper-case letters, digits, blanks and `-.,/()` only), the Julian dates, the
//! unused segments (blank, as the standard says, and only after the used ones) and
//! every trailer total and count. Standard 005 has no hash total.

/// What a file that passes holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Summary {
    /// Records, header and trailer included.
    pub records: usize,
    /// Used segments of `C` and `I` records, and the sum of their amounts.
    pub credit_count: u64,
    pub credit_value: u64,
    /// Used segments of `D` and `J` records, and the sum of their amounts.
    pub debit_count: u64,
    pub debit_value: u64,
    /// Each used segment's record type and cross reference (trimmed).
    pub items: Vec<(char, String)>,
}

const RECORD: usize = 1464;
const SEGMENT: usize = 240;

/// Checks `bytes`, whose records must each be followed by `ending`. Gives every violation found
/// (stopping at the first structural one).
pub fn check(bytes: &[u8], ending: &[u8]) -> Result<Summary, Vec<String>> {
    let mut errors = Vec::new();
    let records = match split(bytes, ending) {
        Ok(records) => records,
        Err(e) => return Err(vec![e]),
    };
    let mut summary = Summary {
        records: records.len(),
        ..Summary::default()
    };
    if records.len() < 2 {
        return Err(vec![format!(
            "{} records: a file needs a header and a trailer",
            records.len()
        )]);
    }
    let header = records[0];
    let originator = &header[10..20];
    let file_number = &header[20..24];
    for (i, r) in records.iter().enumerate() {
        let n = i + 1;
        let t = r.as_bytes()[0] as char;
        let expected_type = if i == 0 {
            "A"
        } else if i == records.len() - 1 {
            "Z"
        } else {
            "CDIJ"
        };
        if !expected_type.contains(t) {
            errors.push(format!(
                "record {n}: record type {t:?}, expected one of {expected_type}"
            ));
            return Err(errors);
        }
        let count = &r[1..10];
        if count != format!("{n:09}") {
            errors.push(format!(
                "record {n}: record count {count:?}, expected {n:09}"
            ));
        }
        if &r[10..20] != originator {
            errors.push(format!(
                "record {n}: originator's ID differs from the header's"
            ));
        }
        if &r[20..24] != file_number {
            errors.push(format!(
                "record {n}: file creation number differs from the header's"
            ));
        }
        match t {
            'A' => check_header(r, &mut errors),
            'Z' => check_trailer(r, &summary, &mut errors),
            _ => check_detail(n, t, r, &mut summary, &mut errors),
        }
    }
    if errors.is_empty() {
        Ok(summary)
    } else {
        Err(errors)
    }
}

/// The records, each checked for its length, its characters and the ending after it.
fn split<'a>(bytes: &'a [u8], ending: &[u8]) -> Result<Vec<&'a str>, String> {
    let stride = RECORD + ending.len();
    if bytes.is_empty() {
        return Err("the file is empty".into());
    }
    if !bytes.len().is_multiple_of(stride) {
        return Err(format!(
            "the file is {} bytes long, not a multiple of {stride} (1464-byte records each followed by {ending:?})",
            bytes.len()
        ));
    }
    let mut out = Vec::new();
    for (i, chunk) in bytes.chunks(stride).enumerate() {
        let (record, end) = chunk.split_at(RECORD);
        if end != ending {
            return Err(format!(
                "record {}: followed by {end:?}, not {ending:?}",
                i + 1
            ));
        }
        if let Some(p) = record.iter().position(|b| !(0x20..=0x7e).contains(b)) {
            return Err(format!(
                "record {}: byte {:#04x} at position {} is not printable ASCII",
                i + 1,
                record[p],
                p + 1
            ));
        }
        out.push(std::str::from_utf8(record).map_err(|e| e.to_string())?);
    }
    Ok(out)
}

fn is_alnum_char(c: char) -> bool {
    c.is_ascii_uppercase() || c.is_ascii_digit() || " -.,/()".contains(c)
}

/// Positions `from`–`to` (from 1, inclusive) of `r`.
fn at(r: &str, from: usize, to: usize) -> &str {
    &r[from - 1..to]
}

fn numeric(errors: &mut Vec<String>, place: &str, name: &str, value: &str) -> Option<u64> {
    if value.bytes().all(|b| b.is_ascii_digit()) {
        value.parse().ok()
    } else {
        errors.push(format!(
            "{place}: {name} is not numeric (digits, zero-filled)"
        ));
        None
    }
}

/// Alphanumeric: allowed characters, left-justified (no leading blank unless all blank).
fn alnum(errors: &mut Vec<String>, place: &str, name: &str, value: &str, required: bool) {
    if let Some(c) = value.chars().find(|c| !is_alnum_char(*c)) {
        errors.push(format!("{place}: {name} holds {c:?}, not allowed"));
    }
    let blank = value.trim().is_empty();
    if !blank && value.starts_with(' ') {
        errors.push(format!("{place}: {name} is not left-justified"));
    }
    if blank && required {
        errors.push(format!("{place}: {name} is blank"));
    }
}

fn blank(errors: &mut Vec<String>, place: &str, name: &str, value: &str) {
    if !value.bytes().all(|b| b == b' ') {
        errors.push(format!("{place}: {name} is not blank"));
    }
}

fn days_in_year(year: u32) -> u32 {
    if (year.is_multiple_of(4) && !year.is_multiple_of(100)) || year.is_multiple_of(400) {
        366
    } else {
        365
    }
}

/// `0YYDDD`: century digit 0 (years 2000–2099), two year digits, day of the year.
fn julian(errors: &mut Vec<String>, place: &str, name: &str, value: &str) {
    let ok = value.len() == 6
        && value.bytes().all(|b| b.is_ascii_digit())
        && value.starts_with('0')
        && {
            let year = 2000 + value[1..3].parse::<u32>().unwrap_or(0);
            let day = value[3..6].parse::<u32>().unwrap_or(0);
            (1..=days_in_year(year)).contains(&day)
        };
    if !ok {
        errors.push(format!("{place}: {name} is not a Julian date 0YYDDD"));
    }
}

/// Digits, left-justified, blank-filled, at least one digit.
fn account(errors: &mut Vec<String>, place: &str, name: &str, value: &str) {
    let digits = value.trim_end_matches(' ');
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        errors.push(format!("{place}: {name} is not digits, left-justified"));
    }
}

fn institution(errors: &mut Vec<String>, place: &str, name: &str, value: &str) {
    if !(value.starts_with('0') && value.bytes().all(|b| b.is_ascii_digit())) {
        errors.push(format!("{place}: {name} is not 0IIITTTTT"));
    }
}

fn check_header(r: &str, errors: &mut Vec<String>) {
    let place = "record 1 (A)";
    alnum(errors, place, "originator's ID", at(r, 11, 20), true);
    if numeric(errors, place, "file creation number", at(r, 21, 24)) == Some(0) {
        errors.push(format!("{place}: file creation number is 0000"));
    }
    julian(errors, place, "creation date", at(r, 25, 30));
    numeric(errors, place, "destination data centre", at(r, 31, 35));
    blank(errors, place, "communication area", at(r, 36, 55));
    if at(r, 56, 58) != "CAD" {
        errors.push(format!("{place}: currency code is not CAD"));
    }
    blank(errors, place, "filler", at(r, 59, 1464));
}

fn check_detail(n: usize, t: char, r: &str, summary: &mut Summary, errors: &mut Vec<String>) {
    let mut used_ended = false;
    let mut used = 0;
    for k in 0..6 {
        let s = &r[24 + k * SEGMENT..24 + (k + 1) * SEGMENT];
        let place = format!("record {n} ({t}) segment {}", k + 1);
        let place = place.as_str();
        // Unused segments are blank (Standard 005); a zero-filled one would read as a
        // zero-amount transaction to a bank that stops at the first blank segment.
        if s.bytes().all(|b| b == b' ') {
            used_ended = true;
            continue;
        }
        if at(s, 1, 13).bytes().all(|b| b == b'0') {
            used_ended = true;
            errors.push(format!(
                "{place}: an unused segment must be blank, not zero-filled"
            ));
            continue;
        }
        if used_ended {
            errors.push(format!("{place}: a used segment after an unused one"));
        }
        used += 1;
        numeric(errors, place, "transaction type", at(s, 1, 3));
        let amount = numeric(errors, place, "amount", at(s, 4, 13)).unwrap_or(0);
        if amount == 0 {
            errors.push(format!("{place}: amount is zero"));
        }
        julian(errors, place, "date funds to be available", at(s, 14, 19));
        institution(
            errors,
            place,
            "institutional identification number",
            at(s, 20, 28),
        );
        account(errors, place, "payee account number", at(s, 29, 40));
        numeric(errors, place, "item trace number", at(s, 41, 62));
        numeric(errors, place, "stored transaction type", at(s, 63, 65));
        alnum(
            errors,
            place,
            "originator's short name",
            at(s, 66, 80),
            true,
        );
        alnum(errors, place, "payee name", at(s, 81, 110), true);
        alnum(
            errors,
            place,
            "originator's long name",
            at(s, 111, 140),
            true,
        );
        alnum(
            errors,
            place,
            "originating direct clearer's user's ID",
            at(s, 141, 150),
            false,
        );
        alnum(
            errors,
            place,
            "originator's cross reference",
            at(s, 151, 169),
            false,
        );
        institution(errors, place, "institution for returns", at(s, 170, 178));
        account(errors, place, "account for returns", at(s, 179, 190));
        alnum(
            errors,
            place,
            "originator's sundry information",
            at(s, 191, 205),
            false,
        );
        blank(errors, place, "filler", at(s, 206, 227));
        blank(errors, place, "settlement code", at(s, 228, 229));
        let invalid = at(s, 230, 240);
        numeric(errors, place, "invalid data element ID", invalid);
        if matches!(t, 'I' | 'J') {
            let code: u32 = invalid[..3].parse().unwrap_or(0);
            if !(900..=999).contains(&code) || &invalid[3..] != "00000000" {
                errors.push(format!(
                    "{place}: no return reason code 9xx in the invalid data element ID"
                ));
            }
        } else if invalid != "00000000000" {
            errors.push(format!("{place}: invalid data element ID is not zeros"));
        }
        if matches!(t, 'C' | 'I') {
            summary.credit_count += 1;
            summary.credit_value += amount;
        } else {
            summary.debit_count += 1;
            summary.debit_value += amount;
        }
        summary
            .items
            .push((t, at(s, 151, 169).trim_end().to_owned()));
    }
    if used == 0 {
        errors.push(format!("record {n} ({t}): no used segment"));
    }
}

fn check_trailer(r: &str, summary: &Summary, errors: &mut Vec<String>) {
    let place = "trailer (Z)";
    for (from, to, name, expected) in [
        (25, 38, "total value of debits", summary.debit_value),
        (39, 46, "total number of debits", summary.debit_count),
        (47, 60, "total value of credits", summary.credit_value),
        (61, 68, "total number of credits", summary.credit_count),
        (69, 82, "total value of E error corrections", 0),
        (83, 90, "total number of E error corrections", 0),
        (91, 104, "total value of F error corrections", 0),
        (105, 112, "total number of F error corrections", 0),
    ] {
        if let Some(found) = numeric(errors, place, name, at(r, from, to))
            && found != expected
        {
            errors.push(format!(
                "{place}: {name} is {found}, the segments give {expected}"
            ));
        }
    }
    blank(errors, place, "filler", at(r, 113, 1464));
}
