//! `AccountStore`: round trips and tenancy, encryption at rest, duplicate details, the outbox,
//! verify matching (and its indexes), confirmation tokens and confirmation races; one module each,
//! with the helpers they share (and other stores' tests use) here.

use chrono::{DateTime, Utc};
use diesel::sql_types::{Integer, Jsonb, Text, Uuid as SqlUuid};
use diesel_async::RunQueryDsl;
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

use crate::support::{Fixture, at, created_event, receiver};

mod confirmation;
mod duplicates;
mod encryption;
mod outbox;
mod round_trip;
mod verify_matching;

const T0: i64 = 1_700_000_000_123_456;
const SECOND: i64 = 1_000_000;
const WEEK: i64 = 7 * 24 * 3600 * SECOND;

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
