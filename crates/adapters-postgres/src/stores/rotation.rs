//! Master key rotation: re-seals (and re-fingerprints) every row still sealed by another key
//! than the vault's current one, in small batches while the service keeps serving.
//!
//! Each batch is one short transaction: it locks the next rows (by id) that do not carry the
//! current key id (`SELECT … FOR UPDATE`), opens them with the current or the previous key,
//! seals them again with the current key, and updates each row only while it still holds the
//! ciphertext it read. A row written meanwhile by a serving instance is either waited for (the
//! lock) or, once rewritten under the current key, no longer selected; nothing it wrote is
//! overwritten. The progress lives in the rows themselves, so a run killed at any point loses
//! at most its open batch, and the next run carries on. When every row is under the current
//! key, the run records it in `maintenance_markers` (`master_key_rotation`, the current key's
//! id as version), which [`PgStore::master_key_rotation`] reads.
//!
//! On Citus, where `FOR UPDATE` works only in a statement that runs on one shard, a batch of a
//! table distributed by subaccount first reads its rows' keys and subaccounts without locks,
//! then locks each row on its shard (skipping one that no longer needs it); the rest is the
//! same.

use chrono::{DateTime, Utc};
use diesel::dsl::sql;
use diesel::prelude::*;
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Integer, Nullable, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use uuid::Uuid;

use super::PgStore;
use super::account_rows::AccountRow;
use super::delivery::webhook_context;
use super::notifications::{link_context, recipient_context};
use crate::errors::{TxError, from_diesel, from_tx, unique_violation};
use crate::schema::receiver_accounts;
use crate::vault::{HEADER_LEN, KEY_ID_LEN, Vault};

/// The `maintenance_markers` row of a completed rotation.
pub const ROTATION_MARKER: &str = "master_key_rotation";

/// The associated data of a row's sealed column (row id, column index).
type Context = fn(Uuid, usize) -> Vec<u8>;

/// A table holding what the vault sealed or fingerprinted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SealedTable {
    /// API secrets.
    ApiKeys,
    /// Webhook signing secrets (current and previous).
    WebhookEndpoints,
    /// Receiver accounts: their data and fingerprints.
    ReceiverAccounts,
    /// Queued confirmation requests: recipients and links.
    Notifications,
    /// Console operators' TOTP secrets.
    Operators,
}

impl SealedTable {
    /// Every one, in the order a rotation takes them.
    pub const ALL: [SealedTable; 5] = [
        Self::ApiKeys,
        Self::WebhookEndpoints,
        Self::ReceiverAccounts,
        Self::Notifications,
        Self::Operators,
    ];

    /// Whether the table is distributed by subaccount on Citus (else a reference table).
    fn distributed(self) -> bool {
        match self {
            Self::ApiKeys | Self::Operators => false,
            Self::WebhookEndpoints | Self::ReceiverAccounts | Self::Notifications => true,
        }
    }

    /// The table's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::ApiKeys => "api_keys",
            Self::WebhookEndpoints => "webhook_endpoints",
            Self::ReceiverAccounts => "receiver_accounts",
            Self::Notifications => "notifications",
            Self::Operators => "operators",
        }
    }

    /// The row's key column and its sealed columns (each with the associated data of a row).
    fn layout(self) -> (&'static str, &'static [&'static str], Context) {
        match self {
            Self::ApiKeys => ("id", &["secret_ciphertext"], |id, _| id.as_bytes().to_vec()),
            Self::WebhookEndpoints => ("subaccount_id", &["secret", "previous_secret"], |id, _| {
                webhook_context(id)
            }),
            Self::ReceiverAccounts => ("id", &["data_ciphertext"], |id, _| {
                [b"account:".as_slice(), id.as_bytes()].concat()
            }),
            Self::Notifications => (
                "id",
                &["recipient_ciphertext", "link_ciphertext"],
                |id, column| match column {
                    0 => recipient_context(id),
                    _ => link_context(id),
                },
            ),
            Self::Operators => ("id", &["totp_secret_ciphertext"], |id, _| {
                crate::stores::console::totp_context(id)
            }),
        }
    }

    /// `true` for a row some sealed column of which (`$1` being the current header) does not
    /// name the current key.
    fn stale_condition(self) -> String {
        let (_, columns, _) = self.layout();
        columns
            .iter()
            .map(|c| format!("({c} IS NOT NULL AND substring({c} from 1 for {HEADER_LEN}) <> $1)"))
            .collect::<Vec<_>>()
            .join(" OR ")
    }
}

