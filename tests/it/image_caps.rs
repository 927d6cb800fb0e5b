//! A harness holds no power over the host (issue 52): run as root, bubblewrap once gave it
//! every capability, so it remounted the stored root writable (`mount -o remount,bind,rw /`)
//! and rewrote the stored entry; and with a `TMPDIR` outside `/tmp`, the directories the run
//! made in the stored root for its mount points were removed at teardown by path, through a
//! symlink the harness had planted there: host directories removed, as root.
//!
//! Here a hostile harness (busybox's `mount`, `chroot`, `pivot_root`, `unshare`) tries each
//! of those, prints `ESCAPED <what>` for any that worked and `refused <what>` for the others,
//! prints its capability sets and no_new_privs, then answers as the busybox CLI does; it runs
//! under bubblewrap (with the image store) and podman where it is built in, as the user
//! running the tests and as uid 65534. The run passes, nothing escaped, no capability is
//! held, the stored root is the same file for file, and a host canary
//! directory is untouched.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::probe_support::{probe_env, probe_unprivileged, running_as_root, Run, NOBODY};
use crate::support::image::{busybox_cli_context, contents, serial, Served, BUSYBOX_CLI_FLAGS};

/// The attempts, in busybox's shell: each prints `ESCAPED <what>` if it worked. The ones
/// that would take the harness's own root or `/proc` away (when they work) come last, so
/// every attempt is made whatever the others did. `CANARY` is a host directory the harness
/// was never given.
const ATTEMPTS: &str = r#"
try() { what="$1"; shift; if "$@" >/dev/null 2>&1; then echo "ESCAPED $what"; else echo "refused $what"; fi; }
try remount-bind-rw mount -o remount,bind,rw /
try remount-rw mount -o remount,rw /
try write-root touch /written-by-harness
try write-binary sh -c 'echo x >> /bin/busybox'
mkdir -p /tmp/m /tmp/n /tmp/old
try mount-tmpfs mount -t tmpfs none /tmp/m
try mount-bind mount --bind /tmp/m /tmp/n
try remount-workspace-ro mount -o remount,bind,ro "$PWD"
try proc-1-root touch /proc/1/root/written-by-harness
for p in /proc/[0-9]*; do try "proc-root-of-$p" touch "$p/root/written-by-harness"; done
try proc-1-canary touch "/proc/1/root/CANARY/written-by-harness"
try canary touch "CANARY/written-by-harness"
try chroot chroot / /bin/true
unshare -Urm sh -c 'echo "nested user namespace made, uid $(id -u)"' 2>/dev/null
try nested-remount unshare -Urm sh -c 'mount -o remount,bind,rw / && touch /written-nested'
try nested-bind-over-root unshare -Urm sh -c 'mount --bind /tmp / && touch /written-nested'
try nested-umount unshare -Urm sh -c 'umount -l /tmp && touch /tmp/written-nested'
grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs):' /proc/self/status
try umount-proc umount -l /proc
try pivot_root pivot_root /tmp /tmp/old
"#;

/// Each attempt the harness reports, by name.
const NAMED: [&str; 16] = [
    "remount-bind-rw",
    "remount-rw",
    "write-root",
    "write-binary",
    "mount-tmpfs",
    "mount-bind",
    "remount-workspace-ro",
    "proc-1-root",
    "proc-1-canary",
    "canary",
    "chroot",
    "nested-remount",
    "nested-bind-over-root",
    "nested-umount",
    "umount-proc",
    "pivot_root",
];

/// A directory of the test's own outside `/tmp` (as the issue's `TMPDIR` was), open to
/// uid 65534 where it runs as that user: the probe's `TMPDIR` (`t`), its image store
/// (`store`) and a host canary (`canary`, holding `keep`) are in it. Under podman the
/// `TMPDIR` is a short one in `/tmp` instead: podman refuses a run root of 50 characters or
/// more, and its storage is in there (its runs use no store, so no mount point of theirs is
/// made in a stored root).
struct Place {
    base: PathBuf,
    tmp: PathBuf,
    unprivileged: bool,
}

