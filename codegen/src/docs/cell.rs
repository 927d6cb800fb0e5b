//! One table cell of the docs page: its text, which parts of it are identifiers (set as
//! code), its Markdown, and an estimate of the width GitHub gives it.
//!
//! A cell's text is the fact; code spans only change how it looks. The Markdown of a cell
//! renders back to exactly its text, so the page's cells can be compared with the reference
//! page's cell for cell.

use serde::{Serialize, Serializer};

/// A run of a cell's text, set as code or not.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Span {
    text: String,
    code: bool,
}

/// A cell: spans of text in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cell {
    spans: Vec<Span>,
}

/// GitHub's Markdown CSS (`github-markdown-css`), in the px it sets at its 16 px base size.
/// The estimates err wide: the docs check (`tests/docs-render/check.mjs`) measures the real
/// rendering, and a part estimated a little too wide only costs one more part.
mod css {
    /// `code` is 85% of 16 px in a monospace font whose every glyph is 0.6 em wide
    /// (SFMono, Menlo, Consolas and Liberation Mono all are, or narrower).
    pub const CODE_CHAR: f64 = 16.0 * 0.85 * 0.6;
    /// `code` has `padding: .2em .4em`, at its own 13.6 px.
    pub const CODE_PADDING: f64 = 16.0 * 0.85 * 0.4 * 2.0;
    /// Body text in the proportional fonts GitHub asks for (Segoe UI, Helvetica, Arial):
    /// an average glyph is about half an em; 0.55 em keeps headers and capitals in bounds.
    pub const TEXT_CHAR: f64 = 16.0 * 0.55;
    /// A header cell is bold.
    pub const BOLD_CHAR: f64 = 16.0 * 0.6;
    /// `td, th { padding: 6px 13px; border: 1px solid }`.
    pub const CELL_PADDING: f64 = 13.0 * 2.0 + 1.0;
}

impl Cell {
    /// A cell of prose.
    pub fn plain(text: impl Into<String>) -> Cell {
        Cell { spans: vec![Span { text: text.into(), code: false }] }
    }

    /// A cell holding one identifier.
    pub fn code(text: impl Into<String>) -> Cell {
        Cell { spans: vec![Span { text: text.into(), code: true }] }
    }

    /// Identifiers joined by a separator, each set as code.
    pub fn codes<'a>(items: impl IntoIterator<Item = &'a str>, separator: &str) -> Cell {
        let mut cell = Cell::default();
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                cell = cell.then(Cell::plain(separator));
            }
            cell = cell.then(Cell::code(item));
        }
        cell
    }

    /// Words of prose in which every word that joins names with `/` or `_` (such as
    /// `session/new` or `_meta`) is set as code.
    pub fn words(text: &str) -> Cell {
        let mut cell = Cell::default();
        for (i, word) in text.split(' ').enumerate() {
            if i > 0 {
                cell = cell.then(Cell::plain(" "));
            }
            let identifier = word.contains(['/', '_']);
            cell = cell.then(if identifier { Cell::code(word) } else { Cell::plain(word) });
        }
        cell
    }

    /// This cell followed by another.
    pub fn then(mut self, next: Cell) -> Cell {
        for span in next.spans {
            match self.spans.last_mut() {
                Some(last) if last.code == span.code && !span.code => last.text.push_str(&span.text),
                _ => self.spans.push(span),
            }
        }
        self
    }

    /// The text the cell renders to.
    pub fn text(&self) -> String {
        self.spans.iter().map(|s| s.text.as_str()).collect()
    }

    /// The cell's GitHub-flavoured Markdown, for a table row.
    pub fn markdown(&self) -> String {
        let mut out = String::new();
        for span in &self.spans {
            // A `|` would end the cell, inside a code span too: GFM splits a row before it
            // reads inline Markdown, and renders `\|` in code as `|`.
            let text = span.text.replace('|', "\\|");
            if span.code {
                out.push_str(&code_span(&text));
            } else {
                out.push_str(&text);
            }
        }
        out
    }

    /// The width the cell takes when nothing in it wraps, in px (estimated).
    pub fn width(&self, header: bool) -> f64 {
        let text_char = if header { css::BOLD_CHAR } else { css::TEXT_CHAR };
        let content: f64 = self
            .spans
            .iter()
            .map(|s| {
                let chars = s.text.chars().count() as f64;
                if s.code {
                    chars * css::CODE_CHAR + css::CODE_PADDING
                } else {
                    chars * text_char
                }
            })
            .sum();
        content + css::CELL_PADDING
    }
}

/// A code span around `text`: fenced by one backtick more than the longest run inside it,
/// padded with a space when it starts or ends with one (CommonMark strips one of each).
fn code_span(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    if text.starts_with('`') || text.ends_with('`') {
        format!("{fence} {text} {fence}")
    } else {
        format!("{fence}{text}{fence}")
    }
}

impl Serialize for Cell {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.markdown())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markdown_renders_back_to_the_text() {
        let cell = Cell::code("observed").then(Cell::plain("*"));
        assert_eq!(cell.markdown(), "`observed`*");
        assert_eq!(cell.text(), "observed*");
        let cell = Cell::words("fresh | same_run_resume conversation");
        assert_eq!(cell.markdown(), "fresh \\| `same_run_resume` conversation");
        assert_eq!(cell.text(), "fresh | same_run_resume conversation");
        assert_eq!(Cell::code("a`b").markdown(), "``a`b``");
        assert_eq!(Cell::code("`a").markdown(), "`` `a ``");
        assert_eq!(Cell::codes(["a", "b"], ", ").markdown(), "`a`, `b`");
    }

    #[test]
    fn code_is_estimated_wider_than_its_characters_alone() {
        let code = Cell::code("multiagent_shared_environment").width(false);
        // 29 characters of 8.16 px, the span's padding and the cell's.
        assert!((code - (29.0 * 8.16 + 10.88 + 27.0)).abs() < 0.01, "{code}");
        assert!(Cell::plain("Entry").width(true) > Cell::plain("Entry").width(false));
    }
}
