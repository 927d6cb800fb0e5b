//! The grammar of gateway request paths. The allow-list the gateway enforces is built from
//! these paths, so a path that is not a plain absolute path, or that two dialects share,
//! would publish a route the platform cannot reason about.
//!
//! A path is `/` followed by one or more segments separated by `/`. A segment is either a
//! literal of RFC 3986 unreserved characters (letters, digits, `-`, `.`, `_`, `~`; not `.`
//! or `..` alone) or a whole-segment `{placeholder}` whose name is listed under
//! `[gateway] placeholders`, at most once per path. Two dialects may not share a path, and
//! paths that differ only in a placeholder's name count as the same path.
//!
//! [`segments`] reads a path that passed these checks into the segments the derived routes
//! (`super::routes`) carry, so that the allow-list, the docs and the relay read one grammar.
//! A dialect's name becomes a variant of the runtime's `Dialect` enum, so it is a
//! snake_case identifier ([`dialect_name_problem`]).

use std::collections::HashMap;

use super::model::Name;
use super::validate::Validator;
use crate::diagnostic::Class;

/// One segment of a gateway path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Segment<'p> {
    /// Matches exactly this text.
    Literal(&'p str),
    /// A `{name}` placeholder: matches exactly one whole non-empty segment.
    Placeholder(&'p str),
}

/// The segments of a path that [`path_problem`] accepts. A segment is a placeholder only when
/// it is braced as a whole, as the grammar defines it; anything else is literal.
pub fn segments(path: &str) -> impl Iterator<Item = Segment<'_>> {
    let rest = path.strip_prefix('/').unwrap_or(path);
    rest.split('/').map(|segment| match segment.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
        Some(name) => Segment::Placeholder(name),
        None => Segment::Literal(segment),
    })
}

/// Why a dialect name cannot name a variant, or `None` when it can: lower-case words of
/// letters and digits joined by single `_`, each word starting with a letter, so that the
/// CamelCase variant (`openai_chat` → `OpenaiChat`) is an identifier and no two names give
/// the same one.
pub(crate) fn dialect_name_problem(name: &str) -> Option<String> {
    let well_formed = name.split('_').all(|word| {
        word.starts_with(|c: char| c.is_ascii_lowercase()) && word.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    });
    (!well_formed).then(|| {
        "a dialect name is lower-case words of letters and digits joined by single `_`, each word starting with a letter".to_string()
    })
}

/// Why `path` is not a gateway path, or `None` when it is one.
pub(crate) fn path_problem(path: &str, placeholders: &[&str]) -> Option<String> {
    let Some(rest) = path.strip_prefix('/') else {
        return Some("a gateway path is absolute: it starts with `/`".into());
    };
    let mut used: Vec<&str> = Vec::new();
    for segment in rest.split('/') {
        if segment.is_empty() {
            return Some("a gateway path has no empty segment (no `//` and no trailing `/`)".into());
        }
        if segment == "." || segment == ".." {
            return Some(format!("`{segment}` is a relative segment"));
        }
        if let Some(inner) = segment.strip_prefix('{') {
            let Some(name) = inner.strip_suffix('}') else {
                return Some(format!("`{segment}` opens a placeholder it does not close as a whole segment"));
            };
            if !placeholders.contains(&name) {
                return Some(format!("`{{{name}}}` is not a known placeholder (known: {})", placeholders.join(", ")));
            }
            if used.contains(&name) {
                return Some(format!("`{{{name}}}` appears twice"));
            }
            used.push(name);
            continue;
        }
        if let Some(bad) = segment.chars().find(|c| !(c.is_ascii_alphanumeric() || "-._~".contains(*c))) {
            return Some(format!("`{bad}` is not allowed in a path segment (letters, digits, `-._~`)"));
        }
    }
    None
}

/// The path with every placeholder made anonymous: two paths with the same shape match the
/// same requests.
fn shape(path: &str) -> String {
    let anonymous = segments(path).map(|s| match s {
        Segment::Literal(text) => text,
        Segment::Placeholder(_) => "{}",
    });
    anonymous.collect::<Vec<_>>().join("/")
}

