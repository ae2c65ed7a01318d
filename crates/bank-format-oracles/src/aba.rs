//! A checker of ABA direct entry files written from the published layout (the ABA / Cemtex
//! direct entry file as the Australian banks' guides lay it out, and NAB's direct entry returns
//! file for the return records): it reads raw bytes and checks record lengths, line endings,
//! record types and order, every field's position, type, justification and padding, the
//! characters of text fields, dates, and the file total record's totals and count. (The ABA
//! layout has no hash total.)

/// Which detail records the file may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// An originated file: detail records of type 1.
    Originated,
    /// A return file: detail records of type 2.
    Returns,
}

/// Characters the published guides accept in alphanumeric fields: letters, digits, the
/// space and these symbols.
const TEXT_SYMBOLS: &str = "&'()*+,-./:;?@";

/// Checks `bytes` as an ABA file of `kind`; the first violation, with its line and
/// positions (from 1).
pub fn check(bytes: &[u8], kind: Kind) -> Result<(), String> {
    if bytes.is_empty() {
        return Err("empty file".into());
    }
    if !bytes.ends_with(b"\r\n") {
        return Err("the last record is not ended by CR LF".into());
    }
    let body = &bytes[..bytes.len() - 2];
    let records: Vec<&[u8]> = body.split(|b| *b == b'\n').collect();
    let mut lines = Vec::new();
    for (i, raw) in records.iter().enumerate() {
        let line = i + 1;
        // Every record but the last still carries its CR.
        let record = if i + 1 < records.len() {
            raw.strip_suffix(b"\r")
                .ok_or_else(|| format!("line {line}: not ended by CR LF"))?
        } else {
            raw
        };
        if let Some(p) = record.iter().position(|b| !(0x20..=0x7e).contains(b)) {
            return Err(format!(
                "line {line}: byte at position {} is not printable ASCII",
                p + 1
            ));
        }
        if record.len() != 120 {
            return Err(format!("line {line}: {} characters, not 120", record.len()));
        }
        // Printable ASCII only (checked above), so always UTF-8.
        let text = std::str::from_utf8(record).map_err(|_| format!("line {line}: not ASCII"))?;
        lines.push(text);
    }
    if lines.len() < 3 {
        return Err(format!(
            "{} records: a file needs a descriptive record, a detail record and a total record",
            lines.len()
        ));
    }
    let last = lines.len();
    let mut credit: u64 = 0;
    let mut debit: u64 = 0;
    let mut count: u64 = 0;
    let mut user_id = "";
    for (i, record) in lines.iter().enumerate() {
        let line = i + 1;
        let r = Record { line, text: record };
        let record_type = &record[..1];
        match (line, record_type) {
            (1, "0") => {
                user_id = &record[56..62];
                descriptive(&r)?;
            }
            (1, other) => return Err(format!("line 1: record type {other:?}, expected 0")),
            (l, "7") if l == last => total(&r, credit, debit, count)?,
            (l, other) if l == last => {
                return Err(format!(
                    "line {l}: record type {other:?}, expected 7 (the last record)"
                ));
            }
            (l, "1") if kind == Kind::Originated => {
                let (code, amount) = detail(&r, kind, user_id)?;
                tally(l, code, amount, &mut credit, &mut debit)?;
                count += 1;
            }
            (l, "2") if kind == Kind::Returns => {
                let (code, amount) = detail(&r, kind, user_id)?;
                tally(l, code, amount, &mut credit, &mut debit)?;
                count += 1;
            }
            (l, other) => {
                return Err(format!(
                    "line {l}: record type {other:?} where a {kind:?} detail record belongs"
                ));
            }
        }
    }
    Ok(())
}

struct Record<'a> {
    line: usize,
    text: &'a str,
}

