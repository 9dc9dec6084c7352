use musepi_session_model::ContentBlock;
use proptest::prelude::*;
use serde_json::json;

use super::*;
use crate::testkit::{assistant, call, result};
use crate::text::salience::LEDGER_HEADING;

fn compact(messages: &[LlmMessage], budget: usize) -> SnapResult {
    let files = MarkedFiles::default();
    let mut input = SnapInput::new(messages, &files);
    input.archive_max_chars = budget;
    snap_compact(&input)
}

#[test]
fn nothing_to_archive_still_gives_the_lead_in_and_guide() {
    let out = compact(&[], DEFAULT_ARCHIVE_MAX_CHARS);
    assert!(out.summary.starts_with("Resume the prior conversation"));
    assert!(out.summary.contains("\n\nReading guide\n"));
    assert!(out.summary.contains("Nothing was shortened"));
    assert_eq!(out.short_summary, "archived 0 tokens verbatim");
    assert_eq!((out.archive.text.as_str(), out.archive_chars), ("", 0));
    assert!(out.frames.is_empty());
}

#[test]
fn token_estimate_rounds_up() {
    assert_eq!(estimate_tokens_from_chars(100), 25);
    assert_eq!(estimate_tokens_from_chars(101), 26);
    assert_eq!(estimate_tokens_from_chars(0), 0);
}

#[test]
fn a_summary_with_a_budget_keeps_its_file_list_and_guide_within_it() {
    let messages: Vec<LlmMessage> = (0..400)
        .flat_map(|i| {
            [
                LlmMessage::user_text(format!(
                    "Step {i}: the limit of part {i} is {} ms.",
                    1000 + i
                )),
                assistant(vec![ContentBlock::text(format!(
                    "The cache of part {i} must hold {} entries because of the load.",
                    5000 + i
                ))]),
            ]
        })
        .collect();
    let reads: Vec<String> = (0..400)
        .map(|i| format!("src/module_{i}/file.rs"))
        .collect();
    let files = MarkedFiles::from_ops(reads.iter().map(String::as_str), [], []);
    for total in [6_000, 20_000, 52_428] {
        let mut input = SnapInput::new(&messages, &files);
        input.summary_max_chars = Some(total);
        let out = snap_compact(&input);
        assert!(
            len16(&out.summary) <= total,
            "{} > {total}",
            len16(&out.summary)
        );
        // The file list took at most a fifth, and the archive the rest:
        // the summary fills its budget but for the guide's slack.
        let files_at = out.summary.find("<files>").unwrap_or(out.summary.len());
        assert!(len16(&out.summary[files_at..]) <= total / 5);
        assert!(total - len16(&out.summary) < 800, "{}", len16(&out.summary));
    }
}

#[test]
fn pages_end_at_a_line_end_and_never_split_a_line_that_fits() {
    let lines: Vec<String> = (0..800)
        .map(|i| format!("the timeout must be {i} ms here"))
        .collect();
    let text = lines.join("\n");
    let pages = TextPages::new(&text);
    assert!(pages.frames.len() > 2);
    let joined: String = (0..pages.frames.len())
        .filter_map(|i| pages.page(i))
        .collect();
    assert_eq!(joined, text);
    for (i, frame) in pages.frames.iter().enumerate() {
        assert!(frame.chars <= FRAME_CHAR_CAPACITY);
        let page = pages.page(i).unwrap_or_default();
        if i + 1 < pages.frames.len() {
            assert!(page.ends_with('\n'), "{:?}", &page[page.len() - 20..]);
        }
    }
    // A line longer than a page breaks at whitespace.
    let long = "word ".repeat(3000);
    let pages = TextPages::new(&long);
    assert!(pages.page(0).unwrap_or_default().ends_with(' '));
}

#[test]
fn fidelity_keeps_the_path_the_failure_and_the_open_task() {
    let path = "packages/musepi/core/src/snapcompact/engine.ts";
    let failing = format!(
        "{}FAIL test/snapcompact.test.ts\nError: expected 3 frames, got 2",
        "pass\n".repeat(5000)
    );
    let messages = [
        LlmMessage::user_text(format!("Please fix the frame count in {path}.")),
        assistant(vec![
            ContentBlock::text("Running the tests first."),
            call("c1", "bash", json!({"command": "npm test"})),
        ]),
        result("c1", &failing, true),
        LlmMessage::user_text("The migration task is still unfinished."),
    ];
    let out = compact(&messages, 12_000);
    let s = &out.summary;
    assert!(s.contains(path));
    assert!(s.contains("¶call:bash(npm test)\n  ! FAIL test/snapcompact.test.ts\n  ! Error: expected 3 frames, got 2"), "{s}");
    assert!(s.contains("#2 ¶user:The migration task is still unfinished."));
    assert!(s.contains("Reading guide") && s.contains("Resume the prior conversation"));
    assert!(len16(&out.archive.text) <= 12_000);
    assert_eq!(out.archive.version, SNAP_ARCHIVE_VERSION);
}

