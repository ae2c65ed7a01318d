//! The HTTP ceiling: a bare actix-web endpoint with payoutd's HTTP stack (same actix-web, same
//! number of workers) that reads the request body and answers every method and path with one
//! fixed JSON body, without authentication or a database.
//!
//! It runs as a child process of the harness (`payoutd-bench bare-http`, a hidden subcommand),
//! so its CPU time and memory are its own, and it is driven by the same load generator with the
//! same signed requests as payoutd. The body is as large as payoutd's mean answer in the case
//! being measured, so that the ceiling includes writing that many bytes.

use std::path::Path;
use std::process::Command;

use actix_web::web::{self, Bytes, Data};
use actix_web::{App, HttpResponse, HttpServer};
use anyhow::Context;

use crate::server::{Server, free_port};

/// Options of the hidden `bare-http` subcommand.
#[derive(Debug, Clone, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long)]
    bind: String,
    /// Size of the fixed JSON answer, bytes (at least the size of an empty envelope).
    #[arg(long, default_value_t = 64)]
    body_bytes: usize,
    /// Worker threads (default: the number of cores, as payoutd).
    #[arg(long)]
    workers: Option<usize>,
}

/// `{"message":"Bare endpoint","payload":"xxxx…"}`, `bytes` long (or the shortest such body).
pub fn fixed_body(bytes: usize) -> String {
    let head = r#"{"message":"Bare endpoint","payload":""#;
    let tail = r#""}"#;
    let filler = bytes.saturating_sub(head.len() + tail.len());
    format!("{head}{}{tail}", "x".repeat(filler))
}

async fn answer(_body: Bytes, fixed: Data<Bytes>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(fixed.get_ref().clone())
}

/// Runs the endpoint until killed (the `bare-http` subcommand).
pub fn serve(args: &Args) -> anyhow::Result<()> {
    let fixed = Data::new(Bytes::from(fixed_body(args.body_bytes)));
    let workers = args
        .workers
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, usize::from));
    actix_web::rt::System::new().block_on(async move {
        HttpServer::new(move || {
            App::new()
                .app_data(fixed.clone())
                .default_service(web::to(answer))
        })
        .workers(workers)
        .bind(&args.bind)
        .with_context(|| format!("cannot listen on {}", args.bind))?
        .run()
        .await
        .context("the bare endpoint failed")
    })
}

/// Starts the bare endpoint (this binary, `bare-http`) on a free loopback port, answering
/// `body_bytes` bytes, its output going to `log`.
pub async fn start(body_bytes: u64, log: &Path) -> anyhow::Result<Server> {
    let port = free_port()?;
    let exe = std::env::current_exe().context("cannot find the harness binary")?;
    let mut command = Command::new(exe);
    command
        .arg("bare-http")
        .arg("--bind")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--body-bytes")
        .arg(body_bytes.to_string());
    Server::start(command, port, log).await
}

#[cfg(test)]
mod tests {
    use super::fixed_body;

    #[test]
    fn the_body_is_json_of_the_asked_size() {
        for size in [64, 1000, 100_000] {
            let body = fixed_body(size);
            assert!(serde_json::from_str::<serde_json::Value>(&body).is_ok());
            assert_eq!(body.len(), size);
        }
        assert!(serde_json::from_str::<serde_json::Value>(&fixed_body(0)).is_ok());
    }
}
