#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use base64::Engine;
use chrono::{Datelike, NaiveDate, TimeZone, Utc};
use ring::signature::{Ed25519KeyPair, KeyPair};

use super::*;
use adapters_rails::aba::AbaSettings;
use adapters_rails::cpa005::{Cpa005Settings, RecordEnd};
use adapters_rails::ib4b::Ib4bSettings;
use adapters_rails::interac::InteracSettings;
use adapters_rails::nacha::NachaSettings;
use adapters_rails::sepa::SepaSettings;

mod secrets;

const EXAMPLE: &str = include_str!("../../../../../docs/examples/payoutd.toml");
const SMTP_PASSWORD: &str = "smtp-pa55word-never-shown";
const INTERAC_SECRET: &str = "interac-5ecret-never-shown";

/// A fresh ed25519 key: its PKCS#8 PEM and its OpenSSH public-key line.
fn ed25519() -> (String, String) {
    let rng = ring::rand::SystemRandom::new();
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&rng).unwrap();
    let b64 = base64::engine::general_purpose::STANDARD;
    let body = b64.encode(pkcs8.as_ref());
    let lines: Vec<&str> = body
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect();
    let pem = format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        lines.join("\n")
    );
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let mut blob = Vec::new();
    for part in [b"ssh-ed25519".as_slice(), pair.public_key().as_ref()] {
        blob.extend_from_slice(&u32::try_from(part.len()).unwrap().to_be_bytes());
        blob.extend_from_slice(part);
    }
    (pem, format!("ssh-ed25519 {} test", b64.encode(blob)))
}

/// The environment of a test: variables, and a systemd credentials directory holding the
/// credentials the example names (each readable by its owner only).
struct Env {
    variables: HashMap<String, String>,
    credentials: tempfile::TempDir,
}

impl Env {
    /// The credentials the example references.
    fn example() -> Self {
        let credentials = tempfile::tempdir().unwrap();
        let variables = HashMap::from([(
            crate::secret_source::CREDENTIALS_DIRECTORY.to_owned(),
            credentials.path().display().to_string(),
        )]);
        let mut env = Self {
            variables,
            credentials,
        };
        env.credential("smtp-password", &format!("{SMTP_PASSWORD}\n"));
        env.credential("interac-shared-secret", INTERAC_SECRET);
        for rail in ["ach", "sepa", "aba", "eft", "ib4b"] {
            env.credential(&format!("{rail}-sftp-key"), &ed25519().0);
        }
        env
    }

    /// Writes the credential `name`, mode 0600.
    fn credential(&mut self, name: &str, content: &str) {
        let path = self.credentials.path().join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    }

    /// Without the credential `name`.
    fn without(self, name: &str) -> Self {
        std::fs::remove_file(self.credentials.path().join(name)).unwrap();
        self
    }

    fn set(mut self, name: &str, value: &str) -> Self {
        self.variables.insert(name.to_owned(), value.to_owned());
        self
    }

    /// Every secret the credentials hold.
    fn secrets(&self) -> Vec<String> {
        std::fs::read_dir(self.credentials.path())
            .unwrap()
            .map(|entry| std::fs::read_to_string(entry.unwrap().path()).unwrap())
            .collect()
    }

    fn get(&self, name: &str) -> Option<String> {
        self.variables.get(name).cloned()
    }
}

fn parse_with(text: &str, env: &Env) -> Result<ProductionSettings, Vec<Problem>> {
    ProductionSettings::parse(text, Path::new("/etc/payoutd.toml"), &|n| env.get(n))
}

fn parse(text: &str) -> Result<ProductionSettings, Vec<Problem>> {
    parse_with(text, &Env::example())
}

/// The example with `from` replaced by `to` (which must be there).
fn example_with(from: &str, to: &str) -> String {
    assert!(EXAMPLE.contains(from), "the example has no {from:?}");
    EXAMPLE.replacen(from, to, 1)
}

/// The problems of `text`, which must be refused.
fn problems(text: &str) -> Vec<Problem> {
    problems_with(text, &Env::example())
}

fn problems_with(text: &str, env: &Env) -> Vec<Problem> {
    match parse_with(text, env) {
        Ok(_) => panic!("accepted:\n{text}"),
        Err(problems) => problems,
    }
}

/// The one problem of `setting`, whose message contains `needle`.
fn assert_problem(problems: &[Problem], setting: &str, needle: &str) {
    assert!(
        problems
            .iter()
            .any(|p| p.setting == setting && p.message.contains(needle)),
        "no `{setting}: …{needle}…` in {problems:#?}"
    );
}

