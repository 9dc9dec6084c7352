//! Provider-facing messages: what a model is sent, after conversion
//! (docs/design.md, "What the model sees"), and the plain-data summary request every summarizer takes.

use std::collections::HashSet;

use musepi_session_model::{ContentBlock, StopReason, Usage};
use serde_json::Value;

/// One message as a provider receives it.
#[derive(Debug, Clone, PartialEq)]
pub enum LlmMessage {
    /// A user turn (also bash executions, summaries, and custom messages
    /// for providers without a developer role).
    User {
        /// Text and image blocks.
        content: Vec<ContentBlock>,
    },
    /// A developer (system-level) message: custom messages (docs/design.md, "What the model sees").
    Developer {
        /// Text and image blocks.
        content: Vec<ContentBlock>,
    },
    /// A model turn.
    Assistant {
        /// Text, thinking and tool-call blocks.
        content: Vec<ContentBlock>,
        /// The provider that produced it, when known.
        provider: Option<String>,
        /// The model that produced it, when known.
        model: Option<String>,
        /// Why it ended.
        stop_reason: Option<StopReason>,
    },
    /// A tool's answer to a call.
    ToolResult {
        /// The call it answers.
        tool_call_id: String,
        /// The tool.
        tool_name: String,
        /// Text and image blocks.
        content: Vec<ContentBlock>,
        /// Whether the tool failed.
        is_error: bool,
    },
    /// A compaction summary that carries a provider's native replay of the
    /// compacted history (docs/design.md, "What the model sees"). Only the provider that
    /// stored it sends its items; every other provider sends its
    /// [fallback](ProviderHistory::fallback). See [`resolve_replays`].
    ProviderHistory(ProviderHistory),
}

/// The remote replay payload of a compaction summary
/// (`providerPayload = {type: "openaiResponsesHistory", provider, items}`),
/// with what a provider that cannot replay it sends instead.
#[derive(Debug, Clone, PartialEq)]
pub struct ProviderHistory {
    /// The provider that stored the history
    /// (`preserveData.openaiRemoteCompaction.provider`): the only one that
    /// may send [`items`](Self::items).
    pub provider: String,
    /// The provider's native input items (`replacementHistory`). They stand
    /// for the summary and for the [`kept`](Self::kept) messages.
    pub items: Vec<Value>,
    /// The compaction summary as any other provider receives it: a user
    /// message (the wrapped summary, or the summary and its archive blocks).
    pub summary: Box<LlmMessage>,
    /// The messages of the entries kept between the compaction's
    /// `firstKeptEntryId` and the compaction itself. The items already
    /// contain them; a provider that does not send the items sends these
    /// after the summary.
    pub kept: Vec<LlmMessage>,
}

impl ProviderHistory {
    /// The payload's `type`.
    pub const TYPE: &'static str = "openaiResponsesHistory";

    /// What a provider that does not send the items sends in their place:
    /// the summary, then the kept messages.
    pub fn fallback(&self) -> impl Iterator<Item = &LlmMessage> {
        std::iter::once(self.summary.as_ref()).chain(&self.kept)
    }
}

/// The messages a provider sends, given the provider whose native
/// histories it replays (`None`: it replays none).
///
/// A [`LlmMessage::ProviderHistory`] stored by `replaying` stays in place
/// (the provider sends its items), and the tool results that answer calls
/// among its kept messages are left out with them: their calls are no
/// longer sent. Every other history is replaced by its summary and its
/// kept messages. With `None` the result holds no provider history.
pub fn resolve_replays<'a>(
    messages: &'a [LlmMessage],
    replaying: Option<&str>,
) -> Vec<&'a LlmMessage> {
    let mut out = Vec::with_capacity(messages.len());
    let mut covered_calls = HashSet::new();
    for message in messages {
        push_resolved(&mut out, &mut covered_calls, message, replaying);
    }
    out
}

fn push_resolved<'a>(
    out: &mut Vec<&'a LlmMessage>,
    covered_calls: &mut HashSet<&'a str>,
    message: &'a LlmMessage,
    replaying: Option<&str>,
) {
    match message {
        LlmMessage::ProviderHistory(h) if replaying == Some(h.provider.as_str()) => {
            for kept in &h.kept {
                if let LlmMessage::Assistant { content, .. } = kept {
                    covered_calls.extend(content.iter().filter_map(|b| match b {
                        ContentBlock::ToolCall(call) => Some(call.id.as_str()),
                        _ => None,
                    }));
                }
            }
            out.push(message);
        }
        LlmMessage::ProviderHistory(h) => {
            for m in h.fallback() {
                push_resolved(out, covered_calls, m, replaying);
            }
        }
        LlmMessage::ToolResult { tool_call_id, .. }
            if covered_calls.contains(tool_call_id.as_str()) => {}
        other => out.push(other),
    }
}

impl LlmMessage {
    /// A user message with one text block.
    pub fn user_text(text: impl Into<String>) -> Self {
        Self::User {
            content: vec![ContentBlock::text(text)],
        }
    }

