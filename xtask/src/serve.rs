//! `cargo xtask serve`: a local payoutd that is ready to try.
//!
//! Provisions PostgreSQL, builds and migrates payoutd, creates a funded demo
//! subaccount with an API key, prints curl commands for it, then runs the
//! server in the foreground.

use std::{
    env,
    fs::{self, File, OpenOptions},
    io::{self, Read, Write},
    os::unix::fs::{OpenOptionsExt, PermissionsExt},
    path::{Path, PathBuf},
    process::Command,
};

use serde_json::Value;

use crate::{
    cmd::{self, sh_quote},
    demo_operator::{self, DemoOperator},
    failure::Failure,
    flags::Flags,
    paths,
    postgres::Postgres,
    webhook_receiver::{Detail, Receiver},
};

const DEFAULT_BIND: &str = "127.0.0.1:8080";
pub(crate) const DEFAULT_CONSOLE_BIND: &str = "127.0.0.1:8081";

/// How long the console may take to answer before the demo operator's enrolment gives up.
pub(crate) const CONSOLE_START: std::time::Duration = std::time::Duration::from_secs(60);

/// Whether payoutd could listen on `bind`; if not, how to choose another address.
pub(crate) fn check_port(bind: &str) -> Result<(), String> {
    match std::net::TcpListener::bind(bind) {
        Ok(listener) => {
            drop(listener);
            Ok(())
        }
        Err(err) if err.kind() == io::ErrorKind::AddrInUse => Err(format!(
            "{bind} is already in use (another payoutd?); choose another address with \
             PAYOUT_BIND, e.g. `PAYOUT_BIND=127.0.0.1:8081 cargo xtask serve`"
        )),
        Err(err) => Err(format!(
            "cannot listen on {bind}: {err}; set PAYOUT_BIND to a local address such as \
             127.0.0.1:8081"
        )),
    }
}

/// The AUD fee template the demo sets, as `admin set-fee` takes it: a fixed part and the
/// smallest fee in cents, and a percentage of the amount. The README's figures follow.
const FEE_FIXED: &str = "30";
const FEE_PERCENTAGE: &str = "1.25";
const FEE_MIN: &str = "50";