#[test]
fn the_example_file_is_valid() {
    let settings = parse(EXAMPLE).unwrap();
    assert_eq!(settings.enabled_methods(), PayoutMethod::ALL);
    let ach = &settings.rails[&PayoutMethod::Ach];
    assert_eq!(ach.file_prefix, "ACME");
    assert_eq!(ach.calendar.cutoff_texts(), ["14:00", "20:00"]);
    let nacha = ach.rail.settings::<NachaSettings>().expect("ach is NACHA");
    assert_eq!(nacha.immediate_destination, "021000021");
    assert_eq!(nacha.company_id, "1234567890");
    assert_eq!(nacha.company_name, "ACME PAYOUTS");
    let TransportSettings::Sftp(sftp) = &ach.transport else {
        panic!("ach is sftp")
    };
    assert_eq!(sftp.settings.host, "sftp.bank.example");
    assert_eq!(sftp.settings.port, 22);
    assert_eq!(sftp.poll_interval.as_secs(), 300);
    assert!(sftp.client_fingerprint.starts_with("SHA256:"));
    // Thursday 2026-11-26 is a listed holiday (Thanksgiving): a file of Wednesday's last
    // cut-off settles on Friday.
    let effective = ach.effective_date();
    assert_eq!(
        effective(Utc.with_ymd_and_hms(2026, 11, 25, 20, 0, 0).unwrap()),
        NaiveDate::from_ymd_opt(2026, 11, 27).unwrap()
    );

    let sepa = &settings.rails[&PayoutMethod::Sepa];
    let pain = sepa
        .rail
        .settings::<SepaSettings>()
        .expect("sepa is pain.001");
    assert_eq!(pain.debtor_iban, "DE89370400440532013000");
    assert_eq!(pain.debtor_bic.as_deref(), Some("COBADEFFXXX"));
    let TransportSettings::Sftp(sftp) = &sepa.transport else {
        panic!("sepa is sftp")
    };
    assert_eq!(sftp.settings.port, 22, "the default port");

    assert_eq!(settings.smtp.tls, SmtpTls::StartTls);
    assert_eq!(settings.smtp.port, 587);
    assert_eq!(settings.smtp.from_address, "payouts@example.com");
    let credentials = settings.smtp.credentials.as_ref().unwrap();
    assert_eq!(credentials.password.value.expose(), SMTP_PASSWORD);
    assert_eq!(settings.kyc, KycProviderSetting::Manual);
}

#[test]
fn the_summary_shows_rails_cutoffs_and_smtp_but_no_secret() {
    let env = Env::example();
    let settings = parse_with(EXAMPLE, &env).unwrap();
    // Friday 2026-11-27 at 15:00 UTC: after the ACH's 14:00 cut-off, before its 20:00 one.
    let now = Utc.with_ymd_and_hms(2026, 11, 27, 15, 0, 0).unwrap();
    let summary = settings.summary(now);
    assert_eq!(
        summary["enabled_methods"],
        json!([
            "aud/direct-entry",
            "usd/ach",
            "cad/eft",
            "cad/digital",
            "eur/sepa",
            "nzd/direct-credit"
        ])
    );
    let ach = &summary["rails"]["usd/ach"];
    assert_eq!(ach["next_cutoff"], "2026-11-27T20:00:00Z");
    assert_eq!(ach["effective_date_of_next_cutoff"], "2026-11-30");
    assert_eq!(ach["format"], "nacha");
    assert_eq!(ach["transport"]["kind"], "sftp");
    assert_eq!(
        ach["transport"]["private_key"],
        "[REDACTED] (credential:ach-sftp-key)"
    );
    // SEPA's 13:00 has passed: Monday's.
    assert_eq!(
        summary["rails"]["eur/sepa"]["next_cutoff"],
        "2026-11-30T13:00:00Z"
    );
    assert_eq!(
        summary["rails"]["eur/sepa"]["originator"]["debtor_iban"],
        "DE8 ***"
    );
    assert_eq!(
        summary["smtp"],
        json!({
            "host": "smtp.example.com",
            "port": 587,
            "tls": "starttls",
            "from": "Acme Payouts <payouts@example.com>",
            "username": "payoutd@example.com",
            "password": "[REDACTED] (credential:smtp-password)",
            "timeout_secs": 30,
            "max_attempts": 5,
        })
    );
    assert_eq!(summary["kyc"]["provider"], "manual");
    let text = summary.to_string();
    let debug = format!("{settings:?}");
    for secret in env.secrets() {
        let secret = secret.trim();
        let core = secret.lines().nth(1).unwrap_or(secret);
        assert!(!text.contains(core), "the summary shows a secret");
        assert!(!debug.contains(core), "Debug shows a secret");
    }
    assert!(!text.contains("DE89370400440532013000"));
}

