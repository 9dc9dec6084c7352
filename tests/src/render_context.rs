//! Renderings of what the model sees: the session tree, the context at a
//! leaf, the provider messages after conversion, and the display
//! transcript.

use std::collections::HashSet;
use std::fmt::Write as _;

use musepi_context_builder::{
    ContextMessage, ConvertOptions, LlmMessage, SessionContext, TranscriptOptions,
    build_context_at, build_transcript, convert_with_sources, estimate_context_tokens,
    estimate_tokens,
};
use musepi_session_model::{
    AgentMessage, ContentBlock, Entry, EntryBody, Session, SummaryEntry as _,
};

use crate::show::{Show, block_kinds, blocks_text, content_kinds, message_text, preview};
use crate::table::Table;

/// `message:<role>` shortened to the role; other entries by type.
pub fn kind(entry: &Entry) -> String {
    match entry.message() {
        Some(m) => m.role().to_owned(),
        None => entry.type_name().to_owned(),
    }
}

/// The block kinds of a runtime message (`-` for roles without blocks).
pub fn message_kinds(message: &AgentMessage) -> String {
    match message {
        AgentMessage::User(m) => content_kinds(&m.content),
        AgentMessage::Assistant(m) => content_kinds(&m.content),
        AgentMessage::ToolResult(m) => content_kinds(&m.content),
        AgentMessage::Custom(m) => content_kinds(&m.content),
        _ => "-".to_owned(),
    }
}

/// One line on what a non-message entry holds.
fn entry_detail(entry: &Entry) -> String {
    let q = |s: &str| preview(s, 40);
    match &entry.body {
        EntryBody::Message(m) => q(&message_text(m)),
        EntryBody::ThinkingLevelChange { thinking_level } => {
            format!("level {}", thinking_level.as_deref().unwrap_or("null"))
        }
        EntryBody::ModelChange(mc) => match (&mc.model, &mc.role) {
            (Some(model), role) => format!("model {model} role {}", role.as_deref().unwrap_or("-")),
            (None, _) => format!(
                "provider {} modelId {}",
                mc.provider.as_deref().unwrap_or("-"),
                mc.model_id.as_deref().unwrap_or("-")
            ),
        },
        EntryBody::Compaction(c) => format!(
            "firstKept {} tokensBefore {}{}",
            c.first_kept_entry_id.as_ref().map_or("-", |id| id.as_str()),
            c.tokens_before,
            if c.is_from_extension() {
                " (extension)"
            } else {
                ""
            }
        ),
        EntryBody::BranchSummary(b) => format!(
            "fromId {} {}{}",
            b.from_id,
            q(&b.summary),
            if b.is_from_extension() {
                " (extension)"
            } else {
                ""
            }
        ),
        EntryBody::Custom { custom_type, .. } => format!("customType {custom_type}"),
        EntryBody::CustomMessage(c) => format!(
            "customType {} display {} {}",
            c.custom_type,
            c.display,
            q(&crate::show::content_text(&c.content))
        ),
        EntryBody::Label { target_id, label } => match label.as_deref() {
            Some(l) if !l.is_empty() => format!("target {target_id} label {l:?}"),
            _ => format!("target {target_id} (cleared)"),
        },
        EntryBody::SessionInfo { name } => format!("name {:?}", name.as_deref().unwrap_or("")),
        EntryBody::Other { .. } => "(unknown type: kept, ignored)".to_owned(),
    }
}

/// The session as a tree: header facts, then every entry in pre-order
/// with its depth, parent and children.
pub fn render_outline(session: &Session) -> String {
    let mut out = String::new();
    let h = session.header();
    let _ = writeln!(
        out,
        "file version: {} (read as version {})",
        session.original_version(),
        h.version
    );
    let _ = writeln!(out, "entries: {}", session.len());
    let _ = writeln!(out, "problems: {}", session.problems().len());
    let _ = writeln!(
        out,
        "leaf: {}",
        session.leaf_id().map_or("(none)", |id| id.as_str())
    );
    let _ = writeln!(
        out,
        "session name: {}",
        session
            .session_name()
            .map_or("(none)".to_owned(), |n| format!("{n:?}"))
    );
    let labels: Vec<String> = session
        .labels()
        .iter()
        .map(|(k, v)| format!("{k}={v:?}"))
        .collect();
    let _ = writeln!(out, "labels: [{}]", labels.join(", "));
    out.push('\n');
    let mut t = Table::new(&["depth>", "entry", "parent", "kind", "children>", "detail"]);
    for node in session.tree().walk() {
        let e = &session.entries()[node.index];
        t.row([
            node.depth.to_string(),
            e.id.to_string(),
            e.parent_id
                .as_ref()
                .map_or("-".to_owned(), ToString::to_string),
            kind(e),
            node.children.to_string(),
            entry_detail(e),
        ]);
    }
    out.push_str(&t.render());
    out
}

