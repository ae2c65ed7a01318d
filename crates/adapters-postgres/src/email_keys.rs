//! Recomputes the e-mail comparison key (`receivers.email_normalized`) of stored receivers with
//! the application's [`normalize_email`], once per version of the key: `payoutd migrate` does
//! it when the database's `maintenance_markers` row `email_key` is older than
//! [`EMAIL_KEY_VERSION`], and records the version in the same transaction.
//!
//! The key is NFKC, full Unicode case folding, RFC 5321 unquoting and the IDNA ASCII domain.
//! SQL cannot compute it: PostgreSQL's `normalize(text, NFKC)` exists, but `lower()` is not case
//! folding (`ß` stays `ß`, and under the C collation it folds ASCII only), and there is no IDNA.
//! A SQL-only migration would leave keys that new receivers' keys never meet, so the
//! recomputation runs in Rust after the SQL migrations, and is idempotent (rows whose key is
//! already current are not touched).
//!
//! Existing duplicates never make it fail: a receiver never takes a key another receiver of its
//! subaccount holds. When two stored receivers now share a key, the one already holding it keeps
//! it (otherwise the earliest created takes it) and the others **keep their old key** and are
//! reported by id, for an operator to merge or close. Their old key still refuses new receivers
//! with their exact old spelling; the reported receivers are the only gap.

use diesel::prelude::*;
use diesel::sql_types::{Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::receiver::values::normalize_email;
use std::collections::HashMap;
use uuid::Uuid;

use crate::schema::receivers;

/// The version of [`normalize_email`]'s key; raise it when the key changes.
pub const EMAIL_KEY_VERSION: i32 = 1;

/// What a recomputation of e-mail keys did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EmailRekey {
    /// Receivers whose key was rewritten.
    pub updated: usize,
    /// Receivers left with their old key because another receiver of the subaccount holds
    /// their new one (stored duplicates), oldest first.
    pub kept_old_key: Vec<Uuid>,
}

#[derive(QueryableByName)]
struct MarkerRow {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    version: i32,
}

#[derive(QueryableByName)]
struct KeyRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Text)]
    email: String,
    #[diesel(sql_type = Text)]
    email_normalized: String,
}

/// Brings every receiver's `email_normalized` to [`normalize_email`] of its `email`, in one
/// transaction that blocks concurrent receiver writes, without ever breaking the unique index
/// `(subaccount_id, email_normalized)`.
pub async fn rekey_receiver_emails(
    conn: &mut AsyncPgConnection,
) -> Result<EmailRekey, diesel::result::Error> {
    conn.transaction::<_, diesel::result::Error, _>(async |conn| {
        // One migrate at a time decides; the others wait here and then find the marker.
        diesel::sql_query("LOCK TABLE maintenance_markers IN SHARE ROW EXCLUSIVE MODE")
            .execute(conn)
            .await?;
        let done: Vec<MarkerRow> =
            diesel::sql_query("SELECT version FROM maintenance_markers WHERE name = 'email_key'")
                .load(conn)
                .await?;
        if done.iter().any(|m| m.version >= EMAIL_KEY_VERSION) {
            return Ok(EmailRekey::default());
        }
        // Inserts wait while keys move, so none can take a key this pass is handing out.
        diesel::sql_query("LOCK TABLE receivers IN SHARE ROW EXCLUSIVE MODE")
            .execute(conn)
            .await?;
        let rows: Vec<KeyRow> = diesel::sql_query(
            "SELECT id, subaccount_id, email, email_normalized FROM receivers \
             ORDER BY created_at, id",
        )
        .load(conn)
        .await?;
        let (moves, kept_old_key) = plan(rows);
        for (id, key) in &moves {
            diesel::update(receivers::table.filter(receivers::id.eq(id)))
                .set(receivers::email_normalized.eq(key))
                .execute(conn)
                .await?;
        }
        diesel::sql_query(
            "INSERT INTO maintenance_markers (name, version) VALUES ('email_key', $1) \
             ON CONFLICT (name) DO UPDATE SET version = excluded.version, done_at = excluded.done_at",
        )
        .bind::<diesel::sql_types::Integer, _>(EMAIL_KEY_VERSION)
        .execute(conn)
        .await?;
        Ok(EmailRekey {
            updated: moves.len(),
            kept_old_key,
        })
    })
    .await
}

