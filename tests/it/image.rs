//! The image lane's foundation (`checkfu_wire_probe::image`) on real tools and real images:
//! buildah builds `FROM scratch` images holding busybox-static offline, the CNCF
//! distribution registry (Debian's `docker-registry`) serves them on a loopback port,
//! skopeo pulls them back by digest into an OCI layout, and the crate unpacks it.
//!
//! The tools come from Debian (`apt-get install buildah skopeo docker-registry
//! busybox-static`, and podman for its own test); `CHECKFU_IMAGE_TOOLS=1` (and
//! `CHECKFU_PODMAN=1`) when the tests are built runs them (`.ci/run` does, and sets
//! `CHECKFU_REQUIRE_IMAGE_TOOLS` and `CHECKFU_REQUIRE_PODMAN` so that there they cannot be
//! ignored);
//! otherwise the runner lists them as ignored. The hostile layouts no real tool makes are
//! the unpacker's unit tests (`image/src/layout.rs`).

use checkfu_wire_probe::Budget;
use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use checkfu_wire_probe::image::tools::{self, Builder, BuilderKind, Registry, RegistryOptions, ToolError};
use checkfu_wire_probe::image::{ImageReference, Limits, OciLayout, Selector, TempDir};

/// A build context in a temporary directory: busybox-static and the given files.
fn context(dockerfile: &str, files: &[(&str, &str, u32)]) -> TempDir {
    let dir = TempDir::new("checkfu-image-context").expect("context");
    std::fs::copy("/bin/busybox", dir.path().join("busybox")).expect("busybox-static is installed at /bin/busybox");
    for (path, content, mode) in files {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("dirs");
        std::fs::write(&path, content).expect("file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(*mode)).expect("mode");
    }
    std::fs::write(dir.path().join("Dockerfile"), dockerfile).expect("Dockerfile");
    dir
}

/// Every path under `root` with its kind and permission bits (`d755`, `f644`, `l -> T`).
fn tree(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for entry in std::fs::read_dir(dir).expect("read_dir") {
            let path = entry.expect("entry").path();
            let metadata = std::fs::symlink_metadata(&path).expect("metadata");
            let relative = path.strip_prefix(root).expect("inside").display().to_string();
            let mode = metadata.permissions().mode() & 0o7777;
            let kind = if metadata.file_type().is_symlink() {
                format!("l -> {}", std::fs::read_link(&path).expect("link").display())
            } else if metadata.is_dir() {
                walk(root, &path, out);
                format!("d{mode:o}")
            } else {
                format!("f{mode:o}")
            };
            out.insert(relative, kind);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

/// The whiteout names in a gzip layer blob, as `tar -tz` lists them.
fn whiteouts_in(blob: &Path) -> Vec<String> {
    let listed = Command::new("tar").arg("-tzf").arg(blob).output().expect("tar");
    assert!(listed.status.success(), "{}", String::from_utf8_lossy(&listed.stderr));
    String::from_utf8_lossy(&listed.stdout)
        .lines()
        .filter(|l| l.rsplit('/').next().is_some_and(|n| n.starts_with(".wh.")))
        .map(String::from)
        .collect()
}

fn ms(d: Duration) -> u128 {
    d.as_millis()
}

/// Build (a base, then an image on it whose steps remove, replace and link files), push to
/// a temporary registry, pull by digest, unpack: the root holds exactly what the image
/// should, with its modes and its config; then nothing is left.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static (see .ci/run)"
)]
fn a_built_image_round_trips_through_the_registry_and_unpacks_with_its_whiteouts() {
    let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
    let storage = builder.storage().expect("storage").to_owned();
    let base = context(
        "FROM scratch\nCOPY busybox /bin/busybox\nCOPY etc /etc\nCOPY data /data\nCOPY gone /gone\n",
        &[("etc/a", "a\n", 0o644), ("etc/keep", "k\n", 0o600), ("data/x/y", "y\n", 0o755), ("gone/dir/f", "f\n", 0o644)],
    );
    let started = Instant::now();
    tools::build(&builder, base.path(), None, "localhost/checkfu-base:1", &Budget::after(tools::TOOL_TIMEOUT)).expect("build the base");
    let base_build = started.elapsed();
    // Each RUN runs busybox (the image's only program) through buildah's chroot isolation.
    let image = context(
        concat!(
            "FROM localhost/checkfu-base:1\n",
            "RUN [\"/bin/busybox\", \"rm\", \"/etc/a\"]\n",
            "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"/bin/busybox rm -rf /data/x && /bin/busybox mkdir /data/x && echo z > /data/x/z\"]\n",
            "RUN [\"/bin/busybox\", \"rm\", \"-rf\", \"/gone\"]\n",
            "RUN [\"/bin/busybox\", \"ln\", \"-s\", \"busybox\", \"/bin/sh\"]\n",
            "RUN [\"/bin/busybox\", \"ln\", \"/bin/busybox\", \"/bin/ls\"]\n",
            "RUN [\"/bin/busybox\", \"sh\", \"-c\", \"echo q > /q && /bin/busybox ln /q /q2\"]\n",
            "ENV GREETING=hello\n",
            "WORKDIR /work\n",
            "ENTRYPOINT [\"/bin/busybox\", \"echo\"]\n",
            "CMD [\"hi\"]\n",
        ),
        &[],
    );
    let started = Instant::now();
    tools::build(
        &builder,
        image.path(),
        Some(&image.path().join("Dockerfile")),
        "localhost/checkfu-image:1",
        &Budget::after(tools::TOOL_TIMEOUT),
    )
    .expect("build the image");
    let build = started.elapsed();

    let started = Instant::now();
    let registry = Registry::start(RegistryOptions::default(), &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
    let registry_start = started.elapsed();
    let (port, registry_dir, registry_pid) = (registry.port(), registry.directory().expect("dir").to_owned(), registry.pid().expect("pid"));
    let started = Instant::now();
    let pushed = tools::push(&builder, "localhost/checkfu-image:1", &registry, &Budget::after(tools::TOOL_TIMEOUT)).expect("push");
    let push = started.elapsed();
    assert_eq!(pushed.registry(), Some(format!("127.0.0.1:{port}").as_str()));
    assert_eq!(pushed.repository(), "checkfu-image");
    assert!(pushed.is_loopback_registry());

    let work = TempDir::new("checkfu-image-work").expect("work");
    let layout_dir = work.path().join("layout");
    let started = Instant::now();
    tools::pull_to_layout(&pushed, &layout_dir, &Budget::after(tools::TOOL_TIMEOUT)).expect("pull by digest");
    let pull = started.elapsed();

    // A digest the registry does not have: the registry's own answer, quoted by the probe's
    // client (a loopback registry is pulled by the probe, not by skopeo).
    let mut wrong = pushed.digest().digest().to_owned();
    let flipped = if wrong.starts_with('0') { "1" } else { "0" };
    wrong.replace_range(0..1, flipped);
    let missing = ImageReference::parse(&format!("127.0.0.1:{port}/checkfu-image@sha256:{wrong}")).expect("reference");
    let error = tools::pull_to_layout(&missing, &work.path().join("missing"), &Budget::after(tools::TOOL_TIMEOUT))
        .expect_err("a digest the registry lacks");
    let ToolError::Pull(message) = &error else { panic!("{error}") };
    assert!(message.contains("404") && message.contains("MANIFEST_UNKNOWN"), "{error}");

    let layout = OciLayout::open(&layout_dir).expect("layout");
    let selected = layout.image(Selector::Digest(pushed.digest())).expect("the pushed digest");
    let only = layout.image(Selector::Only).expect("the only manifest");
    assert_eq!((&selected.manifest_digest, &only.manifest_digest), (pushed.digest(), pushed.digest()));
    let config = selected.config.config().clone().unwrap_or_default();
    assert_eq!(config.entrypoint().clone().unwrap_or_default(), ["/bin/busybox", "echo"]);
    assert_eq!(config.cmd().clone().unwrap_or_default(), ["hi"]);
    let env = config.env().clone().unwrap_or_default();
    assert!(env.iter().any(|e| e == "GREETING=hello"), "{env:?}");
    assert_eq!(config.working_dir().as_deref(), Some("/work"));
    assert_eq!((selected.config.os().to_string(), config.user().as_deref().filter(|u| !u.is_empty())), ("linux".to_owned(), None));

    // What buildah (vfs storage) really emits for the removals: a `.wh.` file per removed
    // name, and no opaque marker even where a directory was removed and made again (the
    // marker is covered by the unpacker's unit tests).
    let layers: Vec<_> = selected.layer_digests().cloned().collect();
    assert_eq!(layers.len(), 2, "the base's layer and the image's one (--layers=false)");
    let mut whiteouts = whiteouts_in(&layout_dir.join("blobs/sha256").join(layers[1].digest()));
    whiteouts.sort();
    assert_eq!(whiteouts, [".wh.gone", "data/x/.wh.y", "etc/.wh.a"]);

    let rootfs = TempDir::new("checkfu-image-rootfs").expect("rootfs");
    let started = Instant::now();
    let report = layout.unpack(&selected, rootfs.path(), Limits::default()).expect("unpack");
    let unpack = started.elapsed();
    assert_eq!((report.layers, report.whiteouts, report.opaque_directories, report.skipped_special), (2, 3, 0, 0), "{report:?}");
    let expected: BTreeMap<String, String> = [
        ("bin", "d755"),
        ("bin/busybox", "f755"),
        ("bin/ls", "f755"),
        ("bin/sh", "l -> busybox"),
        ("data", "d755"),
        ("data/x", "d755"),
        ("data/x/z", "f644"),
        // buildah's chroot isolation leaves its mount points and its generated files.
        ("dev", "d755"),
        ("etc", "d755"),
        ("etc/hostname", "f755"),
        ("etc/hosts", "f755"),
        ("etc/keep", "f600"),
        ("etc/resolv.conf", "f755"),
        ("proc", "d755"),
        ("q", "f644"),
        ("q2", "f644"),
        ("run", "d755"),
        ("sys", "d755"),
        ("work", "d755"),
    ]
    .into_iter()
    .map(|(p, k)| (p.to_owned(), k.to_owned()))
    .collect();
    assert_eq!(tree(rootfs.path()), expected);
    use std::os::unix::fs::MetadataExt;
    let inode = |p: &str| std::fs::metadata(rootfs.path().join(p)).expect(p).ino();
    // buildah writes a hard link to a lower layer's file as a copy of it, and one within
    // the layer as a tar hard link, which is restored as one.
    assert_ne!(inode("bin/ls"), inode("bin/busybox"));
    assert_eq!(
        std::fs::read(rootfs.path().join("bin/ls")).expect("ls"),
        std::fs::read(rootfs.path().join("bin/busybox")).expect("busybox")
    );
    assert_eq!(inode("q2"), inode("q"), "the layer's hard link is one file");
    assert_eq!(report.hard_links, 1);
    let echoed = Command::new(rootfs.path().join("bin/busybox")).args(["echo", "ran"]).output().expect("the unpacked busybox runs");
    assert_eq!(String::from_utf8_lossy(&echoed.stdout), "ran\n");
    eprintln!(
        "image timings (ms): build base {}, build image {}, registry start {}, push {}, pull {}, unpack {} ({} bytes)",
        ms(base_build),
        ms(build),
        ms(registry_start),
        ms(push),
        ms(pull),
        ms(unpack),
        report.bytes
    );

    // Teardown leaves nothing: no image in the builder's storage, then no storage; no
    // registry process, port or store; no layout or rootfs.
    tools::remove_image(&builder, "localhost/checkfu-image:1", &Budget::after(tools::QUICK_TIMEOUT)).expect("rmi image");
    tools::remove_image(&builder, "localhost/checkfu-base:1", &Budget::after(tools::QUICK_TIMEOUT)).expect("rmi base");
    assert_eq!(tools::list_images(&builder, &Budget::after(tools::QUICK_TIMEOUT)).expect("images"), Vec::<String>::new());
    builder.remove_storage().expect("remove storage");
    assert!(!storage.exists());
    drop(registry);
    assert!(!Path::new(&format!("/proc/{registry_pid}")).exists(), "the registry was reaped");
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "port {port} is closed");
    assert!(!registry_dir.exists());
    let paths: Vec<PathBuf> = [rootfs.path(), work.path()].iter().map(|p| p.to_path_buf()).collect();
    rootfs.remove().expect("remove rootfs");
    work.remove().expect("remove work");
    assert!(paths.iter().all(|p| !p.exists()));
}

/// A build that fails shows the builder's own error; the registry binds every interface
/// only when asked, and still answers on loopback.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static (see .ci/run)"
)]
fn a_failing_build_carries_the_builders_error() {
    let builder = Builder::new(BuilderKind::Buildah).expect("buildah");
    let context = context("FROM scratch\nCOPY not-in-the-context /x\n", &[]);
    let error = tools::build(&builder, context.path(), None, "localhost/checkfu-broken:1", &Budget::after(tools::TOOL_TIMEOUT))
        .expect_err("a failing build");
    let ToolError::Failed { tool, stderr, .. } = &error else { panic!("{error}") };
    assert_eq!(*tool, tools::Tool::Buildah);
    assert!(stderr.contains("not-in-the-context"), "{error}");
    assert!(error.to_string().starts_with("buildah failed to build "), "{error}");
    assert_eq!(tools::list_images(&builder, &Budget::after(tools::QUICK_TIMEOUT)).expect("images"), Vec::<String>::new());
}

