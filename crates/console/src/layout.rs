//! The page shell every console page shares: document head (stylesheet, htmx and its
//! configuration), skip link, header with the navigation, main content and footer.

use maud::{DOCTYPE, Markup, html};

use crate::assets;

/// htmx's settings, read from a `<meta>` element (no inline script): no `eval`, no scripts
/// from swapped content, requests to this origin only, and no inline indicator style (the
/// content security policy allows no inline styles).
const HTMX_CONFIG: &str = r#"{"allowEval":false,"allowScriptTags":false,"selfRequestsOnly":true,"includeIndicatorStyles":false,"historyCacheSize":0}"#;

/// What the header shows besides the product's name: nothing before sign-in, the navigation
/// and the operator after.
pub enum Header<'a> {
    /// Signed out: the name only.
    Anonymous,
    /// Signed in.
    SignedIn(&'a crate::nav::Chrome),
}

/// A whole page: `title` (text) names it in the tab and as its `<h1>`, `body` follows.
pub fn page(title: &str, header: Header<'_>, body: Markup) -> Markup {
    let narrow = matches!(header, Header::Anonymous);
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="referrer" content="no-referrer";
                meta name="htmx-config" content=(HTMX_CONFIG);
                title { (title) " · payoutd console" }
                link rel="stylesheet" href=(assets::path(&assets::STYLESHEET));
                script src=(assets::path(&assets::HTMX)) defer {}
            }
            body hx-boost="true" {
                a.skip-link href="#main" { "Skip to content" }
                header.site-header {
                    a.brand href="/" { "payoutd console" }
                    @if let Header::SignedIn(chrome) = header {
                        (crate::nav::navigation(chrome))
                    }
                }
                main #main .narrow[narrow] tabindex="-1" {
                    h1 { (title) }
                    (body)
                }
                footer.site-footer {
                    "payoutd " (env!("CARGO_PKG_VERSION"))
                }
            }
        }
    }
}

/// A table in a scrollable, keyboard-reachable region named by its caption: `id` names the
/// caption (unique on the page), `columns` are the header cells, `rows` the body's rows.
pub fn table(id: &str, caption: Markup, columns: &[&str], rows: Markup) -> Markup {
    html! {
        div.table-wrap role="region" aria-labelledby=(id) tabindex="0" {
            table {
                caption id=(id) { (caption) }
                thead { tr { @for column in columns { th scope="col" { (column) } } } }
                tbody { (rows) }
            }
        }
    }
}

/// Where a keyset-paged list continues: the id of a full page's last row (`rows` holds `page`
/// rows), or `None` when the page was not full, so nothing is older.
pub fn continues_after<T, K: std::fmt::Display>(
    rows: &[T],
    page: u32,
    key: impl Fn(&T) -> K,
) -> Option<String> {
    if rows.len() < page as usize {
        return None;
    }
    rows.last().map(|row| key(row).to_string())
}

/// The link to a keyset-paged list's next (older) page: `path` with the list's `filters` (empty
/// ones left out) and `before`, the last row shown; nothing when there is none.
pub fn older_page(
    path: &str,
    label: &str,
    filters: &[(&str, &str)],
    before: Option<&str>,
) -> Markup {
    let Some(before) = before else {
        return html! {};
    };
    let mut pairs: Vec<(&str, &str)> = filters
        .iter()
        .filter(|(_, v)| !v.is_empty())
        .copied()
        .collect();
    pairs.push(("before", before));
    let query = serde_urlencoded::to_string(&pairs).unwrap_or_default();
    html! { nav.pager aria-label="Pages" { a href=(format!("{path}?{query}")) { (label) } } }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_page_continues_after_its_last_row_and_a_short_one_does_not() {
        assert_eq!(continues_after(&[1, 2, 3], 3, |n| *n), Some("3".to_owned()));
        assert_eq!(continues_after(&[1, 2], 3, |n| *n), None);
        assert_eq!(continues_after::<u8, u8>(&[], 0, |n| *n), None);
    }

    #[test]
    fn the_older_page_link_keeps_the_filters_that_are_set() {
        let link = older_page(
            "/files",
            "Older files",
            &[("state", "uploaded"), ("kind", "")],
            Some("a b"),
        )
        .into_string();
        assert!(
            link.contains("href=\"/files?state=uploaded&amp;before=a+b\""),
            "{link}"
        );
        assert!(link.contains("Older files"), "{link}");
        assert_eq!(
            older_page("/files", "Older files", &[], None).into_string(),
            ""
        );
    }

    #[test]
    fn text_is_escaped_and_the_shell_is_complete() {
        let html = page(
            "<script>x</script>",
            Header::Anonymous,
            html! { p { "a & b" } },
        )
        .into_string();
        assert!(html.starts_with("<!DOCTYPE html><html lang=\"en\">"));
        assert!(html.contains("&lt;script&gt;x&lt;/script&gt;"));
        assert!(!html.contains("<script>x"));
        assert!(html.contains("a &amp; b"));
        assert!(html.contains(&assets::path(&assets::STYLESHEET)));
        assert!(html.contains("Skip to content"));
    }

    #[test]
    fn a_table_is_a_region_named_by_its_caption() {
        let html = table(
            "keys-caption",
            html! { "Keys" },
            &["Key", "Issued"],
            html! { tr { td { "pk_1" } td { "now" } } },
        )
        .into_string();
        assert!(html.starts_with(
            "<div class=\"table-wrap\" role=\"region\" aria-labelledby=\"keys-caption\" tabindex=\"0\">"
        ));
        assert!(html.contains("<caption id=\"keys-caption\">Keys</caption>"));
        assert!(html.contains("<th scope=\"col\">Issued</th>"));
    }
}
