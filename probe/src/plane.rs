//! What both lanes of the probe stand on, made before a harness starts: the catalog entry
//! a run is bound to, the checks of the author's templates and output schema, and the plane
//! itself (the workspace, the nonce, the fence, the relay, the fresh home with its files,
//! the placeholders and the environment).

use std::ffi::OsString;
use std::time::Duration;

use serde_json::Value;

use super::model_plane::Fence;
use super::{fresh_nonce, launch, ProbeOptions, Progress, UsageError, TOKEN_FILE};
use crate::relay::{self, Relay};
use crate::session;
use checkfu_wire::catalog;

/// An author's `--output-schema` must pass the safety profile before it reaches a harness,
/// in either lane; the first violation is the usage error.
pub(crate) fn safe_output_schema(schema: &Value) -> Result<(), UsageError> {
    let verdict = checkfu_wire_safety::lint_value(schema);
    match verdict.violations.first() {
        Some(v) => Err(UsageError::Options(format!(
            "--output-schema fails the safety profile: {} at `{}`: {} ({} violation(s) in all; see `checkfu-wire lint-schema`)",
            v.rule,
            v.pointer,
            v.message,
            verdict.violations.len()
        ))),
        None => Ok(()),
    }
}

/// The catalog entry a run is bound to (`--harness`), if any.
pub(crate) fn catalog_entry(options: &ProbeOptions) -> Result<Option<&'static catalog::Harness>, UsageError> {
    match &options.harness {
        Some(name) => Ok(Some(catalog::HARNESSES.iter().find(|h| h.name == name).ok_or_else(|| {
            let known: Vec<&str> = catalog::HARNESSES.iter().map(|h| h.name).collect();
            UsageError::Options(format!("no harness `{name}` in the catalog (it has: {})", known.join(", ")))
        })?)),
        None => Ok(None),
    }
}

/// What both lanes stand on, made before the harness starts: the workspace, the nonce, the
/// fence, the relay, the fresh home with its files, the placeholders and the environment.
pub(crate) struct Plane {
    pub workspace: session::workspace::Workspace,
    pub nonce: String,
    pub namespace: Option<session::fence::Namespace>,
    pub fence: Fence,
    pub fence_note: Option<String>,
    pub relay: Relay,
    pub home: Option<session::home::Home>,
    pub placeholders: launch::Placeholders,
    pub env: Vec<(OsString, OsString)>,
    /// The home files that do not parse as the format their name says
    /// ([`crate::config_file`]), for the report.
    pub warnings: Vec<String>,
}

