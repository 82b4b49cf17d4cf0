//! Names the commit `mil --version` reports: `MIL_BUILD_COMMIT` when set (release
//! builds), else what git says about the checkout this crate is built from, else the
//! commit cargo recorded when it packaged the crate, else "unknown".

use std::path::Path;
use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=MIL_BUILD_COMMIT");
    let commit = match std::env::var("MIL_BUILD_COMMIT") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_string(),
        _ => from_git()
            .or_else(from_package)
            .unwrap_or_else(|| "unknown".into()),
    };
    println!("cargo:rustc-env=MIL_BUILD_COMMIT={commit}");
}

/// This crate's directory (cargo runs the script there too).
fn manifest_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| ".".into())
}

/// Runs git in this crate's directory; its trimmed stdout when it succeeds.
fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(manifest_dir())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// `abcdef123456[-dirty], YYYY-MM-DD` (the commit's date; `-dirty` when the sources
/// differ from it), when this crate's sources are
/// tracked by the enclosing git checkout. A packaged copy of the crate inside some other
/// repository (cargo's own `target/package/`, a vendored dependency) is not.
fn from_git() -> Option<String> {
    git(&["ls-files", "--error-unmatch", "build.rs"])?;
    let hash = git(&["rev-parse", "--short=12", "HEAD"])?;
    let date = git(&["show", "-s", "--format=%cs", "HEAD"])?;
    // Dirty when the sources the program is built from differ from the commit: this
    // crate, the core crate and the workspace's manifest and lock file (documentation
    // or measurements being edited beside a build leave it at the commit). Without
    // optional locks git status leaves the index alone.
    let dirty = git(&[
        "--no-optional-locks",
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        "../core",
        "../Cargo.toml",
        "../Cargo.lock",
    ])
    .is_some_and(|s| !s.is_empty());
    // Rebuild when HEAD moves: HEAD itself (a branch switch or a detached HEAD) and the
    // ref it names (a commit on the branch; packed-refs once git packs it); and when the
    // sources change, which may make the tree dirty or clean. In a worktree `.git` is a
    // file; git names the right paths.
    let mut watched = vec![git(&["rev-parse", "--git-path", "HEAD"])];
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git(&["rev-parse", "--git-path", &reference]));
        watched.push(git(&["rev-parse", "--git-path", "packed-refs"]));
    }
    for path in watched.into_iter().flatten() {
        let path = Path::new(&manifest_dir()).join(path);
        // A missing file would make cargo run this script on every build.
        if path.exists() {
            println!("cargo:rerun-if-changed={}", path.display());
        }
    }
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=../core/src");
    let suffix = if dirty { "-dirty" } else { "" };
    Some(format!("{hash}{suffix}, {date}"))
}

/// The commit `cargo package` recorded in `.cargo_vcs_info.json` (a published crate).
fn from_package() -> Option<String> {
    let info = std::fs::read_to_string(".cargo_vcs_info.json").ok()?;
    let sha = info.split("\"sha1\"").nth(1)?.split('"').nth(1)?;
    let short: String = sha.chars().take(12).collect();
    let dirty = info.contains("\"dirty\": true") || info.contains("\"dirty\":true");
    (short.len() == 12 && short.chars().all(|c| c.is_ascii_hexdigit()))
        .then(|| format!("{short}{}", if dirty { "-dirty" } else { "" }))
}
