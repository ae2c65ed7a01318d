//! `AccountStore`: round trips and tenancy, encryption at rest, duplicate details, the outbox,
//! verify matching (and its indexes), confirmation tokens and confirmation races.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use diesel::sql_types::{Bytea, Integer, Jsonb, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use domain::PortError;
use domain::account::input::{AccountInput, RawAccount};
use domain::account::notification::{Channel, Notification, NotificationId};
use domain::account::ports::{
    AccountStore, ConfirmationRequest, ConfirmationToken, InsertAccountError,
};
use domain::account::service::token_hash;
use domain::account::{AccountField, AccountStatus, ConfirmStatus, PayoutMethod, ReceiverAccount};
use domain::builders::ReceiverAccountBuilder;
use domain::events::{EventKind, OutboxEvent};
use domain::idempotency::WriteKey;
use domain::ids::{EventId, ReceiverAccountId, SubaccountId};
use domain::masking::Secret;
use domain::receiver::Receiver;
use domain::receiver::ports::ReceiverStore;
use uuid::Uuid;

use crate::support::{Count, Fixture, PlanLine, at, created_event, receiver, store_for};

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;
const WEEK: i64 = 7 * 24 * 3600 * SECOND;

// ---------------------------------------------------------------------------------------------
// Helpers

/// Stores a new receiver of `subaccount` (an account needs one: foreign key).
pub(crate) async fn new_receiver(fx: &Fixture, subaccount: SubaccountId, email: &str) -> Receiver {
    let r = receiver(subaccount, email, at(T0));
    fx.store
        .insert_receiver(&r, &[created_event(&r)], &WriteKey::none())
        .await
        .expect("insert receiver");
    r
}

/// Raw create fields from (name, value) pairs.
fn raw(fields: &[(&str, &str)]) -> RawAccount {
    let mut raw = RawAccount::default();
    for &(name, value) in fields {
        let field = AccountField::from_name(name).unwrap_or_else(|| panic!("unknown field {name}"));
        let slot = raw.slot(field);
        *slot = Some(value.to_owned());
    }
    raw
}

/// A new `pending`/`unconfirmed` account of `owner`, its details parsed (and normalised) as the
/// create use case does.
fn account(
    owner: &Receiver,
    method: PayoutMethod,
    fields: &[(&str, &str)],
    created_at: DateTime<Utc>,
) -> ReceiverAccount {
    let raw = RawAccount {
        receiver_id: Some(owner.id.to_string()),
        ..raw(fields)
    };
    let input = AccountInput::parse(method, &raw).expect("valid account details");
    assert_eq!(input.details.method(), method);
    ReceiverAccountBuilder::new()
        .id(ReceiverAccountId::from_uuid(Uuid::new_v4()))
        .owner(owner)
        .details(&input.details)
        .status(AccountStatus::Pending)
        .confirm_status(ConfirmStatus::Unconfirmed)
        .created_at(created_at)
        .build()
}

pub(crate) fn direct_entry(
    owner: &Receiver,
    bsb: &str,
    number: &str,
    micros: i64,
) -> ReceiverAccount {
    account(
        owner,
        PayoutMethod::DirectEntry,
        &[("bsb", bsb), ("account_number", number)],
        at(micros),
    )
}

pub(crate) fn ach(
    owner: &Receiver,
    routing: &str,
    number: &str,
    kind: &str,
    micros: i64,
) -> ReceiverAccount {
    account(
        owner,
        PayoutMethod::Ach,
        &[
            ("routing_number", routing),
            ("account_number", number),
            ("account_type", kind),
        ],
        at(micros),
    )
}

fn sepa(owner: &Receiver, micros: i64) -> ReceiverAccount {
    account(
        owner,
        PayoutMethod::Sepa,
        &[("iban", "de89 3704 0044 0532 0130 00"), ("bic", "deutdeff")],
        at(micros),
    )
}

fn digital(owner: &Receiver, recipient: &str, name: &str, micros: i64) -> ReceiverAccount {
    account(
        owner,
        PayoutMethod::Digital,
        &[
            ("recipient", recipient),
            ("name", name),
            ("description", "Monthly rent"),
        ],
        at(micros),
    )
}

/// The text of an account's confirmation token (unique per account).
fn token_text(account: &ReceiverAccount) -> String {
    format!("tok_{}", account.id.as_uuid().simple())
}

fn token_of(account: &ReceiverAccount) -> [u8; 32] {
    token_hash(&token_text(account))
}

pub(crate) fn confirmation(account: &ReceiverAccount) -> ConfirmationToken {
    ConfirmationToken {
        hash: token_of(account),
        expires_at: account.created_at + chrono::Duration::microseconds(WEEK),
    }
}

/// The token in `account`'s confirmation link (in tests: its id's hex digits, reversed).
pub(crate) fn link_token(account: &ReceiverAccount) -> String {
    account
        .id
        .as_uuid()
        .simple()
        .to_string()
        .chars()
        .rev()
        .collect()
}