/// The key changes to make, in an order the unique index accepts at every step, and the
/// receivers that keep their old key. `rows` are in creation order.
fn plan(rows: Vec<KeyRow>) -> (Vec<(Uuid, String)>, Vec<Uuid>) {
    // Who holds each key now.
    let mut holder: HashMap<(Uuid, String), Uuid> = rows
        .iter()
        .map(|row| ((row.subaccount_id, row.email_normalized.clone()), row.id))
        .collect();
    let mut pending: Vec<(KeyRow, String)> = rows
        .into_iter()
        .filter_map(|row| {
            let key = normalize_email(&row.email);
            (key != row.email_normalized).then_some((row, key))
        })
        .collect();
    let mut moves = Vec::new();
    // A move can free the key an earlier receiver wants, so repeat until a pass moves nothing.
    loop {
        let mut waiting = Vec::new();
        let before = moves.len();
        for (row, key) in pending {
            let wanted = (row.subaccount_id, key);
            if holder.contains_key(&wanted) {
                waiting.push((row, wanted.1));
                continue;
            }
            holder.remove(&(row.subaccount_id, row.email_normalized.clone()));
            holder.insert(wanted.clone(), row.id);
            moves.push((row.id, wanted.1));
        }
        pending = waiting;
        if moves.len() == before {
            break;
        }
    }
    (moves, pending.into_iter().map(|(row, _)| row.id).collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn row(n: u128, sub: u128, email: &str, key: &str) -> KeyRow {
        KeyRow {
            id: Uuid::from_u128(n),
            subaccount_id: Uuid::from_u128(sub),
            email: email.to_owned(),
            email_normalized: key.to_owned(),
        }
    }

    #[test]
    fn current_keys_are_left_alone() {
        let (moves, kept) = plan(vec![row(1, 9, "Jose@Example.com", "jose@example.com")]);
        assert!(moves.is_empty());
        assert!(kept.is_empty());
    }

    #[test]
    fn old_keys_are_recomputed() {
        let (moves, kept) = plan(vec![
            row(
                1,
                9,
                "ＳＴＲＡＳＳＥ@example.com",
                "ｓｔｒａｓｓｅ@example.com",
            ),
            row(2, 9, "jose@exämple.com", "jose@exämple.com"),
        ]);
        assert_eq!(
            moves,
            vec![
                (Uuid::from_u128(1), "strasse@example.com".to_owned()),
                (Uuid::from_u128(2), "jose@xn--exmple-cua.com".to_owned()),
            ]
        );
        assert!(kept.is_empty());
    }

    #[test]
    fn stored_duplicates_keep_their_old_key_and_are_reported() {
        let (moves, kept) = plan(vec![
            row(1, 9, "ｊｏｓｅ@example.com", "ｊｏｓｅ@example.com"),
            row(2, 9, "straße@example.com", "straße@example.com"),
            row(3, 9, "jose@example.com", "jose@example.com"),
            row(4, 9, "STRASSE@example.com", "strasse@example.com"),
            row(5, 9, "\"jose\"@example.com", "\"jose\"@example.com"),
            // Another subaccount may hold the same key.
            row(6, 8, "ＪＯＳＥ@example.com", "ｊｏｓｅ@example.com"),
        ]);
        assert_eq!(
            moves,
            vec![(Uuid::from_u128(6), "jose@example.com".to_owned())]
        );
        assert_eq!(
            kept,
            vec![Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(5)]
        );
    }

    #[test]
    fn a_freed_key_goes_to_the_receiver_that_waited_for_it() {
        // Receiver 1 wants the key receiver 2 holds; receiver 2 moves away from it first.
        let (moves, kept) = plan(vec![
            row(1, 9, "Ｘ@example.com", "old-1"),
            row(2, 9, "y@example.com", "x@example.com"),
        ]);
        assert_eq!(
            moves,
            vec![
                (Uuid::from_u128(2), "y@example.com".to_owned()),
                (Uuid::from_u128(1), "x@example.com".to_owned()),
            ]
        );
        assert!(kept.is_empty());
    }
}
