//! Bulk seeding: receivers and receiver accounts inserted in batches, each batch one
//! `INSERT ... SELECT FROM unnest(<arrays>)` statement.
//!
//! Rows are exactly what the service stores on create: the account values are sealed and
//! fingerprinted with the storage crate's own [`Vault`] (same master key as the server, same
//! associated data, same fingerprint labels and "details" string as `adapters-postgres`'s
//! `AccountStore::insert_account`), after the domain's parsing and normalisation. What create
//! also writes but no read path in the measured scenarios uses is left out: confirmation tokens
//! and outbox events. [`check_with_store`] reads seeded rows back through the real store to
//! prove they are what the service expects.

pub mod generate;
pub mod payouts;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{DateTime, NaiveDate, Utc};
use diesel::sql_types::{
    Array, Bytea, Date, Nullable, SmallInt, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use domain::account::AccountField;
use domain::masking::Secret;
use uuid::Uuid;

use adapters_postgres::Vault;

use crate::db::BenchDb;
use generate::{AccountSeed, Generator, ReceiverSeed};

/// Rows per INSERT statement.
const BATCH: u64 = 2_000;
/// Connections inserting at once (each also builds its own batches).
const WORKERS: u64 = 3;

/// The vault `payoutd` builds from `PAYOUT_MASTER_KEY` (64 hex characters).
pub fn vault(master_key_hex: &str) -> anyhow::Result<Vault> {
    let mut key = [0u8; 32];
    hex::decode_to_slice(master_key_hex, &mut key).context("master key is not 64 hex digits")?;
    Vault::new(&Secret::new(key)).map_err(|e| anyhow::anyhow!("building the vault: {e}"))
}

/// The vault of a server rotating from `previous_hex` to `current_hex`: it seals with the
/// current key and looks fingerprints up under both.
pub fn vault_rotating(current_hex: &str, previous_hex: &str) -> anyhow::Result<Vault> {
    let mut current = [0u8; 32];
    hex::decode_to_slice(current_hex, &mut current).context("master key is not 64 hex digits")?;
    let mut previous = [0u8; 32];
    hex::decode_to_slice(previous_hex, &mut previous)
        .context("previous master key is not 64 hex digits")?;
    Vault::with_previous(&Secret::new(current), Some(&Secret::new(previous)))
        .map_err(|e| anyhow::anyhow!("building the vault: {e}"))
}

/// A `receiver_accounts` row, column for column.
struct AccountRow {
    id: Uuid,
    receiver_id: Uuid,
    method: &'static str,
    asset: &'static str,
    status: &'static str,
    confirm_status: &'static str,
    data_ciphertext: Vec<u8>,
    details_fingerprint: Vec<u8>,
    /// In `AccountField::matchable_fields()` order: bsb, account_number, routing_number,
    /// account_type, iban, bic, recipient.
    fingerprints: [Option<Vec<u8>>; 7],
    created_at: DateTime<Utc>,
}

/// What `adapters-postgres` stores for `account` (see `AccountRow::new` in its account store).
fn account_row(vault: &Vault, account: &AccountSeed) -> anyhow::Result<AccountRow> {
    let context = [b"account:".as_slice(), account.id.as_bytes()].concat();
    let pairs: Vec<(&str, &str)> = account
        .data
        .expose_pairs()
        .into_iter()
        .map(|(field, value)| (field.name(), value))
        .collect();
    let plain = serde_json::to_vec(&pairs)?;
    let data_ciphertext = vault
        .seal(&plain, &context)
        .map_err(|e| anyhow::anyhow!("sealing account {}: {e}", account.id))?;
    let mut details = account.method.name().to_owned();
    for (field, value) in account.data.expose_matchable() {
        details.push('\0');
        details.push_str(field.name());
        details.push('=');
        details.push_str(value);
    }
    let mut fingerprints: [Option<Vec<u8>>; 7] = Default::default();
    for (slot, field) in fingerprints
        .iter_mut()
        .zip(AccountField::matchable_fields())
    {
        *slot = account
            .data
            .expose(field)
            .map(|value| vault.fingerprint(field.name(), value));
    }
    Ok(AccountRow {
        id: account.id,
        receiver_id: account.receiver_id,
        method: account.method.name(),
        asset: account.method.asset().code(),
        status: account.status.as_str(),
        confirm_status: account.confirm_status.as_str(),
        data_ciphertext,
        details_fingerprint: vault.fingerprint("details", &details),
        fingerprints,
        created_at: account.created_at,
    })
}

/// One batch, ready to insert.
struct Batch {
    receivers: Vec<ReceiverSeed>,
    accounts: Vec<AccountRow>,
}

fn build_batch(
    generator: &Generator,
    vault: &Vault,
    range: std::ops::Range<u64>,
) -> anyhow::Result<Batch> {
    let mut receivers = Vec::with_capacity(range.clone().count());
    let mut accounts = Vec::with_capacity(receivers.capacity());
    for i in range {
        receivers.push(generator.receiver(i));
        accounts.push(account_row(vault, &generator.account(i)?)?);
    }
    Ok(Batch {
        receivers,
        accounts,
    })
}

const INSERT_RECEIVERS: &str = "\
INSERT INTO receivers (id, subaccount_id, first_name, middle_name, last_name, email, gender, dob,
    dialcode, phone, address, address2, city, state, country, postcode, reference, applicant_id,
    status, kyc_status, created_at, updated_at, email_normalized)
