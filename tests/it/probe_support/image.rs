//! The image lane's shared pieces: a busybox one-shot CLI built into an image by buildah
//! and pushed to a loopback registry, the probe run on it, and the image directories a run
//! may leave behind. Used by `image_lane` and `image_runtime` (here rather than in
//! `support/`, which the benchmarks include too, because it runs the probe).

use std::os::unix::fs::PermissionsExt;

use checkfu_wire_probe::image::tools::{self, Builder, BuilderKind, Registry, RegistryOptions};
use checkfu_wire_probe::image::{ImageReference, TempDir};

use super::{probe_env, Run};

/// The CLI: reads the prompt on stdin and asks the model through the relay with busybox's
/// wget, printing the answer's JSON (the reply is in it). `echo` prints the prompt instead;
/// `escape ADDR…` first tries to fetch `http://ADDR/` for each (saying `reached ADDR` when
/// it could), then asks the relay; `stubborn` ignores SIGTERM and never ends.
pub const CLI: &str = r#"#!/bin/sh
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

pub const DOCKERFILE: &str = concat!(
    "FROM scratch\n",
    "COPY busybox /bin/busybox\n",
    "RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
    "COPY oneshot /usr/local/bin/oneshot\n",
    "ENV PATH=/usr/local/bin:/bin\n",
    "WORKDIR /workspace\n",
    "ENTRYPOINT [\"/usr/local/bin/oneshot\"]\n",
);

/// The CLI's build context.
pub fn build_context() -> TempDir {
    let context = TempDir::new("checkfu-image-lane").expect("context");
    std::fs::copy("/bin/busybox", context.path().join("busybox")).expect("busybox-static is installed at /bin/busybox");
    std::fs::write(context.path().join("oneshot"), CLI).expect("cli");
    std::fs::set_permissions(context.path().join("oneshot"), std::fs::Permissions::from_mode(0o755)).expect("mode");
    std::fs::write(context.path().join("Dockerfile"), DOCKERFILE).expect("Dockerfile");
    context
}

/// Builds the CLI's image and pushes it to a fresh loopback registry: the registry (kept
/// alive by the caller) and the pushed reference, pinned by digest.
pub fn pushed_image() -> (Registry, ImageReference, Builder, TempDir) {
    let context = build_context();
    let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
    tools::build(&builder, context.path(), None, "localhost/checkfu-oneshot:1").expect("build");
    let registry = Registry::start(RegistryOptions::default()).expect("registry");
    let pushed = tools::push(&builder, "localhost/checkfu-oneshot:1", &registry).expect("push");
    (registry, pushed, builder, context)
}

/// The image-lane tests one at a time: each counts the image directories the probe left.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

pub fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn run_image(reference: &str, more: &[&str]) -> Run {
    run_image_env(reference, more, &[])
}

/// [`run_image`] with variables for the probe's own process (a `TMPDIR` of the test's, so
/// that what a run leaves there is its own and no other test's).
pub fn run_image_env(reference: &str, more: &[&str], env: &[(&str, std::ffi::OsString)]) -> Run {
    let mut options = vec!["--protocol", "oneshot-v1", "--image", reference, "--prompt-transport", "stdin", "--output-mode", "text"];
    options.extend_from_slice(more);
    probe_env(&options, &[], env)
}

/// The directories the probe made for images, left in the temporary directory.
pub fn image_dirs() -> Vec<String> {
    std::fs::read_dir(std::env::temp_dir())
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("checkfu-image-rootfs-") || n.starts_with("checkfu-image-layout-"))
                .collect()
        })
        .unwrap_or_default()
}
