//! Shared fixtures: a store over a fresh database, subaccounts, receivers and raw SQL access.

use std::sync::Arc;

use adapters_postgres::test_db::TestDb;
use adapters_postgres::{DbConfig, PgStore, Vault, create_pool};
use chrono::{DateTime, Utc};
use diesel::sql_types::{BigInt, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use domain::admin::{AdminPorts, AdminService};
use domain::audit::{AuditAction, AuditContext, AuditEntry};
use domain::builders::ReceiverBuilder;
use domain::events::{EventKind, OutboxEvent};
use domain::ids::{EventId, ReceiverId, SubaccountId};
use domain::masking::Secret;
use domain::ports::{Clock, IdGenerator};
use domain::receiver::{KycStatus, Receiver, ReceiverStatus};
use domain::subaccount::Subaccount;
use uuid::Uuid;

/// The master key of the stores the tests build (unless a test wants another one).
pub const MASTER_KEY: [u8; 32] = [7; 32];

/// A fresh migrated database and a store over it. Keep it alive for the whole test: dropping it
/// drops the database.
pub struct Fixture {
    pub db: TestDb,
    pub store: PgStore,
}

impl Fixture {
    pub async fn new() -> Self {
        let db = TestDb::new().await.expect("test database");
        let store = store_for(db.url(), MASTER_KEY);
        Self { db, store }
    }

    /// A raw connection for inspecting tables.
    pub async fn raw(&self) -> AsyncPgConnection {
        AsyncPgConnection::establish(self.db.url())
            .await
            .expect("raw connection")
    }

    /// Creates a subaccount through the operator port, as the admin CLI does.
    pub async fn subaccount(&self, name: &str) -> Subaccount {
        admin(&self.store)
            .create_subaccount(name, Some("ops@example.com"), None)
            .await
            .expect("create subaccount")
    }

    /// Runs a `count(*) AS n` query with one uuid parameter.
    pub async fn count_where(&self, sql: &str, id: Uuid) -> i64 {
        let mut conn = self.raw().await;
        diesel::sql_query(sql)
            .bind::<SqlUuid, _>(id)
            .get_result::<Count>(&mut conn)
            .await
            .expect("count query")
            .n
    }
}

/// A store over the fixture's database with a pool of one connection, so every checkout is the
/// same session.
pub fn one_connection_store(fx: &Fixture) -> PgStore {
    let mut config = DbConfig::new(fx.db.url());
    config.max_size = 1;
    let pool = create_pool(&config).expect("pool");
    let vault = Vault::new(&Secret::new(MASTER_KEY)).expect("vault");
    PgStore::new(pool, Arc::new(vault))
}

#[derive(diesel::QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text)]
    value: String,
}

/// The setting `name` of the session a one-connection store's pool holds.
pub async fn session_setting(store: &PgStore, name: &str) -> String {
    let mut conn = store.pool().get().await.expect("the pool's connection");
    diesel::sql_query("SELECT current_setting($1) AS value")
        .bind::<Text, _>(name)
        .get_result::<Setting>(&mut *conn)
        .await
        .expect("current_setting")
        .value
}

/// A store over `url` whose vault uses `master_key`.
pub fn store_for(url: &str, master_key: [u8; 32]) -> PgStore {
    let pool = create_pool(&DbConfig::new(url)).expect("pool");
    let vault = Vault::new(&Secret::new(master_key)).expect("vault");
    PgStore::new(pool, Arc::new(vault))
}

/// The webhook address guard is the delivery adapter's (tested there); these tests store
/// whatever URL they set, as with private targets allowed.
fn any_target() -> domain::delivery::ports::MockWebhookTargetGuard {
    let mut targets = domain::delivery::ports::MockWebhookTargetGuard::new();
    targets.expect_check_target().returning(|_| Ok(()));
    targets
}

