//! The XML the ISO 20022 documents share: a small emitter that is well-formed by construction
//! ([`Emitter`]: element names are static, every opened element is closed, and all text and
//! attribute values are escaped), and a reader of a whole document into a tree of its root's
//! namespace ([`read_document`], over quick-xml's namespace resolution).

use quick_xml::escape::{escape, partial_escape, resolve_predefined_entity};
use quick_xml::events::{BytesStart, Event};
use quick_xml::name::ResolveResult;
use quick_xml::reader::NsReader;

/// Elements nested deeper than this are refused (the deepest path ISO 20022 documents use
/// here is 6 levels; real documents stay far below 30).
pub const MAX_DEPTH: usize = 64;

/// Why a document could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum XmlError {
    /// The bytes are not UTF-8 (the only encoding read).
    #[error("the document is not UTF-8")]
    NotUtf8,
    /// Not well-formed XML.
    #[error("malformed XML at byte {position}: {message}")]
    Malformed {
        /// The byte where reading stopped.
        position: u64,
        /// What is wrong.
        message: String,
    },
    /// Elements nested deeper than [`MAX_DEPTH`].
    #[error("elements nested deeper than {max}")]
    TooDeep {
        /// [`MAX_DEPTH`].
        max: usize,
    },
}

/// Writes an indented XML document into a `String`.
#[derive(Debug)]
pub struct Emitter {
    out: String,
    open: Vec<&'static str>,
}

impl Default for Emitter {
    fn default() -> Self {
        Self::new()
    }
}

impl Emitter {
    /// A document starting with the XML declaration.
    pub fn new() -> Self {
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
    pub fn open_with(&mut self, name: &'static str, attrs: &[(&'static str, &str)]) {
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
    pub fn open(&mut self, name: &'static str) {
        self.open_with(name, &[]);
    }

    /// Closes the innermost open element.
    pub fn close(&mut self) {
        if let Some(name) = self.open.pop() {
            self.indent();
            self.out.push_str("</");
            self.out.push_str(name);
            self.out.push_str(">\n");
        }
    }

    /// Writes `<name attr="value"…>text</name>` on one line.
    pub fn leaf_with(&mut self, name: &'static str, attrs: &[(&'static str, &str)], text: &str) {
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
    pub fn leaf(&mut self, name: &'static str, text: &str) {
        self.leaf_with(name, &[], text);
    }

    /// The document, with any element still open closed.
    pub fn finish(mut self) -> String {
        while !self.open.is_empty() {
            self.close();
        }
        self.out
    }
}

/// An element of the document's namespace: its local name, its text and its children.
#[derive(Debug, Default)]
pub struct Node {
    /// The local name.
    pub name: String,
    /// The text directly inside it, entities resolved.
    pub text: String,
    /// The child elements of the same namespace, in document order.
    pub children: Vec<Node>,
}

impl Node {
    /// The first child named `name`.
    pub fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }

    /// The children named `name`, in document order.
    pub fn children<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a Node> + Clone {
        self.children.iter().filter(move |c| c.name == name)
    }
}

/// Reads a whole UTF-8 document (a byte order mark is skipped) into a tree of the root's
/// namespace, checking that it is well-formed. Elements of any other namespace (and their
/// content) are left out. Returns the root's namespace and the root.
///
/// # Errors
/// Not UTF-8, not well-formed, or nested deeper than [`MAX_DEPTH`].
pub fn read_document(bytes: &[u8]) -> Result<(String, Node), XmlError> {
    let text = std::str::from_utf8(bytes).map_err(|_| XmlError::NotUtf8)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = NsReader::from_str(text);
    let mut tree = TreeBuilder::default();
    loop {
        let (namespace, event) = match reader.read_resolved_event() {
            Ok((resolved, event)) => (namespace_of(&resolved), event),
            Err(err) => {
                return Err(XmlError::Malformed {
                    position: reader.error_position(),
                    message: err.to_string(),
                });
            }
        };
        let step = match event {
            Event::Start(start) => {
                check_attributes(&start).and_then(|()| tree.open(namespace, local_name(&start)))
            }
            Event::Empty(start) => check_attributes(&start)
                .and_then(|()| tree.open(namespace, local_name(&start)))
                .and_then(|()| tree.close()),
            Event::End(_) => tree.close(),
            Event::Text(t) => tree.text(&t.xml10_content()),
            Event::CData(c) => tree.text(&c.xml10_content()),
            Event::GeneralRef(r) => match r.resolve_char_ref() {
                Ok(Some(c)) => tree.text(c.encode_utf8(&mut [0; 4])),
                Ok(None) => match resolve_predefined_entity(&r) {
                    Some(value) => tree.text(value),
                    None => Err(format!("unknown entity &{};", &*r).into()),
                },
                Err(err) => Err(err.to_string().into()),
            },
            Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_) => Ok(()),
            Event::Eof => break,
        };
        step.map_err(|message| match message {
            TreeError::TooDeep => XmlError::TooDeep { max: MAX_DEPTH },
            TreeError::Malformed(message) => XmlError::Malformed {
                position: reader.buffer_position(),
                message,
            },
        })?;
    }
    tree.finish().map_err(|message| XmlError::Malformed {
        position: reader.buffer_position(),
        message: message.into(),
    })
}

