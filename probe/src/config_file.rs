//! Whether a home file that names a config format parses once its placeholders are filled.
//!
//! A harness that cannot read its config file rarely says so: droid, given invalid JSON,
//! says only "No custom models configured". So a home file whose name ends in `.json` or
//! `.toml` and which does not parse as that format gets a warning in the report, naming the
//! file and the parser's line and column. A `{{` at its start is named as the old doubled-brace
//! form: placeholders were once written `{{name}}`-escaped, and a template from then is now
//! written with its braces doubled.
//!
//! `.yaml` and `.yml` files are not checked: the workspace has no YAML parser, and one is
//! not added for a warning.

use std::fmt;

/// A config format a home file's name can say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

impl Format {
    /// The format a file's name says (`.json`, `.toml`), if any.
    pub fn of(path: &str) -> Option<Format> {
        let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
        match extension.as_str() {
            "json" => Some(Format::Json),
            "toml" => Some(Format::Toml),
            _ => None,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Toml => "TOML",
        }
    }
}

/// A home file that does not parse as the format its name says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigWarning {
    /// The file's path relative to the home, as given.
    pub path: String,
    pub format: Format,
    /// Where the parser stopped, from 1.
    pub line: usize,
    pub column: usize,
    /// The parser's own words.
    pub message: String,
    /// The file starts with `{{`, the old doubled-brace form.
    pub doubled_brace: bool,
}

impl fmt::Display for ConfigWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the home file {} does not parse as {} at line {}, column {}: {}",
            self.path,
            self.format.name(),
            self.line,
            self.column,
            self.message
        )?;
        if self.doubled_brace {
            f.write_str(
                "; it starts with `{{`, the old doubled-brace form: a placeholder is now `{name}` and every other brace is \
                 written as itself",
            )?;
        }
        Ok(())
    }
}

/// Checks `text`, a home file's content with its placeholders filled, against the format
/// `path` names; `None` when it parses or names no format checked.
pub fn check(path: &str, text: &str) -> Option<ConfigWarning> {
    let format = Format::of(path)?;
    let (line, column, message) = match format {
        Format::Json => {
            let error = serde_json::from_str::<serde::de::IgnoredAny>(text).err()?;
            (error.line(), error.column(), error.to_string())
        }
        Format::Toml => {
            let error = toml::from_str::<serde::de::IgnoredAny>(text).err()?;
            let (line, column) = error.span().map_or((1, 1), |span| line_and_column(text, span.start));
            (line, column, error.message().trim_end().to_owned())
        }
    };
    Some(ConfigWarning { path: path.to_owned(), format, line, column, message, doubled_brace: text.trim_start().starts_with("{{") })
}

/// The line and column (from 1, in characters) of byte `offset` of `text`.
fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = text.get(..offset).unwrap_or(text);
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_parses_or_names_no_format_has_no_warning() {
        assert_eq!(check("cfg/x.json", r#"{"a": {"b": [1, 2]}}"#), None);
        assert_eq!(check(".codex/config.toml", "model_provider = \"relay\"\n[model_providers.relay]\nbase_url = \"x\"\n"), None);
        assert_eq!(check("notes.txt", "{{ not json"), None);
        assert_eq!(check("cfg/x.yaml", "{{ not: [yaml"), None, "YAML is not checked");
    }

    #[test]
    fn json_names_the_file_line_and_column() {
        let warning = check("cfg/settings.JSON", "{\n  \"a\": 1,\n  \"b\" 2\n}").expect("warning");
        assert_eq!((warning.format, warning.line, warning.column, warning.doubled_brace), (Format::Json, 3, 7, false));
        let text = warning.to_string();
        assert!(text.starts_with("the home file cfg/settings.JSON does not parse as JSON at line 3, column 7: "), "{text}");
        assert!(!text.contains("doubled-brace"), "{text}");
    }

    #[test]
    fn toml_names_the_file_line_and_column() {
        let warning = check("a/config.toml", "x = 1\ny = \"é\" z\n").expect("warning");
        assert_eq!((warning.format, warning.line, warning.column), (Format::Toml, 2, 9));
        assert!(!warning.message.is_empty());
    }

    #[test]
    fn a_leading_doubled_brace_is_named_as_the_old_form() {
        let warning =
            check(".factory/config.json", "  {{\"custom_models\": [{{\"base_url\": \"http://127.0.0.1:9\"}}]}}\n").expect("warning");
        assert!(warning.doubled_brace);
        assert!(warning.to_string().contains("the old doubled-brace form"), "{warning}");
        assert!(check("x.toml", "{{a = 1}}").expect("warning").doubled_brace);
    }

    #[test]
    fn positions_count_characters_from_one() {
        assert_eq!(line_and_column("ab\ncé\nd", 0), (1, 1));
        assert_eq!(line_and_column("ab\ncé\nd", 3), (2, 1));
        assert_eq!(line_and_column("ab\ncé\nd", 7), (3, 1));
        assert_eq!(line_and_column("ab\ncé\nd", 6), (2, 3));
    }
}
