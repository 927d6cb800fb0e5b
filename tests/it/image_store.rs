//! The image store end to end, on real images (buildah builds the busybox CLI, the
//! distribution registry serves it on loopback, bubblewrap runs it): the first run of a
//! digest pulls and stores it (`image.cache: miss`), the next is a hit and passes; an entry
//! changed in any of the ways the seal is for (a file's content with its size and times
//! kept, its length, its mode, a file added, the completion marker gone), and a write cut
//! short, are found, removed and pulled again; a run cannot write into the stored root, nor
//! does the probe for a run that needs a directory the entry lacks; a store others can
//! write is refused and left as it is; the bound evicts the least recently used; `image
//! ls` and `image prune` show and empty the store. As root and, for the hit, as uid 65534.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use checkfu_wire_probe::image::TempDir;

use crate::probe_support::{probe, probe_env, probe_unprivileged, running_as_root, Run, NOBODY, PROBE};
use crate::support::image::{busybox_cli_context, contents, serial, Served, BUSYBOX_CLI_FLAGS};

/// The busybox CLI's image `reference` run with the store at `store`, and `more` flags.
fn run_stored(store: &Path, reference: &str, more: &[&str]) -> Run {
    let store = store.to_str().expect("utf-8");
    probe(&[BUSYBOX_CLI_FLAGS, &["--image", reference, "--image-cache", store], more].concat(), &[])
}

/// The run passed, with the store's answer `cache`; its detail, if any.
fn passed_with(run: &Run, cache: &str) -> String {
    assert_eq!(run.status, 0, "{}", run.pretty());
    assert_eq!(run.json["steps"]["prompt_exchange"]["status"], "passed", "{}", run.pretty());
    assert_eq!(run.json["image"]["cache"], cache, "{}", run.pretty());
    run.json["image"]["cache_detail"].as_str().unwrap_or_default().to_owned()
}

/// The entry of the served image in `store`.
fn entry_of(store: &Path, served: &Served) -> PathBuf {
    store.join(served.reference.digest().to_string().replace(':', "-"))
}

/// Every name under `root` with its kind, mode, size and content digest: what a run of the
/// entry must leave as it was.
fn tree(root: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    contents(root, root, &mut out);
    out
}

/// `checkfu-wire image ARGS --image-cache STORE`.
fn image_command(store: &Path, args: &[&str]) -> (i32, String) {
    let output = Command::new(PROBE).arg("image").args(args).arg("--image-cache").arg(store).output().expect("checkfu-wire image");
    (output.status.code().unwrap_or(-1), String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr))
}

