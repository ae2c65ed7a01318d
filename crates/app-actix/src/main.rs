//! The `payoutd` binary.

use std::process::ExitCode;

use clap::Parser;

/// mimalloc rather than the system allocator: glibc's malloc and free were about a fifth of
/// the server's CPU under the payout benchmark (docs/BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[actix_web::main]
async fn main() -> ExitCode {
    // A missing .env is the normal case; a malformed one is worth a word.
    if let Err(e) = dotenvy::dotenv()
        && !e.not_found()
    {
        eprintln!("warning: .env not read: {e}");
    }
    app_actix::telemetry::init();
    let cli = app_actix::cli::Cli::parse();
    match app_actix::cli::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
