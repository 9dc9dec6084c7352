//! The pi extension of `integrations/pi` inside the real pi: its unit tests
//! and the end-to-end test against `@mariozechner/pi-coding-agent` from npm
//! (the version its lockfile pins) with pi's faux model, no network and no
//! key (docs/e2e.md).
//!
//! The package is copied into `<cache>/pi` (so `node_modules` never lands in
//! the repository), installed with `npm ci` when its lockfile changed,
//! type-checked and compiled with its own `tsc`, and its tests run with
//! Node's test runner against the `musepi` binary just built.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

use super::KEY_VARIABLES;
use super::process::run_captured;
use super::setup::{npm_ci, remove_if_present, require_node};
use crate::root;

/// What the package needs: pi's own `engines` field.
const NODE: (u32, u32) = (20, 6);

/// Copies the package into `<cache>/pi` and installs it; the folder.
pub(super) fn install(cache: &Path) -> anyhow::Result<std::path::PathBuf> {
    require_node(NODE.0, NODE.1, "pi (@mariozechner/pi-coding-agent)")?;
    let src = root().join("integrations/pi");
    let dir = cache.join("pi");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for file in ["package.json", "package-lock.json", "tsconfig.json"] {
        fs::copy(src.join(file), dir.join(file))
            .with_context(|| format!("cannot copy integrations/pi/{file}"))?;
    }
    // The sources anew, so a file removed from the repository is gone here too.
    for folder in ["src", "test", "build"] {
        remove_if_present(&dir.join(folder))?;
    }
    for folder in ["src", "test"] {
        copy_dir(&src.join(folder), &dir.join(folder))?;
    }
    npm_ci(
        &dir,
        "the pi extension's packages (@mariozechner/pi-coding-agent)",
    )?;
    Ok(dir)
}

fn copy_dir(from: &Path, to: &Path) -> anyhow::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from).with_context(|| format!("cannot read {}", from.display()))? {
        let entry = entry?;
        let path = entry.path();
        if entry.file_type()?.is_dir() {
            copy_dir(&path, &to.join(entry.file_name()))?;
        } else {
            fs::copy(&path, to.join(entry.file_name()))
                .with_context(|| format!("cannot copy {}", path.display()))?;
        }
    }
    Ok(())
}

/// Type-checks and compiles the package, then runs its tests with `musepi`;
/// a one-line account of what passed.
pub(super) fn test(dir: &Path, musepi: &Path, work: &Path) -> anyhow::Result<String> {
    let home = work.join("pi-home");
    fs::create_dir_all(&home)?;
    let tsc = dir.join("node_modules/typescript/bin/tsc");
    run_captured(
        Command::new("node")
            .arg(&tsc)
            .args(["-p", "tsconfig.json"])
            .current_dir(dir),
        &work.join("pi-tsc"),
    )
    .context("the pi extension does not type-check against the installed pi")?;
    let mut cmd = Command::new("node");
    cmd.args(["--test", "--test-reporter=tap", "build/test/"])
        .current_dir(dir)
        .env("MUSEPI_BIN", musepi)
        // The tests read the example session and the versions from the checkout.
        .env("MUSEPI_REPO", root())
        // No settings of the person running it, for musepi or for pi.
        .env("HOME", &home)
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("PI_CODING_AGENT_SESSION_DIR")
        .env_remove("MUSEPI_SESSION_DIR")
        .env_remove("MUSEPI_TIMEOUT");
    for key in KEY_VARIABLES {
        cmd.env_remove(key);
    }
    let tap = run_captured(&mut cmd, &work.join("pi-test")).context(
        "the pi extension's tests failed (target/e2e/work/pi-test.stdout has the whole report)",
    )?;
    summary(&tap)
}

/// `N tests passed` from the runner's closing lines, or an error when they
/// say something failed or ran nothing.
fn summary(tap: &str) -> anyhow::Result<String> {
    let count = |name: &str| {
        tap.lines()
            .find_map(|l| l.strip_prefix(&format!("# {name} ")))
            .and_then(|n| n.trim().parse::<u32>().ok())
    };
    match (count("pass"), count("fail")) {
        (Some(pass), Some(0)) if pass > 0 => Ok(format!(
            "{pass} tests of the pi extension passed (unit tests and pi itself)"
        )),
        (pass, fail) => bail!(
            "the pi extension's tests: {} passed, {} failed",
            pass.unwrap_or(0),
            fail.unwrap_or(0)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn the_closing_lines_decide() {
        assert!(
            summary("# tests 3\n# pass 3\n# fail 0\n")
                .unwrap()
                .starts_with("3 tests")
        );
        assert!(summary("# pass 2\n# fail 1\n").is_err());
        assert!(summary("# pass 0\n# fail 0\n").is_err());
        assert!(summary("no report").is_err());
    }
}