/// Runs the whole demo setup, then payoutd until it exits.
pub fn run(args: Vec<String>) -> Result<(), Failure> {
    let mut flags = Flags::new(args);
    let webhook_url = flags.value("--webhook-url")?;
    let detail = if flags.switch("--verbose") {
        Detail::HeadersAndBody
    } else {
        Detail::Line
    };
    flags.finish()?;
    // Before anything is created: a busy port would otherwise fail only after the demo
    // subaccount and demo.env were written.
    let bind = env::var("PAYOUT_BIND").unwrap_or_else(|_| DEFAULT_BIND.to_owned());
    check_port(&bind)?;
    let console_bind =
        env::var("PAYOUT_CONSOLE_BIND").unwrap_or_else(|_| DEFAULT_CONSOLE_BIND.to_owned());
    check_port(&console_bind).map_err(|e| e.replace("PAYOUT_BIND", "PAYOUT_CONSOLE_BIND"))?;
    // Bound now, so the subaccount can be given its URL; it answers once the secret is known.
    let (receiver, webhook_url) = match webhook_url {
        Some(url) => (None, url),
        None => {
            let receiver = Receiver::bind()
                .map_err(|err| format!("cannot listen for webhooks on 127.0.0.1: {err}"))?;
            let url = receiver.url();
            (Some(receiver), url)
        }
    };
    let mut pg = Postgres::provision()?;
    pg.stop_on_exit();
    eprintln!("xtask: serving with {}", pg.describe());

    let sandbox = env::var("PAYOUT_SANDBOX").unwrap_or_else(|_| "true".to_owned());
    // The demo's receiver is on loopback, which the webhook target guard refuses unless
    // private targets are allowed: allowed here explicitly, for this payoutd only.
    let allow_private =
        env::var("PAYOUT_WEBHOOK_ALLOW_PRIVATE").unwrap_or_else(|_| "true".to_owned());
    let payoutd = Payoutd {
        bin: paths::target_dir().join("debug").join("payoutd"),
        env: vec![
            ("DATABASE_URL", server_database_url(&pg)),
            ("PAYOUT_MASTER_KEY", master_key()?),
            ("PAYOUT_SANDBOX", sandbox),
            ("PAYOUT_WEBHOOK_ALLOW_PRIVATE", allow_private),
            ("PAYOUT_CONSOLE_BIND", console_bind.clone()),
        ],
    };
    build_and_migrate(&payoutd)?;

    let created = payoutd.json(&[
        "admin",
        "create-subaccount",
        "--name",
        "Demo subaccount",
        "--email",
        "demo@example.com",
        "--postback-url",
        &webhook_url,
    ])?;
    let subaccount = field(&created, "subaccount_id")?;
    let webhook_secret = field(&created, "webhook_secret")?;
    let key = payoutd.json(&["admin", "issue-key", "--subaccount", &subaccount])?;
    let balance = payoutd.json(&[
        "admin",
        "fund",
        "--subaccount",
        &subaccount,
        "--asset",
        "AUD",
        "--amount",
        "1000000",
        "--reason",
        "development float",
    ])?;
    payoutd.json(&[
        "admin",
        "set-fee",
        "--subaccount",
        &subaccount,
        "--asset",
        "AUD",
        "--fixed",
        FEE_FIXED,
        "--percentage",
        FEE_PERCENTAGE,
        "--min-amount",
        FEE_MIN,
    ])?;
    // A demo admin per run, like the demo subaccount: invited now, enrolled once the console
    // answers.
    let operator_email = format!(
        "admin-{}@demo.example",
        subaccount.get(..8).unwrap_or(&subaccount)
    );
    let invited = payoutd.json(&[
        "admin",
        "create-operator",
        "--email",
        &operator_email,
        "--role",
        "admin",
    ])?;
    let enrolment_link = field(&invited, "enrolment_link")?;
    let mut demo = Demo {
        server_env: payoutd.env.clone(),
        base_url: base_url(&bind),
        api_key: field(&key, "api_key")?,
        api_secret: field(&key, "api_secret")?,
        available: field(&balance, "available").unwrap_or_else(|_| "?".to_owned()),
        subaccount,
        webhook: Webhook {
            url: webhook_url,
            secret: webhook_secret,
            received_here: receiver.is_some(),
        },
        console: ConsoleLogin {
            url: base_url(&console_bind),
            email: operator_email,
            enrolment: Enrolment::Pending(enrolment_link.clone()),
        },
    };

    let mut serve = payoutd.command(&["serve"]);
    let mut child = serve
        .spawn()
        .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&serve)))?;
    pg.watch(child.id());
    match demo_operator::enrol(&enrolment_link, std::time::Instant::now() + CONSOLE_START) {
        Ok(operator) => demo.console.enrolment = Enrolment::Done(operator),
        Err(err) => eprintln!(
            "xtask: the demo operator could not be enrolled ({err}); open its enrolment \
             link to do it by hand"
        ),
    }
    let env_file = demo.write_env_file(&dev_dir()?)?;
    print!("{}", demo.banner(&env_file));
    io::stdout()
        .flush()
        .map_err(|err| format!("cannot write to stdout: {err}"))?;
    if let Some(receiver) = receiver {
        receiver.serve(demo.webhook.secret.clone(), detail, Box::new(io::stdout()));
    }
    let status = child
        .wait()
        .map_err(|err| format!("waiting for payoutd: {err}"))?;
    pg.shutdown();
    Failure::check_exit("payoutd to serve until stopped", &serve, status)
}

/// The database payoutd uses on `pg`: the `DATABASE_URL` the user set, unchanged, unless it
/// names the maintenance database (`postgres`, what the tests are given); then, as on a
/// server xtask found, `payoutd` on the same server.
pub(crate) fn server_database_url(pg: &Postgres) -> String {
    if pg.is_from_env() && !names_maintenance_database(&pg.url) {
        pg.url.clone()
    } else {
        with_database(&pg.url, "payoutd")
    }
}

/// Whether `url` names the `postgres` database, or none (which means the same to libpq
/// for the `postgres` user).
fn names_maintenance_database(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let path = rest.find('/').map_or("", |start| &rest[start + 1..]);
    let database = path.split(['?', '#']).next().unwrap_or_default();
    database.is_empty() || database == "postgres"
}

