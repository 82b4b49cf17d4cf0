//! Atomic, non-destructive file writes: an output file holds either its old content or
//! the complete new one, whatever happens while it is written (an error, a full disk, a
//! crash or `kill -9`), and an output that is also one of the inputs is detected before
//! it is overwritten.
//!
//! The new content goes to a temporary file beside the target (same directory, so the
//! same file system), which is flushed, synced and renamed over the target; the
//! directory is then synced so the rename itself survives a power cut. A temporary file
//! is removed on every error (and on a panic of the writing closure); only a killed
//! process leaves one behind, named `.NAME.PID.N.tmp`, and such leftovers never stand in
//! the way of a later write because every temporary name is created with `create_new`
//! and a taken name is simply skipped. A program that exits on a signal removes the
//! temporary files of unfinished writes first with [`remove_temporaries_and_exit`].
//!
//! A target that is not a regular file (a character or block device such as
//! `/dev/null`, a FIFO, or standard output named as `/dev/stdout` or `/dev/fd/1`) is
//! opened and written through, never replaced: renaming over it would put a regular file
//! where the device or pipe was.

use std::ffi::OsString;
use std::fs::{self, File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

/// How many taken temporary names [`write_atomic_with`] skips before it gives up.
const MAX_TEMP_ATTEMPTS: u64 = 10_000;

/// Buffer of the writer handed to the closure of [`write_atomic_with`].
const BUFFER_BYTES: usize = 1 << 20;

/// Distinguishes the temporary files of concurrent writes in one process.
static NEXT_TEMP: AtomicU64 = AtomicU64::new(0);

/// The temporary files being written now, for [`remove_temporaries_and_exit`].
static LIVE_TEMPS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The longest part of the target's name a temporary name keeps, in bytes: with the
/// dot, process id, counter and `.tmp` the temporary name stays within the 255-byte name
/// limit of common file systems whatever the target's name.
const TEMP_NAME_KEEP: usize = 200;

/// Replaces the content of `path` by `bytes` atomically: on success the file holds
/// exactly `bytes`; on any error it is left as it was and no temporary file remains.
///
/// A symbolic link at `path` is followed: the file it points to is replaced, the link
/// is kept. An existing target keeps its permissions.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Streaming form of [`write_atomic`] for large outputs: `write` produces the new
/// content into a buffered writer on a temporary file, which replaces `path` only after
/// `write` returned `Ok` and the data is on disk. When `write` fails (or panics) the
/// temporary file is removed and `path` is untouched.
pub fn write_atomic_with<F>(path: &Path, write: F) -> io::Result<()>
where
    F: FnOnce(&mut BufWriter<File>) -> io::Result<()>,
{
    if writes_through(path) {
        let file = OpenOptions::new().write(true).open(path)?;
        let mut writer = BufWriter::with_capacity(BUFFER_BYTES, file);
        write(&mut writer)?;
        return writer.flush();
    }
    let target = resolve_target(path)?;
    let dir = match target.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = target.file_name().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} does not name a file", path.display()),
        )
    })?;
    let (file, temp) = create_temp(&dir, name)?;
    // Removes the temporary file on every early return and on a panic in `write`.
    let mut guard = TempGuard(Some(temp));
    let temp = guard.0.as_deref().expect("set above");

    if let Ok(old) = fs::metadata(&target) {
        if old.is_file() {
            file.set_permissions(old.permissions())?;
        }
    }
    let mut writer = BufWriter::with_capacity(BUFFER_BYTES, file);
    write(&mut writer)?;
    let file = writer
        .into_inner()
        .map_err(io::IntoInnerError::into_error)?;
    file.sync_all()?;
    drop(file);
    fs::rename(temp, &target)?;
    let temp = guard.0.take().expect("set above");
    forget_temp(&temp);
    sync_dir(&dir)
}

/// Whether a write to `path` goes straight into it rather than through a temporary file
/// and a rename: for an existing target that is not a regular file or directory (a
/// device, a FIFO, a socket), and for the names of standard output and error, whatever
/// they are redirected to.
fn writes_through(path: &Path) -> bool {
    let stream = ["/dev/stdout", "/dev/stderr", "/dev/fd/", "/proc/self/fd/"];
    if cfg!(unix)
        && stream
            .iter()
            .any(|s| path.to_str().is_some_and(|p| p.starts_with(s)))
    {
        return true;
    }
    fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir())
}

/// Removes the temporary files of every write under way and ends the process with
/// `code`, for a program stopped by a signal. Holding the registry's lock until the
/// exit keeps other threads from starting a new temporary file meanwhile.
pub fn remove_temporaries_and_exit(code: i32) -> ! {
    let live = LIVE_TEMPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    for temp in live.iter() {
        let _ = fs::remove_file(temp);
    }
    std::process::exit(code)
}

/// Takes `temp` out of the registry of live temporary files.
fn forget_temp(temp: &Path) {
    let mut live = LIVE_TEMPS
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    live.retain(|t| t != temp);
}

