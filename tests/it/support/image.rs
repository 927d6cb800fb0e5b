//! Images the image-lane tests make themselves, offline: build contexts on `FROM scratch`
//! holding files of this machine (a dynamically linked program with the libraries `ldd`
//! names, at their own paths; busybox-static; an installed npm package), built with buildah
//! and served from a loopback registry; the image directories a probe run may leave; the
//! lock that keeps image-lane tests (which count those directories) one at a time; and the
//! page's one-shot flags, which the benchmark shares (`tests/benches/image.rs` includes this
//! file). Only `std` and the probe's image module: nothing of a test binary's own.

use checkfu_wire_probe::Budget;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use checkfu_wire_probe::image::tools::{self, Builder, BuilderKind, Registry, RegistryOptions};
use checkfu_wire_probe::image::{ImageReference, TempDir};

/// The one-shot flags of the page's build-context command for the `init oneshot` scaffold
/// (docs/guide/probing-oneshot.md): its entrypoint's arguments, the prompt path, stream JSON,
/// resume and the working directory. The output-schema flags come on top where a test
/// declares them.
pub const PAGE_ONESHOT_FLAGS: &[&str] = &[
    "--protocol",
    "oneshot-v1",
    "--argv=--output-mode",
    "--argv=stream_json",
    "--argv=--prompt-path",
    "--argv={prompt_path}",
    "--argv={resume_flag}",
    "--prompt-transport",
    "argv_path",
    "--output-mode",
    "stream_json",
    "--resume-flag=--resume",
    "--working-directory",
    "/workspace",
];

/// The busybox CLI's flags ([`busybox_cli_context`]): the prompt on stdin, the answer as
/// text.
pub const BUSYBOX_CLI_FLAGS: &[&str] = &["--protocol", "oneshot-v1", "--prompt-transport", "stdin", "--output-mode", "text"];

/// A one-shot CLI in busybox-static's shell: reads the prompt on stdin and asks the model
/// through the relay with busybox's wget, printing the answer's JSON (the reply is in it).
/// `echo` prints the prompt instead; `escape ADDR…` first tries to fetch `http://ADDR/` for
/// each (saying `reached ADDR` when it could), then asks the relay; `stubborn` ignores
/// SIGTERM and never ends (`tests/it/image_runtime.rs`).
const BUSYBOX_CLI: &str = r#"#!/bin/sh
prompt=$(tr '\n"\\' '   ')
if [ "$1" = echo ]; then echo "$prompt"; exit 0; fi
if [ "$1" = stubborn ]; then trap '' TERM; while :; do sleep 1; done; fi
if [ "$1" = escape ]; then
  shift
  for address in "$@"; do
    if wget -q -T 2 -Y off -O /dev/null "http://$address/" 2>/dev/null; then echo "reached $address" >&2; fi
  done
fi
exec wget -q -Y off -O - --header 'Content-Type: application/json' \
  --header "Authorization: Bearer $OPENAI_API_KEY" \
  --post-data "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"$prompt\"}]}" \
  "$OPENAI_BASE_URL/chat/completions"
"#;

const BUSYBOX_CLI_DOCKERFILE: &str = concat!(
    "FROM scratch\n",
    "COPY busybox /bin/busybox\n",
    "RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
    "COPY oneshot /usr/local/bin/oneshot\n",
    "ENV PATH=/usr/local/bin:/bin\n",
    "WORKDIR /workspace\n",
    "ENTRYPOINT [\"/usr/local/bin/oneshot\"]\n",
);

