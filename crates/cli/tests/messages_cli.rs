//! What musepi says, worded one way everywhere: lowercase messages,
//! numbers with thousands separators, retries counted as the final error
//! counts them, a hook's reason in the error, plain words where a raw
//! system error would show, a warning for a misspelled setting, a report
//! that says what a command wrote, and singulars for one.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use support::{
    Model, Reply, assert_has, code, example_session, json_out, musepi_in, p, script, stderr,
    stdout, write_file,
};

fn run(dir: &Path, args: &[&str]) -> Output {
    musepi_in(dir, dir, args, None)
}

fn session(dir: &Path) -> PathBuf {
    example_session(dir, "s.jsonl")
}

#[test]
fn reports_print_numbers_with_thousands_separators() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let o = run(dir.path(), &["context", p(&file)]);
    assert_has(&stdout(&o), "114 messages, 31,315 tokens in context");
    let o = run(dir.path(), &["plan", p(&file)]);
    let plan = stdout(&o);
    for row in [
        "context tokens      31,315 ",
        "tokens before       45,210 ",
        "threshold           170,000 of a 200,000-token window; measured 45,210",
        "keep recent tokens  14,583",
    ] {
        assert_has(&plan, row);
    }
    let o = run(
        dir.path(),
        &["prune", p(&file), "--dry-run", "--min-saving", "0"],
    );
    assert_has(&stdout(&o), "20 results, would save 17,702 tokens");
    assert_has(&stdout(&o), "  1,156 → 20 ");
    let out = dir.path().join("c.jsonl");
    let o = run(dir.path(), &["compact", p(&file), "-o", p(&out)]);
    assert_has(
        &stdout(&o),
        "31,315 → 18,057 in context (tokensBefore 45,210)",
    );
    let o = run(dir.path(), &["ls", "--session-dir", p(dir.path())]);
    assert_has(&stdout(&o), "  31,315  ");
    assert_has(&stdout(&o), "  18,057  ");
    // No figure of five digits or more is printed without its separator
    // (ids, such as 0000003f, are words of their own).
    let raw = plan
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_ascii_alphanumeric()))
        .find(|w| w.len() >= 5 && w.chars().all(|c| c.is_ascii_digit()));
    assert!(raw.is_none(), "plan prints {raw:?} raw:\n{plan}");
}

#[test]
fn retries_are_counted_as_the_final_error_counts_them() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let model = Model::start(Reply::json(500, &json!({"error": {"message": "oops"}})));
    let settings = write_file(
        dir.path(),
        "settings.json",
        json!({"providers": {"m": {"kind": "openai-compatible", "baseUrl": model.url, "model": "m", "maxRetries": 1}}})
            .to_string(),
    );
    let out = dir.path().join("out.jsonl");
    let o = run(
        dir.path(),
        &[
            "compact",
            p(&file),
            "--strategy",
            "llm",
            "--provider",
            "m",
            "--no-short-summary",
            "--settings",
            p(&settings),
            "-o",
            p(&out),
        ],
    );
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    let err = stderr(&o);
    let retries: Vec<&str> = err.lines().filter(|l| l.contains("retrying")).collect();
    assert!(!retries.is_empty(), "{err}");
    // Each request (the history and the turn prefix run at once) retries
    // once: attempt 1 of 2, then the error after 2 attempts.
    for line in &retries {
        assert!(
            line.starts_with("musepi: m: attempt 1 of 2 failed (HTTP 500"),
            "{line}\n{err}"
        );
    }
    assert!(retries.len() <= 2, "{err}");
    assert_has(&err, "musepi: error: summarization failed: ");
    assert!(!out.exists());
}

