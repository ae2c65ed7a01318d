//! The console's static files, embedded in the binary and served from its own origin under
//! names that carry a hash of their content, so a browser may keep them for a year and a new
//! release's files are new URLs.
//!
//! htmx is the only script: the npm package `htmx.org` at [`HTMX_VERSION`], its
//! `dist/htmx.min.js` unchanged, checked against [`HTMX_SHA256`] by a test (a changed file does
//! not build a passing test suite; docs/CONSOLE.md says how to update it).

use std::sync::LazyLock;

use sha2::{Digest, Sha256};

/// The htmx release embedded (npm `htmx.org`).
pub const HTMX_VERSION: &str = "2.0.11";

/// SHA-256 of `htmx.org@2.0.11/dist/htmx.min.js` as published on npm.
pub const HTMX_SHA256: &str = "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717";

/// One embedded file.
#[derive(Debug)]
pub struct Asset {
    /// Its name before the content hash (`console.css`).
    pub name: &'static str,
    /// Its `content-type`.
    pub content_type: &'static str,
    /// Its bytes.
    pub bytes: &'static [u8],
}

/// The stylesheet of the console and of the receiver's confirmation page.
pub static STYLESHEET: Asset = Asset {
    name: "console.css",
    content_type: "text/css; charset=utf-8",
    bytes: include_bytes!("../assets/console.css"),
};

/// htmx, the console's one script (progressive enhancement only: every page that reads works
/// without it).
pub static HTMX: Asset = Asset {
    name: "htmx.min.js",
    content_type: "text/javascript; charset=utf-8",
    bytes: include_bytes!("../assets/htmx-2.0.11.min.js"),
};

/// Every asset served.
pub static ALL: [&Asset; 2] = [&STYLESHEET, &HTMX];

impl Asset {
    /// Hex SHA-256 of the bytes.
    pub fn sha256(&self) -> String {
        hex::encode(Sha256::digest(self.bytes))
    }

    /// The file name served: `<stem>.<first 16 hex digits of the hash>.<extension>`.
    pub fn served_name(&self) -> String {
        let hash = self.sha256();
        let short = hash.get(..16).unwrap_or(&hash);
        match self.name.split_once('.') {
            Some((stem, extension)) => format!("{stem}.{short}.{extension}"),
            None => format!("{}.{short}", self.name),
        }
    }
}

static SERVED: LazyLock<Vec<(String, &'static Asset)>> = LazyLock::new(|| {
    ALL.iter()
        .map(|asset| (asset.served_name(), *asset))
        .collect()
});

/// The asset served under `file` (a name from [`path`]), if any.
pub fn find(file: &str) -> Option<&'static Asset> {
    SERVED
        .iter()
        .find(|(name, _)| name == file)
        .map(|(_, asset)| *asset)
}

/// The absolute path of an asset on the console's origin, `/assets/<served name>`.
pub fn path(asset: &Asset) -> String {
    format!("/assets/{}", asset.served_name())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn htmx_is_the_pinned_release_unchanged() {
        assert_eq!(HTMX.sha256(), HTMX_SHA256);
        assert!(HTMX.bytes.starts_with(b"var htmx=function(){"));
    }

    #[test]
    fn served_names_carry_the_content_hash_and_resolve() {
        for asset in ALL {
            let name = asset.served_name();
            assert!(name.contains(&asset.sha256()[..16]), "{name}");
            assert!(std::ptr::eq(find(&name).unwrap(), asset));
            assert_eq!(path(asset), format!("/assets/{name}"));
        }
        assert!(find("console.css").is_none());
        assert!(find("../Cargo.toml").is_none());
    }

    #[test]
    fn the_stylesheet_requests_nothing_from_elsewhere() {
        let css = std::str::from_utf8(STYLESHEET.bytes).unwrap();
        assert!(!css.contains("url("), "no fonts or images");
        assert!(!css.contains("@import"));
    }
}
