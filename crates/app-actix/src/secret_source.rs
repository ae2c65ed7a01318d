//! Where a secret comes from, and reading it: one copy of the rules for every secret payoutd
//! takes (the master keys, the database URL, the TLS key, the SMTP password, a partner's shared
//! secret, an SFTP client key).
//!
//! A secret comes from one of four places:
//!
//! | source | written | read from |
//! |---|---|---|
//! | a file | `file:/absolute/path` in the configuration file; `<VARIABLE>_FILE=/absolute/path` in the environment | that file |
//! | a systemd credential | `credential:NAME` in the configuration file; for an environment secret, a credential named like its variable (`LoadCredential=PAYOUT_MASTER_KEY:/etc/payoutd/credentials/PAYOUT_MASTER_KEY`) | `$CREDENTIALS_DIRECTORY/NAME` |
//! | an environment variable | `env:NAME` in the configuration file; the variable itself in the environment | the variable |
//! | inline | any other text in the configuration file | the file itself |
//!
//! A secret file (a `file:`, a `_FILE` variable, a credential, the TLS key, an SFTP key file)
//! must be a regular file, readable by its owner only: one whose mode gives its group or others
//! any access (`mode & 0o077 != 0`) is refused, naming the file, its mode and the fix
//! (`chmod 600 <path>`). So is one that is empty, unreadable, not UTF-8 or over 1 MiB. A file
//! holding one line (`echo … > file`) loses its trailing newline (`\n` or `\r\n`); a multi-line
//! file (a PEM or OpenSSH key) is kept as it is. Messages name the source, never the value.

use std::fmt;
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use domain::masking::Secret;

/// Looks an environment variable up (the process environment, or a map in tests).
pub type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The variable systemd sets to the directory of the service's credentials.
pub const CREDENTIALS_DIRECTORY: &str = "CREDENTIALS_DIRECTORY";

/// The largest secret file read.
const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Where a secret came from; shown in summaries in place of the value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// Written in the configuration file.
    Inline,
    /// An environment variable.
    Env(String),
    /// A file.
    File(PathBuf),
    /// A systemd credential, and the file it was read from.
    Credential {
        /// Its name.
        name: String,
        /// `$CREDENTIALS_DIRECTORY/<name>`.
        path: PathBuf,
    },
}

impl SecretSource {
    /// The file the secret is read from, if it comes from one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            Self::File(path) | Self::Credential { path, .. } => Some(path),
            Self::Inline | Self::Env(_) => None,
        }
    }
}

impl fmt::Display for SecretSource {
    /// `inline`, `env:NAME`, `file:/path` or `credential:NAME`, as the configuration writes
    /// them.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inline => f.write_str("inline"),
            Self::Env(name) => write!(f, "env:{name}"),
            Self::File(path) => write!(f, "file:{}", path.display()),
            Self::Credential { name, .. } => write!(f, "credential:{name}"),
        }
    }
}

/// A secret and where it came from.
#[derive(Clone, Debug)]
pub struct SourcedSecret {
    /// The secret.
    pub value: Secret<String>,
    /// Where it came from.
    pub source: SecretSource,
}

impl SourcedSecret {
    /// What a summary shows: `[REDACTED] (file:/etc/payoutd/smtp-password)`.
    pub fn masked(&self) -> String {
        masked(&self.source)
    }
}

/// What a summary shows of a secret from `source`: `[REDACTED] (<source>)`.
pub fn masked(source: &SecretSource) -> String {
    format!("[REDACTED] ({source})")
}