#[test]
fn a_hooks_cancel_reason_is_in_the_error_and_its_json_message() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let exit_2 = script(
        dir.path(),
        "veto.sh",
        "cat >/dev/null\necho 'hold on: tests are red' >&2\nexit 2",
    );
    let answer = script(
        dir.path(),
        "answer.sh",
        r#"cat >/dev/null
echo '{"cancel": true, "reason": "frozen for the release"}'"#,
    );
    for (hook, reason) in [
        (&exit_2, "hold on: tests are red"),
        (&answer, "frozen for the release"),
    ] {
        let settings = write_file(
            dir.path(),
            "hooks.json",
            json!({"hooks": {"session_before_compact": [{"command": [p(hook)]}]}}).to_string(),
        );
        let out = dir.path().join("out.jsonl");
        let o = run(
            dir.path(),
            &[
                "compact",
                p(&file),
                "-o",
                p(&out),
                "--settings",
                p(&settings),
                "--json",
            ],
        );
        assert_eq!(code(&o), 1, "{}", stderr(&o));
        let doc: Value = json_out(&o);
        assert_eq!(doc["error"]["code"], "cancelled");
        let expected = format!("compaction cancelled by hook {}: {reason}", p(hook));
        assert_eq!(doc["error"]["message"], expected.as_str());
        assert_has(&stderr(&o), &format!("musepi: error: {expected}\n"));
        assert!(!out.exists());
    }
}

#[test]
fn error_messages_start_lowercase() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let veto = script(dir.path(), "veto.sh", "cat >/dev/null\nexit 2");
    let settings = write_file(
        dir.path(),
        "hooks.json",
        json!({"hooks": {"session_before_compact": [{"command": [p(&veto)]}]}}).to_string(),
    );
    let out = dir.path().join("out.jsonl");
    let o = run(
        dir.path(),
        &[
            "compact",
            p(&file),
            "-o",
            p(&out),
            "--settings",
            p(&settings),
        ],
    );
    assert_eq!(code(&o), 1);
    let err = stderr(&o);
    let line = err
        .lines()
        .find(|l| l.starts_with("musepi: error: "))
        .unwrap();
    assert!(
        line.starts_with(&format!(
            "musepi: error: compaction cancelled by hook {}",
            p(&veto)
        )),
        "{err}"
    );
    for l in err.lines().filter(|l| l.starts_with("musepi: ")) {
        let rest = l
            .trim_start_matches("musepi: ")
            .trim_start_matches("error: ");
        let first = rest.split(' ').next().unwrap_or_default();
        assert!(
            !(first.len() > 1
                && first.starts_with(|c: char| c.is_ascii_uppercase())
                && first[1..].chars().all(|c| c.is_ascii_lowercase())),
            "capitalised: {l}"
        );
    }
}

#[test]
fn trust_in_a_folder_without_settings_says_there_is_nothing_to_trust() {
    let dir = tempfile::tempdir().unwrap();
    for args in [&["trust"][..], &["trust", "--dry-run", "--json"]] {
        let o = run(dir.path(), args);
        assert_eq!(code(&o), 2, "{args:?}");
        let err = stderr(&o);
        assert_has(
            &err,
            "settings.json: there is no settings file here, so there is nothing to trust",
        );
        assert!(!err.contains("No such file or directory"), "{err}");
        assert!(!err.contains("os error"), "{err}");
    }
}

#[test]
fn a_misspelled_settings_key_is_a_warning_with_the_nearest_known_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let settings = write_file(
        dir.path(),
        "typo.json",
        json!({"compaction": {"keepRecentTokns": 100}, "snapcompact": {"shape": "auto"}, "hookz": {}, "providers": {"mine": {"kind": "anthropic"}}})
            .to_string(),
    );
    let o = run(
        dir.path(),
        &["plan", p(&file), "--settings", p(&settings), "--json"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert_has(
        &err,
        "typo.json: compaction.keepRecentTokns: unknown key (did you mean `keepRecentTokens`?); value ignored",
    );
    assert_has(
        &err,
        "typo.json: hookz: unknown key (did you mean `hooks`?); value ignored",
    );
    // A provider's name and a known key are no warning.
    assert_eq!(err.matches("unknown key").count(), 2, "{err}");
    let doc = json_out(&o);
    let warnings = doc["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{doc}");
}

#[test]
fn branch_to_the_leaf_with_o_says_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let out = dir.path().join("b.jsonl");
    let o = run(
        dir.path(),
        &["branch", p(&file), "--to", "00000074", "-o", p(&out)],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        format!(
            "already there: the leaf does not move; wrote the session unchanged to {}\n",
            p(&out)
        )
    );
    assert_eq!(std::fs::read(&out).unwrap(), std::fs::read(&file).unwrap());
    // In place nothing is written, and it says so.
    let o = run(
        dir.path(),
        &["branch", p(&file), "--to", "00000074", "--force"],
    );
    assert_eq!(stdout(&o), "already there: nothing to do\n");
}

