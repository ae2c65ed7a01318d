//! `OperatorStore` and `SubaccountStore`: ledger and balances, fee templates, webhooks; plus the
//! store's readiness probe and its behaviour when the database cannot be reached.

use std::sync::Arc;
use std::time::{Duration, Instant};

use adapters_postgres::{DbConfig, PgStore, Vault, create_pool};
use diesel::sql_types::{BigInt, Bytea, Integer, Nullable, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
use domain::PortError;
use domain::auth::SignaturePolicy;
use domain::builders::SubaccountBuilder;
use domain::delivery::ports::WebhookEndpointStore;
use domain::error::OperatorError;
use domain::ids::{FeeGroupId, FeeTemplateId, LedgerEntryId, MerchantId, SubaccountId};
use domain::ledger::LedgerStore;
use domain::ledger::{LedgerEntry, LedgerEntryKind};
use domain::masking::Secret;
use domain::money::{Asset, Percentage};
use domain::subaccount::ports::SubaccountStore;
use domain::subaccount::ports::{NewSubaccount, SubaccountSetupStore};
use domain::subaccount::{Balance, FeeTemplate};
use uuid::Uuid;

use crate::support::{Fixture, MASTER_KEY, at, audit_entry};

const NOW: i64 = 1_700_000_000_000_000;

fn funding(subaccount: SubaccountId, asset: Asset, amount: i64) -> LedgerEntry {
    LedgerEntry {
        payout_id: None,
        id: LedgerEntryId::from_uuid(Uuid::new_v4()),
        subaccount_id: subaccount,
        asset,
        kind: LedgerEntryKind::Funding,
        available_delta: amount,
        pending_delta: 0,
        created_at: at(NOW),
    }
}

#[derive(diesel::QueryableByName)]
struct Sums {
    #[diesel(sql_type = BigInt)]
    entries: i64,
    #[diesel(sql_type = BigInt)]
    available: i64,
    #[diesel(sql_type = BigInt)]
    pending: i64,
}

async fn ledger_sums(fx: &Fixture, subaccount: SubaccountId, asset: Asset) -> Sums {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT count(*) AS entries, \
           coalesce(sum(available_delta), 0)::bigint AS available, \
           coalesce(sum(pending_delta), 0)::bigint AS pending \
         FROM ledger_entries WHERE subaccount_id = $1 AND asset = $2",
    )
    .bind::<SqlUuid, _>(subaccount.as_uuid())
    .bind::<Text, _>(asset.code())
    .get_result(&mut conn)
    .await
    .unwrap()
}

#[tokio::test]
async fn funding_appends_to_the_ledger_and_moves_the_balance() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;

    let audit = audit_entry();
    let after_first = fx
        .store
        .apply_ledger_entry(&funding(sub, Asset::Aud, 10_000), &audit)
        .await
        .unwrap();
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM audit_log WHERE id = $1",
            audit.id.as_uuid()
        )
        .await,
        1,
        "written with the entry"
    );
    assert_eq!(
        after_first,
        Balance {
            asset: Asset::Aud,
            available: 10_000,
            pending: 0
        }
    );
    let after_second = fx
        .store
        .apply_ledger_entry(&funding(sub, Asset::Aud, 2_550), &audit_entry())
        .await
        .unwrap();
    let expected = Balance {
        asset: Asset::Aud,
        available: 12_550,
        pending: 0,
    };
    assert_eq!(after_second, expected);
    assert_eq!(fx.store.balance(sub, Asset::Aud).await.unwrap(), expected);

    // An asset that never had activity is zero.
    assert_eq!(
        fx.store.balance(sub, Asset::Eur).await.unwrap(),
        Balance::zero(Asset::Eur)
    );

    // The balance is the sum of its ledger entries.
    let sums = ledger_sums(&fx, sub, Asset::Aud).await;
    assert_eq!(
        (sums.entries, sums.available, sums.pending),
        (2, expected.available, expected.pending)
    );
}

#[tokio::test]
async fn funding_an_unknown_subaccount_writes_nothing() {
    let fx = Fixture::new().await;
    let ghost = SubaccountId::from_uuid(Uuid::new_v4());
    let audit = audit_entry();
    let err = fx
        .store
        .apply_ledger_entry(&funding(ghost, Asset::Usd, 500), &audit)
        .await
        .unwrap_err();
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM audit_log WHERE id = $1",
            audit.id.as_uuid()
        )
        .await,
        0,
        "the entry is written only with its change"
    );
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM ledger_entries WHERE subaccount_id = $1",
            ghost.as_uuid()
        )
        .await,
        0
    );
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM balances WHERE subaccount_id = $1",
            ghost.as_uuid()
        )
        .await,
        0
    );
    assert_eq!(
        fx.store.balance(ghost, Asset::Usd).await.unwrap(),
        Balance::zero(Asset::Usd)
    );
}

