//! `AccountService` driven through mocked ports.

use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use uuid::Uuid;

use super::*;
use crate::account::notification::ports::MockNotificationStore;
use crate::account::ports::{
    MerchantNames, MockAccountStore, MockNotifier, NotifyError, TokenLookup,
};
use crate::builders::{ReceiverAccountBuilder, ReceiverBuilder};
use crate::ids::{ApiKeyId, SubaccountId};
use crate::ports::{MockClock, MockIdGenerator};
use crate::receiver::ports::MockReceiverStore;

const NOW_MS: i64 = 1_700_000_000_000;

fn now() -> DateTime<Utc> {
    DateTime::from_timestamp_millis(NOW_MS).unwrap_or_default()
}

fn caller() -> Caller {
    Caller {
        subaccount_id: SubaccountId::from_uuid(Uuid::from_u128(0xA)),
        api_key_id: ApiKeyId::from_uuid(Uuid::from_u128(0xB)),
    }
}

fn receiver() -> Receiver {
    ReceiverBuilder::new()
        .id(ReceiverId::from_uuid(Uuid::from_u128(0xC)))
        .subaccount(caller().subaccount_id)
        .created_at(now())
        .build()
}

fn raw(receiver_id: &str) -> RawAccount {
    RawAccount {
        receiver_id: Some(receiver_id.to_owned()),
        bsb: Some("012-002".to_owned()),
        account_number: Some("123456789".to_owned()),
        ..RawAccount::default()
    }
}

fn receivers_knowing_ours() -> Arc<MockReceiverStore> {
    let mut receivers = MockReceiverStore::new();
    receivers.expect_find_receiver().returning(|sub, id| {
        Ok((sub == caller().subaccount_id && id == receiver().id).then(receiver))
    });
    Arc::new(receivers)
}

fn clock_at(ms: i64) -> Arc<MockClock> {
    let mut clock = MockClock::new();
    clock
        .expect_now()
        .returning(move || DateTime::from_timestamp_millis(ms).unwrap_or_default());
    Arc::new(clock)
}

fn ids() -> Arc<MockIdGenerator> {
    let mut ids = MockIdGenerator::new();
    let mut n = 100u128;
    ids.expect_new_id().returning(move || {
        n += 1;
        Uuid::from_u128(n)
    });
    ids.expect_random_bytes().returning(|| [9; 32]);
    Arc::new(ids)
}

/// A notification store that records every outcome (and expects nothing else).
fn recording_store() -> (MockNotificationStore, Arc<Mutex<Vec<NotificationOutcome>>>) {
    let outcomes = Arc::new(Mutex::new(Vec::new()));
    let seen = outcomes.clone();
    let mut store = MockNotificationStore::new();
    store
        .expect_record_outcome()
        .returning(move |notification, outcome| {
            assert_eq!(
                notification.attempt, 1,
                "the creator makes the first attempt"
            );
            seen.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(outcome.clone());
            Ok(true)
        });
    (store, outcomes)
}

fn service(accounts: MockAccountStore, notifier: MockNotifier, now_ms: i64) -> AccountService {
    service_with(accounts, notifier, recording_store().0, now_ms)
}

fn service_with(
    accounts: MockAccountStore,
    notifier: MockNotifier,
    notifications: MockNotificationStore,
    now_ms: i64,
) -> AccountService {
    let worker = NotificationWorker::new(
        Arc::new(notifications),
        Arc::new(notifier),
        clock_at(now_ms),
        ids(),
        crate::account::notification::worker::NotificationSettings::default(),
    );
    AccountService::new(
        Arc::new(accounts),
        receivers_knowing_ours(),
        Arc::new(worker),
        clock_at(now_ms),
        ids(),
        "https://pay.example.com/".to_owned(),
    )
}