/// The context at entry `leaf`: model, thinking level, one row per
/// message with its source entry and estimate, the total and the
/// context estimate.
pub fn render_context(session: &Session, leaf: usize, show: Show) -> String {
    let ctx = build_context_at(session, Some(leaf));
    let mut out = String::new();
    let entries = session.entries();
    let _ = writeln!(
        out,
        "leaf: {} ({})",
        entries[leaf].id,
        entries[leaf].kind_label()
    );
    let _ = writeln!(out, "path: {} entries", session.path_indices(leaf).len());
    let model = ctx.model.as_ref().map_or("(none)".to_owned(), |m| {
        let name = format!("{}/{}", m.provider, m.model_id);
        match show {
            Show::Preview => name,
            Show::Hash => format!("sha {}", show.text(&name)),
        }
    });
    let _ = writeln!(out, "model: {model}");
    let _ = writeln!(out, "thinking level: {}", ctx.thinking_level);
    let _ = writeln!(
        out,
        "opening compaction: {}",
        ctx.compaction_index
            .map_or("(none)".to_owned(), |i| entries[i].id.to_string())
    );
    out.push('\n');
    out.push_str(&context_table(session, &ctx, show).render());
    out.push('\n');
    let sum: u64 = ctx.messages.iter().map(ContextMessage::tokens).sum();
    let _ = writeln!(
        out,
        "messages: {}, sum of estimates: {sum}",
        ctx.messages.len()
    );
    let est = estimate_context_tokens(ctx.agent_messages());
    match est.last_usage_index {
        Some(i) => {
            let _ = writeln!(
                out,
                "context estimate: {} = usage {} (message #{i}, entry {}) + trailing {}",
                est.tokens,
                est.usage_tokens,
                entries[ctx.messages[i].entry_index].id,
                est.trailing_tokens
            );
        }
        None => {
            let _ = writeln!(
                out,
                "context estimate: {} = trailing {} (no usage to anchor on)",
                est.tokens, est.trailing_tokens
            );
        }
    }
    out
}

fn context_table(session: &Session, ctx: &SessionContext<'_>, show: Show) -> Table {
    let entries = session.entries();
    let mut t = match show {
        Show::Preview => Table::new(&["#>", "entry", "role", "blocks", "tokens>", "preview"]),
        Show::Hash => Table::new(&["#>", "entry", "role", "tokens>", "sha256[..12]"]),
    };
    for (i, m) in ctx.messages.iter().enumerate() {
        let id = entries[m.entry_index].id.to_string();
        let role = message_role(&m.message, show);
        let tokens = m.tokens().to_string();
        let text = show.text(&message_text(&m.message));
        match show {
            Show::Preview => t.row([
                i.to_string(),
                id,
                role,
                message_kinds(&m.message),
                tokens,
                text,
            ]),
            Show::Hash => t.row([i.to_string(), id, role, tokens, text]),
        }
    }
    t
}

/// The role, with the stop reason of an assistant, the flags of a tool
/// result or bash execution that change how it is treated, and the
/// `customType` of a custom message (only in [`Show::Preview`]: it is
/// text an extension chose).
fn message_role(m: &AgentMessage, show: Show) -> String {
    let mut flags = Vec::new();
    match m {
        AgentMessage::Assistant(a) => {
            if let Some(s) = &a.stop_reason {
                flags.push(s.as_str().to_owned());
            }
        }
        AgentMessage::ToolResult(t) => {
            if t.is_error {
                flags.push("error".to_owned());
            }
            if t.useless == Some(true) {
                flags.push("useless".to_owned());
            }
            if t.pruned_at.is_some() {
                flags.push("pruned".to_owned());
            }
        }
        AgentMessage::BashExecution(b) => {
            if b.cancelled {
                flags.push("cancelled".to_owned());
            }
            if b.truncated {
                flags.push("truncated".to_owned());
            }
            if b.exclude_from_context == Some(true) {
                flags.push("excludeFromContext".to_owned());
            }
        }
        AgentMessage::Custom(c) if show == Show::Preview => flags.push(c.custom_type.clone()),
        _ => {}
    }
    if flags.is_empty() {
        m.role().to_owned()
    } else {
        format!("{} ({})", m.role(), flags.join(", "))
    }
}