#[test]
fn unknown_keys_are_refused_with_their_table() {
    let p = problems(&example_with(
        "company_id = \"1234567890\"",
        "company_id = \"1234567890\"\ncompnay_id = \"x\"",
    ));
    assert_problem(&p, "rails.\"usd/ach\"", "unknown field `compnay_id`");
    let p = problems(&example_with("port = 22\n", "port = 22\nproxy = \"x\"\n"));
    assert_problem(&p, "rails.\"usd/ach\".transport", "unknown field `proxy`");
    let p = problems(&example_with(
        "tls = \"starttls\"",
        "tls = \"starttls\"\nssl = true",
    ));
    assert_problem(&p, "smtp", "unknown field `ssl`");
    let p = problems(&format!("{EXAMPLE}\n[metrics]\nport = 1\n"));
    assert_problem(&p, "top level", "unknown field `metrics`");
}

#[test]
fn a_bad_cutoff_or_holiday_is_named_by_its_index() {
    let p = problems(&example_with(
        "cutoffs = [\"14:00\", \"20:00\"]",
        "cutoffs = [\"14:00\", \"25:00\"]",
    ));
    assert_problem(&p, "rails.\"usd/ach\".cutoffs[1]", "HH:MM");
    let p = problems(&example_with(
        "cutoffs = [\"13:00\"]",
        "cutoffs = [\"1pm\"]",
    ));
    assert_problem(&p, "rails.\"eur/sepa\".cutoffs[0]", "\"1pm\"");
    let p = problems(&example_with("cutoffs = [\"13:00\"]", "cutoffs = []"));
    assert_problem(&p, "rails.\"eur/sepa\".cutoffs", "at least one cut-off");
    let p = problems(&example_with(
        "cutoffs = [\"13:00\"]",
        "cutoffs = [\"13:00\", \"13:00\"]",
    ));
    assert_problem(&p, "rails.\"eur/sepa\".cutoffs", "listed twice");
    let p = problems(&example_with("\"2027-01-18\"", "\"2027-02-29\""));
    assert_problem(&p, "rails.\"usd/ach\".holidays[3]", "YYYY-MM-DD");
    let p = problems(&example_with("cutoffs = [\"13:00\"]", "cutoffs = [1300]"));
    assert_problem(
        &p,
        "rails.\"eur/sepa\".cutoffs[0]",
        "must be a string \"HH:MM\"",
    );
    let p = problems(&example_with("\"2027-01-18\"", "2027-01-18T00:00:00"));
    assert_problem(&p, "rails.\"usd/ach\".holidays[3]", "must be a date");
    // Unquoted TOML dates are dates too.
    let settings = parse(&example_with("\"2027-01-18\"", "2027-01-18")).unwrap();
    let holidays: Vec<NaiveDate> = settings.rails[&PayoutMethod::Ach]
        .calendar
        .holidays()
        .collect();
    assert!(holidays.contains(&NaiveDate::from_ymd_opt(2027, 1, 18).unwrap()));
}

#[test]
fn a_month_of_holidays_is_refused() {
    let days: Vec<String> = NaiveDate::from_ymd_opt(2027, 7, 1)
        .unwrap()
        .iter_days()
        .take(40)
        .map(|d| format!("\"{d}\""))
        .collect();
    let p = problems(&example_with(
        "holidays = [\"2026-12-25\", \"2027-01-01\", \"2027-03-26\"",
        &format!(
            "holidays = [{}, \"2027-01-01\", \"2027-03-26\"",
            days.join(", ")
        ),
    ));
    assert_problem(
        &p,
        "rails.\"eur/sepa\".holidays",
        "no business day within 31 days",
    );
}

#[test]
fn settlement_days_default_to_one_and_are_bounded() {
    let Ok(settings) = parse(EXAMPLE) else {
        panic!("the example is valid");
    };
    let days: Vec<u32> = settings
        .rails
        .values()
        .map(|rail| rail.calendar.settlement_days())
        .collect();
    assert_eq!(
        days,
        [1, 1, 1, 1, 1, 1],
        "set to 1 for usd/ach, defaulted for the others"
    );
    let Ok(same_day) = parse(&example_with("settlement_days = 1", "settlement_days = 0")) else {
        panic!("0 is same-day settlement");
    };
    assert_eq!(
        same_day.rails[&PayoutMethod::Ach]
            .calendar
            .settlement_days(),
        0
    );
    for bad in ["6", "-1"] {
        let p = problems(&example_with(
            "settlement_days = 1",
            &format!("settlement_days = {bad}"),
        ));
        assert_problem(&p, "rails.\"usd/ach\".settlement_days", "must be 0");
    }
}

