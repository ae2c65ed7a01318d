//! The test databases themselves (`adapters_postgres::test_db`): those a killed run left
//! behind are dropped by the next test process, and no database of a running process is.

use adapters_postgres::test_db::{TestDb, citus_url, sweep_leftovers, with_host_port};
use diesel::sql_types::Text;
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};

/// A process id above any Linux allows (`pid_max` is at most 2^22), so never a running one.
const ENDED: u32 = 4_194_999;

/// Held by each test of this file while it sweeps: a sweep drops every leftover of the server,
/// so one test's sweep would take (or fail on) the leftovers another made.
static SWEEPING: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

#[derive(diesel::QueryableByName)]
struct Name {
    #[diesel(sql_type = Text)]
    name: String,
}

async fn databases(url: &str, names: &[String]) -> Vec<String> {
    let mut conn = AsyncPgConnection::establish(url).await.unwrap();
    let found: Vec<Name> = diesel::sql_query(
        "SELECT datname::text AS name FROM pg_database WHERE datname = ANY($1) ORDER BY 1",
    )
    .bind::<diesel::sql_types::Array<Text>, _>(names)
    .load(&mut conn)
    .await
    .unwrap();
    found.into_iter().map(|n| n.name).collect()
}

async fn create(url: &str, name: &str) {
    let mut conn = AsyncPgConnection::establish(url).await.unwrap();
    diesel::sql_query(format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
}

/// Makes on every server of `urls` a database of an ended process, one of this process and
/// one whose name only looks like a test database's; sweeps; checks that only the first went.
async fn sweep_on(urls: &[String]) {
    let _sweeping = SWEEPING.lock().await;
    let id = || uuid::Uuid::new_v4().simple().to_string();
    let ended = format!("payoutd_test_p{ENDED}_{}", id());
    let ended_citus = format!("payoutd_citus_p{ENDED}_{}", id());
    let ours = format!("payoutd_test_p{}_{}", std::process::id(), id());
    let unlike = format!("payoutd_test_p{ENDED}x_{}", id());
    let all = [&ended, &ended_citus, &ours, &unlike].map(String::clone);
    for url in urls {
        for name in &all {
            create(url, name).await;
        }
    }
    // A leftover may exist on some nodes only (a run killed while creating it).
    let partial = format!("payoutd_citus_p{ENDED}_{}", id());
    create(urls.last().unwrap(), &partial).await;

    let dropped = sweep_leftovers(urls).await.unwrap();
    for name in [&ended, &ended_citus, &partial] {
        assert!(dropped.contains(name), "{name} not in {dropped:?}");
    }
    for url in urls {
        let mut left = databases(url, &[all.to_vec(), vec![partial.clone()]].concat()).await;
        left.sort();
        let mut kept = vec![ours.clone(), unlike.clone()];
        kept.sort();
        assert_eq!(left, kept, "on {url}");
    }
    for url in urls {
        let mut conn = AsyncPgConnection::establish(url).await.unwrap();
        for name in [&ours, &unlike] {
            diesel::sql_query(format!("DROP DATABASE {name}"))
                .execute(&mut conn)
                .await
                .unwrap();
        }
    }
}

#[tokio::test]
async fn databases_left_by_ended_processes_are_dropped_and_no_others() {
    // This process's own sweep, run by its first test database, is over before the test's
    // leftovers exist: it cannot take them first.
    let _first = TestDb::postgres().await.unwrap();
    let server = std::env::var("DATABASE_URL").unwrap();
    sweep_on(&[server]).await;
}

async fn execute(url: &str, sql: &str) -> diesel::QueryResult<usize> {
    let mut conn = AsyncPgConnection::establish(url).await.unwrap();
    diesel::sql_query(sql).execute(&mut conn).await
}

#[tokio::test]
async fn a_leftover_that_cannot_be_dropped_does_not_keep_the_others() {
    let _first = TestDb::postgres().await.unwrap();
    let server = std::env::var("DATABASE_URL").unwrap();
    let _sweeping = SWEEPING.lock().await;
    // Leftovers are dropped in the order of their names, so the one that cannot be dropped
    // (PostgreSQL refuses to drop a template database) comes first.
    let id = || uuid::Uuid::new_v4().simple().to_string();
    let stuck = format!("payoutd_test_p{ENDED}_0{}", &id()[1..]);
    let after = format!("payoutd_test_p{ENDED}_f{}", &id()[1..]);
    create(&server, &stuck).await;
    create(&server, &after).await;
    execute(&server, &format!("ALTER DATABASE {stuck} IS_TEMPLATE true"))
        .await
        .unwrap();

    let swept = sweep_leftovers(std::slice::from_ref(&server)).await;
    let left = databases(&server, &[stuck.clone(), after.clone()]).await;
    // Cleaned up before any assertion can fail: a template left behind would make every later
    // test process's sweep warn about it.
    execute(
        &server,
        &format!("ALTER DATABASE {stuck} IS_TEMPLATE false"),
    )
    .await
    .unwrap();
    execute(&server, &format!("DROP DATABASE {stuck}"))
        .await
        .unwrap();

    let message = format!("{:#}", swept.unwrap_err());
    assert!(message.contains(&stuck), "{message}");
    assert!(
        message.contains("cannot drop a template database"),
        "{message}"
    );
    assert!(!message.contains(&after), "{message}");
    assert_eq!(left, vec![stuck], "the leftover after it was not dropped");
}

#[derive(diesel::QueryableByName)]
struct NodeRow {
    #[diesel(sql_type = Text)]
    nodename: String,
    #[diesel(sql_type = diesel::sql_types::Integer)]
    nodeport: i32,
}

#[tokio::test]
async fn on_citus_leftovers_are_dropped_on_every_node() {
    let Some(coordinator) = citus_url() else {
        return;
    };
    let _first = TestDb::citus_unmigrated(&coordinator).await.unwrap();
    let mut conn = AsyncPgConnection::establish(&coordinator).await.unwrap();
    let nodes: Vec<NodeRow> = diesel::sql_query(
        "SELECT nodename::text AS nodename, nodeport FROM pg_dist_node \
         WHERE noderole = 'primary' ORDER BY groupid",
    )
    .load(&mut conn)
    .await
    .unwrap();
    assert!(nodes.len() > 1, "the cluster has no workers");
    let urls: Vec<String> = nodes
        .iter()
        .map(|n| with_host_port(&coordinator, &n.nodename, n.nodeport).unwrap())
        .collect();
    sweep_on(&urls).await;
}