/// `AdminService` over `store` with a fixed clock and random ids.
pub fn admin(store: &PgStore) -> AdminService {
    AdminService::new(
        AdminPorts::all(Arc::new(store.clone()), Arc::new(any_target())),
        Arc::new(FixedClock(at(1_700_000_000_000_000))),
        Arc::new(RandomIds),
        AuditContext::cli(Some("store-tests")),
    )
}

/// An audit entry for the store calls that write one with their change.
pub fn audit_entry() -> AuditEntry {
    AuditContext::cli(Some("store-tests")).entry(
        &RandomIds,
        &FixedClock(at(1_700_000_000_000_000)),
        AuditAction::FeeSet,
        "subaccount",
        "test",
        None,
        None,
    )
}

/// A clock that always says the same time.
pub struct FixedClock(pub DateTime<Utc>);

impl Clock for FixedClock {
    fn now(&self) -> DateTime<Utc> {
        self.0
    }
}

/// v4 ids and random bytes from two v4 UUIDs (OS randomness; good enough for tests).
pub struct RandomIds;

impl IdGenerator for RandomIds {
    fn new_id(&self) -> Uuid {
        Uuid::new_v4()
    }

    fn random_bytes(&self) -> [u8; 32] {
        let mut bytes = [0u8; 32];
        bytes[..16].copy_from_slice(Uuid::new_v4().as_bytes());
        bytes[16..].copy_from_slice(Uuid::new_v4().as_bytes());
        bytes
    }
}

/// An instant with microsecond precision (what `timestamptz` keeps).
pub fn at(micros: i64) -> DateTime<Utc> {
    DateTime::from_timestamp_micros(micros).expect("valid timestamp")
}

/// A valid receiver of `subaccount` with a new id: `ReceiverBuilder`'s, pending KYC, with a unique
/// applicant id.
pub fn receiver(subaccount: SubaccountId, email: &str, created_at: DateTime<Utc>) -> Receiver {
    ReceiverBuilder::new()
        .id(ReceiverId::from_uuid(Uuid::new_v4()))
        .subaccount(subaccount)
        .email(email)
        .applicant_id(&format!("app_{}", Uuid::new_v4().simple()))
        .status(ReceiverStatus::Pending)
        .kyc_status(KycStatus::Pending)
        .created_at(created_at)
        .build()
}

/// The `receiverCreated` event of `receiver`, as the receiver service writes it.
pub fn created_event(receiver: &Receiver) -> OutboxEvent {
    OutboxEvent::receiver(
        EventKind::ReceiverCreated,
        EventId::from_uuid(Uuid::new_v4()),
        receiver,
        receiver.created_at,
    )
}

#[derive(diesel::QueryableByName)]
pub struct Count {
    #[diesel(sql_type = BigInt)]
    pub n: i64,
}

#[derive(diesel::QueryableByName)]
pub struct PlanLine {
    #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
    pub line: String,
}

#[derive(diesel::QueryableByName, Debug)]
pub struct PlanCounts {
    #[diesel(sql_type = Text)]
    pub statement: String,
    #[diesel(sql_type = BigInt)]
    pub generic_plans: i64,
    #[diesel(sql_type = BigInt)]
    pub custom_plans: i64,
}

