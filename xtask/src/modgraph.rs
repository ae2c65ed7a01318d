//! A small reader of a crate's module graph, for tidy tests: which module imports which at a
//! chosen depth (1: `payout`, `events`; 2: `stores::payouts`, `http::accounts`), and the import
//! cycles among them (strongly connected components, Tarjan).
//!
//! It reads text, not syntax. `crate::…` and `super::…` paths, in `use` trees and inline in
//! code, are resolved against the file's module (`mod.rs`, `lib.rs` and `main.rs` name their
//! directory's module) to the deepest module that has a file, then cut to the depth. Skipped:
//! comment lines, everything from `#[cfg(test)]` + `mod tests` on, test files (`tests.rs`,
//! `*_tests.rs`, the `#[path = "service_tests.rs"] mod tests;` convention) and self-edges.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt, fs, io,
    path::{Path, PathBuf},
};

/// Where one import behind an edge is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Import {
    pub file: PathBuf,
    pub line: usize,
}

/// Modules (`crate` is the root) and, for each edge `(from, to)`, the first import making it.
#[derive(Debug, Default)]
pub struct Graph {
    pub modules: BTreeSet<String>,
    pub edges: BTreeMap<(String, String), Import>,
}

/// A strongly connected component of two or more modules, and the edges inside it.
#[derive(Debug)]
pub struct Cycle {
    pub modules: Vec<String>,
    pub edges: Vec<(String, String, Import)>,
}

/// Reads the `.rs` files under `src` (a crate's `src/` directory) into a graph at `depth`.
pub fn read(src: &Path, depth: usize) -> io::Result<Graph> {
    let mut files = Vec::new();
    collect(src, &mut files)?;
    files.sort();
    let modules: Vec<Vec<String>> = files.iter().map(|file| module_of(src, file)).collect();
    let known: BTreeSet<&[String]> = modules.iter().map(Vec::as_slice).collect();
    let mut graph = Graph::default();
    for (file, module) in files.iter().zip(&modules) {
        let from = name(module, depth);
        graph.modules.insert(from.clone());
        let code = strip(&fs::read_to_string(file)?);
        for (path, offset) in references(&code) {
            let Some(to) = resolve(&path, module, &known).map(|to| name(&to, depth)) else {
                continue;
            };
            if to != from {
                let line = code[..offset].matches('\n').count() + 1;
                let file = file.clone();
                let import = Import { file, line };
                graph.edges.entry((from.clone(), to)).or_insert(import);
            }
        }
    }
    Ok(graph)
}

fn collect(dir: &Path, out: &mut Vec<PathBuf>) -> io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let path = entry?.path();
        let stem = path.file_stem().unwrap_or_default().to_string_lossy();
        if path.is_dir() {
            collect(&path, out)?;
        } else if path.extension().is_some_and(|e| e == "rs")
            && stem != "tests"
            && !stem.ends_with("_tests")
        {
            out.push(path);
        }
    }
    Ok(())
}

fn module_of(src: &Path, file: &Path) -> Vec<String> {
    let rel = file.strip_prefix(src).unwrap_or(file).with_extension("");
    let mut module: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into()).collect();
    let root = module.len() == 1 && matches!(module[0].as_str(), "lib" | "main");
    if root || module.last().is_some_and(|last| last == "mod") {
        module.pop();
    }
    module
}

fn name(module: &[String], depth: usize) -> String {
    match module {
        [] => "crate".to_owned(),
        _ => module[..depth.min(module.len())].join("::"),
    }
}

/// The code with comment lines blanked (so line numbers hold) and test modules cut off.
fn strip(text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut code = String::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim() == "#[cfg(test)]" && is_test_module(&lines[i + 1..]) {
            break;
        }
        if !line.trim_start().starts_with("//") {
            code.push_str(line);
        }
        code.push('\n');
    }
    code
}

/// Whether the item after a `#[cfg(test)]` (and any other attributes) is `mod tests`.
fn is_test_module(rest: &[&str]) -> bool {
    let mut items = rest.iter().map(|line| line.trim());
    let item = items.find(|l| !(l.is_empty() || l.starts_with("#[") || l.starts_with("//")));
    let item = item.unwrap_or_default().trim_start_matches("pub(crate) ");
    let item = item.trim_start_matches("pub ");
    item.strip_prefix("mod tests")
        .is_some_and(|after| after.is_empty() || after.starts_with([' ', ';', '{']))
}

