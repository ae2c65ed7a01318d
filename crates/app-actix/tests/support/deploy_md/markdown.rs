//! Reading DEPLOY.md: its fenced blocks, the steps they make (a `sh` block and the output the
//! guide shows for it), the text rewrites that move the guide's host onto the test's scratch
//! root, and the matching of what a block printed against what the guide shows.

/// A fenced block of a Markdown document.
#[derive(Debug, Clone, PartialEq)]
pub struct Block {
    /// The line of its opening fence (1-based).
    pub line: usize,
    /// The info string after the fence (`sh`, `text`, …).
    pub info: String,
    /// Its lines, without the fences and the fence's indentation, each ending in a newline.
    pub text: String,
    /// The `##` heading it is under (`""` before the first one).
    pub section: String,
    /// Whether only blank lines separate it from the block before it.
    pub follows_block: bool,
}

/// Every fenced block of `markdown`, in order. A fence may be indented (a block inside a list
/// item): its indentation is taken off its lines.
pub fn blocks(markdown: &str) -> Vec<Block> {
    let mut found = Vec::new();
    let mut section = String::new();
    let mut only_blank_since_block = false;
    let mut lines = markdown.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let trimmed = line.trim_start();
        let Some(info) = trimmed.strip_prefix("```") else {
            if let Some(heading) = line.strip_prefix("## ") {
                section = heading.trim().to_owned();
            }
            if !line.trim().is_empty() {
                only_blank_since_block = false;
            }
            continue;
        };
        let indent = line.len() - trimmed.len();
        let mut text = String::new();
        for (_, inner) in lines.by_ref() {
            if inner.trim() == "```" {
                break;
            }
            text.push_str(inner.get(indent..).unwrap_or(inner.trim_start()));
            text.push('\n');
        }
        found.push(Block {
            line: index + 1,
            info: info.trim().to_owned(),
            text,
            section: section.clone(),
            follows_block: only_blank_since_block,
        });
        only_blank_since_block = true;
    }
    found
}

/// A `sh` block to run and the output the guide shows for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The line of the block's opening fence in the document.
    pub line: usize,
    /// The `##` section it is in.
    pub section: String,
    /// The commands, as written.
    pub script: String,
    /// The `text` block right after it (only blank lines between): what it prints. `None`: it
    /// prints nothing.
    pub expected: Option<String>,
}

/// The `sh` blocks of `blocks`, each with its expected output. A `text` block is a block's
/// expected output only when nothing but blank lines separates it from the `sh` block; any
/// other `text` block is an illustration (an error message, say), not an output.
pub fn steps(blocks: &[Block]) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut previous_was_sh = false;
    for block in blocks {
        match block.info.as_str() {
            "sh" => steps.push(Step {
                line: block.line,
                section: block.section.clone(),
                script: block.text.clone(),
                expected: None,
            }),
            "text" if previous_was_sh && block.follows_block => {
                if let Some(step) = steps.last_mut() {
                    step.expected = Some(block.text.clone());
                }
            }
            _ => {}
        }
        previous_was_sh = block.info == "sh";
    }
    steps
}

