//! `cargo xtask test`: the workspace tests against a real PostgreSQL.
//!
//! Tests use `DATABASE_URL` as a maintenance database and create their own
//! databases in it, so one server serves every test binary. The ISO 20022 tests of
//! `bank-formats` also get `xmllint` and the official XSDs (`iso20022.rs`).

use std::{env, process::ExitCode};

use crate::{cmd, iso20022, paths, postgres::Postgres};

/// Provisions PostgreSQL and runs `cargo test --workspace ARGS...`.
pub fn run(args: Vec<String>) -> Result<ExitCode, String> {
    // Before PostgreSQL, so a failed download leaves no database running.
    let iso20022 = iso20022::provision()?;
    let mut pg = Postgres::provision()?;
    let keep = env::var("PAYOUT_KEEP_PG").is_ok_and(|keep| keep == "1");
    if !keep {
        pg.stop_on_exit();
    }
    eprintln!("xtask: testing against {}", pg.describe());

    let mut cargo = paths::cargo();
    cargo.arg("test");
    // `--workspace` would override any `-p`, so only add it when no packages are picked.
    if !selects_packages(&args) {
        cargo.arg("--workspace");
    }
    cargo.args(&args).env("DATABASE_URL", &pg.url);
    iso20022.apply(&mut cargo);
    let mut child = cargo
        .spawn()
        .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&cargo)))?;
    pg.watch(child.id());
    let status = child
        .wait()
        .map_err(|err| format!("waiting for cargo test: {err}"))?;

    if keep && pg.started_here() {
        eprintln!(
            "xtask: leaving PostgreSQL running (PAYOUT_KEEP_PG=1); `cargo xtask db-stop` stops it"
        );
    }
    pg.shutdown();
    Ok(cmd::exit_code(status))
}

/// Whether cargo arguments (before any `--`) choose packages with `-p`.
fn selects_packages(args: &[String]) -> bool {
    args.iter().take_while(|arg| *arg != "--").any(|arg| {
        arg == "-p"
            || arg == "--package"
            || arg.starts_with("--package=")
            || (arg.starts_with("-p") && !arg.starts_with("--"))
    })
}

#[cfg(test)]
mod tests {
    use super::selects_packages;

    fn args(args: &[&str]) -> Vec<String> {
        args.iter().map(|arg| (*arg).to_owned()).collect()
    }

    #[test]
    fn package_selection() {
        assert!(selects_packages(&args(&["-p", "xtask"])));
        assert!(selects_packages(&args(&["-pxtask"])));
        assert!(selects_packages(&args(&["--package=xtask"])));
        assert!(!selects_packages(&args(&["--release", "--", "-p"])));
        assert!(!selects_packages(&args(&[])));
    }
}
