//! `kill -9` in the middle of an atomic write: the target holds either its old content or
//! the complete new one, never a mixture or a truncation, and the temporary files a
//! killed writer leaves behind do not stand in the way of the next write.
//!
//! The writer is this test binary itself, started again with `CHILD_ENV` naming the
//! target: its `child_writer` test then streams a large file slowly through
//! [`write_atomic_with`] while the parent kills it (`Child::kill` is SIGKILL on unix).

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use mil_toolkit::atomic_write::{write_atomic, write_atomic_with};

/// An empty directory for one test (a recycled process id may find an old one).
fn temp_dir(tag: &str) -> PathBuf {
    let dir = mil_suite::temp_dir(tag);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Names the target for the child; its absence makes `child_writer` a no-op.
const CHILD_ENV: &str = "MIL_ATOMIC_WRITE_CHILD_TARGET";
/// `slow` or `fast`: whether the child pauses between chunks.
const PACE_ENV: &str = "MIL_ATOMIC_WRITE_CHILD_PACE";

/// What the child prints once its temporary file exists.
const STARTED: &str = "atomic-write-child: writing";

const CHUNK: usize = 64 << 10;
const CHUNKS: usize = 96;

/// The new content: 6 MiB in which every chunk differs, so a file that mixed or lost
/// chunks would not compare equal.
fn new_content() -> Vec<u8> {
    let mut out = Vec::with_capacity(CHUNK * CHUNKS + 4);
    for i in 0..CHUNKS {
        out.extend((0..CHUNK).map(|j| (i * 7 + j % 251) as u8));
    }
    out.extend_from_slice(b"END\n");
    out
}

fn old_content() -> Vec<u8> {
    b"the old model, which must survive a failed write\n".repeat(1000)
}

#[test]
fn child_writer() {
    let Some(target) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let slow = std::env::var(PACE_ENV).as_deref() == Ok("slow");
    let content = new_content();
    write_atomic_with(Path::new(&target), |w| {
        let mut out = std::io::stdout();
        // Its own line: libtest may have printed `test child_writer ... ` before.
        writeln!(out, "\n{STARTED}")?;
        out.flush()?;
        for chunk in content.chunks(CHUNK) {
            w.write_all(chunk)?;
            if slow {
                w.flush()?;
                std::thread::sleep(Duration::from_millis(2));
            }
        }
        Ok(())
    })
    .expect("the child's write");
}

/// Starts a writer on `target`, waits until it has begun writing, lets it run for
/// `delay`, then kills it (if it has not finished by then).
fn write_and_kill(target: &Path, slow: bool, delay: Duration) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, target)
        .env(PACE_ENV, if slow { "slow" } else { "fast" })
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the writer");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        match lines.next() {
            Some(Ok(line)) if line == STARTED => break,
            Some(_) => {}
            None => panic!("the writer ended before it started writing"),
        }
    }
    std::thread::sleep(delay);
    let _ = child.kill();
    child.wait().unwrap();
}

fn temporaries(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "tmp"))
        .collect()
}

#[test]
fn a_killed_write_leaves_the_old_or_the_complete_new_file() {
    let dir = temp_dir("atomic-kill");
    let target = dir.join("model.json");
    let (old, new) = (old_content(), new_content());
    let mut outcomes = (0, 0); // (old, new)
    let runs = [
        // Slow writes (≥ 200 ms): killed in the middle of the content.
        (true, 0),
        (true, 1),
        (true, 10),
        (true, 40),
        (true, 100),
        // Fast writes: killed around the flush, sync and rename, or after them.
        (false, 0),
        (false, 1),
        (false, 2),
        (false, 4),
        (false, 8),
        (false, 16),
        (false, 32),
        (false, 1000),
    ];
    for (slow, ms) in runs {
        write_atomic(&target, &old).unwrap();
        write_and_kill(&target, slow, Duration::from_millis(ms));
        let now = std::fs::read(&target).unwrap();
        if now == old {
            outcomes.0 += 1;
        } else if now == new {
            outcomes.1 += 1;
        } else {
            panic!(
                "after a kill {ms} ms into a {} write the file holds {} bytes, neither the old {} nor the new {}",
                if slow { "slow" } else { "fast" },
                now.len(),
                old.len(),
                new.len()
            );
        }
    }
    // A kill right after the writer started always catches it mid-way, and a second is
    // ample for the fast write on a loaded machine.
    assert!(outcomes.0 >= 1, "no kill caught a write in progress");
    assert!(outcomes.1 >= 1, "no write completed");
    // Writers killed mid-way left their temporary files …
    let stale = temporaries(&dir);
    assert!(!stale.is_empty());
    for t in &stale {
        let name = t.file_name().unwrap().to_string_lossy();
        assert!(name.starts_with(".model.json."), "{name}");
    }
    // … which neither block nor leak into the next write, nor get removed by it (they
    // may belong to a writer still running).
    write_atomic(&target, b"after the kills\n").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"after the kills\n");
    assert_eq!(temporaries(&dir).len(), stale.len());
    // Nothing else appeared beside the target.
    let entries = std::fs::read_dir(&dir).unwrap().count();
    assert_eq!(entries, stale.len() + 1);
    std::fs::remove_dir_all(dir).unwrap();
}

#[test]
fn a_completed_write_in_a_child_is_whole() {
    let dir = temp_dir("atomic-complete");
    let target = dir.join("gram.bin");
    std::fs::write(&target, old_content()).unwrap();
    let status = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_writer", "--test-threads=1", "-q"])
        .env(CHILD_ENV, &target)
        .env(PACE_ENV, "fast")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(std::fs::read(&target).unwrap(), new_content());
    assert!(temporaries(&dir).is_empty());
    std::fs::remove_dir_all(dir).unwrap();
}
