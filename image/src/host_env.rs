//! The environment of every host-side program the image lane starts: bubblewrap, `unshare`,
//! podman (and the conmon and OCI runtime it starts), the docker client, `tar`, skopeo,
//! buildah and the registry.
//!
//! An image is untrusted, and its `Env` is the harness's, never theirs: a `LD_PRELOAD` or
//! `LD_DEBUG_OUTPUT` in it would run or write on the host, a `CONTAINER_HOST` would switch
//! podman to a remote service. So these programs start from an empty environment plus an
//! allow-list of the caller's variables that the tools read for their own configuration,
//! plus what the lane sets for them itself. The image's variables reach the harness inside
//! the sandbox only: bubblewrap's `--clearenv`/`--setenv` (over a descriptor, not the
//! command line), podman's and docker's `--env-file`.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;
use std::process::Command;

/// What the tools may take from the caller: where to find programs, whose they are, where
/// their runtime and temporary files go, which daemon or storage to use, credentials for a
/// published image, and how to reach a real registry (proxies, certificates).
pub const FROM_CALLER: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "XDG_RUNTIME_DIR",
    "TMPDIR",
    "DOCKER_HOST",
    "DOCKER_CONFIG",
    "DOCKER_CONTEXT",
    "DOCKER_CERT_PATH",
    "DOCKER_TLS_VERIFY",
    "CONTAINERS_CONF",
    "CONTAINERS_STORAGE_CONF",
    "CONTAINERS_REGISTRIES_CONF",
    "REGISTRY_AUTH_FILE",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
];

/// The caller's allow-listed variables. `PATH` keeps only absolute entries: an empty or
/// relative entry names the current directory, which must never decide what runs.
pub fn from_caller() -> Vec<(OsString, OsString)> {
    FROM_CALLER
        .iter()
        .filter_map(|name| std::env::var_os(name).map(|value| (OsString::from(name), value)))
        .map(|(name, value)| if name == "PATH" { (name, absolute_path_entries(&value)) } else { (name, value) })
        .collect()
}

fn absolute_path_entries(path: &OsStr) -> OsString {
    let kept: Vec<&[u8]> = path.as_bytes().split(|b| *b == b':').filter(|entry| entry.first() == Some(&b'/')).collect();
    OsString::from(OsStr::from_bytes(&kept.join(&b':')))
}

/// A command for a host-side program: the caller's allow-listed variables only, started
/// from `/` (never a directory the harness can write).
pub fn command(program: impl AsRef<OsStr>) -> Command {
    let mut command = tool(program);
    command.current_dir("/");
    command
}

/// [`command`] in the caller's own directory, for a tool given the caller's relative paths
/// before any harness ran (a builder's context, a layout directory).
pub fn tool(program: impl AsRef<OsStr>) -> Command {
    let mut command = Command::new(program);
    command.env_clear().envs(from_caller());
    command
}

/// Whether `name=value` can go into a `--env-file` exactly: podman and docker read one
/// variable a line, the name up to the first `=`, leading whitespace trimmed, `#` a comment,
/// UTF-8 only (docker). Anything else (a line break, bytes that are not UTF-8: only an
/// image's `Env` holds such values; the probe's own never do) goes on the run's command line.
pub fn fits_env_file(name: &OsStr, value: &OsStr) -> bool {
    let (Some(name), Some(value)) = (name.to_str(), value.to_str()) else { return false };
    !name.is_empty()
        && !name.starts_with('#')
        && !name.contains(['=', '\0'])
        && !name.chars().any(char::is_whitespace)
        && !value.contains(['\n', '\r', '\0'])
}

/// The most variables, and bytes of them, an image may set: what fits with room to spare
/// in the kernel's limit on one `execve` (`ARG_MAX`, 2 MiB here, shared with the argv).
pub const MAX_IMAGE_ENV_ENTRIES: usize = 4096;
pub const MAX_IMAGE_ENV_BYTES: usize = 256 << 10;

