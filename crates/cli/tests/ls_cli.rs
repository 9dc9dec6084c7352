//! `musepi ls` and `--latest` run as a process with a temporary HOME: the
//! folder pi keeps a directory's sessions in, newest first, and the
//! overrides (`--session-dir`, `MUSEPI_SESSION_DIR`, pi's own variables).

#![allow(clippy::unwrap_used)]

mod support;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use musepi_test_support::{copy_written_ago, fixture};
use serde_json::Value;
use support::{assert_escaped, assert_has, strings};

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

/// A temporary HOME and a working directory under it, removed on drop.
struct Home {
    root: PathBuf,
}

impl Home {
    fn new(test: &str) -> Self {
        let root = std::env::temp_dir().join(format!("musepi-ls-{test}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&root);
        fs::create_dir_all(root.join("home")).unwrap();
        fs::create_dir_all(root.join("work/my proj")).unwrap();
        // pi names the folder after the real path, as `process.cwd()` gives it.
        let root = root.canonicalize().unwrap();
        Self { root }
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn cwd(&self) -> PathBuf {
        self.root.join("work/my proj")
    }

    /// pi's folder for the working directory: `~/.pi/agent/sessions/--<cwd>--`.
    fn pi_folder(&self) -> PathBuf {
        let cwd = self.cwd();
        let encoded = cwd
            .to_str()
            .unwrap()
            .trim_start_matches('/')
            .replace('/', "-");
        self.home()
            .join(".pi/agent/sessions")
            .join(format!("--{encoded}--"))
    }

    fn musepi(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(MUSEPI);
        cmd.args(args)
            .current_dir(self.cwd())
            .env("HOME", self.home())
            .env_remove("MUSEPI_SESSION_DIR")
            .env_remove("PI_CODING_AGENT_SESSION_DIR")
            .env_remove("PI_CODING_AGENT_DIR")
            .env("NO_COLOR", "1");
        cmd
    }

    fn run(&self, args: &[&str]) -> Output {
        self.musepi(args).output().unwrap()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.root);
    }
}

/// Copies `fixture` to `dir/name`, last modified `age` seconds ago.
fn place(dir: &Path, name: &str, fixture_name: &str, age: u64) -> PathBuf {
    copy_written_ago(
        &fixture(fixture_name),
        &dir.join(name),
        Duration::from_secs(age),
    )
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)))
}

