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
use domain::account::{
    AccountData, AccountField, AccountStatus, ConfirmStatus, PayoutMethod, ReceiverAccount,
};
use domain::events::OutboxEvent;
use domain::idempotency::WriteKey;
use domain::ids::{ReceiverAccountId, ReceiverId, SubaccountId};
use uuid::Uuid;

use super::PgStore;
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

/// A `receiver_accounts` row.
#[derive(Debug, Queryable, Selectable, Insertable)]
#[diesel(table_name = receiver_accounts, check_for_backend(diesel::pg::Pg))]
#[diesel(treat_none_as_default_value = false)]
pub(crate) struct AccountRow {
    pub(crate) id: Uuid,
    subaccount_id: Uuid,
    receiver_id: Uuid,
    method: String,
    asset: String,
    status: String,
    confirm_status: String,
    data_ciphertext: Vec<u8>,
    details_fingerprint: Vec<u8>,
    fp_bsb: Option<Vec<u8>>,
    fp_account_number: Option<Vec<u8>>,
    fp_routing_number: Option<Vec<u8>>,
    fp_account_type: Option<Vec<u8>>,
    fp_iban: Option<Vec<u8>>,
    fp_bic: Option<Vec<u8>>,
    fp_recipient: Option<Vec<u8>>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

/// What defines "the same details": the method and the matchable fields, in stored order.
fn details(account: &ReceiverAccount) -> String {
    let mut details = account.method.name().to_owned();
    for (field, value) in account.data.expose_matchable() {
        details.push('\0');
        details.push_str(field.name());
        details.push('=');
        details.push_str(value);
    }
    details
}

fn context(id: Uuid) -> Vec<u8> {
    [b"account:".as_slice(), id.as_bytes()].concat()
}

impl AccountRow {
    fn new(vault: &Vault, account: &ReceiverAccount) -> Result<Self, PortError> {
        let id = account.id.as_uuid();
        let pairs: Vec<(&str, &str)> = account
            .data
            .expose_pairs()
            .into_iter()
            .map(|(field, value)| (field.name(), value))
            .collect();
        let plain = serde_json::to_vec(&pairs).map_err(|e| PortError::Unknown(e.into()))?;
        let data_ciphertext = vault
            .seal(&plain, &context(id))
            .map_err(|e| PortError::unknown(format!("sealing account {id}: {e}")))?;
        // Only the matchable fields, in stored order, define "the same details"; each also gets
        // the fingerprint verify looks it up by.
        let details = details(account);
        let mut fingerprints = Fingerprints::default();
        for (field, value) in account.data.expose_matchable() {
            let column = fingerprints.column(field).ok_or_else(|| {
                PortError::unknown(format!(
                    "account field {} has no fingerprint column",
                    field.name()
                ))
            })?;
            *column = Some(vault.fingerprint(field.name(), value));
        }
        let Fingerprints {
            bsb: fp_bsb,
            account_number: fp_account_number,
            routing_number: fp_routing_number,
            account_type: fp_account_type,
            iban: fp_iban,
            bic: fp_bic,
            recipient: fp_recipient,
        } = fingerprints;
        Ok(Self {
            id,
            subaccount_id: account.subaccount_id.as_uuid(),
            receiver_id: account.receiver_id.as_uuid(),
            method: account.method.name().to_owned(),
            asset: account.method.asset().code().to_owned(),
            status: account.status.as_str().to_owned(),
            confirm_status: account.confirm_status.as_str().to_owned(),
            data_ciphertext,
            details_fingerprint: vault.fingerprint("details", &details),
            fp_bsb,
            fp_account_number,
            fp_routing_number,
            fp_account_type,
            fp_iban,
            fp_bic,
            fp_recipient,
            created_at: account.created_at,
            updated_at: account.updated_at,
        })
    }

    /// The row's ciphertext, and the row sealed and fingerprinted again by the vault's current
    /// key; `None` when it cannot be opened or read.
    pub(crate) fn resealed(self, vault: &Vault) -> Option<(Vec<u8>, Self)> {
        let old = self.data_ciphertext.clone();
        let account = self.into_domain(vault).ok()?;
        let new = Self::new(vault, &account).ok()?;
        Some((old, new))
    }

