//! The confined unpacker: a layer's tar entries placed into the root filesystem by
//! directory descriptor, never by a path string joined onto the root.
//!
//! An entry's name, and a hard link's target, may hold no `..` ([`names`], checked before
//! anything is resolved). Each entry's parent is then found by the sandbox's one path
//! resolver, a name at a time ([`Root::walk`]): every step opens a single name beneath the
//! directory held, refusing symlinks, so the kernel keeps every lookup inside the root, and
//! a symlink on the way is followed as the container will see it, under the one `..` rule
//! of [`checkfu_wire_sandbox::root`] (an absolute target from the root, `..` at the root
//! staying there). The unpacker adds the directories it makes on the way and their ids.
//! The entry is then made in that directory by name, with its mode applied through the
//! new file's own descriptor.
//!
//! A directory whose image mode takes some of its owner's permission away (`0555`, `000`)
//! keeps it until every layer is in, so no later entry is stopped; only then is its mode
//! applied, by a walk that holds each directory by descriptor and never follows a symlink.
//! A later layer that replaced a parent with a symlink to a host directory therefore
//! changes nothing on the host.
//!
//! What the unpacker remembers is bounded by the entry cap, not by the paths' lengths:
//! a directory or an entry is known by a 128-bit id, sha256 chained over its components.

use std::collections::{HashMap, HashSet};
use std::ffi::{OsStr, OsString};
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;

use sha2::Digest as _;

use super::layout::{LayoutError, Limits, UnpackReport};
use super::reference::Digest;
use super::tarentry::{Composed, Composer, EntryType, TarError};
use checkfu_wire_sandbox::dir::{self as dirfd, Dir, Stat, Visit};
use checkfu_wire_sandbox::root::{names, Bounds, Root, WalkError};