#[test]
fn ls_lists_pi_s_sessions_of_the_working_directory_newest_first() {
    let h = Home::new("order");
    let dir = h.pi_folder();
    place(
        &dir,
        "2025-01-01T10-00-00-000Z_aaa.jsonl",
        "tree.jsonl",
        300,
    );
    place(
        &dir,
        "2025-01-02T10-00-00-000Z_bbb.jsonl",
        "worked_a.jsonl",
        10,
    );
    fs::write(dir.join("notes.jsonl"), "{\"not\": \"a session\"}\n").unwrap();
    fs::write(dir.join("README.md"), "x").unwrap();

    let out = h.run(&["ls", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let doc = json(&out);
    assert_eq!(doc["dir"], dir.display().to_string());
    assert_eq!(
        strings(&doc["sessions"], "file"),
        [
            "2025-01-02T10-00-00-000Z_bbb.jsonl",
            "2025-01-01T10-00-00-000Z_aaa.jsonl"
        ]
    );
    // Entries and tokens are the ones `musepi context` and `session stats` report.
    for s in doc["sessions"].as_array().unwrap() {
        let path = s["path"].as_str().unwrap();
        let context = json(&h.run(&["context", path, "--json"]));
        assert_eq!(s["contextTokens"], context["tokens"], "{path}");
        assert_eq!(s["leafId"], context["leafId"], "{path}");
        let stats = json(&h.run(&["session", "stats", path, "--json"]));
        assert_eq!(s["entries"], stats["entryCount"], "{path}");
        assert_eq!(s["size"], fs::metadata(path).unwrap().len());
    }

    let text = stdout(&h.run(&["ls"]));
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("modified"), "{text}");
    assert!(lines[1].contains("_bbb.jsonl"), "{text}");
    assert!(lines[2].contains("_aaa.jsonl"), "{text}");
    assert!(lines[3].starts_with("2 sessions in "), "{text}");
    // Aligned: the session column starts at the same place on every row.
    let at = |l: &str| l.find("2025-01-0").unwrap();
    assert_eq!(at(lines[1]), at(lines[2]), "{text}");
    assert_eq!(lines[0].find("session").unwrap(), at(lines[1]), "{text}");
}

#[test]
fn latest_is_the_session_pi_wrote_last_for_every_command() {
    let h = Home::new("latest");
    let dir = h.pi_folder();
    place(&dir, "a.jsonl", "tree.jsonl", 300);
    let newest = place(&dir, "b.jsonl", "worked_a.jsonl", 5);

    let by_name = h.run(&["context", newest.to_str().unwrap(), "--json"]);
    let latest = h.run(&["context", "--latest", "--json"]);
    assert!(latest.status.success(), "{latest:?}");
    assert_eq!(stdout(&latest), stdout(&by_name));

    let stats = h.run(&["session", "stats", "--latest", "--json"]);
    assert_eq!(
        json(&stats),
        json(&h.run(&["session", "stats", newest.to_str().unwrap(), "--json"]))
    );
    let plan = h.run(&["plan", "--latest", "--json"]);
    assert!(plan.status.success(), "{plan:?}");

    // FILE and --latest together, or neither, is bad usage.
    let both = h.run(&["context", newest.to_str().unwrap(), "--latest"]);
    assert_eq!(both.status.code(), Some(2), "{both:?}");
    let neither = h.run(&["context", "--json"]);
    assert_eq!(neither.status.code(), Some(2), "{neither:?}");
    assert_eq!(json(&neither)["error"]["code"], "usage");
}

#[test]
fn latest_compacts_the_newest_session_in_place() {
    let h = Home::new("compact");
    let dir = h.pi_folder();
    let old = place(&dir, "a.jsonl", "spec_example.jsonl", 300);
    let newest = place(&dir, "b.jsonl", "spec_example.jsonl", 100);
    let before = fs::read(&old).unwrap();
    let out = h.run(&["compact", "--latest", "--keep-recent", "1", "--json"]);
    assert!(out.status.success(), "{out:?}");
    let doc = json(&out);
    assert_eq!(doc["compacted"], true, "{doc}");
    assert_eq!(doc["file"], newest.display().to_string());
    assert_eq!(
        fs::read(&old).unwrap(),
        before,
        "the older session is untouched"
    );
}

#[test]
fn the_folder_can_be_named_by_flag_and_by_variables() {
    let h = Home::new("override");
    let mine = h.root.join("mine");
    let pis = h.root.join("pis");
    let agent = h.root.join("agent");
    place(&mine, "m.jsonl", "tree.jsonl", 10);
    place(&pis, "p.jsonl", "tree.jsonl", 10);
    let encoded = h.pi_folder().file_name().unwrap().to_owned();
    place(
        &agent.join("sessions").join(&encoded),
        "g.jsonl",
        "tree.jsonl",
        10,
    );
    let files = |out: Output| -> Vec<String> {
        assert!(out.status.success(), "{out:?}");
        json(&out)["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["file"].as_str().unwrap().to_owned())
            .collect()
    };

    let flag = h.run(&["ls", "--json", "--session-dir", mine.to_str().unwrap()]);
    assert_eq!(files(flag), ["m.jsonl"]);
    // The variables, each over the ones after it.
    for (vars, listed) in [
        (
            &[
                ("MUSEPI_SESSION_DIR", &mine),
                ("PI_CODING_AGENT_SESSION_DIR", &pis),
            ][..],
            "m.jsonl",
        ),
        (&[("PI_CODING_AGENT_SESSION_DIR", &pis)][..], "p.jsonl"),
        (&[("PI_CODING_AGENT_DIR", &agent)][..], "g.jsonl"),
    ] {
        let out = h
            .musepi(&["ls", "--json"])
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        assert_eq!(files(out), [listed], "{vars:?}");
    }
    // pi's own sessionDir setting.
    fs::create_dir_all(h.home().join(".pi/agent")).unwrap();
    fs::write(
        h.home().join(".pi/agent/settings.json"),
        format!("{{\"sessionDir\": {:?}}}", pis.to_str().unwrap()),
    )
    .unwrap();
    assert_eq!(files(h.run(&["ls", "--json"])), ["p.jsonl"]);

    let latest = h.run(&[
        "session",
        "stats",
        "--latest",
        "--session-dir",
        mine.to_str().unwrap(),
        "--json",
    ]);
    assert!(latest.status.success(), "{latest:?}");
}

#[test]
fn no_session_is_an_empty_list_for_ls_and_an_error_for_latest() {
    let h = Home::new("empty");
    let out = h.run(&["ls"]);
    assert!(out.status.success(), "{out:?}");
    assert!(
        stdout(&out).starts_with("no pi session in "),
        "{}",
        stdout(&out)
    );
    let doc = json(&h.run(&["ls", "--json"]));
    assert_eq!(doc["sessions"], Value::Array(Vec::new()));

    let latest = h.run(&["context", "--latest", "--json"]);
    assert_eq!(latest.status.code(), Some(2), "{latest:?}");
    assert_eq!(json(&latest)["error"]["code"], "no-session");
    let stderr = String::from_utf8_lossy(&latest.stderr);
    assert_has(&stderr, &h.pi_folder().display().to_string());

    let homeless = h.musepi(&["ls"]).env_remove("HOME").output().unwrap();
    assert_eq!(homeless.status.code(), Some(2), "{homeless:?}");
}

/// A file that is not a session musepi reads, and the folder, are named
/// escaped in the list for people: their names are the file system's.
#[test]
fn ls_escapes_the_unreadable_file_and_the_folder_it_names() {
    let h = Home::new("escaped");
    let odd = h.root.join("odd\u{202e}\u{7}");
    place(&odd, "a.jsonl", "tree.jsonl", 20);
    let unreadable = odd.join("b\u{202e}\u{1b}[2J.jsonl");
    fs::write(
        &unreadable,
        "{\"type\":\"session\",\"version\":99,\"id\":\"x\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
    )
    .unwrap();
    let out = h.run(&["ls", "--session-dir", odd.to_str().unwrap()]);
    assert!(out.status.success(), "{out:?}");
    let shown = h.root.join("odd\\u202e\\u0007");
    assert_escaped(
        &stdout(&out),
        &[
            "b\\u202e\\u001b[2J.jsonl  (unreadable)",
            &format!("2 sessions in {},", shown.display()),
        ],
    );
}