/// The confirmation request of `account` as create queues it: attempt 1, claimed for a minute.
pub(crate) fn queued(account: &ReceiverAccount) -> Notification {
    Notification {
        id: NotificationId::from_uuid(Uuid::new_v4()),
        channel: Channel::Email,
        request: ConfirmationRequest {
            account_id: account.id,
            subaccount_id: account.subaccount_id,
            to_email: "ada@example.com".to_owned(),
            to_phone: "+61412345678".to_owned(),
            receiver_name: "Ada Lovelace".to_owned(),
            confirm_url: Secret::new(format!(
                "https://pay.example.com/confirm/{}",
                link_token(account)
            )),
            masked_details: account.data.masked(),
        },
        attempt: 1,
        created_at: account.created_at,
        claimed_until: account.created_at + chrono::Duration::minutes(1),
    }
}

pub(crate) fn event(
    kind: EventKind,
    account: &ReceiverAccount,
    when: DateTime<Utc>,
) -> OutboxEvent {
    OutboxEvent::account(kind, EventId::from_uuid(Uuid::new_v4()), account, when)
}

/// Inserts `account` with its token and `accountCreated` event, as the create use case does.
pub(crate) async fn insert(
    fx: &Fixture,
    account: &ReceiverAccount,
) -> Result<(), InsertAccountError> {
    fx.store
        .insert_account(
            account,
            &confirmation(account),
            &[event(
                EventKind::AccountCreated,
                account,
                account.created_at,
            )],
            &queued(account),
            &WriteKey::none(),
        )
        .await
}

/// `account` confirmed at `micros`, and its `accountUpdate` event.
fn confirmed(account: &ReceiverAccount, micros: i64) -> (ReceiverAccount, OutboxEvent) {
    let updated = ReceiverAccount {
        status: AccountStatus::Completed,
        confirm_status: ConfirmStatus::Confirmed,
        updated_at: at(micros),
        ..account.clone()
    };
    let e = event(EventKind::AccountUpdate, &updated, at(micros));
    (updated, e)
}

/// Equal accounts, values compared explicitly (`AccountData`'s `Debug` hides them).
fn assert_same(found: &ReceiverAccount, expected: &ReceiverAccount) {
    assert_eq!(found.id, expected.id);
    assert_eq!(found.receiver_id, expected.receiver_id);
    assert_eq!(found.subaccount_id, expected.subaccount_id);
    assert_eq!(found.method, expected.method);
    assert_eq!(found.status, expected.status);
    assert_eq!(found.confirm_status, expected.confirm_status);
    assert_eq!(found.data.expose_pairs(), expected.data.expose_pairs());
    assert_eq!(found, expected);
}

fn ids(accounts: &[ReceiverAccount]) -> Vec<ReceiverAccountId> {
    accounts.iter().map(|a| a.id).collect()
}

/// The raw values of an account's fields.
fn values(account: &ReceiverAccount) -> Vec<String> {
    account
        .data
        .expose_pairs()
        .into_iter()
        .map(|(_, v)| v.to_owned())
        .collect()
}

async fn account_rows_of_receiver(fx: &Fixture, owner: &Receiver) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM receiver_accounts WHERE receiver_id = $1",
        owner.id.as_uuid(),
    )
    .await
}

async fn token_rows(fx: &Fixture, subaccount: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM account_confirmations WHERE subaccount_id = $1",
        subaccount.as_uuid(),
    )
    .await
}

async fn account_created_rows(fx: &Fixture, subaccount: SubaccountId) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM outbox_events \
         WHERE subaccount_id = $1 AND event_type = 'accountCreated'",
        subaccount.as_uuid(),
    )
    .await
}

async fn outbox_rows_of(fx: &Fixture, account: &ReceiverAccount) -> i64 {
    fx.count_where(
        "SELECT count(*) AS n FROM outbox_events WHERE object_id = $1",
        account.id.as_uuid(),
    )
    .await
}

#[derive(diesel::QueryableByName)]
struct EventRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    subaccount_id: Uuid,
    #[diesel(sql_type = Text)]
    event_type: String,
    #[diesel(sql_type = Integer)]
    sequence: i32,
    #[diesel(sql_type = Jsonb)]
    payload: serde_json::Value,
}

/// The outbox rows of `account`, by sequence.
async fn events_of(fx: &Fixture, account: &ReceiverAccount) -> Vec<EventRow> {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "SELECT id, subaccount_id, event_type, sequence, payload \
         FROM outbox_events WHERE object_id = $1 ORDER BY sequence",
    )
    .bind::<SqlUuid, _>(account.id.as_uuid())
    .load(&mut conn)
    .await
    .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Round trip, tenancy, listing

#[tokio::test]
async fn inserted_account_is_found_by_its_own_subaccount_only() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;

    let accounts = [
        direct_entry(&owner, "012-002", "123456789", T0),
        ach(&owner, "021000021", "000123456789", "Checking", T0 + 1),
        account(
            &owner,
            PayoutMethod::Eft,
            &[
                ("routing_number", "12345-003"),
                ("account_number", "1234567"),
                ("account_type", "SAVINGS"),
            ],
            at(T0 + 2),
        ),
        digital(&owner, "Jane.Doe@Example.com", " Jane Doe ", T0 + 3),
        sepa(&owner, T0 + 4),
        account(
            &owner,
            PayoutMethod::DirectCredit,
            &[("account_number", "01-902-0068389-00")],
            at(T0 + 5),
        ),
    ];
    for a in &accounts {
        insert(&fx, a).await.unwrap();
    }
    for a in &accounts {
        let found = fx
            .store
            .find_account(sub, a.id)
            .await
            .unwrap()
            .expect("stored account");
        assert_same(&found, a);
        // Tenancy: another subaccount does not see it.
        assert!(fx.store.find_account(other, a.id).await.unwrap().is_none());
    }
    // The normalised values are what is stored.
    let de = fx.store.find_account(sub, accounts[0].id).await.unwrap();
    assert_eq!(
        de.unwrap().data.expose_pairs(),
        vec![
            (AccountField::Bsb, "012002"),
            (AccountField::AccountNumber, "123456789")
        ]
    );
    // Unknown id.
    let unknown = ReceiverAccountId::from_uuid(Uuid::new_v4());
    assert!(fx.store.find_account(sub, unknown).await.unwrap().is_none());
}