/// Builds payoutd and creates its database if needed, then applies pending migrations.
/// What they print goes to stderr: stdout is for what the xtask command itself prints.
pub(crate) fn build_and_migrate(payoutd: &Payoutd) -> Result<(), String> {
    cmd::run(paths::cargo().args(paths::DEBUG_BUILD).stdout(io::stderr()))?;
    cmd::run(
        payoutd
            .command(&["migrate", "--create-database"])
            .stdout(io::stderr()),
    )
}

/// The built payoutd binary and the environment every invocation shares.
pub(crate) struct Payoutd {
    pub(crate) bin: PathBuf,
    pub(crate) env: Vec<(&'static str, String)>,
}

impl Payoutd {
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(&self.bin);
        command
            .args(args)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .current_dir(paths::workspace_root());
        command
    }

    /// Runs an admin command and parses the JSON object it prints.
    pub(crate) fn json(&self, args: &[&str]) -> Result<Value, String> {
        let mut command = self.command(args);
        let stdout = cmd::stdout(&mut command)?;
        parse_json_object(&stdout).ok_or_else(|| {
            format!(
                "`{}` printed no JSON object:\n{stdout}",
                cmd::display(&command)
            )
        })
    }
}

/// The JSON object in `stdout`: all of it, or else its last line that is one
/// (in case logging went to stdout too).
fn parse_json_object(stdout: &str) -> Option<Value> {
    let parse = |text: &str| {
        serde_json::from_str::<Value>(text.trim())
            .ok()
            .filter(Value::is_object)
    };
    parse(stdout).or_else(|| stdout.lines().rev().find_map(parse))
}

/// A string (or number) field of a JSON object.
pub(crate) fn field(object: &Value, name: &str) -> Result<String, String> {
    match object.get(name) {
        Some(Value::String(text)) => Ok(text.clone()),
        Some(number @ Value::Number(_)) => Ok(number.to_string()),
        _ => Err(format!("payoutd printed no `{name}` in {object}")),
    }
}

/// Where the demo subaccount's webhooks go.
struct Webhook {
    url: String,
    /// The `whsec_…` signing secret.
    secret: String,
    /// Whether xtask's own receiver answers `url` (else the user named it).
    received_here: bool,
}

/// The demo operator's enrolment: done (its credentials), or not (its link, to do by hand).
enum Enrolment {
    Pending(String),
    Done(DemoOperator),
}

/// How to sign in to the console.
struct ConsoleLogin {
    url: String,
    email: String,
    enrolment: Enrolment,
}

/// The demo subaccount, its credentials and the server it lives on.
struct Demo {
    /// The server's `DATABASE_URL`, `PAYOUT_MASTER_KEY`, `PAYOUT_SANDBOX` and
    /// `PAYOUT_WEBHOOK_ALLOW_PRIVATE`, which the admin commands need too.
    server_env: Vec<(&'static str, String)>,
    base_url: String,
    subaccount: String,
    api_key: String,
    api_secret: String,
    available: String,
    webhook: Webhook,
    console: ConsoleLogin,
}

impl Demo {
    /// `demo.env`: shell assignments of everything the admin commands and the README
    /// walkthrough use (`set -a; . target/dev/demo.env; set +a`).
    fn env_file_contents(&self) -> String {
        let walkthrough = [
            ("BASE", &self.base_url),
            ("SUB", &self.subaccount),
            ("KEY", &self.api_key),
            ("SECRET", &self.api_secret),
            ("WEBHOOK_URL", &self.webhook.url),
            ("WEBHOOK_SECRET", &self.webhook.secret),
        ];
        let mut contents = String::from(
            "# Written by `cargo xtask serve`; load with: set -a; . target/dev/demo.env; set +a\n",
        );
        for (name, value) in self
            .server_env
            .iter()
            .map(|(name, value)| (*name, value))
            .chain(walkthrough)
        {
            contents.push_str(&format!("{name}={}\n", sh_quote(value)));
        }
        let console = &self.console;
        contents.push_str(&format!("CONSOLE_URL={}\n", sh_quote(&console.url)));
        contents.push_str(&format!("CONSOLE_EMAIL={}\n", sh_quote(&console.email)));
        if let Enrolment::Done(operator) = &console.enrolment {
            contents.push_str(&format!(
                "CONSOLE_PASSWORD={}\nCONSOLE_TOTP_SECRET={}\n",
                sh_quote(&operator.password),
                sh_quote(&operator.totp.base32())
            ));
        }
        contents
    }

