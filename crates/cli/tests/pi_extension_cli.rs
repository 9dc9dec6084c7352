//! `musepi pi install | remove`: the extension lands where pi finds
//! extensions by itself, as the sources of this checkout, independent of
//! the checkout afterwards; a folder it did not write is left alone.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;
use support::MUSEPI;

fn pi(home: &Path, cwd: &Path, agent_dir: Option<&Path>, args: &[&str]) -> Output {
    let mut cmd = Command::new(MUSEPI);
    cmd.arg("pi").args(args).current_dir(cwd).env("HOME", home);
    match agent_dir {
        Some(d) => cmd.env("PI_CODING_AGENT_DIR", d),
        None => cmd.env_remove("PI_CODING_AGENT_DIR"),
    };
    cmd.output().unwrap()
}

fn source(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../integrations/pi/src")
        .join(name);
    std::fs::read_to_string(path).unwrap()
}

#[test]
fn install_writes_the_extension_where_pi_finds_it_and_remove_takes_it_away() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let cwd = dir.path().join("project");
    std::fs::create_dir_all(&home).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    let folder = home.join(".pi/agent/extensions/musepi");

    let dry = pi(&home, &cwd, None, &["install", "--dry-run"]);
    assert!(
        dry.status.success(),
        "{}",
        String::from_utf8_lossy(&dry.stderr)
    );
    assert!(!folder.exists(), "a dry run writes nothing");

    let out = pi(&home, &cwd, None, &["install", "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(doc["folder"], folder.display().to_string());
    assert_eq!(doc["previousVersion"], Value::Null);
    for name in ["index.ts", "musepi.ts", "bridge.ts", "recall.ts"] {
        assert_eq!(
            std::fs::read_to_string(folder.join(name)).unwrap(),
            source(name),
            "{name} is this checkout's"
        );
    }
    let marker: Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("musepi-extension.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker["musepi"], env!("CARGO_PKG_VERSION"));
    // The extension says the same version, so a session start finds they fit.
    assert!(source("musepi.ts").contains(&format!(
        "export const EXTENSION_VERSION = \"{}\";",
        env!("CARGO_PKG_VERSION")
    )));

    // Again: an update in place, which names what was there.
    let again = pi(&home, &cwd, None, &["install", "--json"]);
    let doc: Value = serde_json::from_slice(&again.stdout).unwrap();
    assert_eq!(doc["previousVersion"], env!("CARGO_PKG_VERSION"));

    let removed = pi(&home, &cwd, None, &["remove"]);
    assert!(removed.status.success());
    assert!(!folder.exists());
    let nothing = pi(&home, &cwd, None, &["remove", "--json"]);
    let doc: Value = serde_json::from_slice(&nothing.stdout).unwrap();
    assert_eq!(doc["removed"], false);
}

#[test]
fn pi_agent_dir_and_project_installs_and_a_foreign_folder_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let cwd = dir.path().join("project");
    let agent = dir.path().join("agent");
    for d in [&home, &cwd, &agent] {
        std::fs::create_dir_all(d).unwrap();
    }
    // pi already loads the checkout's copy (`pi install ./integrations/pi`).
    std::fs::write(
        agent.join("settings.json"),
        r#"{"packages": ["../../src/musepi/integrations/pi"]}"#,
    )
    .unwrap();
    let out = pi(&home, &cwd, Some(&agent), &["install"]);
    assert!(out.status.success());
    assert!(agent.join("extensions/musepi/index.ts").exists());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("pi also loads the extension from ../../src/musepi/integrations/pi")
            && stderr.contains("pi remove"),
        "{stderr}"
    );

    let project = pi(&home, &cwd, Some(&agent), &["install", "--project"]);
    assert!(project.status.success());
    assert!(cwd.join(".pi/extensions/musepi/bridge.ts").exists());

    // A folder of the same name that this command did not write.
    let foreign = home.join("other-agent/extensions/musepi");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("index.ts"), "// mine").unwrap();
    for verb in ["install", "remove"] {
        let out = pi(&home, &cwd, Some(&home.join("other-agent")), &[verb]);
        assert_eq!(out.status.code(), Some(2), "{verb}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("was not written by `musepi pi install`")
        );
        assert_eq!(
            std::fs::read_to_string(foreign.join("index.ts")).unwrap(),
            "// mine"
        );
    }
}