/// Why a secret could not be had. The messages name the source, never the value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    /// `env:` followed by something that is not a variable name.
    #[error(
        "\"env:{0}\" does not name an environment variable (letters, digits and _, not starting with a digit)"
    )]
    BadVariableName(String),
    /// `env:NAME` with `NAME` unset or empty.
    #[error("environment variable {0} is not set (the setting says \"env:{0}\")")]
    VariableUnset(String),
    /// `file:` with a relative path.
    #[error("\"file:{0}\" must name an absolute path")]
    RelativePath(String),
    /// `credential:` followed by something that is not a credential name.
    #[error(
        "\"credential:{0}\" does not name a systemd credential (letters, digits, '.', '_' and '-')"
    )]
    BadCredentialName(String),
    /// A credential asked for outside systemd.
    #[error(
        "the systemd credential {0} cannot be read: CREDENTIALS_DIRECTORY is not set (run payoutd from a unit with LoadCredential={0}:<file>, or set CREDENTIALS_DIRECTORY to a directory holding a file named {0})"
    )]
    NoCredentialsDirectory(String),
    /// A credential the unit does not load.
    #[error(
        "the systemd credential {name} is not in {} (CREDENTIALS_DIRECTORY): add LoadCredential={name}:<file> to the unit",
        .directory.display()
    )]
    CredentialMissing {
        /// The credential.
        name: String,
        /// `$CREDENTIALS_DIRECTORY`.
        directory: PathBuf,
    },
    /// The file cannot be opened or read.
    #[error("{} cannot be read: {reason}", .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// Not a regular file.
    #[error("{} is not a regular file", .path.display())]
    NotAFile {
        /// The path.
        path: PathBuf,
    },
    /// Group or others may access it.
    #[error(
        "{} is accessible by its group or others (mode {mode:04o}): a secret file must be readable by its owner only; run `chmod 600 {}`",
        .path.display(),
        .path.display()
    )]
    Exposed {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Empty, or only white space.
    #[error("{} is empty", .path.display())]
    Empty {
        /// The file.
        path: PathBuf,
    },
    /// Not UTF-8 text.
    #[error("{} is not UTF-8 text", .path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// Over [`MAX_FILE_BYTES`].
    #[error("{} is larger than 1 MiB, too large for a secret", .path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
    },
    /// Given two ways at once.
    #[error("{first} and {second} are both set: give the secret one way only")]
    Twice {
        /// One way.
        first: String,
        /// The other.
        second: String,
    },
}

fn valid_variable_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// systemd's rule for credential names: a file name (no `/`, not `.` or `..`); payoutd keeps
/// to the portable characters.
fn valid_credential_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// A secret as the configuration file writes it: `env:NAME`, `file:/path`, `credential:NAME`
/// or the text itself.
#[derive(Clone, PartialEq, Eq)]
pub enum SecretRef {
    /// The text itself.
    Inline(Secret<String>),
    /// `env:NAME`.
    Env(String),
    /// `file:/path`.
    File(PathBuf),
    /// `credential:NAME`.
    Credential(String),
}

impl fmt::Debug for SecretRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Inline(_) => f.write_str("Inline([REDACTED])"),
            Self::Env(name) => f.debug_tuple("Env").field(name).finish(),
            Self::File(path) => f.debug_tuple("File").field(path).finish(),
            Self::Credential(name) => f.debug_tuple("Credential").field(name).finish(),
        }
    }
}

impl SecretRef {
    /// Parses a setting's text.
    ///
    /// # Errors
    /// A malformed `env:`, `file:` or `credential:` reference (never quoting inline text).
    pub fn parse(text: &str) -> Result<Self, SecretError> {
        if let Some(name) = text.strip_prefix("env:") {
            return if valid_variable_name(name) {
                Ok(Self::Env(name.to_owned()))
            } else {
                Err(SecretError::BadVariableName(name.to_owned()))
            };
        }
        if let Some(path) = text.strip_prefix("file:") {
            return if Path::new(path).is_absolute() {
                Ok(Self::File(PathBuf::from(path)))
            } else {
                Err(SecretError::RelativePath(path.to_owned()))
            };
        }
        if let Some(name) = text.strip_prefix("credential:") {
            return if valid_credential_name(name) {
                Ok(Self::Credential(name.to_owned()))
            } else {
                Err(SecretError::BadCredentialName(name.to_owned()))
            };
        }
        Ok(Self::Inline(Secret::new(text.to_owned())))
    }

