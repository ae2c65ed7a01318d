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
//! app-actix's tests also run Debian programs, found or installed the same way from one list
//! ([`APP_TOOLS`]): the test that executes docs/DEPLOY.md (`tests/deploy_md.rs`) runs `jq`,
//! `curl`, `objcopy` (Debian's `binutils`) and `ssh-keygen` (passed as `PAYOUT_SSH_KEYGEN`),
//! and the console's browser tests (`tests/console_browser/`) drive Debian's `chromium` through
//! its `chromedriver` (package `chromium-driver`), passed as `PAYOUT_CHROMIUM` and
//! `PAYOUT_CHROMEDRIVER`.
//!
//! app-actix's generated-client tests get openapi-python-client (a venv) and openapi-typescript,
//! TypeScript and newman (npm), pinned in `xtask/openapi-clients/` and installed under
//! `<target dir>/openapi-clients` (`openapi_clients.rs`).
//!
//! `cargo xtask test --citus [-p PACKAGE] [ARGS...]` runs the database tests against a local
//! Citus cluster instead: adapters-postgres' tests (`--tests`: its unit tests, the Citus
//! placement test and the store tests), then the black-box HTTP tests (`app-actix`'s `api`
//! suite, but for the client-side modules of [`CITUS_SKIPPED_MODULES`]); `-p adapters-postgres`
//! or `-p app-actix` runs one of them. It starts the cluster as
//! `cargo xtask citus` does (leaving it running for the next run; `cargo xtask citus-stop` stops
//! it) and sets `PAYOUT_TEST_CITUS_URL` (and `PAYOUT_CITUS_URL`, which the placement test reads),
//! so each test's database is made on the cluster with the tables distributed by subaccount.
//! It also provisions plain PostgreSQL as above and sets `DATABASE_URL`, for the tests that
//! compare with it or check plans only it runs (`TestDb::postgres`).
//! `ARGS` go to each `cargo test` (a test name filter, say).

use std::env;

use crate::{
    citus, cmd, failure::Failure, iso20022, openapi_clients::ClientTools, paths,
    postgres::Postgres, tools,
};

/// The flag that runs the database tests against Citus.
const CITUS_FLAG: &str = "--citus";

/// What `--citus` runs, in order: each package with the `cargo test` arguments that choose
/// its tests. The HTTP suite is chosen by name over the whole workspace, so Cargo resolves
/// features as for `cargo xtask test` and reuses its build (`-p app-actix` alone compiles tokio,
/// reqwest, hyper and everything above them again; see `paths::DEBUG_BUILD`). adapters-postgres'
/// unit tests cannot be chosen that way without every other crate's, so that suite has its own
/// build.
const CITUS_SUITES: [(&str, &[&str]); 2] = [
    ("adapters-postgres", &["-p", "adapters-postgres", "--tests"]),
    ("app-actix", &["--workspace", "--test", "api"]),
];

/// The HTTP suite's modules `--citus` skips: they test what a client outside sees of the API
/// (clients generated from `docs/openapi.json`, the Postman collection, the signing and webhook
/// examples in other languages) through requests every other module makes too, so on Citus they
/// would only run the same store calls again, with a Python, Node and newman run each.
const CITUS_SKIPPED_MODULES: [&str; 3] = [
    "openapi_clients::",
    "signing_examples::",
    "webhook_examples::",
];

/// The crate whose tests need OpenSSH.
const SFTP_TESTS_PACKAGE: &str = "adapters-filetransfer";

/// The crates whose tests need aiosmtpd and openssl (app-actix: the retry job against it).
const SMTP_TESTS_PACKAGES: [&str; 2] = ["adapters-smtp", "app-actix"];

/// The crate whose tests run the Debian programs of [`APP_TOOLS`].
const APP_TOOLS_PACKAGE: &str = "app-actix";

/// The Debian programs app-actix's tests run: (binary, the Debian package that ships it, the
/// variable that gives the tests its path, if they need it). The test that runs docs/DEPLOY.md
/// (`tests/deploy_md.rs`) uses `jq`, `curl` and `objcopy` besides aiosmtpd and openssl, and
/// makes the banks' SFTP keys with `ssh-keygen`; the console's browser tests
/// (`tests/console_browser/`) start `chromedriver`, which starts `chromium`.
const APP_TOOLS: [(&str, &str, Option<&str>); 6] = [
    ("jq", "jq", None),
    ("curl", "curl", None),
    ("objcopy", "binutils", None),
    ("ssh-keygen", "openssh-client", Some("PAYOUT_SSH_KEYGEN")),
    ("chromium", "chromium", Some("PAYOUT_CHROMIUM")),
    (
        "chromedriver",
        "chromium-driver",
        Some("PAYOUT_CHROMEDRIVER"),
    ),
];

/// The crate whose tests generate clients from `docs/openapi.json` and run them.
const CLIENT_TESTS_PACKAGE: &str = "app-actix";

