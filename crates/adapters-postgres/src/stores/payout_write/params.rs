//! The parameters of the write path's set statements, each statement's in one function that
//! binds them in the order its `.sql` file's header lists them: the order lives here and there
//! only. (A statement of a few scalars binds them where it runs, next to its use; `statements` has every text.)

use chrono::{DateTime, Utc};
use diesel::sql_types::{
    Array, BigInt, Bool, Bytea, Integer, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use domain::account::{AccountStatus, ConfirmStatus};
use domain::idempotency::{KeyAdmission, KeyCommit};
use domain::payout::initial_status;
use domain::receiver::KycStatus;
use uuid::Uuid;

use super::decide::UNPAYABLE_RECEIVERS;
use super::delivery::NO_ENDPOINT;
use super::open_batches::OpenBatch;
use super::outbox::bind_events;
use super::set_write::{SetRows, Sums};
use super::statements;
use super::transitions::bind_entries;
use crate::cached::BoxedSql;
use crate::rows::PayoutRow;

/// `sql/write_set.sql` with its 56 parameters bound: `$1`–`$24` the payouts, `$25`–`$32` their
/// ledger entries, `$33`–`$36` the keys marked committed, `$37`–`$42` the events, `$43`–`$45`
/// each currency's hold, `$46` the subaccount, `$47`–`$55` the admitted requests, `$56` the
/// error of a skipped delivery attempt.
pub(crate) fn write_set<'f>(subaccount: Uuid, set: &SetRows<'f, 'f>) -> BoxedSql<'f> {
    bind_set(statements::WRITE_SET, subaccount, set)
}

/// `sql/write_set_at_once.sql` with its 64 parameters bound: [`write_set`]'s `$1`–`$56`, then
/// `$57`–`$61` the party rule ([`bind_party_rule`]) and `$62`–`$64` the open batches expected
/// (currency, batch, run time).
pub(crate) fn write_set_at_once<'f>(
    subaccount: Uuid,
    set: &SetRows<'f, 'f>,
    open: &[OpenBatch],
) -> BoxedSql<'f> {
    bind_party_rule(bind_set(statements::WRITE_SET_AT_ONCE, subaccount, set))
        .bind::<Array<Text>, _>(open.iter().map(|b| b.0).collect::<Vec<_>>())
        .bind::<Array<SqlUuid>, _>(open.iter().map(|b| b.1).collect::<Vec<_>>())
        .bind::<Array<Timestamptz>, _>(open.iter().map(|b| b.2).collect::<Vec<_>>())
}

/// The first 56 parameters both set statements share, in their order.
fn bind_set<'f>(sql: &'static str, subaccount: Uuid, set: &SetRows<'f, 'f>) -> BoxedSql<'f> {
    let query = bind_payout_rows(diesel::sql_query(sql).into_boxed(), set.payouts);
    let query = bind_entries(query, set.entries);
    let query = bind_key_commits(query, set.keys);
    let query = bind_events(query, set.events);
    let query = bind_sums(query, set.sums).bind::<SqlUuid, _>(subaccount);
    bind_admissions(query, set.admissions).bind::<Text, _>(NO_ENDPOINT)
}

/// `sql/insert_payouts.sql` with its 24 parameters (the rows' columns) bound.
pub(crate) fn insert_payouts(rows: &[PayoutRow]) -> BoxedSql<'static> {
    bind_payout_rows(
        diesel::sql_query(statements::INSERT_PAYOUTS).into_boxed(),
        rows,
    )
}

/// `sql/mark_keys_committed.sql` with its parameters bound: `$1` the subaccount, `$2`–`$5` the
/// keys.
pub(crate) fn mark_keys_committed<'f>(subaccount: Uuid, commits: &[KeyCommit<'_>]) -> BoxedSql<'f> {
    bind_key_commits(
        diesel::sql_query(statements::MARK_KEYS_COMMITTED)
            .into_boxed()
            .bind::<SqlUuid, _>(subaccount),
        commits,
    )
}

/// `sql/hold_sums.sql` with its parameters bound: `$1` the subaccount, `$2`–`$4` the sums.
pub(crate) fn hold_sums<'f>(subaccount: Uuid, sums: &Sums<'_>) -> BoxedSql<'f> {
    bind_sums(
        diesel::sql_query(statements::HOLD_SUMS)
            .into_boxed()
            .bind::<SqlUuid, _>(subaccount),
        sums,
    )
}

/// Binds each currency's hold ([`Sums`]: currencies, sums, latest times) as the next three
/// parameters.
fn bind_sums<'f>(query: BoxedSql<'f>, sums: &Sums<'_>) -> BoxedSql<'f> {
    let assets: Vec<String> = sums.assets.iter().map(|a| (*a).to_owned()).collect();
    query
        .bind::<Array<Text>, _>(assets)
        .bind::<Array<BigInt>, _>(sums.totals.clone())
        .bind::<Array<Timestamptz>, _>(sums.times.clone())
}

