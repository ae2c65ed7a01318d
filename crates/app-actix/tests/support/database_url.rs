//! Database URLs for the process-level tests (deploy, smoke) that create a database of their own.

/// `url` with another database (same user and options).
pub fn with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("postgres", url));
    let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
    let query = path
        .split_once('?')
        .map_or(String::new(), |(_, q)| format!("?{q}"));
    format!("{scheme}://{authority}/{database}{query}")
}
