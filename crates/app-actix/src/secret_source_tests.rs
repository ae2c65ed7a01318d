#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;

use super::*;

/// A directory to write secret files in, and an environment.
struct Fixture {
    dir: tempfile::TempDir,
    variables: HashMap<String, String>,
}

impl Fixture {
    fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
            variables: HashMap::new(),
        }
    }

    /// Writes `name` in the directory with `mode`.
    fn file(&self, name: &str, content: &str, mode: u32) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    fn set(mut self, name: &str, value: &str) -> Self {
        self.variables.insert(name.to_owned(), value.to_owned());
        self
    }

    /// `CREDENTIALS_DIRECTORY` is the fixture's directory.
    fn with_credentials(self) -> Self {
        let dir = self.dir.path().display().to_string();
        self.set(CREDENTIALS_DIRECTORY, &dir)
    }

    fn get(&self, name: &str) -> Option<String> {
        self.variables.get(name).cloned()
    }
}

fn read(text: &str, fixture: &Fixture) -> Result<SourcedSecret, SecretError> {
    SecretRef::parse(text)?.read(&|n| fixture.get(n))
}

fn master_key(fixture: &Fixture) -> Result<Option<SourcedSecret>, EnvSecretError> {
    MASTER_KEY.read(&|n| fixture.get(n))
}

const KEY: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

#[test]
fn every_source_of_the_configuration_file_is_read_and_named() {
    let fixture = Fixture::new();
    let path = fixture.file("smtp-password", "from-a-file\n", 0o600);
    fixture.file("smtp-credential", "from-a-credential", 0o400);
    let fixture = fixture
        .set("SMTP_PASSWORD", "from-the-env")
        .with_credentials();

    let inline = read("written-inline", &fixture).unwrap();
    assert_eq!(inline.value.expose(), "written-inline");
    assert_eq!(inline.source, SecretSource::Inline);
    assert_eq!(inline.masked(), "[REDACTED] (inline)");

    let env = read("env:SMTP_PASSWORD", &fixture).unwrap();
    assert_eq!(env.value.expose(), "from-the-env");
    assert_eq!(env.masked(), "[REDACTED] (env:SMTP_PASSWORD)");

    let file = read(&format!("file:{}", path.display()), &fixture).unwrap();
    assert_eq!(file.value.expose(), "from-a-file", "the newline is trimmed");
    assert_eq!(
        file.masked(),
        format!("[REDACTED] (file:{})", path.display())
    );

    let credential = read("credential:smtp-credential", &fixture).unwrap();
    assert_eq!(credential.value.expose(), "from-a-credential");
    assert_eq!(
        credential.masked(),
        "[REDACTED] (credential:smtp-credential)"
    );
    assert_eq!(
        credential.source.path(),
        Some(fixture.dir.path().join("smtp-credential").as_path())
    );
}

#[test]
fn malformed_references_are_refused_without_quoting_inline_text() {
    let fixture = Fixture::new();
    assert_eq!(
        SecretRef::parse("env:1BAD"),
        Err(SecretError::BadVariableName("1BAD".to_owned()))
    );
    assert_eq!(
        SecretRef::parse("file:relative/key"),
        Err(SecretError::RelativePath("relative/key".to_owned()))
    );
    for bad in ["credential:", "credential:../etc/shadow", "credential:a/b"] {
        assert!(
            matches!(
                SecretRef::parse(bad),
                Err(SecretError::BadCredentialName(_))
            ),
            "{bad}"
        );
    }
    assert_eq!(
        read("env:UNSET", &fixture).unwrap_err().to_string(),
        "environment variable UNSET is not set (the setting says \"env:UNSET\")"
    );
    let debug = format!("{:?}", SecretRef::parse("hunter2").unwrap());
    assert!(!debug.contains("hunter2"), "{debug}");
}

#[test]
fn a_credential_needs_the_directory_and_the_file() {
    let fixture = Fixture::new();
    let outside = read("credential:smtp-password", &fixture).unwrap_err();
    assert_eq!(
        outside,
        SecretError::NoCredentialsDirectory("smtp-password".to_owned())
    );
    assert!(
        outside
            .to_string()
            .contains("CREDENTIALS_DIRECTORY is not set")
    );
    assert!(
        outside
            .to_string()
            .contains("LoadCredential=smtp-password:<file>")
    );

    let fixture = fixture.with_credentials();
    let missing = read("credential:smtp-password", &fixture).unwrap_err();
    assert!(matches!(missing, SecretError::CredentialMissing { .. }));
    let message = missing.to_string();
    assert!(
        message.contains("smtp-password")
            && message.contains(&fixture.dir.path().display().to_string()),
        "{message}"
    );
}

