//! File outputs that never lose what was there and never alias an input.
//!
//! An [`Output`] writes to a temporary file created exclusively in the
//! target's directory (never following a symlink) and renames it over the
//! target on [`Output::commit`]; dropped without a commit, the temporary
//! file is removed and the old target is untouched. A run that failed or
//! was stopped ends with [`Output::commit_partial`]: its output replaces
//! nothing that existed (it is kept beside, `NAME.partial`). The target is
//! never created before the commit, so a process killed mid-run leaves no
//! empty target. While it is open the target is locked (`flock` on a lock
//! file beside it, `.NAME.sluice-lock`, removed at the end), so a second
//! writer of the same path is refused rather than silently losing one
//! run's output. A target that is a symbolic link is refused: renaming
//! over it would replace the link, writing through it would write
//! somewhere the user did not name.
//!
//! A target that exists and is not a regular file is never replaced: a
//! character device (`/dev/null`) or a FIFO is written in place, unlocked
//! (two runs may both write to `/dev/null`), and committing only flushes;
//! a block device, a socket or a directory is refused.
//!
//! [`check_paths`] compares, before any work starts, every output with
//! every input and with every other output (same device and inode once
//! resolved, or the same path for outputs that do not exist yet).

use rustix::fs::{flock, FlockOperation};
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Why an output cannot be written; every variant names the path.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    #[error("{path}: {error}")]
    Io { path: String, error: io::Error },
    #[error("{path} is a symbolic link: name the file itself")]
    Symlink { path: String },
    #[error("{path} is being written by another process")]
    Locked { path: String },
    #[error("output {output} is also the input {input}: writing it would destroy the input")]
    AliasesInput { output: String, input: String },
    #[error("{first} and {second} name the same output")]
    SameOutput { first: String, second: String },
    #[error("{path} is a {kind}, not a regular file: name a file, a character device or a FIFO")]
    NotAFile { path: String, kind: &'static str },
}

impl OutputError {
    fn io(path: &Path, error: io::Error) -> Self {
        OutputError::Io {
            path: path.display().to_string(),
            error,
        }
    }
}

/// A file being written, renamed over its target on commit (or, for a
/// character device or FIFO, written in place).
pub struct Output {
    target: PathBuf,
    state: State,
    /// The lock file, held until the output ends, and its path.
    lock: Option<(File, PathBuf)>,
    /// The target existed when the output was made.
    existed: bool,
    /// Earlier runs' output found left behind, and where it was put.
    rescued: Vec<PathBuf>,
}

/// Where an output's bytes go until it ends.
enum State {
    /// A hidden temporary file beside the target.
    Hidden(tempfile::NamedTempFile),
    /// A character device or FIFO, written where it is.
    InPlace(File),
    /// A log, readable while it is written: the target itself when it did
    /// not exist (`over` None), else `TARGET.partial`, renamed over the
    /// target on commit.
    Visible {
        file: File,
        at: PathBuf,
        over: Option<PathBuf>,
    },
    /// Committed.
    Done,
}

impl Output {
    /// Prepares `target`: refuses a symlink, locks the target, creates the
    /// temporary file beside it; opens a character device or FIFO in place.
    pub fn create(target: &Path) -> Result<Output, OutputError> {
        Self::open(target, false)
    }

    /// Prepares a log `target` that can be read while it is written
    /// (`tail -f`): written in place when nothing is there, else into
    /// `TARGET.partial`, which replaces the target only on commit (see
    /// [`Output::writing_to`]). Otherwise as [`Output::create`].
    pub fn create_log(target: &Path) -> Result<Output, OutputError> {
        Self::open(target, true)
    }