    /// The assignments of the sealed and fingerprinted columns (what a rotation rewrites).
    #[allow(clippy::type_complexity)]
    pub(crate) fn sealed_columns(
        &self,
    ) -> (
        diesel::dsl::Eq<receiver_accounts::data_ciphertext, &Vec<u8>>,
        diesel::dsl::Eq<receiver_accounts::details_fingerprint, &Vec<u8>>,
        diesel::dsl::Eq<receiver_accounts::fp_bsb, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_account_number, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_routing_number, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_account_type, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_iban, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_bic, &Option<Vec<u8>>>,
        diesel::dsl::Eq<receiver_accounts::fp_recipient, &Option<Vec<u8>>>,
    ) {
        use receiver_accounts as t;
        (
            t::data_ciphertext.eq(&self.data_ciphertext),
            t::details_fingerprint.eq(&self.details_fingerprint),
            t::fp_bsb.eq(&self.fp_bsb),
            t::fp_account_number.eq(&self.fp_account_number),
            t::fp_routing_number.eq(&self.fp_routing_number),
            t::fp_account_type.eq(&self.fp_account_type),
            t::fp_iban.eq(&self.fp_iban),
            t::fp_bic.eq(&self.fp_bic),
            t::fp_recipient.eq(&self.fp_recipient),
        )
    }

    pub(crate) fn into_domain(self, vault: &Vault) -> Result<ReceiverAccount, PortError> {
        let plain = vault
            .open(&self.data_ciphertext, &context(self.id))
            .map_err(|e| PortError::unknown(format!("opening account {}: {e}", self.id)))?;
        let named: Vec<(String, String)> =
            serde_json::from_slice(&plain).map_err(|e| PortError::Unknown(e.into()))?;
        let pairs = named
            .into_iter()
            .map(|(name, value)| {
                AccountField::from_name(&name)
                    .map(|field| (field, value))
                    .ok_or_else(|| {
                        PortError::unknown(format!("account {} has unknown field {name}", self.id))
                    })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(ReceiverAccount {
            id: ReceiverAccountId::from_uuid(self.id),
            receiver_id: ReceiverId::from_uuid(self.receiver_id),
            subaccount_id: SubaccountId::from_uuid(self.subaccount_id),
            method: PayoutMethod::from_name(&self.method).ok_or_else(|| {
                PortError::unknown(format!(
                    "account {} has unknown method {}",
                    self.id, self.method
                ))
            })?,
            data: AccountData::from_pairs(pairs),
            status: AccountStatus::parse(&self.status).ok_or_else(|| {
                PortError::unknown(format!("account {} has unknown status", self.id))
            })?,
            confirm_status: ConfirmStatus::parse(&self.confirm_status).ok_or_else(|| {
                PortError::unknown(format!("account {} has unknown confirm_status", self.id))
            })?,
            created_at: self.created_at,
            updated_at: self.updated_at,
        })
    }
}

/// The fingerprint columns of a row, one per matchable field.
#[derive(Default)]
struct Fingerprints {
    bsb: Option<Vec<u8>>,
    account_number: Option<Vec<u8>>,
    routing_number: Option<Vec<u8>>,
    account_type: Option<Vec<u8>>,
    iban: Option<Vec<u8>>,
    bic: Option<Vec<u8>>,
    recipient: Option<Vec<u8>>,
}

impl Fingerprints {
    /// Where `field`'s fingerprint goes; `None` for a field that is not matchable.
    fn column(&mut self, field: AccountField) -> Option<&mut Option<Vec<u8>>> {
        match field {
            AccountField::Bsb => Some(&mut self.bsb),
            AccountField::AccountNumber => Some(&mut self.account_number),
            AccountField::RoutingNumber => Some(&mut self.routing_number),
            AccountField::AccountType => Some(&mut self.account_type),
            AccountField::Iban => Some(&mut self.iban),
            AccountField::Bic => Some(&mut self.bic),
            AccountField::Recipient => Some(&mut self.recipient),
            AccountField::Name | AccountField::Description => None,
        }
    }
}

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
            let mut fingerprints = Fingerprints::default();
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