#[test]
fn the_guide_counts_the_messages_and_calls_left_out_apart_from_the_shortened() {
    // More requests and calls than even the shortest ledger can hold: the
    // oldest go whole, and the guide says so instead of calling them
    // shortened.
    let mut messages = Vec::new();
    for i in 0..400 {
        messages.push(LlmMessage::user_text(format!(
            "Request {i}: rename the field in module {i}."
        )));
        messages.push(assistant(vec![call(
            &format!("c{i}"),
            "bash",
            json!({"command": format!("make module{i}")}),
        )]));
    }
    let files = MarkedFiles::default();
    let mut input = SnapInput::new(&messages, &files);
    input.archive_max_chars = 12_000;
    let s = snap_compact(&input).summary;
    let kept_users = (0..400)
        .filter(|i| s.contains(&format!("¶user:Request {i}: rename")))
        .count();
    let kept_calls = (0..400)
        .filter(|i| s.contains(&format!("bash(make module{i})")))
        .count();
    assert!(kept_users > 0 && kept_users < 400, "{kept_users}");
    assert!(
        s.contains(&format!(
            "0 of 400 user messages shortened (each keeps its head, its tail and every sentence with a constraint, a number or a path; a sentence said in an earlier message, and a call made before with nothing new, may be left out) and {} left out",
            400 - kept_users
        )),
        "{s}"
    );
    assert!(
        s.contains(&format!(
            "0 of 400 tool calls shortened (a long argument cut) and {} left out",
            400 - kept_calls
        )),
        "{s}"
    );
}

#[test]
fn the_guide_counts_what_was_shortened_and_markers_name_the_entries() {
    let mut messages = Vec::new();
    let mut ids = Vec::new();
    for i in 0..60 {
        messages.push(LlmMessage::user_text(format!("Step {i}: go on.")));
        ids.push(format!("u{i:03}"));
        messages.push(assistant(vec![
            ContentBlock::text(format!(
                "Working on step {i}. {} The value for step {i} is {}.",
                "Some ordinary words fill this reply. ".repeat(20),
                1000 + i
            )),
            call(
                &format!("c{i}"),
                "bash",
                json!({"command": format!("make step{i}")}),
            ),
        ]));
        ids.push(format!("a{i:03}"));
        messages.push(result(
            &format!("c{i}"),
            &"output line\n".repeat(200),
            false,
        ));
        ids.push(format!("r{i:03}"));
    }
    let files = MarkedFiles::default();
    let mut input = SnapInput::new(&messages, &files);
    input.entry_ids = &ids;
    input.archive_max_chars = 12_000;
    let out = snap_compact(&input);
    let s = &out.summary;
    assert!(s.contains("- Shortened to fit the budget"), "{s}");
    assert!(s.contains("0 of 60 user messages"), "{s}");
    assert!(s.contains("of 60 tool outputs shortened and"), "{s}");
    // Every user message and command is there; the replies keep their fact.
    for i in 0..60 {
        assert!(s.contains(&format!("¶user:Step {i}: go on.")), "{i}");
        assert!(s.contains(&format!("bash(make step{i})")), "{i}");
    }
    assert!(s.contains("[…a0"), "{s}");
    assert!(s.contains("The value for step 59 is 1059."), "{s}");
    assert!(out.archive.truncated_chars > 0);
    assert!(
        out.short_summary.contains("by salience"),
        "{}",
        out.short_summary
    );
}

#[test]
fn every_file_is_listed_when_the_list_fits() {
    let names: Vec<String> = (0..30).map(|i| format!("src/module_{i:02}.rs")).collect();
    let files = MarkedFiles::from_ops(names.iter().map(String::as_str), [], []);
    let messages = [LlmMessage::user_text("read them all")];
    let out = snap_compact(&SnapInput::new(&messages, &files));
    for name in &names {
        assert!(out.summary.contains(&format!("{name} (Read)")), "{name}");
    }
    assert!(!out.summary.contains("files elided"));
    assert!(out.summary.ends_with("src/module_29.rs (Read)\n</files>"));
    assert_eq!(out.files.read_files.len(), 30);
}

#[test]
fn previous_llm_summary_is_folded_in_at_the_head() {
    let files = MarkedFiles::default();
    let messages = [LlmMessage::user_text("recent work")];
    let mut input = SnapInput::new(&messages, &files);
    input.previous_summary = Some("Earlier we built the LSP module.");
    let out = snap_compact(&input);
    assert_eq!(
        out.archive.text,
        format!(
            "{LEDGER_HEADING}\n¶summary:Earlier we built the LSP module.\n#1 ¶user:recent work"
        )
    );
}