    /// Writes `demo.env` in `dir` (owner-only: it holds the secrets).
    fn write_env_file(&self, dir: &Path) -> Result<PathBuf, String> {
        let path = dir.join("demo.env");
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut file| {
                file.set_permissions(fs::Permissions::from_mode(0o600))?;
                file.write_all(self.env_file_contents().as_bytes())
            })
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        Ok(path)
    }

    /// The credentials, the webhook endpoint and ready-to-paste curl commands; each signs
    /// itself when run, so they keep working later.
    fn banner(&self, env_file: &Path) -> String {
        let base_url = &self.base_url;
        let sign = format!(
            "cargo xtask sign --api-key {} --api-secret {}",
            sh_quote(&self.api_key),
            sh_quote(&self.api_secret)
        );
        let key_header = sh_quote(&format!("x-api-key: {}", self.api_key));
        let id = &self.subaccount;
        let get = |path: &str| {
            format!(
                "curl -s {} -H {key_header} -H \"signature: $({sign})\"",
                sh_quote(&format!("{base_url}{path}"))
            )
        };
        let body = |first: &str, last: &str, email: &str| {
            format!(
                r#"{{"subaccount_id":"{id}","first_name":"{first}","last_name":"{last}","email":"{email}","dob":"1990-12-10","dialcode":"61","phone":"412345678","address":"1 Example Street","city":"Sydney","state":"NSW","postcode":"2000","country":"AUS"}}"#
            )
        };
        let receiver = sh_quote(&format!("{base_url}/api/receiver"));
        let line = "=".repeat(72);
        let webhook_note = if self.webhook.received_here {
            "xtask's receiver: each delivery prints below, signature verified or REJECTED"
        } else {
            "--webhook-url: your endpoint"
        };
        let allow_private = self
            .server_env
            .iter()
            .find(|(name, _)| *name == "PAYOUT_WEBHOOK_ALLOW_PRIVATE")
            .map_or("", |(_, value)| value.as_str());
        format!(
            "\n{line}\n\
             payoutd demo (everything below is also in {env_file}:\n\
             `set -a; . {env_file}; set +a` before the walkthrough (docs/WALKTHROUGH.md) or `payoutd admin`)\n\
             \n  subaccount      {id}\n  API key         {key}\n  API secret      {secret}\n  \
             balance         {available} AUD available\n  \
             AUD fee         {FEE_FIXED} cents + {FEE_PERCENTAGE} %, at least {FEE_MIN} cents\n  \
             webhook URL     {webhook_url} ({webhook_note})\n  \
             webhook secret  {webhook_secret}\n\
             \nThis payoutd runs with PAYOUT_WEBHOOK_ALLOW_PRIVATE={allow_private}, so it may deliver \
             webhooks to loopback and private addresses.\n\
             \nFrom the workspace, once the server below is listening:\n\
             \n# The subaccount\n{subaccount_cmd}\n\
             \n# Its AUD balance\n{balance_cmd}\n\
             \n# Create a receiver: a POST is signed with v2, which covers method, path and body \
             (GETs may use v1)\n\
             BODY={body_arg}; curl -s -X POST {receiver} -H 'content-type: application/json' -H {key_header} -H 'x-signature-version: 2' -H \"signature: $({sign} --v2 --method POST --path /api/receiver --body \"$BODY\")\" -d \"$BODY\"\n\
             {console}\
             {line}\n\n",
            console = self.console_lines(),
            env_file = env_file.display(),
            key = self.api_key,
            secret = self.api_secret,
            available = self.available,
            webhook_url = self.webhook.url,
            webhook_secret = self.webhook.secret,
            subaccount_cmd = get(&format!("/api/subaccount/{id}")),
            balance_cmd = get(&format!("/api/subaccount/balance/{id}?asset=aud")),
            // Not Grace Hopper, whom the walkthrough (docs/WALKTHROUGH.md) creates: e-mails are unique.
            body_arg = sh_quote(&body("Katherine", "Johnson", "katherine@example.com")),
        )
    }
}

