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
    let name = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| String::from("custom"));
    let (script, entrypoint) = match args.kind {
        Kind::Oneshot => (ONESHOT_SCRIPT, ONESHOT_ENTRYPOINT),
        Kind::Acp => (ACP_SCRIPT, ACP_ENTRYPOINT),
    };
    let mut files: Vec<(&'static str, Vec<u8>, u32)> = vec![
        ("Dockerfile", dockerfile(args.base.as_deref(), entrypoint).into_bytes(), 0o644),
        ("entrypoint.sh", script.as_bytes().to_vec(), 0o755),
        ("README.md", readme(args.kind, &name, entrypoint).into_bytes(), 0o644),
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

fn readme(kind: Kind, name: &str, entrypoint: &str) -> String {
    let (protocol, flags) = match kind {
        Kind::Oneshot => (
            "oneshot-v1",
            "  --argv=--output-mode \\\n  --argv=stream_json \\\n  --argv=--prompt-path \\\n  --argv='{prompt_path}' \\\n  \
             --argv='{resume_flag}' \\\n  --prompt-transport argv_path \\\n  --output-mode stream_json \\\n  --resume-flag=--resume \\\n  \
             --output-schema-flag=--output-schema \\\n  --output-schema-transport argv_path \\\n",
        ),
        Kind::Acp => ("acp-v1", ""),
    };
    format!(
        "# {name}\n\nThe smallest {protocol} wrapper: `entrypoint.sh` answers through the model endpoint it is given \
         (`OPENAI_BASE_URL`, `OPENAI_API_KEY`). Replace its model call with your harness.\n\nTest the build context (an \
         ephemeral image on a loopback-only registry):\n\n    checkfu-wire probe \\\n  --name {name} \\\n  --build-context . \\\n  \
         --entrypoint {entrypoint} \\\n  --protocol {protocol} \\\n{flags}  --working-directory /workspace\n\nThen publish the \
         image and repeat the command with `--image <name>@sha256:<digest>` in place of `--build-context`, as the result's \
         `next.retest` says.\n"
    )
}

/// This machine's busybox, when it is static (no program interpreter): a `FROM scratch`
/// image can run only that.
fn static_busybox() -> Option<PathBuf> {
    // Debian's busybox-static is /bin/busybox, which PATH may not list.
    let candidates = [PathBuf::from("/bin/busybox"), PathBuf::from("/usr/bin/busybox")]
        .into_iter()
        .chain(checkfu_wire_probe::image::tools::on_path("busybox"));
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