    fn open(target: &Path, visible: bool) -> Result<Output, OutputError> {
        use std::os::unix::fs::FileTypeExt;
        let fail = |e| OutputError::io(target, e);
        if let Ok(m) = fs::symlink_metadata(target) {
            let t = m.file_type();
            if t.is_symlink() {
                // /dev/stdout and its kin: a link to this process's own
                // descriptor, written in place when it is a terminal,
                // a device or a pipe.
                if let Some(file) = std_stream(target) {
                    return Ok(Output::in_place(target, file));
                }
                return Err(OutputError::Symlink {
                    path: target.display().to_string(),
                });
            }
            if t.is_fifo() {
                return Ok(Output::in_place(target, open_fifo(target)?));
            }
            if t.is_char_device() {
                let file = OpenOptions::new()
                    .write(true)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(target)
                    .map_err(fail)?;
                return Ok(Output::in_place(target, file));
            }
            let kind = if t.is_block_device() {
                Some("block device")
            } else if t.is_socket() {
                Some("socket")
            } else if t.is_dir() {
                Some("directory")
            } else {
                None
            };
            if let Some(kind) = kind {
                return Err(OutputError::NotAFile {
                    path: target.display().to_string(),
                    kind,
                });
            }
        }
        let existed = target.exists();
        let dir = parent_dir(target);
        let name = target
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let lock = lock_beside(dir, &name, target)?;
        // The lock is ours: a temporary file of this target is an earlier
        // writer's that died (a live one holds the lock).
        let rescued = rescue_stale(dir, &name, target);
        // Like File::create: 0666 less the umask, or the mode of the file
        // it replaces.
        let mode = fs::metadata(target)
            .ok()
            .filter(|_| existed)
            .map_or(0o666, |m| m.mode() & 0o7777);
        let state = if visible {
            let (at, over) = if existed {
                let at = free_partial(target).ok_or_else(|| no_partial(target))?;
                (at, Some(target.to_path_buf()))
            } else {
                (target.to_path_buf(), None)
            };
            let file = OpenOptions::new()
                .write(true)
                .create(true)
                .truncate(true)
                .mode(mode)
                .custom_flags(libc::O_NOFOLLOW)
                .open(&at)
                .map_err(|e| OutputError::io(&at, e))?;
            State::Visible { file, at, over }
        } else {
            let tmp = tempfile::Builder::new()
                .prefix(&format!(".{name}."))
                .suffix(TMP_SUFFIX)
                .permissions(fs::Permissions::from_mode(mode))
                .tempfile_in(dir);
            State::Hidden(tmp.map_err(fail)?)
        };
        Ok(Output {
            target: target.to_path_buf(),
            state,
            lock: Some(lock),
            existed,
            rescued,
        })
    }

    /// A character device, FIFO or pipe, written where it is: unlocked,
    /// nothing to rename.
    fn in_place(target: &Path, file: File) -> Output {
        Output {
            target: target.to_path_buf(),
            state: State::InPlace(file),
            lock: None,
            existed: true,
            rescued: Vec::new(),
        }
    }

    /// The target this output is for.
    pub fn target(&self) -> &Path {
        &self.target
    }

    /// Where a log is written while the run lasts (the target, or
    /// `TARGET.partial` when a file was there); the target for the rest.
    pub fn writing_to(&self) -> &Path {
        match &self.state {
            State::Visible { at, .. } => at,
            _ => &self.target,
        }
    }

    /// Output of earlier runs that were killed before they ended, found
    /// beside the target and kept under these names.
    pub fn rescued(&self) -> &[PathBuf] {
        &self.rescued
    }

    /// The file to write into.
    pub fn file(&mut self) -> &mut File {
        match &mut self.state {
            State::Hidden(t) => t.as_file_mut(),
            State::InPlace(f) | State::Visible { file: f, .. } => f,
            State::Done => unreachable!("only a commit ends the output, and it takes it"),
        }
    }

    /// Syncs what was written and renames it over the target (a device or
    /// FIFO written in place has nothing to rename).
    pub fn commit(mut self) -> Result<(), OutputError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::InPlace(mut f) => {
                io::Write::flush(&mut f).map_err(|e| OutputError::io(&self.target, e))
            }
            State::Hidden(tmp) => {
                let target = self.target.clone();
                persist(tmp, &target)
            }
            State::Visible { file, at, over } => {
                file.sync_data().map_err(|e| OutputError::io(&at, e))?;
                match over {
                    Some(target) => {
                        fs::rename(&at, &target).map_err(|e| OutputError::io(&target, e))
                    }
                    None => Ok(()),
                }
            }
            State::Done => Ok(()),
        }
    }

    /// Ends the output of a run that failed or was stopped: written to the
    /// target when nothing was there, else kept beside it as
    /// `NAME.partial` (an earlier partial one replaced; a name that is not
    /// a regular file is passed over for `NAME.partial.1` and on), the
    /// target left as it was. Returns where the output went.
    pub fn commit_partial(mut self) -> Result<PathBuf, OutputError> {
        match std::mem::replace(&mut self.state, State::Done) {
            State::InPlace(mut f) => {
                io::Write::flush(&mut f).map_err(|e| OutputError::io(&self.target, e))?;
                Ok(self.target.clone())
            }
            State::Visible { file, at, .. } => {
                file.sync_data().map_err(|e| OutputError::io(&at, e))?;
                Ok(at)
            }
            State::Hidden(tmp) if !self.existed => {
                let target = self.target.clone();
                persist(tmp, &target)?;
                Ok(target)
            }
            State::Hidden(tmp) => match free_partial(&self.target) {
                Some(beside) => {
                    persist(tmp, &beside)?;
                    Ok(beside)
                }
                // No name is free: the data stays where it is, named.
                None => {
                    let (_, path) = tmp
                        .keep()
                        .map_err(|e| OutputError::io(&self.target, e.error))?;
                    Ok(path)
                }
            },
            State::Done => Ok(self.target.clone()),
        }
    }
}

