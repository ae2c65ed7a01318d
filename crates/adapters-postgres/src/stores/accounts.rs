//! `AccountStore` on PostgreSQL: account values encrypted at rest, matchable values as keyed
//! fingerprints with one index each.

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::prelude::*;
use diesel::sql_types::{Bool, Nullable};
use diesel_async::{AsyncConnection, RunQueryDsl};
use domain::PortError;
use domain::account::notification::Notification;
use domain::account::ports::{
    AccountStore, ConfirmationToken, InsertAccountError, MerchantNames, TokenLookup,
};
use domain::account::{AccountField, AccountStatus, ConfirmStatus, ReceiverAccount};
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ids::{ReceiverAccountId, ReceiverId, SubaccountId};

use super::PgStore;
use super::account_rows::{AccountRow, details};
use super::notifications::NewNotificationRow;
use super::outbox::insert_events;
use super::payout_write::transitions::{Waiting, react};
use crate::cached::CachedExt;
use crate::errors::{TxError, from_diesel, from_tx};
use crate::schema::{
    account_confirmations, notifications, receiver_accounts, receivers, subaccounts,
};
use crate::vault::Vault;
use domain::payout::change::PayoutReaction;

/// A filter on one fingerprint column.
type FingerprintFilter =
    Box<dyn BoxableExpression<receiver_accounts::table, Pg, SqlType = Nullable<Bool>>>;

/// `fp_<field> = fp` (one fingerprint: `=`, so the column's index `(subaccount_id, fp_<field>,
/// created_at, id)` delivers the rows oldest first and `LIMIT 1` reads one entry; `= ANY` of
/// several cannot, and sorted every account sharing the value); `None` for a field that is not
/// matchable.
fn fingerprint_equals(field: AccountField, fp: Vec<u8>) -> Option<FingerprintFilter> {
    use receiver_accounts as t;
    match field {
        AccountField::Bsb => Some(Box::new(t::fp_bsb.eq(fp))),
        AccountField::AccountNumber => Some(Box::new(t::fp_account_number.eq(fp))),
        AccountField::RoutingNumber => Some(Box::new(t::fp_routing_number.eq(fp))),
        AccountField::AccountType => Some(Box::new(t::fp_account_type.eq(fp))),
        AccountField::Iban => Some(Box::new(t::fp_iban.eq(fp))),
        AccountField::Bic => Some(Box::new(t::fp_bic.eq(fp))),
        AccountField::Recipient => Some(Box::new(t::fp_recipient.eq(fp))),
        AccountField::Name | AccountField::Description => None,
    }
}

/// One statement of verify's lookup: the subaccount's oldest account with every field's
/// fingerprint under one key.
type FirstMatch = receiver_accounts::BoxedQuery<
    'static,
    Pg,
    diesel::dsl::SqlTypeOf<diesel::dsl::AsSelect<AccountRow, Pg>>,
>;

/// Verify's lookups, one per configured key (a row's fingerprints are all under the key that
/// wrote or last rotated it, so it matches under exactly one): the oldest of their answers is
/// the match. Empty when `fields` is.
///
/// # Errors
/// When a field is not matchable (a caller's mistake: verify asks only for matchable fields).
fn first_match_lookups(
    vault: &Vault,
    subaccount: SubaccountId,
    fields: &[(AccountField, String)],
) -> Result<Vec<FirstMatch>, PortError> {
    if fields.is_empty() {
        return Ok(Vec::new());
    }
    let per_field: Vec<(AccountField, Vec<Vec<u8>>)> = fields
        .iter()
        .map(|(field, value)| (*field, vault.fingerprints(field.name(), value)))
        .collect();
    let keys = <[_]>::first(&per_field).map_or(0, |(_, fps)| fps.len());
    (0..keys)
        .map(|key| {
            let mut query = receiver_accounts::table
                .filter(receiver_accounts::subaccount_id.eq(subaccount.as_uuid()))
                .select(AccountRow::as_select())
                .into_boxed();
            for (field, fps) in &per_field {
                let filter = fps
                    .get(key)
                    .cloned()
                    .and_then(|fp| fingerprint_equals(*field, fp))
                    .ok_or_else(|| {
                        PortError::unknown(format!(
                            "verify asked for {}, which is not matchable",
                            field.name()
                        ))
                    })?;
                query = query.filter(filter);
            }
            Ok(query
                .order((
                    receiver_accounts::created_at.asc(),
                    receiver_accounts::id.asc(),
                ))
                .limit(1))
        })
        .collect()
}

