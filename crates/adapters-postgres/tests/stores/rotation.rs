//! Master key rotation (`PgStore::rotate_master_key`): every sealed column and fingerprint
//! moves to the current key; reads and lookups work under both keys meanwhile; a rotation
//! stopped midway is completed by the next run; a row that cannot be opened is named; updates
//! made while it runs are kept.

use std::sync::Arc;
use std::time::Duration;

use adapters_postgres::{DbConfig, PgStore, SealedTable, Vault, create_pool};
use diesel::sql_types::{Bytea, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::account::AccountField;
use domain::account::ports::{AccountStore, InsertAccountError};
use domain::auth::ports::{ApiKeyStore, CredentialStore};
use domain::delivery::ports::WebhookEndpointStore;
use domain::events::EventKind;
use domain::idempotency::WriteKey;
use domain::ids::SubaccountId;
use domain::masking::Secret;
use domain::operators::ports::OperatorStore;
use uuid::Uuid;

use crate::accounts::{confirmation, direct_entry, event, new_receiver, queued};
use crate::support::{Fixture, MASTER_KEY, admin, at, audit_entry};

const NEW_KEY: [u8; 32] = [42; 32];
const T0: i64 = 1_700_000_000_123_456;

/// A store whose vault seals with `current` and also reads `previous`.
fn store_with(url: &str, current: [u8; 32], previous: Option<[u8; 32]>) -> PgStore {
    let pool = create_pool(&DbConfig::new(url)).expect("pool");
    let previous = previous.map(Secret::new);
    let vault = Vault::with_previous(&Secret::new(current), previous.as_ref()).expect("vault");
    PgStore::new(pool, Arc::new(vault))
}

fn vault(key: [u8; 32]) -> Vault {
    Vault::new(&Secret::new(key)).expect("vault")
}

#[derive(diesel::QueryableByName)]
struct Sealed {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Text)]
    kind: String,
    #[diesel(sql_type = Bytea)]
    sealed: Vec<u8>,
}

/// Every sealed value in the database, with the associated data it was sealed with.
async fn every_sealed_value(fx: &Fixture) -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut conn = fx.raw().await;
    let rows: Vec<Sealed> = diesel::sql_query(
        "SELECT id, 'api' AS kind, secret_ciphertext AS sealed FROM api_keys \
         UNION ALL SELECT subaccount_id, 'webhook', secret FROM webhook_endpoints \
         UNION ALL SELECT subaccount_id, 'webhook', previous_secret FROM webhook_endpoints \
           WHERE previous_secret IS NOT NULL \
         UNION ALL SELECT id, 'account', data_ciphertext FROM receiver_accounts \
         UNION ALL SELECT id, 'notification', recipient_ciphertext FROM notifications \
         UNION ALL SELECT id, 'notification-link', link_ciphertext FROM notifications \
         UNION ALL SELECT id, 'operator-totp', totp_secret_ciphertext FROM operators",
    )
    .load(&mut conn)
    .await
    .unwrap();
    rows.into_iter()
        .map(|r| {
            let context = match r.kind.as_str() {
                "api" => r.id.as_bytes().to_vec(),
                other => [other.as_bytes(), b":", r.id.as_bytes()].concat(),
            };
            (r.sealed, context)
        })
        .collect()
}

/// Subaccounts with API keys (one of them sealed before key ids existed), webhook secrets (one
/// rotated, so with a previous secret) and accounts with their notifications, all under the
/// old key. Returns the subaccount, its API keys and secrets, and the accounts.
struct Seeded {
    sub: SubaccountId,
    keys: Vec<(String, String)>,
    accounts: Vec<domain::account::ReceiverAccount>,
}

