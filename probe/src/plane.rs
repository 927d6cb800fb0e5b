//! What both lanes stand on, made before a harness starts: the catalog entry a run is bound
//! to, the checks of the author's templates and output schema, and the plane itself (the
//! workspace, the nonce, the fence, the relay, the fresh home with its files, the
//! placeholders and the environment).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::error::{Cause, ProbeError};
use crate::model_plane::Fence;
use crate::options::{fresh_nonce, RunOptions, TOKEN_FILE};
use crate::relay::{self, Relay};
use crate::{launch, session, Progress};
use checkfu_wire::catalog;
use checkfu_wire_sandbox::fence::Listeners;

/// An author's `--output-schema` must pass the safety profile before it reaches a harness,
/// in either lane; the first violation is the usage error.
pub(crate) fn safe_output_schema(schema: &Value) -> Result<(), ProbeError> {
    let verdict = checkfu_wire_safety::lint_value(schema);
    match verdict.violations.first() {
        Some(v) => Err(ProbeError::Usage(format!(
            "--output-schema fails the safety profile: {} at `{}`: {} ({} violation(s) in all; see `checkfu-wire lint-schema`)",
            v.rule,
            v.pointer,
            v.message,
            verdict.violations.len()
        ))),
        None => Ok(()),
    }
}

/// The output schema the probe sends when the author gave none and the harness declares a
/// structured output (ACP), or a one-shot CLI an output-schema flag: a declared path is
/// exercised, never taken on faith. Small and inside the safety profile, and easy to break
/// (two required members of set types, nothing else allowed), so a harness that passes on
/// an answer unvalidated is seen doing it.
pub(crate) fn probe_output_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "properties": {
            "answer": {"type": "string", "minLength": 1},
            "confidence": {"type": "integer", "minimum": 0, "maximum": 100}
        },
        "required": ["answer", "confidence"],
        "additionalProperties": false
    })
}

/// What the catalog says of a bound run before it starts: a blocked entry, or a provider
/// the reachability matrix marks unreachable. An unknown provider is refused as the relay
/// refuses it (the catalog's one lookup, `catalog::reachable`).
pub(crate) fn binding_notes(
    entry: &catalog::Harness,
    provider: Option<&str>,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), ProbeError> {
    if entry.blocked() {
        progress(Progress::Note(&format!(
            "the catalog marks `{}` blocked (supply {}, adoption {}): this run shows what the harness does, not that it can be adopted",
            entry.name, entry.supply, entry.adoption
        )));
    }
    let cell = catalog::reachable(entry.name, provider).map_err(|e| ProbeError::invalid("", e))?;
    if cell == Some(false) {
        progress(Progress::Note(&format!(
            "the reachability matrix marks `{}` unreachable through `{}`: the relay serves only that provider's paths",
            entry.name,
            provider.unwrap_or(catalog::UNLISTED_PROVIDER)
        )));
    }
    Ok(())
}

/// What both lanes stand on, made before the harness starts.
pub(crate) struct Plane {
    /// The workspace; a lane whose session holds it for a while gives it back.
    pub workspace: Option<session::workspace::Workspace>,
    pub workspace_root: PathBuf,
    pub nonce: String,
    pub namespace: Option<checkfu_wire_sandbox::fence::Namespace>,
    pub fence: Fence,
    pub fence_note: Option<String>,
    pub relay: Relay,
    /// The listener the probe's MCP server over HTTP serves on ([`crate::mcp_http`]), bound
    /// inside the fence; `None` without one (the server then binds the probe's 127.0.0.1).
    /// Taken by the one server a run starts.
    pub tool_listener: Option<std::net::TcpListener>,
    pub home: Option<session::home::Home>,
    pub placeholders: launch::Placeholders,
    pub env: Vec<(OsString, OsString)>,
    /// What writing the home files noticed: a config file that does not parse as its
    /// format ([`crate::config_file`]), for the report.
    pub warnings: Vec<String>,
}

/// A lane's own variables and home files (a one-shot declaration's), written before the
/// command line's, which may override them.
#[derive(Clone, Copy, Default)]
pub(crate) struct Declared<'a> {
    pub env: Option<&'a BTreeMap<String, String>>,
    pub home_files: Option<&'a BTreeMap<String, String>>,
}

