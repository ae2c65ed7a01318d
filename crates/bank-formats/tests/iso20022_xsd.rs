//! Independent validation: the pain.001 writer's output, and the pain.002.001.03 examples the
//! parser reads, against the official ISO 20022 XSDs, with libxml2's `xmllint`.
//!
//! `cargo xtask test` installs `xmllint` and fetches the schemas (pinned by SHA-256) into
//! `target/iso20022-xsd/`, and passes their paths in `PAYOUTD_XMLLINT`, `PAYOUTD_PAIN001_XSD`
//! and `PAYOUTD_PAIN002_V03_XSD`. Without them these tests fail; they never skip.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod iso20022_common;

use std::{
    env,
    io::Write,
    path::PathBuf,
    process::{Command, Stdio},
    thread,
};

use bank_formats::iso20022::{CreditTransferInitiation, write_pain001};
use iso20022_common as common;

/// A path from the environment `cargo xtask test` sets up.
fn provided(var: &str) -> PathBuf {
    let hint = "run the tests with `cargo xtask test` (for example `cargo xtask test -p \
                bank-formats`): it installs xmllint (Debian package libxml2-utils) and fetches \
                the official ISO 20022 XSDs into target/iso20022-xsd/";
    let path = match env::var_os(var) {
        Some(path) if !path.is_empty() => PathBuf::from(path),
        _ => panic!("{var} is not set; {hint}"),
    };
    assert!(
        path.is_file(),
        "{var}={} is not a file; {hint}",
        path.display()
    );
    path
}

/// What `xmllint --noout --schema <xsd> -` says of `xml`: `Ok` when valid, else its messages.
fn xmllint(xsd_var: &str, xml: &[u8]) -> Result<(), String> {
    let mut child = Command::new(provided("PAYOUTD_XMLLINT"))
        .args(["--noout", "--nonet", "--schema"])
        .arg(provided(xsd_var))
        .arg("-")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run xmllint");
    let mut stdin = child.stdin.take().unwrap();
    let input = xml.to_vec();
    // Written from a thread, so a chatty xmllint cannot block on a full stderr pipe meanwhile.
    let writer = thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    if out.status.success() {
        Ok(())
    } else {
        Err(format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

fn assert_valid_pain001(name: &str, file: &CreditTransferInitiation) {
    let xml = write_pain001(file).unwrap();
    if let Err(messages) = xmllint("PAYOUTD_PAIN001_XSD", &xml) {
        panic!(
            "{name}: the pain.001.001.09 XSD refuses the writer's output:\n{messages}\n{}",
            String::from_utf8_lossy(&xml)
        );
    }
}

#[test]
fn one_transaction_is_valid() {
    assert_valid_pain001("one transaction", &common::one_transaction());
}

#[test]
fn many_transactions_in_several_batches_are_valid() {
    assert_valid_pain001("many transactions", &common::many_transactions());
}

#[test]
fn names_that_need_replacing_are_valid() {
    assert_valid_pain001("awkward text", &common::awkward_text());
}

#[test]
fn fields_at_their_maximum_length_are_valid() {
    assert_valid_pain001("max-length fields", &common::max_length_fields());
}

#[test]
fn an_initiating_party_id_and_no_remittance_are_valid() {
    let mut file = common::one_transaction();
    file.initiating_party.id = Some("DE98ZZZ09999999999".to_owned());
    file.batches[0].transactions[0].remittance = None;
    assert_valid_pain001("party id, no remittance", &file);
}

/// The validation is not vacuous: xmllint and the schema do refuse a broken document.
#[test]
fn the_schema_refuses_what_it_should() {
    let xml = String::from_utf8(write_pain001(&common::one_transaction()).unwrap()).unwrap();
    let broken = [
        (
            "a letter in NbOfTxs",
            xml.replacen("<NbOfTxs>1</NbOfTxs>", "<NbOfTxs>one</NbOfTxs>", 1),
        ),
        (
            "an unknown payment method",
            xml.replace("<PmtMtd>TRF</PmtMtd>", "<PmtMtd>XXX</PmtMtd>"),
        ),
        (
            "a misplaced element",
            xml.replace("<ChrgBr>SLEV</ChrgBr>", "")
                .replace("</PmtId>", "</PmtId><ChrgBr>SLEV</ChrgBr><X/>"),
        ),
        (
            "another namespace",
            xml.replace("pain.001.001.09", "pain.001.001.08"),
        ),
        (
            "a message id of 36 characters",
            xml.replace("PAYOUTD-20261125-0001", &"M".repeat(36)),
        ),
    ];
    for (what, doc) in broken {
        assert_ne!(doc, xml, "{what}: the test did not change the document");
        assert!(
            xmllint("PAYOUTD_PAIN001_XSD", doc.as_bytes()).is_err(),
            "xmllint accepted a document with {what}"
        );
    }
}

#[test]
fn pain002_v03_examples_are_valid() {
    for name in common::PAIN002_V03_FIXTURES {
        if let Err(messages) = xmllint("PAYOUTD_PAIN002_V03_XSD", &common::fixture(name)) {
            panic!("{name}: the pain.002.001.03 XSD refuses it:\n{messages}");
        }
    }
}
