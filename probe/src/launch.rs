//! The harness's environment, owned by the probe: the relay's URL and the session's key in
//! the conventional variables, the proxy variables pointing at the relay, a fresh `HOME`,
//! and the author's own `--env` and `--home-file`, with placeholders expanded.
//!
//! Placeholders, expanded in harness arguments, `--env` values and home-file templates:
//! `{relay_url}` (`http://127.0.0.1:PORT`, no path, no trailing slash), `{api_key}` (the
//! session's key), `{workspace}` (the session's `cwd`) and `{home}` (the fresh home). A
//! placeholder is an identifier between braces and nothing else, so every other brace is
//! text and a real config file (JSON, TOML, YAML) is a template as it is; `{{name}}` writes
//! a literal `{name}`. An unknown `{name}` is an error naming it: a mistyped `{relay_ur}`
//! passed on as text would surface far from its cause, as a harness that cannot reach its
//! model.

use std::ffi::{OsStr, OsString};
use std::path::Path;

/// The names a template may use, as written between braces.
pub const NAMES: [&str; 4] = ["relay_url", "api_key", "workspace", "home"];

/// The values the placeholders stand for.
#[derive(Clone, Debug)]
pub struct Placeholders {
    pub relay_url: String,
    pub api_key: String,
    pub workspace: String,
    pub home: String,
}

/// A template names a placeholder the probe does not have.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown placeholder `{{{name}}}` (the placeholders are {known}; `{{{{{name}}}}}` writes it as text)", known = known_names())]
pub struct UnknownPlaceholder {
    pub name: String,
}

/// The placeholders, as a template writes them.
fn known_names() -> String {
    NAMES.iter().map(|n| format!("{{{n}}}")).collect::<Vec<_>>().join(", ")
}

/// Expands `text`, looking each name up with `value`; `Err` names the first unknown
/// placeholder. The grammar is the one `oneshot-v1` declarations are decoded by
/// (`checkfu_wire_vocab::oneshot::pieces`), so every lane reads a template alike.
fn render(text: &str, value: &dyn Fn(&str) -> Option<String>) -> Result<String, UnknownPlaceholder> {
    use checkfu_wire_vocab::oneshot::{pieces, Piece};
    let mut out = String::with_capacity(text.len());
    for piece in pieces(text) {
        match piece {
            Piece::Text(t) => out.push_str(&t),
            Piece::Placeholder(name) => match value(name) {
                Some(v) => out.push_str(&v),
                None => return Err(UnknownPlaceholder { name: name.to_owned() }),
            },
        }
    }
    Ok(out)
}

/// Whether every placeholder of `text` is known. Checked before anything starts, when the
/// values are not known yet.
pub fn check(text: &str) -> Result<(), UnknownPlaceholder> {
    render(text, &|name| NAMES.contains(&name).then(String::new)).map(|_| ())
}

impl Placeholders {
    pub fn expand(&self, text: &str) -> Result<String, UnknownPlaceholder> {
        self.expand_with(text, &[])
    }

    /// The value of a launch placeholder.
    pub fn value(&self, name: &str) -> Option<&str> {
        match name {
            "relay_url" => Some(&self.relay_url),
            "api_key" => Some(&self.api_key),
            "workspace" => Some(&self.workspace),
            "home" => Some(&self.home),
            _ => None,
        }
    }

    /// [`Placeholders::expand`], with the one-shot lane's own placeholders (`extra`:
    /// `{prompt_path}`, `{session_id}`) known too.
    pub fn expand_with(&self, text: &str, extra: &[(&str, &str)]) -> Result<String, UnknownPlaceholder> {
        render(text, &|name| {
            extra.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned()).or_else(|| self.value(name).map(str::to_owned))
        })
    }

    /// An argument, expanded when it is UTF-8 (anything else cannot hold a placeholder).
    pub fn expand_os(&self, arg: &std::ffi::OsStr) -> Result<OsString, UnknownPlaceholder> {
        match arg.to_str() {
            Some(text) => self.expand(text).map(OsString::from),
            None => Ok(arg.to_owned()),
        }
    }
}

/// Every template (the harness's arguments, `--env` values, `--home-file` templates) is
/// checked before anything starts: an unknown placeholder is a usage error naming the flag
/// and the placeholder, and so is a home file with no fresh home to go into.
pub fn check_options(options: &crate::options::RunOptions, command: &[OsString]) -> Result<(), crate::error::ProbeError> {
    use crate::error::ProbeError;
    if options.inherit_home && !options.home_files.is_empty() {
        return Err(ProbeError::Usage(String::from("--home-file writes into the fresh home, which --inherit-home turns off")));
    }
    for (i, arg) in command.iter().enumerate() {
        if let Some(text) = arg.to_str() {
            check(text).map_err(|e| ProbeError::invalid(format!("the harness command's argument {i} `{text}`"), e))?;
        }
    }
    for (key, value) in &options.env {
        check(value).map_err(|e| ProbeError::invalid(format!("--env {key}"), e))?;
    }
    for (path, template) in &options.home_files {
        check(template).map_err(|e| ProbeError::invalid(format!("--home-file {path}"), e))?;
    }
    Ok(())
}