#[test]
fn weekends_are_closed_and_only_cad_digital_may_open_them() {
    let Ok(settings) = parse(EXAMPLE) else {
        panic!("the example is valid");
    };
    assert!(
        settings
            .rails
            .values()
            .all(|rail| !rail.calendar.weekends_open())
    );
    // The example's holidays are weekdays: a Saturday or Sunday is closed anyway.
    for rail in settings.rails.values() {
        for day in rail.calendar.holidays() {
            assert!(
                !matches!(day.weekday(), chrono::Weekday::Sat | chrono::Weekday::Sun),
                "{}: {day} is a {}",
                rail.method.route(),
                day.weekday()
            );
        }
    }
    // A bank file rail settles on business days only: opening its weekends is refused.
    let p = problems(&example_with(
        "open_on_weekends = false",
        "open_on_weekends = true",
    ));
    assert_problem(
        &p,
        "rails.\"usd/ach\".open_on_weekends",
        "must be false: usd/ach (nacha) settles on bank business days",
    );
    assert_problem(&p, "rails.\"usd/ach\".open_on_weekends", "only cad/digital");
    assert_eq!(p.len(), 1, "{p:#?}");
    for (route, table) in [
        ("eur/sepa", "[rails.\"eur/sepa\"]\n"),
        ("aud/direct-entry", "[rails.\"aud/direct-entry\"]\n"),
        ("cad/eft", "[rails.\"cad/eft\"]\n"),
        ("nzd/direct-credit", "[rails.\"nzd/direct-credit\"]\n"),
    ] {
        let p = problems(&example_with(
            table,
            &format!("{table}open_on_weekends = true\n"),
        ));
        assert_problem(
            &p,
            &format!("rails.\"{route}\".open_on_weekends"),
            "must be false",
        );
    }
    // The Interac partner works every day.
    let Ok(open) = parse(&example_with(
        "[rails.\"cad/digital\"]\n",
        "[rails.\"cad/digital\"]\nopen_on_weekends = true\n",
    )) else {
        panic!("cad/digital may open its weekends");
    };
    let opened: Vec<PayoutMethod> = open
        .rails
        .iter()
        .filter(|(_, rail)| rail.calendar.weekends_open())
        .map(|(method, _)| *method)
        .collect();
    assert_eq!(
        opened,
        [PayoutMethod::Digital],
        "only the rail that says so"
    );
    let p = problems(&example_with(
        "open_on_weekends = false",
        "open_on_weekends = \"yes\"",
    ));
    assert_problem(
        &p,
        "rails.\"usd/ach\".open_on_weekends",
        "must be true or false, got a string",
    );
}

#[test]
fn nacha_settings_are_checked() {
    let p = problems(&example_with(
        "immediate_destination = \"021000021\"",
        "immediate_destination = \"021000022\"",
    ));
    assert_problem(
        &p,
        "rails.\"usd/ach\".immediate_destination",
        "valid check digit",
    );
    let p = problems(&example_with(
        "company_id = \"1234567890\"",
        "company_id = \"123456789\"",
    ));
    assert_eq!(
        p.iter().map(ToString::to_string).collect::<Vec<_>>(),
        ["rails.\"usd/ach\".company_id: must be 10 characters, got 9"]
    );
    let p = problems(&example_with(
        "odfi_routing = \"02100002\"",
        "odfi_routing = \"021000021\"",
    ));
    assert_problem(&p, "rails.\"usd/ach\".odfi_routing", "8 digits");
    let p = problems(&example_with(
        "immediate_origin = \"1234567890\"",
        "immediate_origin = \"12345\"",
    ));
    assert_problem(&p, "rails.\"usd/ach\".immediate_origin", "9 or 10 digits");
    let p = problems(&example_with(
        "company_name = \"ACME PAYOUTS\"",
        "company_name = \"ACME PAYOUTS INTERNATIONAL\"",
    ));
    assert_problem(&p, "rails.\"usd/ach\".company_name", "at most 16");
    let p = problems(&example_with(
        "entry_description = \"PAYOUT\"",
        "entry_description = \"PAY~OUT\"",
    ));
    assert_problem(&p, "rails.\"usd/ach\".entry_description", "'~'");
    let p = problems(&example_with(
        "entry_description = \"PAYOUT\"",
        "entry_description = \"  \"",
    ));
    assert_problem(&p, "rails.\"usd/ach\".entry_description", "empty");
    let p = problems(&example_with("company_id = \"1234567890\"", ""));
    assert_problem(&p, "rails.\"usd/ach\"", "missing field `company_id`");
}