/// Why an entry was refused: what [`LayoutError::Entry`] says of it.
#[derive(Debug, thiserror::Error)]
pub enum EntryProblem {
    /// What the tar reader refused.
    #[error(transparent)]
    Tar(#[from] TarError),
    #[error("a `..` component: the entry would leave the root")]
    DotDot,
    #[error("the path is {len} bytes, over the {cap}-byte cap")]
    PathTooLong { len: usize, cap: usize },
    #[error("a non-directory entry names the root")]
    NonDirectoryRoot,
    #[error("a whiteout names no file")]
    EmptyWhiteout,
    #[error("the image's files exceed the {cap}-byte cap")]
    TooManyBytes { cap: u64 },
    #[error("a link target of {len} bytes (1 to {cap} allowed)")]
    LinkTarget { len: usize, cap: usize },
    /// The target of a hard link, refused as an entry's own path would be.
    #[error("hard link target: {0}")]
    HardLinkTarget(#[source] Box<EntryProblem>),
    #[error("a hard link to the root")]
    HardLinkToRoot,
    #[error("a hard link to a directory")]
    HardLinkToDirectory,
    #[error("the hard link's target is not in the image")]
    HardLinkMissing,
    #[error("its parent resolves through more than {MAX_SYMLINK_HOPS} symlinks")]
    TooManySymlinks,
    #[error("its parent is a symlink with an over-long target")]
    LongSymlinkTarget,
    #[error("its parent `{0}` is not a directory")]
    ParentNotDirectory(String),
    #[error("more than {0} directories made for entries' parents")]
    TooManyParents(u64),
    #[error("its parent directory could not be made")]
    NoParent,
    /// The file system refused a step: `doing` says which.
    #[error("{doing}: {source}")]
    Io { doing: &'static str, source: io::Error },
}

/// An [`EntryProblem::Io`] for `doing`.
fn failed(doing: &'static str) -> impl Fn(io::Error) -> EntryProblem + Copy {
    move |source| EntryProblem::Io { doing, source }
}

/// Symlinks followed while resolving one entry's parent directory (Linux's `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;
/// The name that marks its directory opaque: lower layers' content below it is hidden.
const OPAQUE: &[u8] = b".wh..wh..opq";
/// The prefix of a file whiteout: `.wh.NAME` removes `NAME`.
const WHITEOUT: &[u8] = b".wh.";
/// The most of an entry's path an error shows, so that an error stays short.
const SHOWN_PATH_BYTES: usize = 256;
/// The owner's read, write and search bits, which every directory keeps while layers are
/// applied.
const OWNER_ALL: u32 = 0o700;

/// A path beneath the root, known by 128 bits of sha256 chained over its components (the
/// parent's id, then the name): 16 bytes whatever the path's length, and no two paths of
/// an image share one in practice.
type PathId = [u8; 16];
const ROOT_ID: PathId = [0; 16];

fn child_id(parent: &PathId, name: &[u8]) -> PathId {
    let mut hasher = sha2::Sha256::new();
    hasher.update(parent);
    hasher.update(name);
    let digest = hasher.finalize();
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    id
}

pub(super) struct Unpacker {
    root: Root,
    limits: Limits,
    pub(super) report: UnpackReport,
    /// Directories whose image mode lacks some of [`OWNER_ALL`], with that mode: they keep
    /// [`OWNER_ALL`] until [`Unpacker::finish`]. At most one per directory entry.
    restricted: HashMap<PathId, u32>,
    /// Directories made for entries' parents that no entry named: capped like entries.
    made_parents: u64,
    /// Decompressed bytes of the layers applied so far.
    pub(super) streamed: u64,
}

/// What the entries of one layer share while it is applied.
#[derive(Default)]
struct LayerState {
    /// What this layer placed: an opaque marker hides lower layers' content only.
    placed: HashSet<PathId>,
    /// Directories an opaque marker of this layer emptied: nothing of a lower layer is left
    /// below them, so no later marker walks them again.
    cleared: HashSet<PathId>,
    /// The last entry's parent: a layer lists a directory's entries together, and placing
    /// an entry in a directory cannot change the path to it, so the next entry with the same
    /// parents needs no new walk. Anything else forgets it.
    parent: Option<(Vec<OsString>, Dir, PathId)>,
}

/// What an entry wants at its path.
enum Kind {
    File,
    Directory,
    Symlink(OsString),
    HardLink(Vec<OsString>),
}

impl Unpacker {
    pub(super) fn new(root: Dir, limits: Limits) -> Unpacker {
        Unpacker {
            root: Root::from(root),
            limits,
            report: UnpackReport::default(),
            restricted: HashMap::new(),
            made_parents: 0,
            streamed: 0,
        }
    }

    pub(super) fn apply_layer(&mut self, stream: &mut dyn Read, layer: &Digest) -> Result<(), LayoutError> {
        let layer_error = |e: io::Error| LayoutError::Layer { layer: layer.clone(), problem: format!("not a readable tar stream: {e}") };
        let mut archive = tar::Archive::new(stream);
        let mut state = LayerState::default();
        // Raw records: the `tar` crate frames the stream, [`Composer`] reads the records
        // that describe an entry, each capped before it is read.
        let mut composer = Composer::default();
        let mut records: u64 = 0;
        for entry in archive.entries().map_err(layer_error)?.raw(true) {
            let mut entry = entry.map_err(layer_error)?;
            records += 1;
            if let Some(reason) = self.limits.stop_reason() {
                let problem = format!("{reason} while unpacking it, at entry {}", self.report.entries);
                return Err(LayoutError::Layer { layer: layer.clone(), problem });
            }
            // Describing records are capped with the entries: each is a header at least.
            if records > self.limits.max_entries.saturating_mul(4) {
                return Err(LayoutError::Layer {
                    layer: layer.clone(),
                    problem: format!("more than {} tar records", self.limits.max_entries.saturating_mul(4)),
                });
            }
            let refused =
                |path: String, problem: EntryProblem| LayoutError::Entry { layer: layer.clone(), path, problem: Box::new(problem) };
            let composed = match composer.next(&mut entry) {
                Ok(Some(composed)) => composed,
                Ok(None) => continue,
                Err(problem) => return Err(refused(self.shown_path(&entry.header().path_bytes()), problem.into())),
            };
            self.report.entries += 1;
            if self.report.entries > self.limits.max_entries {
                return Err(LayoutError::Layer { layer: layer.clone(), problem: format!("more than {} entries", self.limits.max_entries) });
            }
            let shown = self.shown_path(&composed.path);
            self.apply_entry(&mut state, composed, &mut entry).map_err(|problem| refused(shown, problem))?;
        }
        composer.finish().map_err(|problem| LayoutError::Layer { layer: layer.clone(), problem: problem.to_string() })
    }

    /// Places one composed entry of the layer (or applies its whiteout), reading its
    /// content from `content`.
    fn apply_entry(&mut self, state: &mut LayerState, composed: Composed, content: &mut dyn Read) -> Result<(), EntryProblem> {
        let raw = composed.path;
        if raw.len() > self.limits.max_path_bytes {
            return Err(EntryProblem::PathTooLong { len: raw.len(), cap: self.limits.max_path_bytes });
        }
        let components = normalize(&raw)?;
        let Some((name, parents)) = components.split_last() else {
            // `./` or `/`: the root itself, which we made.
            if composed.entry_type == EntryType::Directory {
                return Ok(());
            }
            return Err(EntryProblem::NonDirectoryRoot);
        };
        let name_bytes = name.as_bytes();
        if name_bytes == OPAQUE {
            state.parent = None;
            return self.opaque(parents, &state.placed, &mut state.cleared);
        }
        if let Some(hidden) = name_bytes.strip_prefix(WHITEOUT) {
            state.parent = None;
            return self.whiteout(parents, hidden);
        }
        let Some(kind) = self.kind_of(composed.entry_type, &composed.link)? else {
            return Ok(());
        };
        if matches!(kind, Kind::File) {
            self.report.bytes = self.report.bytes.saturating_add(composed.size);
            if self.report.bytes > self.limits.max_unpacked_bytes {
                return Err(EntryProblem::TooManyBytes { cap: self.limits.max_unpacked_bytes });
            }
        }
        if !matches!(&state.parent, Some((cached, _, _)) if cached.as_slice() == parents) {
            let (dir, id) = self.make_dir(parents)?;
            state.parent = Some((parents.to_vec(), dir, id));
        }
        let Some((_, dir, dir_id)) = &state.parent else {
            return Err(EntryProblem::NoParent);
        };
        let id = child_id(dir_id, name_bytes);
        self.place(dir, name, id, kind, composed.mode, content)?;
        state.placed.insert(id);
        Ok(())
    }

    /// At most [`SHOWN_PATH_BYTES`] of an entry's path, for an error, marked where cut.
    fn shown_path(&self, raw: &[u8]) -> String {
        let shown_bytes = raw.len().min(self.limits.max_path_bytes).min(SHOWN_PATH_BYTES);
        let mut shown = String::from_utf8_lossy(&raw[..shown_bytes]).into_owned();
        if shown_bytes < raw.len().min(self.limits.max_path_bytes) {
            shown.push('…');
        }
        shown
    }

    /// An opaque marker in `parents`: what lower layers put in that directory goes, what
    /// this layer `placed` stays. A directory this layer already emptied, or one below it,
    /// holds nothing of a lower layer: it is not walked again, so the markers of a layer
    /// cost no more than the entries it holds, however they nest or repeat.
    fn opaque(&mut self, parents: &[OsString], placed: &HashSet<PathId>, cleared: &mut HashSet<PathId>) -> Result<(), EntryProblem> {
        let (dir, chain) = self.resolve_chain(parents, true)?.ok_or(EntryProblem::NoParent)?;
        self.report.opaque_directories += 1;
        if chain.iter().any(|id| cleared.contains(id)) {
            return Ok(());
        }
        let id = chain.last().copied().unwrap_or(ROOT_ID);
        // Until a pass removes nothing: where removing an entry moves the positions of
        // those after it (tmpfs before Linux 6.6), a pass may step over some.
        loop {
            let mut clear = ClearLower { placed, cleared, removed: 0, visited: 0 };
            let top = dir.duplicate().map_err(failed("emptying the opaque directory"))?;
            dirfd::walk(top, id, &mut clear).map_err(failed("emptying the opaque directory"))?;
            self.report.opaque_visits += clear.visited;
            if clear.removed == 0 {
                break;
            }
        }
        cleared.insert(id);
        Ok(())
    }

    /// A whiteout of `hidden` in `parents`: it goes, if a lower layer put it there.
    fn whiteout(&mut self, parents: &[OsString], hidden: &[u8]) -> Result<(), EntryProblem> {
        if hidden.is_empty() || hidden == b"." || hidden == b".." {
            return Err(EntryProblem::EmptyWhiteout);
        }
        if let Some((dir, _)) = self.resolve_dir(parents, false)? {
            remove_any(&dir, OsStr::from_bytes(hidden)).map_err(failed("applying the whiteout"))?;
        }
        self.report.whiteouts += 1;
        Ok(())
    }

    /// What an entry of `entry_type` wants at its path; `None` for an entry that places
    /// nothing (a device node or FIFO, which an unprivileged sandbox cannot make).
    fn kind_of(&mut self, entry_type: EntryType, target: &[u8]) -> Result<Option<Kind>, EntryProblem> {
        let kind = match entry_type {
            EntryType::File => Kind::File,
            EntryType::Directory => Kind::Directory,
            EntryType::Symlink | EntryType::HardLink => {
                if target.is_empty() || target.len() > self.limits.max_path_bytes {
                    return Err(EntryProblem::LinkTarget { len: target.len(), cap: self.limits.max_path_bytes });
                }
                if entry_type == EntryType::Symlink {
                    // A symlink's target may be anything: nothing is ever written through one
                    // without resolving it inside the root.
                    Kind::Symlink(OsStr::from_bytes(target).to_owned())
                } else {
                    Kind::HardLink(normalize(target).map_err(|p| EntryProblem::HardLinkTarget(Box::new(p)))?)
                }
            }
            EntryType::Special => {
                self.report.skipped_special += 1;
                return Ok(None);
            }
        };
        Ok(Some(kind))
    }

    /// Makes `name` in `dir` what the entry says, replacing what a lower layer put there
    /// (a directory stays a directory). Every mode is applied through the new entry's own
    /// descriptor.
    fn place(&mut self, dir: &Dir, name: &OsStr, id: PathId, kind: Kind, mode: u32, content: &mut dyn Read) -> Result<(), EntryProblem> {
        let existing = match dir.stat_at(name) {
            Ok(stat) => Some(stat),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(failed("reading what is there")(e)),
        };
        let keep_dir = matches!(kind, Kind::Directory) && existing.as_ref().is_some_and(Stat::is_dir);
        if existing.is_some() && !keep_dir {
            remove_any(dir, name).map_err(failed("replacing what a lower layer put there"))?;
        }
        if !matches!(kind, Kind::Directory) {
            self.restricted.remove(&id);
        }
        let written = match kind {
            Kind::Directory => {
                self.report.directories += 1;
                // setuid and setgid are dropped; the sticky bit is kept.
                let image_mode = mode & 0o1777;
                let made = if keep_dir { Ok(()) } else { dir.mkdir_at(name, 0o700) };
                let chmod = made.and_then(|()| dir.open_child(name)).and_then(|made| made.chmod(image_mode | OWNER_ALL));
                if image_mode & OWNER_ALL == OWNER_ALL {
                    self.restricted.remove(&id);
                } else {
                    self.restricted.insert(id, image_mode);
                }
                chmod
            }
            Kind::File => {
                self.report.files += 1;
                dir.create_file(name, 0o600).and_then(|mut file| {
                    io::copy(content, &mut file)?;
                    file.set_permissions(std::fs::Permissions::from_mode(mode & 0o777))
                })
            }
            Kind::Symlink(target) => {
                self.report.symlinks += 1;
                dir.symlink_at(&target, name)
            }
            Kind::HardLink(target) => {
                self.report.hard_links += 1;
                let Some((target_name, target_parents)) = target.split_last() else {
                    return Err(EntryProblem::HardLinkToRoot);
                };
                let Some((source, _)) = self.resolve_dir(target_parents, false).map_err(|p| EntryProblem::HardLinkTarget(Box::new(p)))?
                else {
                    return Err(EntryProblem::HardLinkMissing);
                };
                match source.stat_at(target_name) {
                    Ok(stat) if stat.is_dir() => return Err(EntryProblem::HardLinkToDirectory),
                    Ok(_) => dir.hard_link_at(&source, target_name, name),
                    Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(EntryProblem::HardLinkMissing),
                    Err(e) => Err(e),
                }
            }
        };
        written.map_err(failed("writing"))
    }

    /// The directory `components` name, inside the root, and its id: symlinks on the way are
    /// followed as the container would see them, under the one rule of
    /// [`checkfu_wire_sandbox::root`] (an absolute target from the root, `..` at the root
    /// staying there). Missing directories are made when
    /// `create`, otherwise `None` is returned for them. Every step opens one name beneath a
    /// directory we hold, refusing symlinks, so nothing is resolved outside the root.
    fn resolve_dir(&mut self, components: &[OsString], create: bool) -> Result<Option<(Dir, PathId)>, EntryProblem> {
        let resolved = self.resolve_chain(components, create)?;
        Ok(resolved.map(|(dir, chain)| (dir, chain.last().copied().unwrap_or(ROOT_ID))))
    }

    /// [`Unpacker::resolve_dir`], with the ids of the directories from the root's child
    /// down to the one resolved (empty for the root). The rule is the sandbox's
    /// ([`Root::walk`]); what is done here is what the unpacker adds to it: each directory's
    /// id, and the missing ones made.
    fn resolve_chain(&mut self, components: &[OsString], create: bool) -> Result<Option<(Dir, Vec<PathId>)>, EntryProblem> {
        let opening = failed("opening its parent directory");
        let path: PathBuf = components.iter().collect();
        let bounds = Bounds { links: MAX_SYMLINK_HOPS, target_bytes: self.limits.max_path_bytes };
        let mut walk = self.root.walk(&path, bounds).map_err(opening)?;
        // The ids of the directories walked into, beneath the root, as deep as the walk is.
        let mut chain: Vec<PathId> = Vec::new();
        while let Some(component) = walk.next_name().map_err(walk_problem)? {
            chain.truncate(walk.depth());
            let id = child_id(chain.last().unwrap_or(&ROOT_ID), component.as_bytes());
            match walk.dir().stat_at(&component) {
                Ok(stat) if stat.is_symlink() => walk.follow(&component).map_err(walk_problem)?,
                Ok(stat) if stat.is_dir() => {
                    walk.enter(&component).map_err(opening)?;
                    chain.push(id);
                }
                Ok(_) => return Err(EntryProblem::ParentNotDirectory(shown_name(&component))),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if !create {
                        return Ok(None);
                    }
                    self.made_parents += 1;
                    if self.made_parents > self.limits.max_entries {
                        return Err(EntryProblem::TooManyParents(self.limits.max_entries));
                    }
                    walk.dir().mkdir_at(&component, 0o755).map_err(failed("making its parent directory"))?;
                    // A directory removed and made again is no longer the one whose mode
                    // was recorded.
                    self.restricted.remove(&id);
                    walk.enter(&component).map_err(opening)?;
                    chain.push(id);
                }
                Err(e) => return Err(failed("reading its parent")(e)),
            }
        }
        chain.truncate(walk.depth());
        Ok(Some((walk.into_dir(), chain)))
    }

    /// [`Unpacker::resolve_dir`], making what is missing.
    fn make_dir(&mut self, components: &[OsString]) -> Result<(Dir, PathId), EntryProblem> {
        self.resolve_dir(components, true)?.ok_or(EntryProblem::NoParent)
    }

    /// Gives the directories that were kept writable their image modes: a walk of the root
    /// by descriptor, children first, so a read-only parent does not stop its children's
    /// changes. A directory a later layer replaced (by a symlink to anywhere) is not
    /// entered: the walk never follows a symlink.
    pub(super) fn finish(self) -> Result<UnpackReport, LayoutError> {
        if !self.restricted.is_empty() {
            let root = self.root.dir().duplicate().map_err(io_error)?;
            dirfd::walk(root, ROOT_ID, &mut Restrict { modes: &self.restricted }).map_err(io_error)?;
        }
        Ok(self.report)
    }
}

/// What a walk's refusal is, for an entry.
fn walk_problem(error: WalkError) -> EntryProblem {
    match error {
        WalkError::TooManySymlinks(_) => EntryProblem::TooManySymlinks,
        WalkError::LongTarget(_) => EntryProblem::LongSymlinkTarget,
        WalkError::Moved => failed("walking to its parent")(io::Error::other(error)),
        WalkError::Io(e) => failed("reading a symlink on its path")(e),
    }
}

fn io_error(source: io::Error) -> LayoutError {
    LayoutError::Io { context: "setting directory modes in the root filesystem".to_owned(), source }
}

fn shown_name(name: &OsStr) -> String {
    let bytes = name.as_bytes();
    String::from_utf8_lossy(&bytes[..bytes.len().min(SHOWN_PATH_BYTES)]).into_owned()
}

/// An entry path made relative: `/` and `.` components dropped, `..` refused ([`names`],
/// for an entry's own path and for a hard link's target alike).
fn normalize(raw: &[u8]) -> Result<Vec<OsString>, EntryProblem> {
    let names = names(raw).map_err(|_| EntryProblem::DotDot)?;
    Ok(names.into_iter().map(OsStr::to_owned).collect())
}

/// Removes whatever `name` in `dir` is (a directory with its content), never following a
/// symlink.
fn remove_any(dir: &Dir, name: &OsStr) -> io::Result<()> {
    dirfd::remove_at(dir, name)
}

/// Removes from an opaque directory everything this layer did not place; directories this
/// layer placed are kept and cleared the same way (an opaque directory hides everything
/// lower layers put below it).
struct ClearLower<'a> {
    placed: &'a HashSet<PathId>,
    /// Directories an earlier marker of this layer emptied: not entered.
    cleared: &'a HashSet<PathId>,
    /// Entries removed in this pass.
    removed: u64,
    /// Names looked at in this pass.
    visited: u64,
}

impl Visit for ClearLower<'_> {
    type Level = PathId;