/// Whether a placeholder name is a plain identifier (lower-case letters, digits, `_`).
fn is_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_lowercase()) && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

impl Validator<'_> {
    pub(super) fn gateway_paths(&mut self) {
        let c = self.index.catalog;
        let placeholders = &c.gateway.placeholders;
        self.unique("gateway placeholder", placeholders.iter());
        for name in placeholders {
            if !is_identifier(name.as_str()) {
                self.error(
                    Class::UnknownOrDuplicate,
                    name,
                    format!("gateway placeholder `{}` is not an identifier", name.as_str()),
                    "use lower-case letters, digits and `_`",
                );
            }
        }
        let known: Vec<&str> = placeholders.iter().map(|p| p.as_str()).collect();
        // Shape → the dialect that has it first, and where its path is written.
        let mut first: HashMap<String, (&Name, &Name)> = HashMap::new();
        for dialect in &c.dialects {
            if let Some(why) = dialect_name_problem(dialect.name.as_str()) {
                let message = format!("dialect `{}` cannot name a `Dialect` variant: {why}", dialect.name.as_str());
                let d = self.error(Class::UnknownOrDuplicate, &dialect.name, message, "not a snake_case identifier");
                d.entry = Some(dialect.name.value.clone());
                d.field = Some("name".into());
            }
            let path = &dialect.gateway_path;
            if let Some(why) = path_problem(path.as_str(), &known) {
                let d = self.error(
                    Class::UnknownOrDuplicate,
                    path,
                    format!("`{}` is not a gateway path: {why}", path.as_str()),
                    "not an absolute path of known segments",
                );
                d.entry = Some(dialect.name.value.clone());
                d.field = Some("gateway_path".into());
                continue;
            }
            match first.get(&shape(path.as_str())) {
                Some((owner, owner_path)) => {
                    let message = format!("dialect `{}` has the gateway path of dialect `{}`", dialect.name.as_str(), owner.as_str());
                    let d = self.error(Class::UnknownOrDuplicate, path, message, "path already taken");
                    d.entry = Some(dialect.name.value.clone());
                    d.field = Some("gateway_path".into());
                    d.related.push((owner_path.span.clone(), format!("already the path of `{}`", owner.as_str())));
                }
                None => {
                    first.insert(shape(path.as_str()), (&dialect.name, path));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{dialect_name_problem, path_problem, segments, Segment};

    const KNOWN: &[&str] = &["model_id"];

    #[test]
    fn the_page_paths_are_gateway_paths() {
        for path in ["/v1/messages", "/v1/chat/completions", "/v1/responses", "/{model_id}"] {
            assert_eq!(path_problem(path, KNOWN), None, "{path}");
        }
    }

    #[test]
    fn other_strings_are_not() {
        for path in [
            "checkfu.capabilities",
            "v1/messages",
            "",
            "/",
            "/v1//messages",
            "/v1/messages/",
            "/v1/../admin",
            "/v1/messages?x=1",
            "/{model}",
            "/{model_id}/{model_id}",
            "/{model_id",
            "/v1/{model_id}x",
            "/v1/mess ages",
        ] {
            assert!(path_problem(path, KNOWN).is_some(), "{path:?} should be refused");
        }
    }

    #[test]
    fn a_placeholder_is_a_whole_segment() {
        let read: Vec<Segment> = segments("/v1/{id}/run").collect();
        assert_eq!(read, [Segment::Literal("v1"), Segment::Placeholder("id"), Segment::Literal("run")]);
        assert_eq!(segments("/{model_id}").collect::<Vec<_>>(), [Segment::Placeholder("model_id")]);
    }

    #[test]
    fn dialect_names_are_snake_case_words() {
        for name in ["anthropic_messages", "openai_chat", "fal_queue", "v2"] {
            assert_eq!(dialect_name_problem(name), None, "{name}");
        }
        // `a_1` and `a1` would both be `A1`; `Chat`, `a__b` and `_a` are no snake_case words.
        for name in ["a_1", "Chat", "a__b", "_a", "a_", "", "open-ai"] {
            assert!(dialect_name_problem(name).is_some(), "{name:?} should be refused");
        }
    }
}
