//! The error-code table of `docs/API.md` is the catalogue of `domain::codes`, row for row.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use domain::ErrorCode;

const HEADER: &str = "| Code | HTTP | Message |";

#[test]
fn api_md_lists_exactly_the_catalogue() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/API.md");
    let doc = std::fs::read_to_string(path).expect("docs/API.md exists");
    let mut lines = doc.lines().skip_while(|line| line.trim() != HEADER);
    assert!(
        lines.next().is_some(),
        "docs/API.md has no `{HEADER}` table"
    );
    let rows: Vec<(String, String, String)> = lines
        .skip(1) // the |---| separator
        .take_while(|line| line.trim_start().starts_with('|'))
        .map(|line| {
            let cells: Vec<String> = line
                .trim()
                .trim_matches('|')
                .split('|')
                .map(|c| c.trim().trim_matches('`').to_owned())
                .collect();
            assert_eq!(cells.len(), 3, "row {line:?}");
            (cells[0].clone(), cells[1].clone(), cells[2].clone())
        })
        .collect();
    let catalogue: Vec<(String, String, String)> = ErrorCode::ALL
        .iter()
        .map(|c| {
            (
                c.as_str().to_owned(),
                c.http_status().to_string(),
                c.message().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows, catalogue,
        "docs/API.md's code table differs from domain::codes"
    );
}