#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static (see .ci/run)"
)]
fn the_registry_binds_every_interface_only_when_asked() {
    let listening = |port: u16| {
        let table = std::fs::read_to_string("/proc/net/tcp").expect("/proc/net/tcp");
        // Local address column: hex IPv4 and port; state 0A is LISTEN.
        table
            .lines()
            .skip(1)
            .filter_map(|l| {
                let columns: Vec<&str> = l.split_whitespace().collect();
                (columns.get(3) == Some(&"0A")).then(|| columns.get(1).map(|a| a.to_string())).flatten()
            })
            .filter(|a| a.ends_with(&format!(":{port:04X}")))
            .collect::<Vec<_>>()
    };
    let loopback = Registry::start(RegistryOptions::default(), &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
    assert_eq!(listening(loopback.port()), ["0100007F:".to_owned() + &format!("{:04X}", loopback.port())]);
    let everywhere = Registry::start(RegistryOptions { all_interfaces: true }, &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
    let bound = listening(everywhere.port());
    // Go binds 0.0.0.0 as a dual-stack socket where IPv6 is on: it shows in tcp6.
    let tcp6 = std::fs::read_to_string("/proc/net/tcp6").unwrap_or_default();
    assert!(
        bound == ["00000000:".to_owned() + &format!("{:04X}", everywhere.port())]
            || tcp6.contains(&format!("00000000000000000000000000000000:{:04X}", everywhere.port())),
        "{bound:?}"
    );
    loopback.stop().expect("stop");
    everywhere.stop().expect("stop");
}

/// The same build, push and pull with podman as the builder (podman is optional:
/// `CHECKFU_PODMAN=1` when the tests are built runs this).
#[test]
#[cfg_attr(not(checkfu_podman), ignore = "CHECKFU_PODMAN is not set: apt-get install podman, then set it (see .ci/run)")]
fn podman_builds_and_pushes_through_the_same_functions() {
    let builder = Builder::new(BuilderKind::Podman).expect("podman");
    let storage = builder.storage().expect("storage").to_owned();
    let context = context(
        "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"mkdir\", \"/made\"]\nENTRYPOINT [\"/bin/busybox\"]\n",
        &[],
    );
    tools::build(&builder, context.path(), None, "localhost/checkfu-podman:1", &Budget::after(tools::TOOL_TIMEOUT)).expect("podman build");
    let registry = Registry::start(RegistryOptions::default(), &Budget::after(tools::TOOL_TIMEOUT)).expect("registry");
    let pushed = tools::push(&builder, "localhost/checkfu-podman:1", &registry, &Budget::after(tools::TOOL_TIMEOUT)).expect("podman push");
    let work = TempDir::new("checkfu-image-work").expect("work");
    tools::pull_to_layout(&pushed, &work.path().join("layout"), &Budget::after(tools::TOOL_TIMEOUT)).expect("pull");
    let layout = OciLayout::open(&work.path().join("layout")).expect("layout");
    let image = layout.image(Selector::Digest(pushed.digest())).expect("image");
    assert_eq!(image.config.config().as_ref().and_then(|c| c.entrypoint().clone()).unwrap_or_default(), ["/bin/busybox"]);
    std::fs::create_dir(work.path().join("rootfs")).expect("rootfs");
    layout.unpack(&image, &work.path().join("rootfs"), Limits::default()).expect("unpack");
    assert!(work.path().join("rootfs/made").is_dir() && work.path().join("rootfs/bin/busybox").is_file());
    tools::remove_image(&builder, "localhost/checkfu-podman:1", &Budget::after(tools::QUICK_TIMEOUT)).expect("rmi");
    assert_eq!(tools::list_images(&builder, &Budget::after(tools::QUICK_TIMEOUT)).expect("images"), Vec::<String>::new());
    builder.remove_storage().expect("remove storage");
    assert!(!storage.exists());
    registry.stop().expect("stop");
    work.remove().expect("remove work");
}

/// The files a real tree holds, made by real tools: busybox-static, GNU tar's archive of it,
/// and bgzip (htslib's BGZF: a gzip stream of many members, as eStargz layers are).
fn bgzip_layer() -> (TempDir, Vec<u8>, Vec<u8>) {
    let dir = TempDir::new("checkfu-image-bgzip").expect("dir");
    let source = dir.path().join("source");
    std::fs::create_dir_all(source.join("bin")).expect("bin");
    std::fs::copy("/bin/busybox", source.join("bin/busybox")).expect("busybox-static is installed at /bin/busybox");
    std::os::unix::fs::symlink("busybox", source.join("bin/sh")).expect("symlink");
    std::fs::create_dir_all(source.join("etc")).expect("etc");
    std::fs::write(source.join("etc/motd"), "hello\n").expect("motd");
    let tar = dir.path().join("layer.tar");
    let status = Command::new("tar").args(["--format=posix", "--sort=name", "-cf"]).arg(&tar).arg("-C").arg(&source).arg(".").status();
    assert!(status.expect("GNU tar").success());
    let out = Command::new("bgzip").arg("-c").arg(&tar).output().expect("bgzip (apt-get install tabix)");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    (dir, std::fs::read(&tar).expect("tar"), out.stdout)
}

/// A gzip layer of many members (bgzip's BGZF, as eStargz writes them) is read member after
/// member, as containerd and podman read it, and unpacks to the tree GNU tar unpacks;
/// a config whose diff_id covers only the first member is refused, naming the diff_id.
#[test]
#[cfg_attr(
    not(checkfu_image_tools),
    ignore = "CHECKFU_IMAGE_TOOLS is not set: apt-get install buildah skopeo docker-registry busybox-static tabix (see .ci/run)"
)]
fn a_multi_member_gzip_layer_is_read_whole() {
    use std::io::Read;
    let (dir, tar, blob) = bgzip_layer();
    // One member is what a single-member reader sees: far less than the tar.
    let mut first = Vec::new();
    flate2::read::GzDecoder::new(&blob[..]).read_to_end(&mut first).expect("first member");
    assert!(first.len() < tar.len() / 4, "bgzip wrote {} bytes in its first member of {}", first.len(), tar.len());

    let layout = crate::image_untrusted_layers::layout_with_blob(&blob, &tar, true);
    let opened = OciLayout::open(layout.path()).expect("layout");
    let image = opened.image(Selector::Only).expect("image");
    let rootfs = TempDir::new("checkfu-image-rootfs").expect("rootfs");
    opened.unpack(&image, rootfs.path(), Limits::default()).expect("every member unpacked");
    let by_gnu_tar = dir.path().join("by-gnu-tar");
    std::fs::create_dir(&by_gnu_tar).expect("dir");
    let status = Command::new("tar").arg("-xpf").arg(dir.path().join("layer.tar")).arg("-C").arg(&by_gnu_tar).status();
    assert!(status.expect("GNU tar").success());
    assert_eq!(tree(rootfs.path()), tree(&by_gnu_tar));
    let echoed = Command::new(rootfs.path().join("bin/busybox")).args(["echo", "ran"]).output().expect("the unpacked busybox runs");
    assert_eq!(String::from_utf8_lossy(&echoed.stdout), "ran\n");

    // The diff_id of the first member alone: the probe reads on, and says what differs.
    let layout = crate::image_untrusted_layers::layout_with_blob(&blob, &first, true);
    let opened = OciLayout::open(layout.path()).expect("layout");
    let image = opened.image(Selector::Only).expect("image");
    let rootfs = TempDir::new("checkfu-image-rootfs").expect("rootfs");
    let error = opened.unpack(&image, rootfs.path(), Limits::default()).expect_err("refused").to_string();
    assert!(error.contains("its decompressed content hashes to sha256:") && error.contains("but the config's diff_id is"), "{error}");
}
