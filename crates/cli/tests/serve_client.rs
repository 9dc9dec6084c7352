//! The example client of the serve protocol (`examples/serve-client.py`)
//! runs its fake agent loop against the real `musepi serve`.

#![allow(clippy::unwrap_used)]

use std::path::Path;
use std::process::Command;

#[test]
fn the_python_example_client_drives_a_fake_agent_loop() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/serve-client.py");
    let dir = tempfile::tempdir().unwrap();
    let session = dir.path().join("agent.jsonl");
    let out = Command::new("python3")
        .arg(&script)
        .arg("--musepi")
        .arg(env!("CARGO_BIN_EXE_musepi"))
        .arg("--session")
        .arg(&session)
        .current_dir(dir.path())
        .env("HOME", dir.path())
        .output()
        .expect("python3 runs the example client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
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
