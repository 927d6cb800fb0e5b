//! `init oneshot|acp --directory DIR`: the smallest runnable wrapper for each protocol, as the
//! page's author path starts: a Dockerfile, an entrypoint that answers through the model
//! endpoint it is given (a POSIX shell script on busybox-static), a recipe with the page's
//! flags (one-shot) and a short README with the commands that test it.
//!
//! The default scaffold builds without pulling anything: `FROM scratch`, with this machine's
//! static busybox copied into the context. `--base IMAGE` writes it on another base instead
//! (one with `/bin/sh`, `wget`, `sed` and `tr`). The directory is written whole or not at
//! all: into a fresh sibling, then renamed into place; a directory that holds anything is
//! refused.

use std::path::{Path, PathBuf};

use checkfu_wire_image::tools::BuilderKind;
use checkfu_wire_probe::next::{command_line, publish_commands};

/// The one-shot wrapper the page's build-context example runs.
const ONESHOT_SCRIPT: &str = include_str!("init/oneshot.sh");
/// The ACP wrapper.
const ACP_SCRIPT: &str = include_str!("init/acp.sh");

#[derive(Clone, Copy, clap::ValueEnum)]
pub enum Kind {
    /// A oneshot-v1 CLI.
    Oneshot,
    /// An acp-v1 agent over stdio.
    Acp,
}

#[derive(clap::Args)]
pub struct Args {
    /// Which protocol's wrapper.
    #[arg(value_enum)]
    kind: Kind,
    /// Where to write it: a directory that does not exist yet, or an empty one.
    #[arg(long, value_name = "DIR")]
    directory: PathBuf,
    /// Build on this image instead of `FROM scratch` (it must hold /bin/sh, wget, sed and tr).
    #[arg(long, value_name = "IMAGE")]
    base: Option<String>,
}

/// Where each scaffold's entrypoint lives in its image (the page's paths).
const ONESHOT_ENTRYPOINT: &str = "/opt/checkfu/bin/checkfu-oneshot";
const ACP_ENTRYPOINT: &str = "/opt/custom/bin/acp-agent";

pub fn init(args: &Args) -> i32 {
    match write(args) {
        Ok(written) => {
            for file in written {
                println!("wrote {}", args.directory.join(file).display());
            }
            let name = scaffold_name(&args.directory);
            let context = args.directory.display().to_string();
            let (program, words) = probe_command(args.kind, &name, &context);
            println!("next     {}", command_line(program, &words));
            println!("next     then publish the image and retest it, as {} says", args.directory.join("README.md").display());
            0
        }
        Err((code, message)) => {
            eprintln!("error: {message}");
            code
        }
    }
}

fn write(args: &Args) -> Result<Vec<&'static str>, (i32, String)> {
    let dir = &args.directory;
    if let Ok(mut entries) = std::fs::read_dir(dir) {
        if entries.next().is_some() {
            return Err((2, format!("{}: not empty; init writes only into a new or empty directory", dir.display())));
        }
    } else if dir.exists() {
        return Err((2, format!("{}: not a directory", dir.display())));
    }
    let busybox = match &args.base {
        Some(_) => None,
        None => Some(static_busybox().ok_or((
            2,
            String::from(
                "no static busybox on this machine for a FROM scratch image: install busybox-static (Debian), or give --base IMAGE \
                 (an image with /bin/sh, wget, sed and tr)",
            ),
        ))?),
    };
    let name = scaffold_name(dir);
    let (script, entrypoint) = match args.kind {
        Kind::Oneshot => (ONESHOT_SCRIPT, ONESHOT_ENTRYPOINT),
        Kind::Acp => (ACP_SCRIPT, ACP_ENTRYPOINT),
    };
    let mut files: Vec<(&'static str, Vec<u8>, u32)> = vec![
        ("Dockerfile", dockerfile(args.base.as_deref(), entrypoint).into_bytes(), 0o644),
        ("entrypoint.sh", script.as_bytes().to_vec(), 0o755),
        ("README.md", readme(args.kind, &name).into_bytes(), 0o644),
    ];
    if let Some(busybox) = &busybox {
        let bytes = std::fs::read(busybox).map_err(|e| (1, format!("{}: {e}", busybox.display())))?;
        files.push(("busybox", bytes, 0o755));
    }
    if let Kind::Oneshot = args.kind {
        files.push(("recipe.json", oneshot_recipe(entrypoint).into_bytes(), 0o644));
    }
    // Whole or not at all: a fresh sibling, then one rename.
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let staging = parent.join(format!(".{name}.init-{}", std::process::id()));
    let result = (|| -> std::io::Result<()> {
        std::fs::create_dir(&staging)?;
        for (file, bytes, mode) in &files {
            let path = staging.join(file);
            std::fs::write(&path, bytes)?;
            std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(*mode))?;
        }
        if dir.exists() {
            std::fs::remove_dir(dir)?;
        }
        std::fs::rename(&staging, dir)
    })();
    if let Err(e) = result {
        let _ = std::fs::remove_dir_all(&staging);
        return Err((1, format!("cannot write {}: {e}", dir.display())));
    }
    Ok(files.iter().map(|(file, _, _)| *file).collect())
}