/// A hostile harness: before it runs the CLI, it tries to write the root, its own
/// binaries and a new file at `/`, and says what each attempt did.
const WRITER: &str = "for f in /usr/local/bin/oneshot /bin/busybox /new-file /workspace/../etc-new; do \
     if echo x >> $f 2>/dev/null; then echo \"wrote $f\"; else echo \"refused $f\"; fi; done; \
     chmod 777 /bin/busybox 2>/dev/null && echo 'chmod /bin/busybox'; \
     mkdir /made 2>/dev/null && echo 'mkdir /made'; \
     exec /usr/local/bin/oneshot";

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn a_stored_digest_is_a_hit_and_an_entry_changed_or_cut_short_is_pulled_again() {
    let _serial = serial();
    let context = busybox_cli_context();
    let served = Served::build(context.path(), "checkfu-store");
    let reference = served.reference.to_string();
    let dir = TempDir::new("checkfu-store-test").expect("dir");
    let store = dir.path().join("images");

    // The first run pulls, unpacks and stores; the store is the user's, 0700.
    assert_eq!(passed_with(&run_stored(&store, &reference, &[]), "miss"), "");
    let meta = std::fs::metadata(&store).expect("the store");
    assert_eq!(meta.mode() & 0o777, 0o700);
    // SAFETY: geteuid cannot fail.
    assert_eq!(meta.uid(), checkfu_wire_sandbox::identity::euid());
    let entry = entry_of(&store, &served);
    assert!(entry.join("entry.json").is_file() && entry.join("root/bin/busybox").is_file(), "{}", entry.display());
    // The second is a hit, and says so in text too.
    assert_eq!(passed_with(&run_stored(&store, &reference, &[]), "hit"), "");
    let text = Command::new(PROBE)
        .arg("probe")
        .args(BUSYBOX_CLI_FLAGS)
        .args(["--image", &reference, "--image-cache"])
        .arg(&store)
        .output()
        .expect("probe");
    assert!(String::from_utf8_lossy(&text.stdout).contains("image    store: hit\n"), "{}", String::from_utf8_lossy(&text.stdout));
    // --no-image-cache pulls for the run alone.
    let off = run_stored(&store, &reference, &["--no-image-cache"]);
    assert!(off.status == 2 && off.stderr.contains("cannot be used with"), "{}", off.stderr);
    let off = probe(&[BUSYBOX_CLI_FLAGS, &["--image", &reference, "--no-image-cache"]].concat(), &[]);
    assert_eq!(passed_with(&off, "off"), "--no-image-cache");

    // A run cannot write into the stored root: every attempt is refused, the entry is the
    // same file for file, and the next run is still a hit.
    let before = tree(&entry);
    let writer = run_stored(&store, &reference, &["--entrypoint", "/bin/sh", "--argv=-c", &format!("--argv={WRITER}")]);
    assert_eq!(passed_with(&writer, "hit"), "");
    let answer = writer.json["runs"][0]["answer"].as_str().unwrap_or_default();
    for refused in ["refused /usr/local/bin/oneshot", "refused /bin/busybox", "refused /new-file", "refused /workspace/../etc-new"] {
        assert!(answer.contains(refused), "{refused}: {answer}");
    }
    assert!(!answer.contains("wrote") && !answer.contains("chmod") && !answer.contains("mkdir"), "{answer}");
    assert_eq!(tree(&entry), before, "the run changed the stored entry");
    assert_eq!(passed_with(&run_stored(&store, &reference, &[]), "hit"), "");

    // A TMPDIR outside /tmp: the run's own mount points (the image holds no /var) are made
    // in a private copy of the root's directories, for that run alone; the stored entry,
    // its description and its seal included, is as it was, and the next run a hit.
    let outside = PathBuf::from(format!("/var/tmp/checkfu-store-test-{}", std::process::id()));
    std::fs::create_dir_all(&outside).expect("a TMPDIR outside /tmp");
    let store_text = store.to_str().expect("utf-8");
    let elsewhere = probe_env(
        &[BUSYBOX_CLI_FLAGS, &["--image", &reference, "--image-cache", store_text]].concat(),
        &[],
        &[("TMPDIR", outside.clone().into_os_string())],
    );
    let _ = std::fs::remove_dir_all(&outside);
    assert_eq!(passed_with(&elsewhere, "hit"), "");
    assert_eq!(tree(&entry), before, "the run wrote the stored entry");
    let left: Vec<String> =
        std::fs::read_dir(&store).expect("store").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec![entry.file_name().expect("name").to_string_lossy().into_owned()], "the private copy stayed");
    assert_eq!(passed_with(&run_stored(&store, &reference, &[]), "hit"), "");

    // Each change is caught, the entry removed and the image pulled and stored again.
    let root = entry.join("root");
    let cli = root.join("usr/local/bin/oneshot");
    let changes: [(&str, &dyn Fn()); 5] = [
        ("a file's content, same length, its modification time set back", &|| {
            let modified = std::fs::metadata(&cli).and_then(|m| m.modified()).expect("mtime");
            let mut bytes = std::fs::read(&cli).expect("read");
            bytes[0] ^= 0x01;
            std::fs::write(&cli, &bytes).expect("write");
            // Its size and times tell nothing: its content does.
            std::fs::File::options().write(true).open(&cli).and_then(|f| f.set_modified(modified)).expect("set the mtime back");
        }),
        ("a truncated file", &|| {
            let file = std::fs::OpenOptions::new().write(true).open(root.join("bin/busybox")).expect("open");
            file.set_len(4096).expect("truncate");
        }),
        ("a mode", &|| std::fs::set_permissions(&cli, std::fs::Permissions::from_mode(0o777)).expect("chmod")),
        ("an added file", &|| std::fs::write(root.join("etc-added"), b"x").expect("add")),
        ("a removed file", &|| std::fs::remove_file(root.join("bin/ls")).expect("remove")),
    ];
    for (what, change) in changes {
        change();
        let detail = passed_with(&run_stored(&store, &reference, &[]), "miss");
        assert!(detail.contains("changed since it was stored") && detail.contains("removed"), "{what}: {detail}");
        assert_eq!(passed_with(&run_stored(&store, &reference, &[]), "hit"), "", "{what}: stored again");
    }
    // The completion marker gone: not whole.
    std::fs::remove_file(entry.join("entry.json")).expect("remove the marker");
    let detail = passed_with(&run_stored(&store, &reference, &[]), "miss");
    assert!(detail.contains("not whole"), "{detail}");

    // A write cut short: a `.tmp-` directory of a process that is gone, holding a whole
    // root but no marker, is never taken for the entry, and is removed by the next run.
    let cut = store.join(".tmp-999999999-0-0");
    std::fs::rename(&entry, &cut).expect("move the entry aside");
    std::fs::remove_file(cut.join("entry.json")).expect("no marker");
    assert_eq!(passed_with(&run_stored(&store, &reference, &[]), "miss"), "");
    assert!(!cut.exists(), "the cut-short write stayed");
    let left: Vec<String> =
        std::fs::read_dir(&store).expect("store").flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert_eq!(left, vec![entry.file_name().expect("name").to_string_lossy().into_owned()]);

    // A store anyone can write is refused, never chmod'ed: the run goes on without it and
    // says why; `image ls` refuses it too, naming it.
    let shared = dir.path().join("shared");
    std::fs::create_dir(&shared).expect("dir");
    std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let detail = passed_with(&run_stored(&shared, &reference, &[]), "off");
    assert!(detail.contains(&format!("{} is mode 777: writable by group or others", shared.display())), "{detail}");
    assert_eq!(std::fs::metadata(&shared).expect("shared").mode() & 0o7777, 0o777, "left as it was");
    let (status, text) = image_command(&shared, &["ls"]);
    assert!(status == 2 && text.contains("writable by group or others"), "{text}");

    // As uid 65534, with a store of its own: a miss, then a hit.
    if running_as_root() {
        let nobody_store = dir.path().join("nobody");
        std::fs::create_dir(&nobody_store).expect("dir");
        let owned = Command::new("chown").arg(format!("{NOBODY}:{NOBODY}")).arg(&nobody_store).status().expect("chown");
        assert!(owned.success());
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).expect("chmod");
        let as_nobody = |_: ()| {
            let store = nobody_store.to_str().expect("utf-8");
            probe_unprivileged(&[BUSYBOX_CLI_FLAGS, &["--image", &reference, "--image-cache", store]].concat(), &[], &[])
        };
        assert_eq!(passed_with(&as_nobody(()), "miss"), "");
        assert_eq!(passed_with(&as_nobody(()), "hit"), "");
    }
    served.stop();
}

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static bubblewrap (see .ci/run)"
)]
fn the_bound_evicts_the_least_recently_used_and_ls_and_prune_show_and_empty_the_store() {
    let _serial = serial();
    let first_context = busybox_cli_context();
    let second_context = busybox_cli_context();
    // A file of its own: another image, another digest.
    std::fs::write(second_context.path().join("Dockerfile"), {
        let mut dockerfile = std::fs::read_to_string(second_context.path().join("Dockerfile")).expect("Dockerfile");
        dockerfile.push_str("LABEL second=yes\nCOPY oneshot /usr/local/bin/second\n");
        dockerfile
    })
    .expect("Dockerfile");
    let first = Served::build(first_context.path(), "checkfu-store-a");
    let second = Served::build(second_context.path(), "checkfu-store-b");
    let dir = TempDir::new("checkfu-store-bound").expect("dir");
    let store = dir.path().join("images");

    // Unbounded enough for one: the first is stored, then the second evicts it.
    assert_eq!(passed_with(&run_stored(&store, &first.reference.to_string(), &[]), "miss"), "");
    let one: u64 = serde_json::from_str::<serde_json::Value>(&image_command(&store, &["ls", "--format", "json"]).1).expect("json")
        ["disk_bytes"]
        .as_u64()
        .expect("bytes");
    let bound = (one * 3 / 2).to_string();
    assert_eq!(passed_with(&run_stored(&store, &second.reference.to_string(), &["--image-cache-max", &bound]), "miss"), "");
    let (status, listed) = image_command(&store, &["ls", "--format", "json"]);
    assert_eq!(status, 0, "{listed}");
    let listed: serde_json::Value = serde_json::from_str(&listed).expect("json");
    let digests: Vec<&str> = listed["images"].as_array().expect("images").iter().filter_map(|i| i["digest"].as_str()).collect();
    assert_eq!(digests, vec![second.reference.digest().to_string()], "{listed}");
    assert!(listed["disk_bytes"].as_u64().expect("bytes") <= one * 3 / 2, "{listed}");
    assert!(!entry_of(&store, &first).exists());
    // An image larger than the bound runs without being stored.
    let small = run_stored(&store, &first.reference.to_string(), &["--image-cache-max", "4K"]);
    assert!(passed_with(&small, "miss").contains("exceed the store's bound"), "{}", small.pretty());
    assert!(!entry_of(&store, &first).exists());
    assert!(std::fs::read_dir(&store).expect("store").flatten().all(|e| !e.file_name().to_string_lossy().starts_with(".tmp-")));

    // ls in text names the digest and the reference; prune by digest, then all.
    assert_eq!(passed_with(&run_stored(&store, &first.reference.to_string(), &[]), "miss"), "");
    let (status, text) = image_command(&store, &["ls"]);
    assert_eq!(status, 0, "{text}");
    for reference in [&first.reference, &second.reference] {
        assert!(text.contains(&format!("{}  {reference}", reference.digest())), "{text}");
    }
    assert!(text.contains("2 image(s)"), "{text}");
    let (status, pruned) = image_command(&store, &["prune", second.reference.digest().as_ref()]);
    assert_eq!(status, 0, "{pruned}");
    assert!(pruned.contains(&format!("removed {}", second.reference.digest())) && pruned.contains("1 image(s) removed"), "{pruned}");
    assert!(entry_of(&store, &first).exists() && !entry_of(&store, &second).exists());
    let (status, pruned) = image_command(&store, &["prune"]);
    assert_eq!(status, 0, "{pruned}");
    assert_eq!(std::fs::read_dir(&store).expect("store").count(), 0, "{pruned}");
    let (status, text) = image_command(&store, &["ls"]);
    assert!(status == 0 && text.contains("0 image(s)"), "{text}");
    // A digest that is not one is refused.
    let (status, text) = image_command(&store, &["prune", "sha256:abc"]);
    assert_eq!(status, 2, "{text}");

    first.stop();
    second.stop();
}
