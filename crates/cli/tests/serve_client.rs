//! The example client of the serve protocol (`examples/serve-client.py`)
//! runs its fake agent loop against the real `musepi serve`, and finds the
//! binary without being told: on the PATH, or in the repository's build.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/serve-client.py")
}

/// The Python interpreter itself, so that a test can empty the PATH.
fn python() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3 runs");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Runs `script` in `dir` with `path` as the PATH and `args`.
fn run(script: &Path, dir: &Path, path: &Path, args: &[&str]) -> Output {
    Command::new(python())
        .arg(script)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("PATH", path)
        .env_remove("MUSEPI")
        .env_remove("CARGO_TARGET_DIR")
        .output()
        .expect("python3 runs the example client")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn the_python_example_client_drives_a_fake_agent_loop() {
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("agent.jsonl");
    let empty = dir.path().join("no-bin");
    let out = run(
        &script(),
        dir.path(),
        &empty,
        &["--musepi", MUSEPI, "--session", session.to_str().unwrap()],
    );
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("musepi {MUSEPI}\n")),
        "{stdout}"
    );
    for line in [
        "beforeRequest (mid-turn): compacted, reason=threshold",
        "afterAssistant (threshold): compacted, reason=threshold, continue, with the developer prompt",
        "afterAssistant (length, below the threshold): warn, reason=incomplete",
        "afterAssistant (overflow): compacted, reason=overflow, retry, removeLastAssistant, continue",
        "idle 600 s: compacted, reason=idle",
        "compact: compacted, reason=manual",
    ] {
        assert!(stdout.contains(line), "missing {line:?} in\n{stdout}");
    }
    let file = std::fs::read_to_string(&session).unwrap();
    assert_eq!(file.matches(r#""type":"compaction""#).count(), 5, "{file}");
}

#[test]
fn the_client_finds_musepi_on_the_path() {
    let dir = tempfile::tempdir().unwrap();
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    std::os::unix::fs::symlink(MUSEPI, bin.join("musepi")).unwrap();
    let out = run(&script(), dir.path(), &bin, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    let expected = bin.join("musepi");
    assert!(
        stdout.starts_with(&format!("musepi {}\n", expected.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("compact: compacted, reason=manual"),
        "{stdout}"
    );
}

#[test]
fn the_client_finds_the_repository_build_or_says_how_to_get_one() {
    // A copy of the repository's layout: examples/serve-client.py and target/.
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir(repo.path().join("examples")).unwrap();
    let copy = repo.path().join("examples/serve-client.py");
    std::fs::copy(script(), &copy).unwrap();
    let empty = repo.path().join("no-bin");

    let out = run(&copy, repo.path(), &empty, &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stdout));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("no musepi binary found"), "{stderr}");
    assert!(
        stderr.contains("cargo install --path crates/cli") && stderr.contains("--musepi PATH"),
        "{stderr}"
    );

    let debug = repo.path().join("target/debug");
    std::fs::create_dir_all(&debug).unwrap();
    std::os::unix::fs::symlink(MUSEPI, debug.join("musepi")).unwrap();
    let out = run(&copy, repo.path(), &empty, &[]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("musepi {}\n", debug.join("musepi").display())),
        "{stdout}"
    );
}
