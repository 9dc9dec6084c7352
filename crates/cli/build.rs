//! The version line `musepi --version` prints: the package version, and
//! the commit it was built from when the sources are a git checkout
//! (`0.1.0 (abc1234 2026-12-05)`: the short hash and the commit's date).
//! Outside a checkout (a packaged crate) or without git it is the package
//! version alone; the build never fails for want of git.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let dir = Path::new(&manifest);
    let line = match commit(dir) {
        Some((hash, date)) => format!("{version} ({hash} {date})"),
        None => version,
    };
    println!("cargo:rustc-env=MUSEPI_VERSION_LINE={line}");
    // Build again when HEAD moves: HEAD itself (a checkout of another
    // branch) and the branch it names (a commit), wherever git keeps them
    // (a worktree keeps HEAD apart from the branches).
    for name in ["HEAD", "packed-refs"] {
        if let Some(path) = git(dir, &["rev-parse", "--git-path", name]) {
            println!("cargo:rerun-if-changed={}", dir.join(path).display());
        }
    }
    if let Some(branch) = git(dir, &["symbolic-ref", "-q", "HEAD"])
        && let Some(path) = git(dir, &["rev-parse", "--git-path", &branch])
    {
        println!("cargo:rerun-if-changed={}", dir.join(path).display());
    }
}

/// The short hash and the date (`YYYY-MM-DD`) of HEAD, or `None` when
/// this is not a git checkout or git cannot be run.
fn commit(dir: &Path) -> Option<(String, String)> {
    let out = git(dir, &["log", "-1", "--format=%h %cs", "--abbrev=7"])?;
    let (hash, date) = out.split_once(' ')?;
    Some((hash.to_owned(), date.to_owned()))
}

/// What `git ARGS` prints in `dir`, trimmed, when it succeeds and prints
/// something.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    let text = text.trim();
    (out.status.success() && !text.is_empty()).then(|| text.to_owned())
}
