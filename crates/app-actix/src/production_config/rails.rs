//! `[rails."<method>"]`: one rail per enabled payout method. This module reads the keys every
//! rail has (file prefix, cut-offs, calendar, transport) and hands the rest of the table to the
//! method's rail ([`adapters_rails::unit`]), which reads and checks its own settings.

use std::sync::Arc;

use adapters_rails::{ConfigureError, ConfiguredRail};
use chrono::NaiveDate;
use domain::account::PayoutMethod;
use domain::rail::calendar::{
    CalendarError, MAX_SETTLEMENT_DAYS, RailCalendar, parse_cutoff, parse_date,
};
use domain::rail::file_rail::EffectiveDate;
use serde::Deserialize;

use super::problems::{Env, Problems, key_path, table, type_name};
use super::transport::{TransportSettings, names, transport};

/// One enabled method's rail.
#[derive(Debug, Clone)]
pub struct RailSettings {
    /// The method.
    pub method: PayoutMethod,
    /// The file name prefix.
    pub file_prefix: String,
    /// Cut-offs and business days.
    pub calendar: Arc<RailCalendar>,
    /// How files reach the bank and its answers come back.
    pub transport: TransportSettings,
    /// The method's rail with its checked settings: its writer and reader.
    pub rail: ConfiguredRail,
}

impl RailSettings {
    /// The file rail's effective date of a file written at an instant (from the calendar).
    pub fn effective_date(&self) -> EffectiveDate {
        self.calendar.clone().effective_date_fn()
    }
}

/// The keys every rail has, whatever its format.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Common {
    file_prefix: String,
    cutoffs: Vec<toml::Value>,
    #[serde(default)]
    holidays: Vec<toml::Value>,
    open_on_weekends: Option<toml::Value>,
    settlement_days: Option<i64>,
    transport: toml::Table,
}

impl Common {
    const KEYS: [&'static str; 6] = [
        "file_prefix",
        "cutoffs",
        "holidays",
        "open_on_weekends",
        "settlement_days",
        "transport",
    ];

    /// Splits a rail's table into the common keys and the format's own.
    fn split(mut body: toml::Table) -> (toml::Table, toml::Table) {
        let common = Self::KEYS
            .iter()
            .filter_map(|key| body.remove(*key).map(|value| ((*key).to_owned(), value)))
            .collect();
        (common, body)
    }
}