#[tokio::test]
async fn list_accounts_returns_the_receivers_accounts_oldest_first() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let neighbour = new_receiver(&fx, sub, "grace@example.com").await;
    let foreign = new_receiver(&fx, other, "ada@example.com").await;

    // Inserted out of time order: the listing must sort by creation time.
    let newest = direct_entry(&owner, "012002", "11111111", T0 + 3 * SECOND);
    let oldest = sepa(&owner, T0);
    let middle = ach(&owner, "021000021", "22222222", "savings", T0 + SECOND);
    for a in [&newest, &oldest, &middle] {
        insert(&fx, a).await.unwrap();
    }
    // Accounts of another receiver of the subaccount and of a receiver of another subaccount,
    // interleaved in time.
    insert(
        &fx,
        &direct_entry(&neighbour, "012002", "33333333", T0 + 2 * SECOND),
    )
    .await
    .unwrap();
    insert(&fx, &sepa(&foreign, T0 - SECOND)).await.unwrap();

    let listed = fx.store.list_accounts(sub, owner.id).await.unwrap();
    assert_eq!(ids(&listed), vec![oldest.id, middle.id, newest.id]);
    for (found, expected) in listed.iter().zip([&oldest, &middle, &newest]) {
        assert_same(found, expected);
    }

    assert_eq!(
        fx.store
            .list_accounts(sub, neighbour.id)
            .await
            .unwrap()
            .len(),
        1
    );
    // Another subaccount sees nothing of this receiver, and this one nothing of theirs.
    assert!(
        fx.store
            .list_accounts(other, owner.id)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        fx.store
            .list_accounts(sub, foreign.id)
            .await
            .unwrap()
            .is_empty()
    );
    let theirs = fx.store.list_accounts(other, foreign.id).await.unwrap();
    assert_eq!(theirs.len(), 1);
    assert_eq!(theirs[0].subaccount_id, other);
    // A receiver without accounts.
    let lonely = new_receiver(&fx, sub, "lonely@example.com").await;
    assert!(
        fx.store
            .list_accounts(sub, lonely.id)
            .await
            .unwrap()
            .is_empty()
    );
}

// ---------------------------------------------------------------------------------------------
// Encryption at rest

#[derive(diesel::QueryableByName)]
struct Sealed {
    #[diesel(sql_type = Bytea)]
    data_ciphertext: Vec<u8>,
}

#[derive(diesel::QueryableByName)]
struct RowText {
    #[diesel(sql_type = Text)]
    text: String,
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[tokio::test]
async fn account_values_are_stored_only_encrypted() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let accounts = [
        direct_entry(&owner, "012-002", "123456789", T0),
        ach(&owner, "021000021", "000123456789", "Checking", T0 + 1),
        sepa(&owner, T0 + 2),
        digital(&owner, "Jane.Doe@Example.com", "Jane Doe", T0 + 3),
    ];
    let mut conn = fx.raw().await;
    for a in &accounts {
        insert(&fx, a).await.unwrap();
        let sealed: Sealed =
            diesel::sql_query("SELECT data_ciphertext FROM receiver_accounts WHERE id = $1")
                .bind::<SqlUuid, _>(a.id.as_uuid())
                .get_result(&mut conn)
                .await
                .unwrap();
        // Every other plain column, as JSON text. The fingerprints are HMAC outputs shown as hex,
        // where a short digit string (a BSB) could appear by chance; they are keyed hashes, not
        // values, so they are left out of this search.
        let row: RowText = diesel::sql_query(
            "SELECT (row_to_json(r)::jsonb - 'data_ciphertext' - 'details_fingerprint' - 'fp_bsb' \
               - 'fp_account_number' - 'fp_routing_number' - 'fp_account_type' - 'fp_iban' - 'fp_bic' \
               - 'fp_recipient')::text AS text \
             FROM receiver_accounts r WHERE id = $1",
        )
        .bind::<SqlUuid, _>(a.id.as_uuid())
        .get_result(&mut conn)
        .await
        .unwrap();
        assert!(row.text.contains(&a.id.to_string()), "{}", row.text);
        for value in values(a) {
            assert!(
                !contains(&sealed.data_ciphertext, value.as_bytes()),
                "{:?}: ciphertext contains {value}",
                a.method
            );
            assert!(
                !row.text.to_lowercase().contains(&value.to_lowercase()),
                "{:?}: a column contains {value}: {}",
                a.method,
                row.text
            );
        }
    }
    // The values tested above include the identifiers in their normalised form.
    assert!(values(&accounts[0]).contains(&"123456789".to_owned()));
    assert!(values(&accounts[2]).contains(&"DE89370400440532013000".to_owned()));
}

