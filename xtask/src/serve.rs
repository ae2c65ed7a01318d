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
    process::{Command, ExitCode},
};

use serde_json::Value;

use crate::{
    cmd::{self, sh_quote},
    flags::Flags,
    paths,
    postgres::Postgres,
};

const DEFAULT_BIND: &str = "127.0.0.1:8080";

/// Whether payoutd could listen on `bind`; if not, how to choose another address.
fn check_port(bind: &str) -> Result<(), String> {
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

/// Runs the whole demo setup, then payoutd until it exits.
pub fn run(args: Vec<String>) -> Result<ExitCode, String> {
    Flags::new(args).finish()?;
    // Before anything is created: a busy port would otherwise fail only after the demo
    // subaccount and demo.env were written.
    let bind = env::var("PAYOUT_BIND").unwrap_or_else(|_| DEFAULT_BIND.to_owned());
    check_port(&bind)?;
    let mut pg = Postgres::provision()?;
    pg.stop_on_exit();
    eprintln!("xtask: serving with {}", pg.describe());

    let database_url = if pg.is_from_env() {
        pg.url.clone()
    } else {
        with_database(&pg.url, "payoutd")
    };
    let sandbox = env::var("PAYOUT_SANDBOX").unwrap_or_else(|_| "true".to_owned());
    let payoutd = Payoutd {
        bin: paths::target_dir().join("debug").join("payoutd"),
        env: vec![
            ("DATABASE_URL", database_url),
            ("PAYOUT_SANDBOX", sandbox),
            ("PAYOUT_MASTER_KEY", master_key()?),
        ],
    };

    cmd::run(paths::cargo().args(["build", "-p", "app-actix", "--bin", "payoutd"]))?;
    cmd::run(&mut payoutd.command(&["migrate", "--create-database"]))?;
    let created = payoutd.json(&[
        "admin",
        "create-subaccount",
        "--name",
        "Demo subaccount",
        "--email",
        "demo@example.com",
    ])?;
    let subaccount = field(&created, "subaccount_id")?;
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
    ])?;
    let demo = Demo {
        api_key: field(&key, "api_key")?,
        api_secret: field(&key, "api_secret")?,
        available: field(&balance, "available").unwrap_or_else(|_| "?".to_owned()),
        subaccount,
    };
    let env_file = demo.write_env_file()?;
    print!("{}", demo.banner(&base_url(&bind), &env_file));
    io::stdout()
        .flush()
        .map_err(|err| format!("cannot write to stdout: {err}"))?;

    let mut serve = payoutd.command(&["serve"]);
    let mut child = serve
        .spawn()
        .map_err(|err| format!("cannot run `{}`: {err}", cmd::display(&serve)))?;
    pg.watch(child.id());
    let status = child
        .wait()
        .map_err(|err| format!("waiting for payoutd: {err}"))?;
    pg.shutdown();
    Ok(cmd::exit_code(status))
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

/// The demo subaccount and its credentials.
struct Demo {
    subaccount: String,
    api_key: String,
    api_secret: String,
    available: String,
}

impl Demo {
    /// Writes `<target dir>/dev/demo.env` (owner-only: it holds the secret).
    fn write_env_file(&self) -> Result<PathBuf, String> {
        let path = dev_dir()?.join("demo.env");
        let contents = format!(
            "PAYOUT_DEMO_SUBACCOUNT={}\nPAYOUT_DEMO_API_KEY={}\nPAYOUT_DEMO_API_SECRET={}\n",
            self.subaccount, self.api_key, self.api_secret
        );
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)
            .and_then(|mut file| {
                file.set_permissions(fs::Permissions::from_mode(0o600))?;
                file.write_all(contents.as_bytes())
            })
            .map_err(|err| format!("cannot write {}: {err}", path.display()))?;
        Ok(path)
    }

    /// The credentials and ready-to-paste curl commands; each signs itself
    /// when run, so they keep working later.
    fn banner(&self, base_url: &str, env_file: &Path) -> String {
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
        format!(
            "\n{line}\n\
             payoutd demo (credentials also in {env_file})\n\
             \n  subaccount  {id}\n  API key     {key}\n  API secret  {secret}\n  balance     {available} AUD available\n\
             \nFrom the workspace, once the server below is listening:\n\
             \n# The subaccount\n{subaccount_cmd}\n\
             \n# Its AUD balance\n{balance_cmd}\n\
             \n# Create a receiver\n\
             curl -s -X POST {receiver} -H 'content-type: application/json' -H {key_header} -H \"signature: $({sign})\" -d {body_arg}\n\
             \n# Another receiver, with a v2 signature, which also covers method, path and body\n\
             BODY={v2_body_arg}; curl -s -X POST {receiver} -H 'content-type: application/json' -H {key_header} -H 'x-signature-version: 2' -H \"signature: $({sign} --v2 --method POST --path /api/receiver --body \"$BODY\")\" -d \"$BODY\"\n\
             {line}\n\n",
            env_file = env_file.display(),
            key = self.api_key,
            secret = self.api_secret,
            available = self.available,
            subaccount_cmd = get(&format!("/api/subaccount/{id}")),
            balance_cmd = get(&format!("/api/subaccount/balance/{id}?asset=aud")),
            body_arg = sh_quote(&body("Ada", "Lovelace", "ada@example.com")),
            v2_body_arg = sh_quote(&body("Grace", "Hopper", "grace@example.com")),
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
fn base_url(bind: &str) -> String {
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
    use std::path::Path;

    use super::{Demo, base_url, check_port, parse_json_object, with_database};

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

    #[test]
    fn banner_commands_sign_inline() {
        let demo = Demo {
            subaccount: "sa_1".to_owned(),
            api_key: "pk_1".to_owned(),
            api_secret: "sk_1".to_owned(),
            available: "1000000".to_owned(),
        };
        let banner = demo.banner("http://127.0.0.1:8080", Path::new("/t/dev/demo.env"));
        assert!(banner.contains(
            "curl -s http://127.0.0.1:8080/api/subaccount/sa_1 -H 'x-api-key: pk_1' \
             -H \"signature: $(cargo xtask sign --api-key pk_1 --api-secret sk_1)\""
        ));
        assert!(
            banner
                .contains("curl -s 'http://127.0.0.1:8080/api/subaccount/balance/sa_1?asset=aud'")
        );
        assert!(banner.contains(r#"-d '{"subaccount_id":"sa_1","first_name":"Ada","#));
    }
}