#[test]
fn sepa_settings_are_checked() {
    let p = problems(&example_with(
        "\"DE89 3704 0044 0532 0130 00\"",
        "\"DE88 3704 0044 0532 0130 00\"",
    ));
    assert_problem(&p, "rails.\"eur/sepa\".debtor_iban", "valid check digits");
    let p = problems(&example_with("\"COBADEFFXXX\"", "\"COBADEFFX\""));
    assert_problem(&p, "rails.\"eur/sepa\".debtor_bic", "8 or 11");
    let p = problems(&example_with(
        "initiating_party_id = \"ACME0001\"",
        "initiating_party_id = \"/ACME\"",
    ));
    assert_problem(&p, "rails.\"eur/sepa\".initiating_party_id", "'/'");
    // Both optional settings may be left out.
    let text = example_with("debtor_bic = \"COBADEFFXXX\"", "").replacen(
        "initiating_party_id = \"ACME0001\"",
        "",
        1,
    );
    let settings = parse(&text).unwrap();
    let pain = settings.rails[&PayoutMethod::Sepa]
        .rail
        .settings::<SepaSettings>()
        .expect("pain.001");
    assert_eq!(
        (pain.debtor_bic.as_ref(), pain.initiating_party_id.as_ref()),
        (None, None)
    );
}

#[test]
fn every_problem_is_reported_not_only_the_first() {
    let text = example_with(
        "cutoffs = [\"14:00\", \"20:00\"]",
        "cutoffs = [\"14:00\", \"20:60\"]",
    )
    .replacen("\"021000021\"", "\"021000022\"", 1)
    .replacen("\"DE89 3704", "\"DE88 3704", 1)
    .replacen("tls = \"starttls\"", "tls = \"ssl\"", 1);
    let p = problems(&text);
    assert_eq!(p.len(), 4, "{p:#?}");
    assert_problem(&p, "rails.\"usd/ach\".cutoffs[1]", "HH:MM");
    assert_problem(&p, "rails.\"usd/ach\".immediate_destination", "check digit");
    assert_problem(&p, "rails.\"eur/sepa\".debtor_iban", "IBAN");
    assert_problem(&p, "smtp.tls", "\"ssl\"");
}

#[test]
fn transports_are_checked() {
    let p = problems(&example_with(
        "kind = \"sftp\"\nhost = \"sftp",
        "kind = \"ftp\"\nhost = \"sftp",
    ));
    assert_problem(&p, "rails.\"usd/ach\".transport.kind", "\"ftp\"");
    let p = problems(&example_with("user = \"acme-ach\"", "user = \"\""));
    assert_problem(&p, "rails.\"usd/ach\".transport.user", "empty");
    let p = problems(&example_with(
        "poll_interval_secs = 300",
        "poll_interval_secs = 0",
    ));
    assert_problem(
        &p,
        "rails.\"usd/ach\".transport.poll_interval_secs",
        "from 10",
    );
    let p = problems(&example_with("port = 22\n", "port = 70000\n"));
    assert_problem(&p, "rails.\"usd/ach\".transport", "70000");

    let inbound = tempfile::tempdir().unwrap();
    let outbound = tempfile::tempdir().unwrap();
    let directory = |out: &str, inb: &str| {
        let start = EXAMPLE.find("[rails.\"usd/ach\".transport]").unwrap();
        let end = EXAMPLE.find("[rails.\"eur/sepa\"]").unwrap();
        format!(
            "{}[rails.\"usd/ach\".transport]\nkind = \"directory\"\noutbound_dir = {out:?}\ninbound_dir = {inb:?}\n\n{}",
            &EXAMPLE[..start],
            &EXAMPLE[end..]
        )
    };
    let out = outbound.path().display().to_string();
    let inb = inbound.path().display().to_string();
    let settings = parse(&directory(&out, &inb)).unwrap();
    let TransportSettings::Directory(dir) = &settings.rails[&PayoutMethod::Ach].transport else {
        panic!("directory")
    };
    assert_eq!(dir.outbound_dir, outbound.path());
    assert_eq!(dir.poll_interval.as_secs(), 300);
    // A local directory may be listed more often than once a second, down to a tenth.
    let polled = |every: &str| {
        directory(&out, &inb).replace(
            &format!("inbound_dir = {inb:?}\n"),
            &format!("inbound_dir = {inb:?}\npoll_interval_secs = {every}\n"),
        )
    };
    for (every, millis) in [
        ("0.2", 200),
        ("0.1", 100),
        ("1", 1_000),
        ("86400", 86_400_000),
    ] {
        let settings = parse(&polled(every)).unwrap();
        let TransportSettings::Directory(dir) = &settings.rails[&PayoutMethod::Ach].transport
        else {
            panic!("directory")
        };
        assert_eq!(dir.poll_interval.as_millis(), millis, "{every}");
        // `check-config` shows it as written: whole seconds an integer, a fraction a fraction.
        let shown =
            &settings.summary(Utc::now())["rails"]["usd/ach"]["transport"]["poll_interval_secs"];
        assert_eq!(shown.to_string(), every, "{every}");
    }
    for every in ["0.05", "0", "-1", "86400.5", "nan"] {
        assert_problem(
            &problems(&polled(every)),
            "rails.\"usd/ach\".transport.poll_interval_secs",
            "from 0.1 to 86400 seconds",
        );
    }
    let absent = format!("{inb}/absent");
    let p = problems(&directory("relative/out", &absent));
    assert_problem(
        &p,
        "rails.\"usd/ach\".transport.outbound_dir",
        "absolute path",
    );
    assert_problem(
        &p,
        "rails.\"usd/ach\".transport.inbound_dir",
        "not an existing directory",
    );
}