impl Place {
    fn new(tag: &str, runtime: &str, unprivileged: bool) -> Place {
        let user = if unprivileged { "u" } else { "" };
        let base = PathBuf::from(format!("/var/tmp/cfcaps{:x}{tag}{user}", std::process::id()));
        let tmp = match runtime {
            "podman" => PathBuf::from(format!("/tmp/cf{:x}{tag}{user}", std::process::id())),
            _ => base.join("t"),
        };
        for dir in [&base, &tmp] {
            let _ = checkfu_wire_probe::image::remove_tree(dir);
        }
        std::fs::create_dir_all(base.join("canary")).expect("canary");
        std::fs::write(base.join("canary/keep"), b"k").expect("canary file");
        for dir in [tmp.clone(), base.join("store")] {
            std::fs::create_dir(&dir).expect("dir");
            if unprivileged {
                let owned = Command::new("chown").arg(format!("{NOBODY}:{NOBODY}")).arg(&dir).status().expect("chown");
                assert!(owned.success());
            }
        }
        std::fs::set_permissions(&base, std::fs::Permissions::from_mode(0o755)).expect("chmod");
        // Writable by anyone, so that a removal through a planted link would succeed for
        // uid 65534 too.
        std::fs::set_permissions(base.join("canary"), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        Place { base, tmp, unprivileged }
    }

    fn canary(&self) -> PathBuf {
        self.base.join("canary")
    }

    /// The probe on `reference` with `more`, its `TMPDIR` here; with the store here under
    /// bubblewrap.
    fn run(&self, reference: &str, runtime: &str, more: &[&str]) -> Run {
        let store = self.base.join("store");
        let store = store.to_str().expect("utf-8");
        let mut options = vec!["--image", reference, "--runtime", runtime];
        options.extend_from_slice(BUSYBOX_CLI_FLAGS);
        if runtime == "bubblewrap" {
            options.extend(["--image-cache", store]);
        }
        options.extend_from_slice(more);
        let env = [("TMPDIR", OsString::from(&self.tmp))];
        if self.unprivileged {
            probe_unprivileged(&options, &[], &env)
        } else {
            probe_env(&options, &[], &env)
        }
    }

    /// What the probe left in its `TMPDIR`.
    fn left(&self) -> Vec<String> {
        std::fs::read_dir(&self.tmp).expect("tmp").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect()
    }

    /// The stored entries' roots: every name with its kind, mode, size and content.
    fn stored(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let store = self.base.join("store");
        for entry in std::fs::read_dir(&store).into_iter().flatten().flatten() {
            if entry.file_name().to_string_lossy().starts_with("sha256-") {
                contents(&store, &entry.path().join("root"), &mut out);
            }
        }
        out
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = checkfu_wire_probe::image::remove_tree(&self.base);
        let _ = checkfu_wire_probe::image::remove_tree(&self.tmp);
    }
}

/// The runtimes and users the cases run under: bubblewrap, and podman where it is built
/// in; each as the user running the tests and, when that is root, as uid 65534.
fn runtimes() -> Vec<(&'static str, bool)> {
    let mut all = vec![("bubblewrap", false), ("bubblewrap", running_as_root())];
    if cfg!(checkfu_podman) {
        all.extend([("podman", false), ("podman", running_as_root())]);
    }
    all.dedup();
    all
}

/// The entries of `dir`, sorted.
fn entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> =
        std::fs::read_dir(dir).expect("dir").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    names
}