impl Demo {
    /// The banner's console part: where, who, and the password and TOTP key (or the link).
    fn console_lines(&self) -> String {
        let console = &self.console;
        let login = match &console.enrolment {
            Enrolment::Done(operator) => format!(
                "  e-mail          {email}\n  password        {password}\n  \
                 TOTP key        {key}\n                  (add it to an authenticator app, \
                 or print the current code with `cargo xtask totp`)\n",
                email = console.email,
                password = operator.password,
                key = operator.totp.base32(),
            ),
            Enrolment::Pending(link) => {
                format!("  not enrolled: open {link} to choose a password and add a TOTP key\n")
            }
        };
        format!(
            "\n# The operator console (an admin; the KYC queue, payouts, subaccounts, webhooks)\n  \
             {url}\n{login}",
            url = console.url,
        )
    }
}

/// `<target dir>/dev`, created if needed.
fn dev_dir() -> Result<PathBuf, String> {
    let dir = paths::target_dir().join("dev");
    fs::create_dir_all(&dir).map_err(|err| format!("cannot create {}: {err}", dir.display()))?;
    Ok(dir)
}

/// `PAYOUT_MASTER_KEY`, else the key in `<target dir>/dev/master-key`,
/// generated on first use and kept so stored secrets stay decryptable.
pub(crate) fn master_key() -> Result<String, String> {
    if let Ok(key) = env::var("PAYOUT_MASTER_KEY")
        && !key.is_empty()
    {
        return Ok(key);
    }
    let path = dev_dir()?.join("master-key");
    loop {
        match fs::read_to_string(&path) {
            Ok(key) => {
                let key = key.trim();
                return if key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
                    Ok(key.to_owned())
                } else {
                    Err(format!(
                        "{} must hold 64 hex characters; delete it to generate a new key \
                         (secrets encrypted with the old one become unreadable)",
                        path.display()
                    ))
                };
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {}
            Err(err) => return Err(format!("cannot read {}: {err}", path.display())),
        }
        let mut bytes = [0u8; 32];
        File::open("/dev/urandom")
            .and_then(|mut random| random.read_exact(&mut bytes))
            .map_err(|err| format!("cannot read /dev/urandom: {err}"))?;
        let created = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut file| writeln!(file, "{}", hex::encode(bytes)));
        match created {
            Ok(()) => eprintln!("xtask: created a new master key in {}", path.display()),
            // Another xtask created it first: read theirs.
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
            Err(err) => return Err(format!("cannot write {}: {err}", path.display())),
        }
    }
}

/// `url` with its database (the path) replaced by `database`.
pub(crate) fn with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(authority_end);
    let query = tail.find(['?', '#']).map_or("", |start| &tail[start..]);
    format!("{scheme}://{authority}/{database}{query}")
}