#[test]
fn unknown_routes_are_refused() {
    let p = problems(&format!(
        "{EXAMPLE}\n[rails.\"usd/wire\"]\nfile_prefix = \"X\"\n"
    ));
    assert_problem(&p, "rails.\"usd/wire\"", "unknown payout method");
    let p = problems(&format!(
        "{EXAMPLE}\n[rails.usd-ach]\nfile_prefix = \"X\"\n"
    ));
    assert_problem(&p, "rails.usd-ach", "\"usd/ach\"");
}

#[test]
fn tls_none_is_only_for_loopback_hosts() {
    let p = problems(&example_with("tls = \"starttls\"", "tls = \"none\""));
    assert_problem(&p, "smtp.tls", "only for a loopback host");
    let local = example_with("tls = \"starttls\"", "tls = \"none\"")
        .replacen("host = \"smtp.example.com\"", "host = \"127.0.0.1\"", 1)
        .replacen("port = 587 ", "", 1);
    let settings = parse(&local).unwrap();
    assert_eq!((settings.smtp.tls, settings.smtp.port), (SmtpTls::None, 25));
    let implicit =
        example_with("tls = \"starttls\"", "tls = \"implicit\"").replacen("port = 587 ", "", 1);
    assert_eq!(parse(&implicit).unwrap().smtp.port, 465);
}

#[test]
fn smtp_settings_are_checked() {
    let p = problems(&example_with(
        "from = \"Acme Payouts <payouts@example.com>\"",
        "from = \"payouts at example\"",
    ));
    assert_problem(&p, "smtp.from", "mailbox");
    let p = problems(&example_with(
        "from = \"Acme Payouts <payouts@example.com>\"",
        "from = \"payouts@localhost\"",
    ));
    assert_problem(&p, "smtp.from", "mailbox");
    let bare = example_with(
        "from = \"Acme Payouts <payouts@example.com>\"",
        "from = \"payouts@example.com\"",
    );
    assert_eq!(
        parse(&bare).unwrap().smtp.from_address,
        "payouts@example.com"
    );
    let p = problems(&example_with("username = \"payoutd@example.com\"", ""));
    assert_problem(&p, "smtp.username", "needed with smtp.password");
    let p = problems(&example_with("max_attempts = 5", "max_attempts = 0"));
    assert_problem(&p, "smtp.max_attempts", "from 1 to 20");
    let p = problems(&example_with("timeout_secs = 30", "timeout_secs = 3000"));
    assert_problem(&p, "smtp.timeout_secs", "from 1 to 300");
    let p = problems(&example_with(
        "host = \"smtp.example.com\"",
        "host = \"smtp example\"",
    ));
    assert_problem(&p, "smtp.host", "host name");
    // No login at all is fine.
    let open = example_with("username = \"payoutd@example.com\"", "").replacen(
        "password = \"credential:smtp-password\"",
        "",
        1,
    );
    assert!(parse(&open).unwrap().smtp.credentials.is_none());
}

