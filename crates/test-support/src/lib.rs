//! What the musepi crates' tests share.
//!
//! This crate owns three things every test suite of the workspace needs
//! and none should write again:
//!
//! - [`SessionBuilder`]: sessions written as JSONL lines, exactly like a
//!   file, and loaded with the normal loader; [`EntryBuilder`] when a test
//!   needs the typed session in memory and keeps appending to it;
//! - [`golden!`]: one golden snapshot check (insta, named by the caller,
//!   without the module prefix or the expression);
//! - [`http::Server`]: a scripted HTTP server on 127.0.0.1 that records
//!   every request, so provider and command tests never reach another host.
//!
//! Beside them, [`pi_fixture`] finds the real pi sessions next to the
//! repository for the tests that read them, and skips those tests with a
//! notice where they are absent, [`hold_open`] keeps a file open for
//! writing in another process ([`LateWriter`] writes a line through it
//! when told), [`written_ago`] dates a file back
//! ([`copy_written_ago`] a copy), [`fixture`] names a file of the
//! repository's tests/fixtures, and [`example_as_v2`] writes the
//! repository's example session as a v2 file.
//!
//! It must not know any crate above session-model, so every crate of the
//! workspace can use it in its tests; it is never published.

// A failure in test support is a failure of the test that called it.
#![allow(clippy::missing_panics_doc)]

use std::path::{Path, PathBuf};

mod builder;
mod entries;
pub mod http;

pub use builder::{SessionBuilder, message_line, session_of, text_block, tool_call};
pub use entries::EntryBuilder;
#[doc(hidden)]
pub use insta;

/// Where the real pi sessions are looked for, from the repository's root.
pub const REAL_SESSIONS: &str = "../shared/fixtures/pi";

/// The real pi session `name` from the folder of real sessions next to the
/// repository ([`REAL_SESSIONS`]), or `None` with a one-line notice naming
/// `test` when it is absent: the real pi sessions are other people's
/// conversations, never copied into the repository.
pub fn pi_fixture(test: &str, name: &str) -> Option<PathBuf> {
    use std::io::Write as _;
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(REAL_SESSIONS)
        .join(name);
    if path.is_file() {
        return Some(path);
    }
    // Past the test harness's capture, so that it shows for a passing test.
    let _ = writeln!(
        std::io::stderr(),
        "note: skipped {test}: the real pi session {name} is not next to the repository ({REAL_SESSIONS})"
    );
    None
}

/// The repository's example session (`examples/sessions/todo-refactor.jsonl`)
/// written at `dir/name` as a v2 file, so that the first write to it is a
/// rewrite that migrates it.
pub fn example_as_v2(dir: &Path, name: &str) -> PathBuf {
    let example =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl");
    let text = std::fs::read_to_string(example)
        .expect("the example session")
        .replacen("\"version\":3", "\"version\":2", 1);
    let path = dir.join(name);
    std::fs::write(&path, text).expect("the v2 copy written");
    path
}

/// How [`hold_open`] opens its file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hold {
    /// For appending, as an appender paused between its open and its write.
    Appending,
    /// For reading only.
    Reading,
}

/// Starts a process that opens `path` as `how` says and keeps it open
/// until it is killed; it holds the file when this returns. (Another
/// process, since a rewrite does not wait for its own descriptors.) It
/// waits on a standard input that stays open as long as the child, not
/// for a time a busy machine could outlast.
pub fn hold_open(path: &Path, how: Hold) -> std::process::Child {
    let redirect = match how {
        Hold::Appending => ">>",
        Hold::Reading => "<",
    };
    sh_with_file_open(
        &format!("exec 3{redirect}\"$0\"; echo open; exec cat"),
        path,
    )
}

/// Runs `script` in `sh` with `path` as `$0`, its standard input and
/// output piped, and returns once the script has said `open` (the file is
/// held on descriptor 3 by then).
fn sh_with_file_open(script: &str, path: &Path) -> std::process::Child {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(script)
        .arg(path)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sh starts");
    let mut said = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().expect("stdout is piped")),
        &mut said,
    )
    .expect("sh says it opened the file");
    child
}

/// A process that opened a file for appending and writes one line to it
/// when told: an appender (pi's `appendFileSync`) that opened the session
/// just before a rewrite replaced it, and writes to the replaced file
/// after the rename.
#[derive(Debug)]
pub struct LateWriter {
    child: std::process::Child,
}

