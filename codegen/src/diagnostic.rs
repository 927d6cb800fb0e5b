//! Diagnostics that point into the inputs, rendered the way cargo reports a bad
//! `Cargo.toml`: a title with a code, `--> file:line:column`, the offending span underlined,
//! and notes naming the entry, the axis, the declared value and the highest realizable one.
//!
//! Generation collects every diagnostic of a run before failing, so a `Diagnostics` is a
//! list plus the sources the spans refer to.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use annotate_snippets::{Level, Renderer, Snippet};

/// The failure classes of the catalog contract (CONTRACT.md section 2), plus the input
/// errors that come before them (unreadable or ill-formed files).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    /// A file could not be read, or is not well-formed TOML/JSON of the expected shape.
    Input,
    /// 1: a value outside its axis vocabulary; an unknown or duplicated name.
    UnknownOrDuplicate,
    /// 2: a ceiling above the envelope on an axis no declaration may raise.
    ExceedsEnvelope,
    /// 3: an admissible axis above the envelope without its declaration, or not by
    /// exactly the one admitted step.
    UndeclaredPromotion,
    /// 4: a control axis promoted without the signed evidence of its passing case.
    PromotionWithoutEvidence,
    /// 5: an envelope carries an axis only declaration admission may raise.
    EnvelopeCarriesDeclaredAxis,
    /// 6: a connected entry above its lane envelope.
    ExceedsLaneEnvelope,
    /// 7: a declared dialect that no priced provider accepts.
    UnservedDialect,
    /// 8: a slot without payload schema and decoder, or a gated emission naming an axis,
    /// value or member that does not exist.
    DeadVocabulary,
    /// Generated outputs could not be produced (template or schema compilation failure).
    Generation,
    /// The content behind a revision literal changed while the literal stayed the same.
    Reinterpretation,
    /// An acknowledgement in `catalog/acknowledged.toml` matches no warning generation gives.
    StaleAcknowledgement,
}

impl Class {
    pub fn code(self) -> &'static str {
        match self {
            Class::Input => "E0000",
            Class::UnknownOrDuplicate => "E0001",
            Class::ExceedsEnvelope => "E0002",
            Class::UndeclaredPromotion => "E0003",
            Class::PromotionWithoutEvidence => "E0004",
            Class::EnvelopeCarriesDeclaredAxis => "E0005",
            Class::ExceedsLaneEnvelope => "E0006",
            Class::UnservedDialect => "E0007",
            Class::DeadVocabulary => "E0008",
            Class::Generation => "E0009",
            Class::Reinterpretation => "E0010",
            Class::StaleAcknowledgement => "E0011",
        }
    }
}

/// Which source a span belongs to: an index into `Sources`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileId(pub usize);

/// The text of every input a diagnostic may point into.
#[derive(Clone, Debug, Default)]
pub struct Sources {
    files: Vec<(PathBuf, String)>,
}