#[test]
fn sections_are_required_and_kyc_is_manual() {
    let start = EXAMPLE.find("[smtp]").unwrap();
    let end = EXAMPLE.find("[kyc]").unwrap();
    let no_smtp = format!("{}{}", &EXAMPLE[..start], &EXAMPLE[end..]);
    assert_problem(&problems(&no_smtp), "smtp", "is missing");
    let no_kyc = &EXAMPLE[..end];
    assert_problem(&problems(no_kyc), "kyc", "is missing");
    let p = problems(&example_with(
        "provider = \"manual\"",
        "provider = \"acme-kyc\"",
    ));
    assert_problem(&p, "kyc.provider", "\"manual\"");
    let rails_start = EXAMPLE.find("[rails.\"usd/ach\"]").unwrap();
    let no_rails = format!("{}{}", &EXAMPLE[..rails_start], &EXAMPLE[start..]);
    assert_problem(&problems(&no_rails), "rails", "no payout method is enabled");
}

#[test]
fn syntax_errors_give_the_position_but_not_the_line() {
    let p = problems(&example_with(
        "from = \"Acme Payouts <payouts@example.com>\"",
        "from = \"Acme Payouts <payouts@example.com>\"\npassword2 = \"hunter2",
    ));
    assert_eq!(p.len(), 1, "{p:?}");
    assert!(p[0].setting.starts_with("line "), "{p:?}");
    assert!(p[0].message.starts_with("not valid TOML"), "{p:?}");
    assert!(!format!("{p:?}").contains("hunter2"));
}

#[test]
fn loading_names_the_file_and_the_variable() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent.toml");
    let err = ProductionSettings::load(&missing, &|_| None).unwrap_err();
    assert!(matches!(err, ProductionConfigError::Unreadable { .. }));
    assert!(err.to_string().contains("PAYOUT_CONFIG") && err.to_string().contains("absent.toml"));

    let file = dir.path().join("payoutd.toml");
    std::fs::write(
        &file,
        example_with("company_id = \"1234567890\"", "company_id = \"1\""),
    )
    .unwrap();
    let env = Env::example();
    let err = ProductionSettings::load(&file, &|n| env.get(n)).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("payoutd.toml has 1 problem:"), "{text}");
    assert!(
        text.contains("\n  rails.\"usd/ach\".company_id: must be 10 characters, got 1"),
        "{text}"
    );
    assert!(ProductionSettings::load(&file, &|_| None).is_err());
    assert!(
        ProductionConfigError::NotSet
            .to_string()
            .contains("PAYOUT_CONFIG is not set")
    );
}

#[test]
fn aba_cpa005_and_ib4b_settings_are_read_and_checked_by_their_formats() {
    let settings = parse(EXAMPLE).unwrap();
    let aba = settings.rails[&PayoutMethod::DirectEntry]
        .rail
        .settings::<AbaSettings>()
        .expect("aud/direct-entry is ABA");
    assert_eq!(
        (aba.bank_mnemonic.as_str(), aba.apca_user_id.as_str()),
        ("CBA", "301500")
    );
    assert!(!aba.self_balancing);
    let cpa = settings.rails[&PayoutMethod::Eft]
        .rail
        .settings::<Cpa005Settings>()
        .expect("cad/eft is Standard 005");
    assert_eq!(cpa.transaction_code, 450);
    assert_eq!(cpa.line_ending, RecordEnd::CrLf);
    let ib4b = settings.rails[&PayoutMethod::DirectCredit]
        .rail
        .settings::<Ib4bSettings>()
        .expect("nzd/direct-credit is IB4B");
    assert_eq!(ib4b.originating_account, "0109020068389000");

    // Each format's own check names the setting under the rail's path.
    for (from, to, setting) in [
        (
            "apca_user_id = \"301500\"",
            "apca_user_id = \"30150\"",
            "rails.\"aud/direct-entry\".apca_user_id",
        ),
        (
            "trace_bsb = \"062000\"",
            "trace_bsb = \"06200X\"",
            "rails.\"aud/direct-entry\".trace_bsb",
        ),
        (
            "data_centre = \"00310\"",
            "data_centre = \"310\"",
            "rails.\"cad/eft\".data_centre",
        ),
        (
            "return_institution = \"000312345\"",
            "return_institution = \"12345\"",
            "rails.\"cad/eft\".return_institution",
        ),
        (
            "# line_ending = \"crlf\"",
            "line_ending = \"cr\"",
            "rails.\"cad/eft\".line_ending",
        ),
        (
            "originating_account = \"0109020068389000\"",
            "originating_account = \"0109020068388000\"",
            "rails.\"nzd/direct-credit\".originating_account",
        ),
        (
            "originator_name = \"ACME PAYOUTS\"",
            "originator_name = \"ACME PAYOUTS, AND SONS LIMITED\"",
            "rails.\"nzd/direct-credit\".originator_name",
        ),
    ] {
        let p = problems(&example_with(from, to));
        assert!(
            p.iter().any(|problem| problem.setting == setting),
            "{to}: {p:#?}"
        );
    }
    // Unknown keys are refused in the format's table too, and the secrets never show.
    let p = problems(&example_with(
        "self_balancing = false",
        "self_balancing = false\nself_balance = true",
    ));
    assert_problem(&p, "rails.\"aud/direct-entry\"", "self_balance");
    let summary = settings.summary(Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap());
    let text = summary.to_string();
    for secret in ["10203040", "0068389", "1234567\""] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
}

