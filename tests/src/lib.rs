//! Golden snapshot and conformance tests over fixture sessions.
//!
//! The fixtures live in `tests/fixtures` (see its README): hand-written
//! sessions, and the generated conformance sessions with the reference
//! implementation's answers in `fixtures/conformance`. The two real pi
//! sessions are other people's conversations and stay outside the
//! repository, in `../shared/fixtures/pi`: the tests over them run when
//! they are there and print a one-line notice when they are not
//! ([`pi_fixture`]). This library holds the helpers the test files share.
//!
//! The golden snapshot tests (`tests/golden_*.rs`) load our own fixture
//! sessions from `tests/fixtures` ([`fixtures`]) or generate them
//! ([`musepi_test_support::SessionBuilder`]), and render what the crates compute as readable text:
//! contexts, provider messages and transcripts ([`render_context`]), cut
//! points ([`render_cut`]), summary requests and pruning plans
//! ([`render_request`]), branch summaries of tree navigations
//! ([`render_branch`]), with tables from [`table`]. The real pi sessions
//! are shown only as ids, roles, numbers and hashes ([`show::Show::Hash`]).

pub mod fixtures;
pub mod render_branch;
pub mod render_context;
pub mod render_cut;
pub mod render_request;
pub mod scenarios;
pub mod show;
pub mod table;

use std::path::{Path, PathBuf};

pub use musepi_test_support::pi_fixture;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// `../shared`, next to the repository checkout: reference material that
/// is not part of the repository (the real pi sessions, and possibly a
/// newer conformance set).
pub fn shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

/// The conformance set in the repository, `tests/fixtures/conformance`.
pub fn conformance_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/conformance")
}

/// The conformance sets to check: the copy in the repository, then
/// `../shared/conformance` when it exists and holds anything the copy does
/// not (an extra, never required).
pub fn conformance_sets() -> Vec<PathBuf> {
    let mut sets = vec![conformance_dir()];
    let outside = shared_dir().join("conformance");
    if outside.join("answers/index.json").is_file() && differs(&outside, &conformance_dir()) {
        notice(&format!(
            "also checking the conformance set at {}",
            outside.display()
        ));
        sets.push(outside);
    }
    sets
}

/// Whether `dir` has a session or answer file that `copy` lacks or holds
/// with other bytes.
fn differs(dir: &Path, copy: &Path) -> bool {
    ["sessions", "answers"].iter().any(|sub| {
        std::fs::read_dir(dir.join(sub))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| {
                let theirs = std::fs::read(e.path()).ok();
                let ours = std::fs::read(copy.join(sub).join(e.file_name())).ok();
                theirs != ours
            })
    })
}

/// `tests/fixtures/conformance/sessions/<name>`.
pub fn conformance_session(name: &str) -> PathBuf {
    conformance_dir().join("sessions").join(name)
}

/// `tests/fixtures/conformance/answers/<name>`.
pub fn conformance_answer_path(name: &str) -> PathBuf {
    conformance_dir().join("answers").join(name)
}

/// One line on the process's stderr, past the test harness's capture, so
/// that it shows in the output of a passing test.
pub fn notice(line: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr(), "note: {line}");
}

/// Reads a JSON file. Lone surrogate escapes (`\\ud83d` without its pair),
/// which the answers use for JavaScript strings cut inside a pair, read as
/// U+FFFD, the character their recorded hashes were taken over.
pub fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let text = replace_lone_surrogates(&text);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn surrogate_at(b: &[u8], i: usize) -> Option<u16> {
    if b.get(i) != Some(&b'\\') || b.get(i + 1) != Some(&b'u') {
        return None;
    }
    let hex = std::str::from_utf8(b.get(i + 2..i + 6)?).ok()?;
    let v = u16::from_str_radix(hex, 16).ok()?;
    (0xD800..=0xDFFF).contains(&v).then_some(v)
}

