//! How an xtask command fails: whatever detail there is first (a child's output, where the logs
//! are), then one last line saying what was expected and what was seen instead, so the last line
//! of a CI stage's output is its reason.

use std::process::{Command, ExitCode, ExitStatus};

use crate::cmd;

/// A failed command: what it expected, what it saw, the detail printed before, and its exit code.
#[derive(Debug, PartialEq, Eq)]
pub struct Failure {
    /// What was expected; `None` for the command's own goal.
    expected: Option<String>,
    /// What was seen instead.
    seen: String,
    /// Lines printed before the last one.
    detail: String,
    /// The process's exit code.
    code: u8,
}

impl Failure {
    /// Expected `expected`, saw `seen` (each a phrase).
    pub fn new(expected: impl Into<String>, seen: impl Into<String>) -> Self {
        Self {
            expected: Some(expected.into()),
            seen: seen.into(),
            detail: String::new(),
            code: 1,
        }
    }

    /// `Ok` when the child `child` succeeded (its `status`); otherwise a failure expecting
    /// `expected` that forwards the child's exit code (128 + the signal for a death by signal, as
    /// a shell reports it).
    pub fn check_exit(
        expected: impl Into<String>,
        child: &Command,
        status: ExitStatus,
    ) -> Result<(), Self> {
        if status.success() {
            return Ok(());
        }
        Err(Self {
            code: cmd::status_code(status),
            ..Self::new(
                expected,
                format!("`{}` ended with {status}", cmd::display(child)),
            )
        })
    }

    /// Adds `detail` (a log's path, a child's output), printed before the last line after any
    /// detail already given.
    #[must_use]
    pub fn with_detail(mut self, detail: impl AsRef<str>) -> Self {
        let detail = detail.as_ref().trim_end();
        if !self.detail.trim().is_empty() && !detail.is_empty() {
            self.detail = format!("{}\n{detail}", self.detail.trim_end());
        } else if !detail.is_empty() {
            self.detail = detail.to_owned();
        }
        self
    }

    /// The last line, as [`Failure::report`] prints it.
    pub fn last_line(&self, command: &str, goal: &str) -> String {
        let expected = self.expected.as_deref().unwrap_or(goal);
        format!(
            "xtask {command}: expected {}; saw {}",
            one_line(expected),
            one_line(&self.seen)
        )
    }

    /// Prints the detail, then the last line (`xtask COMMAND: expected …; saw …`, `goal` standing
    /// for what the command expected when the failure does not say), and returns the exit code.
    pub fn report(&self, command: &str, goal: &str) -> ExitCode {
        let detail = self.detail.trim_end();
        if !detail.is_empty() {
            eprintln!("{detail}");
        }
        eprintln!("{}", self.last_line(command, goal));
        ExitCode::from(self.code)
    }
}

/// An error message for code that returns plain strings, which [`Failure::from`] reads back as
/// what was expected and what was seen: `expected EXPECTED; saw SEEN`.
pub fn expected_saw(expected: &str, seen: &str) -> String {
    format!("expected {}; saw {}", one_line(expected), one_line(seen))
}

/// An error message becomes a failure: its first line is what was seen (against the command's
/// goal, unless the line is an [`expected_saw`] one), and a longer message is printed whole
/// before the last line.
impl From<String> for Failure {
    fn from(message: String) -> Self {
        let first = message
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("an error without a message");
        let (expected, seen) = match first
            .strip_prefix("expected ")
            .and_then(|rest| rest.split_once("; saw "))
        {
            Some((expected, seen)) => (Some(expected.to_owned()), seen.to_owned()),
            None => (None, first.to_owned()),
        };
        let detail = if message.trim().lines().nth(1).is_some() {
            message
        } else {
            String::new()
        };
        Self {
            expected,
            seen,
            detail,
            code: 1,
        }
    }
}

/// `text` with its lines joined by a space, so that it fits on one line.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::Failure;

    #[test]
    fn the_last_line_says_what_was_expected_and_what_was_seen() {
        let failure = Failure::new("every payout final within 300 s", "58 of 60 final");
        assert_eq!(
            failure.last_line("rails-demo", "the demo to pass"),
            "xtask rails-demo: expected every payout final within 300 s; saw 58 of 60 final"
        );
    }

    #[test]
    fn a_plain_message_is_seen_against_the_commands_goal_and_printed_whole_before() {
        let failure = Failure::from(
            "`cargo build` failed (exit status: 101)\nerror[E0308]: mismatched types\n".to_owned(),
        );
        assert_eq!(
            failure.last_line("test", "every test to pass"),
            "xtask test: expected every test to pass; saw `cargo build` failed (exit status: 101)"
        );
        assert!(failure.detail.contains("E0308"));
        let short = Failure::from("no Citus source found".to_owned());
        assert_eq!(short.detail, "");
        let more = short
            .with_detail("the log: a")
            .with_detail("")
            .with_detail("the bank: b\n");
        assert_eq!(more.detail, "the log: a\nthe bank: b");
        assert_eq!(
            Failure::from(String::new()).last_line("db", "a database"),
            "xtask db: expected a database; saw an error without a message"
        );
    }

    #[test]
    fn a_plain_message_may_say_what_was_expected() {
        let message = format!(
            "{}\nthe cluster: target/pg",
            super::expected_saw("no xtask command using it", "`xtask serve` (pid 7)")
        );
        let failure = Failure::from(message);
        assert_eq!(
            failure.last_line("db-stop", "the cluster stopped"),
            "xtask db-stop: expected no xtask command using it; saw `xtask serve` (pid 7)"
        );
        assert!(failure.detail.ends_with("the cluster: target/pg"));
    }

    #[test]
    fn a_multi_line_phrase_is_joined_on_the_last_line() {
        let failure = Failure::new("a\nb", "c\r\n\nd");
        assert_eq!(
            failure.last_line("x", "goal"),
            "xtask x: expected a b; saw c d"
        );
    }

    #[test]
    fn a_child_s_exit_code_is_forwarded() {
        let mut child = Command::new("sh");
        child.args(["-c", "exit 3"]);
        let status = child.status().unwrap_or_else(|err| panic!("sh: {err}"));
        let failure = Failure::check_exit("every test to pass", &child, status)
            .err()
            .unwrap_or_else(|| panic!("exit 3 is a failure"));
        assert_eq!(failure.code, 3);
        assert_eq!(
            failure.last_line("test", "goal"),
            "xtask test: expected every test to pass; saw `sh -c exit 3` ended with exit status: 3"
        );
        let ok = Command::new("true")
            .status()
            .unwrap_or_else(|err| panic!("true: {err}"));
        assert_eq!(Failure::check_exit("x", &child, ok), Ok(()));
    }
}