#[test]
fn cad_digital_is_paid_through_a_partner_api_with_a_secret_never_shown() {
    let settings = parse(EXAMPLE).unwrap();
    let digital = &settings.rails[&PayoutMethod::Digital];
    let interac = digital
        .rail
        .settings::<InteracSettings>()
        .expect("cad/digital is Interac");
    assert_eq!(
        (interac.partner_customer_id.as_str(), interac.expiry_days),
        ("ACME-0042", 30)
    );
    let TransportSettings::PartnerApi(api) = &digital.transport else {
        panic!("cad/digital goes through the partner's API")
    };
    assert_eq!(
        api.settings.base_url,
        "https://etransfer.partner.example/api"
    );
    assert_eq!(api.settings.shared_secret.expose(), INTERAC_SECRET);
    assert_eq!(api.settings.signature_tolerance_seconds, 300);
    assert_eq!(api.poll_interval.as_secs(), 300);
    let summary = settings
        .summary(Utc.with_ymd_and_hms(2026, 11, 25, 12, 0, 0).unwrap())
        .to_string();
    assert!(!summary.contains(INTERAC_SECRET));
    assert!(summary.contains("[REDACTED] (credential:interac-shared-secret)"));

    for (from, to, setting, needle) in [
        (
            "base_url = \"https://etransfer.partner.example/api\"",
            "base_url = \"http://etransfer.partner.example/api\"",
            "rails.\"cad/digital\".transport.base_url",
            "https",
        ),
        (
            "partner_customer_id = \"ACME-0042\"",
            "partner_customer_id = \"ACME 0042\"",
            "rails.\"cad/digital\".partner_customer_id",
            "",
        ),
        (
            "expiry_days = 30 ",
            "expiry_days = 45 ",
            "rails.\"cad/digital\".expiry_days",
            "",
        ),
        (
            "poll_interval_secs = 300               # status",
            "poll_interval_secs = 300\nmax_pages = 0 #",
            "rails.\"cad/digital\".transport.max_pages",
            "from 1 to 1000",
        ),
        // cad/digital cannot use a file drop.
        (
            "[rails.\"cad/digital\".transport]\nkind = \"partner_api\"\nbase_url = \"https://etransfer.partner.example/api\"",
            "[rails.\"cad/digital\".transport]\nkind = \"directory\"\noutbound_dir = \"/\"\ninbound_dir = \"/\"\nbase = \"x\"",
            "rails.\"cad/digital\".transport",
            "",
        ),
    ] {
        let p = problems(&example_with(from, to));
        assert!(
            p.iter()
                .any(|problem| problem.setting.starts_with(setting)
                    && problem.message.contains(needle)),
            "{to}: {p:#?}"
        );
    }
    let p = problems_with(EXAMPLE, &Env::example().without("interac-shared-secret"));
    assert_problem(
        &p,
        "rails.\"cad/digital\".transport.shared_secret",
        "the systemd credential interac-shared-secret is not in",
    );
    // A file method cannot use the partner's API.
    let start = EXAMPLE.find("[rails.\"usd/ach\".transport]").unwrap();
    let end = EXAMPLE.find("[rails.\"eur/sepa\"]").unwrap();
    let ach_on_api = format!(
        "{}[rails.\"usd/ach\".transport]\nkind = \"partner_api\"\nbase_url = \"https://x.example\"\nshared_secret = \"s\"\n\n{}",
        &EXAMPLE[..start],
        &EXAMPLE[end..]
    );
    assert_problem(
        &problems(&ach_on_api),
        "rails.\"usd/ach\".transport.kind",
        "\"partner_api\" is for cad/digital",
    );
}
