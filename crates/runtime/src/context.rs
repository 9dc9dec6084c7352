//! What the model sees, for a caller that shows or measures it: the
//! context at a leaf, its transcript, its provider messages and their
//! tokens, the summarizer's request type, and the history a compaction or
//! pruning took out of the context (recall).
//!
//! These are `musepi-context-builder`'s items, named here so that a
//! program built on this crate (the `musepi` command line) reaches every
//! engine through one layer; the two token figures a command reports come
//! from the archive-aware counting in [`context_tokens`] and
//! [`measured_tokens`], which count a PNG archive's frames as images.

pub use musepi_context_builder::{
    ContextEstimate, ContextMessage, ConvertOptions, FileLists, FileOps, LlmMessage,
    ProviderHistory, Recalled, RequestPurpose, Search, SessionContext, SummaryRequest,
    SummaryResponse, Tokenizer, TranscriptOptions, build_context, build_context_at,
    build_transcript, chars_to_tokens, context_thinking_level, convert_to_llm, is_pruned,
    llm_message_tokens, lost_history, provider_messages, recall_entry, resolve_threshold_tokens,
    summary_reasoning,
};
pub use musepi_snapcompact::{context_tokens, measured_tokens};
