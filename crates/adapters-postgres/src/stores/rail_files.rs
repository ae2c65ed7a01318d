//! `RailFileStore` on PostgreSQL: bank files with their items, stored before they are sent.

use async_trait::async_trait;
use chrono::{DateTime, NaiveDate, Utc};
use diesel::prelude::*;
use diesel::sql_types::{Array, Integer, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::account::PayoutMethod;
use domain::batch::BatchStatus;
use domain::ids::{BatchId, PayoutId, RailFileId, SubaccountId};
use domain::payout::{Payout, PayoutStatus};
use domain::payout_story::FiledPayment;
use domain::rail::file::{RailFile, RailFileItem, RailFileState};
use domain::rail::ports::{AnsweredPayout, RailFileStore, RailFileSummary};
use uuid::Uuid;

use super::PgStore;
use crate::cached::CachedExt;
use crate::errors::from_diesel;
use crate::rows::PayoutRow;
use crate::schema::{batches, payouts, rail_file_items, rail_file_numbers, rail_files};

/// The day that stands for "over all time" in `rail_file_numbers`: 0001-01-01.
const ALL_TIME: NaiveDate = match NaiveDate::from_ymd_opt(1, 1, 1) {
    Some(day) => day,
    None => NaiveDate::MIN,
};

/// A `rail_files` row without its bytes.
#[derive(Debug, Queryable, Selectable)]
#[diesel(table_name = rail_files, check_for_backend(diesel::pg::Pg))]
struct FileHead {
    id: Uuid,
    subaccount_id: Uuid,
    batch_id: Uuid,
    method: String,
    part: i32,
    name: String,
    sha256: Vec<u8>,
    state: String,
    effective_date: NaiveDate,
    reason: Option<String>,
    created_at: DateTime<Utc>,
    uploaded_at: Option<DateTime<Utc>>,
    answered_at: Option<DateTime<Utc>>,
}

impl FileHead {
    fn method(&self) -> Result<PayoutMethod, PortError> {
        PayoutMethod::from_route(&self.method).ok_or_else(|| {
            PortError::unknown(format!("rail file {} has method {}", self.id, self.method))
        })
    }

    fn state(&self) -> Result<RailFileState, PortError> {
        RailFileState::parse(&self.state).ok_or_else(|| {
            PortError::unknown(format!("rail file {} has state {}", self.id, self.state))
        })
    }

    fn part(&self) -> Result<u32, PortError> {
        u32::try_from(self.part)
            .ok()
            .filter(|part| *part >= 1)
            .ok_or_else(|| {
                PortError::unknown(format!("rail file {} has part {}", self.id, self.part))
            })
    }

    fn sha256(&self) -> Result<[u8; 32], PortError> {
        <[u8; 32]>::try_from(self.sha256.as_slice())
            .map_err(|_| PortError::unknown(format!("rail file {} has a bad digest", self.id)))
    }

    fn into_file(self, bytes: Vec<u8>, items: Vec<RailFileItem>) -> Result<RailFile, PortError> {
        Ok(RailFile {
            id: RailFileId::from_uuid(self.id),
            batch_id: BatchId::from_uuid(self.batch_id),
            subaccount_id: SubaccountId::from_uuid(self.subaccount_id),
            method: self.method()?,
            part: self.part()?,
            sha256: self.sha256()?,
            state: self.state()?,
            name: self.name,
            bytes,
            effective_date: self.effective_date,
            items,
            reason: self.reason,
            created_at: self.created_at,
            uploaded_at: self.uploaded_at,
            answered_at: self.answered_at,
        })
    }
}

/// A file's summary from its head, its size and its number of payouts.
fn summary(head: FileHead, size: i64, payouts: i32) -> Result<RailFileSummary, PortError> {
    Ok(RailFileSummary {
        id: RailFileId::from_uuid(head.id),
        batch_id: BatchId::from_uuid(head.batch_id),
        method: head.method()?,
        part: head.part()?,
        sha256: head.sha256()?,
        state: head.state()?,
        size: u64::try_from(size).unwrap_or(0),
        payouts: u32::try_from(payouts).unwrap_or(0),
        name: head.name,
        effective_date: head.effective_date,
        created_at: head.created_at,
    })
}

/// `octet_length(bytes)` and the number of items of the selected `rail_files` row.
const SIZE_SQL: &str = "octet_length(rail_files.bytes)::int8";
const PAYOUTS_SQL: &str = "(SELECT count(*)::int4 FROM rail_file_items i \
     WHERE i.file_id = rail_files.id AND i.subaccount_id = rail_files.subaccount_id)";

impl PgStore {
    /// The file of `subaccount` that carries `payout`, with the payout's line, if one does (a
    /// payout is in at most one file).
    pub(crate) async fn filed_payment(
        &self,
        subaccount: SubaccountId,
        payout: PayoutId,
    ) -> Result<Option<FiledPayment>, PortError> {
        use diesel::dsl::sql;
        use diesel::sql_types::BigInt;
        let mut conn = self.conn().await?;
        let line: Option<(Uuid, i32, String)> = rail_file_items::table
            .filter(rail_file_items::subaccount_id.eq(subaccount.as_uuid()))
            .filter(rail_file_items::payout_id.eq(payout.as_uuid()))
            .select((
                rail_file_items::file_id,
                rail_file_items::position,
                rail_file_items::reference,
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some((file, position, reference)) = line else {
            return Ok(None);
        };
        let (head, size, payouts): (FileHead, i64, i32) = rail_files::table
            .filter(rail_files::subaccount_id.eq(subaccount.as_uuid()))
            .filter(rail_files::id.eq(file))
            .select((
                FileHead::as_select(),
                sql::<BigInt>(SIZE_SQL),
                sql::<Integer>(PAYOUTS_SQL),
            ))
            .first(&mut conn)
            .await
            .map_err(from_diesel)?;
        let (uploaded_at, answered_at) = (head.uploaded_at, head.answered_at);
        Ok(Some(FiledPayment {
            file: summary(head, size, payouts)?,
            position: u32::try_from(position).unwrap_or(0),
            reference,
            uploaded_at,
            answered_at,
        }))
    }
}

/// The items of `files`, by file, in file order.
async fn items_of(
    conn: &mut AsyncPgConnection,
    files: &[Uuid],
) -> Result<Vec<(Uuid, RailFileItem)>, diesel::result::Error> {
    let rows: Vec<(Uuid, Uuid, String)> = rail_file_items::table
        .filter(rail_file_items::file_id.eq_any(files))
        .order((rail_file_items::file_id, rail_file_items::position))
        .select((
            rail_file_items::file_id,
            rail_file_items::payout_id,
            rail_file_items::reference,
        ))
        .load(conn)
        .await?;
    Ok(rows
        .into_iter()
        .map(|(file, payout, reference)| {
            (
                file,
                RailFileItem {
                    payout_id: PayoutId::from_uuid(payout),
                    reference,
                },
            )
        })
        .collect())
}

/// Files from their heads (with bytes when given) and items.
async fn complete(
    conn: &mut AsyncPgConnection,
    heads: Vec<(FileHead, Vec<u8>)>,
) -> Result<Vec<RailFile>, PortError> {
    let ids: Vec<Uuid> = heads.iter().map(|(h, _)| h.id).collect();
    let mut items = items_of(conn, &ids).await.map_err(from_diesel)?;
    heads
        .into_iter()
        .map(|(head, bytes)| {
            let (mine, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut items)
                .into_iter()
                .partition(|(f, _)| *f == head.id);
            items = rest;
            head.into_file(bytes, mine.into_iter().map(|(_, item)| item).collect())
        })
        .collect()
}

async fn load_file(
    conn: &mut AsyncPgConnection,
    filter: rail_files::BoxedQuery<'static, diesel::pg::Pg>,
) -> Result<Option<RailFile>, PortError> {
    let found: Option<(FileHead, Vec<u8>)> = filter
        .select((FileHead::as_select(), rail_files::bytes))
        .first(conn)
        .await
        .optional()
        .map_err(from_diesel)?;
    let Some(found) = found else {
        return Ok(None);
    };
    Ok(complete(conn, vec![found]).await?.pop())
}

#[async_trait]
impl RailFileStore for PgStore {
    #[tracing::instrument(level = "debug", skip_all, fields(batch = %batch))]
    async fn find_file(
        &self,
        batch: BatchId,
        method: PayoutMethod,
        part: u32,
    ) -> Result<Option<RailFile>, PortError> {
        let Ok(part) = i32::try_from(part) else {
            return Ok(None);
        };
        let mut conn = self.conn().await?;
        let query = rail_files::table
            .filter(rail_files::batch_id.eq(batch.as_uuid()))
            .filter(rail_files::method.eq(method.route()))
            .filter(rail_files::part.eq(part))
            .into_boxed();
        let file = load_file(&mut conn, query).await?;
        super::release(conn, file.as_ref().map_or(0, |f| f.bytes.len()));
        Ok(file)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(batch = %batch))]
    async fn find_files(
        &self,
        batch: BatchId,
        method: PayoutMethod,
    ) -> Result<Vec<RailFile>, PortError> {
        let mut conn = self.conn().await?;
        let heads: Vec<(FileHead, Vec<u8>)> = rail_files::table
            .filter(rail_files::batch_id.eq(batch.as_uuid()))
            .filter(rail_files::method.eq(method.route()))
            .order(rail_files::part.asc())
            .select((FileHead::as_select(), rail_files::bytes))
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        let files = complete(&mut conn, heads).await?;
        super::release(conn, files.iter().map(|f| f.bytes.len()).sum());
        Ok(files)
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn next_file_number(
        &self,
        method: PayoutMethod,
        day: Option<NaiveDate>,
    ) -> Result<u32, PortError> {
        let mut conn = self.conn().await?;
        let last: i32 = diesel::insert_into(rail_file_numbers::table)
            .values((
                rail_file_numbers::method.eq(method.route()),
                rail_file_numbers::day.eq(day.unwrap_or(ALL_TIME)),
                rail_file_numbers::last.eq(1),
            ))
            .on_conflict((rail_file_numbers::method, rail_file_numbers::day))
            .do_update()
            .set(rail_file_numbers::last.eq(rail_file_numbers::last + 1))
            .returning(rail_file_numbers::last)
            .get_result(&mut conn)
            .await
            .map_err(from_diesel)?;
        u32::try_from(last).map_err(|_| PortError::unknown(format!("file number {last}")))
    }

    #[tracing::instrument(level = "debug", skip_all, fields(batch = %file.batch_id))]
    async fn insert_file(&self, file: RailFile) -> Result<RailFile, PortError> {
        let part = i32::try_from(file.part)
            .map_err(|_| PortError::unknown(format!("rail file part {}", file.part)))?;
        let mut conn = self.conn().await?;
        let (id, sub) = (file.id.as_uuid(), file.subaccount_id.as_uuid());
        let payouts: Vec<Uuid> = file.items.iter().map(|i| i.payout_id.as_uuid()).collect();
        let inserted = conn
            .transaction::<_, diesel::result::Error, _>(async |conn| {
                // A payout of this file already in another part of the batch: store nothing.
                let elsewhere: Option<(Uuid, String)> = rail_file_items::table
                    .inner_join(rail_files::table)
                    .filter(rail_files::subaccount_id.eq(sub))
                    .filter(rail_file_items::subaccount_id.eq(sub))
                    .filter(rail_files::batch_id.eq(file.batch_id.as_uuid()))
                    .filter(rail_files::method.eq(file.method.route()))
                    .filter(rail_files::part.ne(part))
                    .filter(rail_file_items::payout_id.eq_any(&payouts))
                    .select((rail_file_items::payout_id, rail_files::name))
                    .first(conn)
                    .await
                    .optional()?;
                if let Some(elsewhere) = elsewhere {
                    return Ok(Err(elsewhere));
                }
                let inserted = diesel::insert_into(rail_files::table)
                    .values((
                        rail_files::id.eq(id),
                        rail_files::subaccount_id.eq(sub),
                        rail_files::batch_id.eq(file.batch_id.as_uuid()),
                        rail_files::method.eq(file.method.route()),
                        rail_files::part.eq(part),
                        rail_files::name.eq(&file.name),
                        rail_files::sha256.eq(file.sha256.as_slice()),
                        rail_files::bytes.eq(&file.bytes),
                        rail_files::state.eq(RailFileState::Generated.as_str()),
                        rail_files::effective_date.eq(file.effective_date),
                        rail_files::created_at.eq(file.created_at),
                    ))
                    .on_conflict_do_nothing()
                    .execute(conn)
                    .await?;
                if inserted == 0 {
                    return Ok(Ok(false));
                }
                // The items in statements of at most SET_STATEMENT_ROWS, their positions
                // counted over the whole file.
                for (chunk, items) in file.items.chunks(super::SET_STATEMENT_ROWS).enumerate() {
                    let first = chunk * super::SET_STATEMENT_ROWS;
                    let positions: Vec<i32> = (first..first + items.len())
                        .map(|position| i32::try_from(position).unwrap_or(i32::MAX))
                        .collect();
                    let payouts: Vec<Uuid> = items.iter().map(|i| i.payout_id.as_uuid()).collect();
                    let references: Vec<&str> =
                        items.iter().map(|i| i.reference.as_str()).collect();
                    diesel::sql_query(include_str!("insert_file_items.sql"))
                        .bind::<SqlUuid, _>(id)
                        .bind::<SqlUuid, _>(sub)
                        .bind::<Array<Integer>, _>(positions)
                        .bind::<Array<SqlUuid>, _>(payouts)
                        .bind::<Array<Text>, _>(references)
                        .execute(conn)
                        .await?;
                }
                Ok(Ok(true))
            })
            .await
            .map_err(from_diesel);
        let inserted = match inserted {
            Ok(Ok(inserted)) => inserted,
            // Refused or failed, the bytes may have been sent before it was.
            Ok(Err((payout, name))) => {
                super::release(conn, file.bytes.len());
                return Err(PortError::unknown(format!(
                    "payout {payout} of rail file {} is already in file {name} of its batch",
                    file.name
                )));
            }
            Err(e) => {
                super::release(conn, file.bytes.len());
                return Err(e);
            }
        };
        if inserted {
            super::release(conn, file.bytes.len());
            return Ok(RailFile {
                state: RailFileState::Generated,
                uploaded_at: None,
                answered_at: None,
                reason: None,
                ..file
            });
        }
        // Another runner stored the batch's file of this part first: that one is the file.
        let query = rail_files::table
            .filter(rail_files::batch_id.eq(file.batch_id.as_uuid()))
            .filter(rail_files::method.eq(file.method.route()))
            .filter(rail_files::part.eq(part))
            .into_boxed();
        let stored = load_file(&mut conn, query).await?.ok_or_else(|| {
            PortError::unknown(format!(
                "rail file {} was neither stored nor found (its name may belong to another batch)",
                file.name
            ))
        })?;
        super::release(conn, file.bytes.len() + stored.bytes.len());
        Ok(stored)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(file = %id, to = to.as_str()))]
    async fn move_file(
        &self,
        id: RailFileId,
        from: RailFileState,
        to: RailFileState,
        at: DateTime<Utc>,
        reason: Option<String>,
    ) -> Result<bool, PortError> {
        if !from.may_become(to) {
            return Err(PortError::unknown(format!(
                "a rail file cannot go from {} to {}",
                from.as_str(),
                to.as_str()
            )));
        }
        let mut conn = self.conn().await?;
        let target = rail_files::table
            .filter(rail_files::id.eq(id.as_uuid()))
            .filter(rail_files::state.eq(from.as_str()));
        let moved = if to == RailFileState::Uploaded {
            diesel::update(target)
                .set((
                    rail_files::state.eq(to.as_str()),
                    rail_files::uploaded_at.eq(Some(at)),
                ))
                .cached()
                .execute(&mut conn)
                .await
        } else {
            diesel::update(target)
                .set((
                    rail_files::state.eq(to.as_str()),
                    rail_files::answered_at.eq(Some(at)),
                    rail_files::reason.eq(reason),
                ))
                .execute(&mut conn)
                .await
        }
        .map_err(from_diesel)?;
        Ok(moved == 1)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(limit = limit))]
    async fn list_files(
        &self,
        state: Option<RailFileState>,
        before: Option<RailFileId>,
        limit: u32,
    ) -> Result<Vec<RailFileSummary>, PortError> {
        use diesel::dsl::sql;
        use diesel::sql_types::BigInt;
        let mut conn = self.conn().await?;
        let mut query = rail_files::table
            .select((
                FileHead::as_select(),
                sql::<BigInt>(SIZE_SQL),
                sql::<Integer>(PAYOUTS_SQL),
            ))
            .order((rail_files::created_at.desc(), rail_files::id.desc()))
            .limit(i64::from(limit))
            .into_boxed();
        if let Some(state) = state {
            query = query.filter(rail_files::state.eq(state.as_str()));
        }
        if let Some(id) = before {
            // The position is read first (one index lookup), so the page is one range of the
            // listing index, on PostgreSQL and on Citus alike.
            let at: Option<DateTime<Utc>> = rail_files::table
                .find(id.as_uuid())
                .select(rail_files::created_at)
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            // An unknown position pages from nothing.
            let Some(at) = at else {
                return Ok(Vec::new());
            };
            query = query.filter(
                rail_files::created_at.lt(at).or(rail_files::created_at
                    .eq(at)
                    .and(rail_files::id.lt(id.as_uuid()))),
            );
        }
        let rows: Vec<(FileHead, i64, i32)> = query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter()
            .map(|(head, size, payouts)| summary(head, size, payouts))
            .collect()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(file = %id))]
    async fn get_file(&self, id: RailFileId) -> Result<Option<RailFile>, PortError> {
        let mut conn = self.conn().await?;
        let query = rail_files::table
            .filter(rail_files::id.eq(id.as_uuid()))
            .into_boxed();
        let file = load_file(&mut conn, query).await?;
        super::release(conn, file.as_ref().map_or(0, |f| f.bytes.len()));
        Ok(file)
    }

    #[tracing::instrument(level = "debug", skip_all, fields(method = method.route(), limit))]
    async fn answered_payouts(
        &self,
        method: PayoutMethod,
        paid_from: Option<NaiveDate>,
        limit: u32,
    ) -> Result<Vec<AnsweredPayout>, PortError> {
        if limit == 0 {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        let in_progress = i16::from(PayoutStatus::InProgress.code());
        // From the submitted batches (few: the work in flight) to their files of the method that
        // have an answer, then to each such batch's payouts still in progress (`payouts_batch`:
        // settled ones are not read again), each checked to be in that file. Every join keeps
        // the subaccount, so on Citus the whole statement runs shard by shard.
        let mut query = batches::table
            .inner_join(
                rail_files::table.on(rail_files::subaccount_id
                    .eq(batches::subaccount_id)
                    .and(rail_files::batch_id.eq(batches::id))),
            )
            .inner_join(
                payouts::table.on(payouts::subaccount_id
                    .eq(batches::subaccount_id)
                    .and(payouts::batch_id.eq(batches::id.nullable()))
                    .and(payouts::status.eq(in_progress))),
            )
            .inner_join(
                rail_file_items::table.on(rail_file_items::subaccount_id
                    .eq(payouts::subaccount_id)
                    .and(rail_file_items::file_id.eq(rail_files::id))
                    .and(rail_file_items::payout_id.eq(payouts::id))),
            )
            .filter(batches::status.eq(BatchStatus::InProgress.as_str()))
            .filter(rail_files::method.eq(method.route()))
            .select((
                PayoutRow::as_select(),
                rail_files::id,
                rail_files::name,
                rail_files::state,
                rail_files::reason,
            ))
            .limit(i64::from(limit))
            .into_boxed();
        let rejected = RailFileState::Rejected.as_str();
        query = match paid_from {
            Some(day) => query.filter(
                rail_files::state.eq(rejected).or(rail_files::state
                    .eq_any([
                        RailFileState::Uploaded.as_str(),
                        RailFileState::Acknowledged.as_str(),
                    ])
                    .and(rail_files::effective_date.le(day))),
            ),
            None => query.filter(rail_files::state.eq(rejected)),
        };
        let rows: Vec<(PayoutRow, Uuid, String, String, Option<String>)> =
            query.load(&mut conn).await.map_err(from_diesel)?;
        rows.into_iter()
            .map(|(payout, file, name, state, reason)| {
                Ok(AnsweredPayout {
                    payout: Payout::try_from(payout)?,
                    file: RailFileId::from_uuid(file),
                    state: RailFileState::parse(&state).ok_or_else(|| {
                        PortError::unknown(format!("rail file {file} has state {state}"))
                    })?,
                    name,
                    reason,
                })
            })
            .collect()
    }
}