/// The base URL for reaching a server bound to `bind`.
pub(crate) fn base_url(bind: &str) -> String {
    // A wildcard bind accepts loopback connections, which is what curl needs.
    let host_port = if let Some(port) = bind.strip_prefix("0.0.0.0:") {
        format!("127.0.0.1:{port}")
    } else if let Some(port) = bind.strip_prefix("[::]:") {
        format!("[::1]:{port}")
    } else {
        bind.to_owned()
    };
    format!("http://{host_port}")
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use std::{os::unix::fs::PermissionsExt, path::Path};

    use super::{
        ConsoleLogin, Demo, DemoOperator, Enrolment, Webhook, base_url, check_port,
        names_maintenance_database, parse_json_object, with_database,
    };

    #[test]
    fn a_busy_port_is_found_before_anything_is_created_and_names_payout_bind() {
        // Loopback only: a port this test holds.
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let bind = held.local_addr().unwrap().to_string();
        let refused = check_port(&bind).unwrap_err();
        assert!(refused.contains("already in use"), "{refused}");
        assert!(refused.contains("PAYOUT_BIND"), "{refused}");
        drop(held);
        assert_eq!(check_port(&bind), Ok(()));
        assert!(
            check_port("not an address")
                .unwrap_err()
                .contains("PAYOUT_BIND")
        );
    }

    #[test]
    fn database_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@127.0.0.1:25432/postgres", "payoutd"),
            "postgres://postgres@127.0.0.1:25432/payoutd"
        );
        assert_eq!(
            with_database("postgres://u:p@h/db?sslmode=disable", "payoutd"),
            "postgres://u:p@h/payoutd?sslmode=disable"
        );
        assert_eq!(
            with_database("postgres://h:5432", "payoutd"),
            "postgres://h:5432/payoutd"
        );
    }

    #[test]
    fn the_maintenance_database_is_never_the_servers() {
        assert!(names_maintenance_database(
            "postgres://postgres@127.0.0.1:25432/postgres"
        ));
        assert!(names_maintenance_database(
            "postgres://h:5432/postgres?sslmode=disable"
        ));
        assert!(names_maintenance_database("postgres://h:5432"));
        assert!(names_maintenance_database("postgres://h:5432/"));
        assert!(!names_maintenance_database(
            "postgres://postgres@127.0.0.1:25432/payoutd_demo_h"
        ));
        assert!(!names_maintenance_database("postgres://h/postgres_copy"));
    }

    #[test]
    fn wildcard_binds_become_loopback() {
        assert_eq!(base_url("127.0.0.1:8080"), "http://127.0.0.1:8080");
        assert_eq!(base_url("0.0.0.0:9000"), "http://127.0.0.1:9000");
        assert_eq!(base_url("[::]:9000"), "http://[::1]:9000");
    }

    #[test]
    fn json_is_found_after_log_lines() {
        let out = "2025-01-01 INFO migrated\n{\"api_key\": \"k\", \"api_secret\": \"s\"}\n";
        let value = parse_json_object(out);
        assert_eq!(
            value
                .as_ref()
                .and_then(|v| v.get("api_key"))
                .and_then(|v| v.as_str()),
            Some("k")
        );
        assert!(parse_json_object("no json here").is_none());
    }

    fn demo() -> Demo {
        Demo {
            server_env: vec![
                (
                    "DATABASE_URL",
                    "postgres://postgres@127.0.0.1:25432/payoutd".to_owned(),
                ),
                ("PAYOUT_MASTER_KEY", "ab".repeat(32)),
                ("PAYOUT_SANDBOX", "true".to_owned()),
                ("PAYOUT_WEBHOOK_ALLOW_PRIVATE", "true".to_owned()),
            ],
            base_url: "http://127.0.0.1:8080".to_owned(),
            subaccount: "sa_1".to_owned(),
            api_key: "pk_1".to_owned(),
            api_secret: "sk_1".to_owned(),
            available: "1000000".to_owned(),
            webhook: Webhook {
                url: "http://127.0.0.1:40123/webhook".to_owned(),
                secret: "whsec_c2VjcmV0Kw==".to_owned(),
                received_here: true,
            },
            console: ConsoleLogin {
                url: "http://127.0.0.1:8081".to_owned(),
                email: "admin-sa_1@demo.example".to_owned(),
                enrolment: Enrolment::Pending("http://127.0.0.1:8081/enrol/tok".to_owned()),
            },
        }
    }

    #[test]
    fn the_banner_and_demo_env_say_how_to_sign_in_to_the_console() {
        let mut demo = demo();
        let pending = demo.banner(Path::new("/t/dev/demo.env"));
        assert!(pending.contains("http://127.0.0.1:8081\n"), "{pending}");
        assert!(pending.contains("not enrolled: open http://127.0.0.1:8081/enrol/tok"));
        assert!(!demo.env_file_contents().contains("CONSOLE_PASSWORD"));
        let totp =
            domain::operators::TotpSecret::from_base32("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP").unwrap();
        demo.console.enrolment = Enrolment::Done(DemoOperator {
            password: "pw-123456789012345678901".to_owned(),
            totp,
        });
        let done = demo.banner(Path::new("/t/dev/demo.env"));
        assert!(
            done.contains("e-mail          admin-sa_1@demo.example\n"),
            "{done}"
        );
        assert!(done.contains("password        pw-123456789012345678901\n"));
        assert!(done.contains("TOTP key        JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP\n"));
        assert!(done.contains("cargo xtask totp"));
        let env = demo.env_file_contents();
        assert!(env.contains("CONSOLE_URL=http://127.0.0.1:8081\n"));
        assert!(env.contains("CONSOLE_PASSWORD=pw-123456789012345678901\n"));
        assert!(env.contains("CONSOLE_TOTP_SECRET=JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP\n"));
    }

    #[test]
    fn banner_commands_sign_inline() {
        let banner = demo().banner(Path::new("/t/dev/demo.env"));
        assert!(banner.contains(
            "curl -s http://127.0.0.1:8080/api/subaccount/sa_1 -H 'x-api-key: pk_1' \
             -H \"signature: $(cargo xtask sign --api-key pk_1 --api-secret sk_1)\""
        ));
        assert!(
            banner
                .contains("curl -s 'http://127.0.0.1:8080/api/subaccount/balance/sa_1?asset=aud'")
        );
        assert!(banner.contains(r#"BODY='{"subaccount_id":"sa_1","first_name":"Katherine","#));
        assert!(banner.contains(
            "-H 'x-signature-version: 2' -H \"signature: $(cargo xtask sign --api-key pk_1 \
             --api-secret sk_1 --v2 --method POST --path /api/receiver --body \"$BODY\")\""
        ));
        assert!(banner.contains("`set -a; . /t/dev/demo.env; set +a`"));
        assert!(banner.contains("AUD fee         30 cents + 1.25 %, at least 50 cents\n"));
        assert!(banner.contains(
            "webhook URL     http://127.0.0.1:40123/webhook (xtask's receiver: each delivery \
             prints below"
        ));
        assert!(banner.contains("webhook secret  whsec_c2VjcmV0Kw==\n"));
        assert!(banner.contains("PAYOUT_WEBHOOK_ALLOW_PRIVATE=true, so it may deliver"));
        let mut named = demo();
        named.webhook.received_here = false;
        assert!(
            named
                .banner(Path::new("/t/dev/demo.env"))
                .contains("(--webhook-url: your endpoint)")
        );
    }

    #[test]
    fn demo_env_holds_what_the_admin_commands_and_the_walkthrough_use() {
        let mut demo = demo();
        demo.server_env[0].1 = "postgres://u:p w@h/payoutd".to_owned();
        let contents = demo.env_file_contents();
        let assignments: Vec<&str> = contents
            .lines()
            .filter(|line| !line.starts_with('#'))
            .collect();
        assert_eq!(
            assignments,
            [
                "DATABASE_URL='postgres://u:p w@h/payoutd'",
                &format!("PAYOUT_MASTER_KEY={}", "ab".repeat(32)),
                "PAYOUT_SANDBOX=true",
                "PAYOUT_WEBHOOK_ALLOW_PRIVATE=true",
                "BASE=http://127.0.0.1:8080",
                "SUB=sa_1",
                "KEY=pk_1",
                "SECRET=sk_1",
                "WEBHOOK_URL=http://127.0.0.1:40123/webhook",
                "WEBHOOK_SECRET=whsec_c2VjcmV0Kw==",
                "CONSOLE_URL=http://127.0.0.1:8081",
                "CONSOLE_EMAIL=admin-sa_1@demo.example",
            ]
        );
        // Written owner-only, replacing a world-readable file; a shell reads it back
        // unchanged (what `set -a; . demo.env` does).
        let dir = std::env::temp_dir().join(format!("xtask-demo-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("demo.env");
        std::fs::write(&file, "old").unwrap();
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(demo.write_env_file(&dir).unwrap(), file);
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        assert_eq!(std::fs::read_to_string(&file).unwrap(), contents);
        let output = std::process::Command::new("sh")
            .arg("-c")
            .arg("set -a; . \"$1\"; set +a; sh -c 'printf \"%s|%s|%s\" \"$DATABASE_URL\" \"$WEBHOOK_SECRET\" \"$KEY\"'")
            .arg("sh")
            .arg(&file)
            .output()
            .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            String::from_utf8(output.stdout).unwrap(),
            "postgres://u:p w@h/payoutd|whsec_c2VjcmV0Kw==|pk_1"
        );
    }
}
