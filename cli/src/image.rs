//! `checkfu-wire image ls` and `checkfu-wire image prune`: the image store the probe keeps
//! of the images it ran by digest ([`checkfu_wire_image::store`]).

use std::path::PathBuf;

use checkfu_wire_image::store::{self, Store, StorePlan};
use checkfu_wire_image::{sha256_digest, Digest, ReferenceError};

#[derive(clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: Command,
    /// The store (default: `$XDG_CACHE_HOME/checkfu-wire/images`, else
    /// `~/.cache/checkfu-wire/images`), as `probe --image-cache` takes it.
    #[arg(long, value_name = "DIR", global = true)]
    image_cache: Option<PathBuf>,
    /// Stop listing or pruning after this many seconds (exit 2), as at a signal; an entry
    /// being removed then is removed whole or left for the next prune.
    #[arg(long, value_name = "SECONDS", global = true)]
    deadline: Option<f64>,
}

#[derive(clap::Subcommand)]
enum Command {
    /// List the stored images, least recently used first: digest, the reference first run,
    /// size on disk and last use (exit 0, 2 the store cannot be opened).
    Ls {
        /// Output format.
        #[arg(long, value_enum, default_value = "text")]
        format: crate::conform::Format,
    },
    /// Remove every stored image, or those of the digests given; an image a running probe
    /// holds stays (exit 0, 1 something could not be removed, 2 the store cannot be opened).
    Prune {
        /// Only these digests (`sha256:<64 hex>`).
        #[arg(value_name = "DIGEST", value_parser = digest)]
        digests: Vec<Digest>,
    },
}

fn digest(text: &str) -> Result<Digest, ReferenceError> {
    sha256_digest(text)
}

pub fn image(args: Args) -> i32 {
    let Some(dir) = args.image_cache.or_else(StorePlan::default_dir) else {
        return crate::usage_error("no image store: give --image-cache DIR (neither XDG_CACHE_HOME nor HOME is an absolute path)");
    };
    // The bound matters only when storing; listing and pruning never add.
    let deadline = match args.deadline.map(std::time::Duration::try_from_secs_f64).transpose() {
        Ok(seconds) => seconds.map(checkfu_wire_probe::Budget::after),
        Err(_) => return crate::usage_error("--deadline takes a number of seconds, 0 or more"),
    };
    let store = match Store::open(&StorePlan { dir, max_bytes: store::DEFAULT_MAX_BYTES }) {
        Ok(store) => store.with_budget(deadline),
        Err(e) => return crate::usage_error(e),
    };
    match args.command {
        Command::Ls { format } => ls(&store, format),
        Command::Prune { digests } => prune(&store, &digests),
    }
}

fn ls(store: &Store, format: crate::conform::Format) -> i32 {
    let listed = match store.list() {
        Ok(listed) => listed,
        Err(e) => return crate::usage_error(e),
    };
    if matches!(format, crate::conform::Format::Json) {
        let total: u64 = listed.iter().map(|l| l.disk_bytes).sum();
        let value = serde_json::json!({"store": store.dir(), "images": listed, "disk_bytes": total});
        println!("{value:#}");
        return 0;
    }
    println!("store {}", store.dir().display());
    for entry in &listed {
        if let Some(why) = &entry.skipped {
            println!("{}  skipped: not an entry of the user's own ({why}); never used or removed", entry.digest);
            continue;
        }
        let state = if entry.whole { "" } else { "  (not whole: removed by the next run of it)" };
        println!(
            "{}  {}  {}  used {} ago{state}",
            entry.digest,
            if entry.reference.is_empty() { "-" } else { &entry.reference },
            size(entry.disk_bytes),
            ago(store::age(entry.last_used).as_secs()),
        );
    }
    // Skipped names are not the user's images: not counted.
    let images = listed.iter().filter(|l| l.skipped.is_none()).count();
    println!("{images} image(s), {}", size(listed.iter().map(|l| l.disk_bytes).sum()));
    0
}

fn prune(store: &Store, digests: &[Digest]) -> i32 {
    match store.prune(digests) {
        Ok(pruned) => {
            for digest in &pruned.removed {
                println!("removed {digest}");
            }
            for digest in &pruned.in_use {
                println!("kept {digest}: a running probe holds it");
            }
            for (digest, why) in &pruned.skipped {
                println!("skipped {digest}: not an entry of the user's own ({why}); left as it is");
            }
            println!("{} image(s) removed, {} freed", pruned.removed.len(), size(pruned.freed_bytes));
            0
        }
        Err(e) => {
            eprintln!("error: {e}");
            1
        }
    }
}

/// Bytes in the largest binary unit that keeps a whole number above one.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    let mut value = bytes as f64;
    let mut unit = "B";
    for next in UNITS {
        if value < 1024.0 {
            break;
        }
        value /= 1024.0;
        unit = next;
    }
    if unit == "B" {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {unit}")
    }
}

fn ago(seconds: u64) -> String {
    match seconds {
        0..=119 => format!("{seconds} s"),
        120..=7199 => format!("{} min", seconds / 60),
        7200..=172_799 => format!("{} h", seconds / 3600),
        _ => format!("{} days", seconds / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_read_as_people_say_them() {
        assert_eq!(size(512), "512 B");
        assert_eq!(size(3 << 20), "3.0 MiB");
        assert_eq!(size(10 << 30), "10.0 GiB");
        assert_eq!(ago(5), "5 s");
        assert_eq!(ago(600), "10 min");
        assert_eq!(ago(3 * 86_400), "3 days");
    }
}