#[test]
fn files_open_to_group_or_others_are_refused_naming_the_file_and_the_fix() {
    let fixture = Fixture::new();
    for mode in [0o644, 0o640, 0o604, 0o620, 0o602, 0o601, 0o660] {
        let path = fixture.file("exposed", "s3cret-content", mode);
        let error = read(&format!("file:{}", path.display()), &fixture).unwrap_err();
        assert_eq!(
            error,
            SecretError::Exposed {
                path: path.clone(),
                mode
            }
        );
        let message = error.to_string();
        assert!(
            message.contains(&format!("(mode {mode:04o})"))
                && message.contains(&format!("chmod 600 {}", path.display())),
            "{message}"
        );
        assert!(!message.contains("s3cret-content"), "{message}");
    }
    // Owner-only modes are accepted.
    for mode in [0o600, 0o400] {
        let path = fixture.file("private", "s3cret-content", mode);
        assert_eq!(read_file(&path).unwrap().expose(), "s3cret-content");
    }
    // The same rule for a credential.
    fixture.file("open-credential", "s3cret-content", 0o644);
    let fixture = fixture.with_credentials();
    assert!(matches!(
        read("credential:open-credential", &fixture),
        Err(SecretError::Exposed { mode: 0o644, .. })
    ));
}

#[test]
fn missing_empty_directories_and_binary_files_are_refused() {
    let fixture = Fixture::new();
    let missing = fixture.dir.path().join("absent");
    let error = read_file(&missing).unwrap_err();
    assert!(matches!(error, SecretError::Unreadable { .. }));
    assert!(error.to_string().contains("absent"), "{error}");

    assert_eq!(
        read_file(fixture.dir.path()).unwrap_err(),
        SecretError::NotAFile {
            path: fixture.dir.path().to_owned()
        }
    );
    // A named pipe is refused without blocking on it.
    let fifo = fixture.dir.path().join("fifo");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if made {
        assert_eq!(
            read_file(&fifo).unwrap_err(),
            SecretError::NotAFile { path: fifo.clone() }
        );
    }
    for blank in ["", "\n", "  \r\n"] {
        let path = fixture.file("blank", blank, 0o600);
        assert_eq!(
            read_file(&path).unwrap_err(),
            SecretError::Empty { path: path.clone() }
        );
    }
    let path = fixture.dir.path().join("binary");
    std::fs::write(&path, [0xff, 0xfe, 0x00]).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    assert_eq!(
        read_file(&path).unwrap_err(),
        SecretError::NotText { path: path.clone() }
    );
    let large = fixture.file("large", &"x".repeat(1024 * 1024 + 1), 0o600);
    assert!(matches!(
        read_file(&large),
        Err(SecretError::TooLarge { .. })
    ));
}

#[test]
fn one_line_loses_its_newline_and_a_pem_key_is_kept_whole() {
    let fixture = Fixture::new();
    for (content, expected) in [
        ("key\n", "key"),
        ("key\r\n", "key"),
        ("key", "key"),
        ("key\n\n", "key\n\n"),
    ] {
        let path = fixture.file("one-line", content, 0o600);
        assert_eq!(read_file(&path).unwrap().expose(), expected, "{content:?}");
    }
    let pem = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIA==\n-----END PRIVATE KEY-----\n";
    let path = fixture.file("key.pem", pem, 0o600);
    assert_eq!(read_file(&path).unwrap().expose(), pem);
}

#[test]
fn an_environment_secret_comes_from_its_variable_its_file_or_its_credential() {
    assert!(master_key(&Fixture::new()).unwrap().is_none());

    let from_env = master_key(&Fixture::new().set("PAYOUT_MASTER_KEY", KEY))
        .unwrap()
        .unwrap();
    assert_eq!(from_env.value.expose(), KEY);
    assert_eq!(from_env.source.to_string(), "env:PAYOUT_MASTER_KEY");

    let fixture = Fixture::new();
    let path = fixture.file("master-key", &format!("{KEY}\n"), 0o600);
    let fixture = fixture.set("PAYOUT_MASTER_KEY_FILE", &path.display().to_string());
    let from_file = master_key(&fixture).unwrap().unwrap();
    assert_eq!(from_file.value.expose(), KEY);
    assert_eq!(from_file.source, SecretSource::File(path));

    let fixture = Fixture::new();
    fixture.file("PAYOUT_MASTER_KEY", KEY, 0o400);
    let fixture = fixture.with_credentials();
    let from_credential = master_key(&fixture).unwrap().unwrap();
    assert_eq!(from_credential.value.expose(), KEY);
    assert_eq!(
        from_credential.source.to_string(),
        "credential:PAYOUT_MASTER_KEY"
    );
    // A credentials directory without this credential is no source of it.
    assert!(
        PREVIOUS_MASTER_KEY
            .read(&|n| fixture.get(n))
            .unwrap()
            .is_none()
    );
}