/// Whether `a` and `b` are the same existing file, however they are spelled: through
/// symbolic links, `..`, hard links or bind mounts (device and inode on unix; the
/// canonical paths elsewhere). False when either does not exist, so it answers "would
/// writing to `a` destroy the input `b`?".
pub fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(a), fs::metadata(b)) {
            (Ok(x), Ok(y)) => x.dev() == y.dev() && x.ino() == y.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        match (fs::canonicalize(a), fs::canonicalize(b)) {
            (Ok(x), Ok(y)) => x == y,
            _ => false,
        }
    }
}

/// The file a write to `path` must replace: `path` itself, or what a symbolic link there
/// points to (so the link survives and its target gets the content, as with
/// `std::fs::write`).
fn resolve_target(path: &Path) -> io::Result<PathBuf> {
    let mut target = path.to_path_buf();
    // Bounded, as a loop of links must not hang the write.
    for _ in 0..40 {
        match fs::symlink_metadata(&target) {
            Ok(m) if m.file_type().is_symlink() => {
                let link = fs::read_link(&target)?;
                target = match target.parent() {
                    Some(parent) => parent.join(link),
                    None => link,
                };
            }
            _ => return Ok(target),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("{}: too many levels of symbolic links", path.display()),
    ))
}

/// Creates a fresh temporary file in `dir` for a target named `name`.
fn create_temp(dir: &Path, name: &std::ffi::OsStr) -> io::Result<(File, PathBuf)> {
    for _ in 0..MAX_TEMP_ATTEMPTS {
        let n = NEXT_TEMP.fetch_add(1, Ordering::Relaxed);
        let temp = dir.join(temp_name(name, std::process::id(), n));
        // Registered before it exists, so that a signal never finds a file it misses.
        let mut live = LIVE_TEMPS
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        live.push(temp.clone());
        match OpenOptions::new().write(true).create_new(true).open(&temp) {
            Ok(file) => return Ok((file, temp)),
            // A leftover of a killed writer (or a concurrent one): take the next name.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                live.pop();
                continue;
            }
            Err(e) => {
                live.pop();
                return Err(e);
            }
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!(
            "{}: no free temporary name for {} after {MAX_TEMP_ATTEMPTS} attempts",
            dir.display(),
            name.to_string_lossy()
        ),
    ))
}

/// `.NAME.PID.N.tmp`: hidden, recognisably ours, and unique within one process. A name
/// longer than [`TEMP_NAME_KEEP`] bytes keeps its beginning, so that the temporary name
/// stays within the file system's name limit.
fn temp_name(name: &std::ffi::OsStr, pid: u32, n: u64) -> OsString {
    let mut s = OsString::from(".");
    s.push(shortened(name));
    s.push(format!(".{pid}.{n}.tmp"));
    s
}

/// The first [`TEMP_NAME_KEEP`] bytes of `name` (whole characters when it is UTF-8).
fn shortened(name: &std::ffi::OsStr) -> OsString {
    if name.len() <= TEMP_NAME_KEEP {
        return name.to_os_string();
    }
    if let Some(text) = name.to_str() {
        let mut end = TEMP_NAME_KEEP;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        return OsString::from(&text[..end]);
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        std::ffi::OsStr::from_bytes(&name.as_bytes()[..TEMP_NAME_KEEP]).to_os_string()
    }
    #[cfg(not(unix))]
    {
        let lossy = name.to_string_lossy();
        OsString::from(lossy.chars().take(TEMP_NAME_KEEP / 4).collect::<String>())
    }
}

/// Makes a rename in `dir` durable.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        match File::open(dir).and_then(|d| d.sync_all()) {
            Ok(()) => Ok(()),
            // Some file systems cannot sync a directory; the rename has happened anyway.
            Err(e) if e.raw_os_error() == Some(22) || e.kind() == io::ErrorKind::Unsupported => {
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
    #[cfg(not(unix))]
    {
        // Directories cannot be opened for syncing here; the rename is as durable as
        // the platform makes it.
        let _ = dir;
        Ok(())
    }
}

/// Removes the temporary file unless disarmed.
struct TempGuard(Option<PathBuf>);