/// A row the rotation could not move to the current key. Names the row, never its data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RotationFailure {
    /// The table.
    pub table: &'static str,
    /// The row's id (`subaccount_id` for `webhook_endpoints`).
    pub row: Uuid,
    /// What went wrong.
    pub problem: &'static str,
}

/// What one batch did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RotationBatch {
    /// Rows re-sealed under the current key.
    pub rotated: u64,
    /// Rows that could not be.
    pub failures: Vec<RotationFailure>,
    /// The highest id the batch looked at (the next batch starts after it); `None` when there
    /// was no row left after the given one.
    pub last: Option<Uuid>,
}

/// The completed rotation recorded in the database.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RotationMarker {
    /// The id of the key every row was moved to.
    pub key_id: [u8; KEY_ID_LEN],
    /// When.
    pub done_at: DateTime<Utc>,
}

#[derive(QueryableByName)]
struct SealedRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Array<Nullable<Bytea>>)]
    sealed: Vec<Option<Vec<u8>>>,
}

/// A row a batch is to lock, on Citus: its key and the subaccount that picks its shard.
#[derive(QueryableByName)]
struct Candidate {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
}

#[derive(QueryableByName)]
struct Count {
    #[diesel(sql_type = BigInt)]
    count: i64,
}

#[derive(QueryableByName)]
struct MarkerRow {
    #[diesel(sql_type = Integer)]
    version: i32,
    #[diesel(sql_type = Timestamptz)]
    done_at: DateTime<Utc>,
}

const OPEN_FAILED: &str = "could not be opened with the current or the previous master key";

/// The next rows of a distributed table for a batch on Citus, where `FOR UPDATE` works only
/// in a statement that runs on one shard: their keys and subaccounts read without locks (`key`
/// after `after`, `stale` being the condition on `$1`, the current header), oldest key first.
/// Each is then locked on its own shard, and skipped if it no longer qualifies by then.
async fn citus_candidates(
    conn: &mut AsyncPgConnection,
    header: &[u8],
    name: &str,
    key: &str,
    stale: &str,
    after: Uuid,
    limit: i64,
) -> Result<Vec<Candidate>, diesel::result::Error> {
    diesel::sql_query(format!(
        "SELECT {key} AS id, subaccount_id FROM {name} \
         WHERE {key} > $2 AND ({stale}) ORDER BY {key} LIMIT $3"
    ))
    .bind::<Bytea, _>(header.to_vec())
    .bind::<SqlUuid, _>(after)
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
}