#[test]
fn an_environment_secret_given_twice_is_refused_naming_both() {
    let fixture = Fixture::new();
    let path = fixture.file("master-key", KEY, 0o600);
    fixture.file("PAYOUT_MASTER_KEY", KEY, 0o400);
    let file = path.display().to_string();

    let both = Fixture::new()
        .set("PAYOUT_MASTER_KEY", KEY)
        .set("PAYOUT_MASTER_KEY_FILE", &file);
    let error = master_key(&both).unwrap_err();
    assert_eq!(error.variable, "PAYOUT_MASTER_KEY");
    assert_eq!(
        error.error.to_string(),
        "PAYOUT_MASTER_KEY and PAYOUT_MASTER_KEY_FILE are both set: give the secret one way only"
    );
    assert!(!error.to_string().contains(KEY));

    let dir = fixture.dir.path().display().to_string();
    let with_credential = Fixture::new()
        .set("PAYOUT_MASTER_KEY_FILE", &file)
        .set(CREDENTIALS_DIRECTORY, &dir);
    let error = master_key(&with_credential).unwrap_err();
    assert_eq!(
        error.error.to_string(),
        "PAYOUT_MASTER_KEY_FILE and the systemd credential PAYOUT_MASTER_KEY are both set: give \
         the secret one way only"
    );
}

#[test]
fn an_environment_secret_file_is_checked_and_named_by_its_variable() {
    let fixture = Fixture::new();
    let path = fixture.file("master-key", KEY, 0o644);
    let exposed = fixture.set("PAYOUT_MASTER_KEY_FILE", &path.display().to_string());
    let error = master_key(&exposed).unwrap_err();
    assert_eq!(error.variable, "PAYOUT_MASTER_KEY_FILE");
    assert_eq!(
        error.error,
        SecretError::Exposed {
            path: path.clone(),
            mode: 0o644
        }
    );
    assert!(!error.to_string().contains(KEY));

    let relative = Fixture::new().set("PAYOUT_MASTER_KEY_FILE", "master-key");
    assert_eq!(
        master_key(&relative).unwrap_err().error,
        SecretError::RelativePath("master-key".to_owned())
    );

    let open_credential = Fixture::new();
    open_credential.file("PAYOUT_MASTER_KEY", KEY, 0o640);
    let open_credential = open_credential.with_credentials();
    let error = master_key(&open_credential).unwrap_err();
    assert_eq!(error.variable, "PAYOUT_MASTER_KEY");
    assert!(matches!(
        error.error,
        SecretError::Exposed { mode: 0o640, .. }
    ));
}

#[test]
fn a_key_file_comes_from_its_variable_or_its_credential() {
    let fixture = Fixture::new();
    assert_eq!(
        file_from_env("PAYOUT_TLS_KEY", &|n| fixture.get(n)).unwrap(),
        None
    );
    let fixture = fixture.set("PAYOUT_TLS_KEY", "/etc/payoutd/tls/key.pem");
    assert_eq!(
        file_from_env("PAYOUT_TLS_KEY", &|n| fixture.get(n)).unwrap(),
        Some((
            PathBuf::from("/etc/payoutd/tls/key.pem"),
            SecretSource::File("/etc/payoutd/tls/key.pem".into())
        ))
    );

    let credentials = Fixture::new();
    credentials.file("PAYOUT_TLS_KEY", "pem", 0o400);
    let credentials = credentials.with_credentials();
    assert_eq!(
        file_from_env("PAYOUT_TLS_KEY", &|n| credentials.get(n))
            .unwrap()
            .map(|(_, s)| s.to_string()),
        Some("credential:PAYOUT_TLS_KEY".to_owned())
    );
    let both = credentials.set("PAYOUT_TLS_KEY", "/etc/payoutd/tls/key.pem");
    let error = file_from_env("PAYOUT_TLS_KEY", &|n| both.get(n)).unwrap_err();
    assert!(matches!(error.error, SecretError::Twice { .. }), "{error}");
}