#[tokio::test]
async fn a_store_with_another_master_key_cannot_read_accounts() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012002", "123456789", T0);
    insert(&fx, &a).await.unwrap();

    let stranger = store_for(fx.db.url(), [9; 32]);
    let err = stranger.find_account(sub, a.id).await.unwrap_err();
    assert!(matches!(err, PortError::Unknown(_)), "{err:?}");
    let err = stranger.list_accounts(sub, owner.id).await.unwrap_err();
    assert!(matches!(err, PortError::Unknown(_)), "{err:?}");
    // The right key still reads it.
    assert!(fx.store.find_account(sub, a.id).await.unwrap().is_some());
}

// ---------------------------------------------------------------------------------------------
// Duplicates

#[tokio::test]
async fn the_same_details_for_one_receiver_are_a_duplicate_and_write_nothing() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let first = direct_entry(&owner, "012-002", "123456789", T0);
    insert(&fx, &first).await.unwrap();
    let email = digital(&owner, "jane@example.com", "Jane", T0 + 1);
    insert(&fx, &email).await.unwrap();
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 2);

    // The same values spelled differently normalise alike; the name and description of a
    // digital account are not matchable, so they do not make it different.
    let again = [
        direct_entry(&owner, "012002", " 123456789 ", T0 + SECOND),
        direct_entry(&owner, "012 002", "123456789", T0 + SECOND),
        digital(&owner, "JANE@Example.COM", "Someone Else", T0 + SECOND),
    ];
    for dup in &again {
        let err = insert(&fx, dup).await.unwrap_err();
        assert!(matches!(err, InsertAccountError::Duplicate), "{err:?}");
        // Nothing of it was written: no account, no token, no event.
        assert!(fx.store.find_account(sub, dup.id).await.unwrap().is_none());
        assert!(fx.store.find_token(&token_of(dup)).await.unwrap().is_none());
        assert_eq!(outbox_rows_of(&fx, dup).await, 0);
    }
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 2);
    assert_eq!(token_rows(&fx, sub).await, 2);
    assert_eq!(account_created_rows(&fx, sub).await, 2);

    // Different details of the same receiver are fine: one value differs...
    insert(&fx, &direct_entry(&owner, "012002", "123456780", T0 + 2))
        .await
        .unwrap();
    insert(
        &fx,
        &ach(&owner, "000312345", "1234567", "checking", T0 + 3),
    )
    .await
    .unwrap();
    insert(&fx, &ach(&owner, "000312345", "1234567", "savings", T0 + 4))
        .await
        .unwrap();
    // ...or the method does (an EFT account with exactly the ACH account's values).
    let eft = account(
        &owner,
        PayoutMethod::Eft,
        &[
            ("routing_number", "12345-003"),
            ("account_number", "1234567"),
            ("account_type", "checking"),
        ],
        at(T0 + 5),
    );
    assert_eq!(
        eft.data.expose(AccountField::RoutingNumber),
        Some("000312345"),
        "same normalised routing number as the ACH account"
    );
    insert(&fx, &eft).await.unwrap();
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 6);

    // The same details for another receiver (of this or another subaccount) are fine.
    let other = fx.subaccount("Other").await.id;
    let neighbour = new_receiver(&fx, sub, "grace@example.com").await;
    let foreign = new_receiver(&fx, other, "ada@example.com").await;
    insert(
        &fx,
        &direct_entry(&neighbour, "012-002", "123456789", T0 + 6),
    )
    .await
    .unwrap();
    insert(&fx, &direct_entry(&foreign, "012-002", "123456789", T0 + 7))
        .await
        .unwrap();
    assert_eq!(account_rows_of_receiver(&fx, &neighbour).await, 1);
    assert_eq!(account_rows_of_receiver(&fx, &foreign).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_inserts_of_the_same_details_store_exactly_one() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let barrier = Arc::new(tokio::sync::Barrier::new(8));
    let tasks: Vec<_> = (0..8_i64)
        .map(|i| {
            let store = fx.store.clone();
            let barrier = Arc::clone(&barrier);
            // Different ids and tokens, the same details (spelled two ways).
            let bsb = if i % 2 == 0 { "012-002" } else { "012002" };
            let a = direct_entry(&owner, bsb, "123456789", T0 + i);
            tokio::spawn(async move {
                let token = confirmation(&a);
                let events = [event(EventKind::AccountCreated, &a, a.created_at)];
                barrier.wait().await;
                store
                    .insert_account(&a, &token, &events, &queued(&a), &WriteKey::none())
                    .await
            })
        })
        .collect();
    let mut ok = 0;
    let mut duplicate = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(()) => ok += 1,
            Err(InsertAccountError::Duplicate) => duplicate += 1,
            Err(e) => panic!("unexpected error: {e:?}"),
        }
    }
    assert_eq!((ok, duplicate), (1, 7));
    assert_eq!(account_rows_of_receiver(&fx, &owner).await, 1);
    assert_eq!(token_rows(&fx, sub).await, 1);
    assert_eq!(account_created_rows(&fx, sub).await, 1);
    assert_eq!(
        crate::notifications::rows(&fx, sub).await,
        1,
        "only the stored account's confirmation request is queued"
    );
}

// ---------------------------------------------------------------------------------------------
// Outbox

