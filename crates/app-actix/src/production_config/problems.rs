//! What the checks of the configuration file share: the problems they collect (each naming its
//! setting's full path), the path syntax, the `env:` references, and the deserialization of
//! one table at a time.

use std::fmt;

use domain::masking::Secret;
use serde::de::DeserializeOwned;

/// One thing wrong with the file: the setting's full path (`rails."usd/ach".company_id`) and
/// what is wrong. The message never holds the value of a secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// The setting, as a TOML dotted key.
    pub setting: String,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.setting, self.message)
    }
}

/// The problems found so far.
#[derive(Debug, Default)]
pub struct Problems(Vec<Problem>);

impl Problems {
    /// Records a problem with `setting`.
    pub fn push(&mut self, setting: impl Into<String>, message: impl Into<String>) {
        self.0.push(Problem {
            setting: setting.into(),
            message: message.into(),
        });
    }

    /// Whether none was found.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The problems, in the order found.
    pub fn into_vec(self) -> Vec<Problem> {
        self.0
    }
}

/// Looks an environment variable up (the process environment, or a map in tests).
pub type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// `parent.key`, with `key` quoted unless it is a bare TOML key (`rails."usd/ach"`).
pub fn key_path(parent: &str, key: &str) -> String {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    let key = if bare {
        key.to_owned()
    } else {
        format!("{key:?}")
    };
    if parent.is_empty() {
        key
    } else {
        format!("{parent}.{key}")
    }
}

/// Deserializes the table at `path` into `T` (whose fields deny unknown keys), recording the
/// first problem serde finds.
pub fn table<T: DeserializeOwned>(
    table: toml::Table,
    path: &str,
    problems: &mut Problems,
) -> Option<T> {
    match toml::Value::Table(table).try_into::<T>() {
        Ok(value) => Some(value),
        Err(e) => {
            problems.push(path, e.message().trim().to_owned());
            None
        }
    }
}

/// The table at `path` inside `value`, or a problem.
pub fn as_table(value: toml::Value, path: &str, problems: &mut Problems) -> Option<toml::Table> {
    match value {
        toml::Value::Table(table) => Some(table),
        other => {
            problems.push(path, format!("must be a table, got {}", type_name(&other)));
            None
        }
    }
}

/// What kind of value `value` is, with its article (`an integer`), never the value itself.
pub fn type_name(value: &toml::Value) -> &'static str {
    match value {
        toml::Value::String(_) => "a string",
        toml::Value::Integer(_) => "an integer",
        toml::Value::Float(_) => "a float",
        toml::Value::Boolean(_) => "a boolean",
        toml::Value::Datetime(_) => "a date-time",
        toml::Value::Array(_) => "an array",
        toml::Value::Table(_) => "a table",
    }
}

/// The name of a variable in an `env:NAME` reference.
fn env_name(text: &str) -> Option<&str> {
    text.strip_prefix("env:")
}

fn valid_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A setting that is given in the file or read from an environment variable (`env:NAME`).
#[derive(Clone, Debug)]
pub enum Sourced {
    /// Written in the file.
    Inline(String),
    /// Read from this environment variable; the value is kept as a secret.
    FromEnv {
        /// The variable.
        variable: String,
        /// Its value.
        value: Secret<String>,
    },
}

