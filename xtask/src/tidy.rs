//! `cargo xtask tidy`: checks that need no compiler.
//!
//! - every crate's `src/lib.rs` (or `src/main.rs`, and each `src/bin` target)
//!   opens with a `//!` block;
//! - every library crate under `crates/` has a README.md;
//! - no unfinished-work or debugging macros and no ignored tests in
//!   `crates/`, `tests/` and `xtask/`;
//! - no trailing whitespace or tabs in `.rs`, `.md` and `.toml` files;
//! - no `.rs` file over 1000 lines of non-test code (a warning over 500);
//! - no copy of the real pi sessions of `../shared/fixtures/pi` (no file may
//!   contain one of their session ids);
//! - no citation of the behaviour description or the decision list the
//!   project was built from (they are not in the repository);
//! - no pending insta snapshot (`*.snap.new`, `*.pending-snap`) anywhere in
//!   the working tree (they are git-ignored, so the folders are searched).
//!
//! Every finding is printed as `file:line: problem`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use crate::root;

/// Non-test lines above which a file fails.
const MAX_LINES: usize = 1000;
/// Non-test lines above which a file gets a warning.
const WARN_LINES: usize = 500;

pub(crate) fn run() -> anyhow::Result<()> {
    let root = root();
    let files = repo_files(&root)?;
    let mut t = Tidy::default();
    crate_docs(&root, &mut t);
    for file in &files {
        let path = root.join(file);
        let Ok(bytes) = fs::read(&path) else {
            continue; // deleted in the working tree
        };
        let text = String::from_utf8_lossy(&bytes);
        let is_rs = has_ext(file, "rs");
        if is_rs
            && ["crates/", "tests/", "xtask/"]
                .iter()
                .any(|d| file.starts_with(d))
        {
            forbidden_macros(file, &text, &mut t);
            file_size(file, &text, &mut t);
        }
        if is_rs || has_ext(file, "md") || has_ext(file, "toml") {
            whitespace(file, &text, &mut t);
        }
        if ["rs", "md", "toml", "py", "sh", "mjs", "txt"]
            .iter()
            .any(|e| has_ext(file, e))
        {
            citations(file, &text, &mut t);
        }
    }
    for file in crate::golden::pending_snapshots(&root) {
        t.error(
            &file,
            0,
            "pending insta snapshot; review it (`cargo insta review`, or `cargo xtask golden --accept`) or delete it",
        );
    }
    fixture_copies(&root, &files, &mut t);
    for w in &t.warnings {
        eprintln!("warning: {w}");
    }
    for e in &t.errors {
        eprintln!("{e}");
    }
    if t.errors.is_empty() {
        println!(
            "tidy: ok ({} files, {} warning(s))",
            files.len(),
            t.warnings.len()
        );
        Ok(())
    } else {
        bail!("{} tidy problem(s)", t.errors.len())
    }
}

#[derive(Default)]
struct Tidy {
    errors: Vec<String>,
    warnings: Vec<String>,
}

impl Tidy {
    fn error(&mut self, file: &str, line: usize, msg: impl AsRef<str>) {
        self.errors.push(located(file, line, msg.as_ref()));
    }

    fn warn(&mut self, file: &str, line: usize, msg: impl AsRef<str>) {
        self.warnings.push(located(file, line, msg.as_ref()));
    }
}

fn has_ext(file: &str, ext: &str) -> bool {
    Path::new(file)
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case(ext))
}

fn located(file: &str, line: usize, msg: &str) -> String {
    if line == 0 {
        format!("{file}: {msg}")
    } else {
        format!("{file}:{line}: {msg}")
    }
}

