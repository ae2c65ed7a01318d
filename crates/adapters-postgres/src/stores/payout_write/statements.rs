//! Every statement of the write path, each from its `.sql` file in `sql/`, whose header of `--`
//! lines names and documents its parameters (`$1 = …`); [`params`](super::params) binds the
//! set statements' in that order. The header is left out of the text sent ([`statement`]), so
//! the server sees, and `pg_prepared_statements` and `pg_stat_activity` show, the statement
//! itself. (The planning read of several requests, `planning_reads`, is the one statement
//! whose text depends on its number of requests; diesel builds it, with bound parameters.)

/// The statement of a `.sql` file: its text after the leading `--` lines and blank lines.
const fn statement(file: &'static str) -> &'static str {
    let bytes = file.as_bytes();
    let mut start = 0;
    while start < bytes.len() {
        if bytes[start] == b'\n' {
            start += 1;
        } else if bytes[start] == b'-' && start + 1 < bytes.len() && bytes[start + 1] == b'-' {
            while start < bytes.len() && bytes[start] != b'\n' {
                start += 1;
            }
        } else {
            break;
        }
    }
    let (_, rest) = bytes.split_at(start);
    // A line starts after an ASCII newline, so the rest is UTF-8 whenever the file is.
    match std::str::from_utf8(rest) {
        Ok(rest) => rest,
        Err(_) => file,
    }
}

/// How a set transaction begins on plain PostgreSQL (a simple query). (`sql/begin_with_generic_plans.sql`)
pub(crate) const BEGIN_WITH_GENERIC_PLANS: &str =
    statement(include_str!("sql/begin_with_generic_plans.sql"));

/// The accounts a set of payout failures fails. (`sql/fail_accounts.sql`)
pub(crate) const FAIL_ACCOUNTS: &str = statement(include_str!("sql/fail_accounts.sql"));

/// The parties of a set locked, on Citus. (`sql/parties.sql`)
pub(crate) const PARTIES: &str = statement(include_str!("sql/parties.sql"));

/// The parties of a set locked, on plain PostgreSQL. (`sql/parties_by_key.sql`)
pub(crate) const PARTIES_BY_KEY: &str = statement(include_str!("sql/parties_by_key.sql"));

/// The parties of a set locked with its currency's open batch (three round trips' first). (`sql/parties_and_open_batch.sql`)
pub(crate) const PARTIES_AND_OPEN_BATCH: &str =
    statement(include_str!("sql/parties_and_open_batch.sql"));

/// Which references of a set are taken, on Citus. (`sql/taken_references.sql`)
pub(crate) const TAKEN_REFERENCES: &str = statement(include_str!("sql/taken_references.sql"));

/// Which references of a set are taken, on plain PostgreSQL. (`sql/taken_references_by_key.sql`)
pub(crate) const TAKEN_REFERENCES_BY_KEY: &str =
    statement(include_str!("sql/taken_references_by_key.sql"));

/// A set's writes in one statement, answering counts. (`sql/write_set.sql`)
pub(crate) const WRITE_SET: &str = statement(include_str!("sql/write_set.sql"));

/// A set's reads, checks and writes in one statement, raising on a refusal. (`sql/write_set_at_once.sql`)
pub(crate) const WRITE_SET_AT_ONCE: &str = statement(include_str!("sql/write_set_at_once.sql"));

/// New payout rows (Citus). (`sql/insert_payouts.sql`)
pub(crate) const INSERT_PAYOUTS: &str = statement(include_str!("sql/insert_payouts.sql"));

/// Keys marked committed (Citus). (`sql/mark_keys_committed.sql`)
pub(crate) const MARK_KEYS_COMMITTED: &str = statement(include_str!("sql/mark_keys_committed.sql"));

/// Each currency's sum held (Citus). (`sql/hold_sums.sql`)
pub(crate) const HOLD_SUMS: &str = statement(include_str!("sql/hold_sums.sql"));

/// Ledger entries appended. (`sql/insert_entries.sql`)
pub(crate) const INSERT_ENTRIES: &str = statement(include_str!("sql/insert_entries.sql"));

/// The open batch of a subaccount and currency, locked. (`sql/open_batch.sql`)
pub(crate) const OPEN_BATCH: &str = statement(include_str!("sql/open_batch.sql"));

/// A set of payout transitions, each conditional on the status it expects. (`sql/apply_changes.sql`)
pub(crate) const APPLY_CHANGES: &str = statement(include_str!("sql/apply_changes.sql"));

/// The duplicate check of a planning read of several payouts. (`sql/paid_since.sql`)
pub(crate) const PAID_SINCE: &str = statement(include_str!("sql/paid_since.sql"));

/// The duplicate check of one payout's planning read. (`sql/paid_since_one.sql`)
pub(crate) const PAID_SINCE_ONE: &str = statement(include_str!("sql/paid_since_one.sql"));

/// Test only: `WRITE_SET_AT_ONCE`'s check of a payout's parties, alone (`sql/as_planned_check.sql`).
#[cfg(test)]
pub(crate) const AS_PLANNED_CHECK: &str = statement(include_str!("sql/as_planned_check.sql"));

#[cfg(test)]
mod tests {
    use super::statement;

    #[test]
    fn the_header_is_left_out_of_the_statement() {
        assert_eq!(
            statement("-- $1 = a\n--\n\n-- b\nSELECT $1\n-- c\n"),
            "SELECT $1\n-- c\n"
        );
        assert_eq!(statement("SELECT 1"), "SELECT 1");
        assert_eq!(statement("-- only"), "");
        assert!(super::WRITE_SET.starts_with("WITH written_payouts AS (INSERT INTO payouts"));
        assert!(super::BEGIN_WITH_GENERIC_PLANS.starts_with("BEGIN; "));
    }
}