#[test]
fn render_counts_one_frame_in_the_singular() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let compacted = dir.path().join("c.jsonl");
    let o = run(dir.path(), &["compact", p(&file), "-o", p(&compacted)]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let frames = dir.path().join("frames");
    let o = run(
        dir.path(),
        &[
            "snapcompact",
            "render",
            p(&compacted),
            "--out",
            p(&frames),
            "--shape",
            "8on22-bw",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let report = stdout(&o);
    assert_has(&report, "archive        text, printed as 1 PNG frame\n");
    assert_has(&report, "dropped chars  55,930\n");
    assert!(!report.contains("1 frames"), "{report}");
}

#[test]
fn verbose_says_what_plan_and_compact_decide_and_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = session(dir.path());
    let o = run(dir.path(), &["plan", p(&file)]);
    assert_eq!(stderr(&o), "", "quiet without -v");
    let o = run(dir.path(), &["plan", p(&file), "-v"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    for line in [
        "musepi: strategy snapcompact: the default (no --strategy, and no settings file names compaction.strategy)\n",
        "musepi: kept window: the last 14,583 tokens: keepRecentTokens 20,000 scaled by 0.73, the provider's reported prompt tokens over musepi's estimate of the same messages\n",
        "musepi: cut: keeps from 0000003f, where the kept window begins inside a turn; the turn started at 0000003b, so its first 4 messages are summarized apart as the turn prefix\n",
        "musepi: threshold: 170,000 of a 200,000-token window; measured 45,210 (under) (an automatic compaction would wait; an explicit one runs anyway)\n",
        "musepi: pruning: nothing: what it could blank",
    ] {
        assert_has(&err, line);
    }
    assert!(!err.contains("  0000003f "), "-v lists no message");
    // The report on stdout is the same with or without -v.
    assert_eq!(stdout(&o), stdout(&run(dir.path(), &["plan", p(&file)])));
    // -vv: every message, under what happens to it.
    let o = run(dir.path(), &["plan", p(&file), "-vv"]);
    let err = stderr(&o);
    assert_has(&err, "musepi: summarize: 56 messages, 15,990 tokens\n");
    assert_has(&err, "musepi: keep: 54 messages, 13,539 tokens\n");
    assert_has(&err, "musepi:   0000003f ");
    // compact says the same before it runs, with its own reasons.
    let out = dir.path().join("out.jsonl");
    let o = run(
        dir.path(),
        &[
            "compact",
            p(&file),
            "-o",
            p(&out),
            "--no-prune",
            "--strategy",
            "snapcompact",
            "-v",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let err = stderr(&o);
    assert_has(
        &err,
        "musepi: strategy snapcompact: --strategy snapcompact\n",
    );
    assert_has(&err, "musepi: pruning: off (--no-prune)\n");
    assert_has(&err, "musepi: cut: keeps from 0000003f");
    let o = run(
        dir.path(),
        &["compact", p(&out), "--dry-run", "--instructions", "x", "-v"],
    );
    assert_has(
        &stderr(&o),
        "musepi: strategy llm: --instructions ask for a summary by the model\n",
    );
    assert_has(
        &stderr(&o),
        "musepi: nothing to compact: already compacted\n",
    );
}