/// Makes the [`Plane`], after checking every template of the options (so a bad one starts
/// nothing), and says what the catalog entry's binding means before the run.
pub(crate) fn prepare(
    options: &ProbeOptions,
    entry: Option<&catalog::Harness>,
    progress: &mut dyn FnMut(Progress),
) -> Result<Plane, UsageError> {
    launch::check_options(options)?;
    if let Some(entry) = entry.filter(|e| e.blocked()) {
        progress(Progress::Note(&format!(
            "the catalog marks `{}` blocked (supply {}, adoption {}): this run shows what the harness does, not that it can be adopted",
            entry.name, entry.supply, entry.adoption
        )));
    }
    if let Some(entry) = entry {
        // The matrix's cell from the generated tables; an unknown provider is refused as the
        // relay refuses it (the catalog's one lookup, `catalog::reachable`).
        let cell = catalog::reachable(entry.name, options.provider.as_deref()).map_err(|e| UsageError::Options(e.to_string()))?;
        if cell == Some(false) {
            progress(Progress::Note(&format!(
                "the reachability matrix marks `{}` unreachable through `{}`: the relay serves only that provider's paths",
                entry.name,
                options.provider.as_deref().unwrap_or(catalog::UNLISTED_PROVIDER)
            )));
        }
    }
    let cannot_start = |what: &str, e: String| UsageError::CannotStart(format!("cannot prepare the session ({what}): {e}"));
    let workspace = session::workspace::Workspace::create().map_err(|e| cannot_start("workspace", e.to_string()))?;
    let nonce = fresh_nonce();
    let token = relay::token::mint(relay::token::FILE_TOKEN_PREFIX);
    let token_file = workspace.root().join(TOKEN_FILE);
    std::fs::write(&token_file, relay::token::file_text(&token)).map_err(|e| cannot_start("token file", e.to_string()))?;
    let (namespace, listener, fence, fence_note) = if options.netns {
        match session::fence::Namespace::create() {
            Ok((namespace, listener)) => {
                let fence = match namespace.kind() {
                    session::fence::Kind::Network => Fence::NetworkNamespace,
                    session::fence::Kind::User => Fence::UserNamespace,
                };
                (Some(namespace), Some(listener), fence, None)
            }
            Err(why) => (None, None, Fence::ProxyVariables, Some(why)),
        }
    } else {
        (None, None, Fence::ProxyVariables, Some(String::from("not asked for (--no-netns)")))
    };
    // The lease key and the token are drawn apart from the nonce: knowing one tells nothing
    // of the others.
    let key = relay::token::mint(relay::token::KEY_PREFIX);
    let relay = Relay::start(relay::Config {
        provider: options.provider.clone(),
        script: options.model_script.clone(),
        nonce: nonce.clone(),
        token,
        token_file,
        key,
        stall: options.step_timeout.min(Duration::from_secs(10)),
        listener,
        record_bodies: options.record_bodies,
    })
    .map_err(|e| cannot_start("relay", e))?;
    let home =
        if options.inherit_home { None } else { Some(session::home::Home::create().map_err(|e| cannot_start("home", e.to_string()))?) };
    let placeholders = launch::Placeholders {
        relay_url: relay.url(),
        api_key: relay.key().to_owned(),
        workspace: workspace.root().to_string_lossy().into_owned(),
        home: home.as_ref().map_or_else(|| std::env::var("HOME").unwrap_or_default(), |h| h.root().to_string_lossy().into_owned()),
    };
    // The templates were checked before anything started, so expanding cannot fail here;
    // it is still a usage error rather than a panic if it does.
    let expand = |what: &str, text: &str| placeholders.expand(text).map_err(|e| UsageError::Options(format!("{what}: {e}")));
    let files = options.home_files.iter().map(|(path, template)| (path, template));
    let warnings = home.as_ref().map(|h| write_home_files(h, files, "--home-file", &placeholders)).transpose()?.unwrap_or_default();
    let mut env: Vec<(OsString, OsString)> =
        launch::conventional(&placeholders, home.as_ref()).into_iter().map(|(k, v)| (k.into(), v.into())).collect();
    for (key, value) in &options.env {
        env.push((OsString::from(key), OsString::from(expand(&format!("--env {key}"), value)?)));
    }
    Ok(Plane { workspace, nonce, namespace, fence, fence_note, relay, home, placeholders, env, warnings })
}

/// Writes `files` (relative path, template) into `home`, their placeholders expanded; `flag`
/// names where they came from in an error. Returns the warning of each file that does not
/// parse as the format its name says ([`crate::config_file`]): it is written as given all
/// the same, since the harness may read it otherwise.
pub(crate) fn write_home_files<'a>(
    home: &session::home::Home,
    files: impl IntoIterator<Item = (&'a String, &'a String)>,
    flag: &str,
    placeholders: &launch::Placeholders,
) -> Result<Vec<String>, UsageError> {
    let mut warnings = Vec::new();
    for (path, template) in files {
        let text = placeholders.expand(template).map_err(|e| UsageError::Options(format!("{flag} {path}: {e}")))?;
        warnings.extend(crate::config_file::check(path, &text).map(|w| w.to_string()));
        home.write(path, &text).map_err(|e| UsageError::Options(format!("{flag} {path}: {e}")))?;
    }
    Ok(warnings)
}