/// Why an image's config cannot be run: over a limit, or holding what no process can be
/// given.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigRefused {
    #[error("the image sets {0} variables (Env); the probe runs at most {MAX_IMAGE_ENV_ENTRIES}")]
    TooManyVariables(usize),
    #[error("the image's variables (Env) are {0} bytes; the probe runs at most {MAX_IMAGE_ENV_BYTES}")]
    VariablesTooLarge(usize),
    #[error(
        "the image's Entrypoint and Cmd are {arguments} arguments, {bytes} bytes; the probe runs at most \
         {MAX_IMAGE_ENV_ENTRIES} and {MAX_IMAGE_ENV_BYTES}"
    )]
    CommandTooLarge { arguments: usize, bytes: usize },
    /// `what` is `Env` or `Entrypoint and Cmd`.
    #[error("the image's {what} holds a NUL byte in entry {index}; no process can be given one")]
    Nul { what: &'static str, index: usize },
}

/// Refuses an image whose `Env`, `Entrypoint` and `Cmd` are over those limits, naming the
/// limit, before any program starts.
pub fn check_image_config(env: &[String], command: &[String]) -> Result<(), ConfigRefused> {
    if env.len() > MAX_IMAGE_ENV_ENTRIES {
        return Err(ConfigRefused::TooManyVariables(env.len()));
    }
    let bytes: usize = env.iter().map(|e| e.len() + 1).sum();
    if bytes > MAX_IMAGE_ENV_BYTES {
        return Err(ConfigRefused::VariablesTooLarge(bytes));
    }
    let command_bytes: usize = command.iter().map(|a| a.len() + 1).sum();
    if command.len() > MAX_IMAGE_ENV_ENTRIES || command_bytes > MAX_IMAGE_ENV_BYTES {
        return Err(ConfigRefused::CommandTooLarge { arguments: command.len(), bytes: command_bytes });
    }
    // No process can hold a NUL in a variable or an argument, and bubblewrap reads the
    // harness's variables NUL-separated: one inside a value would be read as further
    // options of bubblewrap's own (`--bind / /host`).
    if let Some(at) = env.iter().chain(command).position(|item| item.contains('\0')) {
        let (what, index) = if at < env.len() { ("Env", at) } else { ("Entrypoint and Cmd", at - env.len()) };
        return Err(ConfigRefused::Nul { what, index });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_absolute_path_entries_are_kept() {
        assert_eq!(absolute_path_entries(OsStr::new("/usr/bin::.:bin:/bin:")), OsString::from("/usr/bin:/bin"));
    }

    #[test]
    fn an_env_file_line_is_used_only_where_it_reads_back_exactly() {
        assert!(fits_env_file(OsStr::new("OPENAI_API_KEY"), OsStr::new("sk-x = y")));
        for (name, value) in [("A B", "v"), ("#A", "v"), ("", "v"), ("A", "two\nlines"), ("A", "cr\r")] {
            assert!(!fits_env_file(OsStr::new(name), OsStr::new(value)), "{name:?}={value:?}");
        }
        assert!(!fits_env_file(OsStr::new("A"), OsStr::from_bytes(b"\xff")));
    }

    #[test]
    fn too_many_variables_are_refused_naming_the_limit() {
        let many: Vec<String> = (0..=MAX_IMAGE_ENV_ENTRIES).map(|i| format!("V{i}=x")).collect();
        let error = check_image_config(&many, &[]).unwrap_err().to_string();
        assert!(error.contains(&MAX_IMAGE_ENV_ENTRIES.to_string()) && error.len() < 1024, "{error}");
        let large = vec![format!("V={}", "x".repeat(MAX_IMAGE_ENV_BYTES))];
        assert!(check_image_config(&large, &[]).unwrap_err().to_string().contains("bytes"));
        assert!(check_image_config(&["PATH=/bin".into()], &["/bin/sh".into()]).is_ok());
        let nul = check_image_config(&["A=x\0--bind\0/\0/host".into()], &[]).unwrap_err().to_string();
        assert!(nul.contains("NUL") && nul.contains("Env"), "{nul}");
        assert!(check_image_config(&[], &["/bin/sh".into(), "a\0b".into()]).unwrap_err().to_string().contains("Cmd"));
    }
}