/// The namespace an element is bound to (empty when none), or why it cannot be resolved.
fn namespace_of(resolved: &ResolveResult<'_>) -> Result<String, TreeError> {
    match resolved {
        ResolveResult::Bound(namespace) => Ok(namespace.into_inner().to_owned()),
        ResolveResult::Unbound => Ok(String::new()),
        ResolveResult::Unknown(prefix) => Err(TreeError::Malformed(format!(
            "unknown namespace prefix {prefix:?}"
        ))),
    }
}

fn local_name(start: &BytesStart<'_>) -> String {
    start.local_name().into_inner().to_owned()
}

/// Attributes are read only to check that they are well-formed.
fn check_attributes(start: &BytesStart<'_>) -> Result<(), TreeError> {
    for attribute in start.attributes() {
        attribute.map_err(|err| TreeError::Malformed(err.to_string()))?;
    }
    Ok(())
}

/// Why the tree could not be built.
enum TreeError {
    TooDeep,
    Malformed(String),
}

impl From<String> for TreeError {
    fn from(message: String) -> Self {
        Self::Malformed(message)
    }
}

/// Builds the tree from the reader's events.
#[derive(Default)]
struct TreeBuilder {
    /// The open elements of the root's namespace, outermost first.
    stack: Vec<Node>,
    /// The root's namespace, once the root is open.
    namespace: Option<String>,
    /// The root, once closed.
    root: Option<Node>,
    /// How deep inside an element of another namespace (0: not inside one).
    foreign_depth: usize,
}

impl TreeBuilder {
    fn open(
        &mut self,
        namespace: Result<String, TreeError>,
        name: String,
    ) -> Result<(), TreeError> {
        if self.foreign_depth > 0 {
            self.foreign_depth += 1;
            return Ok(());
        }
        if self.root.is_some() {
            return Err(TreeError::Malformed(
                "content after the root element".into(),
            ));
        }
        let namespace = namespace?;
        match &self.namespace {
            None => self.namespace = Some(namespace),
            Some(root_namespace) if *root_namespace != namespace => {
                self.foreign_depth = 1;
                return Ok(());
            }
            Some(_) if self.stack.len() >= MAX_DEPTH => return Err(TreeError::TooDeep),
            Some(_) => {}
        }
        self.stack.push(Node {
            name,
            ..Node::default()
        });
        Ok(())
    }

    fn close(&mut self) -> Result<(), TreeError> {
        if self.foreign_depth > 0 {
            self.foreign_depth -= 1;
            return Ok(());
        }
        let node = self
            .stack
            .pop()
            .ok_or_else(|| TreeError::Malformed("unexpected end tag".into()))?;
        match self.stack.last_mut() {
            Some(parent) => parent.children.push(node),
            None => self.root = Some(node),
        }
        Ok(())
    }

    fn text(&mut self, text: &str) -> Result<(), TreeError> {
        if self.foreign_depth > 0 {
            return Ok(());
        }
        match self.stack.last_mut() {
            Some(node) => node.text.push_str(text),
            None if text.trim().is_empty() => {}
            None => {
                return Err(TreeError::Malformed("text outside the root element".into()));
            }
        }
        Ok(())
    }

    fn finish(self) -> Result<(String, Node), &'static str> {
        if !self.stack.is_empty() {
            return Err("the document ends inside an element");
        }
        match (self.namespace, self.root) {
            (Some(namespace), Some(root)) => Ok((namespace, root)),
            _ => Err("no root element"),
        }
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