SELECT t.id, $1, t.first_name, '', t.last_name, t.email, t.gender, t.dob, t.dialcode, t.phone,
    t.address, '', t.city, t.state, t.country, t.postcode, t.reference, t.applicant_id, t.status,
    t.kyc_status, t.created_at, t.created_at, lower(t.email)
FROM unnest($2::uuid[], $3::text[], $4::text[], $5::text[], $6::text[], $7::date[], $8::text[],
    $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[],
    $16::text[], $17::smallint[], $18::smallint[], $19::timestamptz[])
    AS t(id, first_name, last_name, email, gender, dob, dialcode, phone, address, city, state,
    country, postcode, reference, applicant_id, status, kyc_status, created_at)";

const INSERT_ACCOUNTS: &str = "\
INSERT INTO receiver_accounts (id, subaccount_id, receiver_id, method, asset, status,
    confirm_status, data_ciphertext, details_fingerprint, fp_bsb, fp_account_number,
    fp_routing_number, fp_account_type, fp_iban, fp_bic, fp_recipient, created_at, updated_at)
SELECT t.id, $1, t.receiver_id, t.method, t.asset, t.status, t.confirm_status, t.data_ciphertext,
    t.details_fingerprint, t.fp_bsb, t.fp_account_number, t.fp_routing_number, t.fp_account_type,
    t.fp_iban, t.fp_bic, t.fp_recipient, t.created_at, t.created_at
FROM unnest($2::uuid[], $3::uuid[], $4::text[], $5::text[], $6::text[], $7::text[], $8::bytea[],
    $9::bytea[], $10::bytea[], $11::bytea[], $12::bytea[], $13::bytea[], $14::bytea[],
    $15::bytea[], $16::bytea[], $17::timestamptz[])
    AS t(id, receiver_id, method, asset, status, confirm_status, data_ciphertext,
    details_fingerprint, fp_bsb, fp_account_number, fp_routing_number, fp_account_type, fp_iban,
    fp_bic, fp_recipient, created_at)";

/// Column `f` of every row.
fn column<R, T>(rows: &[R], f: impl Fn(&R) -> T) -> Vec<T> {
    rows.iter().map(f).collect()
}