#[tokio::test]
async fn inserting_writes_an_account_created_event_with_masked_identifiers() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012-002", "123456789", T0);
    let created = event(EventKind::AccountCreated, &a, a.created_at);
    fx.store
        .insert_account(
            &a,
            &confirmation(&a),
            std::slice::from_ref(&created),
            &queued(&a),
            &WriteKey::none(),
        )
        .await
        .unwrap();

    let rows = events_of(&fx, &a).await;
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row.id, created.id.as_uuid());
    assert_eq!(row.subaccount_id, sub.as_uuid());
    assert_eq!(row.event_type, "accountCreated");
    assert_eq!(row.sequence, 1);
    let p = &row.payload;
    assert_eq!(p["sequence"], serde_json::json!(1));
    assert_eq!(p["event"], "accountCreated");
    assert_eq!(p["receiver_account_id"], a.id.to_string());
    assert_eq!(p["receiver_id"], owner.id.to_string());
    assert_eq!(p["subaccount_id"], sub.to_string());
    assert_eq!(p["subccount_id"], sub.to_string());
    assert_eq!(p["status"], "pending");
    assert_eq!(p["confirm_status"], "unconfirmed");
    assert_eq!(p["bsb"], "012 ***");
    assert_eq!(p["account_number"], "123 ***");
    let text = p.to_string();
    for value in values(&a) {
        assert!(!text.contains(&value), "payload shows {value}: {text}");
    }

    // Other methods: identifiers masked, nothing raw anywhere in the payload.
    let others = [
        sepa(&owner, T0 + 1),
        ach(&owner, "021000021", "000123456789", "checking", T0 + 2),
        digital(&owner, "Jane.Doe@Example.com", "Jane Doe", T0 + 3),
    ];
    for a in &others {
        insert(&fx, a).await.unwrap();
        let rows = events_of(&fx, a).await;
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].sequence, 1);
        let text = rows[0].payload.to_string();
        for value in values(a) {
            assert!(!text.contains(&value), "payload shows {value}: {text}");
        }
    }
    assert_eq!(
        events_of(&fx, &others[0]).await[0].payload["iban"],
        "DE8 ***"
    );
    assert_eq!(
        events_of(&fx, &others[2]).await[0].payload["recipient"],
        "jan ***"
    );
}

#[tokio::test]
async fn confirming_writes_an_account_update_event_with_the_next_sequence() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012-002", "123456789", T0);
    insert(&fx, &a).await.unwrap();
    let (updated, update) = confirmed(&a, T0 + SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated,
                Some(token_of(&a)),
                std::slice::from_ref(&update),
                &confirmed_reaction(),
                &WriteKey::none(),
            )
            .await
            .unwrap()
    );

    let rows = events_of(&fx, &a).await;
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0].event_type, "accountCreated");
    let row = &rows[1];
    assert_eq!(row.id, update.id.as_uuid());
    assert_eq!(row.event_type, "accountUpdate");
    assert_eq!(row.sequence, 2);
    assert_eq!(row.payload["sequence"], serde_json::json!(2));
    assert_eq!(row.payload["event"], "accountUpdate");
    assert_eq!(row.payload["confirm_status"], "confirmed");
    assert_eq!(row.payload["status"], "completed");
    assert_eq!(row.payload["receiver_account_id"], a.id.to_string());
    assert_eq!(row.payload["bsb"], "012 ***");
    let text = row.payload.to_string();
    for value in values(&a) {
        assert!(!text.contains(&value), "payload shows {value}: {text}");
    }
}

// ---------------------------------------------------------------------------------------------
// Verify matching

fn fields(pairs: &[(&str, &str)]) -> Vec<(AccountField, String)> {
    pairs
        .iter()
        .map(|&(k, v)| (AccountField::from_name(k).unwrap(), v.to_owned()))
        .collect()
}

#[tokio::test]
async fn find_first_match_returns_the_oldest_match_of_the_subaccount() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let ada = new_receiver(&fx, sub, "ada@example.com").await;
    let grace = new_receiver(&fx, sub, "grace@example.com").await;
    let foreign = new_receiver(&fx, other, "ada@example.com").await;

    const ROUTING: &str = "021000021";
    // The newer one is inserted first: age, not insertion order, decides.
    let newer = ach(&grace, ROUTING, "987654321", "savings", T0 + 2 * SECOND);
    let older = ach(&ada, ROUTING, "123456789", "checking", T0 + SECOND);
    // Another subaccount's account with the same values, older than both.
    let theirs = ach(&foreign, ROUTING, "987654321", "savings", T0);
    for a in [&newer, &older, &theirs] {
        insert(&fx, a).await.unwrap();
    }
    let find = async |subaccount: SubaccountId, pairs: &[(&str, &str)]| {
        fx.store
            .find_first_match(subaccount, &fields(pairs))
            .await
            .unwrap()
    };

    let found = find(sub, &[("routing_number", ROUTING)]).await.unwrap();
    assert_same(&found, &older);

    let exact = [
        ("routing_number", ROUTING),
        ("account_number", "987654321"),
        ("account_type", "savings"),
    ];
    let found = find(sub, &exact).await.unwrap();
    assert_same(&found, &newer);
    assert_eq!(
        find(sub, &[("account_number", "987654321")])
            .await
            .map(|a| a.id),
        Some(newer.id)
    );
    // Every field must match.
    assert!(
        find(
            sub,
            &[
                ("account_number", "987654321"),
                ("account_type", "checking")
            ]
        )
        .await
        .is_none()
    );
    // A value nobody has.
    assert!(find(sub, &[("account_number", "55555555")]).await.is_none());
    assert!(find(sub, &[("bsb", "012002")]).await.is_none());
    // The other subaccount finds only its own account, and never ours.
    assert_eq!(
        find(other, &[("routing_number", ROUTING)])
            .await
            .map(|a| a.id),
        Some(theirs.id)
    );
    assert!(
        find(other, &[("account_number", "123456789")])
            .await
            .is_none()
    );
    // An empty field list.
    assert!(find(sub, &[]).await.is_none());
    // A subaccount without accounts.
    let empty = fx.subaccount("Empty").await.id;
    assert!(find(empty, &[("routing_number", ROUTING)]).await.is_none());
}