impl Plane {
    /// The fence a harness joins, when there is a namespace.
    pub fn join(&self) -> Option<checkfu_wire_sandbox::fence::Join> {
        self.namespace.as_ref().map(checkfu_wire_sandbox::fence::Namespace::join)
    }

    /// The fence's parts, made first: the namespace (and the listeners inside it), or the
    /// proxy variables alone, and why.
    fn fence(netns: bool) -> (Option<checkfu_wire_sandbox::fence::Namespace>, Option<Listeners>, Fence, Option<String>) {
        if !netns {
            return (None, None, Fence::ProxyVariables, Some(String::from("not asked for (--no-netns)")));
        }
        match checkfu_wire_sandbox::fence::Namespace::create() {
            Ok((namespace, listeners)) => {
                let fence = match namespace.kind() {
                    checkfu_wire_sandbox::fence::Kind::Network => Fence::NetworkNamespace,
                    checkfu_wire_sandbox::fence::Kind::User => Fence::UserNamespace,
                };
                (Some(namespace), Some(listeners), fence, None)
            }
            Err(why) => (None, None, Fence::ProxyVariables, Some(why.to_string())),
        }
    }

    /// Makes the plane. Every template was checked before ([`launch::check_options`]), so
    /// nothing is started for a bad one.
    pub fn prepare(options: &RunOptions, declared: Declared<'_>) -> Result<Plane, ProbeError> {
        let cannot_start = |what: &str, e: Cause| ProbeError::cannot_start(format!("cannot prepare the session ({what})"), e);
        let workspace = session::workspace::Workspace::create().map_err(|e| cannot_start("workspace", e.into()))?;
        let nonce = fresh_nonce();
        let token = relay::token::mint(relay::token::FILE_TOKEN_PREFIX);
        let token_file = workspace.root().join(TOKEN_FILE);
        std::fs::write(&token_file, relay::token::file_text(&token)).map_err(|e| cannot_start("token file", e.into()))?;
        let (namespace, listeners, fence, fence_note) = Plane::fence(options.netns);
        let (listener, tool_listener) = listeners.map_or((None, None), |l| (Some(l.relay), Some(l.tool_server)));
        // The lease key and the token are drawn apart from the nonce: knowing one tells
        // nothing of the others.
        let key = relay::token::mint(relay::token::KEY_PREFIX);
        let relay = Relay::start(relay::Config {
            provider: options.provider_name().map(str::to_owned),
            script: options.model_script.clone(),
            nonce: nonce.clone(),
            token,
            token_file,
            key,
            stall: options.step_timeout.min(Duration::from_secs(10)),
            listener,
            record_bodies: options.record_bodies,
            context_window: options.context_window,
            budget: options.budget.clone(),
        })
        .map_err(|e| cannot_start("relay", e.into()))?;
        let Rooms { home, placeholders, env, warnings } = Rooms::furnish(options, declared, &workspace, &relay)?;
        let workspace_root = workspace.root().to_path_buf();
        Ok(Plane {
            workspace: Some(workspace),
            workspace_root,
            nonce,
            namespace,
            fence,
            fence_note,
            relay,
            tool_listener,
            home,
            placeholders,
            env,
            warnings,
        })
    }

    /// A fresh workspace and home for another process of the harness (a resumed one), the
    /// first's removed before they are made, so nothing the first could read survives in
    /// them; the placeholders and the environment follow the new paths. The relay, the fence
    /// and the nonce stay. The workspace must be back in the plane.
    pub fn renew(&mut self, options: &RunOptions, declared: Declared<'_>) -> Result<(), ProbeError> {
        let old = self.workspace.take().ok_or(ProbeError::NoWorkspace)?;
        let home = self.home.take().map(session::home::Home::remove).and_then(Result::err);
        let workspace = session::workspace::Workspace::remove(old).err();
        let removed = match (home, workspace) {
            (None, None) => Ok(()),
            (Some(home), None) => Err(LeftBehind::Home(home)),
            (None, Some(workspace)) => Err(LeftBehind::Workspace(workspace)),
            (Some(home), Some(workspace)) => Err(LeftBehind::Both { home, workspace }),
        };
        removed.map_err(|e| ProbeError::cannot_start("the first process's rooms", e))?;
        let workspace =
            session::workspace::Workspace::create().map_err(|e| ProbeError::cannot_start("cannot prepare the session (workspace)", e))?;
        let rooms = Rooms::furnish(options, declared, &workspace, &self.relay)?;
        self.workspace_root = workspace.root().to_path_buf();
        self.workspace = Some(workspace);
        (self.home, self.placeholders, self.env) = (rooms.home, rooms.placeholders, rooms.env);
        self.warnings.extend(rooms.warnings);
        Ok(())
    }