async fn seed(fx: &Fixture, api_keys: usize, accounts: usize) -> Seeded {
    let sub = fx.subaccount("Acme").await.id;
    let admin = admin(&fx.store);
    let mut keys = Vec::new();
    for _ in 0..api_keys {
        let issued = admin.issue_key(sub).await.unwrap();
        keys.push((issued.api_key, issued.api_secret.expose().clone()));
    }
    // The first key as written before ciphertexts named their key.
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "UPDATE api_keys SET secret_ciphertext = substring(secret_ciphertext from 6) \
         WHERE api_key = $1",
    )
    .bind::<diesel::sql_types::Text, _>(&keys[0].0)
    .execute(&mut conn)
    .await
    .unwrap();
    fx.store
        .set_webhook(
            sub,
            "https://hooks.example.com/a",
            &Secret::new("whsec_a".to_owned()),
            &audit_entry(),
        )
        .await
        .unwrap();
    fx.store
        .rotate_webhook_secret(
            sub,
            &Secret::new("whsec_b".to_owned()),
            at(T0 + 3_600_000_000),
            &audit_entry(),
        )
        .await
        .unwrap();
    let owner = new_receiver(fx, sub, "ada@example.com").await;
    let mut stored = Vec::new();
    for i in 0..accounts {
        let a = direct_entry(
            &owner,
            "012-002",
            &format!("{}", 10_000_000 + i),
            T0 + i as i64,
        );
        insert_with(&fx.store, &a).await.unwrap();
        stored.push(a);
    }
    Seeded {
        sub,
        keys,
        accounts: stored,
    }
}

async fn insert_with(
    store: &PgStore,
    a: &domain::account::ReceiverAccount,
) -> Result<(), InsertAccountError> {
    store
        .insert_account(
            a,
            &confirmation(a),
            &[event(EventKind::AccountCreated, a, a.created_at)],
            &queued(a),
            &WriteKey::none(),
        )
        .await
}

fn value(a: &domain::account::ReceiverAccount, field: AccountField) -> String {
    a.data.expose(field).expect("field set").to_owned()
}

/// Everything `store` must be able to read of `seeded`: API secrets, accounts, verify lookups.
async fn assert_reads_all(store: &PgStore, seeded: &Seeded) {
    for (api_key, secret) in &seeded.keys {
        let credential = store
            .find_credential(api_key)
            .await
            .unwrap()
            .expect("key found");
        assert_eq!(credential.secret.expose(), secret);
    }
    for a in &seeded.accounts {
        let found = store
            .find_account(seeded.sub, a.id)
            .await
            .unwrap()
            .expect("account");
        assert_eq!(found.data.expose_pairs(), a.data.expose_pairs());
        let matched = store
            .find_first_match(
                seeded.sub,
                &[
                    (AccountField::Bsb, value(a, AccountField::Bsb)),
                    (
                        AccountField::AccountNumber,
                        value(a, AccountField::AccountNumber),
                    ),
                ],
            )
            .await
            .unwrap()
            .expect("verify finds the account");
        assert_eq!(matched.id, a.id);
    }
}

fn old_only_store(fx: &Fixture) -> PgStore {
    store_with(fx.db.url(), MASTER_KEY, None)
}

/// A console operator (its TOTP secret sealed) written by `store`.
async fn console_operator(store: &PgStore) -> domain::operators::Operator {
    use domain::audit::{AuditAction, AuditContext};
    use domain::operators::{
        BrowserSecret, Operator, OperatorEmail, OperatorStatus, OperatorTimeZone, Role, TotpSecret,
    };
    let operator = Operator {
        id: domain::ids::OperatorId::from_uuid(Uuid::new_v4()),
        email: OperatorEmail::parse("ops@example.com").unwrap(),
        role: Role::Admin,
        status: OperatorStatus::Invited,
        password_hash: None,
        totp_secret: TotpSecret::from_bytes(vec![5; 20]).unwrap(),
        last_totp_step: None,
        time_zone: OperatorTimeZone::UTC,
        created_at: chrono::Utc::now(),
        enrolled_at: None,
        disabled_at: None,
    };
    let clock = crate::support::FixedClock(chrono::Utc::now());
    let audit = AuditContext::cli(None).entry(
        &crate::support::RandomIds,
        &clock,
        AuditAction::OperatorCreated,
        "operator",
        operator.id,
        None,
        None,
    );
    let token = BrowserSecret::parse(&"t".repeat(43)).unwrap();
    let expires = chrono::Utc::now() + chrono::Duration::hours(1);
    assert!(
        store
            .insert_operator(&operator, &token.key(), expires, &audit)
            .await
            .unwrap()
    );
    operator
}

