//! The context's tokens: the one size of "what the model sees" that every
//! total shown to people uses (docs/design.md, "The context's tokens").
//!
//! The context's tokens at a leaf are the tokens of the provider messages a
//! model is sent there ([`provider_messages`]): the context at the leaf,
//! converted with the safety refinements, a snapcompact compaction's
//! archive blocks (text edges and frames) after its summary, and a
//! provider's native replay counted as what every other provider is sent
//! in its place (the summary, then the kept messages). Each provider
//! message counts like the per-message estimate counts an agent message
//! ([`llm_message_tokens`]): its texts, its thinking, each tool call's name
//! and compact JSON arguments, and [`IMAGE_CHARS`] per image, rounded up
//! to tokens once per message.
//!
//! The per-message estimate of [`estimate_tokens`](crate::estimate_tokens)
//! stays what cut points, budgets and the reference answers use; the
//! context's tokens differ from the sum of those estimates by what the
//! conversion adds or drops (summary wrappers, archive blocks, bash
//! executions as text, dropped error turns).

use musepi_session_model::{ContentBlock, Session};

use crate::context::build_context_at;
use crate::convert::{ArchiveBlocks, ConvertOptions, convert_with_sources};
use crate::estimate::{
    ContextEstimate, IMAGE_CHARS, calculate_context_tokens, chars_to_tokens,
    estimate_context_tokens,
};
use crate::llm::Converted;
use crate::llm::LlmMessage;
use crate::tokenizer::{Tokenizer, block_chars};

/// The provider messages a model is sent at `leaf` (`None`: the explicit
/// empty leaf), each with its source entry: the context converted with the
/// safety refinements, the archive blocks of `archive`, and remote replays
/// attached.
pub fn provider_messages(
    session: &Session,
    leaf: Option<usize>,
    archive: Option<&dyn ArchiveBlocks>,
) -> Vec<Converted> {
    let context = build_context_at(session, leaf);
    let options = ConvertOptions {
        archive,
        session: Some(session),
        ..ConvertOptions::default()
    };
    convert_with_sources(&context.messages, &options)
}

/// The context's tokens at `leaf`: the sum of [`llm_message_tokens`] over
/// [`provider_messages`]. `archive` supplies snapcompact archives (the
/// snapcompact crate's `SessionArchives`); without it a PNG archive's
/// frames are not seen.
pub fn context_tokens(
    session: &Session,
    leaf: Option<usize>,
    archive: Option<&dyn ArchiveBlocks>,
    tokenizer: Tokenizer,
) -> u64 {
    provider_messages(session, leaf, archive)
        .iter()
        .map(|c| llm_message_tokens(&c.message, tokenizer))
        .sum()
}

/// pi's estimate of the context at `leaf` (the compaction entry's
/// `tokensBefore`): [`estimate_context_tokens`] over the messages of the
/// context built there, that is the last anchoring usage's context tokens
/// plus the per-message estimates of the messages after it (of every
/// message when none has a usage). Unlike [`measured_tokens`], a usage from
/// before the latest compaction still anchors it, as in pi.
pub fn estimate_context_at(session: &Session, leaf: Option<usize>) -> ContextEstimate {
    estimate_context_tokens(build_context_at(session, leaf).agent_messages())
}

/// What the compaction trigger compares at `leaf`: the context size the
/// provider last reported (the usage of the last assistant message that was
/// neither aborted nor an error) plus the context's tokens of the provider
/// messages after it, as the reference's context estimate does, except
/// that a usage measured before the latest compaction on the path does not
/// count (it measured a context that no longer exists). Without such a
/// usage it is the context's tokens. `last_usage_index` is the anchoring
/// message's position in the context built at `leaf`.
pub fn measured_tokens(
    session: &Session,
    leaf: Option<usize>,
    archive: Option<&dyn ArchiveBlocks>,
) -> ContextEstimate {
    let context = build_context_at(session, leaf);
    let reference = estimate_context_tokens(context.agent_messages());
    let sent = provider_messages(session, leaf, archive);
    let count = |from: usize| -> u64 {
        sent[from..]
            .iter()
            .map(|c| llm_message_tokens(&c.message, Tokenizer::Heuristic))
            .sum()
    };
    // The position on the leaf's path of an entry of the context (every
    // one of them is on it): its depth.
    let position = |entry: usize| Some(session.path_summary(entry).depth as usize);
    let compaction = context.compaction_index.and_then(position);
    let anchor = reference.last_usage_index.and_then(|i| {
        let entry = context.messages[i].entry_index;
        let at = position(entry)?;
        compaction.is_none_or(|c| at > c).then_some((i, at))
    });
    let Some((i, at)) = anchor else {
        let tokens = count(0);
        return ContextEstimate {
            tokens,
            usage_tokens: 0,
            trailing_tokens: tokens,
            last_usage_index: None,
        };
    };
    let after = sent
        .iter()
        .position(|c| position(c.entry_index).is_some_and(|p| p > at))
        .unwrap_or(sent.len());
    let usage_tokens = context.messages[i]
        .message
        .as_assistant()
        .and_then(|a| a.usage.as_ref())
        .map_or(0, calculate_context_tokens);
    let trailing = count(after);
    ContextEstimate {
        tokens: usage_tokens.saturating_add(trailing),
        usage_tokens,
        trailing_tokens: trailing,
        last_usage_index: Some(i),
    }
}