impl Sources {
    pub fn add(&mut self, display_path: PathBuf, text: String) -> FileId {
        self.files.push((display_path, text));
        FileId(self.files.len() - 1)
    }
    pub fn path(&self, id: FileId) -> &Path {
        &self.files[id.0].0
    }
    pub fn text(&self, id: FileId) -> &str {
        &self.files[id.0].1
    }
    /// One-based line and column (in characters) of a byte offset.
    pub fn line_column(&self, id: FileId, offset: usize) -> (usize, usize) {
        let text = self.text(id);
        let offset = floor_char_boundary(text, offset.min(text.len()));
        let before = &text[..offset];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let column = before[line_start..].chars().count() + 1;
        (line, column)
    }
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

/// A span cut to the text and to character boundaries, so rendering cannot panic on a span
/// from another version of the file.
fn clamp(text: &str, span: &Range<usize>) -> Range<usize> {
    let start = floor_char_boundary(text, span.start.min(text.len()));
    let end = floor_char_boundary(text, span.end.clamp(start, text.len()));
    start..end
}

/// One problem, pointing at where it is.
#[derive(Clone, Debug)]
pub struct Diagnostic {
    pub class: Class,
    pub message: String,
    /// Where it is; `None` for problems with no location (a missing directory).
    pub location: Option<(FileId, Range<usize>)>,
    /// Text under the underline.
    pub label: String,
    /// The catalog entry the problem belongs to, when there is one.
    pub entry: Option<String>,
    /// The catalog key of the offending value, when naming it helps (`model_lane`).
    pub field: Option<String>,
    pub axis: Option<String>,
    pub declared: Option<String>,
    pub highest_realizable: Option<String>,
    pub notes: Vec<String>,
    /// Further places in the same file that take part in the problem (the other half of
    /// a pair), each with its label.
    pub related: Vec<(Range<usize>, String)>,
}

impl Diagnostic {
    pub fn new(class: Class, message: impl Into<String>) -> Self {
        Diagnostic {
            class,
            message: message.into(),
            location: None,
            label: String::new(),
            entry: None,
            field: None,
            axis: None,
            declared: None,
            highest_realizable: None,
            notes: Vec::new(),
            related: Vec::new(),
        }
    }
    pub fn at(mut self, file: FileId, span: Range<usize>, label: impl Into<String>) -> Self {
        self.location = Some((file, span));
        self.label = label.into();
        self
    }
    pub fn entry(mut self, entry: impl Into<String>) -> Self {
        self.entry = Some(entry.into());
        self
    }
    pub fn field(mut self, field: impl Into<String>) -> Self {
        self.field = Some(field.into());
        self
    }
    /// Adds a secondary span in the diagnostic's own file.
    pub fn related(mut self, span: Range<usize>, label: impl Into<String>) -> Self {
        self.related.push((span, label.into()));
        self
    }
    pub fn axis(mut self, axis: impl Into<String>) -> Self {
        self.axis = Some(axis.into());
        self
    }
    pub fn declared(mut self, value: impl Into<String>) -> Self {
        self.declared = Some(value.into());
        self
    }
    pub fn highest_realizable(mut self, value: impl Into<String>) -> Self {
        self.highest_realizable = Some(value.into());
        self
    }
    pub fn note(mut self, note: impl Into<String>) -> Self {
        self.notes.push(note.into());
        self
    }

    /// `file:line:column`, when the diagnostic has a location.
    pub fn position(&self, sources: &Sources) -> Option<String> {
        let (file, span) = self.location.as_ref()?;
        let (line, column) = sources.line_column(*file, span.start);
        Some(format!("{}:{line}:{column}", sources.path(*file).display()))
    }

    fn facts(&self) -> Option<String> {
        let mut parts = Vec::new();
        let fields = [
            ("entry", &self.entry),
            ("field", &self.field),
            ("axis", &self.axis),
            ("declared", &self.declared),
            ("highest realizable", &self.highest_realizable),
        ];
        for (name, value) in fields {
            if let Some(value) = value {
                parts.push(format!("{name}: {value}"));
            }
        }
        (!parts.is_empty()).then(|| parts.join(", "))
    }

    pub fn render(&self, sources: &Sources) -> String {
        let facts = self.facts();
        let mut message = Level::Error.title(&self.message).id(self.class.code());
        let location = self.location.as_ref().map(|(file, span)| {
            let text = sources.text(*file);
            (sources.path(*file).display().to_string(), text, clamp(text, span))
        });
        if let Some((origin, text, span)) = &location {
            let mut snippet =
                Snippet::source(text).origin(origin).fold(true).annotation(Level::Error.span(span.clone()).label(&self.label));
            for (related, label) in &self.related {
                snippet = snippet.annotation(Level::Info.span(clamp(text, related)).label(label));
            }
            message = message.snippet(snippet);
        }
        if let Some(facts) = &facts {
            message = message.footer(Level::Note.title(facts));
        }
        for note in &self.notes {
            message = message.footer(Level::Help.title(note));
        }
        let rendered = Renderer::plain().render(message).to_string();
        rendered
    }
}

/// Every diagnostic of one run, with the sources they point into.
#[derive(Clone, Debug, Default)]
pub struct Diagnostics {
    pub sources: Sources,
    pub items: Vec<Diagnostic>,
}

impl Diagnostics {
    pub fn push(&mut self, diagnostic: Diagnostic) {
        self.items.push(diagnostic);
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    /// All diagnostics, rendered, followed by a count.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for item in &self.items {
            out.push_str(&item.render(&self.sources));
            out.push_str("\n\n");
        }
        let n = self.items.len();
        out.push_str(&format!("error: generation failed with {n} error{}; nothing was written", if n == 1 { "" } else { "s" }));
        out
    }
}

impl fmt::Display for Diagnostics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for Diagnostics {}