/// Binds new payout rows as the 24 arrays `sql/insert_payouts.sql` unnests (its header lists
/// them), as the next parameters.
fn bind_payout_rows<'f>(query: BoxedSql<'f>, rows: &[PayoutRow]) -> BoxedSql<'f> {
    macro_rules! column {
        ($field:ident) => {
            rows.iter().map(|r| r.$field.clone()).collect::<Vec<_>>()
        };
    }
    query
        .bind::<Array<SqlUuid>, _>(column!(id))
        .bind::<Array<SqlUuid>, _>(column!(subaccount_id))
        .bind::<Array<SqlUuid>, _>(column!(receiver_id))
        .bind::<Array<SqlUuid>, _>(column!(account_id))
        .bind::<Array<Text>, _>(column!(asset))
        .bind::<Array<BigInt>, _>(column!(amount))
        .bind::<Array<BigInt>, _>(column!(fee))
        .bind::<Array<Nullable<SqlUuid>>, _>(column!(fee_template_id))
        .bind::<Array<Nullable<SqlUuid>>, _>(column!(fee_group_id))
        .bind::<Array<Nullable<BigInt>>, _>(column!(fee_fixed))
        .bind::<Array<Nullable<Integer>>, _>(column!(fee_percentage))
        .bind::<Array<Nullable<BigInt>>, _>(column!(fee_min_amount))
        .bind::<Array<Nullable<Text>>, _>(column!(reference))
        .bind::<Array<Text>, _>(column!(note))
        .bind::<Array<SmallInt>, _>(column!(status))
        .bind::<Array<Nullable<SqlUuid>>, _>(column!(batch_id))
        .bind::<Array<Text>, _>(column!(provider_reference))
        .bind::<Array<Bool>, _>(column!(duplicate))
        .bind::<Array<Timestamptz>, _>(column!(created_at))
        .bind::<Array<Timestamptz>, _>(column!(updated_at))
        .bind::<Array<Nullable<Timestamptz>>, _>(column!(submitted_at))
        .bind::<Array<Bool>, _>(column!(receiver_is_invalid))
        .bind::<Array<Nullable<Text>>, _>(column!(failure_reason))
        .bind::<Array<Nullable<Text>>, _>(column!(return_code))
}

/// Binds the keys to mark committed as the four arrays `sql/mark_keys_committed.sql` unnests (keys,
/// leases, answer statuses and bodies, null where the answer does not render), as the next
/// parameters.
fn bind_key_commits<'f>(query: BoxedSql<'f>, commits: &[KeyCommit<'_>]) -> BoxedSql<'f> {
    let keys: Vec<String> = commits
        .iter()
        .map(|c| c.claim.key.as_str().to_owned())
        .collect();
    let leases: Vec<DateTime<Utc>> = commits.iter().map(|c| c.claim.lease_until).collect();
    let statuses: Vec<Option<i16>> = commits
        .iter()
        .map(|c| {
            c.response
                .as_ref()
                .map(crate::stores::idempotency::status_column)
        })
        .collect();
    let bodies: Vec<Option<Vec<u8>>> = commits
        .iter()
        .map(|c| c.response.as_ref().map(|r| r.body.clone()))
        .collect();
    query
        .bind::<Array<Text>, _>(keys)
        .bind::<Array<Timestamptz>, _>(leases)
        .bind::<Array<Nullable<SmallInt>>, _>(statuses)
        .bind::<Array<Nullable<Bytea>>, _>(bodies)
}

/// Binds the requests a set admits ([`KeyAdmission`]) as the nine arrays `sql/write_set.sql` unnests
/// (`$47`–`$55`: the nonces' API keys, nonces and times seen; the keys, the fingerprints of
/// their requests, when they were recorded and until when they answer retries, and their
/// answers' statuses and bodies), as the next parameters.
fn bind_admissions<'f>(query: BoxedSql<'f>, admissions: &[KeyAdmission<'_>]) -> BoxedSql<'f> {
    macro_rules! column {
        ($value:expr) => {
            admissions.iter().map($value).collect::<Vec<_>>()
        };
    }
    query
        .bind::<Array<SqlUuid>, _>(column!(|a| a.admission.nonce.api_key.as_uuid()))
        .bind::<Array<BigInt>, _>(column!(|a| a.admission.nonce.nonce))
        .bind::<Array<Timestamptz>, _>(column!(|a| a.admission.nonce.seen_at))
        .bind::<Array<Text>, _>(column!(|a| a.admission.key.as_str().to_owned()))
        .bind::<Array<Bytea>, _>(column!(|a| a.admission.fingerprint.to_vec()))
        .bind::<Array<Timestamptz>, _>(column!(|a| a.admission.at))
        .bind::<Array<Timestamptz>, _>(column!(|a| a.admission.expires_at()))
        .bind::<Array<SmallInt>, _>(column!(|a| crate::stores::idempotency::status_column(
            &a.response
        )))
        .bind::<Array<Bytea>, _>(column!(|a| a.response.body.clone()))
}

/// Binds the rule of [`party_status`] as the next five parameters, the values
/// `sql/write_set_at_once.sql` (`$57`–`$61`) and `sql/as_planned_check.sql` (`$1`–`$5`) check a
/// payout's parties with: the receiver statuses that may not be paid, the account status that
/// may not be paid, the status a new payout starts in by (KYC completed, account confirmed),
/// the completed KYC status and the confirmed confirmation status.
pub(crate) fn bind_party_rule(query: BoxedSql<'_>) -> BoxedSql<'_> {
    let initial = [(false, false), (false, true), (true, false), (true, true)]
        .map(|(kyc, confirmed)| i16::from(initial_status(kyc, confirmed).code()));
    query
        .bind::<Array<SmallInt>, _>(UNPAYABLE_RECEIVERS.map(|s| i16::from(s.code())).to_vec())
        .bind::<Text, _>(AccountStatus::Failed.as_str())
        .bind::<Array<SmallInt>, _>(initial.to_vec())
        .bind::<SmallInt, _>(i16::from(KycStatus::Completed.code()))
        .bind::<Text, _>(ConfirmStatus::Confirmed.as_str())
}
