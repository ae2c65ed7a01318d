//! `cargo xtask test`: the workspace tests against a real PostgreSQL.
//!
//! Tests use `DATABASE_URL` as a maintenance database and create their own
//! databases in it, so one server serves every test binary. The ISO 20022 tests of
//! `bank-formats` also get `xmllint` and the official XSDs (`iso20022.rs`).
//!
//! The SFTP tests of `adapters-filetransfer` run a private OpenSSH sshd: when they are among
//! the tests to run, `sshd` and `ssh-keygen` are found (installed from Debian's
//! `openssh-server` and `openssh-client` when missing and we are root, see `tools.rs`) and
//! passed as `PAYOUT_SSHD` and `PAYOUT_SSH_KEYGEN`.
//!
//! The SMTP tests of `adapters-smtp` (and `app-actix`'s retry test) run Debian's aiosmtpd as a test mail server and make
//! certificates with the `openssl` command: a `python3` that imports `aiosmtpd` (installed
//! from `python3-aiosmtpd` when missing and we are root) and `openssl` are passed as
//! `PAYOUT_PYTHON3` and `PAYOUT_OPENSSL`.
//!
//! `cargo xtask test --citus [ARGS...]` runs the black-box HTTP tests (`app-actix`'s `api`
//! suite) against a local Citus cluster instead: it starts the cluster as `cargo xtask citus`
//! does (leaving it running for the next run; `cargo xtask citus-stop` stops it) and sets
//! `PAYOUT_TEST_CITUS_URL`, so each test's database is made on the cluster with the tables
//! distributed by subaccount. `ARGS` go to `cargo test` (a test name filter, say).

use std::{env, process::ExitCode};

use crate::{citus, cmd, iso20022, paths, postgres::Postgres, tools};

/// The flag that runs the HTTP tests against Citus.
const CITUS_FLAG: &str = "--citus";

/// The crate whose tests need OpenSSH.
const SFTP_TESTS_PACKAGE: &str = "adapters-filetransfer";

/// The crates whose tests need aiosmtpd and openssl (app-actix: the retry job against it).
const SMTP_TESTS_PACKAGES: [&str; 2] = ["adapters-smtp", "app-actix"];

/// Provisions PostgreSQL (and OpenSSH when needed) and runs `cargo test --workspace ARGS...`;
/// with `--citus`, [`run_citus`].
pub fn run(args: Vec<String>) -> Result<ExitCode, String> {
    let options = args.iter().take_while(|arg| *arg != "--").count();
    if args[..options].iter().any(|arg| arg == CITUS_FLAG) {
        let rest = args.into_iter().filter(|arg| arg != CITUS_FLAG).collect();
        return run_citus(rest);
    }
    let openssh = if !selects_packages(&args) || selects_package(&args, SFTP_TESTS_PACKAGE) {
        Some((
            tools::ensure_debian_tool("/usr/sbin/sshd", "openssh-server")?,
            tools::ensure_debian_tool("ssh-keygen", "openssh-client")?,
        ))
    } else {
        None
    };
    let smtp = if !selects_packages(&args)
        || SMTP_TESTS_PACKAGES
            .iter()
            .any(|package| selects_package(&args, package))
    {
        Some((
            tools::ensure_debian_python_module("aiosmtpd", "python3-aiosmtpd")?,
            tools::ensure_debian_tool("openssl", "openssl")?,
        ))
    } else {
        None
    };
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
    if let Some((sshd, ssh_keygen)) = &openssh {
        cargo
            .env("PAYOUT_SSHD", sshd)
            .env("PAYOUT_SSH_KEYGEN", ssh_keygen);
    }
    if let Some((python3, openssl)) = &smtp {
        cargo
            .env("PAYOUT_PYTHON3", python3)
            .env("PAYOUT_OPENSSL", openssl);
    }
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

/// `cargo xtask test --citus ARGS...`: starts the Citus cluster and runs `cargo test -p
/// app-actix --test api ARGS...` with `PAYOUT_TEST_CITUS_URL` naming its coordinator.
fn run_citus(args: Vec<String>) -> Result<ExitCode, String> {
    if selects_packages(&args) {
        return Err(format!(
            "`cargo xtask test {CITUS_FLAG}` runs app-actix's api tests; it takes no -p"
        ));
    }
    let coordinator = citus::start()?;
    let url = citus::maintenance_url(coordinator);
    eprintln!("xtask: testing the HTTP API against Citus at {url}");
    let (cargo_args, test_args) = match args.iter().position(|arg| arg == "--") {
        Some(split) => (args[..split].to_vec(), args[split + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let mut cargo = paths::cargo();
    cargo
        .args(["test", "-p", "app-actix", "--test", "api"])
        .args(&cargo_args)
        .arg("--")
        .args(&test_args);
    cargo.env("PAYOUT_TEST_CITUS_URL", &url);
    let status = cargo
        .status()
        .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&cargo)))?;
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

/// Whether cargo arguments (before any `--`) choose the package `name` with `-p`.
fn selects_package(args: &[String], name: &str) -> bool {
    let args: Vec<&str> = args
        .iter()
        .map(String::as_str)
        .take_while(|arg| *arg != "--")
        .collect();
    args.iter().enumerate().any(|(i, arg)| {
        let value = match *arg {
            "-p" | "--package" => args.get(i + 1).copied(),
            _ => arg
                .strip_prefix("--package=")
                .or_else(|| arg.strip_prefix("-p").filter(|_| !arg.starts_with("--"))),
        };
        value.is_some_and(|value| value == name)
    })
}

#[cfg(test)]
mod tests {
    use super::{selects_package, selects_packages};

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

    #[test]
    fn one_package_selected() {
        let name = "adapters-filetransfer";
        assert!(selects_package(&args(&["-p", name]), name));
        assert!(selects_package(&args(&["-p", "domain", "-p", name]), name));
        assert!(selects_package(&args(&["-padapters-filetransfer"]), name));
        assert!(selects_package(&args(&["--package", name]), name));
        assert!(selects_package(
            &args(&["--package=adapters-filetransfer"]),
            name
        ));
        assert!(!selects_package(&args(&["-p", "domain"]), name));
        assert!(!selects_package(
            &args(&["-p", "domain", "--", "-p", name]),
            name
        ));
        assert!(!selects_package(&args(&[name]), name));
    }
}