/// Every `crate::…`/`super::…` path in `code` (use-tree groups expanded), with its offset.
fn references(code: &str) -> Vec<(Vec<String>, usize)> {
    let mut out = Vec::new();
    for key in ["crate::", "super::"] {
        for (at, _) in code.match_indices(key) {
            let before = code[..at].chars().next_back();
            if before.is_some_and(|c| c == ':' || c == '_' || c.is_alphanumeric()) {
                continue; // `super::super::x` is read from its first `super`
            }
            let mut parser = Parser {
                s: code.as_bytes(),
                i: at,
            };
            parser.tree(Vec::new(), &mut out);
        }
    }
    out
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    /// Moves past the bytes `f` accepts; returns where it started.
    fn skip(&mut self, f: impl Fn(u8) -> bool) -> usize {
        let start = self.i;
        while self.s.get(self.i).is_some_and(|&b| f(b)) {
            self.i += 1;
        }
        start
    }

    /// Skips whitespace, then consumes `token` if it comes next.
    fn eat(&mut self, token: &str) -> bool {
        self.skip(|b| b.is_ascii_whitespace());
        let rest = self.s.get(self.i..).unwrap_or_default();
        let hit = rest.starts_with(token.as_bytes());
        self.i += if hit { token.len() } else { 0 };
        hit
    }

    fn ident(&mut self) -> Option<String> {
        self.eat("");
        let start = self.skip(|b| b == b'_' || b.is_ascii_alphanumeric());
        let ident = self.s.get(start..self.i).filter(|s| !s.is_empty())?;
        Some(String::from_utf8_lossy(ident).into_owned())
    }

    /// A use tree (`a::b`, `a::{b, c::d}`, `a::*`, `a as b`) below `path`; leaves go to `out`.
    fn tree(&mut self, mut path: Vec<String>, out: &mut Vec<(Vec<String>, usize)>) {
        self.eat("");
        let start = self.i;
        loop {
            if self.eat("{") {
                loop {
                    let before = self.i;
                    if self.eat("}") {
                        return;
                    }
                    self.tree(path.clone(), out);
                    if !self.eat(",") && self.i == before {
                        return;
                    }
                }
            }
            match self.ident() {
                Some(segment) => path.push(segment),
                None => break,
            }
            if !self.eat("::") {
                break;
            }
        }
        if self.eat("as ") {
            self.ident();
        }
        out.push((path, start));
    }
}

/// The deepest module with a file that `path`, written in `module`, points into.
fn resolve(path: &[String], module: &[String], known: &BTreeSet<&[String]>) -> Option<Vec<String>> {
    let mut segments = path.iter().peekable();
    let mut base = match segments.next()?.as_str() {
        "crate" => Vec::new(),
        "super" => module.split_last()?.1.to_vec(),
        _ => return None,
    };
    while segments.next_if(|s| *s == "super").is_some() {
        base.pop()?;
    }
    for segment in segments {
        base.push(segment.clone());
        if !known.contains(&base.as_slice()) {
            base.pop();
            break;
        }
    }
    Some(base)
}

impl Graph {
    /// The strongly connected components of two or more modules, sorted.
    pub fn cycles(&self) -> Vec<Cycle> {
        let mut tarjan = Tarjan {
            graph: self,
            index: BTreeMap::new(),
            stack: Vec::new(),
            components: Vec::new(),
        };
        for module in &self.modules {
            if !tarjan.index.contains_key(module.as_str()) {
                tarjan.visit(module);
            }
        }
        let mut cycles: Vec<Cycle> = (tarjan.components.into_iter())
            .filter(|component| component.len() > 1)
            .map(|component| {
                let mut modules: Vec<String> = component.into_iter().map(String::from).collect();
                modules.sort();
                let edges = (self.edges.iter())
                    .filter(|((from, to), _)| modules.contains(from) && modules.contains(to))
                    .map(|((from, to), at)| (from.clone(), to.clone(), at.clone()))
                    .collect();
                Cycle { modules, edges }
            })
            .collect();
        cycles.sort_by(|a, b| a.modules.cmp(&b.modules));
        cycles
    }
}

struct Tarjan<'g> {
    graph: &'g Graph,
    index: BTreeMap<&'g str, usize>,
    stack: Vec<&'g str>,
    components: Vec<Vec<&'g str>>,
}

impl<'g> Tarjan<'g> {
    /// Numbers `v`, visits what it reaches; returns its low-link.
    fn visit(&mut self, v: &'g str) -> usize {
        let index = self.index.len();
        self.index.insert(v, index);
        self.stack.push(v);
        let mut low = index;
        let graph = self.graph;
        for (_, w) in graph.edges.keys().filter(|(from, _)| from == v) {
            low = low.min(match self.index.get(w.as_str()) {
                None => self.visit(w),
                Some(&w_index) if self.stack.contains(&w.as_str()) => w_index,
                Some(_) => low,
            });
        }
        if low == index {
            let at = self.stack.iter().rposition(|&w| w == v).unwrap_or(0);
            self.components.push(self.stack.split_off(at));
        }
        low
    }
}

impl fmt::Display for Cycle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "import cycle between {}:", self.modules.join(", "))?;
        for (from, to, at) in &self.edges {
            writeln!(f, "  {from} -> {to}  at {}:{}", at.file.display(), at.line)?;
        }
        Ok(())
    }
}
