//! What the checks of the configuration file share: the problems they collect (each naming its
//! setting's full path), the path syntax, the secret settings (read by
//! [`crate::secret_source`]), and the deserialization of one table at a time.

use std::fmt;

use serde::de::DeserializeOwned;

use crate::secret_source::{SecretRef, SourcedSecret};

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
pub use crate::secret_source::Lookup as Env;

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

/// Reads a secret setting: `"env:NAME"`, `"file:/path"`, `"credential:NAME"` or the text
/// itself ([`crate::secret_source`]). The value is never put in a message.
pub fn secret(
    value: toml::Value,
    setting: &str,
    env: Env<'_>,
    problems: &mut Problems,
) -> Option<SourcedSecret> {
    let reference = secret_ref(value, setting, problems)?;
    if let SecretRef::Inline(text) = &reference
        && text.expose().trim().is_empty()
    {
        problems.push(setting, "must not be empty");
        return None;
    }
    reference
        .read(env)
        .map_err(|e| problems.push(setting, e.to_string()))
        .ok()
}

/// Parses a secret setting without reading it.
pub fn secret_ref(value: toml::Value, setting: &str, problems: &mut Problems) -> Option<SecretRef> {
    let toml::Value::String(text) = value else {
        // `type_name`, not the value: this may be a secret.
        problems.push(
            setting,
            format!(
                "must be a string (the secret, or \"env:NAME\", \"file:/path\" or \"credential:NAME\"), got {}",
                type_name(&value)
            ),
        );
        return None;
    };
    SecretRef::parse(&text)
        .map_err(|e| problems.push(setting, e.to_string()))
        .ok()
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
    fn secret_settings_name_the_setting_and_never_the_value() {
        let env = |name: &str| (name == "SET").then(|| "s3cret".to_owned());
        let mut problems = Problems::default();
        let set = secret("env:SET".into(), "smtp.password", &env, &mut problems).unwrap();
        assert_eq!(set.value.expose(), "s3cret");
        assert_eq!(set.source.to_string(), "env:SET");
        let inline = secret("plain".into(), "smtp.password", &env, &mut problems).unwrap();
        assert_eq!(inline.source.to_string(), "inline");
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
        assert!(
            secret(
                "file:/nonexistent/smtp-password".into(),
                "smtp.password",
                &env,
                &mut problems
            )
            .is_none()
        );
        assert!(
            secret(
                "credential:smtp-password".into(),
                "smtp.password",
                &env,
                &mut problems
            )
            .is_none()
        );
        let messages: Vec<String> = problems.into_vec().iter().map(Problem::to_string).collect();
        assert_eq!(messages.len(), 6, "{messages:?}");
        assert!(messages[0].starts_with("smtp.password: environment variable UNSET is not set"));
        assert!(messages[1].contains("1BAD"));
        assert!(messages[2].contains("got an integer") && !messages[2].contains("12345"));
        assert!(messages[3].contains("empty"));
        assert!(
            messages[4].starts_with("smtp.password: /nonexistent/smtp-password cannot be read"),
            "{}",
            messages[4]
        );
        assert!(
            messages[5].contains("CREDENTIALS_DIRECTORY is not set"),
            "{}",
            messages[5]
        );
    }
}