/// The flag SIGINT/SIGTERM set (the binary registers it with its own):
/// a wait for a FIFO's reader ends when it is set.
pub fn stop_flag() -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    static FLAG: std::sync::OnceLock<std::sync::Arc<std::sync::atomic::AtomicBool>> =
        std::sync::OnceLock::new();
    FLAG.get_or_init(Default::default).clone()
}

/// A FIFO opened for writing once a reader has it open. A blocking open
/// would wait in the kernel past any SIGINT/SIGTERM (the handlers restart
/// it), so the open is tried without blocking until a reader comes or
/// [`stop_flag`] is set, which ends the wait with `Interrupted`.
fn open_fifo(target: &Path) -> Result<File, OutputError> {
    use std::sync::atomic::Ordering;
    let stop = stop_flag();
    let mut said = false;
    loop {
        let open = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(target);
        match open {
            Ok(file) => {
                // Writes block as usual once a reader is there.
                let fd = std::os::fd::AsFd::as_fd(&file);
                let flags =
                    rustix::fs::fcntl_getfl(fd).map_err(|e| OutputError::io(target, e.into()))?;
                rustix::fs::fcntl_setfl(fd, flags - rustix::fs::OFlags::NONBLOCK)
                    .map_err(|e| OutputError::io(target, e.into()))?;
                return Ok(file);
            }
            // ENXIO: no reader yet.
            Err(e) if e.raw_os_error() == Some(libc::ENXIO) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(OutputError::io(
                        target,
                        io::Error::new(
                            io::ErrorKind::Interrupted,
                            "a FIFO: stopped while waiting for its reader",
                        ),
                    ));
                }
                if !said {
                    said = true;
                    use io::Write as _;
                    let _ = writeln!(
                        io::stderr(),
                        "sluice: {} is a FIFO: waiting for its reader (SIGINT stops)",
                        target.display()
                    );
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(OutputError::io(target, e)),
        }
    }
}

/// `/dev/stdout`, `/dev/stderr`, `/dev/fd/N` or `/proc/self/fd/N` opened
/// for writing when the descriptor it names is a character device, a
/// FIFO or a pipe (never a regular file, which it would overwrite from
/// its start); None otherwise.
fn std_stream(target: &Path) -> Option<File> {
    use std::os::unix::fs::FileTypeExt;
    let s = target.to_str()?;
    let ours = ["/dev/stdout", "/dev/stderr"].contains(&s)
        || ["/dev/fd/", "/proc/self/fd/"]
            .iter()
            .any(|p| s.strip_prefix(p).is_some_and(|n| n.parse::<u32>().is_ok()));
    if !ours {
        return None;
    }
    let file = OpenOptions::new().write(true).open(target).ok()?;
    let t = file.metadata().ok()?.file_type();
    (t.is_char_device() || t.is_fifo()).then_some(file)
}

/// The suffix of the hidden temporary files.
const TMP_SUFFIX: &str = ".sluice-tmp";

/// Syncs a temporary file and renames it to `to`.
fn persist(tmp: tempfile::NamedTempFile, to: &Path) -> Result<(), OutputError> {
    let fail = |e| OutputError::io(to, e);
    tmp.as_file().sync_data().map_err(fail)?;
    tmp.persist(to).map_err(|e| fail(e.error))?;
    Ok(())
}