    /// Reads the secret.
    ///
    /// # Errors
    /// See [`SecretError`].
    pub fn read(&self, env: Lookup<'_>) -> Result<SourcedSecret, SecretError> {
        match self {
            Self::Inline(text) => Ok(SourcedSecret {
                value: text.clone(),
                source: SecretSource::Inline,
            }),
            Self::Env(name) => match set(env, name) {
                Some(value) => Ok(SourcedSecret {
                    value: Secret::new(value),
                    source: SecretSource::Env(name.clone()),
                }),
                None => Err(SecretError::VariableUnset(name.clone())),
            },
            Self::File(path) => Ok(SourcedSecret {
                value: read_file(path)?,
                source: SecretSource::File(path.clone()),
            }),
            Self::Credential(name) => {
                let path = credential(name, env)?
                    .ok_or_else(|| SecretError::NoCredentialsDirectory(name.clone()))?;
                Ok(SourcedSecret {
                    value: read_file(&path)?,
                    source: SecretSource::Credential {
                        name: name.clone(),
                        path,
                    },
                })
            }
        }
    }
}

/// A variable's value, unless it is unset or blank.
fn set(env: Lookup<'_>, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

/// The file of the credential `name` in `$CREDENTIALS_DIRECTORY`: `None` when that variable is
/// unset.
///
/// # Errors
/// The directory is set but holds no such credential.
fn credential(name: &str, env: Lookup<'_>) -> Result<Option<PathBuf>, SecretError> {
    let Some(directory) = set(env, CREDENTIALS_DIRECTORY) else {
        return Ok(None);
    };
    let directory = PathBuf::from(directory.trim());
    let path = directory.join(name);
    if path.symlink_metadata().is_err() {
        return Err(SecretError::CredentialMissing {
            name: name.to_owned(),
            directory,
        });
    }
    Ok(Some(path))
}

/// Reads a secret file: a regular file, UTF-8, not empty, at most 1 MiB, whose mode gives its
/// group and others no access. One line loses its trailing newline; several lines are kept as
/// they are.
///
/// # Errors
/// See [`SecretError`]; each names the file, never its content.
pub fn read_file(path: &Path) -> Result<Secret<String>, SecretError> {
    let unreadable = |e: std::io::Error| SecretError::Unreadable {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    // A named pipe or a device would block or never end: refused before it is opened. The
    // checks are then made again on the file opened, so what is read is what was checked.
    if !std::fs::metadata(path).map_err(unreadable)?.is_file() {
        return Err(SecretError::NotAFile {
            path: path.to_owned(),
        });
    }
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let metadata = file.metadata().map_err(unreadable)?;
    if !metadata.is_file() {
        return Err(SecretError::NotAFile {
            path: path.to_owned(),
        });
    }
    let mode = metadata.permissions().mode() & 0o7777;
    if mode & 0o077 != 0 {
        return Err(SecretError::Exposed {
            path: path.to_owned(),
            mode,
        });
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    let bytes = Secret::new(bytes);
    if u64::try_from(bytes.expose().len()).map_or(true, |n| n > MAX_FILE_BYTES) {
        return Err(SecretError::TooLarge {
            path: path.to_owned(),
        });
    }
    let text = std::str::from_utf8(bytes.expose()).map_err(|_| SecretError::NotText {
        path: path.to_owned(),
    })?;
    if text.trim().is_empty() {
        return Err(SecretError::Empty {
            path: path.to_owned(),
        });
    }
    Ok(Secret::new(one_line_trimmed(text).to_owned()))
}

/// `text` without its trailing newline when it is one line; as it is otherwise.
fn one_line_trimmed(text: &str) -> &str {
    match text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
    {
        Some(line) if !line.contains('\n') => line,
        _ => text,
    }
}

/// A secret the environment gives: its variable, the `_FILE` variable naming a file that holds
/// it, or the systemd credential named like the variable. At most one of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EnvSecret {
    /// The variable holding the value.
    pub variable: &'static str,
    /// The variable naming a file holding the value.
    pub file_variable: &'static str,
}

/// The master key.
pub const MASTER_KEY: EnvSecret = EnvSecret {
    variable: "PAYOUT_MASTER_KEY",
    file_variable: "PAYOUT_MASTER_KEY_FILE",
};

/// The master key being rotated away from.
pub const PREVIOUS_MASTER_KEY: EnvSecret = EnvSecret {
    variable: "PAYOUT_PREVIOUS_MASTER_KEY",
    file_variable: "PAYOUT_PREVIOUS_MASTER_KEY_FILE",
};

/// The database URL (it holds the runtime role's password).
pub const DATABASE_URL: EnvSecret = EnvSecret {
    variable: "DATABASE_URL",
    file_variable: "DATABASE_URL_FILE",
};

/// An environment secret refused, naming the variable (or credential) that gave it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}: {error}")]
pub struct EnvSecretError {
    /// The variable whose value, file or credential was refused.
    pub variable: &'static str,
    /// Why.
    pub error: SecretError,
}

impl EnvSecret {
    /// Where the secret is given, without reading it: `None` when it is not given at all.
    ///
    /// # Errors
    /// It is given two ways, or `_FILE` names a relative path.
    pub fn locate(&self, env: Lookup<'_>) -> Result<Option<SecretSource>, EnvSecretError> {
        let refused = |variable, error| EnvSecretError { variable, error };
        let mut given: Vec<(String, SecretSource)> = Vec::new();
        if set(env, self.variable).is_some() {
            given.push((
                self.variable.to_owned(),
                SecretSource::Env(self.variable.to_owned()),
            ));
        }
        if let Some(path) = set(env, self.file_variable) {
            let path = PathBuf::from(path.trim());
            if !path.is_absolute() {
                return Err(refused(
                    self.file_variable,
                    SecretError::RelativePath(path.display().to_string()),
                ));
            }
            given.push((self.file_variable.to_owned(), SecretSource::File(path)));
        }
        // A credential of this name is a source only when the directory holds it.
        if let Ok(Some(path)) = credential(self.variable, env) {
            given.push((
                format!("the systemd credential {}", self.variable),
                SecretSource::Credential {
                    name: self.variable.to_owned(),
                    path,
                },
            ));
        }
        let mut given = given.into_iter();
        let first = given.next();
        if let (Some((first, _)), Some((second, _))) = (&first, given.next()) {
            return Err(refused(
                self.variable,
                SecretError::Twice {
                    first: first.clone(),
                    second,
                },
            ));
        }
        Ok(first.map(|(_, source)| source))
    }

    /// Reads the secret: `None` when it is not given at all.
    ///
    /// # Errors
    /// It is given two ways, or its file is refused (naming the variable that named it).
    pub fn read(&self, env: Lookup<'_>) -> Result<Option<SourcedSecret>, EnvSecretError> {
        let Some(source) = self.locate(env)? else {
            return Ok(None);
        };
        let value = match &source {
            SecretSource::Env(_) | SecretSource::Inline => match set(env, self.variable) {
                Some(value) => Secret::new(value),
                None => return Ok(None),
            },
            SecretSource::File(path) => read_file(path).map_err(|error| EnvSecretError {
                variable: self.file_variable,
                error,
            })?,
            SecretSource::Credential { path, .. } => {
                read_file(path).map_err(|error| EnvSecretError {
                    variable: self.variable,
                    error,
                })?
            }
        };
        Ok(Some(SourcedSecret { value, source }))
    }
}

/// A secret file named by an environment variable (the TLS key): the variable's path, or, when
/// it is unset, the systemd credential named like the variable. Located, not read: the caller
/// reads the path with [`read_file`] (its checks are the same).
///
/// # Errors
/// The variable and the credential both given.
pub fn file_from_env(
    variable: &'static str,
    env: Lookup<'_>,
) -> Result<Option<(PathBuf, SecretSource)>, EnvSecretError> {
    let path = set(env, variable).map(|p| {
        let path = PathBuf::from(p.trim());
        (path.clone(), SecretSource::File(path))
    });
    let credential = credential(variable, env).ok().flatten().map(|path| {
        let source = SecretSource::Credential {
            name: variable.to_owned(),
            path: path.clone(),
        };
        (path, source)
    });
    match (path, credential) {
        (Some(_), Some(_)) => Err(EnvSecretError {
            variable,
            error: SecretError::Twice {
                first: variable.to_owned(),
                second: format!("the systemd credential {variable}"),
            },
        }),
        (path, credential) => Ok(path.or(credential)),
    }
}

/// The process environment, as a [`Lookup`].
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
#[path = "secret_source_tests.rs"]
mod tests;