/// The program a harness is started as. It starts in the session's workspace, so a relative
/// path with a `/` is resolved against `base` first (the caller's directory, or a recipe's),
/// and means what it said where it was typed; a bare name is looked up on `PATH`. Arguments
/// are passed as they are: a relative path among them is read from the workspace.
pub fn program(program: &OsStr, base: &Path) -> OsString {
    let path = Path::new(program);
    if path.is_absolute() || !program.as_encoded_bytes().contains(&b'/') {
        return program.to_owned();
    }
    base.join(path).into_os_string()
}

/// Hosts a client must reach directly rather than through the proxy: the relay itself.
pub const NO_PROXY: &str = "127.0.0.1,localhost,::1";

/// The variables the probe sets, before the author's `--env` (which may override any).
pub fn conventional(p: &Placeholders, fresh_home: Option<&crate::session::home::Home>) -> Vec<(String, String)> {
    let mut env = vec![
        ("ANTHROPIC_BASE_URL".to_owned(), p.relay_url.clone()),
        ("ANTHROPIC_API_KEY".to_owned(), p.api_key.clone()),
        // OpenAI's SDKs take a base URL that includes the API version.
        ("OPENAI_BASE_URL".to_owned(), format!("{}/v1", p.relay_url)),
        ("OPENAI_API_KEY".to_owned(), p.api_key.clone()),
    ];
    // Both spellings: curl and Python read the lower-case ones, Node tooling the upper.
    for name in ["HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"] {
        env.push((name.to_owned(), p.relay_url.clone()));
        env.push((name.to_ascii_lowercase(), p.relay_url.clone()));
    }
    env.push(("NO_PROXY".to_owned(), NO_PROXY.to_owned()));
    env.push(("no_proxy".to_owned(), NO_PROXY.to_owned()));
    if let Some(home) = fresh_home {
        env.push(("HOME".to_owned(), home.root().to_string_lossy().into_owned()));
        for (name, path) in home.xdg() {
            env.push((name.to_owned(), path.to_string_lossy().into_owned()));
        }
        // A harness that writes under the system's temporary directory (a log, a socket)
        // would leave it behind; inside the home it goes with the session.
        env.push(("TMPDIR".to_owned(), home.tmp().to_string_lossy().into_owned()));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_and_other_braces_are_literal() {
        let p = Placeholders { relay_url: "http://127.0.0.1:9".into(), api_key: "k".into(), workspace: "/w".into(), home: "/h".into() };
        assert_eq!(
            p.expand("base_url = \"{relay_url}/v1\" {\"a\": {\"b\": 1}}").as_deref(),
            Ok("base_url = \"http://127.0.0.1:9/v1\" {\"a\": {\"b\": 1}}")
        );
        assert_eq!(p.expand("{home}/.codex {api_key} {workspace}").as_deref(), Ok("/h/.codex k /w"));
        assert_eq!(p.expand("{{relay_url}}").as_deref(), Ok("{relay_url}"), "a doubled identifier is not a placeholder");
        assert_eq!(p.expand("").as_deref(), Ok(""));
        let env = conventional(&p, None);
        assert!(env.contains(&("OPENAI_BASE_URL".to_owned(), "http://127.0.0.1:9/v1".to_owned())));
        assert!(env.contains(&("https_proxy".to_owned(), "http://127.0.0.1:9".to_owned())));
        assert!(!env.iter().any(|(k, _)| k == "HOME"));
    }

    #[test]
    fn an_unknown_placeholder_is_an_error_that_names_it() {
        let unknown = check("x {relay_ur} y").expect_err("unknown").to_string();
        assert!(
            unknown.contains("`{relay_ur}`") && unknown.contains("{relay_url}") && unknown.contains("`{{relay_ur}}` writes it as text"),
            "{unknown}"
        );
        assert!(check("{\"a\": {\"b\": \"{Home}\"}}").expect_err("unknown").name == "Home", "names are case-sensitive");
        for good in
            ["{relay_url}", "{{}}", "plain", "{home}/{{x}}", "é{api_key}é", "{\"a\": 1}", "a}", "{home", "{}", "{ home }", "${{HOME}}"]
        {
            assert_eq!(check(good), Ok(()), "{good}");
        }
    }
}