/// Reads a string setting that may be an `env:NAME` reference. The value is never put in a
/// message, so this is the reader for secrets.
pub fn sourced(
    value: toml::Value,
    setting: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<Sourced> {
    let toml::Value::String(text) = value else {
        // `type_str`, not the value: this may be a secret.
        problems.push(
            setting,
            format!(
                "must be a string (or \"env:NAME\"), got {}",
                type_name(&value)
            ),
        );
        return None;
    };
    let Some(variable) = env_name(&text) else {
        if text.trim().is_empty() {
            problems.push(setting, "must not be empty");
            return None;
        }
        return Some(Sourced::Inline(text));
    };
    if !valid_env_name(variable) {
        problems.push(
            setting,
            format!(
                "\"env:{variable}\" does not name an environment variable (letters, digits and _, not starting with a digit)"
            ),
        );
        return None;
    }
    match env(variable).filter(|v| !v.trim().is_empty()) {
        Some(value) => Some(Sourced::FromEnv {
            variable: variable.to_owned(),
            value: Secret::new(value),
        }),
        None => {
            problems.push(
                setting,
                format!("environment variable {variable} is not set (the setting says \"env:{variable}\")"),
            );
            None
        }
    }
}

/// A secret setting (`password = "env:SMTP_PASSWORD"` or written in the file).
#[derive(Clone, Debug)]
pub struct SecretSetting {
    /// The secret.
    pub value: Secret<String>,
    /// The environment variable it came from, if any (for the summary: never the value).
    pub variable: Option<String>,
}

impl SecretSetting {
    /// Where it came from, for summaries: `env:NAME` or `inline`; never the value.
    pub fn source(&self) -> String {
        match &self.variable {
            Some(name) => format!("env:{name}"),
            None => "inline".to_owned(),
        }
    }
}

/// Reads a secret setting.
pub fn secret(
    value: toml::Value,
    setting: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<SecretSetting> {
    Some(match sourced(value, setting, env, problems)? {
        Sourced::Inline(text) => SecretSetting {
            value: Secret::new(text),
            variable: None,
        },
        Sourced::FromEnv { variable, value } => SecretSetting {
            value,
            variable: Some(variable),
        },
    })
}

/// Checks a number of seconds against a range; `default` when absent.
pub fn seconds(
    value: Option<u64>,
    default: u64,
    range: std::ops::RangeInclusive<u64>,
    setting: &str,
    problems: &mut Problems,
) -> Option<std::time::Duration> {
    let secs = value.unwrap_or(default);
    if range.contains(&secs) {
        Some(std::time::Duration::from_secs(secs))
    } else {
        problems.push(
            setting,
            format!(
                "must be from {} to {} seconds, got {secs}",
                range.start(),
                range.end()
            ),
        );
        None
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_quoted_unless_bare() {
        assert_eq!(key_path("", "smtp"), "smtp");
        assert_eq!(key_path("smtp", "tls"), "smtp.tls");
        assert_eq!(key_path("rails", "usd/ach"), "rails.\"usd/ach\"");
        assert_eq!(key_path("rails", ""), "rails.\"\"");
    }

    #[test]
    fn env_references_read_the_variable_and_name_it_when_missing() {
        let env = |name: &str| (name == "SET").then(|| "s3cret".to_owned());
        let mut problems = Problems::default();
        let set = secret("env:SET".into(), "smtp.password", &env, &mut problems).unwrap();
        assert_eq!(set.value.expose(), "s3cret");
        assert_eq!(set.source(), "env:SET");
        let inline = secret("plain".into(), "smtp.password", &env, &mut problems).unwrap();
        assert_eq!(inline.source(), "inline");
        assert!(problems.is_empty());

        assert!(secret("env:UNSET".into(), "smtp.password", &env, &mut problems).is_none());
        assert!(secret("env:1BAD".into(), "smtp.password", &env, &mut problems).is_none());
        assert!(
            secret(
                toml::Value::Integer(12345),
                "smtp.password",
                &env,
                &mut problems
            )
            .is_none()
        );
        assert!(secret("  ".into(), "smtp.password", &env, &mut problems).is_none());
        let messages: Vec<String> = problems.into_vec().iter().map(Problem::to_string).collect();
        assert_eq!(messages.len(), 4, "{messages:?}");
        assert!(messages[0].starts_with("smtp.password: environment variable UNSET is not set"));
        assert!(messages[1].contains("1BAD"));
        assert!(messages[2].contains("got an integer") && !messages[2].contains("12345"));
        assert!(messages[3].contains("empty"));
    }
}