/// The generic plan (`EXPLAIN`) of the statement `store` prepared whose text starts with
/// `prefix`, run with arguments that `argument` gives as SQL literals for the column each
/// parameter is compared with (`table`, `column`, as the statement names them: `"t"."c" = $n`);
/// a `LIMIT` is given 1.
pub async fn generic_plan_of(
    store: &PgStore,
    prefix: &str,
    argument: impl Fn(&str, &str) -> String,
) -> String {
    #[derive(diesel::QueryableByName)]
    struct Prepared {
        #[diesel(sql_type = Text)]
        name: String,
        #[diesel(sql_type = Text)]
        statement: String,
    }
    let mut conn = store.pool().get().await.expect("the pool's connection");
    let prepared: Prepared = diesel::sql_query(
        "SELECT name, statement FROM pg_prepared_statements WHERE starts_with(statement, $1)",
    )
    .bind::<Text, _>(prefix)
    .get_result(&mut *conn)
    .await
    .expect("the prepared statement");
    let mut arguments: Vec<(usize, String)> = Vec::new();
    for (at, _) in prepared.statement.match_indices('$') {
        let digits: String = prepared.statement[at + 1..]
            .chars()
            .take_while(char::is_ascii_digit)
            .collect();
        let Ok(n) = digits.parse::<usize>() else {
            continue;
        };
        let before = prepared.statement[..at].trim_end();
        if before.ends_with("LIMIT") {
            arguments.push((n, "1".to_owned()));
            continue;
        }
        let column = [" IS NOT DISTINCT FROM", " >=", " ="]
            .iter()
            .find_map(|op| before.strip_suffix(op))
            .map(|c| c.trim_end_matches(')'))
            .and_then(|c| c.strip_suffix('"'))
            .and_then(|c| c.rsplit_once("\".\""))
            .and_then(|(table, column)| Some((table.rsplit_once('"')?.1, column)))
            .unwrap_or_else(|| panic!("${n} is not compared with a column: {before}"));
        arguments.push((n, argument(column.0, column.1)));
    }
    arguments.sort_by_key(|(n, _)| *n);
    arguments.dedup_by_key(|(n, _)| *n);
    assert!(
        arguments.iter().enumerate().all(|(i, (n, _))| *n == i + 1),
        "every parameter compared with a column: {}",
        prepared.statement
    );
    let list: Vec<String> = arguments.into_iter().map(|(_, a)| a).collect();
    explain_generic(&mut conn, &prepared.name, &list.join(", ")).await
}

/// The generic plan (`EXPLAIN`) of the statement `store` prepared whose text starts with
/// `prefix`, run with `arguments` (SQL literals, comma-separated).
pub async fn generic_plan_with(store: &PgStore, prefix: &str, arguments: &str) -> String {
    #[derive(diesel::QueryableByName)]
    struct Prepared {
        #[diesel(sql_type = Text)]
        name: String,
    }
    let mut conn = store.pool().get().await.expect("the pool's connection");
    let prepared: Prepared = diesel::sql_query(
        "SELECT name FROM pg_prepared_statements WHERE starts_with(statement, $1)",
    )
    .bind::<Text, _>(prefix)
    .get_result(&mut *conn)
    .await
    .expect("the prepared statement");
    explain_generic(&mut conn, &prepared.name, arguments).await
}

async fn explain_generic(
    conn: &mut diesel_async::AsyncPgConnection,
    name: &str,
    arguments: &str,
) -> String {
    diesel::sql_query("SET plan_cache_mode = force_generic_plan")
        .execute(conn)
        .await
        .expect("plan_cache_mode");
    let plan: Vec<PlanLine> = diesel::sql_query(format!("EXPLAIN EXECUTE {name}({arguments})"))
        .load(conn)
        .await
        .expect("EXPLAIN");
    diesel::sql_query("RESET plan_cache_mode")
        .execute(conn)
        .await
        .expect("plan_cache_mode");
    plan.into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The statements prepared in the session of a one-connection store whose text starts with
/// `prefix`, with how often PostgreSQL ran each with its generic plan and with one made for
/// the call's parameters (a custom plan: planned afresh on that call).
pub async fn plans_of(store: &PgStore, prefix: &str) -> Vec<PlanCounts> {
    let mut conn = store.pool().get().await.expect("the pool's connection");
    diesel::sql_query(
        "SELECT statement, generic_plans, custom_plans FROM pg_prepared_statements \
         WHERE starts_with(statement, $1) ORDER BY statement",
    )
    .bind::<Text, _>(prefix)
    .load(&mut *conn)
    .await
    .expect("pg_prepared_statements")
}
