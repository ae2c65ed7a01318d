//! What every rail's settings share: the problems their one `validate()` reports, each naming
//! its key in the rail's table (`[rails."<method>"]`), and the small readers of TOML values the
//! settings types deserialize with.

use std::fmt;

use serde::{Deserialize, Deserializer};

/// One thing wrong with a rail's settings: the key in the rail's configuration table (the TOML
/// key, which the configuration reports under `rails."<method>".<key>`) and what is wrong. The
/// message never repeats an account value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{setting}: {problem}")]
pub struct SettingProblem {
    /// The setting's key.
    pub setting: &'static str,
    /// What is wrong with it.
    pub problem: String,
}

/// Every problem found in a rail's settings (at least one), in the order of the keys checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingsError {
    /// The problems.
    pub problems: Vec<SettingProblem>,
}

impl SettingsError {
    /// The keys with a problem, in order (a key may appear more than once).
    pub fn settings(&self) -> Vec<&'static str> {
        self.problems.iter().map(|p| p.setting).collect()
    }
}

impl fmt::Display for SettingsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, problem) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{problem}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SettingsError {}

/// Collects the problems of one `validate()`.
#[derive(Debug, Default)]
pub(crate) struct Check(Vec<SettingProblem>);

impl Check {
    /// Records a problem with `setting`.
    pub(crate) fn push(&mut self, setting: &'static str, problem: impl Into<String>) {
        self.0.push(SettingProblem {
            setting,
            problem: problem.into(),
        });
    }

    /// Records `problem` unless `ok`.
    pub(crate) fn require(&mut self, ok: bool, setting: &'static str, problem: impl Into<String>) {
        if !ok {
            self.push(setting, problem);
        }
    }

    /// A free-text setting: not blank, at most `max` characters.
    pub(crate) fn text(&mut self, setting: &'static str, value: &str, max: usize) -> bool {
        let count = value.trim().chars().count();
        if count == 0 {
            self.push(setting, "must not be empty");
            false
        } else if count > max {
            self.push(
                setting,
                format!("must be at most {max} characters, got {count}"),
            );
            false
        } else {
            true
        }
    }

    /// `Ok` when nothing was recorded.
    pub(crate) fn finish(self) -> Result<(), SettingsError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(SettingsError { problems: self.0 })
        }
    }
}

/// A string setting read without its surrounding blanks.
pub(crate) fn trimmed<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
    Ok(String::deserialize(deserializer)?.trim().to_owned())
}

/// An optional string setting read without its surrounding blanks.
pub(crate) fn trimmed_option<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<String>, D::Error> {
    Ok(Option::<String>::deserialize(deserializer)?.map(|s| s.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_problem_is_kept_and_shown_by_key() {
        let mut check = Check::default();
        check.require(true, "a", "never");
        check.require(false, "a", "first");
        assert!(!check.text("b", "  ", 3));
        assert!(!check.text("c", "abcd", 3));
        assert!(check.text("d", " abc ", 3));
        let Err(error) = check.finish() else {
            panic!("problems were found")
        };
        assert_eq!(error.settings(), ["a", "b", "c"]);
        assert_eq!(
            error.to_string(),
            "a: first; b: must not be empty; c: must be at most 3 characters, got 4"
        );
        assert_eq!(Check::default().finish(), Ok(()));
    }
}