/// Provisions PostgreSQL (and OpenSSH when needed) and runs `cargo test --workspace ARGS...`;
/// with `--citus`, [`run_citus`].
pub fn run(args: Vec<String>) -> Result<(), Failure> {
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
    let mut app_tools = Vec::new();
    if !selects_packages(&args) || selects_package(&args, APP_TOOLS_PACKAGE) {
        for (binary, package, variable) in APP_TOOLS {
            let path = tools::ensure_debian_tool(binary, package)?;
            if let Some(variable) = variable {
                app_tools.push((variable, path));
            }
        }
    }
    let client_tools = if !selects_packages(&args) || selects_package(&args, CLIENT_TESTS_PACKAGE) {
        Some(ClientTools::provision()?)
    } else {
        None
    };
    // Before PostgreSQL, so a failed download leaves no database running.
    let iso20022 = iso20022::provision()?;
    let mut pg = Postgres::provision()?;
    let keep = env::var("PAYOUT_KEEP_PG").is_ok_and(|keep| keep == "1");
    if keep {
        pg.keep_running();
    } else {
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
    for (variable, path) in &app_tools {
        cargo.env(variable, path);
    }
    if let Some((sshd, ssh_keygen)) = &openssh {
        cargo
            .env("PAYOUT_SSHD", sshd)
            .env("PAYOUT_SSH_KEYGEN", ssh_keygen);
    }
    if let Some(tools) = &client_tools {
        tools.apply(&mut cargo);
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
    Failure::check_exit(
        "every selected test to pass (failures above)",
        &cargo,
        status,
    )
}

/// `cargo xtask test --citus [-p PACKAGE] ARGS...`: starts the Citus cluster and runs each of
/// [`CITUS_SUITES`] (those `-p` picks, else all), `cargo test SUITE ARGS...`, with
/// `PAYOUT_TEST_CITUS_URL` naming its coordinator. Every chosen suite runs even when one fails;
/// the exit code is the first failure's.
fn run_citus(args: Vec<String>) -> Result<(), Failure> {
    let (cargo_args, test_args) = match args.iter().position(|arg| arg == "--") {
        Some(split) => (args[..split].to_vec(), args[split + 1..].to_vec()),
        None => (args, Vec::new()),
    };
    let (packages, cargo_args) = take_packages(&cargo_args)?;
    let suites: Vec<(&str, &[&str])> = CITUS_SUITES
        .into_iter()
        .filter(|(package, _)| packages.is_empty() || packages.iter().any(|p| p == package))
        .collect();
    if let Some(unknown) = packages
        .iter()
        .find(|p| !CITUS_SUITES.iter().any(|(package, _)| package == p))
    {
        return Err(Failure::new(
            format!(
                "-p naming {}",
                CITUS_SUITES.map(|(package, _)| package).join(" or ")
            ),
            format!("-p {unknown}"),
        ));
    }
    // Some of these tests compare with plain PostgreSQL or check plans only plain PostgreSQL
    // runs (`TestDb::postgres`): they get a server as `cargo xtask test` provides it.
    let mut pg = Postgres::provision()?;
    pg.stop_on_exit();
    let citus = citus::start()?;
    let url = citus.maintenance_url();
    let mut failed: Vec<(&str, Failure)> = Vec::new();
    for (package, suite) in suites {
        eprintln!("xtask: testing {package} against Citus at {url}");
        let mut cargo = paths::cargo();
        cargo
            .arg("test")
            .args(suite)
            .args(&cargo_args)
            .arg("--")
            .args(&test_args);
        if package == CLIENT_TESTS_PACKAGE {
            for module in CITUS_SKIPPED_MODULES {
                cargo.args(["--skip", module]);
            }
        }
        cargo
            .env("PAYOUT_TEST_CITUS_URL", &url)
            .env("PAYOUT_CITUS_URL", &url)
            .env("DATABASE_URL", &pg.url);
        let mut child = cargo
            .spawn()
            .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&cargo)))?;
        pg.watch(child.id());
        let status = child
            .wait()
            .map_err(|err| format!("waiting for cargo test: {err}"))?;
        if let Err(failure) = Failure::check_exit(
            format!("every test of {package} to pass on Citus (failures above)"),
            &cargo,
            status,
        ) {
            failed.push((package, failure));
        }
    }
    pg.shutdown();
    let names: Vec<&str> = failed.iter().map(|(package, _)| *package).collect();
    match failed.into_iter().next() {
        None => Ok(()),
        Some((_, first)) => Err(first.with_detail(format!(
            "xtask: tests failed on Citus in {}",
            names.join(", ")
        ))),
    }
}

/// The packages cargo arguments (before any `--`) choose with `-p`, and the other arguments.
fn take_packages(args: &[String]) -> Result<(Vec<String>, Vec<String>), String> {
    let mut packages = Vec::new();
    let mut rest = Vec::new();
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        if arg == "-p" || arg == "--package" {
            let package = args
                .next()
                .ok_or_else(|| format!("{arg} needs a package name"))?;
            packages.push(package.clone());
        } else if let Some(package) = arg
            .strip_prefix("--package=")
            .or_else(|| arg.strip_prefix("-p").filter(|_| !arg.starts_with("--")))
        {
            packages.push(package.to_owned());
        } else {
            rest.push(arg.clone());
        }
    }
    Ok((packages, rest))
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
    use super::{selects_package, selects_packages, take_packages};

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

    #[test]
    fn packages_taken_from_the_citus_arguments() {
        assert_eq!(
            take_packages(&args(&["-p", "app-actix", "--release", "payout"])),
            Ok((args(&["app-actix"]), args(&["--release", "payout"])))
        );
        assert_eq!(
            take_packages(&args(&["--package=adapters-postgres", "-papp-actix"])),
            Ok((args(&["adapters-postgres", "app-actix"]), Vec::new()))
        );
        assert_eq!(
            take_packages(&args(&["--package", "app-actix"])),
            Ok((args(&["app-actix"]), Vec::new()))
        );
        assert_eq!(
            take_packages(&args(&["payout"])),
            Ok((Vec::new(), args(&["payout"])))
        );
        assert!(take_packages(&args(&["--release", "-p"])).is_err());
    }
}
