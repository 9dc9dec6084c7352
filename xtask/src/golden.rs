//! `cargo xtask golden`: runs every test that owns a snapshot folder, with
//! insta writing new or changed snapshots, then lists the pending ones it
//! finds on disk (they are git-ignored, so git cannot list them).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, bail};
use serde_json::Value;

use crate::run::run_status;
use crate::{cargo, root};

/// Folders never searched for snapshots: build output, version control,
/// installed JavaScript packages, generated benchmark sessions.
const SKIPPED_DIRS: &[&str] = &[".git", "target", "node_modules", "bench-data"];

/// Runs the snapshot tests of every snapshot folder with insta writing new
/// snapshots (`--accept`: accepting every change), then lists what is
/// pending.
pub(crate) fn run(args: &[String]) -> anyhow::Result<()> {
    let mut accept = false;
    for arg in args {
        match arg.as_str() {
            "--accept" => accept = true,
            other => bail!("unknown argument `{other}` (expected `--accept`)"),
        }
    }
    let root = root();
    let runs = snapshot_runs(&root)?;
    let mode = if accept { "always" } else { "new" };
    let mut result = Ok(());
    for run in &runs {
        eprintln!("golden: {}", run.describe());
        let mut cmd = run.command();
        cmd.arg("--no-fail-fast")
            .env("INSTA_UPDATE", mode)
            .env_remove("CI");
        if let Err(e) = run_status(&mut cmd) {
            result = Err(e);
        }
    }
    let pending = pending_snapshots(&root);
    if pending.is_empty() {
        eprintln!("golden: no pending snapshots");
    } else {
        eprintln!("golden: {} pending snapshot(s):", pending.len());
        for p in &pending {
            eprintln!("  {p}");
        }
        if has_cargo_insta() {
            eprintln!("review them with `cargo insta review`");
        } else {
            eprintln!(
                "review the .snap.new files, then accept them with `cargo xtask golden --accept`"
            );
        }
    }
    if accept && pending.is_empty() {
        // Accepted snapshots are written in place; rerun read-only to confirm.
        for run in &runs {
            let mut confirm = run.command();
            confirm.env("INSTA_UPDATE", "no").env("CI", "true");
            run_status(&mut confirm).context("snapshot tests still fail after accepting")?;
        }
    }
    if result.is_ok() && !pending.is_empty() && !accept {
        bail!("{} snapshot(s) to review", pending.len());
    }
    result
}

/// One `cargo test` invocation: a package, and the test targets that write
/// its snapshots (all of the package's tests when the folder's names do not
/// say which).
#[derive(Debug, PartialEq, Eq)]
struct SnapshotRun {
    package: String,
    /// `--test NAME` targets; `lib` runs the library's unit tests.
    targets: Vec<String>,
}

impl SnapshotRun {
    fn command(&self) -> Command {
        let mut cmd = cargo();
        cmd.args(["test", "--locked", "-p", &self.package]);
        for t in &self.targets {
            if t == "lib" {
                cmd.arg("--lib");
            } else {
                cmd.args(["--test", t]);
            }
        }
        cmd
    }

    fn describe(&self) -> String {
        if self.targets.is_empty() {
            format!("{} (every test)", self.package)
        } else {
            format!("{} ({})", self.package, self.targets.join(", "))
        }
    }
}

/// The test runs that cover every snapshot folder of the workspace.
fn snapshot_runs(root: &Path) -> anyhow::Result<Vec<SnapshotRun>> {
    let meta = metadata()?;
    let mut folders = Vec::new();
    walk(root, &mut |dir| {
        if dir.file_name().is_some_and(|n| n == "snapshots") {
            folders.push(dir.to_owned());
        }
    });
    folders.sort();
    let mut by_package: BTreeMap<String, Option<Vec<String>>> = BTreeMap::new();
    for folder in &folders {
        let snaps = snapshot_names(folder);
        if snaps.is_empty() {
            continue;
        }
        let Some(pkg) = owning_package(&meta, folder) else {
            bail!(
                "{}: a snapshot folder outside every workspace package",
                folder.display()
            );
        };
        let name = pkg["name"].as_str().unwrap_or_default().to_owned();
        let targets = folder_targets(pkg, folder, &snaps);
        let entry = by_package.entry(name).or_insert_with(|| Some(Vec::new()));
        match (entry.as_mut(), targets) {
            (Some(list), Some(targets)) => {
                for t in targets {
                    if !list.contains(&t) {
                        list.push(t);
                    }
                }
            }
            _ => *entry = None,
        }
    }
    Ok(by_package
        .into_iter()
        .map(|(package, targets)| SnapshotRun {
            package,
            targets: targets.unwrap_or_default(),
        })
        .collect())
}

/// The `.snap` file names of a folder, without the extension.
fn snapshot_names(folder: &Path) -> Vec<String> {
    let mut names: Vec<String> = fs::read_dir(folder)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".snap").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

/// The package whose folder holds `folder` most closely.
fn owning_package<'a>(meta: &'a Value, folder: &Path) -> Option<&'a Value> {
    meta["packages"]
        .as_array()?
        .iter()
        .filter_map(|p| {
            let dir = Path::new(p["manifest_path"].as_str()?).parent()?;
            folder
                .starts_with(dir)
                .then_some((dir.components().count(), p))
        })
        .max_by_key(|(depth, _)| *depth)
        .map(|(_, p)| p)
}