/// How [`PgStore::explain_first_match`] explains.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Explain {
    /// `EXPLAIN (COSTS OFF)`: the plan, not run (plan tests).
    Plan,
    /// `EXPLAIN (ANALYZE, BUFFERS, TIMING OFF)`: run, with the rows and buffers each node read
    /// (per-node timing costs a clock read per row, which on some VMs inflates plans tenfold).
    Analyze,
}

impl Explain {
    fn options(self) -> &'static str {
        match self {
            Self::Plan => "EXPLAIN (COSTS OFF) ",
            Self::Analyze => "EXPLAIN (ANALYZE, BUFFERS, TIMING OFF) ",
        }
    }
}

/// `EXPLAIN <options> <query>`, with the query's own text and binds.
struct Explained<Q> {
    how: Explain,
    query: Q,
}

impl<Q: diesel::query_builder::QueryFragment<Pg>> diesel::query_builder::QueryFragment<Pg>
    for Explained<Q>
{
    fn walk_ast<'b>(
        &'b self,
        mut out: diesel::query_builder::AstPass<'_, 'b, Pg>,
    ) -> QueryResult<()> {
        out.push_sql(self.how.options());
        self.query.walk_ast(out.reborrow())
    }
}

impl<Q> diesel::query_builder::QueryId for Explained<Q> {
    type QueryId = ();
    const HAS_STATIC_QUERY_ID: bool = false;
}

impl<Q: diesel::query_builder::QueryFragment<Pg>> diesel::query_builder::Query for Explained<Q> {
    type SqlType = diesel::sql_types::Text;
}

impl PgStore {
    /// The plan of each statement verify's lookup (`find_first_match`) runs for `fields`, one
    /// per configured key, exactly as it runs them (same text, same binds): for plan tests and
    /// `payoutd-bench verify --explain`. Not a port: a diagnostic of this adapter.
    ///
    /// # Errors
    /// As `find_first_match`, and when PostgreSQL refuses the `EXPLAIN`.
    pub async fn explain_first_match(
        &self,
        subaccount: SubaccountId,
        fields: &[(AccountField, String)],
        how: Explain,
    ) -> Result<Vec<String>, PortError> {
        let mut conn = self.conn().await?;
        let mut plans = Vec::new();
        for query in first_match_lookups(&self.vault, subaccount, fields)? {
            let lines: Vec<String> = Explained { how, query }
                .load(&mut conn)
                .await
                .map_err(from_diesel)?;
            plans.push(lines.join("\n"));
        }
        Ok(plans)
    }
}

/// Why a confirmation transaction rolled back.
enum ConfirmAbort {
    Tx(TxError),
    NotApplicable,
    Payouts(super::payout_write::transitions::PayoutAbort),
}

impl From<diesel::result::Error> for ConfirmAbort {
    fn from(e: diesel::result::Error) -> Self {
        Self::Tx(TxError::Db(e))
    }
}

impl From<TxError> for ConfirmAbort {
    fn from(e: TxError) -> Self {
        Self::Tx(e)
    }
}