/// The plan of `sql`, whose parameters are `ids` (uuids), then `fp` (bytea).
async fn explain(conn: &mut AsyncPgConnection, sql: &str, ids: &[Uuid], fp: Vec<u8>) -> String {
    let mut query = diesel::sql_query(format!("EXPLAIN {sql}")).into_boxed();
    for id in ids {
        query = query.bind::<SqlUuid, _>(*id);
    }
    let plan: Vec<PlanLine> = query.bind::<Bytea, _>(fp).load(conn).await.unwrap();
    plan.into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n")
}

#[derive(diesel::QueryableByName)]
struct Fingerprints {
    #[diesel(sql_type = Bytea)]
    fp_account_number: Vec<u8>,
    #[diesel(sql_type = Bytea)]
    details_fingerprint: Vec<u8>,
}

#[tokio::test]
async fn verify_and_duplicate_lookups_use_their_indexes() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let other = fx.subaccount("Other").await.id;
    let mut owners = Vec::new();
    for i in 0..6 {
        owners.push(new_receiver(&fx, sub, &format!("r{i}@example.com")).await);
    }
    owners.push(new_receiver(&fx, other, "r@example.com").await);

    // 3000 accounts of `sub` (500 per receiver) and 300 of `other`, through the store, on a few
    // connections at once.
    let mut batches: Vec<Vec<ReceiverAccount>> = vec![Vec::new(); 4];
    for i in 0..3300_i64 {
        let owner = if i < 3000 {
            &owners[usize::try_from(i % 6).unwrap()]
        } else {
            &owners[6]
        };
        let bsb = format!("{:03}-{:03}", i % 97, i % 13);
        let number = (10_000_000 + i).to_string();
        let a = direct_entry(owner, &bsb, &number, T0 + i * SECOND);
        batches[usize::try_from(i % 4).unwrap()].push(a);
    }
    let probe = batches[1][400].clone();
    let tasks: Vec<_> = batches
        .into_iter()
        .map(|batch| {
            let store = fx.store.clone();
            tokio::spawn(async move {
                for a in batch {
                    let events = [event(EventKind::AccountCreated, &a, a.created_at)];
                    store
                        .insert_account(
                            &a,
                            &confirmation(&a),
                            &events,
                            &queued(&a),
                            &WriteKey::none(),
                        )
                        .await
                        .unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let mut conn = fx.raw().await;
    let n: Count = diesel::sql_query("SELECT count(*) AS n FROM receiver_accounts")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(n.n, 3300);
    diesel::sql_query("ANALYZE receiver_accounts")
        .execute(&mut conn)
        .await
        .unwrap();

    // Real fingerprints, as the store wrote them for one account.
    let fps: Fingerprints = diesel::sql_query(
        "SELECT fp_account_number, details_fingerprint FROM receiver_accounts WHERE id = $1",
    )
    .bind::<SqlUuid, _>(probe.id.as_uuid())
    .get_result(&mut conn)
    .await
    .unwrap();

    // A single-field verify. No planner settings are changed: the index must win on its own.
    let verify = "SELECT id FROM receiver_accounts \
                  WHERE subaccount_id = $1 AND fp_account_number = $2 \
                  ORDER BY created_at, id LIMIT 1";
    let plan = explain(
        &mut conn,
        verify,
        &[sub.as_uuid()],
        fps.fp_account_number.clone(),
    )
    .await;
    assert!(
        plan.contains("receiver_accounts_fp_account_number"),
        "plan:\n{plan}"
    );
    assert!(!plan.contains("Seq Scan"), "plan:\n{plan}");
    // The same lookup through the port finds that account.
    let found = fx
        .store
        .find_first_match(
            sub,
            &fields(&[(
                "account_number",
                probe.data.expose(AccountField::AccountNumber).unwrap(),
            )]),
        )
        .await
        .unwrap()
        .expect("the probe account");
    assert_eq!(found.id, probe.id);

    // The statements verify's lookup really runs (`explain_first_match`: the store's own text
    // and binds), for a value about 31 accounts share (a BSB) alone and with the account
    // number: each reads one fingerprint index in order, never sorting or scanning the
    // subaccount's accounts. With `= ANY(fingerprints)` the plan sorted every account sharing
    // the value before `LIMIT 1` (at 1,000,000 accounts, 4,327 of them: verify's p50 4.5 times
    // that at 10,000). CI's sizes cannot show the time; the plan's shape they can.
    let bsb = probe.data.expose(AccountField::Bsb).unwrap().to_owned();
    let number = probe
        .data
        .expose(AccountField::AccountNumber)
        .unwrap()
        .to_owned();
    let asked = [
        fields(&[("bsb", &bsb)]),
        fields(&[("bsb", &bsb), ("account_number", &number)]),
    ];
    let one_key = fx.store.clone();
    // During a rotation: the vault also holds a previous key, one lookup per key.
    let two_keys = {
        let pool =
            adapters_postgres::create_pool(&adapters_postgres::DbConfig::new(fx.db.url())).unwrap();
        let vault = adapters_postgres::Vault::with_previous(
            &Secret::new(crate::support::MASTER_KEY),
            Some(&Secret::new([9; 32])),
        )
        .unwrap();
        adapters_postgres::PgStore::new(pool, Arc::new(vault))
    };
    for (store, keys) in [(&one_key, 1), (&two_keys, 2)] {
        for fields in &asked {
            let plans = store
                .explain_first_match(sub, fields, adapters_postgres::Explain::Plan)
                .await
                .unwrap();
            assert_eq!(plans.len(), keys, "one statement per key: {plans:?}");
            for plan in plans {
                assert!(
                    plan.contains("Index Scan using receiver_accounts_fp_"),
                    "{keys} key(s), {fields:?}:\n{plan}"
                );
                assert!(!plan.contains("Sort"), "{keys} key(s), {fields:?}:\n{plan}");
                assert!(
                    !plan.contains("Seq Scan") && !plan.contains("Bitmap"),
                    "{keys} key(s), {fields:?}:\n{plan}"
                );
            }
        }
        // And the lookup finds the probe under either configuration.
        let found = store
            .find_first_match(sub, &asked[1])
            .await
            .unwrap()
            .expect("the probe account");
        assert_eq!(found.id, probe.id);
    }

    // The duplicate check on insert (with the subaccount: on Citus the unique index leads
    // with it).
    let duplicate = "SELECT id FROM receiver_accounts \
                     WHERE subaccount_id = $1 AND receiver_id = $2 AND details_fingerprint = $3";
    let plan = explain(
        &mut conn,
        duplicate,
        &[sub.as_uuid(), probe.receiver_id.as_uuid()],
        fps.details_fingerprint,
    )
    .await;
    assert!(
        plan.contains("receiver_accounts_details_unique"),
        "plan:\n{plan}"
    );
    assert!(!plan.contains("Seq Scan"), "plan:\n{plan}");
}

// ---------------------------------------------------------------------------------------------
// Tokens and confirmation

#[tokio::test]
async fn find_token_returns_the_account_and_the_tokens_state() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = sepa(&owner, T0);
    let b = direct_entry(&owner, "012002", "123456789", T0 + 1);
    insert(&fx, &a).await.unwrap();
    insert(&fx, &b).await.unwrap();

    let found = fx
        .store
        .find_token(&token_of(&a))
        .await
        .unwrap()
        .expect("token");
    assert_same(&found.account, &a);
    assert_eq!(found.expires_at, confirmation(&a).expires_at);
    assert!(!found.used);
    let found = fx.store.find_token(&token_of(&b)).await.unwrap().unwrap();
    assert_eq!(found.account.id, b.id);

    // Unknown hashes.
    assert!(
        fx.store
            .find_token(&token_hash("no such token"))
            .await
            .unwrap()
            .is_none()
    );
    assert!(fx.store.find_token(&[0; 32]).await.unwrap().is_none());
}

#[tokio::test]
async fn confirm_account_applies_once_then_writes_nothing() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012002", "123456789", T0);
    let b = sepa(&owner, T0 + 1);
    insert(&fx, &a).await.unwrap();
    insert(&fx, &b).await.unwrap();
    let hash = token_of(&a);

    // Another account's token does not confirm this one, and is not used up.
    let (updated, update) = confirmed(&a, T0 + SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &updated,
                Some(token_of(&b)),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    assert!(
        !fx.store
            .find_token(&token_of(&b))
            .await
            .unwrap()
            .unwrap()
            .used
    );
    assert_eq!(outbox_rows_of(&fx, &a).await, 1);

    let (updated, update) = confirmed(&a, T0 + 2 * SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated,
                Some(hash),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    let token = fx.store.find_token(&hash).await.unwrap().unwrap();
    assert!(token.used);
    assert_same(&token.account, &updated);
    let stored = fx.store.find_account(sub, a.id).await.unwrap().unwrap();
    assert_eq!(stored.status, AccountStatus::Completed);
    assert_eq!(stored.confirm_status, ConfirmStatus::Confirmed);
    assert_eq!(stored.updated_at, at(T0 + 2 * SECOND));
    assert_same(&stored, &updated);
    assert_eq!(outbox_rows_of(&fx, &a).await, 2);

    // The same call again: the token is used, nothing is written.
    let (again, update) = confirmed(&a, T0 + 3 * SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &again,
                Some(hash),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    // Without a token, on the confirmed account: refused too.
    let (again, update) = confirmed(&a, T0 + 4 * SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &again,
                None,
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    assert_eq!(outbox_rows_of(&fx, &a).await, 2);
    let stored = fx.store.find_account(sub, a.id).await.unwrap().unwrap();
    assert_eq!(stored.updated_at, at(T0 + 2 * SECOND), "not written again");

    // Without a token (the sandbox helper): confirms, and spends the account's token too.
    let (updated_b, update) = confirmed(&b, T0 + 5 * SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated_b,
                None,
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    let token = fx.store.find_token(&token_of(&b)).await.unwrap().unwrap();
    assert!(token.used, "a confirmed account's links are spent");
    assert_eq!(token.account.confirm_status, ConfirmStatus::Confirmed);
    // Its token cannot confirm it a second time.
    let (again, update) = confirmed(&b, T0 + 6 * SECOND);
    assert!(
        !fx.store
            .confirm_account(
                &again,
                Some(token_of(&b)),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    assert_eq!(outbox_rows_of(&fx, &b).await, 2);
}

/// Adds another confirmation token (text `text`) to `account`, as a resent link would.
async fn add_token(fx: &Fixture, account: &ReceiverAccount, text: &str) {
    let mut conn = fx.raw().await;
    diesel::sql_query(
        "INSERT INTO account_confirmations (token_hash, account_id, subaccount_id, expires_at, created_at) \
         VALUES ($1, $2, $3, now() + interval '7 days', now())",
    )
    .bind::<Bytea, _>(token_hash(text).to_vec())
    .bind::<SqlUuid, _>(account.id.as_uuid())
    .bind::<SqlUuid, _>(account.subaccount_id.as_uuid())
    .execute(&mut conn)
    .await
    .unwrap();
}

#[tokio::test]
async fn confirming_spends_every_token_of_the_account_and_looking_one_up_spends_none() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    let a = direct_entry(&owner, "012002", "123456789", T0);
    let other = sepa(&owner, T0 + 1);
    insert(&fx, &a).await.unwrap();
    insert(&fx, &other).await.unwrap();
    add_token(&fx, &a, "second link").await;

    // Looking tokens up, however often, spends nothing.
    for _ in 0..3 {
        assert!(
            !fx.store
                .find_token(&token_of(&a))
                .await
                .unwrap()
                .unwrap()
                .used
        );
        let second = fx.store.find_token(&token_hash("second link")).await;
        assert!(!second.unwrap().unwrap().used);
    }

    let (updated, update) = confirmed(&a, T0 + SECOND);
    assert!(
        fx.store
            .confirm_account(
                &updated,
                Some(token_of(&a)),
                &[update],
                &confirmed_reaction(),
                &WriteKey::none()
            )
            .await
            .unwrap()
    );
    for hash in [token_of(&a), token_hash("second link")] {
        let token = fx.store.find_token(&hash).await.unwrap().unwrap();
        assert!(token.used);
        assert_eq!(token.account.confirm_status, ConfirmStatus::Confirmed);
    }
    // Another account's token is untouched.
    assert!(
        !fx.store
            .find_token(&token_of(&other))
            .await
            .unwrap()
            .unwrap()
            .used
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_confirmations_apply_exactly_once() {
    let fx = Fixture::new().await;
    let sub = fx.subaccount("Acme").await.id;
    let owner = new_receiver(&fx, sub, "ada@example.com").await;
    // Both with the token, both without, one of each; a few rounds each.
    let rounds: [(bool, bool); 6] = [
        (true, true),
        (true, true),
        (true, true),
        (false, false),
        (true, false),
        (false, true),
    ];
    for (round, (first_token, second_token)) in (0_i64..).zip(rounds) {
        let a = direct_entry(&owner, "012002", &(10_000_000 + round).to_string(), T0);
        insert(&fx, &a).await.unwrap();
        let barrier = Arc::new(tokio::sync::Barrier::new(2));
        let tasks: Vec<_> = [first_token, second_token]
            .into_iter()
            .map(|with_token| {
                let store = fx.store.clone();
                let barrier = Arc::clone(&barrier);
                let (updated, update) = confirmed(&a, T0 + SECOND);
                let token = with_token.then(|| token_of(&a));
                tokio::spawn(async move {
                    barrier.wait().await;
                    store
                        .confirm_account(
                            &updated,
                            token,
                            &[update],
                            &confirmed_reaction(),
                            &WriteKey::none(),
                        )
                        .await
                })
            })
            .collect();
        let mut applied = 0;
        for task in tasks {
            if task.await.unwrap().unwrap() {
                applied += 1;
            }
        }
        assert_eq!(applied, 1, "round {round}");
        let updates = events_of(&fx, &a)
            .await
            .into_iter()
            .filter(|e| e.event_type == "accountUpdate")
            .count();
        assert_eq!(updates, 1, "round {round}");
        let stored = fx.store.find_account(sub, a.id).await.unwrap().unwrap();
        assert_eq!(stored.confirm_status, ConfirmStatus::Confirmed);
        assert_eq!(stored.status, AccountStatus::Completed);
    }
}

/// The reaction a confirmation carries (these tests have no payouts waiting).
fn confirmed_reaction() -> domain::payout::change::PayoutReaction {
    domain::payout::change::PayoutReaction::new(
        domain::payout::change::ReactionTrigger::AccountConfirmed,
        chrono::Utc::now(),
        std::sync::Arc::new(Ids),
    )
}

struct Ids;

impl domain::ports::IdGenerator for Ids {
    fn new_id(&self) -> uuid::Uuid {
        uuid::Uuid::new_v4()
    }
    fn random_bytes(&self) -> [u8; 32] {
        [0; 32]
    }
}
