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
    let long = format!(
        "Start here. {} End here.",
        "Filler words go on and on. ".repeat(150)
    );
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
    let mut builder = Builder::new(limits, &useless, 0, OutputCap::NONE);
    let sources: Vec<Source<'_>> = messages
        .iter()
        .map(|message| Source { message, id: None })
        .collect();
    builder.messages(&sources);
    let budget = must_cost(&builder.blocks) + 500;
    let kept = select(&builder.blocks, budget);
    assert!(guarantees_kept(&builder.blocks, &kept));
    assert!(len16(&render(&builder.blocks, &kept)) <= budget);
}

#[test]
fn the_same_input_gives_the_same_text() {
    let messages = [LlmMessage::user_text("abc ".repeat(20_000)), reply("done")];
    assert_eq!(
        build(&messages, &[], Earlier::None, 5_000),
        build(&messages, &[], Earlier::None, 5_000)
    );
}