/// Every attempt on the mounts and the host fails, as root and as uid 65534, under
/// bubblewrap and podman: no remount of the read-only root (directly or from a user
/// namespace of the harness's own), no mount, no `chroot` or `pivot_root`, no write through
/// `/proc/N/root`; the stored root and the host canary are unchanged.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn a_harness_can_change_no_mount_and_write_nothing_of_the_hosts() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-hostile-caps");
    let reference = served.reference.to_string();
    for (runtime, unprivileged) in runtimes() {
        let place = Place::new("m", runtime, unprivileged);
        let canary = place.canary();
        let script = format!("{}exec /usr/local/bin/oneshot\n", ATTEMPTS.replace("CANARY", canary.to_str().expect("utf-8")));
        // The first run stores the image (bubblewrap); the hostile one is then a hit, and
        // runs over the stored root.
        let plain = place.run(&reference, runtime, &[]);
        assert_eq!(plain.status, 0, "{}", plain.pretty());
        let stored = place.stored();
        assert_eq!(stored.is_empty(), runtime != "bubblewrap", "{runtime}: {}", plain.pretty());
        let run = place.run(&reference, runtime, &["--entrypoint", "/bin/sh", "--argv=-c", &format!("--argv={script}")]);
        let context = format!("{runtime}, unprivileged {unprivileged}: {}", run.pretty());
        // What escaped is said first: a `pivot_root` that worked also fails the run.
        let answer = run.json["runs"][0]["answer"].as_str().unwrap_or_default();
        let escaped: Vec<&str> = answer.lines().filter(|l| l.starts_with("ESCAPED")).collect();
        assert!(escaped.is_empty(), "{escaped:?}: {context}");
        for attempt in NAMED {
            assert!(answer.contains(&format!("refused {attempt}\n")), "{attempt} was not refused: {context}");
        }
        // No capability at all, none to be had (the bounding set empty), and no_new_privs:
        // a setuid or file-capability program in the image gains nothing.
        for line in ["CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "NoNewPrivs:\t1"] {
            assert!(answer.contains(&format!("{line}\n")), "{line}: {context}");
        }
        // An ordinary user's harness under bubblewrap can make a user namespace of its own
        // (uid 0 there, every capability over it): its remounts fail on the kernel's locks.
        if runtime == "bubblewrap" && (unprivileged || !running_as_root()) {
            assert!(answer.contains("nested user namespace made, uid 0\n"), "{context}");
        }
        assert_eq!(run.status, 0, "{context}");
        assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{context}");
        assert_eq!(place.stored(), stored, "the run changed the stored root: {context}");
        assert_eq!(entries(&canary), ["keep"], "{context}");
        assert_eq!(place.left(), Vec::<String>::new(), "{context}");
    }
}

/// Teardown removes what the run made in the stored root through descriptors, never by a
/// path the harness could change: with `TMPDIR` outside `/tmp` (`/var/tmp/…`, which the
/// image lacks), the run makes its mount points there in the stored root; the harness
/// moves the directory holding them away and plants a symlink in its place, to a host
/// directory holding an empty `t`, the name the run made next. The host's `t` stays, and so
/// does the probe's `TMPDIR`.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn teardown_follows_no_symlink_the_harness_planted() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-hostile-teardown");
    let reference = served.reference.to_string();
    let mut users = vec![false, running_as_root()];
    users.dedup();
    for unprivileged in users {
        let place = Place::new("t", "bubblewrap", unprivileged);
        let canary = place.canary();
        std::fs::create_dir(canary.join("t")).expect("canary t");
        std::fs::set_permissions(canary.join("t"), std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let base = place.base.to_str().expect("utf-8");
        // The directory the run made in the root for the base, moved away (taking the
        // mount points with it) and replaced by a link to the canary.
        let script = format!(
            "mount -o remount,bind,rw / 2>/dev/null && echo 'ESCAPED remount'; \
             mv {base} {base}-moved 2>/dev/null && echo 'ESCAPED moved'; \
             ln -s {canary} {base} 2>/dev/null && echo 'ESCAPED planted'; \
             exec /usr/local/bin/oneshot",
            canary = canary.display()
        );
        let plain = place.run(&reference, "bubblewrap", &[]);
        assert_eq!(plain.status, 0, "{}", plain.pretty());
        let run = place.run(&reference, "bubblewrap", &["--entrypoint", "/bin/sh", "--argv=-c", &format!("--argv={script}")]);
        let context = format!("unprivileged {unprivileged}: {}", run.pretty());
        assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{context}");
        assert!(canary.join("t").is_dir(), "teardown removed the host's canary directory through the planted link: {context}");
        assert_eq!(entries(&canary), ["keep", "t"], "{context}");
        assert!(place.base.join("t").is_dir(), "the probe's TMPDIR was removed: {context}");
        let answer = run.json["runs"][0]["answer"].as_str().unwrap_or_default();
        assert!(!answer.contains("ESCAPED"), "{context}");
        assert_eq!(run.status, 0, "{context}");
    }
}