impl Drop for TempGuard {
    fn drop(&mut self) {
        if let Some(path) = self.0.take() {
            let _ = fs::remove_file(&path);
            forget_temp(&path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "mil-atomic-{tag}-{}-{}",
            std::process::id(),
            NEXT_TEMP.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        dir
    }

    /// Names in `dir` other than `keep`.
    fn others(dir: &Path, keep: &[&str]) -> Vec<String> {
        fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| !keep.contains(&n.as_str()))
            .collect()
    }

    #[test]
    fn creates_and_replaces() {
        let dir = scratch("replace");
        let f = dir.join("out.bin");
        write_atomic(&f, b"first").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"first");
        write_atomic(&f, b"second, longer").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"second, longer");
        write_atomic(&f, b"").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"");
        assert!(others(&dir, &["out.bin"]).is_empty());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_failing_writer_leaves_the_old_file_and_no_temporary() {
        let dir = scratch("fail");
        let f = dir.join("out.txt");
        fs::write(&f, "old").unwrap();
        let e = write_atomic_with(&f, |w| {
            w.write_all(&[b'x'; 3 << 20])?;
            Err(io::Error::other("disk full, say"))
        })
        .unwrap_err();
        assert_eq!(e.to_string(), "disk full, say");
        assert_eq!(fs::read_to_string(&f).unwrap(), "old");
        assert!(others(&dir, &["out.txt"]).is_empty());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_panicking_writer_leaves_no_temporary() {
        let dir = scratch("panic");
        let f = dir.join("out.txt");
        let result = std::panic::catch_unwind(|| {
            let _ = write_atomic_with(&f, |w| {
                w.write_all(b"partial")?;
                panic!("writer bug");
            });
        });
        assert!(result.is_err());
        assert!(others(&dir, &[]).is_empty());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn errors_leave_nothing_behind() {
        let dir = scratch("errors");
        // A directory in the way: the rename fails, the directory and its content stay.
        let sub = dir.join("sub");
        fs::create_dir(&sub).unwrap();
        fs::write(sub.join("keep"), "k").unwrap();
        assert!(write_atomic(&sub, b"x").is_err());
        assert_eq!(fs::read_to_string(sub.join("keep")).unwrap(), "k");
        assert_eq!(others(&dir, &[]), vec!["sub".to_string()]);
        // No such directory.
        assert!(write_atomic(&dir.join("none/out"), b"x").is_err());
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn leftover_temporaries_do_not_block_a_write() {
        let dir = scratch("stale");
        let f = dir.join("out");
        // Occupy the next names this process would pick, as a killed writer with a
        // recycled process id would have.
        let next = NEXT_TEMP.load(Ordering::Relaxed);
        for n in next..next + 64 {
            fs::write(
                dir.join(temp_name(f.file_name().unwrap(), std::process::id(), n)),
                "stale",
            )
            .unwrap();
        }
        write_atomic(&f, b"fresh").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"fresh");
        assert_eq!(others(&dir, &["out"]).len(), 64);
        fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn follows_symlinks_and_keeps_permissions() {
        use std::os::unix::fs::PermissionsExt;
        let dir = scratch("links");
        let real = dir.join("real");
        fs::write(&real, "old").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o640)).unwrap();
        let link = dir.join("link");
        std::os::unix::fs::symlink("real", &link).unwrap();
        write_atomic(&link, b"new").unwrap();
        assert!(fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(fs::read_to_string(&real).unwrap(), "new");
        let mode = fs::metadata(&real).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o640);
        fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn temporary_names_fit_the_name_limit() {
        let dir = scratch("long");
        // 255 bytes is the usual limit; 254 leaves no room for a prefix and suffix.
        for name in ["n".repeat(254), "é".repeat(127)] {
            let f = dir.join(&name);
            write_atomic(&f, b"long").unwrap();
            assert_eq!(fs::read(&f).unwrap(), b"long");
            let temp = temp_name(std::ffi::OsStr::new(&name), u32::MAX, u64::MAX);
            assert!(temp.len() <= 255, "{}", temp.len());
            assert!(temp
                .to_str()
                .unwrap()
                .starts_with(&format!(".{}", &name[..100])));
        }
        assert_eq!(others(&dir, &[]).len(), 2);
        fs::remove_dir_all(dir).unwrap();
    }

    #[cfg(unix)]
    #[test]
    fn devices_are_written_through() {
        use std::os::unix::fs::FileTypeExt;
        write_atomic(Path::new("/dev/null"), b"nothing").unwrap();
        let kind = fs::metadata("/dev/null").unwrap().file_type();
        assert!(kind.is_char_device());
        // /dev/full takes the write and fails it: the error reaches the caller.
        let e = write_atomic(Path::new("/dev/full"), b"x").unwrap_err();
        assert_eq!(e.raw_os_error(), Some(28), "{e}");
    }

    #[test]
    fn same_file_sees_through_links_and_spellings() {
        let dir = scratch("same");
        let a = dir.join("a.csv");
        let b = dir.join("b.csv");
        fs::write(&a, "1,x,1\n").unwrap();
        fs::write(&b, "1,x,1\n").unwrap();
        assert!(same_file(&a, &a));
        fs::create_dir(dir.join("sub")).unwrap();
        assert!(same_file(&a, &dir.join("sub/../a.csv")));
        assert!(same_file(&a, &dir.join(".").join("a.csv")));
        assert!(!same_file(&a, &b), "equal content is not the same file");
        assert!(!same_file(&a, &dir.join("missing")));
        assert!(!same_file(&dir.join("missing"), &dir.join("missing")));
        let hard = dir.join("hard.csv");
        fs::hard_link(&a, &hard).unwrap();
        assert!(same_file(&hard, &a));
        #[cfg(unix)]
        {
            let soft = dir.join("soft.csv");
            std::os::unix::fs::symlink(&b, &soft).unwrap();
            assert!(same_file(&soft, &b));
            assert!(!same_file(&soft, &a));
        }
        fs::remove_dir_all(dir).unwrap();
    }
}
