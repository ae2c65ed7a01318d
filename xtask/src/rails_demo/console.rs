//! `cargo xtask rails-demo --console`: once the demo has checked everything, payoutd, the bank
//! and the partner keep running, and the operator console (on `PAYOUT_CONSOLE_BIND`, default
//! `127.0.0.1:8081`) is opened to a demo admin enrolled as `cargo xtask serve` enrols its own,
//! so a person can follow the demo's payouts to the bank files they went in, and to the bank's
//! answers, until Ctrl-C.
//!
//! On a weekend payoutd runs days back ([`crate::clock`]) and checks sign-in codes by its own
//! clock: an authenticator app's code would be days early. `CONSOLE_DAYS_BACK` in the written
//! `console.env` says so, and `cargo xtask totp` (which reads it) prints the code payoutd
//! expects.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cmd;
use crate::demo_operator;
use crate::serve::{CONSOLE_START, DEFAULT_CONSOLE_BIND, Payoutd, base_url, check_port};

/// Where the console listens: `PAYOUT_CONSOLE_BIND`, else the default; refused when taken.
pub(super) fn bind() -> Result<String, String> {
    let bind = std::env::var("PAYOUT_CONSOLE_BIND")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| DEFAULT_CONSOLE_BIND.to_owned());
    check_port(&bind).map_err(|e| e.replace("PAYOUT_BIND", "PAYOUT_CONSOLE_BIND"))?;
    Ok(bind)
}

/// The console's sign-in, as written to `console.env`.
struct Login {
    url: String,
    email: String,
    password: String,
    totp_secret: String,
    days_back: u32,
}

impl Login {
    fn env_file(&self) -> String {
        [
            ("CONSOLE_URL", self.url.as_str()),
            ("CONSOLE_EMAIL", self.email.as_str()),
            ("CONSOLE_PASSWORD", self.password.as_str()),
            ("CONSOLE_TOTP_SECRET", self.totp_secret.as_str()),
            ("CONSOLE_DAYS_BACK", &self.days_back.to_string()),
        ]
        .iter()
        .map(|(name, value)| format!("{name}={}\n", cmd::sh_quote(value)))
        .collect()
    }

    fn banner(&self, env_file: &Path, files: usize) -> String {
        let clock = if self.days_back > 0 {
            format!(
                "\n  payoutd runs {} day(s) back (a weekend): sign in with `cargo xtask totp`'s \
                 code, not an authenticator app's.",
                self.days_back
            )
        } else {
            String::new()
        };
        format!(
            "\nrails-demo: the console is open until Ctrl-C\n  \
             {url}   e-mail {email}   password {password}\n  \
             TOTP key {key}; the current code: \
             `set -a; . {env}; set +a; cargo xtask totp`{clock}\n  \
             Bank files lists the {files} files payoutd sent: open one to see its payouts and \
             the bank's answers line by line, and a payout for its whole story back to the file.\n",
            url = self.url,
            email = self.email,
            password = self.password,
            key = self.totp_secret,
            env = env_file.display(),
        )
    }
}

/// Invites and enrols the demo admin on the running payoutd, writes `<root>/console.env` and
/// prints how to sign in (stderr: stdout carries the summary line).
pub(super) fn open(
    payoutd: &Payoutd,
    bind: &str,
    days_back: u32,
    root: &Path,
    files: usize,
) -> Result<PathBuf, String> {
    let email = "admin@rails-demo.example";
    let invited = payoutd.json(&[
        "admin",
        "create-operator",
        "--email",
        email,
        "--role",
        "admin",
    ])?;
    let link = invited
        .get("enrolment_link")
        .and_then(serde_json::Value::as_str)
        .ok_or_else(|| format!("`admin create-operator` gave no enrolment link: {invited}"))?;
    let operator = demo_operator::enrol(link, Instant::now() + CONSOLE_START)?;
    let login = Login {
        url: base_url(bind),
        email: email.to_owned(),
        password: operator.password,
        totp_secret: operator.totp.base32(),
        days_back,
    };
    let env_file = root.join("console.env");
    fs::write(&env_file, login.env_file())
        .map_err(|err| format!("cannot write {}: {err}", env_file.display()))?;
    eprint!("{}", login.banner(&env_file, files));
    Ok(env_file)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn login(days_back: u32) -> Login {
        Login {
            url: "http://127.0.0.1:8081".to_owned(),
            email: "admin@rails-demo.example".to_owned(),
            password: "pw".to_owned(),
            totp_secret: "JBSWY3DPEHPK3PXP".to_owned(),
            days_back,
        }
    }

    #[test]
    fn the_env_file_names_the_clock_the_codes_follow() {
        let env = login(2).env_file();
        assert!(env.contains("CONSOLE_URL=http://127.0.0.1:8081\n"), "{env}");
        assert!(
            env.contains("CONSOLE_TOTP_SECRET=JBSWY3DPEHPK3PXP\n"),
            "{env}"
        );
        assert!(env.contains("CONSOLE_DAYS_BACK=2\n"), "{env}");
    }

    #[test]
    fn the_banner_says_how_to_sign_in_and_warns_of_a_moved_clock() {
        let path = Path::new("target/rails-demo/console.env");
        let weekday = login(0).banner(path, 5);
        assert!(weekday.contains("http://127.0.0.1:8081"), "{weekday}");
        assert!(weekday.contains("the 5 files payoutd sent"), "{weekday}");
        assert!(!weekday.contains("day(s) back"), "{weekday}");
        assert!(login(2).banner(path, 5).contains("2 day(s) back"));
    }
}