    /// The role name: `user`, `developer`, `assistant` or `toolResult`;
    /// a provider history has its summary's role (`user`).
    pub fn role(&self) -> &'static str {
        match self {
            Self::User { .. } => "user",
            Self::Developer { .. } => "developer",
            Self::Assistant { .. } => "assistant",
            Self::ToolResult { .. } => "toolResult",
            Self::ProviderHistory(h) => h.summary.role(),
        }
    }

    /// The content blocks; for a provider history, its summary's.
    pub fn content(&self) -> &[ContentBlock] {
        match self {
            Self::User { content }
            | Self::Developer { content }
            | Self::Assistant { content, .. }
            | Self::ToolResult { content, .. } => content,
            Self::ProviderHistory(h) => h.summary.content(),
        }
    }

    /// The remote replay payload, when the message carries one.
    pub fn provider_history(&self) -> Option<&ProviderHistory> {
        match self {
            Self::ProviderHistory(h) => Some(h),
            _ => None,
        }
    }
}

/// What a summary request is for; providers may use it for logging and
/// errors name it (`Summarization failed: …`, docs/design.md, "When to compact").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestPurpose {
    /// The history summary of a compaction (first or update).
    History,
    /// The summary of the prefix of a split turn.
    TurnPrefix,
    /// The short one-line summary shown in UIs.
    ShortSummary,
    /// The summary of an abandoned branch.
    BranchSummary,
    /// A handoff document for a new session.
    Handoff,
}

impl RequestPurpose {
    /// A stable name for logs and JSON.
    pub fn name(self) -> &'static str {
        self.words().0
    }

    /// The prefix of the error message when the call fails (docs/design.md, "When to compact").
    pub fn failure_prefix(self) -> &'static str {
        self.words().1
    }

    /// The name and the failure prefix of each purpose, in one table.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Self::History => ("history", "Summarization failed"),
            Self::TurnPrefix => ("turnPrefix", "Turn prefix summarization failed"),
            Self::ShortSummary => ("shortSummary", "Short summary failed"),
            Self::BranchSummary => ("branchSummary", "Branch summarization failed"),
            Self::Handoff => ("handoff", "Handoff generation failed"),
        }
    }
}

/// The reasoning effort a summary request asks for when the session's
/// thinking level is `thinking_level` (the context's, as
/// [`crate::context_thinking_level`] reads it): the level itself (`minimal`,
/// `low`, `medium`, `high`, `xhigh`, or whatever a newer agent wrote), and
/// none for `off` or an empty level. Each provider maps it to its own
/// parameter.
pub fn summary_reasoning(thinking_level: &str) -> Option<String> {
    (!matches!(thinking_level, "" | "off")).then(|| thinking_level.to_owned())
}

/// A request to a summarizing model, as plain data: the caller sends it
/// with whatever client it has and hands the text back.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRequest {
    /// What it is for.
    pub purpose: RequestPurpose,
    /// The system prompt.
    pub system_prompt: String,
    /// The messages: for summaries, one user message holding the assembled
    /// prompt; for a handoff, the live history followed by the handoff prompt.
    pub messages: Vec<LlmMessage>,
    /// Output limit, when one applies (docs/design.md, "Summaries").
    pub max_tokens: Option<u32>,
    /// Reasoning effort (`minimal`, `low`, `medium`, `high`, `xhigh`), when asked for (docs/design.md, "Summaries").
    pub reasoning: Option<String>,
}

impl SummaryRequest {
    /// A summary request whose single user message is `prompt`.
    pub fn single(
        purpose: RequestPurpose,
        system_prompt: impl Into<String>,
        prompt: impl Into<String>,
        max_tokens: Option<u32>,
        reasoning: Option<String>,
    ) -> Self {
        Self {
            purpose,
            system_prompt: system_prompt.into(),
            messages: vec![LlmMessage::user_text(prompt)],
            max_tokens,
            reasoning,
        }
    }

    /// The text of the last user message: the assembled prompt, which is
    /// what the custom remote endpoint receives (docs/design.md, "Remote summaries").
    pub fn prompt_text(&self) -> String {
        self.messages
            .iter()
            .rev()
            .find_map(|m| match m {
                LlmMessage::User { .. } | LlmMessage::ProviderHistory(_) => Some(
                    m.content()
                        .iter()
                        .filter_map(|b| match b {
                            ContentBlock::Text { text, .. } => Some(text.as_str()),
                            _ => None,
                        })
                        .collect::<Vec<_>>()
                        .join("\n"),
                ),
                _ => None,
            })
            .unwrap_or_default()
    }
}

/// What a summarizer answered.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SummaryResponse {
    /// The text blocks of the answer joined with `"\n"` (thinking ignored).
    pub text: String,
    /// Usage, when the provider reported it.
    pub usage: Option<Usage>,
    /// Whether the model stopped at the output limit, so the text may end
    /// mid-thought (`finish_reason: length`, `stop_reason: max_tokens`, an
    /// incomplete response).
    pub truncated: bool,
}

/// One converted message with the entry it came from.
#[derive(Debug, Clone, PartialEq)]
pub struct Converted {
    /// Position of the source entry.
    pub entry_index: usize,
    /// The provider message.
    pub message: LlmMessage,
}

#[cfg(test)]
mod tests {
    use super::summary_reasoning;

    #[test]
    fn a_summary_asks_for_the_thinking_level_and_for_none_when_it_is_off() {
        for level in ["minimal", "low", "medium", "high", "xhigh"] {
            assert_eq!(summary_reasoning(level).as_deref(), Some(level));
        }
        assert_eq!(summary_reasoning("off"), None);
        assert_eq!(summary_reasoning(""), None);
    }
}
