//! What the model sees of a session.
//!
//! This crate owns: the LLM context at any leaf with the safety
//! refinements, the display transcript, conversion to provider messages
//! ([`LlmMessage`], with the remote replay: [`ProviderHistory`],
//! [`resolve_replays`]), token counting (the chars/4 estimate, provider
//! usage, thresholds, the `keepRecentTokens` adaptation, exact BPE counts,
//! and [`context_tokens`], the one size of what the model sees, kept as a
//! session grows by [`ContextAccount`]), the
//! summarizer serialization, file-operation tracking, prompt template
//! rendering for every crate, and the plain-data [`SummaryRequest`] that
//! every summarizer takes. docs/design.md describes each behaviour.
//!
//! It builds on `musepi-session-model` and knows nothing of when to compact.

mod account;
mod context;
mod convert;
mod escape;
mod estimate;
mod fileops;
mod llm;
mod pathtree;
mod recall;
mod replay;
mod serialize;
mod template;
mod threshold;
mod tokenizer;
mod tokens;
mod transcript;

pub use account::ContextAccount;
pub use context::{
    ContextMessage, ModelRef, SessionContext, build_context, build_context_at,
    build_context_over_path, calls_answered, context_model, context_thinking_level, entry_message,
    entry_time,
};
pub use convert::{
    ArchiveBlocks, BRANCH_WRAPPER, COMPACTION_RECALL_WRAPPER, COMPACTION_WRAPPER, ConvertOptions,
    INTERRUPTED_THINKING, bash_execution_to_text, convert_one, convert_to_llm,
    convert_with_sources, text_block, wrap, wrap_compaction,
};
pub use escape::{WRAPPER_TAGS, escape_wrapper_tags};
pub use estimate::{
    ContextEstimate, IMAGE_CHARS, anchoring_usage, calculate_context_tokens,
    calculate_prompt_tokens, chars_to_tokens, estimate_chars, estimate_context_tokens,
    estimate_tokens,
};
pub use fileops::{
    FILE_LIST_LIMIT, FileLists, FileOps, PathSet, cmp_utf16, format_files_block, format_legacy,
    strip_read_selector, upsert_file_operations,
};
pub use llm::{
    Converted, LlmMessage, ProviderHistory, RequestPurpose, SummaryRequest, SummaryResponse,
    resolve_replays, summary_reasoning,
};
pub use pathtree::format_grouped_paths;
pub use pathtree::has_url_scheme;
pub use recall::{Hit, Recalled, Search, is_pruned, lost_history, message_text, recall_entry};
pub use replay::{REMOTE_COMPACTION_KEY, remote_replay};
pub use serialize::{
    NO_PRIOR_HISTORY, TOOL_RESULT_MAX_CHARS, drop_useless_pairs, serialize_conversation,
    serialize_for_summary, truncate_for_summary,
};
pub use template::{Template, TemplateError};
pub use threshold::{
    ThresholdSettings, adapt_keep_recent_tokens, effective_reserve_tokens,
    resolve_threshold_tokens, should_compact,
};
pub use tokenizer::Tokenizer;
pub use tokens::{
    context_tokens, estimate_context_at, llm_message_tokens, measured_tokens, provider_messages,
};
pub use transcript::{
    SUPERSEDED_SHORT_SUMMARY, SUPERSEDED_SUMMARY, TranscriptItem, TranscriptOptions,
    build_transcript,
};
