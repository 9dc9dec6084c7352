//! The archive as a whole: continuing an earlier one, the ledger's levels,
//! and its guarantees.

use std::collections::BTreeSet;

use musepi_context_builder::LlmMessage;
use musepi_session_model::ContentBlock;

use super::*;
use crate::util::len16;

fn reply(text: &str) -> LlmMessage {
    LlmMessage::Assistant {
        content: vec![ContentBlock::text(text)],
        provider: None,
        model: None,
        stop_reason: None,
    }
}

fn build(messages: &[LlmMessage], ids: &[String], earlier: Earlier<'_>, budget: usize) -> History {
    let useless = BTreeSet::new();
    build_history(&HistoryInput {
        messages,
        entry_ids: ids,
        useless: &useless,
        earlier,
        budget,
        output_max_chars: None,
        output_head_ratio: 0.6,
    })
}

#[test]
fn a_later_archive_keeps_the_earlier_ledger_and_counts_on() {
    let first = build(
        &[
            LlmMessage::user_text("first request"),
            reply("first answer"),
        ],
        &["u1".into(), "a1".into()],
        Earlier::None,
        10_000,
    );
    assert_eq!(
        first.text,
        format!(
            "{LEDGER_HEADING}\n#1 ¶user:first request\n\n{CONVERSATION_HEADING}\n#1 ¶ai:first answer"
        )
    );
    let second = build(
        &[LlmMessage::user_text("second request")],
        &["u2".into()],
        Earlier::archived(&first.text),
        10_000,
    );
    assert_eq!(
        second.text,
        format!(
            "{LEDGER_HEADING}\n#1 ¶user:first request\n#2 ¶user:second request\n\n{CONVERSATION_HEADING}\n#1 ¶ai:first answer"
        )
    );
}

#[test]
fn a_tight_budget_moves_to_a_tighter_ledger_before_dropping_entries() {
    // Sentences that differ, so none is left out as a repeat.
    let filler = (0..150).fold(String::new(), |mut out, i| {
        let _ =
            std::fmt::Write::write_fmt(&mut out, format_args!("Filler words go on for {i} more. "));
        out
    });
    let long = format!("Start here. {filler} End here.");
    let messages = [LlmMessage::user_text(&long), reply("ok")];
    let roomy = build(&messages, &[], Earlier::None, 100_000);
    assert_eq!(roomy.shortened.ledger_level, 0);
    assert!(roomy.text.contains(&long));
    let tight = build(&messages, &[], Earlier::None, 1_200);
    assert!(tight.shortened.ledger_level > 0);
    assert!(len16(&tight.text) <= 1_200);
    assert!(tight.text.contains("Start here.") && tight.text.contains("End here."));
    assert_eq!(tight.shortened.user_messages.shortened, 1);
}

#[test]
fn the_guaranteed_pieces_are_all_kept_when_they_fit() {
    let messages: Vec<LlmMessage> = (0..50)
        .flat_map(|i| {
            [
                LlmMessage::user_text(format!("Request {i} must keep port {}.", 8000 + i)),
                reply(&"Some reply text that can go. ".repeat(30)),
            ]
        })
        .collect();
    let useless = BTreeSet::new();
    let limits = &LEVELS[0];
    let mut builder = Builder::new(limits, &useless, 0, OutputCap::NONE, Outputs::default());
    let sources: Vec<Source<'_>> = messages
        .iter()
        .map(|message| Source { message, id: None })
        .collect();
    builder.messages(&sources);
    let blocks = builder.finish(0);
    let budget = must_cost(&blocks) + 500;
    let kept = select(&blocks, budget);
    assert!(guarantees_kept(&blocks, &kept));
    assert!(len16(&render(&blocks, &kept)) <= budget);
}

#[test]
fn the_same_input_gives_the_same_text() {
    let messages = [LlmMessage::user_text("abc ".repeat(20_000)), reply("done")];
    assert_eq!(
        build(&messages, &[], Earlier::None, 5_000),
        build(&messages, &[], Earlier::None, 5_000)
    );
}