fn dockerfile(base: Option<&str>, entrypoint: &str) -> String {
    let from = match base {
        Some(image) => format!("FROM {image}\n"),
        None => String::from(
            "# No base to pull: a static busybox gives the wrapper its shell, wget, sed and tr.\nFROM scratch\nCOPY busybox \
             /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n",
        ),
    };
    format!("{from}COPY entrypoint.sh {entrypoint}\nWORKDIR /workspace\nENTRYPOINT [\"{entrypoint}\"]\n")
}

/// The page's one-shot declaration, as a recipe for `probe --recipe`.
fn oneshot_recipe(entrypoint: &str) -> String {
    let recipe = serde_json::json!({
        "protocol": "oneshot-v1",
        "declaration": {
            "entrypoint": entrypoint,
            "argv": ["--output-mode", "stream_json", "--prompt-path", "{prompt_path}", "{resume_flag}"],
            "prompt_transport": "argv_path",
            "output_mode": "stream_json",
            "resume_flag": "--resume",
            "output_schema_flag": "--output-schema",
            "output_schema_transport": "argv_path",
            "working_directory": "/workspace",
            "env": {},
            "home_files": {}
        }
    });
    let mut text = serde_json::to_string_pretty(&recipe).unwrap_or_default();
    text.push('\n');
    text
}

/// The scaffold's name: its directory's.
fn scaffold_name(dir: &Path) -> String {
    dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| String::from("custom"))
}

/// The page's build-context command for the scaffold `name` of `kind` in `context`: the
/// program and its words.
fn probe_command(kind: Kind, name: &str, context: &str) -> (&'static str, Vec<String>) {
    let (protocol, entrypoint, flags): (&str, &str, &[&str]) = match kind {
        Kind::Oneshot => (
            "oneshot-v1",
            ONESHOT_ENTRYPOINT,
            &[
                "--argv=--output-mode",
                "--argv=stream_json",
                "--argv=--prompt-path",
                "--argv={prompt_path}",
                "--argv={resume_flag}",
                "--prompt-transport=argv_path",
                "--output-mode=stream_json",
                "--resume-flag=--resume",
                "--output-schema-flag=--output-schema",
                "--output-schema-transport=argv_path",
            ],
        ),
        Kind::Acp => ("acp-v1", ACP_ENTRYPOINT, &[]),
    };
    let mut words = vec![String::from("probe"), format!("--name={name}"), format!("--build-context={context}")];
    words.extend([format!("--entrypoint={entrypoint}"), format!("--protocol={protocol}")]);
    words.extend(flags.iter().map(|f| (*f).to_owned()));
    words.push(String::from("--working-directory=/workspace"));
    (PROBE, words)
}

/// The probe's program, as the commands name it.
const PROBE: &str = "checkfu-wire";

/// A command written over several lines, one flag a line, as a README shows it.
fn shown(program: &str, words: &[String]) -> String {
    let quoted = command_line(program, words);
    // Every word but the program and `probe` starts with `--` and holds no space once
    // quoted, so the lines break before each flag.
    quoted.replace(" --", " \\\n      --").replace(" '--", " \\\n      '--")
}

fn readme(kind: Kind, name: &str) -> String {
    let protocol = match kind {
        Kind::Oneshot => "oneshot-v1",
        Kind::Acp => "acp-v1",
    };
    let (program, words) = probe_command(kind, name, ".");
    let buildah = publish_commands(BuilderKind::Buildah, ".", None);
    let podman = publish_commands(BuilderKind::Podman, ".", None);
    format!(
        "# {name}\n\nThe smallest {protocol} wrapper: `entrypoint.sh` answers through the model endpoint it is given \
         (`OPENAI_BASE_URL`, `OPENAI_API_KEY`). Replace its model call with your harness.\n\nTest the build context (an \
         ephemeral image on a loopback-only registry), from this directory:\n\n    {}\n\nWhen it passes, publish the image \
         where the platform can pull it, built as the probe built it, so that its digest is the one the result's \
         `next.retest` names (`next.publish` has these commands too). Fill in `<published-name>` \
         (`registry.example/team/{name}`):\n\n    {}\n    {}\n\nor with podman, if the probe built with podman:\n\n    \
         {}\n    {}\n\nThen run `next.retest` with the same name: the same command with \
         `--image <published-name>@sha256:<digest>` in place of `--build-context`. It hands back the `checkfu harness add oci` \
         command that registers the image.\n",
        shown(program, &words),
        buildah.build,
        buildah.push,
        podman.build,
        podman.push
    )
}

