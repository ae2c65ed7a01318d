//! The outage check: PostgreSQL stopped during a load, then started again.

use std::time::{Duration, Instant};

use super::client::{Answer, Api};
use super::world::{run_command, serve, world};
use super::{Args, DOWN_BUDGET};
use crate::Env;

/// The outage check.
pub(super) async fn outage(
    env: &Env,
    args: &Args,
    pg_stop: &str,
    pg_start: &str,
) -> anyhow::Result<Result<String, String>> {
    let world = world(env, args, "payoutd_chaos_outage", args.clients, 1).await?;
    let server = serve(env, &world.payoutd, "outage", &[]).await?;
    let api = Api::new(&server.base_url)?;
    let path = format!("/api/subaccount/{}", world.tenant.subaccount_id);
    // Warm: every client has answered once.
    api.ok(&world.tenant.keys[0], reqwest::Method::GET, &path, None)
        .await?;

    run_command(pg_stop).await?;
    let down_since = Instant::now();
    let outage = Duration::from_millis(args.outage_ms);
    let mut slowest = Duration::ZERO;
    let mut answers = 0;
    let mut wrong = Vec::new();
    while down_since.elapsed() < outage {
        let mut calls = Vec::new();
        for w in 0..args.clients {
            let (api, key, path) = (api.clone(), world.tenant.keys[w].clone(), path.clone());
            calls.push(tokio::spawn(async move {
                let started = Instant::now();
                let get = api.call(&key, reqwest::Method::GET, &path, None, &[]).await;
                (started.elapsed(), get)
            }));
        }
        for call in calls {
            let (took, answer) = call.await?;
            slowest = slowest.max(took);
            answers += 1;
            match answer {
                Answer::Http(503, body) if body["error"][0]["code"] == "SYS503" => {}
                Answer::Http(status, body) => wrong.push(format!("{status} {body}")),
                Answer::Lost(e) => wrong.push(format!("no answer: {e}")),
            }
        }
    }
    let health = reqwest::get(format!("{}/healthz", server.base_url)).await;
    let alive = health.is_ok_and(|r| r.status().is_success());
    run_command(pg_start).await?;
    let back = Instant::now();
    let recovered = loop {
        if let Answer::Http(200, _) = api
            .call(
                &world.tenant.keys[0],
                reqwest::Method::GET,
                &path,
                None,
                &[],
            )
            .await
        {
            break Some(back.elapsed());
        }
        if back.elapsed() > Duration::from_secs(30) {
            break None;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    server.stop().await?;
    if !wrong.is_empty() {
        return Ok(Err(format!(
            "{} of {answers} requests during the outage were not 503 SYS503, e.g. {}",
            wrong.len(),
            wrong[0]
        )));
    }
    if slowest > DOWN_BUDGET {
        return Ok(Err(format!("a request took {slowest:?} during the outage")));
    }
    if !alive {
        return Ok(Err("/healthz did not answer during the outage".to_owned()));
    }
    let Some(recovered) = recovered else {
        return Ok(Err(
            "no request succeeded within 30 s of PostgreSQL's restart".to_owned(),
        ));
    };
    Ok(Ok(format!(
        "{answers} requests during {:.1} s down: all 503 SYS503, slowest {:.0} ms; \
         serving again {:.0} ms after PostgreSQL was back",
        outage.as_secs_f64(),
        slowest.as_secs_f64() * 1000.0,
        recovered.as_secs_f64() * 1000.0
    )))
}
