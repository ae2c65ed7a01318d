//! The official client crate (`payoutd-client`) against the real application: every route it
//! has, typed, under the default signature policy of a new subaccount (v2 on POST), and its
//! webhook verifier on real deliveries, during a secret rotation too.

use std::time::Duration;

use futures_util::TryStreamExt;
use payoutd_client::webhooks::Verifier;
use payoutd_client::{
    AccountMatch, AccountStatus, AccountType, Asset, AudDirectEntry, BatchStatus, BulkPayouts,
    CadDigital, CadEft, Client, ConfirmStatus, ErrorCode, EurSepa, KycDecision, KycStatus,
    NewAccount, NewPayout, NewReceiver, NzdDirectCredit, PayoutFilter, PayoutStatus, RailResult,
    ReceiverFilter, ReceiverStatus, SettleTarget, UsdAch, Uuid,
};

use crate::helpers::{TestApp, spawn_app};
use crate::webhook_sink::WebhookSink;

/// A client of a new subaccount with the default signature policy (`v2_for_posts`), funded
/// with 1,000.00 AUD.
async fn client_of_a_new_subaccount(app: &TestApp) -> Client {
    let subaccount = app
        .admin
        .create_subaccount("Client crate", Some("ops@example.com"), None)
        .await
        .unwrap();
    let key = app.admin.issue_key(subaccount.id).await.unwrap();
    app.admin
        .fund(subaccount.id, "AUD", "100000", "test funding")
        .await
        .unwrap();
    let id: Uuid = subaccount.id.to_string().parse().unwrap();
    Client::new(&app.base, &key.api_key, key.api_secret.expose(), id).unwrap()
}

fn new_receiver(email: &str) -> NewReceiver {
    NewReceiver {
        first_name: "Ada".into(),
        last_name: "Lovelace".into(),
        email: email.into(),
        dob: "1990-12-10".into(),
        dialcode: "61".into(),
        phone: "412345678".into(),
        address: "1 Example Street".into(),
        city: "Sydney".into(),
        state: "NSW".into(),
        postcode: "2000".into(),
        country: "aus".into(),
        reference: Some(format!("ref-{email}")),
        ..NewReceiver::default()
    }
}

