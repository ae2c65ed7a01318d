//! Project automation for payoutd, run as `cargo xtask <command>`.
//!
//! Plain Rust with hand-parsed arguments, in the spirit of rust-analyzer's
//! xtask. `cargo xtask help` lists the commands.

mod bank;
mod bench;
mod citus;
mod clock;
mod cmd;
mod demo_operator;
mod failure;
mod flags;
mod fuzz;
mod http;
mod iso20022;
#[cfg(test)]
mod modgraph;
mod openapi_clients;
mod paths;
mod postgres;
mod postman;
mod rails_demo;
mod serve;
mod sign;
mod test;
#[cfg(test)]
mod tidy;
mod tools;
mod webhook_receiver;

use std::{env, process::ExitCode};

use crate::{failure::Failure, flags::Flags, postgres::Postgres};

const HELP: &str = "\
Usage: cargo xtask <command> [args]

Commands:
  db               Provision PostgreSQL, create and migrate the `payoutd` database,
                   leave it running; print DATABASE_URL=<payoutd database> for the
                   server and MAINTENANCE_DATABASE_URL=<postgres database> for tests
  db-stop [--force]
                   Stop the private PostgreSQL cluster if it is running and no xtask
                   command uses it (--force: even then)
  citus            Start a local Citus cluster (a coordinator and two workers in
                   <target dir>/citus on 127.0.0.1:$PAYOUT_CITUS_PORT and the next two,
                   default 25440), building and installing Citus first if the server
                   lacks it (from $PAYOUT_CITUS_SOURCE or a shared/vendor/citus beside
                   a parent of the checkout; as root); create `payoutd` with the
                   extension and the workers; print DATABASE_URL and
                   MAINTENANCE_DATABASE_URL like `db`
  citus-stop [--force]
                   Stop the local Citus cluster's nodes, unless an xtask command uses
                   them (--force: even then)
  test [ARGS...]   Run `cargo test --workspace ARGS...` against PostgreSQL (also
                   installs xmllint, fetches the ISO 20022 XSDs, and installs the pinned
                   OpenAPI client generators and newman under <target dir>/openapi-clients)
  test --citus [-p PACKAGE] [ARGS...]
                   Start the Citus cluster (as `citus`) and run adapters-postgres'
                   tests (`--tests ARGS...`), then app-actix's HTTP tests (`--test api
                   ARGS...`), with each test's database on it; `-p` picks one of them
  serve [--webhook-url URL] [--verbose]
                   Migrate, create a funded demo subaccount with an API key, an AUD
                   fee and a webhook URL (by default xtask's own receiver on 127.0.0.1,
                   which verifies and prints each delivery; with --verbose also its
                   headers and body as received), run payoutd with its console on
                   127.0.0.1:8081 (PAYOUT_CONSOLE_BIND) and a demo admin enrolled in it
                   (password and TOTP key printed and in target/dev/demo.env)
  bench <scenario> [--smoke] [flags]
                   Build payoutd in release mode and benchmark it against
                   PostgreSQL (`cargo xtask bench help` lists the scenarios)
  bench api --citus [--smoke] [flags]
                   The api cases on plain PostgreSQL, then on the Citus cluster
                   (started as `citus`): Citus' overhead and per-node CPU per request
  chaos [--citus] [--smoke] [flags]
                   Fault tests against a release build (--smoke: debug, small): kill -9
                   during payout load, PostgreSQL stopped during load, two instances on
                   one database, kill -9 at a cut-off of 100,000 payouts (2,000 with
                   --smoke) during the file's generation, during its SFTP upload (to
                   sshd on 127.0.0.1) and before the upload is recorded; prints a
                   pass/fail table (same as `cargo xtask bench chaos`). --citus: against the local Citus cluster (started as `citus`
                   does, on $PAYOUT_CITUS_PORT, and left running): kill -9 during payout
                   load on distributed tables, and a worker stopped during load (its
                   subaccounts get 503 SYS503, the others are served, all are served
                   again once it is back; nothing acknowledged is lost). It holds the
                   cluster (or that worker) alone: refused while another command uses it
  fuzz [--examples N] [--seed S] [-- ARGS...]
                   Run schemathesis against a fresh payoutd (sandbox mode): no 5xx,
                   every response as /openapi.json documents it
  bank [--dir D] [--transport sftp|directory] [--return-share S] [--port P]
       [--late-after-secs N] [--interac-callback URL] [--interac-secret S]
                   Run a local bank for the production rails: a responder answering
                   payoutd's files in each rail's D/<rail>/outbound (NACHA and ABA /
                   Standard 005 / IB4B returns and dishonours, pain.002) in its
                   inbound, served by sshd (SFTP) on 127.0.0.1 (--transport sftp, the
                   default) or read and written by payoutd itself (--transport
                   directory: no sshd, no keys), and the Interac e-Transfer partner
                   API (signed batches, reports, callbacks to URL); prints as JSON
                   how payoutd reaches it
  rails-demo       Run payoutd in production mode against that bank: receivers,
                   KYC, confirmed accounts of all six methods, payouts, the bank's
                   and the partner's answers; prints one JSON line of counts
                   (methods, payouts, successful, failed, returned, files,
                   partner_batches, callbacks, ledger); files under target/rails-demo/;
                   --console then keeps it running with the operator console open
                   to a demo admin until Ctrl-C
  sign --api-key K --api-secret S [--v2 --method M --path P --body B] [--nonce N]
                   Print a `signature` header value (v2 also needs the header
                   `x-signature-version: 2` on the request)
  totp [--secret BASE32]
                   Print the current sign-in code of the console's demo operator (its
                   key from --secret, else CONSOLE_TOTP_SECRET from demo.env; by
                   payoutd's clock, CONSOLE_DAYS_BACK days back when set)
  postman          Write docs/examples/postman/payoutd.postman_collection.json from
                   docs/openapi.json: every operation, signed by a pre-request script,
                   and a sandbox walkthrough that pays a receiver
  help             Show this message

PostgreSQL comes from DATABASE_URL if set, else a server on localhost:5432,
else a private cluster in <target dir>/pg on 127.0.0.1:$PAYOUT_PG_PORT
(default 25432), built from the installed server binaries.
Several commands may use the private cluster at once: each holds a lease on it,
and the cluster is stopped when the last of them ends (if the one that started
it asked for that); `db` and PAYOUT_KEEP_PG=1 leave it running. A cluster whose
server binary was replaced under it (a package upgrade) is restarted when no
command uses it, and refused while one does.
`test` also needs OpenSSH's sshd and ssh-keygen for the SFTP tests; as root
it installs them (Debian: openssh-server, openssh-client) when missing; and
aiosmtpd and openssl for the SMTP tests (Debian: python3-aiosmtpd, openssl);
and python3 with venv and npm for app-actix's generated-client tests (it
installs the pinned generators under <target dir>/openapi-clients).
";

/// Each command with what it is expected to do: the last line of a failure says this was
/// expected when the failure itself does not say more precisely.
const COMMANDS: &[(&str, &str)] = &[
    ("db", "PostgreSQL running with payoutd's database migrated"),
    ("db-stop", "the private PostgreSQL cluster stopped"),
    ("citus", "a running Citus cluster with payoutd's database"),
    ("citus-stop", "the Citus cluster's nodes stopped"),
    ("test", "every selected test to build and pass"),
    ("serve", "payoutd serving the demo subaccount until stopped"),
    ("bench", "the benchmark to run and pass its verdicts"),
    ("chaos", "every fault test to pass"),
    (
        "fuzz",
        "no 5xx and every response as /openapi.json documents it",
    ),
    ("bank", "the local bank serving until stopped"),
    ("rails-demo", rails_demo::GOAL),
    ("sign", "a signature header value"),
    ("totp", "the demo operator's current sign-in code"),
    (
        "postman",
        "the Postman collection written from docs/openapi.json",
    ),
    (
        postgres::REAPER_COMMAND,
        "the cluster stopped once xtask is gone",
    ),
];

fn main() -> ExitCode {
    let (command, args) = match arguments() {
        Ok(parsed) => parsed,
        Err(err) => return Failure::from(err).report("", "UTF-8 arguments"),
    };
    let Some(command) = command else {
        print!("{HELP}");
        return ExitCode::SUCCESS;
    };
    let Some(&(_, goal)) = COMMANDS.iter().find(|(name, _)| *name == command) else {
        if matches!(command.as_str(), "help" | "--help" | "-h") {
            print!("{HELP}");
            return ExitCode::SUCCESS;
        }
        return Failure::new("a command `cargo xtask help` lists", format!("`{command}`"))
            .report(&command, "");
    };
    match run(&command, args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(&command, goal),
    }
}

/// The command name (if any) and its arguments.
fn arguments() -> Result<(Option<String>, Vec<String>), String> {
    let mut args = env::args_os()
        .skip(1)
        .map(|arg| {
            arg.into_string()
                .map_err(|arg| format!("argument is not valid UTF-8: {}", arg.to_string_lossy()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let command = if args.is_empty() {
        None
    } else {
        Some(args.remove(0))
    };
    Ok((command, args))
}

/// Runs `command`, one of [`COMMANDS`].
fn run(command: &str, args: Vec<String>) -> Result<(), Failure> {
    match command {
        "db" => db(args),
        "db-stop" => {
            let mut flags = Flags::new(args);
            let force = flags.switch("--force");
            flags.finish()?;
            Ok(postgres::stop_private(force)?)
        }
        "citus" => citus::run(args),
        "citus-stop" => citus::stop(args),
        "test" => test::run(args),
        "serve" => serve::run(args),
        "bench" => bench::run(args),
        "chaos" => {
            // `chaos` is the bench harness's fault-test scenario.
            let mut args = args;
            args.insert(0, "chaos".to_owned());
            bench::run(args)
        }
        "fuzz" => fuzz::run(args),
        "bank" => bank::run(args),
        "rails-demo" => rails_demo::run(args),
        "sign" => sign::run(args),
        "totp" => demo_operator::totp(args),
        "postman" => {
            Flags::new(args).finish()?;
            Ok(postman::run()?)
        }
        postgres::REAPER_COMMAND => Ok(postgres::reap(&args)?),
        other => Err(Failure::new(
            "a command `cargo xtask help` lists",
            format!("`{other}`"),
        )),
    }
}

/// `cargo xtask db`: provisions PostgreSQL, creates and migrates the database payoutd uses
/// (as `serve` does), leaves the server running and prints both URLs: `DATABASE_URL` for
/// payoutd, and the maintenance database the tests create their own databases from.
fn db(args: Vec<String>) -> Result<(), Failure> {
    Flags::new(args).finish()?;
    let mut pg = Postgres::provision()?;
    // Left running for whoever comes next, whoever started it.
    pg.keep_running();
    eprintln!("xtask: using {}", pg.describe());
    let server_url = serve::server_database_url(&pg);
    // Migrations need only the database; the master key matters to commands that use secrets.
    let payoutd = serve::Payoutd {
        bin: paths::target_dir().join("debug").join("payoutd"),
        env: vec![("DATABASE_URL", server_url.clone())],
    };
    serve::build_and_migrate(&payoutd)?;
    // The tests' maintenance database is `postgres` even when DATABASE_URL names another.
    let maintenance_url = serve::with_database(&pg.url, "postgres");
    print!("{}", db_output(&server_url, &maintenance_url));
    pg.shutdown();
    Ok(())
}

/// What `cargo xtask db` prints: two shell assignments, each with a comment saying who
/// uses it, so `set -a; eval "$(cargo xtask db)"; set +a` also works.
fn db_output(server_url: &str, maintenance_url: &str) -> String {
    format!(
        "# payoutd (serve, migrate, admin): the migrated database `cargo xtask serve` uses\n\
         DATABASE_URL={}\n\
         # tests: the maintenance database each test creates its own database from;\n\
         # run them with DATABASE_URL=\"$MAINTENANCE_DATABASE_URL\" cargo test ...\n\
         MAINTENANCE_DATABASE_URL={}\n",
        cmd::sh_quote(server_url),
        cmd::sh_quote(maintenance_url)
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::db_output;

    #[test]
    fn db_prints_the_server_database_and_the_labelled_maintenance_database() {
        let output = db_output(
            "postgres://postgres@127.0.0.1:25432/payoutd",
            "postgres://postgres@127.0.0.1:25432/postgres",
        );
        let assignments: Vec<&str> = output
            .lines()
            .filter(|line| !line.starts_with('#'))
            .collect();
        assert_eq!(
            assignments,
            [
                "DATABASE_URL=postgres://postgres@127.0.0.1:25432/payoutd",
                "MAINTENANCE_DATABASE_URL=postgres://postgres@127.0.0.1:25432/postgres",
            ]
        );
        let shell = std::process::Command::new("sh")
            .arg("-c")
            .arg("eval \"$1\"; printf '%s %s' \"$DATABASE_URL\" \"$MAINTENANCE_DATABASE_URL\"")
            .arg("sh")
            .arg(db_output(
                "postgres://h/payoutd",
                "postgres://u:p w@h/postgres",
            ))
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8(shell.stdout).unwrap(),
            "postgres://h/payoutd postgres://u:p w@h/postgres"
        );
    }
}