/// Whether `line` is `pattern`, each `…` of which stands for any text.
pub fn line_matches(pattern: &str, line: &str) -> bool {
    let mut pieces = pattern.split('…');
    let first = pieces.next().unwrap_or_default();
    let Some(mut rest) = line.strip_prefix(first) else {
        return false;
    };
    let pieces: Vec<&str> = pieces.collect();
    let Some((last, middle)) = pieces.split_last() else {
        return rest.is_empty();
    };
    for piece in middle {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Whether `output` is `expected`, line for line (trailing blank lines aside).
pub fn output_matches(expected: &str, output: &str) -> bool {
    let expected: Vec<&str> = expected.trim_end().lines().collect();
    let output: Vec<&str> = output.trim_end().lines().collect();
    expected.len() == output.len()
        && expected
            .iter()
            .zip(&output)
            .all(|(pattern, line)| line_matches(pattern, line))
}

/// The host directories the guide writes to or reads from, moved under the scratch root.
pub const HOST_PREFIXES: [&str; 4] = ["/etc/", "/var/lib/", "/usr/local/bin/", "/path/to/"];

/// `text` with every absolute path under one of [`HOST_PREFIXES`] moved under `root` (an
/// absolute directory without a trailing slash). A prefix counts only where a path starts: at
/// the start of the text or after white space, a quote, `(`, `=`, `:`, a redirection and the
/// like (so `https://host/etc/x`, `a/etc/x` and `$PWD/etc/x` stay as they are).
pub fn rewrite_paths(text: &str, root: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'outer: while !rest.is_empty() {
        let at_boundary = out
            .chars()
            .next_back()
            .is_none_or(|c| c.is_whitespace() || "'\"(=<>|;:,`[{".contains(c));
        if at_boundary {
            for prefix in HOST_PREFIXES {
                if rest.starts_with(prefix) {
                    out.push_str(root);
                    out.push_str(prefix);
                    rest = &rest[prefix.len()..];
                    continue 'outer;
                }
            }
        }
        let Some(c) = rest.chars().next() else { break };
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out
}

/// `text` with each whole number `from` (not part of a longer number) replaced by `to`.
pub fn replace_number(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(from) {
        let before = rest[..at].chars().next_back().or(out.chars().next_back());
        let after = rest[at + from.len()..].chars().next();
        out.push_str(&rest[..at]);
        if before.is_some_and(|c| c.is_ascii_digit()) || after.is_some_and(|c| c.is_ascii_digit()) {
            out.push_str(from);
        } else {
            out.push_str(to);
        }
        rest = &rest[at + from.len()..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_and_steps_pair_each_sh_block_with_the_text_right_after_it() {
        let markdown = "# T\n\n## A\n\n```sh\necho a\n```\n\n```text\na…z\n```\n\n\
                        Prose.\n\n```text\nan illustration\n```\n\n- item:\n\n  ```sh\n  true\n  ```\n\n\
                        ## B\n\n```sh\necho b\n```\nProse.\n```text\nnot its output\n```\n";
        let found = blocks(markdown);
        assert_eq!(
            found
                .iter()
                .map(|b| (b.line, b.info.as_str(), b.section.as_str()))
                .collect::<Vec<_>>(),
            [
                (5, "sh", "A"),
                (9, "text", "A"),
                (15, "text", "A"),
                (21, "sh", "A"),
                (27, "sh", "B"),
                (31, "text", "B"),
            ]
        );
        assert_eq!(found[3].text, "true\n");
        assert_eq!(
            steps(&found),
            [
                Step {
                    line: 5,
                    section: "A".into(),
                    script: "echo a\n".into(),
                    expected: Some("a…z\n".into()),
                },
                Step {
                    line: 21,
                    section: "A".into(),
                    script: "true\n".into(),
                    expected: None,
                },
                Step {
                    line: 27,
                    section: "B".into(),
                    script: "echo b\n".into(),
                    expected: None,
                },
            ]
        );
    }

    #[test]
    fn the_matcher_takes_an_ellipsis_for_any_text_within_a_line() {
        assert!(line_matches("a…z", "abcz"));
        assert!(line_matches("a…z", "az"));
        assert!(line_matches("{\"x\":[…]}", "{\"x\":[1,2]}"));
        assert!(line_matches("…", ""));
        assert!(!line_matches("a…z", "abc"));
        assert!(!line_matches("a", "ab"));
        assert!(line_matches("a…b…a", "aba"));
        assert!(!line_matches("a…b…a", "ab"));
        assert!(output_matches("x\n…\n", "x\nanything\n\n"));
        assert!(!output_matches("x\n", "x\ny\n"));
        assert!(!output_matches("", "y\n"));
        assert!(!output_matches("x\n…\n", "x\na\nb\n"));
    }

    #[test]
    fn host_paths_move_under_the_root_where_a_path_starts_only() {
        let root = "/tmp/r";
        for (text, rewritten) in [
            (
                "sudo install -d /etc/payoutd",
                "sudo install -d /tmp/r/etc/payoutd",
            ),
            (
                "'/etc/a' \"/var/lib/b\" (/usr/local/bin/c)",
                "'/tmp/r/etc/a' \"/tmp/r/var/lib/b\" (/tmp/r/usr/local/bin/c)",
            ),
            (
                "PAYOUT_CONFIG=/etc/payoutd/x",
                "PAYOUT_CONFIG=/tmp/r/etc/payoutd/x",
            ),
            (
                "LoadCredential=NAME:/etc/payoutd/credentials/NAME",
                "LoadCredential=NAME:/tmp/r/etc/payoutd/credentials/NAME",
            ),
            ("cp /path/to/key k", "cp /tmp/r/path/to/key k"),
            ("/etc/x at the start", "/tmp/r/etc/x at the start"),
            ("cat > /etc/x", "cat > /tmp/r/etc/x"),
            // Not where a path starts, or not a host directory.
            ("https://example.com/etc/x", "https://example.com/etc/x"),
            ("docs/etc/x target/var/lib/y", "docs/etc/x target/var/lib/y"),
            ("$PWD/etc/x ~/etc", "$PWD/etc/x ~/etc"),
            (
                "/dev/null /usr/sbin/nologin /etcetera",
                "/dev/null /usr/sbin/nologin /etcetera",
            ),
        ] {
            assert_eq!(rewrite_paths(text, root), rewritten, "{text}");
        }
    }

    #[test]
    fn numbers_are_replaced_whole() {
        assert_eq!(
            replace_number(
                "127.0.0.1:8080 18080 80801 port = 8080\n8080",
                "8080",
                "41234"
            ),
            "127.0.0.1:41234 18080 80801 port = 41234\n41234"
        );
    }
}
