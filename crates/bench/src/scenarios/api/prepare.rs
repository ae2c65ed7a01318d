//! Preparing a run: seeding the database, starting payoutd, and finding the pages and the
//! variables the list case and the pgbench scripts need.

use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Text};
use diesel_async::AsyncPgConnection;
use domain::money::Asset;
use serde_json::Value;
use uuid::Uuid;

use super::citus;
use super::{Args, Case, CaseKind, FEE, FUNDING, Fixture, Harness, Pages, Plan, SCRIPTS, Setup};
use crate::db::BenchDb;
use crate::load::{Credentials, Request};
use crate::pgbench::Pgbench;
use crate::seed::generate::Generator;
use crate::seed::payouts::seed_payouts;
use crate::server::{Payoutd, Server, new_master_key};
use crate::{Env, load, seed};

#[derive(QueryableByName)]
pub(super) struct KeyId {
    #[diesel(sql_type = Text)]
    id: String,
}

/// The id of an API key (the nonce insert of the pgbench scripts needs it).
pub(super) async fn key_id(conn: &mut AsyncPgConnection, api_key: &str) -> anyhow::Result<String> {
    use diesel_async::RunQueryDsl;
    let found: KeyId = diesel::sql_query("SELECT id::text AS id FROM api_keys WHERE api_key = $1")
        .bind::<Text, _>(api_key)
        .get_result(conn)
        .await
        .context("reading the API key's id")?;
    Ok(found.id)
}