#[tokio::test]
async fn the_ledger_is_append_only() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    fx.store
        .apply_ledger_entry(&funding(sub, Asset::Nzd, 700), &audit_entry())
        .await
        .unwrap();
    let mut conn = fx.raw().await;
    let update = diesel::sql_query("UPDATE ledger_entries SET available_delta = 0")
        .execute(&mut conn)
        .await;
    let delete = diesel::sql_query("DELETE FROM ledger_entries")
        .execute(&mut conn)
        .await;
    // Both refused by the append-only trigger (not by some unrelated error).
    for (what, result) in [("UPDATE", update), ("DELETE", delete)] {
        let err = result.expect_err(what);
        assert!(err.to_string().contains("append-only"), "{what}: {err}");
    }

    let sums = ledger_sums(&fx, sub, Asset::Nzd).await;
    assert_eq!((sums.entries, sums.available), (1, 700));
    assert_eq!(
        fx.store.balance(sub, Asset::Nzd).await.unwrap().available,
        700
    );
}

#[derive(diesel::QueryableByName)]
struct FeeRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    group_id: Uuid,
    #[diesel(sql_type = BigInt)]
    fixed: i64,
    #[diesel(sql_type = Integer)]
    percentage: i32,
    #[diesel(sql_type = BigInt)]
    min_amount: i64,
}