fn replace_lone_surrogates(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut copied = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            // Count the run of backslashes: only an odd one starts an escape.
            let mut j = i;
            while j < b.len() && b[j] == b'\\' {
                j += 1;
            }
            let run = j - i;
            if run % 2 == 1 {
                let esc = j - 1;
                if let Some(v) = surrogate_at(b, esc) {
                    let paired = (0xD800..0xDC00).contains(&v)
                        && surrogate_at(b, esc + 6).is_some_and(|w| (0xDC00..=0xDFFF).contains(&w));
                    if paired {
                        i = esc + 12;
                        continue;
                    }
                    out.push_str(&text[copied..esc]);
                    out.push_str("\\ufffd");
                    i = esc + 6;
                    copied = i;
                    continue;
                }
            }
            i = j;
            continue;
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// One record of `answers/index.json`.
pub struct AnswerRecord {
    /// The conformance set the record belongs to.
    pub set: PathBuf,
    /// The answer file name.
    pub answer: String,
    /// The session file name.
    pub session: String,
    /// The leaf, when moved.
    pub leaf: Option<String>,
    /// The whole record.
    pub record: Value,
}

impl AnswerRecord {
    /// The session file.
    pub fn session_path(&self) -> PathBuf {
        self.set.join("sessions").join(&self.session)
    }

    /// A file of the set's `answers/` folder.
    pub fn answer_file(&self, name: &str) -> PathBuf {
        self.set.join("answers").join(name)
    }

    /// The answer, read.
    pub fn read_answer(&self) -> Value {
        read_json(&self.answer_file(&self.answer))
    }
}

/// Every record of `answers/index.json` of every set of
/// [`conformance_sets`], in order.
pub fn answer_index() -> Vec<AnswerRecord> {
    let mut records = Vec::new();
    for set in conformance_sets() {
        let index = read_json(&set.join("answers/index.json"));
        for r in index["answers"].as_array().expect("answers array") {
            records.push(AnswerRecord {
                set: set.clone(),
                answer: r["answer"].as_str().expect("answer").to_owned(),
                session: r["session"].as_str().expect("session").to_owned(),
                leaf: r["leaf"].as_str().map(str::to_owned),
                record: r.clone(),
            });
        }
    }
    records
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    digest.iter().fold(String::new(), |mut s, b| {
        use std::fmt::Write as _;
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Canonical JSON as the answers define it: no whitespace, numbers and
/// strings as `JSON.stringify` writes them, object keys printed in UTF-16
/// code-unit order (even integer-like ones).
pub fn canonical_json(value: &Value) -> String {
    use musepi_session_model::json::{js_number_value, push_js_number, push_js_string};
    fn write(out: &mut String, value: &Value) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
                out.push('{');
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    push_js_string(out, k);
                    out.push(':');
                    write(out, &map[k]);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(out, item);
                }
                out.push(']');
            }
            Value::Number(n) => push_js_number(out, js_number_value(n)),
            Value::String(s) => push_js_string(out, s),
            other => out.push_str(&musepi_session_model::json::js_stringify(other)),
        }
    }
    let mut out = String::new();
    write(&mut out, value);
    out
}

/// Image blocks in a user message: the reference counts them as nothing,
/// we count 4,800 characters each (docs/design.md, "Where musepi differs from pi"), so the answers'
/// numbers are raised by 1,200 tokens per image before comparing.
pub fn user_images(m: &musepi_session_model::AgentMessage) -> u64 {
    match m {
        musepi_session_model::AgentMessage::User(u) => u
            .content
            .blocks()
            .iter()
            .filter(|b| matches!(b, musepi_session_model::ContentBlock::Image { .. }))
            .count() as u64,
        _ => 0,
    }
}

/// Claude Sonnet 4.5 over the Anthropic Messages API: it reads images, but
/// a frame costs it about as many tokens as the text it prints, so it gets
/// the text archive.
pub fn claude_reader() -> musepi_hooks::snapcompact::SnapTarget {
    musepi_hooks::snapcompact::SnapTarget::images(
        "claude-sonnet-4-5",
        "anthropic-messages",
        "anthropic",
    )
}

/// The reader the snapcompact PNG snapshots and the benchmark compact for:
/// Gemini 2.5 Pro over the Google API, for which a frame costs a fifth of
/// the text it prints, so a history of a few frames gets PNG frames.
pub fn gemini_reader() -> musepi_hooks::snapcompact::SnapTarget {
    musepi_hooks::snapcompact::SnapTarget::images(
        "gemini-2.5-pro",
        "google-generative-ai",
        "google",
    )
}