/// Seeds the database, starts payoutd, and finds the pages the list case asks for.
pub(super) async fn prepare<'a>(
    env: &'a Env,
    args: &'a Args,
    db: &BenchDb,
    cases: &[Case],
    plan: Plan,
) -> anyhow::Result<(Harness<'a>, Setup)> {
    let master_key = new_master_key();
    let payoutd = Payoutd::new(&env.payoutd, &db.url, &master_key);
    eprintln!("payoutd-bench: creating and migrating {}", db.name);
    payoutd.migrate().await?;
    let clients = cases.iter().map(|c| c.clients).max().unwrap_or(1);
    eprintln!("payoutd-bench: a subaccount with {clients} API keys, funded, with fee templates");
    let tenant = payoutd.tenant("Bench subaccount", clients).await?;
    let sub = tenant.subaccount_id.clone();
    for &asset in Asset::ALL {
        let code = asset.code();
        payoutd
            .admin(&[
                "fund",
                "--subaccount",
                &sub,
                "--asset",
                code,
                "--amount",
                FUNDING,
                "--reason",
                "API bench float",
            ])
            .await?;
        payoutd
            .admin(&[
                "set-fee",
                "--subaccount",
                &sub,
                "--asset",
                code,
                "--fixed",
                FEE.0,
                "--percentage",
                FEE.1,
                "--min-amount",
                FEE.2,
            ])
            .await?;
    }
    let subaccount = Uuid::parse_str(&sub)?;
    let run_id = Uuid::new_v4().simple().to_string()[..8].to_owned();
    let tag = format!("b{run_id}");

    eprintln!(
        "payoutd-bench: seeding {} receivers and accounts",
        args.receivers
    );
    let generator = Generator::new(args.receivers, 0x00A9_1BE1).with_sql_ids(&tag);
    let vault = Arc::new(seed::vault(&master_key)?);
    let seeded = seed::seed(db, Arc::clone(&vault), subaccount, &generator).await?;
    seed::check_with_store(db, vault, subaccount, &generator).await?;
    // Payable receivers: KYC completed (active) and accounts confirmed.
    db.execute(&format!(
        "UPDATE receivers SET status = 2, kyc_status = 1 WHERE subaccount_id = '{subaccount}';
         UPDATE receiver_accounts SET status = 'completed', confirm_status = 'confirmed'
           WHERE subaccount_id = '{subaccount}';"
    ))
    .await?;
    db.execute("VACUUM (ANALYZE) receivers, receiver_accounts")
        .await?;
    // One open batch per currency, due in 30 days, for the payouts of both payoutd and pgbench
    // to join (the server's batch job never runs it during the measurement).
    db.execute(&format!(
        "INSERT INTO batches (id, subaccount_id, asset, status, batch_run_time, created_at, updated_at)
         SELECT gen_random_uuid(), '{subaccount}', a, 'open', now() + interval '30 days', now(), now()
         FROM unnest(ARRAY['AUD', 'USD', 'CAD', 'EUR', 'NZD']) AS a"
    ))
    .await?;
    eprintln!("payoutd-bench: seeding {} payouts", args.payouts);
    let payouts_took = seed_payouts(db, subaccount, &tag, args.receivers, args.payouts).await?;
    eprintln!(
        "payoutd-bench: seeded receivers in {:.1} s, payouts in {:.1} s",
        seeded.insert.as_secs_f64() + seeded.vacuum_analyze.as_secs_f64(),
        payouts_took.as_secs_f64()
    );

    let mut conn = db.connect().await?;
    let [key, ..] = tenant.keys.as_slice() else {
        anyhow::bail!("no API key");
    };
    let key_id = key_id(&mut conn, &key.api_key).await?;

    let log = env.out_dir.join(if db.is_citus() {
        "payoutd-api-citus.log"
    } else {
        "payoutd-api.log"
    });
    let server = payoutd.serve(&log).await?;
    let fixture = Fixture {
        subaccount_id: sub.clone(),
        generator,
        tag: tag.clone(),
        receivers: args.receivers,
        payouts: args.payouts,
        page_size: args.page_size,
        run_id,
        pages: None,
    };
    let mut vars = vec![
        ("sub".to_owned(), sub.clone()),
        ("keyid".to_owned(), key_id),
        ("tag".to_owned(), tag),
        ("receivers".to_owned(), args.receivers.to_string()),
        ("payouts".to_owned(), args.payouts.to_string()),
        ("limit".to_owned(), (args.page_size + 1).to_string()),
    ];
    let mut fixture = fixture;
    let mut walk_pages = None;
    if cases.iter().any(|c| c.kind == CaseKind::List) {
        let started = Instant::now();
        let pages = walk(&server, key, &fixture).await?;
        walk_pages = Some(started.elapsed());
        eprintln!(
            "payoutd-bench: walked to page {} in {:.1} s",
            pages.deep,
            started.elapsed().as_secs_f64()
        );
        vars.extend(page_vars(&mut conn, subaccount, args.page_size, pages.deep).await?);
        fixture.pages = Some(pages);
    }

    let pgbench = Pgbench::find(&env.pgbench);
    if pgbench.is_none() {
        eprintln!(
            "payoutd-bench: warning: cannot run pgbench ({}); the database ceilings are left out",
            env.pgbench.display()
        );
    }
    let dir = env.out_dir.join("pgbench");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let mut scripts = Vec::new();
    for (name, text) in SCRIPTS {
        let path = dir.join(format!("{name}.sql"));
        std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        scripts.push((name.to_owned(), path));
    }
    let setup = Setup {
        seed_receivers: seeded.insert + seeded.vacuum_analyze,
        seed_payouts: payouts_took,
        walk_pages,
        pgbench: pgbench.as_ref().map(|p| p.path().to_path_buf()),
        pgbench_vars: vars.clone(),
    };
    Ok((
        Harness {
            env,
            args,
            plan,
            db: db.clone(),
            conn,
            workers: citus::Worker::connect_all(db).await?,
            server,
            fixture: Arc::new(fixture),
            keys: tenant.keys,
            pgbench,
            scripts,
            vars,
            next_seq: 0,
        },
        setup,
    ))
}

