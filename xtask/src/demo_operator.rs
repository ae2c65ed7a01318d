//! The demo operator of `cargo xtask serve`: enrolled through the console's own enrolment page,
//! as a person would (the one-time link `payoutd admin create-operator` prints, a password,
//! and a TOTP code from the key the page shows), so the console is ready to sign in to. Its
//! password and TOTP key are printed and written to `target/dev/demo.env`;
//! `cargo xtask totp` prints the current code.

use std::fs::File;
use std::io::Read;
use std::net::SocketAddr;
use std::thread::sleep;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use domain::operators::TotpSecret;

use crate::http;

/// The cookie the enrolment form's CSRF token belongs to (the console's `FORM_COOKIE`).
const FORM_COOKIE: &str = "__Host-payoutd_form";

/// An enrolled operator's credentials.
pub(crate) struct DemoOperator {
    pub(crate) password: String,
    pub(crate) totp: TotpSecret,
}

/// `link`'s address and path (`http://127.0.0.1:8081/enrol/<token>`).
fn split_link(link: &str) -> Result<(SocketAddr, String), String> {
    let rest = link
        .strip_prefix("http://")
        .ok_or_else(|| format!("the enrolment link {link:?} is not http://"))?;
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    let addr = host
        .parse::<SocketAddr>()
        .map_err(|_| format!("the enrolment link's host {host:?} is not an address"))?;
    Ok((addr, format!("/{path}")))
}

/// The text between `start` and the next `end` in `body`.
fn between<'a>(body: &'a str, start: &str, end: char) -> Option<&'a str> {
    body.split(start).nth(1)?.split(end).next()
}

/// A password of 24 random URL-safe characters.
fn new_password() -> Result<String, String> {
    let mut bytes = [0u8; 18];
    File::open("/dev/urandom")
        .and_then(|mut random| random.read_exact(&mut bytes))
        .map_err(|err| format!("cannot read /dev/urandom: {err}"))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

/// Enrols the operator invited by `link` once the console answers (by `deadline`).
pub(crate) fn enrol(link: &str, deadline: Instant) -> Result<DemoOperator, String> {
    let (addr, path) = split_link(link)?;
    let page = loop {
        match http::request(addr, "GET", &path, &[], b"") {
            Ok(page) => break page,
            Err(err) if Instant::now() > deadline => {
                return Err(format!("the console did not answer by the deadline: {err}"));
            }
            Err(_) => sleep(Duration::from_millis(200)),
        }
    };
    if page.status != 200 {
        return Err(format!("GET {path}: {} {}", page.status, page.body));
    }
    let cookie = page
        .header("set-cookie")
        .find_map(|c| c.split(';').next().filter(|c| c.starts_with(FORM_COOKIE)))
        .ok_or_else(|| format!("GET {path}: no {FORM_COOKIE} cookie"))?
        .to_owned();
    let csrf = between(&page.body, "name=\"csrf\" value=\"", '"')
        .ok_or_else(|| format!("GET {path}: no CSRF token on the page"))?;
    let key = between(&page.body, "class=\"secret-once\">", '<')
        .ok_or_else(|| format!("GET {path}: no TOTP key on the page"))?;
    let totp = TotpSecret::from_base32(key)
        .ok_or_else(|| format!("GET {path}: the page's TOTP key {key:?} is not base32"))?;
    let password = new_password()?;
    // payoutd's clock: the demo's (days back on a weekend under `rails-demo`).
    let code = totp.code_at(crate::clock::now());
    let body = http::form(&[
        ("csrf", csrf),
        ("password", &password),
        ("confirmation", &password),
        ("code", &code),
    ]);
    let done = http::request(
        addr,
        "POST",
        &path,
        &[
            ("cookie", cookie),
            (
                "content-type",
                "application/x-www-form-urlencoded".to_owned(),
            ),
        ],
        body.as_bytes(),
    )?;
    if done.status != 200 || !done.body.contains("Your account is ready") {
        return Err(format!(
            "POST {path}: expected the account ready; saw {}",
            done.status
        ));
    }
    Ok(DemoOperator { password, totp })
}

/// `cargo xtask totp [--secret BASE32]`: the current TOTP code of the demo operator (its key
/// from `--secret`, else `CONSOLE_TOTP_SECRET`, which `target/dev/demo.env` sets), by the clock
/// of the payoutd it signs in to: `CONSOLE_DAYS_BACK` days back when set (`rails-demo
/// --console` on a weekend runs payoutd days back).
pub(crate) fn totp(args: Vec<String>) -> Result<(), crate::failure::Failure> {
    let mut flags = crate::flags::Flags::new(args);
    let given = flags.value("--secret")?;
    flags.finish()?;
    let key = given
        .or_else(|| std::env::var("CONSOLE_TOTP_SECRET").ok())
        .ok_or_else(|| {
            "no key: pass --secret, or `set -a; . target/dev/demo.env; set +a` first".to_owned()
        })?;
    let totp = TotpSecret::from_base32(key.trim())
        .ok_or_else(|| "the TOTP key is not base32".to_owned())?;
    let days_back = match std::env::var("CONSOLE_DAYS_BACK") {
        Ok(raw) if !raw.trim().is_empty() => raw
            .trim()
            .parse::<u32>()
            .ok()
            .filter(|days| *days <= 3)
            .ok_or_else(|| format!("CONSOLE_DAYS_BACK is 0 to 3 days, not {raw:?}"))?,
        _ => 0,
    };
    let at = chrono::Utc::now() - chrono::TimeDelta::days(i64::from(days_back));
    println!("{}", totp.code_at(at));
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn an_enrolment_link_names_a_loopback_address_and_a_path() {
        let (addr, path) = split_link("http://127.0.0.1:8081/enrol/abc").unwrap();
        assert_eq!(addr.to_string(), "127.0.0.1:8081");
        assert_eq!(path, "/enrol/abc");
        assert!(split_link("https://127.0.0.1:8081/enrol/abc").is_err());
        assert!(split_link("http://console.example/enrol/abc").is_err());
    }

    #[test]
    fn passwords_are_long_and_fresh() {
        let (a, b) = (new_password().unwrap(), new_password().unwrap());
        assert_eq!(a.len(), 24);
        assert_ne!(a, b);
    }
}