/// The provider messages of the context at `leaf` after conversion with
/// the default options (safety refinements on, custom messages as
/// developer messages), then the context messages that were not sent.
pub fn render_convert(session: &Session, leaf: usize) -> String {
    let ctx = build_context_at(session, Some(leaf));
    let entries = session.entries();
    let converted = convert_with_sources(&ctx.messages, &ConvertOptions::default());
    let mut t = Table::new(&["#>", "role", "source", "blocks", "note", "preview"]);
    for (i, c) in converted.iter().enumerate() {
        let original = ctx
            .messages
            .iter()
            .find(|m| m.entry_index == c.entry_index)
            .map(|m| m.message.as_ref());
        let role = match &c.message {
            LlmMessage::Assistant {
                stop_reason: Some(s),
                ..
            } => format!("assistant ({})", s.as_str()),
            m => m.role().to_owned(),
        };
        t.row([
            i.to_string(),
            role,
            entries[c.entry_index].id.to_string(),
            block_kinds(c.message.content()),
            original.map_or(String::new(), |o| rewrite_note(o, &c.message)),
            preview(&blocks_text(c.message.content()), 48),
        ]);
    }
    let mut out = format!("leaf: {}\n\n", entries[leaf].id);
    out.push_str(&t.render());
    let sent: HashSet<usize> = converted.iter().map(|c| c.entry_index).collect();
    let dropped: Vec<String> = ctx
        .messages
        .iter()
        .filter(|m| !sent.contains(&m.entry_index))
        .map(|m| {
            format!(
                "{} {}",
                entries[m.entry_index].id,
                message_role(&m.message, Show::Preview)
            )
        })
        .collect();
    // The texts conversion writes: bash executions and summary wrappers.
    let written: Vec<String> = converted
        .iter()
        .filter(|c| {
            !matches!(
                entries[c.entry_index].message(),
                Some(
                    AgentMessage::User(_)
                        | AgentMessage::Assistant(_)
                        | AgentMessage::ToolResult(_)
                )
            ) && matches!(c.message, LlmMessage::User { .. })
        })
        .map(|c| {
            format!(
                "--- {} ({}) ---\n{}\n",
                entries[c.entry_index].id,
                kind(&entries[c.entry_index]),
                blocks_text(c.message.content())
            )
        })
        .collect();
    if !written.is_empty() {
        out.push_str("\nwritten by the conversion:\n");
        for w in written {
            out.push_str(&w);
        }
    }
    let _ = write!(
        out,
        "\ncontext messages: {}, provider messages: {}\nnot sent:",
        ctx.messages.len(),
        converted.len()
    );
    if dropped.is_empty() {
        out.push_str(" (none)\n");
    } else {
        out.push('\n');
        for d in dropped {
            let _ = writeln!(out, "  {d}");
        }
    }
    out
}

/// What conversion changed in an assistant turn.
fn rewrite_note(original: &AgentMessage, sent: &LlmMessage) -> String {
    let AgentMessage::Assistant(a) = original else {
        return String::new();
    };
    let blocks = a.content.blocks();
    let calls = |b: &[ContentBlock]| {
        b.iter()
            .filter(|b| matches!(b, ContentBlock::ToolCall(_)))
            .count()
    };
    let signed = |b: &[ContentBlock]| {
        b.iter()
            .filter(|b| {
                matches!(
                    b,
                    ContentBlock::Thinking {
                        thinking_signature: Some(_),
                        ..
                    }
                )
            })
            .count()
    };
    let mut notes = Vec::new();
    let dropped = calls(blocks) - calls(sent.content());
    if dropped > 0 {
        notes.push(format!("{dropped} tool call(s) dropped"));
    }
    if signed(blocks) > signed(sent.content()) {
        notes.push("signature cleared".to_owned());
    }
    notes.join(", ")
}

/// The display transcript at `leaf`, then the same with
/// `collapseCompactedHistory`.
pub fn render_transcript(session: &Session, leaf: usize) -> String {
    let entries = session.entries();
    let mut out = format!("leaf: {}\n", entries[leaf].id);
    for (title, collapse) in [
        ("full transcript", false),
        ("collapseCompactedHistory", true),
    ] {
        let items = build_transcript(
            session,
            Some(leaf),
            TranscriptOptions {
                collapse_compacted_history: collapse,
            },
        );
        let _ = writeln!(out, "\n{title}: {} items\n", items.len());
        let mut t = Table::new(&["#>", "entry", "role", "state", "tokens>", "preview"]);
        for (i, item) in items.iter().enumerate() {
            let mut state = Vec::new();
            if item.compacted_away {
                state.push("compacted-away");
            }
            if item.superseded {
                state.push("superseded");
            } else if matches!(entries[item.entry_index].body, EntryBody::Compaction(_)) {
                state.push("active");
            }
            let short = match item.message.as_ref() {
                AgentMessage::CompactionSummary(c) => c
                    .short_summary
                    .as_deref()
                    .map(|s| format!(" short: {}", preview(s, 40))),
                _ => None,
            };
            t.row([
                i.to_string(),
                entries[item.entry_index].id.to_string(),
                item.message.role().to_owned(),
                state.join(", "),
                estimate_tokens(&item.message).to_string(),
                format!(
                    "{}{}",
                    preview(&message_text(&item.message), 40),
                    short.unwrap_or_default()
                ),
            ]);
        }
        out.push_str(&t.render());
    }
    out
}
