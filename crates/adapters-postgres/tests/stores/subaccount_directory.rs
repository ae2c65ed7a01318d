//! `SubaccountDirectory`: the list filtered by name (literally, case-insensitively) and paged
//! newest first with ties broken by id, each subaccount with its balances; a profile with
//! balances, fee templates, keys (revoked ones too, never a secret) and the webhook endpoint.

use std::time::Duration;

use domain::paging::Position;
use domain::subaccount::directory::SubaccountDirectory;

use crate::support::{Fixture, admin};

#[tokio::test]
async fn the_list_filters_by_name_literally_and_pages_by_creation_then_id() {
    let fx = Fixture::new().await;
    // The fixture's clock is fixed: every subaccount has the same creation time, so the id
    // alone orders them.
    let mut made = Vec::new();
    for name in ["Acme AU", "acme NZ", "Globex", "50%_off"] {
        made.push(fx.subaccount(name).await);
    }
    admin(&fx.store)
        .fund(made[0].id, "AUD", "2500", "float")
        .await
        .unwrap();
    admin(&fx.store)
        .fund(made[0].id, "USD", "7", "float")
        .await
        .unwrap();

    let acme = fx
        .store
        .list_subaccounts(Some("ACME".to_owned()), None, 10)
        .await
        .unwrap();
    let names: Vec<&str> = acme.iter().map(|l| l.subaccount.name.as_str()).collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.contains(&"Acme AU") && names.contains(&"acme NZ"));
    let au = acme.iter().find(|l| l.subaccount.id == made[0].id).unwrap();
    let held: Vec<(&str, i64)> = au
        .balances
        .iter()
        .map(|b| (b.asset.code(), b.available))
        .collect();
    assert_eq!(held, [("AUD", 2500), ("USD", 7)]);

    // `%` and `_` are characters, not wildcards.
    let literal = fx
        .store
        .list_subaccounts(Some("%_".to_owned()), None, 10)
        .await
        .unwrap();
    assert_eq!(literal.len(), 1);
    assert_eq!(literal[0].subaccount.name, "50%_off");

    // Pages of one walk every subaccount once, in (created_at, id) descending order.
    let mut seen = Vec::new();
    let mut after = None;
    loop {
        let page = fx.store.list_subaccounts(None, after, 1).await.unwrap();
        let Some(last) = page.last() else { break };
        seen.push(last.subaccount.id);
        after = Some(Position {
            created_at: last.subaccount.created_at,
            id: last.subaccount.id.as_uuid(),
        });
    }
    let mut expected: Vec<_> = made.iter().map(|s| s.id).collect();
    expected.sort_by_key(|id| std::cmp::Reverse(id.as_uuid()));
    assert_eq!(seen, expected);
}

#[tokio::test]
async fn a_profile_shows_balances_fees_keys_and_the_endpoint_without_secrets() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Profiled").await;
    let other = fx.subaccount("Other").await;
    let service = admin(&fx.store);
    service.fund(sub.id, "EUR", "1000", "float").await.unwrap();
    service
        .set_fee(sub.id, "EUR", "25", "1.5", "30")
        .await
        .unwrap();
    let kept = service.issue_key(sub.id).await.unwrap();
    let revoked = service.issue_key(sub.id).await.unwrap();
    service.revoke_key(&revoked.api_key).await.unwrap();
    service.issue_key(other.id).await.unwrap();

    let profile = fx.store.subaccount_profile(sub.id).await.unwrap().unwrap();
    assert_eq!(profile.subaccount.name, "Profiled");
    assert_eq!(profile.balances.len(), 1);
    assert_eq!(profile.balances[0].available, 1000);
    assert_eq!(profile.fees.len(), 1);
    assert_eq!(profile.fees[0].fixed, 25);
    assert_eq!(profile.fees[0].min_amount, 30);
    assert_eq!(profile.fees[0].percentage.as_f64(), 1.5);
    assert_eq!(profile.keys.len(), 2, "only this subaccount's keys");
    let state = |key: &str| {
        profile
            .keys
            .iter()
            .find(|k| k.api_key == key)
            .map(|k| k.revoked_at.is_some())
    };
    assert_eq!(state(&kept.api_key), Some(false));
    assert_eq!(state(&revoked.api_key), Some(true));
    assert!(profile.webhook.is_none());
    let text = format!("{profile:?}");
    assert!(
        !text.contains(kept.api_secret.expose()),
        "no secret is read"
    );

    service
        .set_webhook(sub.id, "https://hooks.example.com/p")
        .await
        .unwrap();
    service
        .rotate_webhook_secret(sub.id, Duration::from_secs(3600))
        .await
        .unwrap();
    let profile = fx.store.subaccount_profile(sub.id).await.unwrap().unwrap();
    assert_eq!(
        profile.subaccount.postback_url.as_deref(),
        Some("https://hooks.example.com/p")
    );
    let webhook = profile.webhook.unwrap();
    assert!(webhook.previous_until.is_some() && webhook.disabled_at.is_none());

    let nobody = domain::ids::SubaccountId::from_uuid(uuid::Uuid::from_u128(9));
    assert!(fx.store.subaccount_profile(nobody).await.unwrap().is_none());
}

#[tokio::test]
async fn changes_record_what_they_replaced_as_the_audit_entrys_before() {
    use domain::audit::{AuditAction, AuditLog, AuditQuery};
    use domain::auth::SignaturePolicy;

    let fx = Fixture::new().await;
    let sub = fx.subaccount("Audited").await;
    let service = admin(&fx.store);
    service
        .set_fee(sub.id, "AUD", "10", "1", "0")
        .await
        .unwrap();
    service
        .set_fee(sub.id, "AUD", "20", "2.5", "5")
        .await
        .unwrap();
    service
        .set_signature_policy(sub.id, SignaturePolicy::V2Only)
        .await
        .unwrap();
    service
        .set_webhook(sub.id, "https://one.example.com/h")
        .await
        .unwrap();
    service
        .set_webhook(sub.id, "https://two.example.com/h")
        .await
        .unwrap();
    let of = |action| AuditQuery {
        action: Some(action),
        limit: 10,
        ..AuditQuery::default()
    };
    // The fixture's clock is fixed: tell the entries apart by what they set.
    let fees = fx.store.list(&of(AuditAction::FeeSet)).await.unwrap();
    assert_eq!(fees.len(), 2);
    let set = |fixed: i64| {
        fees.iter()
            .find(|e| e.after.as_ref().unwrap()["fixed"] == fixed)
            .unwrap()
    };
    assert_eq!(
        set(20).before,
        Some(serde_json::json!({"asset": "AUD", "fixed": 10, "percentage": 1.0, "min_amount": 0}))
    );
    assert_eq!(
        set(10).before,
        None,
        "the asset's first template replaced none"
    );
    let policy = fx
        .store
        .list(&of(AuditAction::SignaturePolicySet))
        .await
        .unwrap();
    let default_policy = SignaturePolicy::default().as_str();
    assert_eq!(
        policy[0].before,
        Some(serde_json::json!({"signature_policy": default_policy}))
    );
    let hooks = fx.store.list(&of(AuditAction::WebhookSet)).await.unwrap();
    let to = |url: &str| {
        hooks
            .iter()
            .find(|e| e.after.as_ref().unwrap()["postback_url"] == url)
            .unwrap()
            .before
            .clone()
    };
    assert_eq!(
        to("https://two.example.com/h"),
        Some(serde_json::json!({"postback_url": "https://one.example.com/h"}))
    );
    assert_eq!(
        to("https://one.example.com/h"),
        Some(serde_json::json!({"postback_url": null}))
    );
}