/// Files of the repository, relative to `root`: tracked files plus untracked
/// ones that are not ignored.
pub(crate) fn repo_files(root: &Path) -> anyhow::Result<Vec<String>> {
    let out = Command::new("git")
        .args([
            "ls-files",
            "-z",
            "--cached",
            "--others",
            "--exclude-standard",
        ])
        .current_dir(root)
        .output()
        .context("cannot run git ls-files")?;
    if !out.status.success() {
        bail!(
            "git ls-files failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    let mut files: Vec<String> = out
        .stdout
        .split(|&b| b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect();
    files.sort();
    files.dedup();
    Ok(files)
}

/// Package folders: `crates/*`, `tests`, `xtask`.
fn package_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(root.join("crates"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("Cargo.toml").is_file())
        .collect();
    dirs.sort();
    for extra in ["tests", "xtask"] {
        if root.join(extra).join("Cargo.toml").is_file() {
            dirs.push(root.join(extra));
        }
    }
    dirs
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}

/// Crate roots open with `//!`; library crates have a README.md.
fn crate_docs(root: &Path, t: &mut Tidy) {
    for dir in package_dirs(root) {
        let src = dir.join("src");
        let mut roots: Vec<PathBuf> = ["lib.rs", "main.rs"]
            .iter()
            .map(|f| src.join(f))
            .filter(|p| p.is_file())
            .collect();
        for entry in fs::read_dir(src.join("bin"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let p = entry.path();
            if p.extension().is_some_and(|e| e == "rs") {
                roots.push(p);
            } else if p.join("main.rs").is_file() {
                roots.push(p.join("main.rs"));
            }
        }
        roots.sort();
        if roots.is_empty() {
            t.error(
                &rel(root, &dir),
                0,
                "package has no src/lib.rs or src/main.rs",
            );
        }
        for file in &roots {
            let text = fs::read_to_string(file).unwrap_or_default();
            let first = text.lines().find(|l| !l.trim().is_empty());
            if !first.is_some_and(|l| l.trim_start().starts_with("//!")) {
                t.error(
                    &rel(root, file),
                    1,
                    "a crate root opens with a `//!` block: what the crate owns, what it must not know, its entry points",
                );
            }
        }
        let is_library = src.join("lib.rs").is_file() && !src.join("main.rs").is_file();
        let in_crates = dir.parent().is_some_and(|p| p.ends_with("crates"));
        if in_crates && is_library && !dir.join("README.md").is_file() {
            t.error(
                &rel(root, &dir.join("README.md")),
                0,
                "missing: every library crate has a README with a ten-line use of the crate",
            );
        }
    }
}

/// Macros and attributes that must not be committed. The patterns are
/// assembled at run time so this file does not trip its own check.
fn forbidden_macros(file: &str, text: &str, t: &mut Tidy) {
    let bang = "!(";
    let patterns = [
        (format!("todo{bang}"), "unfinished code (`todo!`)"),
        (
            format!("unimplemented{bang}"),
            "unfinished code (`unimplemented!`)",
        ),
        (format!("dbg{bang}"), "debugging macro (`dbg!`)"),
        (
            format!("#[{}", "ignore"),
            "ignored test (an `ignore` attribute): fix it or delete it",
        ),
    ];
    for (i, line) in text.lines().enumerate() {
        for (pat, what) in &patterns {
            if let Some(pos) = line.find(pat.as_str()) {
                let before = &line[..pos];
                // A longer name ending in a forbidden one is another macro; the
                // attribute needs no boundary.
                let boundary = pat.starts_with('#')
                    || !before
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_');
                if boundary {
                    t.error(file, i + 1, *what);
                }
            }
        }
    }
}

/// References to the behaviour description and decision list the project
/// was built from: they are not in the repository, so a reader cannot
/// follow them. The patterns are assembled at run time so this file does
/// not trip its own check.
fn citations(file: &str, text: &str, t: &mut Tidy) {
    let section = '\u{a7}';
    let spec = ["SP", "EC"].concat();
    let patterns = [
        format!("{spec} {section}"),
        format!("{spec} Appendix"),
        ["spec", "-decisions"].concat(),
    ];
    for (i, line) in text.lines().enumerate() {
        let numbered = line.char_indices().any(|(k, c)| {
            c == section && line[k + c.len_utf8()..].starts_with(|d: char| d.is_ascii_digit())
        });
        if numbered || patterns.iter().any(|p| line.contains(p.as_str())) {
            t.error(
                file,
                i + 1,
                "cites a document that is not in the repository: describe the behaviour, or point at docs/design.md",
            );
        }
    }
}

fn whitespace(file: &str, text: &str, t: &mut Tidy) {
    for (i, line) in text.lines().enumerate() {
        if line.contains('\t') {
            t.error(file, i + 1, "tab character");
        }
        if line.ends_with(' ') || line.ends_with('\t') || line.ends_with('\r') {
            t.error(file, i + 1, "trailing whitespace");
        }
    }
}

/// Lines of non-test code: lines that are not blank, outside items marked
/// `#[cfg(test)]`. Integration tests (`tests/` folders) are all test code.
fn non_test_lines(text: &str) -> usize {
    non_test_code(text)
        .iter()
        .filter(|(_, line)| !line.trim().is_empty())
        .count()
}

/// The lines of `text` outside items marked `#[cfg(test)]` (a test module,
/// and a single test-only item anywhere in the file), each with its
/// 1-based number.
pub(crate) fn non_test_code(text: &str) -> Vec<(usize, &str)> {
    let mut code = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((i, line)) = lines.next() {
        if line.trim() == "#[cfg(test)]" {
            skip_item(&mut (&mut lines).map(|(_, l)| l));
            continue;
        }
        code.push((i + 1, line));
    }
    code
}

/// Skips the item after an attribute: up to its `;` or its closing brace.
fn skip_item<'a>(lines: &mut impl Iterator<Item = &'a str>) {
    let mut depth = 0i64;
    let mut opened = false;
    for line in lines {
        for c in line.chars() {
            match c {
                '{' => {
                    depth += 1;
                    opened = true;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        if (opened && depth <= 0) || (!opened && line.trim_end().ends_with(';')) {
            return;
        }
    }
}

fn file_size(file: &str, text: &str, t: &mut Tidy) {
    let is_test_file =
        file.split('/').any(|part| part == "tests") && !file.starts_with("tests/src/");
    if is_test_file {
        return;
    }
    let n = non_test_lines(text);
    if n > MAX_LINES {
        t.error(
            file,
            0,
            format!("{n} lines of non-test code (limit {MAX_LINES}); split it by responsibility"),
        );
    } else if n > WARN_LINES {
        t.warn(
            file,
            0,
            format!("{n} lines of non-test code (aim for under {WARN_LINES})"),
        );
    }
}

/// The session ids in the headers of `../shared/fixtures/pi/*.jsonl`.
fn fixture_ids(root: &Path) -> Option<Vec<(String, String)>> {
    let dir = root.join("../shared/fixtures/pi");
    let entries = fs::read_dir(&dir).ok()?;
    let mut ids = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        let Ok(text) = fs::read_to_string(&path) else {
            continue;
        };
        let header = text.lines().find_map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).ok()?;
            (v["type"] == "session").then(|| v["id"].as_str().map(str::to_owned))?
        });
        if let Some(id) = header.filter(|id| id.len() >= 8) {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            ids.push((id, name.unwrap_or_default()));
        }
    }
    ids.sort();
    Some(ids)
}

fn fixture_copies(root: &Path, files: &[String], t: &mut Tidy) {
    let Some(ids) = fixture_ids(root) else {
        println!("tidy: note: ../shared/fixtures/pi is absent; the fixture-copy check was skipped");
        return;
    };
    for file in files {
        let Ok(bytes) = fs::read(root.join(file)) else {
            continue;
        };
        for (id, fixture) in &ids {
            if let Some(pos) = find(&bytes, id.as_bytes()) {
                let line = bytes[..pos].split(|&b| b == b'\n').count();
                t.error(
                    file,
                    line,
                    format!(
                        "contains the session id of the real fixture {fixture}: the real sessions stay in ../shared; snapshots record ids, roles, numbers and hashes only"
                    ),
                );
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() {
        return None;
    }
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The `.rs` files under `dir`, sorted, test files (`*tests.rs`) left out.
pub(crate) fn rs_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(list) = fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = list.filter_map(Result::ok).map(|e| e.path()).collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rs_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs")
            && !path
                .file_name()
                .is_some_and(|n| n.to_string_lossy().ends_with("tests.rs"))
        {
            out.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn test_modules_do_not_count() {
        let text = "fn a() {}\n\n#[cfg(test)]\nmod tests {\n    fn b() {\n    }\n}\nfn c() {}\n";
        assert_eq!(non_test_lines(text), 2);
    }

    #[test]
    fn forbidden_macros_are_found_with_their_line() {
        let mut t = Tidy::default();
        let text = format!("fn a() {{\n    {}!(x);\n    my{}!(y);\n}}\n", "dbg", "todo");
        forbidden_macros("x.rs", &text, &mut t);
        assert_eq!(
            t.errors,
            vec!["x.rs:2: debugging macro (`dbg!`)".to_owned()]
        );
    }

    #[test]
    fn citations_of_documents_outside_the_repository_are_found() {
        let mut t = Tidy::default();
        let (spec, sec) = (["SP", "EC"].concat(), '\u{a7}');
        let decisions = ["spec", "-decisions 6"].concat();
        let text = format!(
            "ok\n// ({spec} {sec}7.5)\n// see {decisions}\n// pricing {sec}\n// docs/design.md, \"Pruning\"\n// {sec}14.2\n"
        );
        citations("a.rs", &text, &mut t);
        let lines: Vec<&str> = t
            .errors
            .iter()
            .map(|e| e.split(": ").next().unwrap())
            .collect();
        assert_eq!(lines, ["a.rs:2", "a.rs:3", "a.rs:6"]);
    }

    /// The check itself, over this working tree: plain `cargo test`
    /// keeps the tidy rules, not only `cargo xtask check`.
    #[test]
    fn the_working_tree_is_tidy() {
        if let Err(e) = run() {
            panic!("cargo xtask tidy: {e:#}");
        }
    }

    #[test]
    fn whitespace_problems_name_the_line() {
        let mut t = Tidy::default();
        whitespace("a.md", "ok\nbad \n\tx\n", &mut t);
        assert_eq!(
            t.errors,
            vec![
                "a.md:2: trailing whitespace".to_owned(),
                "a.md:3: tab character".to_owned()
            ]
        );
    }
}