#[tokio::test]
async fn a_rotation_moves_every_secret_account_and_fingerprint_to_the_new_key() {
    let fx = Fixture::new().await;
    let seeded = seed(&fx, 3, 4).await;
    let operator = console_operator(&fx.store).await;
    let both = store_with(fx.db.url(), NEW_KEY, Some(MASTER_KEY));
    assert_eq!(both.rotated_to_current_key().await.unwrap(), None);

    // Before the rotation, the instance with both keys reads everything, finds duplicates of
    // accounts fingerprinted under the old key, and writes under the new key.
    assert_reads_all(&both, &seeded).await;
    let owner_again = seeded.accounts[0].clone();
    let duplicate = domain::account::ReceiverAccount {
        id: domain::ids::ReceiverAccountId::from_uuid(Uuid::new_v4()),
        ..owner_again
    };
    assert!(matches!(
        insert_with(&both, &duplicate).await,
        Err(InsertAccountError::Duplicate)
    ));
    let issued = admin(&both).issue_key(seeded.sub).await.unwrap();
    let mut seeded = seeded;
    seeded
        .keys
        .push((issued.api_key, issued.api_secret.expose().clone()));
    assert_reads_all(&both, &seeded).await;

    let mut batches = 0;
    let summary = both
        .rotate_master_key(2, Duration::ZERO, |_, _| batches += 1)
        .await
        .unwrap();
    let rotated: Vec<(&str, u64, u64)> = summary
        .tables
        .iter()
        .map(|t| (t.table, t.rotated, t.remaining))
        .collect();
    // The key issued with the new key needed nothing; the webhook row holds two secrets.
    assert_eq!(
        rotated,
        vec![
            ("api_keys", 3, 0),
            ("webhook_endpoints", 1, 0),
            ("receiver_accounts", 4, 0),
            ("notifications", 4, 0),
            ("operators", 1, 0),
        ]
    );
    assert!(summary.complete() && summary.failures.is_empty());
    assert!(batches >= 6, "small batches: {batches}");

    // Every sealed value now opens with the new key alone, and no longer with the old one.
    let sealed = every_sealed_value(&fx).await;
    assert_eq!(sealed.len(), 4 + 2 + 4 + 4 + 4 - 4 + 4 + 1);
    let (new, old) = (vault(NEW_KEY), vault(MASTER_KEY));
    for (value, context) in &sealed {
        assert!(new.is_current(value));
        assert!(new.open(value, context).is_ok());
        assert!(old.open(value, context).is_err());
    }
    let new_only = store_with(fx.db.url(), NEW_KEY, None);
    assert_reads_all(&new_only, &seeded).await;
    let read = OperatorStore::operator(&new_only, operator.id)
        .await
        .unwrap();
    assert_eq!(
        read.map(|o| o.totp_secret),
        Some(operator.totp_secret.clone())
    );
    assert!(
        OperatorStore::operator(&old_only_store(&fx), operator.id)
            .await
            .is_err()
    );
    // The unique index compares details again: all fingerprints are under the new key.
    assert!(matches!(
        insert_with(&new_only, &duplicate).await,
        Err(InsertAccountError::Duplicate)
    ));
    let old_only = store_with(fx.db.url(), MASTER_KEY, None);
    assert!(old_only.find_credential(&seeded.keys[0].0).await.is_err());
    assert!(
        old_only
            .find_account(seeded.sub, seeded.accounts[0].id)
            .await
            .is_err()
    );

    // Completion is recorded for the new key; a second run has nothing to do.
    assert!(new_only.rotated_to_current_key().await.unwrap().is_some());
    assert_eq!(old_only.rotated_to_current_key().await.unwrap(), None);
    let again = both
        .rotate_master_key(2, Duration::ZERO, |_, _| {})
        .await
        .unwrap();
    assert!(again.complete());
    assert!(again.tables.iter().all(|t| t.rotated == 0));
}