    fn child(&mut self, dir: &Dir, level: &PathId, name: &OsStr, stat: &Stat) -> io::Result<Option<PathId>> {
        self.visited += 1;
        let id = child_id(level, name.as_bytes());
        if !self.placed.contains(&id) {
            remove_any(dir, name)?;
            self.removed += 1;
            return Ok(None);
        }
        Ok((stat.is_dir() && !self.cleared.contains(&id)).then_some(id))
    }

    fn leave(&mut self, _: &Dir, _: PathId, _: Option<&Dir>) -> io::Result<()> {
        Ok(())
    }
}

/// Applies the recorded modes, each through the descriptor of the directory it is for.
struct Restrict<'a> {
    modes: &'a HashMap<PathId, u32>,
}

impl Visit for Restrict<'_> {
    type Level = PathId;

    fn child(&mut self, _: &Dir, level: &PathId, name: &OsStr, stat: &Stat) -> io::Result<Option<PathId>> {
        Ok(stat.is_dir().then(|| child_id(level, name.as_bytes())))
    }

    fn leave(&mut self, dir: &Dir, id: PathId, _: Option<&Dir>) -> io::Result<()> {
        match self.modes.get(&id) {
            Some(mode) => dir.chmod(*mode),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture::*;
    use super::super::reference::digest_of;
    use super::super::Limits;
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    #[test]
    fn layers_apply_in_order_with_file_and_opaque_whiteouts() {
        let fixture = Fixture::new();
        let lower = tar_of(|t| {
            dir(t, "etc/", 0o755);
            file(t, "etc/a", 0o644, b"a");
            file(t, "/etc/b", 0o600, b"b");
            dir(t, "./data/x/", 0o755);
            file(t, "data/x/y", 0o755, b"y");
            dir(t, "data/x/sub/", 0o755);
            file(t, "data/x/sub/deep", 0o644, b"deep");
            file(t, "bin/tool", 0o4755, b"#!");
            link(t, tar::EntryType::Symlink, "bin/sh", "tool");
            link(t, tar::EntryType::Link, "bin/hard", "bin/tool");
            dir(t, "ro/", 0o555);
            file(t, "ro/inside", 0o444, b"r");
            entry(t, tar::EntryType::Fifo, b"dev/fifo", 0o644, b"", b"");
            entry(t, tar::EntryType::Char, b"dev/null", 0o666, b"", b"");
        });
        let upper = tar_of(|t| {
            file(t, "etc/.wh.a", 0, b"");
            // Placed by this layer before the marker: the marker hides lower content only.
            file(t, "data/x/new", 0o640, b"new");
            file(t, "data/x/.wh..wh..opq", 0, b"");
            file(t, "ro/later", 0o644, b"l");
        });
        fixture.image(&[(lower, GZIP), (upper, TAR)]);
        let report = fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!((report.layers, report.whiteouts, report.opaque_directories, report.skipped_special), (2, 1, 1, 2));
        assert_eq!((report.symlinks, report.hard_links), (1, 1));
        assert!(!fixture.root("etc/a").exists());
        assert_eq!(fs::read(fixture.root("etc/b")).unwrap(), b"b");
        assert_eq!(mode(&fixture.root("etc/b")), 0o600);
        assert!(!fixture.root("data/x/y").exists() && !fixture.root("data/x/sub").exists());
        assert_eq!(fs::read(fixture.root("data/x/new")).unwrap(), b"new");
        assert_eq!(mode(&fixture.root("data/x/new")), 0o640);
        // setuid is dropped, the exec bits kept.
        assert_eq!(mode(&fixture.root("bin/tool")), 0o755);
        assert_eq!(fs::read_link(fixture.root("bin/sh")).unwrap(), Path::new("tool"));
        use std::os::unix::fs::MetadataExt;
        assert_eq!(fs::metadata(fixture.root("bin/hard")).unwrap().ino(), fs::metadata(fixture.root("bin/tool")).unwrap().ino());
        // A read-only directory got its mode at the end, after a later layer wrote into it.
        assert_eq!(mode(&fixture.root("ro")), 0o555);
        assert_eq!(fs::read(fixture.root("ro/later")).unwrap(), b"l");
        assert!(!fixture.root("dev/fifo").exists() && !fixture.root("dev/null").exists());
        // And the lane removes such a tree, read-only directories included.
        let rootfs = fixture.rootfs.path().to_owned();
        super::super::remove_tree(&rootfs).expect("remove");
        assert!(!rootfs.exists());
    }

    #[test]
    fn opaque_markers_cost_what_their_layer_holds() {
        // 200 files at the bottom of a chain 30 directories deep, then a marker in every
        // directory of the chain, deepest first, then each repeated: without the record
        // of what the layer already emptied, each marker walks everything below it again
        // (30 x 200 visits and more).
        let depth = 30;
        let chain: Vec<String> = (1..=depth).map(|n| vec!["a"; n].join("/")).collect();
        let lower = tar_of(|t| file(t, &format!("{}/lower", chain[depth - 1]), 0o644, b"l"));
        let upper = tar_of(|t| {
            for path in &chain {
                dir(t, &format!("{path}/"), 0o755);
            }
            for n in 0..200 {
                file(t, &format!("{}/f{n}", chain[depth - 1]), 0o644, b"u");
            }
            for _ in 0..2 {
                for dir in chain.iter().rev() {
                    file(t, &format!("{dir}/.wh..wh..opq"), 0, b"");
                }
            }
        });
        let fixture = Fixture::new();
        fixture.image(&[(lower, TAR), (upper, TAR)]);
        let report = fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!(report.opaque_directories, 2 * depth as u64);
        assert!(!fixture.root(&format!("{}/lower", chain[depth - 1])).exists());
        assert!(fixture.root(&format!("{}/f199", chain[depth - 1])).is_file());
        // The deepest marker looks at its 201 names, and at the 200 left in a second pass
        // (its first removed one); each shallower one at its one subdirectory, which it
        // does not enter; no repeat looks at anything.
        assert_eq!(report.opaque_visits, 201 + 200 + (depth as u64 - 1), "{} visits", report.opaque_visits);
    }

    #[test]
    fn a_dotdot_entry_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| file(t, "a/../../escaped", 0o644, b"x"));
        let layer_digest = digest_of(&gzip(&layer));
        fixture.image(&[(layer, GZIP)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert_eq!(error, format!("layer {layer_digest}, entry `a/../../escaped`: a `..` component: the entry would leave the root"));
        let outside = fixture.rootfs.path().parent().unwrap().join("escaped");
        assert!(!outside.exists());
    }

    #[test]
    fn nothing_is_written_through_a_symlink_out_of_the_root() {
        let outside = tempfile::tempdir().unwrap();
        let fixture = Fixture::new();
        let climbing = format!("..{}", "/..".repeat(20));
        let lower = tar_of(|t| {
            link(t, tar::EntryType::Symlink, "up", &climbing);
            link(t, tar::EntryType::Symlink, "abs", &outside.path().display().to_string());
            link(t, tar::EntryType::Symlink, "file-link", &outside.path().join("victim").display().to_string());
        });
        let upper = tar_of(|t| {
            // An absolute target is the container's view: it lands inside the root.
            file(t, "abs/inside", 0o644, b"x");
            // The final component is replaced, never opened through the symlink.
            file(t, "file-link", 0o644, b"x");
        });
        fixture.image(&[(lower.clone(), TAR), (upper, TAR)]);
        fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing outside");
        let inside = fixture.root(format!("{}/inside", outside.path().display()).trim_start_matches('/'));
        assert_eq!(fs::read(inside).unwrap(), b"x");
        assert!(fs::symlink_metadata(fixture.root("file-link")).unwrap().is_file());

        // A relative climb stops at the root, as in the container: the entry lands there.
        let fixture = Fixture::new();
        let upper = tar_of(|t| file(t, "up/pwned", 0o644, b"x"));
        fixture.image(&[(lower, TAR), (upper, TAR)]);
        fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!(fs::read(fixture.root("pwned")).unwrap(), b"x");
        assert!(!fixture.rootfs.path().parent().unwrap().join("pwned").exists(), "nothing above the root");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing outside");
    }

    #[test]
    fn a_hard_link_out_of_the_root_or_to_nothing_is_refused() {
        let fixture = Fixture::new();
        let layer = tar_of(|t| link(t, tar::EntryType::Link, "l", "../../etc/passwd"));
        fixture.image(&[(layer, TAR)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.ends_with("entry `l`: hard link target: a `..` component: the entry would leave the root"), "{error}");
        let fixture = Fixture::new();
        fixture.image(&[(tar_of(|t| link(t, tar::EntryType::Link, "l", "/etc/passwd")), TAR)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.ends_with("entry `l`: the hard link's target is not in the image"), "{error}");
    }

    #[test]
    fn no_mode_lands_through_a_later_layers_symlink() {
        // A lower layer makes `a/locked` (000) and `a/open` (777); an upper layer replaces
        // `a` by a symlink to a directory outside the root that holds the same names. The
        // modes must land on the image's directories, or nowhere: never on the canaries.
        let outside = tempfile::tempdir().unwrap();
        for name in ["locked", "open", "ro"] {
            fs::create_dir(outside.path().join(name)).unwrap();
            fs::set_permissions(outside.path().join(name), fs::Permissions::from_mode(0o750)).unwrap();
        }
        let fixture = Fixture::new();
        let lower = tar_of(|t| {
            dir(t, "a/", 0o755);
            dir(t, "a/locked/", 0o000);
            dir(t, "a/open/", 0o777);
            dir(t, "a/ro/", 0o555);
        });
        let upper = tar_of(|t| {
            link(t, tar::EntryType::Symlink, "a", &outside.path().display().to_string());
            // And a relative climb, replacing a directory whose mode is still pending.
            dir(t, "b/", 0o500);
        });
        let top = tar_of(|t| link(t, tar::EntryType::Symlink, "b", "../../../../../../../../../.."));
        fixture.image(&[(lower, TAR), (upper, GZIP), (top, TAR)]);
        fixture.unpack(Limits::default()).expect("unpack");
        for name in ["locked", "open", "ro"] {
            assert_eq!(mode(&outside.path().join(name)), 0o750, "the canary {name} kept its mode");
        }
        assert!(fs::symlink_metadata(fixture.root("a")).unwrap().file_type().is_symlink());
        assert!(fs::symlink_metadata(fixture.root("b")).unwrap().file_type().is_symlink());
    }

    #[test]
    fn a_parent_replaced_within_a_layer_is_resolved_again() {
        let outside = tempfile::tempdir().unwrap();
        let fixture = Fixture::new();
        let layer = tar_of(|t| {
            dir(t, "a/", 0o755);
            file(t, "a/x", 0o644, b"x");
            link(t, tar::EntryType::Symlink, "a", "b");
            dir(t, "b/", 0o755);
            file(t, "a/y", 0o644, b"y");
            link(t, tar::EntryType::Symlink, "b", &outside.path().display().to_string());
            file(t, "a/z", 0o644, b"z");
        });
        fixture.image(&[(layer, TAR)]);
        fixture.unpack(Limits::default()).expect("unpack");
        assert!(fs::read(fixture.root("b/y")).is_err(), "b was replaced by a symlink");
        let inside = fixture.root(outside.path().display().to_string().trim_start_matches('/'));
        assert_eq!(fs::read(inside.join("z")).unwrap(), b"z");
        assert_eq!(fs::read_dir(outside.path()).unwrap().count(), 0, "nothing outside");
    }

    #[test]
    fn modes_land_on_the_image_directories_once_every_layer_is_in() {
        let fixture = Fixture::new();
        let lower = tar_of(|t| {
            dir(t, "x/", 0o000);
            dir(t, "x/y/", 0o500);
            dir(t, "sticky/", 0o1777);
            dir(t, "suid/", 0o6755);
        });
        let upper = tar_of(|t| {
            file(t, "x/y/z", 0o644, b"z");
            // Removed and made again as a parent: the recorded mode was for the old one.
            file(t, "x/.wh.y", 0, b"");
            file(t, "x/y/again", 0o644, b"a");
        });
        fixture.image(&[(lower, TAR), (upper, TAR)]);
        fixture.unpack(Limits::default()).expect("unpack");
        assert_eq!(mode(&fixture.root("sticky")), 0o1777);
        assert_eq!(mode(&fixture.root("suid")), 0o755);
        assert_eq!(mode(&fixture.root("x")), 0o000);
        fs::set_permissions(fixture.root("x"), fs::Permissions::from_mode(0o700)).unwrap();
        assert_eq!(mode(&fixture.root("x/y")), 0o755);
        assert_eq!(fs::read(fixture.root("x/y/again")).unwrap(), b"a");
        super::super::remove_tree(fixture.rootfs.path()).expect("removed");
    }

    #[test]
    fn an_entry_path_in_an_error_is_short() {
        let fixture = Fixture::new();
        let long = format!("{}/../x", "n".repeat(3000));
        let mut layer = tar::Builder::new(Vec::new());
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_mode(0o644);
        header.set_size(0);
        layer.append_data(&mut header, "placeholder", &b""[..]).unwrap();
        // The `tar` crate refuses `..` in a long name too: write the GNU record by hand.
        let mut bytes = layer.into_inner().unwrap();
        bytes.truncate(bytes.len() - 1024);
        let mut record = long.clone().into_bytes();
        record.push(0);
        let mut long_header = tar::Header::new_gnu();
        long_header.as_gnu_mut().unwrap().name[..13].copy_from_slice(b"././@LongLink");
        long_header.set_entry_type(tar::EntryType::GNULongName);
        long_header.set_size(record.len() as u64);
        long_header.set_cksum();
        bytes.extend_from_slice(long_header.as_bytes());
        record.resize(record.len().div_ceil(512) * 512, 0);
        bytes.extend(record);
        let mut file_header = tar::Header::new_gnu();
        file_header.as_gnu_mut().unwrap().name[..1].copy_from_slice(b"x");
        file_header.set_entry_type(tar::EntryType::Regular);
        file_header.set_size(0);
        file_header.set_cksum();
        bytes.extend_from_slice(file_header.as_bytes());
        bytes.extend([0u8; 1024]);
        fixture.image(&[(bytes, TAR)]);
        let error = fixture.unpack(Limits::default()).unwrap_err().to_string();
        assert!(error.len() <= 1024 && error.contains("nnnn…`"), "{} bytes: {error}", error.len());
        assert!(error.ends_with("a `..` component: the entry would leave the root"), "{error}");
    }
}