/// The build context of [`BUSYBOX_CLI`]: `--prompt-transport stdin --output-mode text`, its
/// entrypoint the image's.
pub fn busybox_cli_context() -> TempDir {
    use std::os::unix::fs::PermissionsExt;
    let context = TempDir::new("checkfu-image-lane").expect("context");
    std::fs::copy("/bin/busybox", context.path().join("busybox")).expect("busybox-static is installed at /bin/busybox");
    std::fs::write(context.path().join("oneshot"), BUSYBOX_CLI).expect("cli");
    std::fs::set_permissions(context.path().join("oneshot"), std::fs::Permissions::from_mode(0o755)).expect("mode");
    std::fs::write(context.path().join("Dockerfile"), BUSYBOX_CLI_DOCKERFILE).expect("Dockerfile");
    context
}

/// A build context whose `rootfs/` is copied whole onto `FROM scratch`.
pub struct RootContext {
    dir: TempDir,
}

impl RootContext {
    pub fn new(prefix: &str) -> RootContext {
        let dir = TempDir::new(prefix).expect("context");
        std::fs::create_dir(dir.path().join("rootfs")).expect("rootfs");
        RootContext { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    fn inside(&self, at: &str) -> PathBuf {
        let target = self.dir.path().join("rootfs").join(at.trim_start_matches('/'));
        std::fs::create_dir_all(target.parent().expect("parent")).expect("dirs");
        target
    }

    /// The file `from` (symbolic links followed) at `at` in the image.
    pub fn file(&self, from: &Path, at: &str) -> &Self {
        std::fs::copy(from, self.inside(at)).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
        self
    }

    /// A dynamically linked program at `at`, and every library `ldd` names for it at the
    /// library's own path (the loader included), followed through symbolic links.
    pub fn program(&self, from: &Path, at: &str) -> &Self {
        self.file(from, at).libraries(from)
    }

    /// The libraries `ldd` names for the program `from` (the loader included), each at its own
    /// path, followed through symbolic links.
    pub fn libraries(&self, from: &Path) -> &Self {
        let listed = std::process::Command::new("ldd").arg(from).output().expect("ldd");
        for line in String::from_utf8_lossy(&listed.stdout).lines() {
            // `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x…)` or `/lib64/ld-linux-x86-64.so.2 (0x…)`.
            let path = line.split("=>").last().and_then(|rest| rest.split_whitespace().next()).unwrap_or("");
            if path.starts_with('/') && !self.inside(path).exists() {
                self.file(Path::new(path), path);
            }
        }
        self
    }

    /// The directory `from`, whole (symbolic links kept as links), at `at`; the entries of
    /// `from` named in `except` left out.
    pub fn tree(&self, from: &Path, at: &str, except: &[&str]) -> &Self {
        let target = self.inside(at);
        std::fs::create_dir_all(&target).expect("dir");
        let mut command = std::process::Command::new("cp");
        command.arg("-a");
        for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())).flatten() {
            if !except.iter().any(|e| entry.file_name() == *e) {
                command.arg(entry.path());
            }
        }
        let status = command.arg(&target).status().expect("cp");
        assert!(status.success(), "cp -a {} {}", from.display(), target.display());
        self
    }

    /// A symbolic link at `at` to `target` (a path as the image reads it).
    pub fn link(&self, target: &str, at: &str) -> &Self {
        std::os::unix::fs::symlink(target, self.inside(at)).unwrap_or_else(|e| panic!("{at}: {e}"));
        self
    }

    /// busybox-static at `/bin/busybox`, with `/bin/sh` and `/usr/bin/env` (what a `#!/usr/bin/env
    /// node` script needs) linked to it.
    pub fn busybox(&self) -> &Self {
        self.file(Path::new("/bin/busybox"), "/bin/busybox").link("busybox", "/bin/sh").link("/bin/busybox", "/usr/bin/env")
    }

    /// The Dockerfile: `FROM scratch`, the root copied, then `rest`.
    pub fn dockerfile(&self, rest: &str) -> &Self {
        std::fs::write(self.dir.path().join("Dockerfile"), format!("FROM scratch\nCOPY rootfs/ /\n{rest}")).expect("Dockerfile");
        self
    }