#[tokio::test]
async fn a_rotation_stopped_after_one_batch_is_completed_by_the_next_run() {
    let fx = Fixture::new().await;
    let seeded = seed(&fx, 7, 3).await;
    let both = store_with(fx.db.url(), NEW_KEY, Some(MASTER_KEY));

    // One batch of two keys, then the run "dies".
    let first = both
        .rotate_master_key_batch(SealedTable::ApiKeys, Uuid::nil(), 2)
        .await
        .unwrap();
    assert_eq!(first.rotated, 2);
    assert!(first.failures.is_empty());
    assert_eq!(
        both.rows_under_other_keys(SealedTable::ApiKeys)
            .await
            .unwrap(),
        5
    );
    assert_eq!(
        both.rows_under_other_keys(SealedTable::ReceiverAccounts)
            .await
            .unwrap(),
        3
    );
    // Half-rotated: the instance with both keys still reads everything; nothing is recorded.
    assert_reads_all(&both, &seeded).await;
    assert_eq!(both.rotated_to_current_key().await.unwrap(), None);
    let new_only = store_with(fx.db.url(), NEW_KEY, None);
    let mut opened = 0;
    for (api_key, _) in &seeded.keys {
        opened += usize::from(new_only.find_credential(api_key).await.is_ok());
    }
    assert_eq!(
        opened, 2,
        "only the rotated keys open with the new key alone"
    );

    let summary = both
        .rotate_master_key(3, Duration::ZERO, |_, _| {})
        .await
        .unwrap();
    assert_eq!(
        summary.tables[0].rotated, 5,
        "the rest of the keys, not the first two again"
    );
    assert_eq!(summary.tables[2].rotated, 3);
    assert!(summary.complete());
    assert_reads_all(&new_only, &seeded).await;
    assert!(new_only.rotated_to_current_key().await.unwrap().is_some());
}

#[tokio::test]
async fn a_row_that_cannot_be_opened_is_named_and_the_rotation_is_incomplete() {
    let fx = Fixture::new().await;
    let seeded = seed(&fx, 3, 2).await;
    // One API secret sealed by a key nobody has any more.
    let stranger = vault([9; 32]);
    let mut conn = fx.raw().await;
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = SqlUuid)]
        id: Uuid,
    }
    let lost: Id = diesel::sql_query("SELECT id FROM api_keys WHERE api_key = $1")
        .bind::<diesel::sql_types::Text, _>(&seeded.keys[1].0)
        .get_result(&mut conn)
        .await
        .unwrap();
    let foreign = stranger.seal(b"sk_lost", lost.id.as_bytes()).unwrap();
    diesel::sql_query("UPDATE api_keys SET secret_ciphertext = $1 WHERE id = $2")
        .bind::<Bytea, _>(&foreign)
        .bind::<SqlUuid, _>(lost.id)
        .execute(&mut conn)
        .await
        .unwrap();

    let both = store_with(fx.db.url(), NEW_KEY, Some(MASTER_KEY));
    let summary = both
        .rotate_master_key(1, Duration::ZERO, |_, _| {})
        .await
        .unwrap();
    assert!(!summary.complete());
    assert_eq!(summary.remaining(), 1);
    assert_eq!(summary.failures.len(), 1);
    assert_eq!(summary.failures[0].table, "api_keys");
    assert_eq!(summary.failures[0].row, lost.id);
    assert!(!summary.failures[0].problem.contains("sk_"));
    assert_eq!(
        (summary.tables[0].rotated, summary.tables[0].remaining),
        (2, 1)
    );
    // Everything else moved; nothing recorded as complete; the row is left as it was.
    assert_eq!(summary.tables[2].rotated, 2);
    assert_eq!(both.rotated_to_current_key().await.unwrap(), None);
    let again = both
        .rotate_master_key(1, Duration::ZERO, |_, _| {})
        .await
        .unwrap();
    assert_eq!(again.failures, summary.failures);
    assert_eq!(
        stranger
            .open(
                &every_sealed_value(&fx)
                    .await
                    .iter()
                    .find(|(v, _)| *v == foreign)
                    .expect("row kept")
                    .0,
                lost.id.as_bytes()
            )
            .unwrap(),
        b"sk_lost"
    );
}