#[tokio::test]
async fn the_client_crate_pays_a_receiver_and_reads_everything_back() {
    let app = spawn_app().await;
    let client = client_of_a_new_subaccount(&app).await;

    let subaccount = client.get_subaccount().await.unwrap();
    assert_eq!(subaccount.id, client.subaccount_id());
    let balance = client.get_balance(Asset::Aud).await.unwrap();
    assert_eq!((balance.available, balance.pending), (100_000, 0));

    // A receiver, its KYC decided by the sandbox.
    let created = client
        .create_receiver(&new_receiver("ada@example.com"))
        .await
        .unwrap();
    let receiver_id = created.receiver_id;
    let receiver = client.get_receiver(receiver_id).await.unwrap();
    assert_eq!(
        (
            receiver.email.as_str(),
            receiver.status,
            receiver.kyc_status
        ),
        (
            "ada@example.com",
            ReceiverStatus::Pending,
            KycStatus::Pending
        )
    );
    assert_eq!(receiver.address_data.country, "AUS");
    client
        .sandbox_decide_kyc(receiver_id, KycDecision::Completed)
        .await
        .unwrap();
    assert_eq!(
        client.get_receiver(receiver_id).await.unwrap().status,
        ReceiverStatus::Active
    );

    // An account, confirmed through the sandbox.
    let account = client
        .create_receiver_account(AudDirectEntry {
            receiver_id,
            bsb: "012-002".into(),
            account_number: "123456789".into(),
        })
        .await
        .unwrap();
    let account_id = account.receiver_account_id;
    assert_eq!(
        (account.status, account.confirm_status),
        (AccountStatus::Pending, ConfirmStatus::Unconfirmed)
    );
    let read = client.get_receiver_account(account_id).await.unwrap();
    assert_eq!(
        (read.asset, read.method_name.as_str()),
        (Asset::Aud, "direct-entry")
    );
    let masked = read.account_data.account_number.clone().unwrap();
    assert!(!masked.contains("123456789"), "{masked}");
    let accounts = client.list_receiver_accounts(receiver_id).await.unwrap();
    assert_eq!(
        accounts.iter().map(|a| a.id).collect::<Vec<_>>(),
        [account_id]
    );
    let sent = client.sandbox_notifications(account_id).await.unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].to_email, "ada@example.com");
    client.sandbox_confirm_account(account_id).await.unwrap();
    assert_eq!(
        client
            .get_receiver_account(account_id)
            .await
            .unwrap()
            .confirm_status,
        ConfirmStatus::Confirmed
    );
    let found = client
        .verify_receiver_account(&AccountMatch {
            bsb: Some("012002".into()),
            account_number: Some("123456789".into()),
            ..AccountMatch::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (found.exists, found.account_id, found.receiver_id),
        (true, Some(account_id), Some(receiver_id))
    );

    // A payout, sent twice with one idempotency key: created once.
    let payout = NewPayout::new(receiver_id, account_id, 10_000, Asset::Aud)
        .reference("invoice-1001")
        .note("November");
    let first = client
        .create_payout(&payout)
        .idempotency_key("invoice-1001")
        .await
        .unwrap();
    let again = client
        .create_payout(&payout)
        .idempotency_key("invoice-1001")
        .await
        .unwrap();
    assert_eq!(again.payout_id, first.payout_id);
    let got = client.get_payout(first.payout_id).await.unwrap();
    assert_eq!(
        (got.status, got.amount, got.asset, got.reference.as_str()),
        (PayoutStatus::Pending, 10_000, Asset::Aud, "invoice-1001")
    );
    assert_eq!(got.receiver.id, receiver_id);
    assert_eq!(got.receiver_account.id, account_id);
    let fee = got.fee_data.fee_value.unwrap();
    let balance = client.get_balance(Asset::Aud).await.unwrap();
    assert_eq!(
        (balance.available, balance.pending),
        (100_000 - 10_000 - fee, 10_000 + fee)
    );

    // Two more in one bulk request; one of them cancelled.
    let bulk = client
        .create_payouts(&BulkPayouts {
            payouts: vec![
                NewPayout::new(receiver_id, account_id, 200, Asset::Aud).reference("bulk-1"),
                NewPayout::new(receiver_id, account_id, 300, Asset::Aud).reference("bulk-2"),
            ],
            atomic: true,
        })
        .await
        .unwrap();
    assert_eq!((bulk.created, bulk.failed), (2, 0));
    let cancelled_id = bulk.items[1].payout_id.unwrap();
    let cancelled = client.cancel_payout(cancelled_id).await.unwrap();
    assert_eq!(cancelled.status, PayoutStatus::Cancelled);

    // Every payout, streamed; and by filter.
    let all: Vec<_> = client
        .list_payouts(PayoutFilter::default())
        .try_collect()
        .await
        .unwrap();
    let mut references: Vec<&str> = all.iter().map(|p| p.reference.as_str()).collect();
    references.sort_unstable();
    assert_eq!(references, ["bulk-1", "bulk-2", "invoice-1001"]);
    let only_cancelled: Vec<_> = client
        .list_payouts(PayoutFilter {
            status: Some(PayoutStatus::Cancelled),
            ..PayoutFilter::default()
        })
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        only_cancelled.iter().map(|p| p.id).collect::<Vec<_>>(),
        [cancelled_id]
    );

    // The sandbox's rail pays the batch.
    let batch = client.sandbox_run_batch(Asset::Aud).await.unwrap();
    assert_eq!((batch.status, batch.total_tx), (BatchStatus::InProgress, 2));
    client
        .sandbox_settle(SettleTarget::Batch(batch.batch_id), RailResult::Success)
        .await
        .unwrap();
    let paid = client.get_payout(first.payout_id).await.unwrap();
    assert_eq!(
        (paid.status, paid.batch_id),
        (PayoutStatus::Successful, Some(batch.batch_id))
    );
}

