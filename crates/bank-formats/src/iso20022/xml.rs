//! A small XML emitter that is well-formed by construction: element names are static, every
//! opened element is closed, and all text and attribute values are escaped.

use quick_xml::escape::{escape, partial_escape};

/// Writes an indented XML document into a `String`.
pub(crate) struct Emitter {
    out: String,
    open: Vec<&'static str>,
}

impl Emitter {
    /// A document starting with the XML declaration.
    pub(crate) fn new() -> Self {
        Self {
            out: String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"),
            open: Vec::new(),
        }
    }

    fn indent(&mut self) {
        for _ in 0..self.open.len() {
            self.out.push_str("  ");
        }
    }

    /// Opens `<name attr="value"…>` on its own line.
    pub(crate) fn open_with(&mut self, name: &'static str, attrs: &[(&'static str, &str)]) {
        self.indent();
        self.out.push('<');
        self.out.push_str(name);
        for (key, value) in attrs {
            self.out.push(' ');
            self.out.push_str(key);
            self.out.push_str("=\"");
            self.out.push_str(&escape(*value));
            self.out.push('"');
        }
        self.out.push_str(">\n");
        self.open.push(name);
    }

    /// Opens `<name>` on its own line.
    pub(crate) fn open(&mut self, name: &'static str) {
        self.open_with(name, &[]);
    }

    /// Closes the innermost open element.
    pub(crate) fn close(&mut self) {
        if let Some(name) = self.open.pop() {
            self.indent();
            self.out.push_str("</");
            self.out.push_str(name);
            self.out.push_str(">\n");
        }
    }

    /// Writes `<name attr="value"…>text</name>` on one line.
    pub(crate) fn leaf_with(
        &mut self,
        name: &'static str,
        attrs: &[(&'static str, &str)],
        text: &str,
    ) {
        self.indent();
        self.out.push('<');
        self.out.push_str(name);
        for (key, value) in attrs {
            self.out.push(' ');
            self.out.push_str(key);
            self.out.push_str("=\"");
            self.out.push_str(&escape(*value));
            self.out.push('"');
        }
        self.out.push('>');
        self.out.push_str(&partial_escape(text));
        self.out.push_str("</");
        self.out.push_str(name);
        self.out.push_str(">\n");
    }

    /// Writes `<name>text</name>` on one line.
    pub(crate) fn leaf(&mut self, name: &'static str, text: &str) {
        self.leaf_with(name, &[], text);
    }

    /// The document, with any element still open closed.
    pub(crate) fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::Emitter;

    #[test]
    fn escapes_text_and_attributes_and_closes_everything() {
        let mut xml = Emitter::new();
        xml.open_with("Doc", &[("a", "x\"<&")]);
        xml.leaf("T", "O'Brien <&> \"q\"");
        xml.open("Inner");
        let doc = xml.finish();
        assert_eq!(
            doc,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Doc a=\"x&quot;&lt;&amp;\">\n  \
             <T>O'Brien &lt;&amp;&gt; \"q\"</T>\n  <Inner>\n  </Inner>\n</Doc>\n"
        );
    }
}
