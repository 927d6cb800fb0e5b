//! `probe --image NAME@sha256:…` end to end, on a real image: buildah builds a one-shot CLI
//! (a busybox-static shell script that posts the prompt to the relay it is pointed at, as
//! a minimal real CLI would), the distribution registry serves it on loopback, and the
//! probe pulls it by digest, unpacks it and runs it with bubblewrap inside its fence. The
//! relay's record judges it, as it judges a local CLI: an image whose CLI only echoes its
//! prompt fails. Refusals: a reference without a digest (exit 2, nothing started) and a
//! digest the registry does not have (exit 1, the registry's answer).

use std::os::unix::fs::PermissionsExt;

use checkfu_wire_probe::image::tools::{self, Builder, BuilderKind, Registry, RegistryOptions};
use checkfu_wire_probe::image::{ImageReference, TempDir};

use crate::probe_support::{probe, Run};

/// The CLI: reads the prompt on stdin and asks the model through the relay with busybox's
/// wget, printing the answer's JSON (the reply is in it). `echo` prints the prompt instead.
const CLI: &str = r#"#!/bin/sh
prompt=$(tr '\n"\\' '   ')
if [ "$1" = echo ]; then echo "$prompt"; exit 0; fi
exec wget -q -Y off -O - --header 'Content-Type: application/json' \
  --header "Authorization: Bearer $OPENAI_API_KEY" \
  --post-data "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"$prompt\"}]}" \
  "$OPENAI_BASE_URL/chat/completions"
"#;

const DOCKERFILE: &str = concat!(
    "FROM scratch\n",
    "COPY busybox /bin/busybox\n",
    "RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
    "COPY oneshot /usr/local/bin/oneshot\n",
    "ENV PATH=/usr/local/bin:/bin\n",
    "WORKDIR /workspace\n",
    "ENTRYPOINT [\"/usr/local/bin/oneshot\"]\n",
);

/// Builds the CLI's image and pushes it to a fresh loopback registry: the registry (kept
/// alive by the caller) and the pushed reference, pinned by digest.
fn pushed_image() -> (Registry, ImageReference, Builder, TempDir) {
    let context = TempDir::new("checkfu-image-lane").expect("context");
    std::fs::copy("/bin/busybox", context.path().join("busybox")).expect("busybox-static is installed at /bin/busybox");
    std::fs::write(context.path().join("oneshot"), CLI).expect("cli");
    std::fs::set_permissions(context.path().join("oneshot"), std::fs::Permissions::from_mode(0o755)).expect("mode");
    std::fs::write(context.path().join("Dockerfile"), DOCKERFILE).expect("Dockerfile");
    let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
    tools::build(&builder, context.path(), None, "localhost/checkfu-oneshot:1").expect("build");
    let registry = Registry::start(RegistryOptions::default()).expect("registry");
    let pushed = tools::push(&builder, "localhost/checkfu-oneshot:1", &registry).expect("push");
    (registry, pushed, builder, context)
}

fn run_image(reference: &str, more: &[&str]) -> Run {
    let mut options = vec!["--protocol", "oneshot-v1", "--image", reference, "--prompt-transport", "stdin", "--output-mode", "text"];
    options.extend_from_slice(more);
    probe(&options, &[])
}

/// The directories the probe made for images, left in the temporary directory.
fn image_dirs() -> Vec<String> {
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

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn an_image_pinned_by_digest_runs_in_the_fence_and_is_judged_by_the_relay() {
    let (registry, pushed, builder, _context) = pushed_image();
    let reference = pushed.to_string();
    let before = image_dirs();

    let run = run_image(&reference, &[]);
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["digest"], pushed.digest().to_string());
    assert_eq!(run.json["image"]["runtime"], "bubblewrap");
    assert_eq!(run.json["image"]["working_directory"], "/workspace");
    // The call was served on the relay's record, through the probe's fence.
    assert!(run.json["model_plane"]["calls"].as_array().is_some_and(|c| !c.is_empty()), "{}", run.pretty());
    // Nothing of the image stays on disk.
    let after: Vec<String> = image_dirs().into_iter().filter(|d| !before.contains(d)).collect();
    assert_eq!(after, Vec::<String>::new());

    // The same image, whose CLI only echoes its prompt: the nonce is in the output, no
    // reply token is, and the relay served nothing.
    let echo = run_image(&reference, &["--argv=echo"]);
    assert_eq!(echo.status, 1, "{}", echo.pretty());
    assert_eq!(echo.json["steps"]["prompt_exchange"]["status"], "failed", "{}", echo.pretty());

    // A digest the registry does not have: exit 1 with the registry's answer.
    let mut wrong = pushed.digest().hex().to_owned();
    let flipped = if wrong.ends_with('0') { '1' } else { '0' };
    wrong.replace_range(wrong.len() - 1.., &flipped.to_string());
    let missing = format!("{}/{}@sha256:{wrong}", pushed.registry().expect("registry"), pushed.repository());
    let gone = run_image(&missing, &[]);
    assert_eq!(gone.status, 1, "{}", gone.stderr);
    assert!(gone.stderr.contains("manifest unknown"), "{}", gone.stderr);

    drop(registry);
    tools::remove_image(&builder, "localhost/checkfu-oneshot:1").expect("rmi");
    builder.remove_storage().expect("storage");
}

#[test]
fn a_reference_without_a_digest_is_refused_before_anything_starts() {
    for (reference, expected) in [("127.0.0.1:5000/cli:1", "digest"), ("127.0.0.1:5000/cli@sha256:abc", "64")] {
        let run = run_image(reference, &[]);
        assert_eq!(run.status, 2, "{reference}: {}", run.stderr);
        assert!(run.stderr.contains(expected), "{reference}: {}", run.stderr);
        assert!(run.json.is_null(), "nothing ran");
    }
}