#[tokio::test]
async fn the_client_crates_account_types_are_the_six_methods_routes() {
    let app = spawn_app().await;
    let client = client_of_a_new_subaccount(&app).await;
    let receiver_id = client
        .create_receiver(&new_receiver("methods@example.com"))
        .await
        .unwrap()
        .receiver_id;
    let accounts: [(NewAccount, Asset, &str, AccountMatch); 6] = [
        (
            AudDirectEntry {
                receiver_id,
                bsb: "012 002".into(),
                account_number: "123456789".into(),
            }
            .into(),
            Asset::Aud,
            "direct-entry",
            AccountMatch {
                bsb: Some("012002".into()),
                ..AccountMatch::default()
            },
        ),
        (
            UsdAch {
                receiver_id,
                routing_number: "021000021".into(),
                account_number: "987654321".into(),
                account_type: AccountType::Checking,
            }
            .into(),
            Asset::Usd,
            "ach",
            AccountMatch {
                routing_number: Some("021000021".into()),
                account_number: Some("987654321".into()),
                ..AccountMatch::default()
            },
        ),
        (
            CadEft {
                receiver_id,
                routing_number: "12345-003".into(),
                account_number: "7654321".into(),
                account_type: AccountType::Savings,
            }
            .into(),
            Asset::Cad,
            "eft",
            AccountMatch {
                account_number: Some("7654321".into()),
                ..AccountMatch::default()
            },
        ),
        (
            CadDigital {
                receiver_id,
                recipient: "ada.pay@example.com".into(),
                name: "Ada Lovelace".into(),
                description: Some("Royalties".into()),
            }
            .into(),
            Asset::Cad,
            "digital",
            AccountMatch {
                recipient: Some("ada.pay@example.com".into()),
                ..AccountMatch::default()
            },
        ),
        (
            EurSepa {
                receiver_id,
                iban: "DE89 3704 0044 0532 0130 00".into(),
                bic: "COBADEFFXXX".into(),
            }
            .into(),
            Asset::Eur,
            "sepa",
            AccountMatch {
                iban: Some("DE89370400440532013000".into()),
                ..AccountMatch::default()
            },
        ),
        (
            NzdDirectCredit {
                receiver_id,
                account_number: "01-902-0068389-00".into(),
            }
            .into(),
            Asset::Nzd,
            "direct-credit",
            AccountMatch {
                account_number: Some("01-902-0068389-00".into()),
                ..AccountMatch::default()
            },
        ),
    ];
    for (account, asset, method, fields) in accounts {
        let route = account.route();
        let created = client.create_receiver_account(account).await.unwrap();
        let read = client
            .get_receiver_account(created.receiver_account_id)
            .await
            .unwrap();
        assert_eq!(
            (read.asset, read.method_name.as_str()),
            (asset, method),
            "{route}"
        );
        assert_eq!(read.receiver_id, receiver_id);
        let found = client.verify_receiver_account(&fields).await.unwrap();
        assert_eq!(
            (found.exists, found.account_id),
            (true, Some(created.receiver_account_id)),
            "{route}"
        );
    }
    assert_eq!(
        client
            .list_receiver_accounts(receiver_id)
            .await
            .unwrap()
            .len(),
        6
    );
    // A method's own rule, refused with the field the crate sent.
    let refused = client
        .create_receiver_account(UsdAch {
            receiver_id,
            routing_number: "021000022".into(),
            account_number: "987654321".into(),
            account_type: AccountType::Checking,
        })
        .await
        .unwrap_err();
    assert!(
        refused.api().unwrap().field("routing_number").is_some(),
        "{refused}"
    );
}

