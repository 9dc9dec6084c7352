//! Renderings of summary requests (a prompt as its sections), of the
//! compaction result a summary turns into, and of pruning plans.

use std::fmt::Write as _;

use musepi_compaction::{CompactionResult, PruneConfig, PrunePlan};
use musepi_context_builder::{LlmMessage, SummaryRequest};
use musepi_session_model::Session;

use crate::render_context::kind;
use crate::show::{block_kinds, blocks_text};
use crate::table::Table;

/// A summary request: purpose, limits, then the system prompt and each
/// message as a section.
pub fn render_request(request: &SummaryRequest) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "purpose: {}", request.purpose.name());
    let _ = writeln!(
        out,
        "max tokens: {}",
        request
            .max_tokens
            .map_or("(none)".to_owned(), |n| n.to_string())
    );
    let _ = writeln!(
        out,
        "reasoning: {}",
        request.reasoning.as_deref().unwrap_or("(none)")
    );
    let _ = writeln!(out, "messages: {}", request.messages.len());
    let _ = writeln!(out, "\n=== system prompt ===\n{}", request.system_prompt);
    for (i, m) in request.messages.iter().enumerate() {
        let title = if request.messages.len() == 1 && matches!(m, LlmMessage::User { .. }) {
            "user prompt".to_owned()
        } else {
            format!("message {i} ({}, {})", m.role(), block_kinds(m.content()))
        };
        let _ = writeln!(out, "\n=== {title} ===\n{}", blocks_text(m.content()));
    }
    out
}

/// Several requests one after the other, or a note where there is none.
pub fn render_requests(requests: &[(&str, Option<SummaryRequest>)]) -> String {
    let mut out = String::new();
    for (i, (name, request)) in requests.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "##### {name}");
        match request {
            Some(r) => out.push_str(&render_request(r)),
            None => out.push_str("(no request)\n"),
        }
    }
    out
}

/// The fields of a compaction result, the summary as a section.
pub fn render_result(result: &CompactionResult) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "firstKeptEntryId: {}", result.first_kept_entry_id);
    let _ = writeln!(out, "tokensBefore: {}", result.tokens_before);
    let _ = writeln!(
        out,
        "details: {}",
        result.details.as_ref().map_or(
            "(none)".to_owned(),
            musepi_session_model::json::js_stringify
        )
    );
    let _ = writeln!(out, "fromExtension: {}", result.from_extension);
    let _ = writeln!(
        out,
        "shortSummary: {}",
        result.short_summary.as_deref().unwrap_or("(none)")
    );
    let _ = writeln!(out, "\n=== summary ===\n{}", result.summary);
    out
}

/// A pruning plan: the configuration, one row per result to blank
/// (newest first, as the plan lists them), and the total saving.
pub fn render_prune(session: &Session, config: &PruneConfig, plan: &PrunePlan) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "config: protectTokens {}, minimumSavings {}, minPruneTokens {}, pruneUseless {}, supersedeReads {}, protected tools [{}]",
        config.protect_tokens,
        config.minimum_savings,
        config.min_prune_tokens,
        config.prune_useless,
        config.supersede_reads,
        config.protected.tools.join(", ")
    );
    out.push('\n');
    if plan.is_empty() {
        out.push_str("plan: nothing to prune\n");
        return out;
    }
    let mut t = Table::new(&["entry", "tool", "kind", "tokens>", "saved>", "placeholder"]);
    for c in &plan.candidates {
        let e = &session.entries()[c.entry_index];
        let tool = e
            .message()
            .and_then(|m| m.as_tool_result())
            .map_or_else(|| kind(e), |t| t.tool_name.clone());
        t.row([
            e.id.to_string(),
            tool,
            c.kind.name().to_owned(),
            c.tokens.to_string(),
            c.saved.to_string(),
            c.placeholder.clone(),
        ]);
    }
    out.push_str(&t.render());
    let _ = writeln!(
        out,
        "\npruned: {} results, tokens saved: {}",
        plan.candidates.len(),
        plan.tokens_saved
    );
    out
}
