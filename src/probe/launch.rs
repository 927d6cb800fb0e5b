//! The harness's environment, owned by the probe: the relay's URL and the session's key in
//! the conventional variables, the proxy variables pointing at the relay, a fresh `HOME`,
//! and the author's own `--env` and `--home-file`, with placeholders expanded.
//!
//! Placeholders, expanded in harness arguments, `--env` values and home-file templates:
//! `{relay_url}` (`http://127.0.0.1:PORT`, no path, no trailing slash), `{api_key}` (the
//! session's key), `{workspace}` (the session's `cwd`) and `{home}` (the fresh home). Any
//! other brace is left as written, so JSON and TOML templates need no escaping.

use std::ffi::OsString;

/// The values the placeholders stand for.
#[derive(Clone, Debug)]
pub struct Placeholders {
    pub relay_url: String,
    pub api_key: String,
    pub workspace: String,
    pub home: String,
}

impl Placeholders {
    pub fn expand(&self, text: &str) -> String {
        text.replace("{relay_url}", &self.relay_url)
            .replace("{api_key}", &self.api_key)
            .replace("{workspace}", &self.workspace)
            .replace("{home}", &self.home)
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

    /// Expands a template by the placeholder grammar of `oneshot-v1` declarations
    /// (`checkfu_wire_vocab::oneshot::pieces`: `{{` and `}}` are literal braces, and a
    /// placeholder neither these nor `extra` name is an error naming it).
    pub fn expand_strict(&self, text: &str, extra: &[(&str, &str)]) -> Result<String, String> {
        use checkfu_wire_vocab::oneshot::{pieces, Piece};
        let mut out = String::new();
        for piece in pieces(text)? {
            match piece {
                Piece::Text(t) => out.push_str(&t),
                Piece::Placeholder(name) => {
                    let value = extra.iter().find(|(n, _)| *n == name).map(|(_, v)| *v).or_else(|| self.value(name));
                    out.push_str(value.ok_or_else(|| format!("unknown placeholder `{{{name}}}`"))?);
                }
            }
        }
        Ok(out)
    }

    /// An argument, expanded when it is UTF-8 (anything else cannot hold a placeholder).
    pub fn expand_os(&self, arg: &std::ffi::OsStr) -> OsString {
        match arg.to_str() {
            Some(text) => OsString::from(self.expand(text)),
            None => arg.to_owned(),
        }
    }
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
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_expand_and_other_braces_stay() {
        let p = Placeholders { relay_url: "http://127.0.0.1:9".into(), api_key: "k".into(), workspace: "/w".into(), home: "/h".into() };
        assert_eq!(p.expand("base_url = \"{relay_url}/v1\" {\"a\": 1} {other}"), "base_url = \"http://127.0.0.1:9/v1\" {\"a\": 1} {other}");
        assert_eq!(p.expand("{home}/.codex {api_key} {workspace}"), "/h/.codex k /w");
        let env = conventional(&p, None);
        assert!(env.contains(&("OPENAI_BASE_URL".to_owned(), "http://127.0.0.1:9/v1".to_owned())));
        assert!(env.contains(&("https_proxy".to_owned(), "http://127.0.0.1:9".to_owned())));
        assert!(!env.iter().any(|(k, _)| k == "HOME"));
    }
}