    /// Removes what the plane made (the namespace, the home, the workspace), saying what
    /// could not be removed: a run that leaves a directory behind has not torn down.
    /// `grace` is the teardown's budget, which bounds the wait for the relay's thread.
    pub fn remove(self, grace: &crate::budget::Budget) -> (crate::relay::Record, Result<(), LeftBehind>) {
        let record = self.relay.stop(grace);
        drop(self.namespace);
        let home = self.home.map(session::home::Home::remove).and_then(Result::err);
        let workspace = self.workspace.map(session::workspace::Workspace::remove).and_then(Result::err);
        let removed = match (home, workspace) {
            (None, None) => Ok(()),
            (Some(home), None) => Err(LeftBehind::Home(home)),
            (None, Some(workspace)) => Err(LeftBehind::Workspace(workspace)),
            (Some(home), Some(workspace)) => Err(LeftBehind::Both { home, workspace }),
        };
        (record, removed)
    }
}

/// What the plane could not remove at teardown.
#[derive(Debug, thiserror::Error)]
pub enum LeftBehind {
    #[error("the fresh home could not be removed: {0}")]
    Home(#[source] std::io::Error),
    #[error("the workspace could not be removed: {0}")]
    Workspace(#[source] std::io::Error),
    /// Both (the cause: the home's, removed first).
    #[error("the fresh home could not be removed: {home}; the workspace could not be removed: {workspace}")]
    Both {
        #[source]
        home: std::io::Error,
        workspace: std::io::Error,
    },
}

/// What one process of the harness is given around its workspace: the fresh home with its
/// files, the placeholders, the environment, and what writing the files noticed.
struct Rooms {
    home: Option<session::home::Home>,
    placeholders: launch::Placeholders,
    env: Vec<(OsString, OsString)>,
    warnings: Vec<String>,
}

impl Rooms {
    /// The home (fresh unless `--inherit-home`), its files, the placeholders for `workspace`
    /// and the relay, and the variables: the conventional ones, the lane's, then the command
    /// line's (which win).
    fn furnish(
        options: &RunOptions,
        declared: Declared<'_>,
        workspace: &session::workspace::Workspace,
        relay: &Relay,
    ) -> Result<Rooms, ProbeError> {
        let home = match options.inherit_home {
            true => None,
            false => Some(session::home::Home::create().map_err(|e| ProbeError::cannot_start("cannot prepare the session (home)", e))?),
        };
        let placeholders = launch::Placeholders {
            relay_url: relay.url(),
            api_key: relay.key().to_owned(),
            workspace: workspace.root().to_string_lossy().into_owned(),
            home: home.as_ref().map_or_else(|| std::env::var("HOME").unwrap_or_default(), |h| h.root().to_string_lossy().into_owned()),
        };
        let mut env: Vec<(OsString, OsString)> =
            launch::conventional(&placeholders, home.as_ref()).into_iter().map(|(k, v)| (k.into(), v.into())).collect();
        // The lane's own files and variables, then the command line's (which win).
        let files = declared.home_files.into_iter().flatten().map(|(p, t)| (format!("home_files {p}"), p, t));
        let files = files.chain(options.home_files.iter().map(|(p, t)| (format!("--home-file {p}"), p, t)));
        let mut warnings = Vec::new();
        if let Some(home) = &home {
            for (label, path, template) in files {
                let text = placeholders.expand(template).map_err(|e| ProbeError::invalid(label.clone(), e))?;
                warnings.extend(crate::config_file::check(path, &text).map(|w| w.to_string()));
                home.write(path, &text).map_err(|e| ProbeError::invalid(label.clone(), e))?;
            }
        }
        let vars = declared.env.into_iter().flatten().map(|(k, v)| (format!("env {k}"), k, v));
        for (label, key, value) in vars.chain(options.env.iter().map(|(k, v)| (format!("--env {k}"), k, v))) {
            let value = placeholders.expand(value).map_err(|e| ProbeError::invalid(label.clone(), e))?;
            env.push((OsString::from(key), OsString::from(value)));
        }
        Ok(Rooms { home, placeholders, env, warnings })
    }
}