/// Re-seals the rows of a table with one or two plain sealed columns. `by_subaccount` (a
/// distributed table on Citus) locks them one subaccount's shard at a time
/// ([`citus_candidates`]) and names the subaccount in every update.
async fn rotate_sealed(
    conn: &mut AsyncPgConnection,
    vault: &Vault,
    table: SealedTable,
    after: Uuid,
    limit: i64,
    by_subaccount: bool,
) -> Result<RotationBatch, TxError> {
    let (key, columns, context) = table.layout();
    let name = table.name();
    let header = vault.current_header();
    let cols = columns.join(", ");
    let stale = table.stale_condition();
    // Each row with its subaccount on Citus (which routes its update), `None` otherwise.
    let (rows, last): (Vec<(SealedRow, Option<Uuid>)>, Option<Uuid>) = if by_subaccount {
        let candidates = citus_candidates(conn, &header, name, key, &stale, after, limit).await?;
        let lock = format!(
            "SELECT {key} AS id, ARRAY[{cols}]::bytea[] AS sealed FROM {name} \
             WHERE subaccount_id = $2 AND {key} = $3 AND ({stale}) FOR UPDATE"
        );
        let mut rows = Vec::with_capacity(candidates.len());
        for candidate in &candidates {
            let locked: Option<SealedRow> = diesel::sql_query(&lock)
                .bind::<Bytea, _>(header.to_vec())
                .bind::<SqlUuid, _>(candidate.subaccount_id)
                .bind::<SqlUuid, _>(candidate.id)
                .get_result(conn)
                .await
                .optional()?;
            rows.extend(locked.map(|row| (row, Some(candidate.subaccount_id))));
        }
        (rows, candidates.last().map(|c| c.id))
    } else {
        let rows: Vec<SealedRow> = diesel::sql_query(format!(
            "SELECT {key} AS id, ARRAY[{cols}]::bytea[] AS sealed FROM {name} \
             WHERE {key} > $2 AND ({stale}) ORDER BY {key} LIMIT $3 FOR UPDATE"
        ))
        .bind::<Bytea, _>(header.to_vec())
        .bind::<SqlUuid, _>(after)
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await?;
        let last = rows.last().map(|r| r.id);
        (rows.into_iter().map(|row| (row, None)).collect(), last)
    };
    let mut batch = RotationBatch {
        last,
        ..RotationBatch::default()
    };
    // The new values go in one parameter per column (`$3`, and `$4` for a second column;
    // bound but unused for a table with one): Citus crashes on a subscripted parameter
    // (`$2[1]`) in `SET`.
    if columns.len() > 2 {
        return Err(TxError::Invariant(anyhow::anyhow!(
            "{name} has more sealed columns than the rotation's update binds"
        )));
    }
    let assignments = (0..columns.len())
        .map(|i| format!("{} = ${}", columns[i], i + 3))
        .collect::<Vec<_>>()
        .join(", ");
    let update = format!(
        "UPDATE {name} SET {assignments} WHERE {key} = $1 AND ARRAY[{cols}]::bytea[] IS NOT DISTINCT FROM $2",
    );
    // On Citus the row's subaccount (the key itself for webhook_endpoints) routes the update.
    let update_on_shard = format!("{update} AND subaccount_id = $5");
    'rows: for (row, subaccount) in rows {
        let mut resealed = Vec::with_capacity(row.sealed.len());
        for (i, sealed) in row.sealed.iter().enumerate() {
            let Some(sealed) = sealed else {
                resealed.push(None);
                continue;
            };
            if vault.is_current(sealed) {
                resealed.push(Some(sealed.clone()));
                continue;
            }
            let ctx = context(row.id, i);
            let Ok(plain) = vault.open(sealed, &ctx) else {
                batch.failures.push(RotationFailure {
                    table: name,
                    row: row.id,
                    problem: OPEN_FAILED,
                });
                continue 'rows;
            };
            let again = vault.seal(&plain, &ctx).map_err(TxError::invariant)?;
            resealed.push(Some(again));
        }
        let mut new_values = resealed.into_iter();
        let (first, second) = (new_values.next().flatten(), new_values.next().flatten());
        let updated = match subaccount {
            None => {
                diesel::sql_query(&update)
                    .bind::<SqlUuid, _>(row.id)
                    .bind::<Array<Nullable<Bytea>>, _>(&row.sealed)
                    .bind::<Nullable<Bytea>, _>(first)
                    .bind::<Nullable<Bytea>, _>(second)
                    .execute(conn)
                    .await?
            }
            Some(subaccount) => {
                diesel::sql_query(&update_on_shard)
                    .bind::<SqlUuid, _>(row.id)
                    .bind::<Array<Nullable<Bytea>>, _>(&row.sealed)
                    .bind::<Nullable<Bytea>, _>(first)
                    .bind::<Nullable<Bytea>, _>(second)
                    .bind::<SqlUuid, _>(subaccount)
                    .execute(conn)
                    .await?
            }
        };
        batch.rotated += updated as u64;
    }
    Ok(batch)
}