impl Record<'_> {
    /// Positions `from..=to`, from 1.
    fn at(&self, from: usize, to: usize) -> &str {
        &self.text[from - 1..to]
    }

    fn fail(&self, from: usize, to: usize, what: &str) -> String {
        format!("line {}, positions {from}-{to}: {what}", self.line)
    }

    fn blank(&self, from: usize, to: usize) -> Result<(), String> {
        if self.at(from, to).bytes().all(|b| b == b' ') {
            Ok(())
        } else {
            Err(self.fail(from, to, "must be blank"))
        }
    }

    fn literal(&self, from: usize, to: usize, value: &str) -> Result<(), String> {
        if self.at(from, to) == value {
            Ok(())
        } else {
            Err(self.fail(from, to, &format!("must be {value:?}")))
        }
    }

    /// Numeric: digits only (right-justified, zero-filled).
    fn numeric(&self, from: usize, to: usize) -> Result<u64, String> {
        let value = self.at(from, to);
        match value.parse() {
            Ok(number) if value.bytes().all(|b| b.is_ascii_digit()) => Ok(number),
            _ => Err(self.fail(from, to, "must be digits, zero-filled")),
        }
    }

    /// Alphanumeric, left-justified, blank-filled, not blank, of the accepted characters.
    fn text(&self, from: usize, to: usize) -> Result<(), String> {
        let value = self.at(from, to);
        if value.starts_with(' ') {
            return Err(self.fail(from, to, "must be left-justified and not blank"));
        }
        if let Some(c) = value
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == ' ' || TEXT_SYMBOLS.contains(*c)))
        {
            return Err(self.fail(from, to, &format!("{c:?} is not an accepted character")));
        }
        Ok(())
    }

    /// A BSB written `xxx-xxx`.
    fn bsb(&self, from: usize) -> Result<(), String> {
        let value = self.at(from, from + 6).as_bytes();
        let ok = value.iter().enumerate().all(|(i, b)| {
            if i == 3 {
                *b == b'-'
            } else {
                b.is_ascii_digit()
            }
        });
        if ok {
            Ok(())
        } else {
            Err(self.fail(from, from + 6, "must be a BSB xxx-xxx"))
        }
    }

    /// An account number: right-justified, blank-filled, digits or hyphens, not blank.
    fn account(&self, from: usize) -> Result<(), String> {
        let value = self.at(from, from + 8);
        let digits = value.trim_start_matches(' ');
        if digits.is_empty()
            || !digits.bytes().all(|b| b.is_ascii_digit() || b == b'-')
            || !digits.bytes().any(|b| b.is_ascii_digit())
        {
            return Err(self.fail(
                from,
                from + 8,
                "must be digits or hyphens, right-justified and blank-filled",
            ));
        }
        Ok(())
    }
}

fn descriptive(r: &Record<'_>) -> Result<(), String> {
    r.blank(2, 18)?;
    if !(1..=99).contains(&r.numeric(19, 20)?) {
        return Err(r.fail(19, 20, "reel sequence must be 01-99"));
    }
    if !r.at(21, 23).bytes().all(|b| b.is_ascii_uppercase()) {
        return Err(r.fail(21, 23, "must be a bank mnemonic of three letters"));
    }
    r.blank(24, 30)?;
    r.text(31, 56)?;
    r.numeric(57, 62)?;
    r.text(63, 74)?;
    let date = r.at(75, 80);
    let valid = date.bytes().all(|b| b.is_ascii_digit())
        && chrono::NaiveDate::parse_from_str(
            &format!("{}20{}", &date[0..4], &date[4..6]),
            "%d%m%Y",
        )
        .is_ok();
    if !valid {
        return Err(r.fail(75, 80, "must be a date DDMMYY"));
    }
    r.blank(81, 120)
}

/// Checks a detail record; its transaction code and amount.
fn detail(r: &Record<'_>, kind: Kind, user_id: &str) -> Result<(u64, u64), String> {
    r.bsb(2)?;
    r.account(9)?;
    let position_18 = r.at(18, 18);
    match kind {
        Kind::Originated if !" NWXY".contains(position_18) => {
            return Err(r.fail(18, 18, "indicator must be blank, N, W, X or Y"));
        }
        Kind::Returns if !"12345689".contains(position_18) || position_18 == " " => {
            return Err(r.fail(18, 18, "must be a return code 1-6, 8 or 9"));
        }
        _ => {}
    }
    let code = r.numeric(19, 20)?;
    if !(code == 13 || (50..=57).contains(&code)) {
        return Err(r.fail(19, 20, "must be transaction code 13 or 50-57"));
    }
    let amount = r.numeric(21, 30)?;
    if amount == 0 {
        return Err(r.fail(21, 30, "amount must not be zero"));
    }
    r.text(31, 62)?;
    r.text(63, 80)?;
    r.bsb(81)?;
    r.account(88)?;
    r.text(97, 112)?;
    match kind {
        Kind::Originated => {
            r.numeric(113, 120)?;
        }
        Kind::Returns => {
            if !(1..=31).contains(&r.numeric(113, 114)?) {
                return Err(r.fail(113, 114, "original day of processing must be 01-31"));
            }
            r.literal(115, 120, user_id)?;
        }
    }
    Ok((code, amount))
}

fn tally(
    line: usize,
    code: u64,
    amount: u64,
    credit: &mut u64,
    debit: &mut u64,
) -> Result<(), String> {
    let sum = if code == 13 { debit } else { credit };
    *sum = sum
        .checked_add(amount)
        .ok_or_else(|| format!("line {line}: totals overflow"))?;
    Ok(())
}

fn total(r: &Record<'_>, credit: u64, debit: u64, count: u64) -> Result<(), String> {
    r.literal(2, 8, "999-999")?;
    r.blank(9, 20)?;
    let expect = |from, to, value: u64, name: &str| -> Result<(), String> {
        let found = r.numeric(from, to)?;
        if found == value {
            Ok(())
        } else {
            Err(r.fail(
                from,
                to,
                &format!("{name} is {found}, the detail records give {value}"),
            ))
        }
    };
    expect(21, 30, credit.abs_diff(debit), "net total")?;
    expect(31, 40, credit, "credit total")?;
    expect(41, 50, debit, "debit total")?;
    r.blank(51, 74)?;
    expect(75, 80, count, "record count")?;
    r.blank(81, 120)
}