/// Where a run's incomplete output of `target` may go: `NAME.partial`,
/// else `NAME.partial.1` to `.9`: the first that is absent or a regular
/// file (a symlink, directory, FIFO or device planted there is never
/// written through or replaced).
fn free_partial(target: &Path) -> Option<PathBuf> {
    (0..10)
        .map(|k| partial_name(target, k))
        .find(|p| match fs::symlink_metadata(p) {
            Err(e) => e.kind() == io::ErrorKind::NotFound,
            Ok(m) => m.file_type().is_file(),
        })
}

fn partial_name(target: &Path, k: usize) -> PathBuf {
    let mut name = target.as_os_str().to_os_string();
    name.push(".partial");
    if k > 0 {
        name.push(format!(".{k}"));
    }
    PathBuf::from(name)
}

fn no_partial(target: &Path) -> OutputError {
    OutputError::NotAFile {
        path: partial_name(target, 0).display().to_string(),
        kind: "non-file (and so are .partial.1 to .9)",
    }
}

/// Renames every temporary file of output `name` in `dir` (left by a
/// writer that was killed; the caller holds the lock) to a free
/// `NAME.partial` name, and says so on stderr. Returns the new names.
fn rescue_stale(dir: &Path, name: &str, target: &Path) -> Vec<PathBuf> {
    let prefix = format!(".{name}.");
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut rescued = Vec::new();
    for e in entries.flatten() {
        let file = e.file_name();
        let file = file.to_string_lossy();
        // tempfile's names: the prefix, six random characters, the suffix.
        let stale = file
            .strip_prefix(&prefix)
            .and_then(|r| r.strip_suffix(TMP_SUFFIX))
            .is_some_and(|mid| mid.len() == 6 && !mid.contains('.'));
        if !stale || !e.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        // A writer killed before its first write left nothing to keep.
        if e.metadata().is_ok_and(|m| m.len() == 0) {
            let _ = fs::remove_file(e.path());
            continue;
        }
        let Some(to) = free_partial(target) else {
            break;
        };
        if fs::rename(e.path(), &to).is_ok() {
            let bytes = fs::metadata(&to).map_or(0, |m| m.len());
            use io::Write as _;
            let _ = writeln!(
                io::stderr(),
                "sluice: an earlier run to {} was killed before it ended: what it wrote \
                 ({bytes} bytes) is kept as {}",
                target.display(),
                to.display()
            );
            rescued.push(to);
        }
    }
    rescued
}

/// Writes go to the temporary file.
impl io::Write for Output {
    fn write(&mut self, b: &[u8]) -> io::Result<usize> {
        self.file().write(b)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file().flush()
    }
}

impl Drop for Output {
    /// Not committed: the temporary file goes (a log stays: it is the
    /// record of a run that did not end). The temporary file goes before
    /// the lock file, so no later writer can take it for a dead writer's;
    /// the lock file goes while still locked, so no later writer can lock
    /// the removed one.
    fn drop(&mut self) {
        self.state = State::Done;
        if let Some((_, path)) = &self.lock {
            let _ = fs::remove_file(path);
        }
    }
}

/// Takes the lock of output `name` in `dir`: `flock` on `.NAME.sluice-lock`
/// (made if missing). A lock file another writer removed between our open
/// and our lock is no lock: open it again.
fn lock_beside(dir: &Path, name: &str, target: &Path) -> Result<(File, PathBuf), OutputError> {
    let path = dir.join(format!(".{name}.sluice-lock"));
    for _ in 0..8 {
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path)
            .map_err(|e| OutputError::io(target, e))?;
        if flock(&f, FlockOperation::NonBlockingLockExclusive).is_err() {
            return Err(OutputError::Locked {
                path: target.display().to_string(),
            });
        }
        let held = f.metadata().map_err(|e| OutputError::io(target, e))?;
        let named = fs::symlink_metadata(&path);
        if named.is_ok_and(|m| m.dev() == held.dev() && m.ino() == held.ino()) {
            return Ok((f, path));
        }
    }
    Err(OutputError::Locked {
        path: target.display().to_string(),
    })
}

