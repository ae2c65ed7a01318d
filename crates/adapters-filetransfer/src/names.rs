//! File names both transports share: the names they accept, the temporary name an upload is
//! written under, and which inbound names are listed.

use anyhow::anyhow;
use domain::{PortError, rail::transport::is_plain_file_name};
use sha2::{Digest, Sha256};

/// The longest file name (in bytes) most file systems allow.
const NAME_MAX: usize = 255;

/// Suffixes of files still being written, by us (`.part`) or by common transfer agents
/// (WinSCP's `.filepart`). Such inbound files are not listed.
const PARTIAL_SUFFIXES: &[&str] = &[".part", ".filepart"];

/// Refuses, with `PortError::Unknown`, any `name` that is not a plain file name.
pub(crate) fn check(name: &str) -> Result<(), PortError> {
    if is_plain_file_name(name) {
        Ok(())
    } else {
        let shown: String = name.chars().take(64).collect();
        let more = if shown.len() < name.len() { "…" } else { "" };
        Err(PortError::Unknown(anyhow!(
            "refused file name {shown:?}{more}: only plain file names are allowed (no path \
             separator, no leading dot, no control character, at most 255 bytes)"
        )))
    }
}

/// The name an upload of `name` is written under before it is renamed: `.<name>.part`, or,
/// when that would be longer than 255 bytes, `.<hash of name>.part`. It starts with a dot, so
/// neither transport lists it, and it is the same on every attempt, so a later upload of the
/// same name overwrites what a crashed one left.
pub(crate) fn temporary(name: &str) -> String {
    let plain = format!(".{name}.part");
    if plain.len() <= NAME_MAX {
        plain
    } else {
        format!(".{}.part", hex::encode(Sha256::digest(name.as_bytes())))
    }
}

/// Whether an inbound file called `name` is listed: a plain file name (so no dot file) that
/// does not end like a file still being written.
pub(crate) fn is_listed(name: &str) -> bool {
    is_plain_file_name(name) && !PARTIAL_SUFFIXES.iter().any(|suffix| name.ends_with(suffix))
}

#[cfg(test)]
mod tests {
    use super::{check, is_listed, temporary};

    #[test]
    fn temporary_names_are_hidden_and_fit() {
        assert_eq!(temporary("PAY_1.ach"), ".PAY_1.ach.part");
        let long = "x".repeat(255);
        let temp = temporary(&long);
        assert!(temp.starts_with('.') && temp.ends_with(".part"));
        assert!(temp.len() <= 255);
        assert_eq!(temp, temporary(&long));
        assert_ne!(temp, temporary(&"y".repeat(255)));
        assert!(!is_listed(&temp));
    }

    #[test]
    fn listing_skips_dot_files_and_partial_uploads() {
        for listed in ["ACK_1.xml", "return.csv", "partial"] {
            assert!(is_listed(listed), "{listed}");
        }
        for skipped in [
            ".",
            "..",
            ".hidden",
            ".ACK.xml.part",
            "ACK.xml.part",
            "a.filepart",
        ] {
            assert!(!is_listed(skipped), "{skipped}");
        }
    }

    #[test]
    fn refusals_name_the_name_briefly() {
        assert!(check("a.xml").is_ok());
        let Err(err) = check("../etc/passwd") else {
            panic!("accepted a path");
        };
        assert!(err.to_string().contains("\"../etc/passwd\""), "{err}");
        let Err(err) = check(&"z".repeat(300)) else {
            panic!("accepted a long name");
        };
        assert!(err.to_string().len() < 300, "{err}");
    }
}
