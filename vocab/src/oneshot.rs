//! The `oneshot-v1` launch declaration and its release decoder.
//!
//! A one-shot harness is a CLI that takes one prompt, prints text or the normalized stream
//! JSON (`schemas/oneshot-stream-v1.schema.json`), keeps its state at the turn boundary and
//! exits. [`Declaration`] says how to launch it. Its shape is what serde reads; the JSON
//! Schema an author edits against (`generated/oneshot-v1.schema.json`) is derived from this
//! very type with `schemars`, so the schema cannot say anything of the shape that the
//! decoder does not. The schema is a structural preview: the rules between fields (which
//! placeholder goes with which transport) are here, in [`Declaration::check`], and nowhere
//! else. [`decode`]'s caller parses JSON (this crate has no JSON parser of its own), then
//! calls `check`; both together are the release decoder.
//!
//! Placeholders a declaration may write in `argv`: `{prompt_path}` (the file that holds the
//! prompt), `{resume_flag}` (a whole element: the resume flag on the second run, nothing on
//! the first), and the launch placeholders every lane has (`{relay_url}`, `{api_key}`,
//! `{workspace}`, `{home}`). `{session_id}` belongs to `resume_flag` alone: it is the id the
//! first run's `session` event reported. A placeholder is an identifier between braces and
//! nothing else, so every other brace is text and a JSON, TOML or YAML file is a template as
//! it is; `{{name}}` writes a literal `{name}` ([`pieces`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The protocol literal this declaration is for.
pub const PROTOCOL: &str = "oneshot-v1";

/// How the prompt reaches the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum PromptTransport {
    /// Written to its standard input, which is then closed: the floor every CLI can take.
    Stdin,
    /// Written to a file whose path replaces `{prompt_path}` in `argv`.
    ArgvPath,
}

/// What the CLI prints on standard output.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// The answer as plain text; the exit status says whether the turn ended well.
    Text,
    /// One normalized stream event per line (`checkfu:oneshot-stream-v1`).
    StreamJson,
}

/// How an output schema reaches the CLI.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum OutputSchemaTransport {
    /// Written to a file; the output-schema flag and that file's path follow `argv`.
    ArgvPath,
}

/// How to launch a `oneshot-v1` harness.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, Serialize)]
#[cfg_attr(feature = "schemars", derive(schemars::JsonSchema))]
#[cfg_attr(feature = "schemars", schemars(title = "oneshot-v1 launch declaration"))]
#[serde(deny_unknown_fields)]
pub struct Declaration {
    /// The program to run: a path, or a name looked up on `PATH`.
    pub entrypoint: String,
    /// Arguments after the entrypoint, with placeholders.
    #[serde(default)]
    pub argv: Vec<String>,
    pub prompt_transport: PromptTransport,
    pub output_mode: OutputMode,
    /// The flag that makes the second run continue the first; may hold `{session_id}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_flag: Option<String>,
    /// The flag that names the output schema's file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema_flag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema_transport: Option<OutputSchemaTransport>,
    /// Where the Runner mounts the workspace (an absolute path); the CLI runs there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_directory: Option<String>,
    /// Variables set for the CLI, with placeholders.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// Files written into the CLI's fresh home before the first run: relative path → template.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub home_files: BTreeMap<String, String>,
}

/// A placeholder of `argv` that only this protocol has.
pub const PROMPT_PATH: &str = "prompt_path";
pub const RESUME_FLAG: &str = "resume_flag";
/// The placeholder of `resume_flag`.
pub const SESSION_ID: &str = "session_id";
/// The placeholders every lane's launch has (the probe expands them).
pub const LAUNCH_PLACEHOLDERS: [&str; 4] = ["relay_url", "api_key", "workspace", "home"];

/// One rule a declaration breaks: where (a JSON Pointer into the declaration), which rule,
/// and what is wrong there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    pub pointer: String,
    pub rule: Rule,
    pub message: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.pointer.is_empty() { "(the declaration)" } else { &self.pointer };
        write!(f, "{at}: {} [{}]", self.message, self.rule.name())
    }
}

/// The cross-field rules, each with the name the README and the refusals use.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    EntrypointNamed,
    PlaceholderKnown,
    PromptPathIffArgvPath,
    ResumeFlagPlaceholder,
    ResumeFlagWellFormed,
    SessionIdNeedsStreamJson,
    OutputSchemaPair,
    OutputSchemaFlagWellFormed,
    WorkingDirectoryAbsolute,
    EnvNames,
    HomeFilesRelative,
}