/// Pages through the list from page 1 as a client does, checking every page, and returns the
/// last page's cursor and what pages 1 and last hold.
pub(super) async fn walk(
    server: &Server,
    key: &Credentials,
    fixture: &Fixture,
) -> anyhow::Result<Pages> {
    let client = load::client(1)?;
    let deep = fixture.payouts.div_ceil(fixture.page_size);
    let mut lastkey: Option<String> = None;
    let mut expected = [(String::new(), 0), (String::new(), 0)];
    let mut cursor = String::new();
    for page in 1..=deep {
        let mut path = format!(
            "/api/payout/?subaccount_id={}&limit={}",
            fixture.subaccount_id, fixture.page_size
        );
        if let Some(lastkey) = &lastkey {
            path.push_str("&lastkey=");
            path.push_str(lastkey);
            cursor = lastkey.clone();
        }
        let request = Request {
            method: reqwest::Method::GET,
            path,
            body: Vec::new(),
            headers: Vec::new(),
            kind: 0,
            tag: (),
        };
        let (status, body) = load::send(&client, &server.base_url, key, &request).await?;
        anyhow::ensure!(
            status == 200,
            "page {page} answered {status}: {}",
            String::from_utf8_lossy(&body)
        );
        let answer: Value = serde_json::from_slice(&body)?;
        let items = answer["payload"]
            .as_array()
            .context("a page without items")?;
        let want = if page < deep {
            fixture.page_size
        } else {
            fixture.payouts - (deep - 1) * fixture.page_size
        };
        anyhow::ensure!(
            items.len() as u64 == want,
            "page {page} has {} items, not {want}",
            items.len()
        );
        let first = items
            .first()
            .and_then(|item| item["id"].as_str())
            .unwrap_or_default()
            .to_owned();
        if page == 1 {
            expected[0] = (first.clone(), items.len());
        }
        if page == deep {
            expected[1] = (first, items.len());
        }
        lastkey = answer["lastkey"].as_str().map(str::to_owned);
        anyhow::ensure!(
            lastkey.is_some() == (page < deep),
            "page {page} of {deep} has lastkey {lastkey:?}"
        );
    }
    let kinds = [
        "page-1",
        &*Box::leak(format!("page-{deep}").into_boxed_str()),
    ];
    Ok(Pages {
        deep,
        cursor,
        expected,
        kinds,
    })
}

#[derive(QueryableByName)]
pub(super) struct PageIds {
    #[diesel(sql_type = Text)]
    receiver_ids: String,
    #[diesel(sql_type = Text)]
    account_ids: String,
    #[diesel(sql_type = Text)]
    after_at: String,
    #[diesel(sql_type = Text)]
    after_id: String,
}

/// pgbench variables of the list scripts: the ids payoutd looks up for page 1 and for the deep
/// page (its page query fetches one row more than the page), and the deep page's cursor.
pub(super) async fn page_vars(
    conn: &mut AsyncPgConnection,
    subaccount: Uuid,
    page_size: u64,
    deep: u64,
) -> anyhow::Result<Vec<(String, String)>> {
    use diesel_async::RunQueryDsl;
    let mut vars = Vec::new();
    for (prefix, offset) in [("first", 0), ("after", (deep - 1) * page_size)] {
        let ids: PageIds = diesel::sql_query(
            "WITH page AS (
               SELECT receiver_id, account_id, created_at, id FROM payouts
               WHERE subaccount_id = $1 ORDER BY created_at DESC, id DESC
               OFFSET $2 LIMIT $3)
             SELECT array_agg(receiver_id)::text AS receiver_ids,
                    array_agg(account_id)::text AS account_ids,
                    coalesce((SELECT created_at::text FROM payouts WHERE subaccount_id = $1
                              ORDER BY created_at DESC, id DESC OFFSET greatest($2 - 1, 0) LIMIT 1), '') AS after_at,
                    coalesce((SELECT id::text FROM payouts WHERE subaccount_id = $1
                              ORDER BY created_at DESC, id DESC OFFSET greatest($2 - 1, 0) LIMIT 1), '') AS after_id
             FROM page",
        )
        .bind::<diesel::sql_types::Uuid, _>(subaccount)
        .bind::<BigInt, _>(i64::try_from(offset)?)
        .bind::<BigInt, _>(i64::try_from(page_size + 1)?)
        .get_result(conn)
        .await
        .context("reading the ids of a page")?;
        vars.push((format!("{prefix}_rids"), ids.receiver_ids));
        vars.push((format!("{prefix}_aids"), ids.account_ids));
        if prefix == "after" {
            vars.push(("after_at".to_owned(), ids.after_at));
            vars.push(("after_id".to_owned(), ids.after_id));
        }
    }
    Ok(vars)
}