/// This machine's busybox, when it is static (no program interpreter): a `FROM scratch`
/// image can run only that.
fn static_busybox() -> Option<PathBuf> {
    // Debian's busybox-static is /bin/busybox, which PATH may not list.
    let candidates =
        [PathBuf::from("/bin/busybox"), PathBuf::from("/usr/bin/busybox")].into_iter().chain(checkfu_wire_image::tools::on_path("busybox"));
    candidates.into_iter().find(|p| is_static_elf(p))
}

/// An ELF file whose program headers hold no `PT_INTERP` (64-bit, little-endian, as on the
/// machines this runs on; anything else is not taken).
fn is_static_elf(path: &Path) -> bool {
    use std::io::Read;
    let Ok(mut file) = std::fs::File::open(path) else { return false };
    // Enough for the header and the program headers of any busybox.
    let mut head = vec![0u8; 64 * 1024];
    let Ok(n) = file.read(&mut head) else { return false };
    let head = &head[..n];
    if head.len() < 64 || &head[..4] != b"\x7fELF" || head[4] != 2 || head[5] != 1 {
        return false;
    }
    let u16_at = |at: usize| u16::from_le_bytes([head[at], head[at + 1]]) as usize;
    let phoff = u64::from_le_bytes(head[32..40].try_into().unwrap_or([0; 8])) as usize;
    let (size, count) = (u16_at(54), u16_at(56));
    (0..count).all(|i| {
        let at = phoff.saturating_add(i.saturating_mul(size));
        match head.get(at..at + 4) {
            Some(kind) => u32::from_le_bytes(kind.try_into().unwrap_or([0; 4])) != 3,
            None => false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ACP scaffold declares no Checkfu extension, so it must take none: run with `sh`, it
    /// answers `initialize` without `checkfu.capabilities`, refuses a `session/new` that asks
    /// for resume state (naming the member), and starts one that asks for nothing.
    #[test]
    fn the_acp_scaffold_declares_nothing_and_refuses_what_it_does_not_serve() {
        use std::io::Write;
        let tmp = std::env::temp_dir().join(format!("checkfu-init-acp-{}", std::process::id()));
        std::fs::create_dir_all(&tmp).expect("tmp");
        let mut agent = std::process::Command::new("sh")
            .arg("-c")
            .arg(ACP_SCRIPT)
            .env("TMPDIR", &tmp)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .expect("sh");
        let lines = [
            r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[],"_meta":{"checkfu.continuity":"same_run_resume","checkfu.resume":{"version":1,"state":"x"}}}}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}"#,
        ];
        let mut stdin = agent.stdin.take().expect("stdin");
        for line in lines {
            writeln!(stdin, "{line}").expect("write");
        }
        drop(stdin);
        let output = agent.wait_with_output().expect("wait");
        let _ = std::fs::remove_dir_all(&tmp);
        let answers: Vec<serde_json::Value> =
            String::from_utf8_lossy(&output.stdout).lines().map(|l| serde_json::from_str(l).expect("one JSON message a line")).collect();
        assert_eq!(answers.len(), 3, "{answers:?}");
        assert!(answers[0]["result"].get("_meta").is_none(), "it declares nothing: {}", answers[0]);
        assert_eq!(answers[1]["error"]["code"], -32602, "{}", answers[1]);
        assert!(answers[1]["error"]["message"].as_str().is_some_and(|m| m.contains("checkfu.resume")), "{}", answers[1]);
        assert_eq!(answers[2]["result"]["sessionId"], "s-1", "{}", answers[2]);
    }

    #[test]
    fn the_readme_carries_the_test_the_publish_commands_and_the_retest() {
        let readme = readme(Kind::Oneshot, "custom-oneshot");
        assert!(readme.contains("    checkfu-wire probe \\\n      --name=custom-oneshot \\\n      --build-context=. \\\n"), "{readme}");
        assert!(readme.contains("      '--argv={prompt_path}' \\\n"), "{readme}");
        assert!(readme.contains("    buildah bud --isolation chroot --timestamp 0 --layers=false -t '<published-name>' .\n"), "{readme}");
        assert!(readme.contains("    buildah push '<published-name>' 'docker://<published-name>'\n"), "{readme}");
        assert!(readme.contains("    podman build --isolation chroot --timestamp 0 --layers=false -t '<published-name>' .\n"), "{readme}");
        let (program, words) = probe_command(Kind::Acp, "custom-acp", "./custom-acp");
        assert_eq!(
            command_line(program, &words),
            "checkfu-wire probe --name=custom-acp --build-context=./custom-acp --entrypoint=/opt/custom/bin/acp-agent \
             --protocol=acp-v1 --working-directory=/workspace"
        );
    }
}