/// Tokens of one provider message: texts, thinking, and each tool call's
/// name plus its arguments as compact JSON, in UTF-16 units rounded up to
/// tokens (or counted by `tokenizer`), plus [`IMAGE_CHARS`] (1,200 tokens)
/// per image. A provider history counts its summary and kept messages.
pub fn llm_message_tokens(message: &LlmMessage, tokenizer: Tokenizer) -> u64 {
    if let LlmMessage::ProviderHistory(h) = message {
        return h.fallback().map(|m| llm_message_tokens(m, tokenizer)).sum();
    }
    let blocks = message.content();
    let images = blocks
        .iter()
        .filter(|b| matches!(b, ContentBlock::Image { .. }))
        .count();
    match tokenizer {
        Tokenizer::Heuristic => {
            let chars: usize = blocks.iter().map(block_chars).sum();
            chars_to_tokens(chars + images * IMAGE_CHARS)
        }
        bpe => {
            let text: u64 = blocks.iter().map(|b| bpe.count_block(b)).sum();
            text + images as u64 * chars_to_tokens(IMAGE_CHARS)
        }
    }
}

#[cfg(test)]
mod tests {
    use musepi_session_model::{AgentMessage, SequentialIds, ToolCall, load_bytes};

    use super::*;
    use crate::estimate::estimate_tokens;

    fn session(lines: &[&str]) -> Session {
        let mut text = String::from(
            r#"{"type":"session","version":3,"id":"t","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/"}"#,
        );
        for l in lines {
            text.push('\n');
            text.push_str(l);
        }
        text.push('\n');
        load_bytes(
            std::path::Path::new("t.jsonl"),
            text.as_bytes(),
            &mut SequentialIds::new(),
        )
        .unwrap()
    }

    const USER: &str = r#"{"type":"message","id":"00000001","parentId":null,"timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"look at this"},{"type":"image","data":"AAAA","mimeType":"image/png"}],"timestamp":1}}"#;
    const ASSISTANT: &str = r#"{"type":"message","id":"00000002","parentId":"00000001","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"assistant","content":[{"type":"thinking","thinking":"hmm"},{"type":"text","text":"reading it"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a.rs"}}],"stopReason":"toolUse","timestamp":2}}"#;
    const RESULT: &str = r#"{"type":"message","id":"00000003","parentId":"00000002","timestamp":"2025-01-01T00:00:03.000Z","message":{"role":"toolResult","toolCallId":"c1","toolName":"read","content":[{"type":"text","text":"fn main() {}"}],"isError":false,"timestamp":3}}"#;

    #[test]
    fn plain_messages_count_as_their_estimates() {
        let s = session(&[USER, ASSISTANT, RESULT]);
        let leaf = s.leaf_index();
        let estimates: u64 = s
            .entries()
            .iter()
            .filter_map(|e| e.message())
            .map(estimate_tokens)
            .sum();
        // user: 12 + 4800 → 1203; assistant: 3 + 10 + 4 + 15 → 8; result: 12 → 3.
        assert_eq!(estimates, 1203 + 8 + 3);
        assert_eq!(
            context_tokens(&s, leaf, None, Tokenizer::Heuristic),
            estimates
        );
    }