impl Rule {
    pub const ALL: [Rule; 11] = [
        Rule::EntrypointNamed,
        Rule::PlaceholderKnown,
        Rule::PromptPathIffArgvPath,
        Rule::ResumeFlagPlaceholder,
        Rule::ResumeFlagWellFormed,
        Rule::SessionIdNeedsStreamJson,
        Rule::OutputSchemaPair,
        Rule::OutputSchemaFlagWellFormed,
        Rule::WorkingDirectoryAbsolute,
        Rule::EnvNames,
        Rule::HomeFilesRelative,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Rule::EntrypointNamed => "entrypoint_named",
            Rule::PlaceholderKnown => "placeholder_known",
            Rule::PromptPathIffArgvPath => "prompt_path_iff_argv_path",
            Rule::ResumeFlagPlaceholder => "resume_flag_placeholder",
            Rule::ResumeFlagWellFormed => "resume_flag_well_formed",
            Rule::SessionIdNeedsStreamJson => "session_id_needs_stream_json",
            Rule::OutputSchemaPair => "output_schema_pair",
            Rule::OutputSchemaFlagWellFormed => "output_schema_flag_well_formed",
            Rule::WorkingDirectoryAbsolute => "working_directory_absolute",
            Rule::EnvNames => "env_names",
            Rule::HomeFilesRelative => "home_files_relative",
        }
    }
}

/// A piece of a template: literal text, or a placeholder's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Piece<'t> {
    Text(String),
    Placeholder(&'t str),
}

/// Splits a template into text and placeholders. A placeholder is `{name}` where `name` is
/// an identifier (`[A-Za-z_][A-Za-z0-9_]*`), and only that; `{{name}}` writes a literal
/// `{name}`; every other brace is text, so a JSON, TOML or YAML document is a template as it
/// is (`{"a":{"b":1}}` holds no placeholder, its `}}` included, and neither does `{ name }`).
/// Read left to right, the first of those readings that fits at a `{` wins (`{{{home}}}` is
/// `{`, a literal `{home}`, then `}`). Every template parses: whether a name is known is the
/// caller's to say.
pub fn pieces(template: &str) -> Vec<Piece<'_>> {
    let mut out = Vec::new();
    let mut text = String::new();
    // `template[copied..at]` is text not yet in `text`; a brace that is text stays there.
    let mut copied = 0;
    let mut from = 0;
    while let Some(at) = template[from..].find('{').map(|found| from + found) {
        let rest = &template[at + 1..];
        if let Some(name) = rest.strip_prefix('{').and_then(identifier_then_brace).filter(|name| rest[name.len() + 2..].starts_with('}')) {
            text.push_str(&template[copied..at]);
            text.push_str(&template[at + 1..at + name.len() + 3]);
            from = at + name.len() + 4;
            copied = from;
        } else if let Some(name) = identifier_then_brace(rest) {
            text.push_str(&template[copied..at]);
            if !text.is_empty() {
                out.push(Piece::Text(std::mem::take(&mut text)));
            }
            out.push(Piece::Placeholder(name));
            from = at + name.len() + 2;
            copied = from;
        } else {
            from = at + 1;
        }
    }
    text.push_str(&template[copied..]);
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

/// The identifier `rest` starts with, when a `}` follows it at once.
fn identifier_then_brace(rest: &str) -> Option<&str> {
    let end = rest.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).unwrap_or(rest.len());
    let name = &rest[..end];
    let starts_well = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_');
    (starts_well && rest[end..].starts_with('}')).then_some(name)
}

/// The placeholders of a template, in order.
fn placeholders(template: &str) -> Vec<&str> {
    pieces(template).into_iter().filter_map(|p| if let Piece::Placeholder(n) = p { Some(n) } else { None }).collect()
}

fn pointer(parts: &[&str]) -> String {
    crate::schema_syntax::join(parts.iter().copied())
}