async fn insert(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    batch: Batch,
) -> anyhow::Result<()> {
    let r = &batch.receivers;
    diesel::sql_query(INSERT_RECEIVERS)
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<SqlUuid>, _>(column(r, |x| x.id))
        .bind::<Array<Text>, _>(column(r, |x| x.first_name.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.last_name.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.email.clone()))
        .bind::<Array<Nullable<Text>>, _>(column(r, |x| x.gender.clone()))
        .bind::<Array<Date>, _>(column::<_, NaiveDate>(r, |x| x.dob))
        .bind::<Array<Text>, _>(column(r, |x| x.dialcode.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.phone.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.address.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.city.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.state.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.country.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.postcode.clone()))
        .bind::<Array<Nullable<Text>>, _>(column(r, |x| x.reference.clone()))
        .bind::<Array<Text>, _>(column(r, |x| x.applicant_id.clone()))
        .bind::<Array<SmallInt>, _>(column(r, |x| x.status))
        .bind::<Array<SmallInt>, _>(column(r, |x| x.kyc_status))
        .bind::<Array<Timestamptz>, _>(column(r, |x| x.created_at))
        .execute(conn)
        .await
        .context("inserting receivers")?;
    let a = &batch.accounts;
    let fp = |k: usize| column(a, move |x: &AccountRow| x.fingerprints[k].clone());
    diesel::sql_query(INSERT_ACCOUNTS)
        .bind::<SqlUuid, _>(subaccount)
        .bind::<Array<SqlUuid>, _>(column(a, |x| x.id))
        .bind::<Array<SqlUuid>, _>(column(a, |x| x.receiver_id))
        .bind::<Array<Text>, _>(column(a, |x| x.method))
        .bind::<Array<Text>, _>(column(a, |x| x.asset))
        .bind::<Array<Text>, _>(column(a, |x| x.status))
        .bind::<Array<Text>, _>(column(a, |x| x.confirm_status))
        .bind::<Array<Bytea>, _>(column(a, |x| x.data_ciphertext.clone()))
        .bind::<Array<Bytea>, _>(column(a, |x| x.details_fingerprint.clone()))
        .bind::<Array<Nullable<Bytea>>, _>(fp(0))
        .bind::<Array<Nullable<Bytea>>, _>(fp(1))
        .bind::<Array<Nullable<Bytea>>, _>(fp(2))
        .bind::<Array<Nullable<Bytea>>, _>(fp(3))
        .bind::<Array<Nullable<Bytea>>, _>(fp(4))
        .bind::<Array<Nullable<Bytea>>, _>(fp(5))
        .bind::<Array<Nullable<Bytea>>, _>(fp(6))
        .bind::<Array<Timestamptz>, _>(column(a, |x| x.created_at))
        .execute(conn)
        .await
        .context("inserting receiver accounts")?;
    Ok(())
}

/// How seeding went.
#[derive(Debug, Clone, Copy)]
pub struct SeedReport {
    /// Receivers (and accounts) inserted.
    pub rows: u64,
    /// Wall time of the inserts.
    pub insert: Duration,
    /// Wall time of the `VACUUM (ANALYZE)` that followed.
    pub vacuum_analyze: Duration,
}