#[tokio::test]
async fn updates_made_while_the_rotation_runs_are_kept() {
    let fx = Fixture::new().await;
    let mut subs = Vec::new();
    for i in 0..24 {
        let sub = fx.subaccount(&format!("S{i}")).await.id;
        fx.store
            .set_webhook(
                sub,
                "https://hooks.example.com/a",
                &Secret::new(format!("old-{i}")),
                &audit_entry(),
            )
            .await
            .unwrap();
        let key = admin(&fx.store).issue_key(sub).await.unwrap();
        subs.push((sub, key.api_key));
    }
    let both = store_with(fx.db.url(), NEW_KEY, Some(MASTER_KEY));

    // A serving instance (both keys) sets new webhook secrets and revokes keys while the
    // rotation works through the same rows one at a time.
    let writer = {
        let store = both.clone();
        let subs = subs.clone();
        tokio::spawn(async move {
            for round in 0..3 {
                for (i, (sub, api_key)) in subs.iter().enumerate() {
                    store
                        .set_webhook(
                            *sub,
                            "https://hooks.example.com/b",
                            &Secret::new(format!("new-{i}-{round}")),
                            &audit_entry(),
                        )
                        .await
                        .unwrap();
                    if round == 0 && i % 2 == 0 {
                        store
                            .revoke_credential(api_key, at(T0), &audit_entry())
                            .await
                            .unwrap();
                    }
                    tokio::task::yield_now().await;
                }
            }
        })
    };
    let rotation = {
        let store = both.clone();
        tokio::spawn(async move {
            store
                .rotate_master_key(1, Duration::from_millis(2), |_, _| {})
                .await
                .unwrap()
        })
    };
    writer.await.unwrap();
    let summary = rotation.await.unwrap();
    assert!(summary.complete(), "{summary:?}");

    let new = vault(NEW_KEY);
    let mut conn = fx.raw().await;
    for (i, (sub, api_key)) in subs.iter().enumerate() {
        #[derive(diesel::QueryableByName)]
        struct Hook {
            #[diesel(sql_type = Bytea)]
            secret: Vec<u8>,
        }
        let hook: Hook =
            diesel::sql_query("SELECT secret FROM webhook_endpoints WHERE subaccount_id = $1")
                .bind::<SqlUuid, _>(sub.as_uuid())
                .get_result(&mut conn)
                .await
                .unwrap();
        let context = [b"webhook:".as_slice(), sub.as_uuid().as_bytes()].concat();
        let secret = new.open_secret(&hook.secret, &context).unwrap();
        assert_eq!(
            secret.expose(),
            &format!("new-{i}-2"),
            "the last secret set wins"
        );
        let found = both.find_credential(api_key).await.unwrap();
        assert_eq!(found.is_none(), i % 2 == 0, "revocations are kept");
    }
    let new_only = store_with(fx.db.url(), NEW_KEY, None);
    for (sub, api_key) in subs.iter().skip(1).step_by(2) {
        let credential = new_only
            .find_credential(api_key)
            .await
            .unwrap()
            .expect("key");
        assert_eq!(credential.subaccount_id, *sub);
    }
}