impl Declaration {
    /// Every cross-field rule the declaration breaks, in the order of its fields; empty
    /// when it may be launched.
    pub fn check(&self) -> Vec<Refusal> {
        let mut out = Vec::new();
        let mut refuse = |at: String, rule: Rule, message: String| out.push(Refusal { pointer: at, rule, message });

        if self.entrypoint.trim().is_empty() {
            refuse(pointer(&["entrypoint"]), Rule::EntrypointNamed, String::from("the entrypoint is empty"));
        } else if self.entrypoint.contains('{') || self.entrypoint.contains('}') {
            refuse(
                pointer(&["entrypoint"]),
                Rule::EntrypointNamed,
                String::from("the entrypoint holds a brace; placeholders go in `argv`"),
            );
        }

        let mut prompt_paths = Vec::new();
        let mut resume_elements = Vec::new();
        for (i, arg) in self.argv.iter().enumerate() {
            let at = pointer(&["argv", &i.to_string()]);
            let parsed = pieces(arg);
            for piece in &parsed {
                let Piece::Placeholder(name) = piece else { continue };
                match *name {
                    PROMPT_PATH => prompt_paths.push(at.clone()),
                    RESUME_FLAG => {
                        resume_elements.push(at.clone());
                        if parsed.len() != 1 {
                            refuse(
                                at.clone(),
                                Rule::ResumeFlagPlaceholder,
                                format!("`{{resume_flag}}` must be an element of its own (it is dropped on the first run), not part of {arg:?}"),
                            );
                        }
                    }
                    SESSION_ID => refuse(
                        at.clone(),
                        Rule::PlaceholderKnown,
                        String::from("`{session_id}` belongs in `resume_flag`: the first run has no session to name"),
                    ),
                    n if LAUNCH_PLACEHOLDERS.contains(&n) => {}
                    n => refuse(
                        at.clone(),
                        Rule::PlaceholderKnown,
                        format!(
                            "unknown placeholder `{{{n}}}` (known: {{{PROMPT_PATH}}}, {{{RESUME_FLAG}}}, {}; `{{{{{n}}}}}` writes it as text)",
                            LAUNCH_PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                        ),
                    ),
                }
            }
        }

        match (self.prompt_transport, prompt_paths.len()) {
            (PromptTransport::ArgvPath, 1) | (PromptTransport::Stdin, 0) => {}
            (PromptTransport::ArgvPath, 0) => refuse(
                pointer(&["argv"]),
                Rule::PromptPathIffArgvPath,
                String::from("`prompt_transport` is `argv_path`, but no element of `argv` holds `{prompt_path}`"),
            ),
            (PromptTransport::ArgvPath, n) => refuse(
                prompt_paths[1].clone(),
                Rule::PromptPathIffArgvPath,
                format!("`{{prompt_path}}` appears {n} times in `argv`; it must appear exactly once"),
            ),
            (PromptTransport::Stdin, _) => refuse(
                prompt_paths[0].clone(),
                Rule::PromptPathIffArgvPath,
                String::from("`{prompt_path}` appears in `argv`, but `prompt_transport` is `stdin`"),
            ),
        }

        match (&self.resume_flag, resume_elements.len()) {
            (Some(_), 1) | (None, 0) => {}
            (Some(_), 0) => refuse(
                pointer(&["argv"]),
                Rule::ResumeFlagPlaceholder,
                String::from("a `resume_flag` is declared, but no element of `argv` is `{resume_flag}`: the second run would not resume"),
            ),
            (Some(_), n) => refuse(
                resume_elements[1].clone(),
                Rule::ResumeFlagPlaceholder,
                format!("`{{resume_flag}}` appears {n} times in `argv`; at most once"),
            ),
            (None, _) => refuse(
                resume_elements[0].clone(),
                Rule::ResumeFlagPlaceholder,
                String::from("`{resume_flag}` appears in `argv`, but no `resume_flag` is declared"),
            ),
        }

        if let Some(flag) = &self.resume_flag {
            let at = pointer(&["resume_flag"]);
            if flag.trim().is_empty() {
                refuse(at, Rule::ResumeFlagWellFormed, String::from("the resume flag is empty"));
            } else {
                let names = placeholders(flag);
                for name in &names {
                    if *name != SESSION_ID && !LAUNCH_PLACEHOLDERS.contains(name) {
                        refuse(
                            at.clone(),
                            Rule::ResumeFlagWellFormed,
                            format!("`{{{name}}}` cannot appear in `resume_flag` (it may hold `{{session_id}}`)"),
                        );
                    }
                }
                if names.contains(&SESSION_ID) && self.output_mode != OutputMode::StreamJson {
                    refuse(
                        at,
                        Rule::SessionIdNeedsStreamJson,
                        String::from("the resume flag needs `{session_id}`, which only the `session` event of `stream_json` output supplies; `output_mode` is `text`"),
                    );
                }
            }
        }

        match (&self.output_schema_flag, self.output_schema_transport) {
            (Some(flag), Some(_)) => {
                if flag.trim().is_empty() || flag.contains('{') || flag.contains('}') {
                    refuse(
                        pointer(&["output_schema_flag"]),
                        Rule::OutputSchemaFlagWellFormed,
                        format!(
                            "the output-schema flag {flag:?} must be a non-empty flag without placeholders (the schema's path follows it)"
                        ),
                    );
                }
            }
            (None, None) => {}
            (Some(_), None) => refuse(
                pointer(&["output_schema_flag"]),
                Rule::OutputSchemaPair,
                String::from("`output_schema_flag` is declared without `output_schema_transport`"),
            ),
            (None, Some(_)) => refuse(
                pointer(&["output_schema_transport"]),
                Rule::OutputSchemaPair,
                String::from("`output_schema_transport` is declared without `output_schema_flag`"),
            ),
        }

        if let Some(dir) = &self.working_directory {
            if !dir.starts_with('/') {
                refuse(pointer(&["working_directory"]), Rule::WorkingDirectoryAbsolute, format!("{dir:?} is not an absolute path"));
            }
        }

        for (name, value) in &self.env {
            let at = pointer(&["env", name]);
            if name.is_empty() || name.contains('=') || name.contains('\0') {
                refuse(at.clone(), Rule::EnvNames, format!("{name:?} is not a variable name"));
            }
            check_launch_template(value, &at, &mut refuse);
        }
        for (path, template) in &self.home_files {
            let at = pointer(&["home_files", path]);
            if path.is_empty() || path.starts_with('/') || path.split('/').any(|s| s == ".." || s.is_empty()) {
                refuse(at.clone(), Rule::HomeFilesRelative, format!("{path:?} is not a relative path inside the home"));
            }
            check_launch_template(template, &at, &mut refuse);
        }
        out
    }
}