#[async_trait]
impl AccountStore for PgStore {
    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %account.subaccount_id, account = %account.id)
    )]
    async fn insert_account(
        &self,
        account: &ReceiverAccount,
        token: &ConfirmationToken,
        events: &[OutboxEvent],
        notification: &Notification,
        key: &WriteKey<ReceiverAccount>,
    ) -> Result<(), InsertAccountError> {
        let row = AccountRow::new(&self.vault, account)?;
        // While a previous master key is configured, a row not yet rotated holds the details
        // fingerprint under that key, which the unique index cannot compare with this one.
        let previous_details = self
            .vault
            .previous_fingerprint("details", &details(account));
        let notification = NewNotificationRow::new(&self.vault, notification)?;
        let commit = key.commit(account);
        let token = *token;
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, TxError, _>(async |conn| {
                if let Some(fp) = &previous_details {
                    // With the subaccount, which the receiver's rows all have, this reads one
                    // shard on Citus (where the unique index leads with it) instead of all.
                    let taken: i64 = receiver_accounts::table
                        .filter(receiver_accounts::subaccount_id.eq(row.subaccount_id))
                        .filter(receiver_accounts::receiver_id.eq(row.receiver_id))
                        .filter(receiver_accounts::details_fingerprint.eq(fp))
                        .count()
                        .get_result(conn)
                        .await?;
                    if taken > 0 {
                        return Ok(false);
                    }
                }
                diesel::insert_into(receiver_accounts::table)
                    .values(&row)
                    .execute(conn)
                    .await?;
                diesel::insert_into(account_confirmations::table)
                    .values((
                        account_confirmations::token_hash.eq(token.hash.to_vec()),
                        account_confirmations::account_id.eq(row.id),
                        account_confirmations::subaccount_id.eq(row.subaccount_id),
                        account_confirmations::expires_at.eq(token.expires_at),
                        account_confirmations::created_at.eq(row.created_at),
                    ))
                    .execute(conn)
                    .await?;
                diesel::insert_into(notifications::table)
                    .values(&notification)
                    .execute(conn)
                    .await?;
                insert_events(conn, events, commit.as_ref()).await?;
                Ok(true)
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(true) => Ok(()),
            Ok(false) => Err(InsertAccountError::Duplicate),
            Err(e) => Err(match e.unique_violation() {
                Some("receiver_accounts_details_unique") => InsertAccountError::Duplicate,
                _ => InsertAccountError::Port(from_tx(e)),
            }),
        }
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, account = %id)
    )]
    async fn find_account(
        &self,
        subaccount: SubaccountId,
        id: ReceiverAccountId,
    ) -> Result<Option<ReceiverAccount>, PortError> {
        let mut conn = self.conn().await?;
        let row: Option<AccountRow> = receiver_accounts::table
            .filter(receiver_accounts::id.eq(id.as_uuid()))
            .filter(receiver_accounts::subaccount_id.eq(subaccount.as_uuid()))
            .select(AccountRow::as_select())
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        row.map(|r| r.into_domain(&self.vault)).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all, fields(subaccount = %subaccount, ids = ids.len()))]
    async fn find_accounts(
        &self,
        subaccount: SubaccountId,
        ids: &[ReceiverAccountId],
    ) -> Result<Vec<ReceiverAccount>, PortError> {
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut conn = self.conn().await?;
        let ids: Vec<uuid::Uuid> = ids.iter().map(|id| id.as_uuid()).collect();
        let rows: Vec<AccountRow> = receiver_accounts::table
            .filter(receiver_accounts::id.eq_any(&ids))
            .filter(receiver_accounts::subaccount_id.eq(subaccount.as_uuid()))
            .select(AccountRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|r| r.into_domain(&self.vault))
            .collect()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, receiver = %receiver)
    )]
    async fn list_accounts(
        &self,
        subaccount: SubaccountId,
        receiver: ReceiverId,
    ) -> Result<Vec<ReceiverAccount>, PortError> {
        let mut conn = self.conn().await?;
        let rows: Vec<AccountRow> = receiver_accounts::table
            .filter(receiver_accounts::receiver_id.eq(receiver.as_uuid()))
            .filter(receiver_accounts::subaccount_id.eq(subaccount.as_uuid()))
            .order((
                receiver_accounts::created_at.asc(),
                receiver_accounts::id.asc(),
            ))
            .select(AccountRow::as_select())
            .load(&mut conn)
            .await
            .map_err(from_diesel)?;
        rows.into_iter()
            .map(|r| r.into_domain(&self.vault))
            .collect()
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %subaccount, matched_fields = fields.len())
    )]
    async fn find_first_match(
        &self,
        subaccount: SubaccountId,
        fields: &[(AccountField, String)],
    ) -> Result<Option<ReceiverAccount>, PortError> {
        let lookups = first_match_lookups(&self.vault, subaccount, fields)?;
        if lookups.is_empty() {
            return Ok(None);
        }
        let mut conn = self.conn().await?;
        // One ordered lookup per key (two only during a rotation); the oldest match wins.
        let mut first: Option<AccountRow> = None;
        for lookup in lookups {
            let row: Option<AccountRow> = lookup
                .first(&mut conn)
                .await
                .optional()
                .map_err(from_diesel)?;
            if let Some(row) = row
                && first
                    .as_ref()
                    .is_none_or(|f| (row.created_at, row.id) < (f.created_at, f.id))
            {
                first = Some(row);
            }
        }
        first.map(|r| r.into_domain(&self.vault)).transpose()
    }

    #[tracing::instrument(level = "debug", skip_all)]
    async fn find_token(&self, hash: &[u8; 32]) -> Result<Option<TokenLookup>, PortError> {
        let mut conn = self.conn().await?;
        type Found = (
            AccountRow,
            DateTime<Utc>,
            Option<DateTime<Utc>>,
            (String, String, String),
            (String, String),
        );
        let found: Option<Found> = account_confirmations::table
            // The subaccount is implied by the account; joined on too so that Citus can join
            // the colocated shards (receivers too; subaccounts is a reference table).
            .inner_join(
                receiver_accounts::table.on(receiver_accounts::id
                    .eq(account_confirmations::account_id)
                    .and(
                        receiver_accounts::subaccount_id.eq(account_confirmations::subaccount_id),
                    )),
            )
            .inner_join(
                receivers::table.on(receivers::id
                    .eq(receiver_accounts::receiver_id)
                    .and(receivers::subaccount_id.eq(receiver_accounts::subaccount_id))),
            )
            .inner_join(
                subaccounts::table.on(subaccounts::id.eq(account_confirmations::subaccount_id)),
            )
            .filter(account_confirmations::token_hash.eq(hash.to_vec()))
            .select((
                AccountRow::as_select(),
                account_confirmations::expires_at,
                account_confirmations::used_at,
                (
                    receivers::first_name,
                    receivers::middle_name,
                    receivers::last_name,
                ),
                (subaccounts::business_name, subaccounts::name),
            ))
            .first(&mut conn)
            .await
            .optional()
            .map_err(from_diesel)?;
        let Some((row, expires_at, used_at, (first, middle, last), (business_name, name))) = found
        else {
            return Ok(None);
        };
        Ok(Some(TokenLookup {
            account: row.into_domain(&self.vault)?,
            merchant: MerchantNames {
                business_name,
                name,
            },
            receiver_names: [first, middle, last],
            expires_at,
            used: used_at.is_some(),
        }))
    }

    #[tracing::instrument(
        level = "debug",
        skip_all,
        fields(subaccount = %account.subaccount_id, account = %account.id)
    )]
    async fn confirm_account(
        &self,
        account: &ReceiverAccount,
        token: Option<[u8; 32]>,
        events: &[OutboxEvent],
        reaction: &PayoutReaction,
        key: &WriteKey<ReceiverAccount>,
    ) -> Result<bool, PortError> {
        let schedule = &self.batch_schedule;
        let commit = key.commit(account);
        let id = account.id.as_uuid();
        let subaccount = account.subaccount_id.as_uuid();
        let (status, confirm_status, at) = (
            account.status.as_str(),
            account.confirm_status.as_str(),
            account.updated_at,
        );
        let mut conn = self.conn().await?;
        let result = conn
            .transaction::<_, ConfirmAbort, _>(async |conn| {
                // The account row first, in every confirmation (with a token or without), so
                // concurrent ones queue on it instead of deadlocking over token rows.
                let updated = diesel::update(receiver_accounts::table)
                    .filter(receiver_accounts::id.eq(id))
                    .filter(receiver_accounts::subaccount_id.eq(subaccount))
                    .filter(
                        receiver_accounts::confirm_status.eq(ConfirmStatus::Unconfirmed.as_str()),
                    )
                    .filter(receiver_accounts::status.eq(AccountStatus::Pending.as_str()))
                    .set((
                        receiver_accounts::status.eq(status),
                        receiver_accounts::confirm_status.eq(confirm_status),
                        receiver_accounts::updated_at.eq(at),
                    ))
                    .cached()
                    .execute(conn)
                    .await?;
                if updated != 1 {
                    return Err(ConfirmAbort::NotApplicable);
                }
                if let Some(hash) = token {
                    let used = diesel::update(account_confirmations::table)
                        .filter(account_confirmations::token_hash.eq(hash.to_vec()))
                        .filter(account_confirmations::account_id.eq(id))
                        .filter(account_confirmations::subaccount_id.eq(subaccount))
                        .filter(account_confirmations::used_at.is_null())
                        .set(account_confirmations::used_at.eq(at))
                        .cached()
                        .execute(conn)
                        .await?;
                    if used != 1 {
                        return Err(ConfirmAbort::NotApplicable);
                    }
                }
                // A confirmed account's other links are spent too (docs/API.md,
                // `/confirm/{token}`).
                diesel::update(account_confirmations::table)
                    .filter(account_confirmations::account_id.eq(id))
                    .filter(account_confirmations::subaccount_id.eq(subaccount))
                    .filter(account_confirmations::used_at.is_null())
                    .set(account_confirmations::used_at.eq(at))
                    .cached()
                    .execute(conn)
                    .await?;
                insert_events(conn, events, commit.as_ref()).await?;
                react(conn, subaccount, Waiting::OfAccount(id), reaction, schedule)
                    .await
                    .map_err(ConfirmAbort::Payouts)
            })
            .await;
        let result = self.after_commit(result);
        match result {
            Ok(()) => Ok(true),
            Err(ConfirmAbort::NotApplicable) => Ok(false),
            Err(ConfirmAbort::Tx(e)) => Err(from_tx(e)),
            Err(ConfirmAbort::Payouts(e)) => Err(e.into_port("moving payouts on confirmation")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_matchable_field_and_only_those_has_a_fingerprint_column() {
        for &field in AccountField::ALL {
            let mut fingerprints = super::super::account_rows::Fingerprints::default();
            assert_eq!(
                fingerprints.column(field).is_some(),
                field.matchable(),
                "{field:?}"
            );
            assert_eq!(
                fingerprint_equals(field, Vec::new()).is_some(),
                field.matchable(),
                "{field:?}"
            );
        }
    }
}