impl LateWriter {
    /// Starts the process; it holds `path` open for appending when this
    /// returns, and waits on its standard input (not for a time a busy
    /// machine could outlast).
    pub fn open(path: &Path) -> Self {
        let child = sh_with_file_open(
            r#"exec 3>>"$0"; echo open; IFS= read -r line; printf '%s\n' "$line" >&3"#,
            path,
        );
        Self { child }
    }

    /// Writes `line` (without its newline, which the process adds) through
    /// the descriptor it opened, in one write, and waits for the process
    /// to close it and end.
    pub fn write(mut self, line: &str) {
        use std::io::Write as _;
        let mut stdin = self.child.stdin.take().expect("stdin is piped");
        writeln!(stdin, "{line}").expect("the line handed over");
        drop(stdin);
        let status = self.child.wait().expect("sh ends");
        assert!(status.success(), "sh wrote the line: {status}");
    }
}

/// The last line of the file at `path`, parsed: the entry a test's write
/// appended last.
pub fn last_line(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path).expect("read the file");
    let line = text.lines().last().expect("the file has a line");
    serde_json::from_str(line).expect("the last line is JSON")
}

/// The repository's test fixture `name`: a path under `tests/fixtures`.
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/fixtures")
        .join(name)
}

/// Copies the file `from` to `to`, creating the folder it goes in, and
/// dates the copy `age` back ([`written_ago`]); returns `to`.
pub fn copy_written_ago(from: &Path, to: &Path, age: std::time::Duration) -> PathBuf {
    if let Some(folder) = to.parent() {
        std::fs::create_dir_all(folder).expect("create the copy's folder");
    }
    std::fs::copy(from, to).expect("copy the file");
    written_ago(to, age);
    to.to_path_buf()
}

/// Sets the modification time of the file at `path` to `age` ago, leaving
/// its bytes alone: the file looks as if nobody had written it since.
pub fn written_ago(path: &Path, age: std::time::Duration) {
    std::fs::File::options()
        .append(true)
        .open(path)
        .expect("open the file to date it")
        .set_modified(std::time::SystemTime::now() - age)
        .expect("set the modification time");
}

/// The sections every structured summary prompt asks for, in order: the
/// compaction history prompts add `## Critical Context` after them, the
/// branch summary prompt does not.
pub const SUMMARY_SECTIONS: [&str; 8] = [
    "## Goal",
    "## Constraints & Preferences",
    "## Progress",
    "### Done",
    "### In Progress",
    "### Blocked",
    "## Key Decisions",
    "## Next Steps",
];

/// Asserts that every one of `parts` occurs in `text`, in this order
/// (`what` names the text in the message).
/// Each part is looked for after the end of the one before it, so a part
/// that is missing, or found only before the one before it, fails.
pub fn assert_in_order(what: &str, text: &str, parts: &[&str]) {
    let mut from = 0;
    for (i, part) in parts.iter().enumerate() {
        match text[from..].find(part) {
            Some(at) => from += at + part.len(),
            None if text.contains(part) => {
                panic!("{what}: part {i} {part:?} comes only before part {}", i - 1)
            }
            None => panic!("{what}: part {i} {part:?} is missing"),
        }
    }
}

/// Asserts that `text` equals the stored snapshot `name`: the one golden
/// check of every snapshot test (named by the caller, no module prefix, no
/// expression in the file), for example
/// `musepi_test_support::golden!("cut__split_turn", rendered)`.
#[macro_export]
macro_rules! golden {
    ($name:expr, $text:expr) => {{
        let mut settings = $crate::insta::Settings::clone_current();
        settings.set_prepend_module_to_snapshot(false);
        settings.set_omit_expression(true);
        settings.bind(|| $crate::insta::assert_snapshot!($name, $text));
    }};
}

#[cfg(test)]
mod tests {
    use super::assert_in_order;

    #[test]
    fn parts_in_order_pass() {
        assert_in_order("t", "a b c", &["a", "b", "c"]);
    }

    #[test]
    #[should_panic(expected = "part 2 \"d\" is missing")]
    fn a_missing_last_part_fails() {
        assert_in_order("t", "a b c", &["a", "b", "d"]);
    }

    #[test]
    #[should_panic(expected = "part 1 \"a\" comes only before part 0")]
    fn a_part_found_only_before_the_one_before_it_fails() {
        assert_in_order("t", "a b", &["b", "a"]);
    }
}