/// Hundreds of near-same turns: a request, a test run, an answer.
fn repetitive_turns(turns: usize) -> (Vec<LlmMessage>, Vec<String>) {
    use musepi_session_model::{JsonValue, Text, ToolCall};
    use std::fmt::Write as _;
    const MODULES: [&str; 5] = ["planner", "lexer", "store", "render", "queue"];
    let mut messages = Vec::new();
    for turn in 0..turns {
        let module = MODULES[turn % MODULES.len()];
        messages.push(LlmMessage::user_text(format!(
            "Step {turn}: refactor src/{module}.rs and run its tests again."
        )));
        let mut thinking = format!("Step {turn} touches the {module} module.");
        let mut text = format!("Running the tests for step {turn}.");
        if turn == turns / 2 {
            thinking.push_str(
                " The arena must hold 4096 nodes, or deep nesting in `parse_block` overflows it.",
            );
            text.push_str(" I chose a ring buffer of 7168 entries for the beacon log so its memory stays bounded.");
        }
        messages.push(LlmMessage::Assistant {
            content: vec![
                ContentBlock::Thinking {
                    thinking: Text::new(thinking),
                    thinking_signature: None,
                    redacted: None,
                },
                ContentBlock::text(text),
                ContentBlock::ToolCall(ToolCall {
                    id: format!("c{turn}"),
                    name: Text::new("bash"),
                    arguments: JsonValue::new(serde_json::json!({
                        "command": format!("cargo test -p {module} -- --test-threads {}", turn % 4 + 1)
                    })),
                    intent: None,
                }),
            ],
            provider: None,
            model: None,
            stop_reason: None,
        });
        let mut output = String::new();
        for i in 0..60 {
            let _ = writeln!(output, "test {module}::case_{turn}_{i} ... ok");
        }
        output.push_str("test result: ok. 60 passed; 0 failed");
        messages.push(LlmMessage::ToolResult {
            tool_call_id: format!("c{turn}"),
            tool_name: "bash".into(),
            content: vec![ContentBlock::text(output)],
            is_error: false,
        });
        messages.push(reply(&format!(
            "Step {turn} is done; the {module} tests pass."
        )));
    }
    let ids = (0..messages.len()).map(|i| format!("{i:08x}")).collect();
    (messages, ids)
}

#[test]
fn what_repeats_is_written_densely_and_what_is_new_survives() {
    let (messages, ids) = repetitive_turns(360);
    // The default budget: 39,322 characters for a history of about
    // 200,000 tokens.
    let history = build(&messages, &ids, Earlier::None, 39_322);
    assert!(len16(&history.text) <= 39_322);
    for fact in [
        "The arena must hold 4096 nodes, or deep nesting in `parse_block` overflows it.",
        "I chose a ring buffer of 7168 entries for the beacon log so its memory stays bounded.",
    ] {
        assert!(history.text.contains(fact), "{fact}");
    }
    // Every request is in the ledger, every command whole once, and a
    // command run again in a later turn refers to the turn it was shown in.
    for turn in [0, 1, 180, 359] {
        let module = ["planner", "lexer", "store", "render", "queue"][turn % 5];
        let request = format!("Step {turn}: refactor src/{module}.rs and run its tests again.");
        assert!(history.text.contains(&request), "{request}");
    }
    assert!(
        history
            .text
            .contains("¶call:bash(cargo test -p planner -- --test-threads 1)")
    );
    assert!(history.text.contains("¶call:bash(=#1)"));
    assert_eq!(history.shortened.user_messages.omitted, 0);
}

#[test]
fn a_tighter_ledger_still_gets_the_tool_output_it_has_room_for() {
    use musepi_session_model::{JsonValue, Text, ToolCall};
    // Short requests that no level shortens, enough of them to take more
    // of the budget than the most generous ledger may.
    let mut messages: Vec<LlmMessage> = (0..30)
        .map(|i| {
            LlmMessage::user_text(format!(
                "Request {i}: keep the service on port {}.",
                8000 + i
            ))
        })
        .collect();
    messages.push(LlmMessage::Assistant {
        content: vec![ContentBlock::ToolCall(ToolCall {
            id: "c1".into(),
            name: Text::new("bash"),
            arguments: JsonValue::new(serde_json::json!({"command": "make report"})),
            intent: None,
        })],
        provider: None,
        model: None,
        stop_reason: None,
    });
    messages.push(LlmMessage::ToolResult {
        tool_call_id: "c1".into(),
        tool_name: "bash".into(),
        content: vec![ContentBlock::text(
            "compiling the report module\nwrote 4242 rows to out/report.csv\nfinished",
        )],
        is_error: false,
    });
    // An earlier summary puts a block before the messages' own.
    let history = build(
        &messages,
        &[],
        Earlier::Summary("The earlier work set up the report."),
        2_200,
    );
    assert!(history.shortened.ledger_level > 0);
    assert!(len16(&history.text) <= 2_200);
    assert!(
        history
            .text
            .contains("¶call:bash(make report)\n  → finished")
    );
    assert_eq!(history.text.matches("<out bash>").count(), 1);
    assert!(
        history
            .text
            .contains("<out bash>\ncompiling the report module\nwrote 4242 rows to out/report.csv"),
        "{}",
        history.text
    );
}

