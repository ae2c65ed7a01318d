//! A checker of IB4B direct credit files (BNZ's "Internet Banking for Business" direct credit
//! import layout) and payoutd's dishonour files, written from the published layout: it reads
//! raw bytes and checks the records, their fields, the control record's totals and the hash
//! total.

/// What a file passed as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    DirectCredit,
    Dishonour,
}

const ALPHA_SYMBOLS: &[u8] = b"-'&/#?:_. ";

fn alpha(line: usize, name: &str, value: &str, max: usize, required: bool) -> Result<(), String> {
    if value.len() > max {
        return Err(format!("line {line}: {name} longer than {max}"));
    }
    if required && value.trim().is_empty() {
        return Err(format!("line {line}: {name} is required"));
    }
    if let Some(b) = value
        .bytes()
        .find(|b| !b.is_ascii_alphanumeric() && !ALPHA_SYMBOLS.contains(b))
    {
        return Err(format!("line {line}: {name} holds byte {b:#04x}"));
    }
    Ok(())
}

fn numeric(line: usize, name: &str, value: &str, min: usize, max: usize) -> Result<u128, String> {
    if value.len() < min || value.len() > max || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("line {line}: {name} must be {min} to {max} digits"));
    }
    value
        .parse()
        .map_err(|_| format!("line {line}: {name} is not a number"))
}

fn constant(line: usize, name: &str, value: &str, expected: &str) -> Result<(), String> {
    if value == expected {
        Ok(())
    } else {
        Err(format!("line {line}: {name} must be {expected:?}"))
    }
}

fn date(line: usize, name: &str, value: &str) -> Result<(), String> {
    numeric(line, name, value, 6, 6)?;
    let n = |i: usize| u32::from(value.as_bytes()[i] - b'0');
    let (yy, mm, dd) = (n(0) * 10 + n(1), n(2) * 10 + n(3), n(4) * 10 + n(5));
    let leap = yy % 4 == 0; // 2000-2099: every fourth year, 2000 included.
    let days = match mm {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return Err(format!("line {line}: {name} has month {mm}")),
    };
    if dd == 0 || dd > days {
        return Err(format!("line {line}: {name} has day {dd}"));
    }
    Ok(())
}

/// Branch (4) and base (7) of a 16-digit account as one number.
fn hash_part(account: &str) -> u128 {
    account[2..13].parse().unwrap_or(0)
}

/// Checks every byte, record and field; `Ok` with the file's kind.
pub fn check(bytes: &[u8]) -> Result<Kind, String> {
    if bytes.is_empty() {
        return Err("empty file".into());
    }
    if !bytes.ends_with(b"\r\n") {
        return Err("the last record does not end with CRLF".into());
    }
    for (i, &b) in bytes.iter().enumerate() {
        let ok = match b {
            b' '..=b'~' => true,
            b'\r' => bytes.get(i + 1) == Some(&b'\n'),
            b'\n' => i > 0 && bytes[i - 1] == b'\r',
            _ => false,
        };
        if !ok {
            return Err(format!(
                "byte {i} ({b:#04x}) is not printable ASCII or CRLF"
            ));
        }
    }
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let lines: Vec<&str> = text[..text.len() - 2].split("\r\n").collect();
    let records: Vec<Vec<&str>> = lines.iter().map(|l| l.split(',').collect()).collect();
    let header = &records[0];
    if header[0] != "1" {
        return Err("line 1: the first record is not a header".into());
    }
    let dishonour = header.get(1) == Some(&"DISHONOUR");
    let (detail_fields, min_details) = if dishonour {
        if header.len() != 5 {
            return Err(format!("line 1: header has {} fields, not 5", header.len()));
        }
        numeric(1, "originating account", header[2], 16, 16)?;
        date(1, "due date", header[3])?;
        date(1, "report date", header[4])?;
        (9, 0)
    } else {
        if header.len() != 9 {
            return Err(format!("line 1: header has {} fields, not 9", header.len()));
        }
        constant(1, "auth code", header[1], "")?;
        constant(1, "spare 3", header[2], "")?;
        constant(1, "spare 4", header[3], "")?;
        numeric(1, "originating account", header[4], 16, 16)?;
        constant(1, "batch type", header[5], "7")?;
        date(1, "due date", header[6])?;
        date(1, "creation date", header[7])?;
        constant(1, "indicator", header[8], "")?;
        (13, 1)
    };
    let mut total: u128 = 0;
    let mut count: u128 = 0;
    let mut hash: u128 = 0;
    let mut index = 1;
    while index < records.len() && records[index][0] == "2" {
        let line = index + 1;
        let r = &records[index];
        if r.len() != detail_fields {
            return Err(format!(
                "line {line}: {} fields, not {detail_fields}",
                r.len()
            ));
        }
        numeric(line, "account", r[1], 16, 16)?;
        constant(line, "transaction code", r[2], "50")?;
        let amount = numeric(line, "amount", r[3], 1, 10)?;
        if amount == 0 {
            return Err(format!("line {line}: amount is zero"));
        }
        alpha(line, "other party name", r[4], 20, true)?;
        if dishonour {
            alpha(line, "your code", r[5], 12, false)?;
            alpha(line, "your reference", r[6], 12, true)?;
            let code = numeric(line, "reason code", r[7], 2, 2)?;
            if !(1..=9).contains(&code) {
                return Err(format!("line {line}: reason code {code} is unknown"));
            }
            alpha(line, "reason text", r[8], 40, true)?;
        } else {
            alpha(line, "other party reference", r[5], 12, false)?;
            alpha(line, "other party code", r[6], 12, false)?;
            alpha(line, "other party alpha reference", r[7], 12, false)?;
            alpha(line, "other party particulars", r[8], 12, false)?;
            alpha(line, "your name", r[9], 20, true)?;
            alpha(line, "your code", r[10], 12, false)?;
            alpha(line, "your reference", r[11], 12, false)?;
            alpha(line, "your particulars", r[12], 12, false)?;
        }
        total += amount;
        count += 1;
        hash += hash_part(r[1]);
        index += 1;
    }
    if count < min_details {
        return Err("no transaction record".into());
    }
    let line = index + 1;
    let Some(control) = records.get(index) else {
        return Err("no control record".into());
    };
    if control[0] != "3" {
        return Err(format!(
            "line {line}: record type {:?} out of place",
            control[0]
        ));
    }
    if control.len() != 4 {
        return Err(format!(
            "line {line}: control has {} fields, not 4",
            control.len()
        ));
    }
    if numeric(line, "total amount", control[1], 1, 11)? != total {
        return Err(format!("line {line}: total amount is not {total}"));
    }
    if numeric(line, "count", control[2], 1, 6)? != count {
        return Err(format!("line {line}: count is not {count}"));
    }
    let expected_hash = hash % 100_000_000_000;
    if numeric(line, "hash total", control[3], 11, 11)? != expected_hash {
        return Err(format!(
            "line {line}: hash total is not {expected_hash:011}"
        ));
    }
    if records.len() > index + 1 {
        return Err(format!(
            "line {}: a record after the control record",
            line + 1
        ));
    }
    Ok(if dishonour {
        Kind::Dishonour
    } else {
        Kind::DirectCredit
    })
}