/// Re-seals and re-fingerprints receiver accounts. `by_subaccount` (on Citus) locks them one
/// subaccount's shard at a time ([`citus_candidates`]) and names the subaccount in every update.
async fn rotate_accounts(
    conn: &mut AsyncPgConnection,
    vault: &Vault,
    after: Uuid,
    limit: i64,
    by_subaccount: bool,
) -> Result<RotationBatch, TxError> {
    use receiver_accounts as t;
    let table = SealedTable::ReceiverAccounts;
    let name = table.name();
    let header = vault.current_header();
    let stale = || {
        sql::<Bool>(&format!(
            "substring(data_ciphertext from 1 for {HEADER_LEN}) <> "
        ))
        .bind::<Bytea, _>(header.to_vec())
    };
    // Each row with its subaccount on Citus (which routes its update), `None` otherwise.
    let (rows, last): (Vec<(AccountRow, Option<Uuid>)>, Option<Uuid>) = if by_subaccount {
        let candidates = citus_candidates(
            conn,
            &header,
            name,
            "id",
            &table.stale_condition(),
            after,
            limit,
        )
        .await?;
        let mut rows = Vec::with_capacity(candidates.len());
        for candidate in &candidates {
            let locked: Option<AccountRow> = t::table
                .filter(t::subaccount_id.eq(candidate.subaccount_id))
                .filter(t::id.eq(candidate.id))
                .filter(stale())
                .for_update()
                .select(AccountRow::as_select())
                .first(conn)
                .await
                .optional()?;
            rows.extend(locked.map(|row| (row, Some(candidate.subaccount_id))));
        }
        (rows, candidates.last().map(|c| c.id))
    } else {
        let rows: Vec<AccountRow> = t::table
            .filter(t::id.gt(after))
            .filter(stale())
            .order(t::id.asc())
            .limit(limit)
            .for_update()
            .select(AccountRow::as_select())
            .load(conn)
            .await?;
        let last = rows.last().map(|r| r.id);
        (rows.into_iter().map(|row| (row, None)).collect(), last)
    };
    let mut batch = RotationBatch {
        last,
        ..RotationBatch::default()
    };
    for (row, subaccount) in rows {
        let id = row.id;
        let Some((old, new)) = row.resealed(vault) else {
            batch.failures.push(RotationFailure {
                table: name,
                row: id,
                problem: OPEN_FAILED,
            });
            continue;
        };
        // A savepoint: an account whose details another account of its receiver already holds
        // under the current key (stored before duplicates were compared across keys) fails
        // alone.
        let result = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                let unchanged = t::table
                    .filter(t::id.eq(id))
                    .filter(t::data_ciphertext.eq(&old));
                match subaccount {
                    None => {
                        diesel::update(unchanged)
                            .set(new.sealed_columns())
                            .execute(conn)
                            .await
                    }
                    Some(subaccount) => {
                        diesel::update(unchanged.filter(t::subaccount_id.eq(subaccount)))
                            .set(new.sealed_columns())
                            .execute(conn)
                            .await
                    }
                }
            })
            .await;
        match result {
            Ok(updated) => batch.rotated += updated as u64,
            Err(e) if unique_violation(&e).is_some() => batch.failures.push(RotationFailure {
                table: name,
                row: id,
                problem: "another account of the receiver has the same details",
            }),
            Err(e) => return Err(e.into()),
        }
    }
    Ok(batch)
}

impl PgStore {
    /// Re-seals, in one transaction, at most `limit` rows of `table` with ids after `after`
    /// (`Uuid::nil()` for the first batch) that are not under the current key.
    pub async fn rotate_master_key_batch(
        &self,
        table: SealedTable,
        after: Uuid,
        limit: i64,
    ) -> Result<RotationBatch, PortError> {
        let vault = &self.vault;
        // On Citus the tables distributed by subaccount are rotated subaccount by subaccount.
        let by_subaccount = table.distributed() && self.detect_citus().await?;
        let mut conn = self.conn().await?;
        conn.transaction::<_, TxError, _>(async |conn| match table {
            SealedTable::ReceiverAccounts => {
                rotate_accounts(conn, vault, after, limit, by_subaccount).await
            }
            other => rotate_sealed(conn, vault, other, after, limit, by_subaccount).await,
        })
        .await
        .map_err(from_tx)
    }

    /// How many rows of `table` are not (entirely) under the current key.
    pub async fn rows_under_other_keys(&self, table: SealedTable) -> Result<u64, PortError> {
        let mut conn = self.conn().await?;
        let counted: Count = diesel::sql_query(format!(
            "SELECT count(*) AS count FROM {} WHERE {}",
            table.name(),
            table.stale_condition()
        ))
        .bind::<Bytea, _>(self.vault.current_header().to_vec())
        .get_result(&mut conn)
        .await
        .map_err(from_diesel)?;
        Ok(u64::try_from(counted.count).unwrap_or(0))
    }