/// Checks that every reference in the ledger of `text` can be read from
/// what is shown before it: `name(=#N)` follows the line that opens turn N
/// and a call of `name` shown in full in that turn, and `…/tail` follows a
/// path shown whole that ends with `/tail`.
fn assert_resolvable(text: &str) {
    let ledger = text
        .split(&format!("\n\n{CONVERSATION_HEADING}"))
        .next()
        .unwrap_or_default();
    let mut turn = 0u32;
    let mut in_full: BTreeSet<(u32, String)> = BTreeSet::new();
    let mut paths: Vec<String> = Vec::new();
    for line in ledger.lines() {
        if let Some(rest) = line.strip_prefix('#') {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(t) = digits.parse() {
                turn = t;
            }
        }
        let call = line.strip_prefix("¶call:").unwrap_or(line);
        let Some(open) = call
            .find('(')
            .filter(|&o| o > 0 && !call[..o].contains(' '))
        else {
            continue;
        };
        let name = &call[..open];
        if let Some(at) = call.find("=#") {
            let digits: String = call[at + 2..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            let n: u32 = digits.parse().unwrap();
            assert!(
                in_full.contains(&(n, name.to_owned())),
                "`{line}` refers to turn {n}, which shows no {name} call in full before it:\n{text}"
            );
            continue;
        }
        in_full.insert((turn, name.to_owned()));
        for token in call[open + 1..].split([',', ')', ' ', '=']) {
            if let Some(tail) = token.strip_prefix('…') {
                assert!(
                    tail.starts_with('/')
                        && paths
                            .iter()
                            .any(|p| p.ends_with(tail) && p.len() > tail.len()),
                    "`{line}` names `{token}`, but no path shown before it ends so:\n{text}"
                );
            } else if token.contains('/') {
                paths.push(token.to_owned());
            }
        }
    }
}

/// `turns` turns of a request, a read of one of three files, a test run
/// and an answer: later turns name the files by their tails and the test
/// runs by references to the turns that showed them.
fn turns_with_paths(turns: usize) -> Vec<LlmMessage> {
    use musepi_session_model::{JsonValue, Text, ToolCall};
    const FILES: [&str; 3] = [
        "packages/agent/src/theme/theme.ts",
        "packages/tui/src/theme.ts",
        "packages/agent/src/core/session-manager.ts",
    ];
    let call = |id: String, name: &str, args: serde_json::Value| {
        ContentBlock::ToolCall(ToolCall {
            id,
            name: Text::new(name),
            arguments: JsonValue::new(args),
            intent: None,
        })
    };
    let mut messages = Vec::new();
    for turn in 0..turns {
        // Each request new, so the ledger is not filler (see `repeats`),
        // and no fact (a user's fact outlives the oldest entries).
        messages.push(LlmMessage::user_text(format!(
            "Step {turn}: look at the theme again, the {} way.",
            letters(turn)
        )));
        messages.push(LlmMessage::Assistant {
            content: vec![
                call(
                    format!("r{turn}"),
                    "read",
                    serde_json::json!({"path": FILES[turn % 3], "offset": turn % 2}),
                ),
                call(
                    format!("b{turn}"),
                    "bash",
                    serde_json::json!({"command": format!("cd packages/agent && npm run check -- --shard {}", turn % 4)}),
                ),
            ],
            provider: None,
            model: None,
            stop_reason: None,
        });
        messages.push(reply(&format!("Step {turn} looks fine.")));
    }
    messages
}

/// `n` written in the letters b to k, a word no other `n` gives.
fn letters(n: usize) -> String {
    let digits = n.to_string();
    digits
        .bytes()
        .map(|d| char::from(b'b' + (d - b'0')))
        .collect()
}

#[test]
fn when_the_oldest_entries_are_dropped_every_reference_left_still_resolves() {
    let messages = turns_with_paths(200);
    let roomy = build(&messages, &[], Earlier::None, 200_000);
    assert!(
        roomy.text.contains("read(…/theme/theme.ts"),
        "{}",
        roomy.text
    );
    assert!(roomy.text.contains("bash(=#1)"), "{}", roomy.text);
    assert_resolvable(&roomy.text);
    for budget in [1_500, 3_000, 6_000, 12_000] {
        let tight = build(&messages, &[], Earlier::None, budget);
        assert_eq!(tight.shortened.ledger_level, 2);
        assert!(
            tight.shortened.user_messages.omitted > 0,
            "{budget}: nothing dropped"
        );
        assert!(len16(&tight.text) <= budget);
        assert!(
            !tight.text.contains("#1 ¶user:"),
            "{budget}: turn 1 is dropped"
        );
        assert_resolvable(&tight.text);
        assert_eq!(tight, build(&messages, &[], Earlier::None, budget));
        // A command whose turn was dropped is written out once, where it
        // first appears again, and referred to from then on.
        let shard_1 = "bash(cd packages/agent && npm run check -- --shard 1)";
        assert_eq!(
            tight.text.matches(shard_1).count(),
            1,
            "{budget}: {}",
            tight.text
        );
        assert!(tight.text.contains("\nbash(=#"), "{budget}: {}", tight.text);
    }
}

#[test]
fn references_of_an_earlier_ledger_still_resolve_when_its_oldest_lines_are_dropped() {
    let earlier = build(&turns_with_paths(120), &[], Earlier::None, 200_000);
    assert!(earlier.text.contains("bash(=#1)") && earlier.text.contains("read(…/"));
    let next = [LlmMessage::user_text("Now fix the theme."), reply("Done.")];
    for budget in [1_500, 4_000, 8_000] {
        let tight = build(&next, &[], Earlier::archived(&earlier.text), budget);
        assert!(len16(&tight.text) <= budget);
        assert!(tight.text.contains("Now fix the theme."), "{budget}");
        assert!(
            !tight.text.contains("#1 ¶user:"),
            "{budget}: turn 1 is dropped"
        );
        assert_resolvable(&tight.text);
        // The earlier ledger's references are made to what is left of it.
        assert!(tight.text.contains("\nbash(=#"), "{budget}: {}", tight.text);
    }
}

#[test]
fn a_run_marker_names_its_first_entry_and_the_last_new_one() {
    let block = |id: &str| blocks::Block::new(blocks::Scope::Ai, 1, Some(id));
    let (a, b, c) = (block("a"), block("b"), block("c"));
    // An entry met again (a call's message after its results) names no end.
    assert_eq!(run_marker(&[&a, &b, &a]), "[…a to b…]");
    assert_eq!(run_marker(&[&a, &a]), "[…a…]");
    assert_eq!(run_marker(&[&a, &b, &c, &b]), "[…a to c…]");
    assert_eq!(
        run_marker(&[&blocks::Block::new(blocks::Scope::Ai, 1, None)]),
        "[…]"
    );
    // A run as long as a whole history is one pass.
    let many: Vec<blocks::Block> = (0..50_000).map(|i| block(&format!("e{i}"))).collect();
    let refs: Vec<&blocks::Block> = many.iter().collect();
    assert_eq!(run_marker(&refs), "[…e0 to e49999…]");
}

#[test]
fn when_the_oldest_entries_go_the_facts_of_their_user_messages_stay() {
    let mut messages = vec![LlmMessage::user_text(
        "Start with the theme. Never touch crates/legacy/ and keep the port at 48213.",
    )];
    messages.extend(turns_with_paths(200));
    let tight = build(&messages, &[], Earlier::None, 3_000);
    assert!(len16(&tight.text) <= 3_000);
    assert!(tight.shortened.user_messages.omitted > 0, "{}", tight.text);
    assert!(
        tight
            .text
            .contains("Never touch crates/legacy/ and keep the port at 48213."),
        "{}",
        tight.text
    );
    assert!(
        !tight.text.contains("Start with the theme."),
        "{}",
        tight.text
    );
    assert_resolvable(&tight.text);
}
