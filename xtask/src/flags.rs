//! A tiny flag parser: xtask has a handful of flags and no need for clap.

/// The arguments of one command, consumed flag by flag.
pub struct Flags {
    args: Vec<String>,
}

impl Flags {
    /// Wraps the arguments that follow the command name.
    pub fn new(args: Vec<String>) -> Self {
        Self { args }
    }

    /// Takes `NAME VALUE` or `NAME=VALUE`, if present.
    pub fn value(&mut self, name: &str) -> Result<Option<String>, String> {
        let prefix = format!("{name}=");
        let Some(index) = self
            .args
            .iter()
            .position(|arg| arg == name || arg.starts_with(&prefix))
        else {
            return Ok(None);
        };
        let arg = self.args.remove(index);
        if let Some(value) = arg.strip_prefix(&prefix) {
            return Ok(Some(value.to_owned()));
        }
        if index < self.args.len() {
            Ok(Some(self.args.remove(index)))
        } else {
            Err(format!("{name} needs a value"))
        }
    }

    /// Takes `NAME VALUE` or `NAME=VALUE`, failing if it is absent.
    pub fn required(&mut self, name: &str) -> Result<String, String> {
        self.value(name)?
            .ok_or_else(|| format!("missing required flag {name}"))
    }

    /// Takes the bare flag `NAME`, reporting whether it was present.
    pub fn switch(&mut self, name: &str) -> bool {
        let before = self.args.len();
        self.args.retain(|arg| arg != name);
        self.args.len() != before
    }

    /// Fails if any argument was not consumed.
    pub fn finish(self) -> Result<(), String> {
        if self.args.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "unexpected argument(s): {}; see `cargo xtask help`",
                self.args.join(" ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Flags;

    fn flags(args: &[&str]) -> Flags {
        Flags::new(args.iter().map(|arg| (*arg).to_owned()).collect())
    }

    #[test]
    fn values_switches_and_leftovers() {
        let mut f = flags(&["--a", "1", "--v2", "--b=x=y", "extra"]);
        assert_eq!(f.value("--a"), Ok(Some("1".to_owned())));
        assert_eq!(f.value("--b"), Ok(Some("x=y".to_owned())));
        assert_eq!(f.value("--c"), Ok(None));
        assert!(f.switch("--v2"));
        assert!(!f.switch("--v2"));
        assert!(f.finish().is_err());
    }

    #[test]
    fn missing_value_is_an_error() {
        let mut f = flags(&["--a"]);
        assert!(f.value("--a").is_err());
        assert!(flags(&[]).required("--a").is_err());
    }
}
