//! Bulk payouts: payouts of one subaccount to receivers seeded with
//! [`Generator::with_sql_ids`](super::generate::Generator::with_sql_ids), inserted by SQL alone
//! (a payout row holds nothing encrypted), with what creating them also writes that a read path
//! uses: the `payout_hold` and `fee_hold` ledger entries and the hold on the balance.
//!
//! Payout `j` has the id `md5(tag || 'p' || j)::uuid` ([`super::generate::sql_uuid`]) and goes
//! to receiver `j % receivers` and its account, in the account's currency, for an amount of 1 to
//! 1 000 units with the subaccount's fee template for that currency (which must exist, as must
//! a balance large enough). Payouts are `pending` (KYC done, account confirmed), 30 days apart
//! in total, newest last, each with a unique `reference`. Their `payoutCreated` events are not
//! written: nothing measured reads them, and the delivery worker would only skip them.

use std::time::{Duration, Instant};

use anyhow::Context;
use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{RunQueryDsl, SimpleAsyncConnection};
use uuid::Uuid;

use crate::db::BenchDb;

/// Payouts per INSERT statement.
const BATCH: u64 = 25_000;

const INSERT_PAYOUTS: &str = "\
INSERT INTO payouts (id, subaccount_id, receiver_id, account_id, asset, amount, fee,
    fee_template_id, fee_group_id, fee_fixed, fee_percentage, fee_min_amount, reference, note,
    status, batch_id, provider_reference, duplicate, created_at, updated_at)
SELECT md5($2 || 'p' || j)::uuid, $1, a.receiver_id, a.id, a.asset, v.amount,
    greatest(t.fixed + (v.amount * t.percentage + 500000) / 1000000, t.min_amount),
    t.id, t.group_id, t.fixed, t.percentage, t.min_amount, 'INV-' || j, '', 1, NULL, '', false,
    v.at, v.at
FROM generate_series($3::bigint, $4::bigint) AS j
JOIN receiver_accounts a ON a.subaccount_id = $1 AND a.id = md5($2 || 'a' || (j % $5))::uuid
JOIN fee_templates t ON t.subaccount_id = $1 AND t.asset = a.asset
CROSS JOIN LATERAL (SELECT 100 + (j * 7919) % 99900 AS amount,
    now() - interval '30 days 1 hour' + j * (interval '30 days' / $6::float8) AS at) AS v";

const INSERT_ENTRIES: &str = "\
INSERT INTO ledger_entries (id, subaccount_id, asset, kind, available_delta, pending_delta,
    payout_id, created_at)
SELECT md5(p.id::text || e.kind)::uuid, p.subaccount_id, p.asset, e.kind, -e.delta, e.delta,
    p.id, p.created_at
FROM payouts AS p
CROSS JOIN LATERAL (VALUES ('payout_hold', p.amount), ('fee_hold', p.fee)) AS e(kind, delta)
WHERE p.subaccount_id = $1 AND e.delta > 0
ORDER BY p.created_at, e.kind DESC";

const HOLD_BALANCES: &str = "\
UPDATE balances AS b SET available = b.available - s.total, pending = b.pending + s.total
FROM (SELECT asset, sum(amount + fee) AS total FROM payouts WHERE subaccount_id = $1
      GROUP BY asset) AS s
WHERE b.subaccount_id = $1 AND b.asset = s.asset";

/// Inserts `payouts` payouts (see the module docs); returns how long that took, including the
/// `VACUUM (ANALYZE)` of the tables written.
pub async fn seed_payouts(
    db: &BenchDb,
    subaccount: Uuid,
    tag: &str,
    receivers: u64,
    payouts: u64,
) -> anyhow::Result<Duration> {
    anyhow::ensure!(receivers > 0, "payouts need receivers");
    let started = Instant::now();
    let mut conn = db.connect().await?;
    // Bench data only: commits need not wait for the WAL flush.
    conn.batch_execute("SET synchronous_commit = off").await?;
    let mut first = 0;
    while first < payouts {
        let last = (first + BATCH).min(payouts) - 1;
        let inserted = diesel::sql_query(INSERT_PAYOUTS)
            .bind::<SqlUuid, _>(subaccount)
            .bind::<Text, _>(tag)
            .bind::<BigInt, _>(i64::try_from(first)?)
            .bind::<BigInt, _>(i64::try_from(last)?)
            .bind::<BigInt, _>(i64::try_from(receivers)?)
            .bind::<diesel::sql_types::Double, _>(payouts as f64)
            .execute(&mut conn)
            .await
            .context("inserting payouts")?;
        anyhow::ensure!(
            inserted as u64 == last + 1 - first,
            "inserted {inserted} of payouts {first}..={last}: a receiver account or fee template is missing"
        );
        first = last + 1;
    }
    diesel::sql_query(INSERT_ENTRIES)
        .bind::<SqlUuid, _>(subaccount)
        .execute(&mut conn)
        .await
        .context("inserting the payouts' ledger entries")?;
    diesel::sql_query(HOLD_BALANCES)
        .bind::<SqlUuid, _>(subaccount)
        .execute(&mut conn)
        .await
        .context("holding the payouts on the balances")?;
    conn.batch_execute("VACUUM (ANALYZE) payouts, ledger_entries, balances")
        .await
        .context("VACUUM ANALYZE after seeding payouts")?;
    Ok(started.elapsed())
}