/// The targets that write a snapshot folder: insta puts snapshots in
/// `snapshots/` next to the source file. A folder under `src/` belongs to
/// the library; in a tests folder, when every snapshot is named
/// `<target>__…` after a test target there, those targets; `None` means
/// every test of the package.
fn folder_targets(pkg: &Value, folder: &Path, snaps: &[String]) -> Option<Vec<String>> {
    let sources = folder.parent()?;
    let targets: Vec<(&str, &Path)> = pkg["targets"]
        .as_array()?
        .iter()
        .filter_map(|t| Some((t["name"].as_str()?, Path::new(t["src_path"].as_str()?), t)))
        .filter(|(_, _, t)| {
            t["kind"]
                .as_array()
                .is_some_and(|k| k.iter().any(|k| k == "test"))
        })
        .map(|(name, src, _)| (name, src))
        .collect();
    let lib_src = pkg["targets"].as_array()?.iter().find_map(|t| {
        let is_lib = t["kind"]
            .as_array()
            .is_some_and(|k| k.iter().any(|k| k == "lib"));
        is_lib.then(|| Path::new(t["src_path"].as_str().unwrap_or_default()).parent())?
    });
    if lib_src.is_some_and(|src| sources.starts_with(src)) {
        return Some(vec!["lib".to_owned()]);
    }
    let mut named = Vec::new();
    for snap in snaps {
        let prefix = snap.split("__").next().unwrap_or_default();
        let found = targets
            .iter()
            .find(|(name, src)| *name == prefix && src.parent() == Some(sources));
        match found {
            Some((name, _)) if !named.iter().any(|n| n == name) => named.push((*name).to_owned()),
            Some(_) => {}
            None => return None,
        }
    }
    Some(named)
}

/// `cargo metadata --no-deps`.
fn metadata() -> anyhow::Result<Value> {
    let output = cargo()
        .args(["metadata", "--format-version", "1", "--no-deps", "--locked"])
        .stderr(Stdio::inherit())
        .output()
        .context("cannot run cargo metadata")?;
    if !output.status.success() {
        bail!("cargo metadata exited with {}", output.status);
    }
    serde_json::from_slice(&output.stdout).context("cargo metadata printed invalid JSON")
}

/// Every pending insta snapshot (`*.snap.new`, `*.pending-snap`) on disk
/// under `root`, relative to it and sorted. insta's files are git-ignored,
/// so they are looked for in the folders, not through git.
pub(crate) fn pending_snapshots(root: &Path) -> Vec<String> {
    let mut found = Vec::new();
    walk(root, &mut |dir| {
        for entry in fs::read_dir(dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            if is_file && (name.ends_with(".snap.new") || name.ends_with(".pending-snap")) {
                let path = entry.path();
                found.push(
                    path.strip_prefix(root)
                        .unwrap_or(&path)
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    });
    found.sort();
    found
}

/// Calls `visit` on `dir` and every folder below it, skipping
/// [`SKIPPED_DIRS`] and never following symbolic links.
fn walk(dir: &Path, visit: &mut dyn FnMut(&Path)) {
    visit(dir);
    let mut subdirs: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| !SKIPPED_DIRS.iter().any(|s| e.file_name() == *s))
        .map(|e| e.path())
        .collect();
    subdirs.sort();
    for sub in subdirs {
        walk(&sub, visit);
    }
}

fn has_cargo_insta() -> bool {
    Command::new("cargo-insta")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn package(dir: &str) -> Value {
        json!({
            "name": "pkg",
            "manifest_path": format!("{dir}/Cargo.toml"),
            "targets": [
                {"name": "pkg", "kind": ["lib"], "src_path": format!("{dir}/src/lib.rs")},
                {"name": "view_screens", "kind": ["test"], "src_path": format!("{dir}/tests/view_screens.rs")},
                {"name": "other", "kind": ["test"], "src_path": format!("{dir}/tests/other.rs")},
            ]
        })
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_folder_named_after_its_targets_runs_only_them() {
        let pkg = package("/r/crates/cli");
        let folder = Path::new("/r/crates/cli/tests/snapshots");
        let snaps = names(&["view_screens__a", "view_screens__b"]);
        assert_eq!(
            folder_targets(&pkg, folder, &snaps),
            Some(names(&["view_screens"]))
        );
    }

    #[test]
    fn a_name_without_its_target_runs_every_test() {
        let pkg = package("/r/crates/cli");
        let folder = Path::new("/r/crates/cli/tests/snapshots");
        let snaps = names(&["view_screens__a", "context__b"]);
        assert_eq!(folder_targets(&pkg, folder, &snaps), None);
    }

    #[test]
    fn a_folder_under_src_is_the_library() {
        let pkg = package("/r/crates/cli");
        let folder = Path::new("/r/crates/cli/src/view/snapshots");
        assert_eq!(
            folder_targets(&pkg, folder, &names(&["x__y"])),
            Some(names(&["lib"]))
        );
    }

    #[test]
    fn pending_snapshots_are_found_on_disk_outside_target() {
        let dir = std::env::temp_dir().join(format!("xtask-golden-{}", std::process::id()));
        let snaps = dir.join("crates/a/tests/snapshots");
        fs::create_dir_all(&snaps).unwrap();
        fs::create_dir_all(dir.join("target/x")).unwrap();
        fs::write(snaps.join("t__a.snap.new"), "").unwrap();
        fs::write(snaps.join("t__b.snap"), "").unwrap();
        fs::write(dir.join("crates/a/src.pending-snap"), "").unwrap();
        fs::write(dir.join("target/x/t__c.snap.new"), "").unwrap();
        let found = pending_snapshots(&dir);
        fs::remove_dir_all(&dir).unwrap();
        assert_eq!(
            found,
            names(&[
                "crates/a/src.pending-snap",
                "crates/a/tests/snapshots/t__a.snap.new"
            ])
        );
    }
}