#[test]
fn recompaction_continues_the_ledger_and_stays_in_budget() {
    let first_messages = [
        LlmMessage::user_text("phase one: port the lexer"),
        assistant(vec![ContentBlock::text(format!(
            "{} The lexer keeps 4096 tokens of lookahead.",
            "Plain words here. ".repeat(2000)
        ))]),
    ];
    let first = compact(&first_messages, 24_000);
    assert!(len16(&first.archive.text) <= 24_000);
    let files = MarkedFiles::default();
    let second_messages = [LlmMessage::user_text("phase two")];
    let mut input = SnapInput::new(&second_messages, &files);
    input.archive_max_chars = 24_000;
    input.previous_archive = Some(&first.archive);
    let second = snap_compact(&input);
    let text = &second.archive.text;
    assert!(
        text.starts_with(&format!(
            "{LEDGER_HEADING}\n#1 ¶user:phase one: port the lexer\n#2 ¶user:phase two"
        )),
        "{text}"
    );
    assert_eq!(text.matches("phase one").count(), 1);
    assert!(text.contains("The lexer keeps 4096 tokens of lookahead."));
    assert!(second.archive.truncated_chars >= first.archive.truncated_chars);
    assert!(len16(text) <= 24_000);
}

#[test]
fn an_old_transcript_archive_continues_as_blocks() {
    let files = MarkedFiles::default();
    let messages = [LlmMessage::user_text("new")];
    let archive = SnapArchiveState {
        text: "¶user:ARCHIVED\n\n¶ai:an old answer".into(),
        truncated_chars: 42,
        version: 1,
    };
    let mut input = SnapInput::new(&messages, &files);
    input.previous_summary = Some("LLM SUMMARY");
    input.previous_archive = Some(&archive);
    let out = snap_compact(&input);
    assert!(out.archive.text.starts_with(&format!(
        "{LEDGER_HEADING}\n#1 ¶user:ARCHIVED\n#2 ¶user:new"
    )));
    assert!(out.archive.text.contains("#1 ¶ai:an old answer"));
    assert!(out.archive.truncated_chars >= 42);
    assert!(!out.summary.contains("LLM SUMMARY"));
}

#[test]
fn stored_state_round_trips_and_is_validated_on_read() {
    let state = SnapArchiveState {
        text: "ARCHIVED SOURCE".into(),
        truncated_chars: 42,
        version: 2,
    };
    let value = serde_json::to_value(&state).unwrap_or_default();
    assert_eq!(
        value,
        json!({"text": "ARCHIVED SOURCE", "truncatedChars": 42, "version": 2})
    );
    assert_eq!(SnapArchiveState::from_value(&value), Some(state));
    assert_eq!(
        SnapArchiveState::from_value(&json!({"text": 1, "truncatedChars": 0})),
        None
    );
    assert_eq!(SnapArchiveState::from_value(&json!({"text": "t"})), None);
    assert_eq!(
        SnapArchiveState::from_value(&json!({"text": "t", "truncatedChars": 7.0})),
        Some(SnapArchiveState {
            text: "t".into(),
            truncated_chars: 7,
            version: 1
        })
    );
}

/// A random history: user messages, replies, calls with outputs.
fn history() -> impl Strategy<Value = Vec<LlmMessage>> {
    let text = "[a-z0-9é😀/. \n]{0,300}";
    prop::collection::vec((0u8..3, text, 0usize..40), 0..60).prop_map(|items| {
        let mut out = Vec::new();
        for (i, (kind, body, lines)) in items.into_iter().enumerate() {
            match kind {
                0 => out.push(LlmMessage::user_text(body)),
                1 => out.push(assistant(vec![ContentBlock::text(body)])),
                _ => {
                    let id = format!("c{i}");
                    out.push(assistant(vec![call(&id, "bash", json!({"command": body}))]));
                    out.push(result(
                        &id,
                        &"error: x\nline\n".repeat(lines),
                        lines % 3 == 0,
                    ));
                }
            }
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn the_archive_stays_in_budget_and_is_a_pure_function(messages in history(), max in 0usize..30_000) {
        let out = compact(&messages, max);
        prop_assert!(len16(&out.archive.text) <= max.max(MIN_ARCHIVE_CHARS));
        prop_assert_eq!(&out, &compact(&messages, max));
        prop_assert_eq!(out.archive_chars, len16(&out.archive.text));
        let pages: String = {
            let p = TextPages::new(&out.archive.text);
            (0..p.frames.len()).filter_map(|i| p.page(i).map(str::to_owned)).collect()
        };
        prop_assert_eq!(pages, out.archive.text.clone());
    }

    #[test]
    fn with_room_for_everything_every_message_is_kept_verbatim(messages in history()) {
        let out = compact(&messages, 1_000_000);
        for m in &messages {
            if let LlmMessage::User { content } = m {
                let text: String = content
                    .iter()
                    .filter_map(|b| match b {
                        ContentBlock::Text { text, .. } => Some(text.as_str()),
                        _ => None,
                    })
                    .collect();
                if !text.trim().is_empty() {
                    prop_assert!(out.archive.text.contains(text.trim()), "{}", text);
                }
            }
        }
    }
}