#[tokio::test]
async fn upserting_a_fee_template_replaces_the_one_of_its_asset() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let first = FeeTemplate {
        id: FeeTemplateId::from_uuid(Uuid::new_v4()),
        group_id: FeeGroupId::from_uuid(Uuid::new_v4()),
        asset: Asset::Aud,
        fixed: 100,
        percentage: Percentage::parse("1.25").unwrap(),
        min_amount: 50,
    };
    let second = FeeTemplate {
        id: FeeTemplateId::from_uuid(Uuid::new_v4()),
        group_id: FeeGroupId::from_uuid(Uuid::new_v4()),
        asset: Asset::Aud,
        fixed: 30,
        percentage: Percentage::parse("0.5").unwrap(),
        min_amount: 0,
    };
    let usd = FeeTemplate {
        asset: Asset::Usd,
        ..first
    };
    fx.store
        .upsert_fee_template(sub, &first, &audit_entry())
        .await
        .unwrap();
    fx.store
        .upsert_fee_template(sub, &usd, &audit_entry())
        .await
        .unwrap();
    fx.store
        .upsert_fee_template(sub, &second, &audit_entry())
        .await
        .unwrap();

    let mut conn = fx.raw().await;
    let rows: Vec<FeeRow> = diesel::sql_query(
        "SELECT id, group_id, fixed, percentage, min_amount FROM fee_templates \
         WHERE subaccount_id = $1 AND asset = 'AUD'",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(
        (
            row.id,
            row.group_id,
            row.fixed,
            row.percentage,
            row.min_amount
        ),
        (second.id.as_uuid(), second.group_id.as_uuid(), 30, 5_000, 0)
    );
    // The other asset's template is untouched.
    assert_eq!(
        fx.count_where(
            "SELECT count(*) AS n FROM fee_templates WHERE subaccount_id = $1",
            sub.as_uuid()
        )
        .await,
        2
    );

    let err = fx
        .store
        .upsert_fee_template(
            SubaccountId::from_uuid(Uuid::new_v4()),
            &first,
            &audit_entry(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
}

#[derive(diesel::QueryableByName)]
struct WebhookSecret {
    #[diesel(sql_type = Nullable<Bytea>)]
    webhook_secret: Option<Vec<u8>>,
}

#[tokio::test]
async fn set_webhook_stores_the_url_and_an_encrypted_secret() {
    let fx = Fixture::new().await;
    let created = fx.subaccount("Acme").await;
    assert_eq!(created.postback_url, None);
    let sub = created.id;
    let secret = Secret::new("whsec_c2VjcmV0LXdlYmhvb2sta2V5LWJ5dGVz".to_owned());
    fx.store
        .set_webhook(
            sub,
            "https://hooks.example.com/payoutd",
            &secret,
            &audit_entry(),
        )
        .await
        .unwrap();

    let found = fx.store.find_subaccount(sub).await.unwrap().unwrap();
    assert_eq!(
        found.postback_url.as_deref(),
        Some("https://hooks.example.com/payoutd")
    );
    // Nothing else about the subaccount changed.
    assert_eq!(
        found,
        domain::subaccount::Subaccount {
            postback_url: found.postback_url.clone(),
            ..created
        }
    );

    let mut conn = fx.raw().await;
    let stored: WebhookSecret = diesel::sql_query(
        "SELECT secret AS webhook_secret FROM webhook_endpoints WHERE subaccount_id = $1",
    )
    .bind::<SqlUuid, _>(sub.as_uuid())
    .get_result(&mut conn)
    .await
    .unwrap();
    let sealed = stored.webhook_secret.expect("a stored webhook secret");
    assert!(sealed.len() > secret.expose().len());
    let plain = secret.expose().as_bytes();
    assert!(!sealed.windows(plain.len()).any(|w| w == plain));

    let err = fx
        .store
        .set_webhook(
            SubaccountId::from_uuid(Uuid::new_v4()),
            "https://hooks.example.com/x",
            &secret,
            &audit_entry(),
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
}

#[tokio::test]
async fn find_subaccount_returns_what_was_created_or_none() {
    let fx = Fixture::new().await;
    let created = fx.subaccount("Acme").await;
    assert_eq!(
        fx.store.find_subaccount(created.id).await.unwrap(),
        Some(created)
    );
    assert_eq!(
        fx.store
            .find_subaccount(SubaccountId::from_uuid(Uuid::new_v4()))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn every_field_of_a_created_subaccount_reads_back() {
    let fx = Fixture::new().await;
    for policy in SignaturePolicy::ALL {
        let subaccount = SubaccountBuilder::new()
            .id(SubaccountId::from_uuid(Uuid::new_v4()))
            .merchant(MerchantId::from_uuid(Uuid::new_v4()))
            .postback_url("https://hooks.example.com/payoutd")
            .signature_policy(*policy)
            .created_at(at(NOW))
            .build();
        fx.store
            .create_subaccount(
                &NewSubaccount {
                    subaccount: subaccount.clone(),
                },
                &audit_entry(),
            )
            .await
            .unwrap();
        assert_eq!(
            fx.store.find_subaccount(subaccount.id).await.unwrap(),
            Some(subaccount)
        );
    }
}

#[tokio::test]
async fn ready_when_migrated() {
    let fx = Fixture::new().await;
    fx.store.check_ready().await.unwrap();
}

#[tokio::test]
async fn not_ready_without_the_migrations_table() {
    let fx = Fixture::new().await;
    fx.store.check_ready().await.unwrap();
    let mut conn = fx.raw().await;
    diesel::sql_query("DROP TABLE __diesel_schema_migrations")
        .execute(&mut conn)
        .await
        .unwrap();
    let err = fx.store.check_ready().await.unwrap_err();
    assert!(matches!(err, PortError::Unavailable(_)), "{err:?}");
}

#[tokio::test]
async fn not_ready_when_a_migration_is_missing() {
    let fx = Fixture::new().await;
    let mut conn = fx.raw().await;
    diesel::sql_query("DELETE FROM __diesel_schema_migrations")
        .execute(&mut conn)
        .await
        .unwrap();
    let err = fx.store.check_ready().await.unwrap_err();
    assert!(matches!(err, PortError::Unavailable(_)), "{err:?}");
}

#[tokio::test]
async fn an_unreachable_database_is_unavailable_quickly() {
    let config = DbConfig {
        wait_timeout: Duration::from_millis(500),
        connect_timeout: Duration::from_millis(500),
        ..DbConfig::new("postgres://postgres@127.0.0.1:1/nowhere")
    };
    let vault = Vault::new(&Secret::new(MASTER_KEY)).unwrap();
    let store = PgStore::new(create_pool(&config).unwrap(), Arc::new(vault));

    let started = Instant::now();
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        store.find_subaccount(SubaccountId::from_uuid(Uuid::new_v4())),
    )
    .await
    .expect("find_subaccount must not hang");
    let err = result.unwrap_err();
    assert!(matches!(err, PortError::Unavailable(_)), "{err:?}");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "took {:?}",
        started.elapsed()
    );
    let err = store.check_ready().await.unwrap_err();
    assert!(matches!(err, PortError::Unavailable(_)), "{err:?}");
}

async fn audited(fx: &Fixture, entry: &domain::audit::AuditEntry) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM audit_log WHERE id = $1",
        entry.id.as_uuid(),
    )
    .await
}

#[tokio::test]
async fn each_admin_change_commits_with_its_audit_entry_and_a_refused_one_writes_none() {
    use domain::auth::SignaturePolicy;
    use domain::auth::ports::ApiKeyStore;
    use domain::delivery::history::{EventHistoryStore, ResendSelection};
    use domain::ids::{ApiKeyId, EventId};

    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let ghost = SubaccountId::from_uuid(Uuid::new_v4());
    let secret = Secret::new("whsec_c2VjcmV0LXdlYmhvb2sta2V5LWJ5dGVz".to_owned());

    // Refused: nothing changed, so no entry.
    let entry = audit_entry();
    let err = fx
        .store
        .rotate_webhook_secret(sub, &secret, at(NOW), &entry)
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::NoWebhook), "{err:?}");
    assert_eq!(audited(&fx, &entry).await, 0, "no webhook to rotate");
    let entry = audit_entry();
    let err = fx
        .store
        .set_webhook(ghost, "https://hooks.example.com/x", &secret, &entry)
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
    assert_eq!(audited(&fx, &entry).await, 0, "webhook of no subaccount");
    let entry = audit_entry();
    let err = fx
        .store
        .insert_credential(
            ApiKeyId::from_uuid(Uuid::new_v4()),
            ghost,
            "pk_ghost",
            &Secret::new("sk_ghost".to_owned()),
            at(NOW),
            &entry,
        )
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
    assert_eq!(audited(&fx, &entry).await, 0, "key of no subaccount");
    let entry = audit_entry();
    let err = fx
        .store
        .revoke_credential("pk_nobody", at(NOW), &entry)
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::KeyNotFound), "{err:?}");
    assert_eq!(audited(&fx, &entry).await, 0, "no such key");
    let entry = audit_entry();
    let queued = fx
        .store
        .resend_events(
            &ResendSelection::One(EventId::from_uuid(Uuid::new_v4())),
            at(NOW),
            &entry,
        )
        .await
        .unwrap();
    assert_eq!(queued, 0);
    assert_eq!(audited(&fx, &entry).await, 0, "no such event");
    let entry = audit_entry();
    let err = fx
        .store
        .set_signature_policy(ghost, SignaturePolicy::V2Only, &entry)
        .await
        .unwrap_err();
    assert!(matches!(err, OperatorError::SubaccountNotFound), "{err:?}");
    assert_eq!(audited(&fx, &entry).await, 0, "policy of no subaccount");

    // Changes: each with its entry; the same policy again changes nothing and writes none.
    let entry = audit_entry();
    fx.store
        .set_webhook(sub, "https://hooks.example.com/x", &secret, &entry)
        .await
        .unwrap();
    assert_eq!(audited(&fx, &entry).await, 1, "webhook set");
    let entry = audit_entry();
    fx.store
        .rotate_webhook_secret(sub, &secret, at(NOW), &entry)
        .await
        .unwrap();
    assert_eq!(audited(&fx, &entry).await, 1, "secret rotated");
    let entry = audit_entry();
    fx.store
        .insert_credential(
            ApiKeyId::from_uuid(Uuid::new_v4()),
            sub,
            "pk_acme",
            &Secret::new("sk_acme".to_owned()),
            at(NOW),
            &entry,
        )
        .await
        .unwrap();
    assert_eq!(audited(&fx, &entry).await, 1, "key issued");
    let entry = audit_entry();
    fx.store
        .revoke_credential("pk_acme", at(NOW), &entry)
        .await
        .unwrap();
    assert_eq!(audited(&fx, &entry).await, 1, "key revoked");
    let entry = audit_entry();
    fx.store
        .set_signature_policy(sub, SignaturePolicy::V2Only, &entry)
        .await
        .unwrap();
    assert_eq!(audited(&fx, &entry).await, 1, "policy changed");
    let again = audit_entry();
    fx.store
        .set_signature_policy(sub, SignaturePolicy::V2Only, &again)
        .await
        .unwrap();
    assert_eq!(
        audited(&fx, &again).await,
        0,
        "the same policy changes nothing"
    );
}