    /// The bytes of the files under `rootfs/`.
    pub fn bytes(&self) -> u64 {
        fn walk(dir: &Path) -> u64 {
            std::fs::read_dir(dir)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| match e.file_type() {
                    Ok(t) if t.is_dir() => walk(&e.path()),
                    Ok(t) if t.is_file() => e.metadata().map_or(0, |m| m.len()),
                    _ => 0,
                })
                .sum()
        }
        walk(&self.dir.path().join("rootfs"))
    }
}

/// An image built here and served from a loopback registry of its own. Dropping it stops the
/// registry and removes the builder's image and storage.
pub struct Served {
    pub registry: Option<Registry>,
    pub reference: ImageReference,
    builder: Option<Builder>,
    tag: String,
}

impl Served {
    /// Builds `context` with buildah as `localhost/NAME:1` and pushes it to a fresh loopback
    /// registry, pinned by the pushed digest.
    pub fn build(context: &Path, name: &str) -> Served {
        let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
        let tag = format!("localhost/{name}:1");
        tools::build(&builder, context, None, &tag, &Budget::after(tools::TOOL_TIMEOUT)).expect("build");
        let registry = Registry::start(RegistryOptions::default(), &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
        let reference = tools::push(&builder, &tag, &registry, &Budget::after(tools::TOOL_TIMEOUT)).expect("push");
        Served { registry: Some(registry), reference, builder: Some(builder), tag }
    }

    /// Stops the registry, removes the builder's image and storage, and returns the port the
    /// registry listened on (for a test to see it closed).
    pub fn stop(mut self) -> u16 {
        let registry = self.registry.take().expect("registry");
        let port = registry.port();
        registry.stop().expect("the registry stops");
        let builder = self.builder.take().expect("builder");
        tools::remove_image(&builder, &self.tag, &Budget::after(tools::QUICK_TIMEOUT)).expect("rmi");
        builder.remove_storage().expect("storage");
        port
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        drop(self.registry.take());
        if let Some(builder) = self.builder.take() {
            let _ = tools::remove_image(&builder, &self.tag, &Budget::after(tools::QUICK_TIMEOUT));
            let _ = builder.remove_storage();
        }
    }
}

/// The image-lane tests one at a time: each counts the image directories the probe left.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// The directories a probe made for images (`checkfu-image-rootfs-…`, `checkfu-image-layout-…`)
/// in `dir`.
pub fn image_dirs_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("checkfu-image-rootfs-") || n.starts_with("checkfu-image-layout-"))
                .collect()
        })
        .unwrap_or_default()
}

/// [`image_dirs_in`] the temporary directory.
pub fn image_dirs() -> Vec<String> {
    image_dirs_in(&std::env::temp_dir())
}

/// A command of the test's own (skopeo, podman, docker) that must succeed: its stdout.
pub fn tool(program: &str, args: &[&str], env: &[(&str, &Path)]) -> String {
    let output =
        std::process::Command::new(program).args(args).envs(env.iter().copied()).output().unwrap_or_else(|e| panic!("{program}: {e}"));
    assert!(output.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Every name under `dir`, keyed by its path below `base`, with its mode, size and content
/// (a file's digest, a symlink's target): what a run must leave of a stored root. No times:
/// a run's private copy hard-links the stored files, which moves their change times only.
pub fn contents(base: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    use std::os::unix::fs::MetadataExt;
    for entry in std::fs::read_dir(dir).expect("read_dir").flatten() {
        let path = entry.path();
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let key = path.strip_prefix(base).expect("inside").display().to_string();
        let content = if meta.is_file() {
            checkfu_wire_probe::image::digest_of(&std::fs::read(&path).expect("read")).to_string()
        } else if meta.file_type().is_symlink() {
            std::fs::read_link(&path).expect("readlink").display().to_string()
        } else {
            String::new()
        };
        out.insert(key, format!("{:o} {} {content}", meta.mode(), meta.size()));
        if meta.is_dir() {
            contents(base, &path, out);
        }
    }
}