/// Reads the rail of the route `key` (a table already known to be one).
pub fn rail(
    key: &str,
    body: toml::Table,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<RailSettings> {
    let path = key_path("rails", key);
    let Some(method) = PayoutMethod::from_route(key) else {
        let routes: Vec<String> = PayoutMethod::ALL
            .iter()
            .map(|m| format!("\"{}\"", m.route()))
            .collect();
        problems.push(
            path,
            format!(
                "unknown payout method; rails are keyed by route: {}",
                routes.join(", ")
            ),
        );
        return None;
    };
    let (common_keys, own_keys) = Common::split(body);
    let common: Option<Common> = table(common_keys, &path, problems);
    let configured = match adapters_rails::unit(method).configure(own_keys) {
        Ok(configured) => Some(configured),
        Err(ConfigureError::Unreadable(message)) => {
            problems.push(&path, message);
            None
        }
        Err(ConfigureError::Invalid(error)) => {
            for problem in error.problems {
                problems.push(key_path(&path, problem.setting), problem.problem);
            }
            None
        }
    };
    rail_settings(method, &path, common?, configured, env, problems)
}

fn rail_settings(
    method: PayoutMethod,
    path: &str,
    raw: Common,
    configured: Option<ConfiguredRail>,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<RailSettings> {
    let prefix = file_prefix(&raw.file_prefix, &key_path(path, "file_prefix"), problems);
    let unit = adapters_rails::unit(method);
    let weekends_open = match &raw.open_on_weekends {
        None => Some(false),
        Some(toml::Value::Boolean(true)) if !unit.settles_on_weekends => {
            // A file dated or settled on a Saturday or Sunday is one the scheme does not settle.
            let every_day: Vec<String> = PayoutMethod::ALL
                .iter()
                .filter(|m| adapters_rails::unit(**m).settles_on_weekends)
                .map(|m| m.route())
                .collect();
            problems.push(
                key_path(path, "open_on_weekends"),
                format!(
                    "must be false: {} ({}) settles on bank business days, never on Saturdays or \
                     Sundays (only {} works every day)",
                    method.route(),
                    unit.format,
                    every_day.join(", ")
                ),
            );
            None
        }
        Some(toml::Value::Boolean(open)) => Some(*open),
        Some(other) => {
            problems.push(
                key_path(path, "open_on_weekends"),
                format!("must be true or false, got {}", type_name(other)),
            );
            None
        }
    };
    let days_path = key_path(path, "settlement_days");
    let days = match raw.settlement_days {
        None => Some(1),
        Some(days) => match u32::try_from(days) {
            Ok(days) if days <= MAX_SETTLEMENT_DAYS => Some(days),
            _ => {
                problems.push(
                    days_path,
                    format!(
                        "must be 0 (same-day settlement) to {MAX_SETTLEMENT_DAYS} business days, got {days}"
                    ),
                );
                None
            }
        },
    };
    let calendar = calendar(&raw.cutoffs, &raw.holidays, path, problems).and_then(|calendar| {
        Some(
            calendar
                .with_settlement_days(days?)
                .with_weekends_open(weekends_open?),
        )
    });
    let transport_path = key_path(path, "transport");
    let transport = transport(raw.transport, &transport_path, env, problems).and_then(|t| {
        let kind = t.kind();
        if unit.accepts(kind) {
            return Some(t);
        }
        let others: Vec<String> = kind.methods().iter().map(|m| m.route()).collect();
        problems.push(
            key_path(&transport_path, "kind"),
            format!(
                "{:?} is for {}; {} takes {}",
                kind.name(),
                others.join(", "),
                method.route(),
                names(unit.transports)
            ),
        );
        None
    });
    Some(RailSettings {
        method,
        file_prefix: prefix?,
        calendar: Arc::new(calendar?),
        transport: transport?,
        rail: configured?,
    })
}

fn file_prefix(value: &str, setting: &str, problems: &mut Problems) -> Option<String> {
    let ok = (1..=32).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if ok {
        Some(value.to_owned())
    } else {
        problems.push(
            setting,
            format!("must be 1 to 32 ASCII letters, digits, '_' or '-', got {value:?}"),
        );
        None
    }
}

fn calendar(
    cutoffs: &[toml::Value],
    holidays: &[toml::Value],
    path: &str,
    problems: &mut Problems,
) -> Option<RailCalendar> {
    let cutoffs_path = key_path(path, "cutoffs");
    let holidays_path = key_path(path, "holidays");
    let mut ok = true;
    let mut times = Vec::new();
    for (i, value) in cutoffs.iter().enumerate() {
        let time = match value {
            toml::Value::String(text) => parse_cutoff(text).map_err(|e| e.to_string()),
            other => Err(format!(
                "must be a string \"HH:MM\" (UTC), got {}",
                type_name(other)
            )),
        };
        match time {
            Ok(time) => times.push(time),
            Err(message) => {
                ok = false;
                problems.push(format!("{cutoffs_path}[{i}]"), message);
            }
        }
    }
    let mut dates = Vec::new();
    for (i, value) in holidays.iter().enumerate() {
        // A quoted "2026-12-25" or a TOML local date 2026-12-25.
        let date = match value {
            toml::Value::String(text) => parse_date(text).map_err(|e| e.to_string()),
            toml::Value::Datetime(toml::value::Datetime {
                date: Some(date),
                time: None,
                offset: None,
            }) => NaiveDate::from_ymd_opt(
                i32::from(date.year),
                u32::from(date.month),
                u32::from(date.day),
            )
            .ok_or_else(|| format!("{date} is not a date that exists")),
            other => Err(format!(
                "must be a date YYYY-MM-DD, got {}",
                type_name(other)
            )),
        };
        match date {
            Ok(date) => dates.push(date),
            Err(message) => {
                ok = false;
                problems.push(format!("{holidays_path}[{i}]"), message);
            }
        }
    }
    if !ok {
        return None;
    }
    RailCalendar::new(times, dates)
        .map_err(|e| {
            let setting = match e {
                CalendarError::ClosedTooLong(_) => holidays_path,
                _ => cutoffs_path,
            };
            problems.push(setting, e.to_string());
        })
        .ok()
}
