//! The corpus of bad inputs in tests/fixtures/bad/: each file, run through
//! the command its row in `cases.tsv` names, exits with the code and says
//! the message the row expects, and no file is changed.

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const MUSEPI: &str = env!("CARGO_BIN_EXE_musepi");

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/bad")
}

struct Case {
    file: String,
    command: String,
    exit: i32,
    contains: String,
}

fn cases() -> Vec<Case> {
    let table = std::fs::read_to_string(corpus().join("cases.tsv")).unwrap();
    table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let cols: Vec<&str> = l.split('\t').collect();
            assert_eq!(cols.len(), 4, "cases.tsv: {l}");
            Case {
                file: cols[0].to_owned(),
                command: cols[1].to_owned(),
                exit: cols[2].parse().unwrap(),
                contains: cols[3].to_owned(),
            }
        })
        .collect()
}

/// The path a row runs on: a corpus file (copied, so the corpus is never
/// at risk), or a made one for the `@` rows.
fn prepare(case: &Case, dir: &Path) -> PathBuf {
    match case.file.as_str() {
        "@fifo" => {
            let fifo = dir.join("pipe.jsonl");
            let made = Command::new("mkfifo").arg(&fifo).status().unwrap();
            assert!(made.success());
            fifo
        }
        "@dev-zero" => PathBuf::from("/dev/zero"),
        "@empty-path" => PathBuf::new(),
        "@folder" => {
            let folder = dir.join("folder.jsonl");
            std::fs::create_dir(&folder).unwrap();
            folder
        }
        "@long-line" => {
            let path = dir.join("long.jsonl");
            let mut text = String::from(
                "{\"type\":\"session\",\"version\":3,\"id\":\"long\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/\"}\n\
                 {\"type\":\"message\",\"id\":\"a1\",\"parentId\":null,\"timestamp\":\"2025-01-01T00:00:01.000Z\",\"message\":{\"role\":\"user\",\"content\":\"hi\",\"timestamp\":1}}\n",
            );
            text.push_str(&"z".repeat(64 << 20));
            text.push_str("z\n");
            std::fs::write(&path, text).unwrap();
            path
        }
        name => {
            let to = dir.join(name);
            std::fs::copy(corpus().join(name), &to).unwrap();
            // A file at rest, as the corpus has it: a copy made a moment
            // ago would look live, and its torn tail an append in progress.
            musepi_test_support::written_ago(&to, std::time::Duration::from_mins(1));
            to
        }
    }
}

#[test]
fn every_bad_input_gets_its_exit_code_and_message_and_nothing_is_written() {
    let cases = cases();
    assert!(cases.len() >= 35, "the corpus shrank: {}", cases.len());
    let mut refused = 0;
    for case in &cases {
        let dir = tempfile::tempdir().unwrap();
        let path = prepare(case, dir.path());
        let before = std::fs::metadata(&path)
            .ok()
            .filter(std::fs::Metadata::is_file)
            .map(|_| std::fs::read(&path).unwrap());
        let args: Vec<String> = case
            .command
            .split(' ')
            .map(|a| {
                if a == "{}" {
                    path.display().to_string()
                } else {
                    a.to_owned()
                }
            })
            .collect();
        // A FIFO or /dev/zero read would never end: the refusal below,
        // not the time it took, shows musepi did not read them.
        let o = Command::new(MUSEPI)
            .args(&args)
            .current_dir(dir.path())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let all = format!(
            "{}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        assert_eq!(o.status.code(), Some(case.exit), "{}: {all}", case.file);
        assert!(
            all.contains(&case.contains),
            "{}: expected {:?} in:\n{all}",
            case.file,
            case.contains
        );
        if let Some(before) = before {
            assert_eq!(
                std::fs::read(&path).unwrap(),
                before,
                "{}: unchanged",
                case.file
            );
        }
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .filter(|n| n.to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(left.is_empty(), "{}: {left:?}", case.file);
        refused += 1;
    }
    eprintln!(
        "reliability: bad inputs: {refused} of {} refused or reported with the expected exit code and message",
        cases.len()
    );
}

/// Every corpus file has a row (a file may have several), and every row a file.
#[test]
fn the_table_and_the_folder_agree() {
    let mut files: Vec<String> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n != "cases.tsv" && n != "README.md")
        .collect();
    files.sort();
    let mut rows: Vec<String> = cases()
        .into_iter()
        .map(|c| c.file)
        .filter(|f| !f.starts_with('@'))
        .collect();
    rows.sort();
    rows.dedup();
    assert_eq!(files, rows);
}