/// An `env` value or a home-file template may hold only the launch placeholders.
fn check_launch_template(template: &str, at: &str, refuse: &mut impl FnMut(String, Rule, String)) {
    for name in placeholders(template) {
        if !LAUNCH_PLACEHOLDERS.contains(&name) {
            refuse(
                at.to_owned(),
                Rule::PlaceholderKnown,
                format!(
                    "`{{{name}}}` cannot appear here (known: {}; `{{{{{name}}}}}` writes it as text)",
                    LAUNCH_PLACEHOLDERS.map(|p| format!("{{{p}}}")).join(", ")
                ),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn floor() -> Declaration {
        Declaration {
            entrypoint: "my-cli".into(),
            argv: vec!["-p".into()],
            prompt_transport: PromptTransport::Stdin,
            output_mode: OutputMode::Text,
            resume_flag: None,
            output_schema_flag: None,
            output_schema_transport: None,
            working_directory: None,
            env: BTreeMap::new(),
            home_files: BTreeMap::new(),
        }
    }

    fn rules(d: &Declaration) -> Vec<&'static str> {
        d.check().iter().map(|r| r.rule.name()).collect()
    }

    #[test]
    fn the_floor_passes() {
        assert!(floor().check().is_empty());
    }

    fn text(s: &str) -> Piece<'_> {
        Piece::Text(s.into())
    }

    #[test]
    fn a_placeholder_is_an_identifier_between_braces() {
        assert_eq!(pieces("--p={prompt_path}"), [text("--p="), Piece::Placeholder("prompt_path")]);
        assert_eq!(
            pieces("{home}/{_x9}{Relay_URL}"),
            [Piece::Placeholder("home"), text("/"), Piece::Placeholder("_x9"), Piece::Placeholder("Relay_URL")]
        );
        assert_eq!(pieces("é{home}ü"), [text("é"), Piece::Placeholder("home"), text("ü")], "non-ASCII text around it");
        assert_eq!(pieces(""), []);
    }

    #[test]
    fn a_doubled_identifier_is_literal_and_every_other_brace_is_text() {
        assert_eq!(pieces("a{{home}}c"), [text("a{home}c")], "a doubled identifier is written with single braces");
        assert_eq!(pieces("{{home}}{home}"), [text("{home}"), Piece::Placeholder("home")]);
        assert_eq!(pieces("{{{home}}}"), [text("{{home}}")], "left to right: a brace, a literal placeholder, a brace");
        assert_eq!(pieces("{{{home}}"), [text("{{home}")]);
        assert_eq!(pieces("{{home}"), [text("{"), Piece::Placeholder("home")], "not doubled on both sides: a brace, then a placeholder");
        // JSON, TOML and YAML pass as they are, `}}` and all.
        for document in [
            "{\"a\":{\"b\":1}}",
            "{\"a\": {\"b\": {}}, \"c\": [{}]}",
            "x = { y = 1 }\n[t]\nz = \"}}{{\"",
            "m: {a: 1, b: {c: 2}}",
            "{ home }",
            "{}",
            "{{}}",
            "{1x}",
            "{a-b}",
            "{é}",
            "}{",
            "{home",
            "home}",
        ] {
            assert_eq!(pieces(document), [text(document)], "{document}");
        }
        // The placeholder inside a JSON object: only it is read.
        assert_eq!(
            pieces("{\"url\": \"{relay_url}/v1\", \"m\": {\"k\": \"{{api_key}}\"}}"),
            [text("{\"url\": \""), Piece::Placeholder("relay_url"), text("/v1\", \"m\": {\"k\": \"{api_key}\"}}")]
        );
    }

    #[test]
    fn an_unknown_identifier_is_refused_by_name() {
        let mut d = floor();
        d.env.insert("CONF".into(), "{\"url\": \"{relay_ur}\"}".into());
        d.home_files.insert("a.json".into(), "{\"a\": {\"b\": 1}}".into());
        let refusals = d.check();
        assert_eq!(refusals.len(), 1, "{refusals:?}");
        assert_eq!((refusals[0].pointer.as_str(), refusals[0].rule), ("/env/CONF", Rule::PlaceholderKnown));
        assert!(
            refusals[0].message.contains("`{relay_ur}`") && refusals[0].message.contains("`{{relay_ur}}` writes it as text"),
            "{}",
            refusals[0].message
        );
    }

    #[test]
    fn every_rule_refuses_with_its_pointer() {
        let mut d = floor();
        d.prompt_transport = PromptTransport::ArgvPath;
        assert_eq!(rules(&d), ["prompt_path_iff_argv_path"]);
        d.argv = vec!["{prompt_path}".into(), "--again={prompt_path}".into()];
        assert_eq!(d.check()[0].pointer, "/argv/1");

        let mut d = floor();
        d.argv.push("{prompt_path}".into());
        assert_eq!(rules(&d), ["prompt_path_iff_argv_path"]);

        let mut d = floor();
        d.resume_flag = Some("--resume".into());
        assert_eq!(rules(&d), ["resume_flag_placeholder"]);
        d.argv.push("x{resume_flag}".into());
        assert_eq!(rules(&d), ["resume_flag_placeholder"]);
        d.argv = vec!["{resume_flag}".into(), "{resume_flag}".into()];
        assert_eq!(rules(&d), ["resume_flag_placeholder"]);
        d.argv = vec!["{resume_flag}".into()];
        assert!(d.check().is_empty());
        d.resume_flag = Some("--resume={session_id}".into());
        assert_eq!(rules(&d), ["session_id_needs_stream_json"]);
        d.output_mode = OutputMode::StreamJson;
        assert!(d.check().is_empty());
        d.resume_flag = Some("--resume={prompt_path}".into());
        assert_eq!(rules(&d), ["resume_flag_well_formed"]);

        let mut d = floor();
        d.argv.push("{resume_flag}".into());
        assert_eq!(rules(&d), ["resume_flag_placeholder"]);

        let mut d = floor();
        d.output_schema_flag = Some("--schema".into());
        assert_eq!(rules(&d), ["output_schema_pair"]);
        d.output_schema_flag = None;
        d.output_schema_transport = Some(OutputSchemaTransport::ArgvPath);
        assert_eq!(rules(&d), ["output_schema_pair"]);
        d.output_schema_flag = Some(String::new());
        assert_eq!(rules(&d), ["output_schema_flag_well_formed"]);

        let mut d = floor();
        d.argv.push("{relay_ur}".into());
        d.argv.push("{session_id}".into());
        assert_eq!(rules(&d), ["placeholder_known", "placeholder_known"]);

        let mut d = floor();
        d.working_directory = Some("workspace".into());
        d.env.insert("A=B".into(), "{prompt_path}".into());
        d.home_files.insert("../x".into(), "{home}".into());
        d.entrypoint = " ".into();
        assert_eq!(rules(&d), ["entrypoint_named", "working_directory_absolute", "env_names", "placeholder_known", "home_files_relative"]);
        assert_eq!(d.check()[2].pointer, "/env/A=B");
    }
}