/// The directory `path` is in: its parent, `.` for a bare name.
pub fn parent_dir(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// Checks, before any work, that no output is an input and no two outputs
/// are the same file. Paths that do not exist are compared as written
/// (made absolute).
pub fn check_paths(inputs: &[&Path], outputs: &[&Path]) -> Result<(), OutputError> {
    for (i, out) in outputs.iter().enumerate() {
        for input in inputs {
            if same_file(out, input) {
                return Err(OutputError::AliasesInput {
                    output: out.display().to_string(),
                    input: input.display().to_string(),
                });
            }
        }
        for other in &outputs[i + 1..] {
            if same_file(out, other) {
                return Err(OutputError::SameOutput {
                    first: out.display().to_string(),
                    second: other.display().to_string(),
                });
            }
        }
    }
    Ok(())
}

/// Whether two paths name one file: the same device and inode when both
/// exist, else the same absolute path.
pub fn same_file(a: &Path, b: &Path) -> bool {
    match (fs::metadata(a), fs::metadata(b)) {
        (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
        _ => absolute(a) == absolute(b),
    }
}

fn absolute(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_committed_output_replaces_the_target_and_an_abandoned_one_keeps_it() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.pcap");
        fs::write(&target, b"old").unwrap();
        let mut o = Output::create(&target).unwrap();
        o.file().write_all(b"new").unwrap();
        drop(o);
        assert_eq!(fs::read(&target).unwrap(), b"old");
        let mut o = Output::create(&target).unwrap();
        o.file().write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        // No temporary file is left behind.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn an_abandoned_new_output_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("new.json");
        drop(Output::create(&target).unwrap());
        assert!(!target.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn an_incomplete_run_keeps_what_existed_and_writes_beside_it() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.pcap");
        // Nothing there: the partial output is the output.
        let mut o = Output::create(&target).unwrap();
        // Not created before the commit: a kill now leaves no empty target.
        assert!(!target.exists());
        o.write_all(b"first").unwrap();
        assert_eq!(o.commit_partial().unwrap(), target);
        assert_eq!(fs::read(&target).unwrap(), b"first");
        // A good file there: kept; the partial one goes beside it.
        let mut o = Output::create(&target).unwrap();
        o.write_all(b"cut short").unwrap();
        let beside = o.commit_partial().unwrap();
        assert_eq!(beside, dir.path().join("out.pcap.partial"));
        assert_eq!(fs::read(&target).unwrap(), b"first");
        assert_eq!(fs::read(&beside).unwrap(), b"cut short");
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(names.len(), 2, "no lock or temporary file left: {names:?}");
    }

    #[test]
    fn a_planted_partial_name_cannot_cost_the_frames() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.pcap");
        fs::write(&target, b"good").unwrap();
        // A directory and a symlink where the partial output would go.
        fs::create_dir(dir.path().join("out.pcap.partial")).unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        std::os::unix::fs::symlink(&victim, dir.path().join("out.pcap.partial.1")).unwrap();
        let mut o = Output::create(&target).unwrap();
        o.write_all(b"frames").unwrap();
        let went = o.commit_partial().unwrap();
        assert_eq!(went, dir.path().join("out.pcap.partial.2"));
        assert_eq!(fs::read(&went).unwrap(), b"frames");
        assert_eq!(fs::read(&target).unwrap(), b"good");
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn a_killed_writers_temporary_file_is_kept_as_partial_by_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.pcap");
        fs::write(&target, b"good").unwrap();
        let mut o = Output::create(&target).unwrap();
        o.write_all(b"cut short").unwrap();
        // A SIGKILL: no destructor runs, the temporary file and the lock
        // file stay (the lock itself goes with the process's descriptor).
        let State::Hidden(tmp) = std::mem::replace(&mut o.state, State::Done) else {
            panic!("a file output is hidden")
        };
        let (_, stale) = tmp.keep().unwrap();
        let lock = o.lock.take();
        std::mem::forget(o);
        drop(lock);
        let mut o = Output::create(&target).unwrap();
        assert!(!stale.exists());
        assert_eq!(o.rescued(), &[dir.path().join("out.pcap.partial")]);
        assert_eq!(fs::read(&o.rescued()[0]).unwrap(), b"cut short");
        o.write_all(b"new").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"new");
        // A temporary file of another target is not touched.
        let other = dir.path().join(".out.pcap.x.abcdef.sluice-tmp");
        fs::write(&other, b"x").unwrap();
        let o = Output::create(&target).unwrap();
        assert!(o.rescued().is_empty());
        assert!(other.exists());
        drop(o);
        // Killed before its first write: nothing is kept, no empty partial.
        let empty = dir.path().join(".out.pcap.Zq9x2k.sluice-tmp");
        fs::write(&empty, b"").unwrap();
        let _ = fs::remove_file(dir.path().join("out.pcap.partial"));
        let o = Output::create(&target).unwrap();
        assert!(o.rescued().is_empty());
        assert!(!empty.exists());
        assert!(!dir.path().join("out.pcap.partial").exists());
    }

    #[test]
    fn a_log_is_readable_while_written_and_replaces_only_when_complete() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("stats.jsonl");
        // Nothing there: written in place, readable at once.
        let mut o = Output::create_log(&target).unwrap();
        assert_eq!(o.writing_to(), target);
        o.write_all(b"line 1\n").unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"line 1\n");
        o.commit().unwrap();
        // A file there: the new log goes to .partial while it runs.
        let mut o = Output::create_log(&target).unwrap();
        let partial = dir.path().join("stats.jsonl.partial");
        assert_eq!(o.writing_to(), partial);
        o.write_all(b"line A\n").unwrap();
        assert_eq!(fs::read(&partial).unwrap(), b"line A\n");
        assert_eq!(o.commit_partial().unwrap(), partial);
        assert_eq!(fs::read(&target).unwrap(), b"line 1\n");
        // Complete: it replaces the old one.
        let mut o = Output::create_log(&target).unwrap();
        o.write_all(b"line B\n").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"line B\n");
        assert!(!partial.exists());
    }

    #[test]
    fn dev_stdout_is_written_in_place_when_it_is_a_pipe_or_device() {
        // Whatever stdout is here, /dev/null through /proc/self/fd works.
        let null = File::options().write(true).open("/dev/null").unwrap();
        use std::os::fd::AsRawFd;
        let path = PathBuf::from(format!("/proc/self/fd/{}", null.as_raw_fd()));
        let mut o = Output::create(&path).unwrap();
        o.write_all(b"x").unwrap();
        o.commit().unwrap();
        // A link to a regular file is still refused.
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join("f")).unwrap();
        let path = PathBuf::from(format!("/proc/self/fd/{}", f.as_raw_fd()));
        assert!(matches!(
            Output::create(&path),
            Err(OutputError::Symlink { .. })
        ));
    }

    #[test]
    fn a_second_writer_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("out.pcap");
        let _first = Output::create(&target).unwrap();
        assert!(matches!(
            Output::create(&target),
            Err(OutputError::Locked { .. })
        ));
    }

    #[test]
    fn a_symlink_is_refused_and_its_target_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        assert!(matches!(
            Output::create(&link),
            Err(OutputError::Symlink { .. })
        ));
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
    }

    #[test]
    fn an_output_that_is_an_input_or_another_output_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("t.pcap");
        fs::write(&input, b"x").unwrap();
        let link = dir.path().join("alias");
        std::os::unix::fs::symlink(&input, &link).unwrap();
        let e = check_paths(&[&input], &[&link]).unwrap_err();
        assert!(e.to_string().contains("would destroy the input"), "{e}");
        let fresh = dir.path().join("new.json");
        let again = dir.path().join(".").join("new.json");
        assert!(matches!(
            check_paths(&[&input], &[&fresh, &again]),
            Err(OutputError::SameOutput { .. })
        ));
        assert!(check_paths(&[&input], &[&fresh]).is_ok());
    }

    #[test]
    fn a_new_output_gets_the_usual_mode_and_a_replaced_one_keeps_its_own() {
        let dir = tempfile::tempdir().unwrap();
        let fresh = dir.path().join("new");
        let mut o = Output::create(&fresh).unwrap();
        o.file().write_all(b"x").unwrap();
        o.commit().unwrap();
        let mode = fs::metadata(&fresh).unwrap().mode() & 0o777;
        assert_eq!(mode & 0o644, 0o644, "{mode:o}");
        fs::set_permissions(&fresh, fs::Permissions::from_mode(0o600)).unwrap();
        let mut o = Output::create(&fresh).unwrap();
        o.file().write_all(b"y").unwrap();
        o.commit().unwrap();
        assert_eq!(fs::metadata(&fresh).unwrap().mode() & 0o777, 0o600);
    }
}