/// Inserts receivers and accounts `0..generator.seeded` into `subaccount`, then runs
/// `VACUUM (ANALYZE)` on both tables (a long-lived table has been vacuumed and analysed by
/// autovacuum; a freshly loaded one has neither statistics nor a visibility map).
pub async fn seed(
    db: &BenchDb,
    vault: Arc<Vault>,
    subaccount: Uuid,
    generator: &Generator,
) -> anyhow::Result<SeedReport> {
    let started = Instant::now();
    let total = generator.seeded;
    let batches = total.div_ceil(BATCH);
    let done = Arc::new(AtomicU64::new(0));
    let progress = {
        let done = Arc::clone(&done);
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(15)).await;
                let rows = AtomicU64::load(&done, Ordering::Relaxed);
                eprintln!(
                    "payoutd-bench:   {rows} of {total} rows after {:.0} s",
                    started.elapsed().as_secs_f64()
                );
            }
        })
    };
    let mut workers = Vec::new();
    for worker in 0..WORKERS.min(batches.max(1)) {
        let (db, vault, generator) = (db.clone(), Arc::clone(&vault), generator.clone());
        let done = Arc::clone(&done);
        workers.push(tokio::spawn(async move {
            let mut conn = db.connect().await?;
            // Bench data only: commits need not wait for the WAL flush.
            conn.batch_execute("SET synchronous_commit = off").await?;
            let mut batch = worker;
            while batch < batches {
                let range = batch * BATCH..((batch + 1) * BATCH).min(total);
                let (g, v) = (generator.clone(), Arc::clone(&vault));
                let count = range.end - range.start;
                let rows = tokio::task::spawn_blocking(move || build_batch(&g, &v, range))
                    .await
                    .context("a seeding task panicked")??;
                insert(&mut conn, subaccount, rows).await?;
                done.fetch_add(count, Ordering::Relaxed);
                batch += WORKERS;
            }
            anyhow::Ok(())
        }));
    }
    let mut result = Ok(());
    for worker in workers {
        let outcome = worker
            .await
            .context("a seeding worker panicked")
            .and_then(|inner| inner);
        if result.is_ok() {
            result = outcome;
        }
    }
    progress.abort();
    result?;
    let insert = started.elapsed();
    let vacuum_started = Instant::now();
    db.execute("VACUUM (ANALYZE) receivers, receiver_accounts")
        .await?;
    Ok(SeedReport {
        rows: total,
        insert,
        vacuum_analyze: vacuum_started.elapsed(),
    })
}

/// Reads a few seeded accounts and receivers back through `adapters-postgres`'s own store
/// (which decrypts and parses them) and checks they are the generated ones, and that the
/// store's verify lookup finds an account by its fingerprints.
pub async fn check_with_store(
    db: &BenchDb,
    vault: Arc<Vault>,
    subaccount: Uuid,
    generator: &Generator,
) -> anyhow::Result<()> {
    use domain::account::ports::AccountStore;
    use domain::ids::{ReceiverAccountId, ReceiverId, SubaccountId};
    use domain::receiver::ports::ReceiverStore;

    let mut config = adapters_postgres::DbConfig::new(db.url.clone());
    config.max_size = 1;
    let store = adapters_postgres::PgStore::new(adapters_postgres::create_pool(&config)?, vault);
    let subaccount = SubaccountId::from_uuid(subaccount);
    let n = generator.seeded;
    for i in [0, n / 3, n / 2, n.saturating_sub(1)] {
        let expected = generator.account(i)?;
        let found = store
            .find_account(subaccount, ReceiverAccountId::from_uuid(expected.id))
            .await
            .map_err(|e| anyhow::anyhow!("reading seeded account {i}: {e}"))?
            .with_context(|| format!("seeded account {i} is not found by the store"))?;
        anyhow::ensure!(
            found.data == expected.data
                && found.method == expected.method
                && found.receiver_id.as_uuid() == expected.receiver_id,
            "seeded account {i} reads back differently"
        );
        let fields: Vec<(AccountField, String)> = found
            .data
            .expose_matchable()
            .map(|(field, value)| (field, value.to_owned()))
            .collect();
        let matched = store
            .find_first_match(subaccount, &fields)
            .await
            .map_err(|e| anyhow::anyhow!("matching seeded account {i}: {e}"))?;
        anyhow::ensure!(
            matched.is_some(),
            "the store's verify lookup does not find seeded account {i}"
        );
        store
            .find_receiver(subaccount, ReceiverId::from_uuid(expected.receiver_id))
            .await
            .map_err(|e| anyhow::anyhow!("reading seeded receiver {i}: {e}"))?
            .with_context(|| format!("seeded receiver {i} is not found by the store"))?;
    }
    Ok(())
}
