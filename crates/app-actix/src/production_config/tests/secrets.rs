//! The configuration's secrets: `env:`, `file:` and `credential:` references, secret files'
//! permissions, the SFTP client key and the bank's host key.

use std::os::unix::fs::PermissionsExt;

use super::*;

#[test]
fn a_missing_credential_or_environment_variable_is_named_with_the_setting() {
    let p = problems_with(EXAMPLE, &Env::example().without("smtp-password"));
    assert_problem(
        &p,
        "smtp.password",
        "the systemd credential smtp-password is not in",
    );
    let p = problems_with(EXAMPLE, &Env::example().without("sepa-sftp-key"));
    assert_problem(
        &p,
        "rails.\"eur/sepa\".transport.private_key",
        "LoadCredential=sepa-sftp-key:<file>",
    );
    let outside_systemd = Env::example().set(crate::secret_source::CREDENTIALS_DIRECTORY, "");
    assert_problem(
        &problems_with(EXAMPLE, &outside_systemd),
        "smtp.password",
        "CREDENTIALS_DIRECTORY is not set",
    );

    let from_env = example_with(
        "password = \"credential:smtp-password\"",
        "password = \"env:PAYOUT_SMTP_PASSWORD\"",
    );
    assert_problem(
        &problems(&from_env),
        "smtp.password",
        "environment variable PAYOUT_SMTP_PASSWORD is not set",
    );
    // Set but empty counts as not set.
    let blank = Env::example().set("PAYOUT_SMTP_PASSWORD", " ");
    assert_problem(
        &problems_with(&from_env, &blank),
        "smtp.password",
        "not set",
    );
    let set = Env::example().set("PAYOUT_SMTP_PASSWORD", SMTP_PASSWORD);
    let settings = parse_with(&from_env, &set).unwrap();
    assert_eq!(
        settings.summary(Utc::now())["smtp"]["password"],
        "[REDACTED] (env:PAYOUT_SMTP_PASSWORD)"
    );
}

#[test]
fn a_secret_file_open_to_others_is_refused_and_one_line_loses_its_newline() {
    let env = Env::example();
    let file = env.credentials.path().join("smtp-password");
    let text = example_with(
        "password = \"credential:smtp-password\"",
        &format!("password = \"file:{}\"", file.display()),
    );
    let settings = parse_with(&text, &env).unwrap();
    let credentials = settings.smtp.credentials.as_ref().unwrap();
    assert_eq!(credentials.password.value.expose(), SMTP_PASSWORD);
    assert_eq!(
        settings.summary(Utc::now())["smtp"]["password"],
        format!("[REDACTED] (file:{})", file.display())
    );
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o640)).unwrap();
    let p = problems_with(&text, &env);
    assert_problem(
        &p,
        "smtp.password",
        &format!(
            "{} is accessible by its group or others (mode 0640)",
            file.display()
        ),
    );
    // The same file as a credential: the same rule.
    assert_problem(
        &problems_with(EXAMPLE, &env),
        "smtp.password",
        "(mode 0640)",
    );
    assert!(!format!("{p:?}").contains(SMTP_PASSWORD));
}

#[test]
fn the_private_key_is_loaded_and_its_problems_never_show_it() {
    let mut env = Env::example();
    let junk = "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5IGF0IGFsbA==\n-----END PRIVATE KEY-----\n";
    env.credential("ach-sftp-key", junk);
    let p = problems_with(EXAMPLE, &env);
    assert_problem(
        &p,
        "rails.\"usd/ach\".transport.private_key",
        "not an OpenSSH or PKCS#8",
    );
    assert!(!format!("{p:?}").contains("bm90IGEga2V5"));

    let relative = example_with(
        "private_key = \"credential:ach-sftp-key\"",
        "private_key = \"keys/ach\"",
    );
    assert_problem(
        &problems(&relative),
        "rails.\"usd/ach\".transport.private_key",
        "absolute path",
    );
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("absent");
    let text = example_with(
        "private_key = \"credential:ach-sftp-key\"",
        &format!("private_key = {:?}", missing.display().to_string()),
    );
    assert_problem(
        &problems(&text),
        "rails.\"usd/ach\".transport.private_key",
        &format!("{} cannot be read", missing.display()),
    );
    // A key file, given as its path alone or as file:, must be its owner's only.
    let file = dir.path().join("ach_ed25519");
    std::fs::write(&file, ed25519().0).unwrap();
    for setting in [
        format!("{:?}", file.display().to_string()),
        format!("\"file:{}\"", file.display()),
    ] {
        let text = example_with(
            "private_key = \"credential:ach-sftp-key\"",
            &format!("private_key = {setting}"),
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_problem(
            &problems(&text),
            "rails.\"usd/ach\".transport.private_key",
            &format!(
                "(mode 0644): a secret file must be readable by its owner only; run `chmod 600 {}`",
                file.display()
            ),
        );
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let settings = parse(&text).unwrap();
        let summary = settings.summary(Utc::now());
        assert_eq!(
            summary["rails"]["usd/ach"]["transport"]["private_key"],
            format!("[REDACTED] (file:{})", file.display())
        );
    }
    // A secret of the wrong type is refused without echoing it.
    let p = problems(&example_with(
        "password = \"credential:smtp-password\"",
        "password = 98765432",
    ));
    assert_problem(&p, "smtp.password", "must be a string");
    assert!(!format!("{p:?}").contains("98765432"));
}

#[test]
fn the_host_key_must_be_an_openssh_line_or_fingerprint() {
    let (_, line) = ed25519();
    let text = example_with(
        "host_key = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM3Vw4tr6pcC/vKH4gtce4Q3vAzPYqC8XW4Mu0lzyXo8 bank-host\"\noutbound_dir = \"/outbound\"",
        &format!("host_key = {line:?}\noutbound_dir = \"/outbound\""),
    );
    parse(&text).unwrap();
    let p = problems(&example_with(
        "host_key = \"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIM3Vw4tr6pcC/vKH4gtce4Q3vAzPYqC8XW4Mu0lzyXo8 bank-host\"\noutbound_dir = \"/outbound\"",
        "host_key = \"bank.example ssh-ed25519\"\noutbound_dir = \"/outbound\"",
    ));
    assert_problem(
        &p,
        "rails.\"usd/ach\".transport.host_key",
        "OpenSSH public-key line",
    );
}