    /// Records that every row is under the current key.
    pub async fn record_master_key_rotation(&self) -> Result<(), PortError> {
        let mut conn = self.conn().await?;
        diesel::sql_query(
            "INSERT INTO maintenance_markers (name, version) VALUES ($1, $2) \
             ON CONFLICT (name) DO UPDATE SET version = excluded.version, done_at = excluded.done_at",
        )
        .bind::<diesel::sql_types::Text, _>(ROTATION_MARKER)
        .bind::<Integer, _>(i32::from_be_bytes(self.vault.current_key_id()))
        .execute(&mut conn)
        .await
        .map_err(from_diesel)?;
        Ok(())
    }

    /// The last completed rotation, if one was recorded.
    pub async fn master_key_rotation(&self) -> Result<Option<RotationMarker>, PortError> {
        let mut conn = self.conn().await?;
        let found: Option<MarkerRow> =
            diesel::sql_query("SELECT version, done_at FROM maintenance_markers WHERE name = $1")
                .bind::<diesel::sql_types::Text, _>(ROTATION_MARKER)
                .get_result(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
        Ok(found.map(|m| RotationMarker {
            key_id: m.version.to_be_bytes(),
            done_at: m.done_at,
        }))
    }

    /// Whether the recorded rotation moved every row to this vault's current key.
    pub async fn rotated_to_current_key(&self) -> Result<Option<DateTime<Utc>>, PortError> {
        Ok(self
            .master_key_rotation()
            .await?
            .filter(|m| m.key_id == self.vault.current_key_id())
            .map(|m| m.done_at))
    }
}

/// What a rotation did to one table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRotation {
    /// The table.
    pub table: &'static str,
    /// Rows re-sealed under the current key by this run.
    pub rotated: u64,
    /// Rows still not under the current key afterwards.
    pub remaining: u64,
}

/// What a whole rotation did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RotationSummary {
    /// Per table, in [`SealedTable::ALL`] order.
    pub tables: Vec<TableRotation>,
    /// Rows that could not be moved.
    pub failures: Vec<RotationFailure>,
}

impl RotationSummary {
    /// Rows still not under the current key.
    pub fn remaining(&self) -> u64 {
        self.tables.iter().map(|t| t.remaining).sum()
    }

    /// Whether every row is under the current key.
    pub fn complete(&self) -> bool {
        self.failures.is_empty() && self.remaining() == 0
    }
}

/// How many passes over a table a rotation makes at most: a pass after one that moved rows
/// picks up rows instances still running with the old key wrote meanwhile.
const MAX_PASSES: usize = 5;

impl PgStore {
    /// Moves every row to the current key, `batch` rows per transaction with `pause` between
    /// transactions, telling `progress` about each batch; records the completion when nothing
    /// is left. Safe to run again after it stopped anywhere, and beside serving instances.
    pub async fn rotate_master_key(
        &self,
        batch: i64,
        pause: std::time::Duration,
        mut progress: impl FnMut(SealedTable, &RotationBatch),
    ) -> Result<RotationSummary, PortError> {
        let mut summary = RotationSummary::default();
        for table in SealedTable::ALL {
            let mut rotated = 0;
            let mut failures = Vec::new();
            for _ in 0..MAX_PASSES {
                let mut after = Uuid::nil();
                let mut moved = 0;
                failures.clear();
                loop {
                    let done = self.rotate_master_key_batch(table, after, batch).await?;
                    progress(table, &done);
                    moved += done.rotated;
                    failures.extend(done.failures);
                    let Some(last) = done.last else { break };
                    after = last;
                    if !pause.is_zero() {
                        tokio::time::sleep(pause).await;
                    }
                }
                rotated += moved;
                if moved == 0 {
                    break;
                }
            }
            summary.tables.push(TableRotation {
                table: table.name(),
                rotated,
                remaining: self.rows_under_other_keys(table).await?,
            });
            summary.failures.extend(failures);
        }
        if summary.complete() {
            self.record_master_key_rotation().await?;
        }
        Ok(summary)
    }
}