fn codes(result: Result<CreatedAccount, CreateAccountError>) -> Vec<ErrorCode> {
    match result {
        Err(CreateAccountError::Invalid(e)) => e.0.into_iter().map(|e| e.code).collect(),
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn creates_a_pending_account_stores_only_the_token_hash_and_sends_the_link() {
    let stored_hash = Arc::new(Mutex::new(None));
    let seen = stored_hash.clone();
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_insert_account()
        .withf(|account, token, events, queued, _| {
            let text = events[0].payload.to_string();
            account.status == AccountStatus::Pending
                && account.confirm_status == ConfirmStatus::Unconfirmed
                && account.data.expose(crate::account::AccountField::Bsb) == Some("012002")
                && token.expires_at == now() + Duration::days(7)
                && events.len() == 1
                && events[0].kind == EventKind::AccountCreated
                && events[0].payload["bsb"] == "012 ***"
                && !text.contains("123456789")
                && queued.attempt == 1
                && queued.request.account_id == account.id
                && queued.request.masked_details == account.data.masked()
                && queued.claimed_until == now() + Duration::minutes(2)
        })
        .times(1)
        .returning(move |_, token, _, _, _| {
            *seen
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(token.hash);
            Ok(())
        });
    let sent = Arc::new(Mutex::new(None));
    let sent_to = sent.clone();
    let mut notifier = MockNotifier::new();
    notifier
        .expect_send_confirmation()
        .times(1)
        .returning(move |request| {
            *sent_to
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(request.clone());
            Ok(())
        });
    let (store, outcomes) = recording_store();
    let created = service_with(accounts, notifier, store, NOW_MS)
        .create(
            &caller(),
            PayoutMethod::DirectEntry,
            &raw(&receiver().id.to_string()),
            &WriteKey::none(),
        )
        .await;
    let Ok(created) = created else {
        panic!("{created:?}")
    };
    assert!(created.confirmation_sent);
    let request = sent
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    let Some(request) = request else {
        panic!("nothing sent")
    };
    let url = request.confirm_url.expose();
    let token = url
        .strip_prefix("https://pay.example.com/confirm/")
        .unwrap_or_else(|| panic!("{url}"));
    let stored = *stored_hash
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    assert_eq!(
        stored,
        Some(token_hash(token)),
        "the store gets the token's hash, never the token"
    );
    assert_eq!(request.to_email, "ada@example.com");
    let outcomes = outcomes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert_eq!(outcomes, [NotificationOutcome::Sent { at: now() }]);
}

#[tokio::test]
async fn a_notifier_outage_leaves_the_account_created() {
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_insert_account()
        .times(1)
        .returning(|_, _, _, _, _| Ok(()));
    let mut notifier = MockNotifier::new();
    notifier.expect_send_confirmation().returning(|_| {
        Err(NotifyError::Port(PortError::Unavailable(anyhow::anyhow!(
            "smtp down"
        ))))
    });
    let (store, outcomes) = recording_store();
    let created = service_with(accounts, notifier, store, NOW_MS)
        .create(
            &caller(),
            PayoutMethod::DirectEntry,
            &raw(&receiver().id.to_string()),
            &WriteKey::none(),
        )
        .await;
    assert_eq!(created.map(|c| c.confirmation_sent).ok(), Some(false));
    let outcomes = outcomes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    // Kept for the retry job: rescheduled within the first retry delay, with the cause.
    match outcomes.as_slice() {
        [NotificationOutcome::Retry { retry_at, error }] => {
            assert!(*retry_at >= now() + Duration::seconds(15), "{retry_at}");
            assert!(*retry_at <= now() + Duration::seconds(30), "{retry_at}");
            assert!(error.contains("smtp down"), "{error}");
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn a_refused_request_is_recorded_failed_and_the_account_stays_created() {
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_insert_account()
        .times(1)
        .returning(|_, _, _, _, _| Ok(()));
    let mut notifier = MockNotifier::new();
    notifier
        .expect_send_confirmation()
        .times(1)
        .returning(|_| Err(NotifyError::Rejected("550 no such user".to_owned())));
    let (store, outcomes) = recording_store();
    let created = service_with(accounts, notifier, store, NOW_MS)
        .create(
            &caller(),
            PayoutMethod::DirectEntry,
            &raw(&receiver().id.to_string()),
            &WriteKey::none(),
        )
        .await;
    assert_eq!(created.map(|c| c.confirmation_sent).ok(), Some(false));
    let outcomes = outcomes
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    assert!(
        matches!(outcomes.as_slice(), [NotificationOutcome::Failed { error, .. }] if error.contains("550")),
        "{outcomes:?}"
    );
}

#[tokio::test]
async fn unknown_or_foreign_receivers_and_bad_fields_are_reported_together() {
    let mut accounts = MockAccountStore::new();
    accounts.expect_insert_account().never();
    let service = service(accounts, MockNotifier::new(), NOW_MS);
    let foreign = Uuid::from_u128(0xD).to_string();
    assert_eq!(
        codes(
            service
                .create(
                    &caller(),
                    PayoutMethod::DirectEntry,
                    &raw(&foreign),
                    &WriteKey::none()
                )
                .await
        ),
        [ErrorCode::Reac211]
    );
    let mut bad = raw(&foreign);
    bad.bsb = Some("12".to_owned());
    assert_eq!(
        codes(
            service
                .create(
                    &caller(),
                    PayoutMethod::DirectEntry,
                    &bad,
                    &WriteKey::none()
                )
                .await
        ),
        [ErrorCode::Reac203, ErrorCode::Reac211]
    );
    let none = RawAccount::default();
    assert_eq!(
        codes(
            service
                .create(
                    &caller(),
                    PayoutMethod::DirectEntry,
                    &none,
                    &WriteKey::none()
                )
                .await
        ),
        [ErrorCode::Reac201, ErrorCode::Reac202, ErrorCode::Reac204]
    );
}

#[tokio::test]
async fn a_duplicate_is_its_own_error() {
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_insert_account()
        .returning(|_, _, _, _, _| Err(InsertAccountError::Duplicate));
    let mut notifier = MockNotifier::new();
    notifier.expect_send_confirmation().never();
    let result = service(accounts, notifier, NOW_MS)
        .create(
            &caller(),
            PayoutMethod::DirectEntry,
            &raw(&receiver().id.to_string()),
            &WriteKey::none(),
        )
        .await;
    assert!(matches!(result, Err(CreateAccountError::Duplicate)));
}

fn verify_request(pairs: &[(&str, &str)]) -> VerifyRequest {
    VerifyRequest {
        subaccount_id: Some(caller().subaccount_id.to_string()),
        account_data: pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    }
}

#[tokio::test]
async fn verify_normalises_before_matching_and_refuses_bad_requests() {
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_find_first_match()
        .withf(|sub, fields| {
            *sub == caller().subaccount_id
                && fields == [(crate::account::AccountField::Bsb, "012002".to_owned())]
        })
        .times(1)
        .returning(|_, _| Ok(None));
    let service = service(accounts, MockNotifier::new(), NOW_MS);
    assert!(matches!(
        service
            .verify(&caller(), &verify_request(&[("bsb", "012-002")]))
            .await,
        Ok(None)
    ));
    // Fields of two methods can never be one account's: no query.
    assert!(matches!(
        service
            .verify(
                &caller(),
                &verify_request(&[("bsb", "012002"), ("iban", "DE89370400440532013000")])
            )
            .await,
        Ok(None)
    ));
    assert!(matches!(
        service
            .verify(
                &caller(),
                &verify_request(&[("account_type", "checking"), ("bic", "DEUTDEFF")])
            )
            .await,
        Ok(None)
    ));
    // A value no account can have matches nothing without a query.
    assert!(matches!(
        service
            .verify(&caller(), &verify_request(&[("bsb", "12")]))
            .await,
        Ok(None)
    ));
    let mut foreign = verify_request(&[("bsb", "012002")]);
    foreign.subaccount_id = Some(Uuid::from_u128(0xF).to_string());
    for bad in [
        foreign,
        verify_request(&[]),
        verify_request(&[("colour", "blue")]),
        // A field accounts carry but verify cannot match on.
        verify_request(&[("recipient", "jane@example.com"), ("name", "Jane")]),
        verify_request(&[("BSB", "012002")]),
        verify_request(&[("bsb", "012002"), ("bsb", "012003")]),
        VerifyRequest {
            subaccount_id: None,
            ..verify_request(&[("bsb", "012002")])
        },
    ] {
        assert!(
            matches!(
                service.verify(&caller(), &bad).await,
                Err(VerifyError::Invalid)
            ),
            "{bad:?}"
        );
    }
}

fn stored_account(confirm_status: ConfirmStatus, status: AccountStatus) -> ReceiverAccount {
    ReceiverAccountBuilder::new()
        .id(ReceiverAccountId::from_uuid(Uuid::from_u128(0xE)))
        .receiver(receiver().id)
        .subaccount(caller().subaccount_id)
        .data(&[(AccountField::Bsb, "012002")])
        .status(status)
        .confirm_status(confirm_status)
        .created_at(now())
        .build()
}

#[tokio::test]
async fn tokens_confirm_once_and_never_after_expiry() {
    let lookup = |used: bool, confirm_status, status, expires_ms: i64| {
        move |_: &[u8; 32]| {
            Ok(Some(TokenLookup {
                account: stored_account(confirm_status, status),
                merchant: MerchantNames {
                    business_name: "Acme Payroll".to_owned(),
                    name: "acme".to_owned(),
                },
                receiver_names: ["Ada".to_owned(), String::new(), "Lovelace".to_owned()],
                expires_at: DateTime::from_timestamp_millis(expires_ms).unwrap_or_default(),
                used,
            }))
        }
    };
    // Valid: confirmed with an accountUpdate event, the token's hash passed along.
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_token().returning(lookup(
        false,
        ConfirmStatus::Unconfirmed,
        AccountStatus::Pending,
        NOW_MS + 1,
    ));
    accounts
        .expect_confirm_account()
        .withf(|account, token, events, reaction, _| {
            reaction.waiting_status() == crate::payout::PayoutStatus::Awaiting
                && account.confirm_status == ConfirmStatus::Confirmed
                && account.status == AccountStatus::Completed
                && *token == Some(token_hash("t0ken"))
                && events[0].kind == EventKind::AccountUpdate
        })
        .times(1)
        .returning(|_, _, _, _, _| Ok(true));
    let confirmed = service(accounts, MockNotifier::new(), NOW_MS)
        .confirm_with_token("t0ken")
        .await;
    assert_eq!(
        confirmed.map(|a| a.confirm_status).ok(),
        Some(ConfirmStatus::Confirmed)
    );

    // Expired: refused without writing.
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_token().returning(lookup(
        false,
        ConfirmStatus::Unconfirmed,
        AccountStatus::Pending,
        NOW_MS,
    ));
    accounts.expect_confirm_account().never();
    let expired = service(accounts, MockNotifier::new(), NOW_MS)
        .confirm_with_token("t0ken")
        .await;
    assert!(matches!(expired, Err(ConfirmError::Invalid)));

    // Used on a confirmed account: shows it confirmed, writes nothing.
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_token().returning(lookup(
        true,
        ConfirmStatus::Confirmed,
        AccountStatus::Completed,
        NOW_MS + 1,
    ));
    accounts.expect_confirm_account().never();
    let again = service(accounts, MockNotifier::new(), NOW_MS)
        .confirm_with_token("t0ken")
        .await;
    assert!(again.is_ok());

    // A failed account cannot be confirmed.
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_token().returning(lookup(
        false,
        ConfirmStatus::Unconfirmed,
        AccountStatus::Failed,
        NOW_MS + 1,
    ));
    accounts.expect_confirm_account().never();
    let failed = service(accounts, MockNotifier::new(), NOW_MS)
        .confirm_with_token("t0ken")
        .await;
    assert!(matches!(failed, Err(ConfirmError::Invalid)));

    // Unknown, empty or absurd tokens.
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_token().returning(|_| Ok(None));
    let service = service(accounts, MockNotifier::new(), NOW_MS);
    for token in ["", "nope", &"x".repeat(500)] {
        assert!(matches!(
            service.confirm_with_token(token).await,
            Err(ConfirmError::Invalid)
        ));
    }
}

#[tokio::test]
async fn losing_a_confirmation_race_reports_what_is_stored() {
    let mut accounts = MockAccountStore::new();
    let mut reads = 0;
    accounts
        .expect_find_account()
        .times(2)
        .returning(move |_, _| {
            reads += 1;
            // First read: still unconfirmed. After the lost race: confirmed by the other request.
            Ok(Some(if reads == 1 {
                stored_account(ConfirmStatus::Unconfirmed, AccountStatus::Pending)
            } else {
                stored_account(ConfirmStatus::Confirmed, AccountStatus::Completed)
            }))
        });
    accounts
        .expect_confirm_account()
        .times(1)
        .returning(|_, _, _, _, _| Ok(false));
    let service = service(accounts, MockNotifier::new(), NOW_MS);
    let id = Uuid::from_u128(0xE).to_string();
    let result = service
        .confirm_by_id(&caller(), &id, &WriteKey::none())
        .await;
    assert_eq!(
        result.map(|a| a.confirm_status).ok(),
        Some(ConfirmStatus::Confirmed)
    );
}

type Lookup = Box<dyn FnMut(&[u8; 32]) -> Result<Option<TokenLookup>, PortError> + Send>;

fn lookup_of(
    used: bool,
    confirm_status: ConfirmStatus,
    status: AccountStatus,
    expires_ms: i64,
) -> Lookup {
    Box::new(move |_| {
        Ok(Some(TokenLookup {
            account: stored_account(confirm_status, status),
            merchant: MerchantNames {
                business_name: "Acme Payroll".to_owned(),
                name: "acme".to_owned(),
            },
            receiver_names: ["Ada".to_owned(), String::new(), "Lovelace".to_owned()],
            expires_at: DateTime::from_timestamp_millis(expires_ms).unwrap_or_default(),
            used,
        }))
    })
}

/// A store that answers `find_token` with `lookup` and fails the test on any write.
fn read_only_store(lookup: Lookup) -> MockAccountStore {
    let mut accounts = MockAccountStore::new();
    accounts
        .expect_find_token()
        .withf(|hash| *hash == token_hash("t0ken"))
        .times(1)
        .returning(lookup);
    accounts.expect_confirm_account().never();
    accounts.expect_insert_account().never();
    accounts
}

#[tokio::test]
async fn showing_a_link_reports_what_it_can_do_and_writes_nothing() {
    async fn show(lookup: Lookup) -> Result<ConfirmationView, ConfirmError> {
        service(read_only_store(lookup), MockNotifier::new(), NOW_MS)
            .show_confirmation("t0ken")
            .await
    }

    // Valid and unused on an unconfirmed account: confirmable, details masked.
    let view = show(lookup_of(
        false,
        ConfirmStatus::Unconfirmed,
        AccountStatus::Pending,
        NOW_MS + 1,
    ))
    .await;
    let Ok(view) = view else { panic!("{view:?}") };
    assert_eq!(view.state, LinkState::Confirmable);
    // Who asks and whom, as registered: the business name first, the name's empty part left out.
    assert_eq!(
        (view.merchant.as_str(), view.receiver_name.as_str()),
        ("Acme Payroll", "Ada Lovelace")
    );
    assert_eq!(view.method, PayoutMethod::DirectEntry);
    assert_eq!(
        view.masked_details,
        vec![(crate::account::AccountField::Bsb, "012 ***".to_owned())]
    );

    // Spent by the confirmation, or unused on an account confirmed otherwise: already confirmed.
    for used in [true, false] {
        let view = show(lookup_of(
            used,
            ConfirmStatus::Confirmed,
            AccountStatus::Completed,
            NOW_MS + 1,
        ))
        .await;
        assert_eq!(
            view.map(|v| v.state).ok(),
            Some(LinkState::AlreadyConfirmed),
            "used: {used}"
        );
    }

    // Expired (even on a confirmed account), spent on an unconfirmed account, or on an account
    // that cannot be confirmed: nothing to show.
    for (used, confirm_status, status, expires) in [
        (
            false,
            ConfirmStatus::Unconfirmed,
            AccountStatus::Pending,
            NOW_MS,
        ),
        (
            true,
            ConfirmStatus::Confirmed,
            AccountStatus::Completed,
            NOW_MS - 1,
        ),
        (
            true,
            ConfirmStatus::Unconfirmed,
            AccountStatus::Pending,
            NOW_MS + 1,
        ),
        (
            false,
            ConfirmStatus::Unconfirmed,
            AccountStatus::Failed,
            NOW_MS + 1,
        ),
    ] {
        let view = show(lookup_of(used, confirm_status, status, expires)).await;
        assert!(
            matches!(view, Err(ConfirmError::Invalid)),
            "{used} {confirm_status:?} {status:?} {expires}: {view:?}"
        );
    }

    // Unknown.
    assert!(matches!(
        show(Box::new(|_| Ok(None))).await,
        Err(ConfirmError::Invalid)
    ));
    // An outage is not "invalid".
    assert!(matches!(
        show(Box::new(|_| Err(PortError::Unavailable(anyhow::anyhow!(
            "down"
        )))))
        .await,
        Err(ConfirmError::Port(_))
    ));

    // Empty or absurd tokens are not even looked up.
    let mut accounts = MockAccountStore::new();
    accounts.expect_find_token().never();
    let service = service(accounts, MockNotifier::new(), NOW_MS);
    for token in ["", &"x".repeat(129)] {
        assert!(matches!(
            service.show_confirmation(token).await,
            Err(ConfirmError::Invalid)
        ));
        assert!(matches!(
            service.confirm_with_token(token).await,
            Err(ConfirmError::Invalid)
        ));
    }
}

#[tokio::test]
async fn an_expired_link_confirms_nothing_even_on_a_confirmed_account() {
    let posted = service(
        read_only_store(lookup_of(
            true,
            ConfirmStatus::Confirmed,
            AccountStatus::Completed,
            NOW_MS,
        )),
        MockNotifier::new(),
        NOW_MS,
    )
    .confirm_with_token("t0ken")
    .await;
    assert!(matches!(posted, Err(ConfirmError::Invalid)), "{posted:?}");
    // Unused on an account confirmed otherwise: shows it confirmed, writes nothing.
    let posted = service(
        read_only_store(lookup_of(
            false,
            ConfirmStatus::Confirmed,
            AccountStatus::Completed,
            NOW_MS + 1,
        )),
        MockNotifier::new(),
        NOW_MS,
    )
    .confirm_with_token("t0ken")
    .await;
    assert_eq!(
        posted.map(|a| a.confirm_status).ok(),
        Some(ConfirmStatus::Confirmed)
    );
}
