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

#[cfg(test)]
mod tests {
    use super::*;

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