    #[test]
    fn the_sum_is_over_what_the_provider_is_sent() {
        // A dangling tool call is removed from what a provider is sent.
        let s = session(&[USER, ASSISTANT]);
        let sent: u64 = provider_messages(&s, s.leaf_index(), None)
            .iter()
            .map(|c| llm_message_tokens(&c.message, Tokenizer::Heuristic))
            .sum();
        assert_eq!(
            context_tokens(&s, s.leaf_index(), None, Tokenizer::Heuristic),
            sent
        );
        assert_eq!(sent, 1203 + chars_to_tokens(3 + 10));
        assert_eq!(context_tokens(&s, None, None, Tokenizer::Heuristic), 0);
    }

    #[test]
    fn archive_blocks_count_their_text_and_images() {
        struct Blocks;
        impl ArchiveBlocks for Blocks {
            fn blocks(&self, _: usize) -> Option<Vec<ContentBlock>> {
                Some(vec![
                    ContentBlock::text("12345678"),
                    ContentBlock::Image {
                        data: "AAAA".into(),
                        mime_type: "image/png".into(),
                        detail: None,
                    },
                ])
            }
        }
        let compaction = r#"{"type":"compaction","id":"00000004","parentId":"00000003","timestamp":"2025-01-01T00:00:04.000Z","summary":"abcd","firstKeptEntryId":"00000001","tokensBefore":10}"#;
        let s = session(&[USER, ASSISTANT, RESULT, compaction]);
        let kept = 1203 + 8 + 3;
        let with = context_tokens(&s, s.leaf_index(), Some(&Blocks), Tokenizer::Heuristic);
        // The summary (4) with its text edge (8) and one frame, in one message.
        assert_eq!(with, kept + chars_to_tokens(4 + 8 + IMAGE_CHARS));
        let without = context_tokens(&s, s.leaf_index(), None, Tokenizer::Heuristic);
        assert!(without < kept + 1200, "{without}");
    }

    #[test]
    fn tool_calls_count_name_and_arguments_with_a_tokenizer_too() {
        let call = ToolCall::new("c", "read", serde_json::json!({"path": "src/a.ts"}));
        let m = LlmMessage::Assistant {
            content: vec![ContentBlock::ToolCall(call.clone())],
            provider: None,
            model: None,
            stop_reason: None,
        };
        assert_eq!(llm_message_tokens(&m, Tokenizer::Heuristic), 6);
        let agent = AgentMessage::Assistant(musepi_session_model::AssistantMessage {
            content: musepi_session_model::Content::Blocks(vec![ContentBlock::ToolCall(call)]),
            ..Default::default()
        });
        assert_eq!(
            llm_message_tokens(&m, Tokenizer::O200k),
            Tokenizer::O200k.count_message(&agent)
        );
    }

    const ANSWER: &str = r#"{"type":"message","id":"00000004","parentId":"00000003","timestamp":"2025-01-01T00:00:04.000Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}],"usage":{"input":5000,"output":100,"cacheRead":0,"cacheWrite":0,"totalTokens":5100},"stopReason":"stop","timestamp":4}}"#;
    const NEXT: &str = r#"{"type":"message","id":"00000005","parentId":"00000004","timestamp":"2025-01-01T00:00:05.000Z","message":{"role":"user","content":"12345678","timestamp":5}}"#;

    #[test]
    fn the_trigger_measures_from_the_last_usage() {
        let s = session(&[USER, ASSISTANT, RESULT, ANSWER, NEXT]);
        let m = measured_tokens(&s, s.leaf_index(), None);
        assert_eq!(m.usage_tokens, 5100);
        assert_eq!(m.trailing_tokens, 2);
        assert_eq!(m.tokens, 5102);
        assert_eq!(m.last_usage_index, Some(3));
    }

    #[test]
    fn a_usage_from_before_the_latest_compaction_does_not_count() {
        let compaction = r#"{"type":"compaction","id":"00000006","parentId":"00000005","timestamp":"2025-01-01T00:00:06.000Z","summary":"abcd","firstKeptEntryId":"00000004","tokensBefore":5102}"#;
        let s = session(&[USER, ASSISTANT, RESULT, ANSWER, NEXT, compaction]);
        let leaf = s.leaf_index();
        let m = measured_tokens(&s, leaf, None);
        // The reference anchors on the kept answer's usage; we do not.
        let reference = estimate_context_tokens(build_context_at(&s, leaf).agent_messages());
        assert_eq!(reference.usage_tokens, 5100);
        assert_eq!(m.last_usage_index, None);
        assert_eq!(
            m.tokens,
            context_tokens(&s, leaf, None, Tokenizer::Heuristic)
        );
        assert!(m.tokens < 100, "{m:?}");
    }
}