#[tokio::test]
async fn the_client_crate_pages_over_the_cursor_and_reports_the_apis_errors() {
    let app = spawn_app().await;
    let client = client_of_a_new_subaccount(&app).await;
    let mut created = Vec::new();
    for i in 0..5 {
        let receiver = client
            .create_receiver(&new_receiver(&format!("r{i}@example.com")))
            .await
            .unwrap();
        created.push(receiver.receiver_id);
    }
    // Page by page, two at a time, following lastkey by hand ...
    let mut paged = Vec::new();
    let mut lastkey: Option<String> = None;
    let mut pages = 0;
    loop {
        let page = client
            .list_receivers_page(&ReceiverFilter::default(), 2, lastkey.as_deref())
            .await
            .unwrap();
        pages += 1;
        assert!(page.items.len() <= 2);
        paged.extend(page.items.iter().map(|r| r.id));
        match page.lastkey {
            Some(next) => lastkey = Some(next),
            None => break,
        }
    }
    assert!(pages >= 3, "{pages} pages");
    // ... is the stream's order, newest first; a filter is sent with every page.
    let streamed: Vec<Uuid> = client
        .list_receivers(ReceiverFilter::default())
        .map_ok(|r| r.id)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(paged, streamed);
    let mut expected = created.clone();
    expected.reverse();
    assert_eq!(streamed, expected);
    let one: Vec<_> = client
        .list_receivers(ReceiverFilter {
            email: Some("R3@Example.com".into()),
            ..ReceiverFilter::default()
        })
        .try_collect()
        .await
        .unwrap();
    assert_eq!(one.iter().map(|r| r.id).collect::<Vec<_>>(), [created[3]]);

    // The API's refusals: code, message and field.
    let missing = client.get_receiver(Uuid::new_v4()).await.unwrap_err();
    assert!(missing.has_code(&ErrorCode::Revr101), "{missing}");
    assert_eq!(missing.api().unwrap().status, 400);
    assert!(missing.api().unwrap().request_id.is_some());
    let bad = client
        .create_receiver(&NewReceiver {
            email: "not an address".into(),
            ..new_receiver("x@example.com")
        })
        .await
        .unwrap_err();
    let api = bad.api().unwrap();
    assert_eq!(api.message, "Create receiver failed");
    let email = api.field("email").unwrap();
    assert_eq!(email.code, ErrorCode::Revr214);
    // Another tenant's subaccount is not found, as for any other.
    let other: Uuid = app.b.subaccount_id.parse().unwrap();
    let foreign = Client::new(&app.base, &app.a.api_key, &app.a.api_secret, other)
        .unwrap()
        .get_balance(Asset::Aud)
        .await
        .unwrap_err();
    assert!(foreign.has_code(&ErrorCode::Suba101), "{foreign}");
}

#[tokio::test]
async fn the_client_crates_verifier_accepts_real_deliveries_during_a_rotation() {
    let app = spawn_app().await;
    let client = client_of_a_new_subaccount(&app).await;
    let subaccount = domain::ids::SubaccountId::parse(&client.subaccount_id().to_string()).unwrap();
    let endpoint = WebhookSink::start(&[200]);
    let (_, old) = app
        .admin
        .set_webhook(subaccount, &endpoint.url)
        .await
        .unwrap();
    let old = old.expose().clone();
    let receiver = client
        .create_receiver(&new_receiver("hook@example.com"))
        .await
        .unwrap();
    let before = endpoint.wait_for(1, Duration::from_secs(20)).await;
    let new = app
        .admin
        .rotate_webhook_secret(subaccount, Duration::from_secs(3600))
        .await
        .unwrap();
    let new = new.expose().clone();
    client
        .sandbox_decide_kyc(receiver.receiver_id, KycDecision::Completed)
        .await
        .unwrap();
    let all = endpoint.wait_for(2, Duration::from_secs(20)).await;
    assert_eq!((before.len(), all.len()), (1, 2));
    let verify = |secrets: &[&str], delivery: &crate::webhook_sink::ReceivedWebhook| {
        Verifier::new(secrets).unwrap().verify(
            delivery.header("webhook-id").unwrap(),
            delivery.header("webhook-timestamp").unwrap(),
            delivery.header("webhook-signature").unwrap(),
            &delivery.body,
        )
    };
    // Before the rotation: the old secret alone signs.
    let first = verify(&[&old], &all[0]).unwrap();
    assert_eq!(first.event, "receiverCreated");
    assert_eq!(first.data["receiver_id"], receiver.receiver_id.to_string());
    assert!(verify(&[&new], &all[0]).is_err());
    // During it: either secret, or both, verify the same delivery.
    for secrets in [
        &[old.as_str()][..],
        &[new.as_str()],
        &[old.as_str(), new.as_str()],
    ] {
        let event = verify(secrets, &all[1]).unwrap();
        assert_eq!(event.event, "receiverKycUpdate");
        assert_eq!(event.event_id, all[1].header("webhook-id").unwrap());
    }
    // A tampered body verifies with neither.
    let mut tampered = all[1].clone();
    tampered.body = actix_web::web::Bytes::from(tampered.body.to_vec().repeat(2));
    assert!(verify(&[&old, &new], &tampered).is_err());
}
