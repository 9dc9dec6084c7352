//! `musepi handoff FILE -o NEW`: a new session that starts from a handoff
//! document of this one (docs/design.md, "Handoff").
//!
//! The document is written by the model from the context at the leaf
//! (what a normal turn sends, plus the handoff prompt), unless a
//! `session_before_compact` hook (run with reason `handoff`) cancels the
//! handoff or supplies the document as its compaction's `summary`. The new
//! session's header names the old file as `parentSession`; its one entry
//! is a visible `custom_message` of type `handoff`. The old file is never
//! written, and nothing is written when anything fails.

use std::fmt::Write as _;
use std::path::Path;

use musepi_runtime::compaction::SUMMARIZATION_SYSTEM;
use musepi_runtime::compaction::{handoff_request, handoff_session};
use musepi_runtime::context::{
    ConvertOptions, FileOps, SessionContext, build_context, convert_to_llm, summary_reasoning,
};
use musepi_runtime::hooks::events::{
    BeforeCompactEvent, MessageView, PreparationView, SummarizedMessages, names,
};
use musepi_runtime::hooks::{Hooks, Summarizer};
use musepi_session_model::time::format_iso;
use musepi_session_model::{
    CURRENT_VERSION, EntryBody, Header, Journal, Session, Stamp, write_session_file,
};

use tokio_util::sync::CancellationToken;

use crate::cli::HandoffArgs;
use crate::commands::files::mode_of;
use crate::commands::runtime::{Progress, provider, runtime, settings};
use crate::commands::writer::{print_warnings, replace_out};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{Color, aligned, escape_controls, print_json, print_text, push_lines_preview};

/// The `reason` hooks see for a handoff.
pub const HANDOFF_REASON: &str = "handoff";

/// Lines of the document the report shows.
const DOCUMENT_LINES: usize = 10;

/// Runs the command.
pub fn run(args: &HandoffArgs, ctx: &Ctx) -> CmdResult {
    let settings = settings(ctx);
    if args.out.as_os_str() == "-" {
        return Err(Failure::usage(anyhow::anyhow!(
            "a handoff writes a new session file: give -o a path"
        )));
    }
    let replace = replace_out(&args.out, args.force)?;
    let file = args.file.file_path(
        "handoff",
        "names the session file as the new session's parentSession",
    )?;
    let journal = Journal::open(&file, &mut crate::ids::for_v1()).or_bad_input()?;
    let session = journal.session();
    let context = build_context(session);
    if context.messages.is_empty() {
        return Err(Failure::new(
            Exit::Failed,
            "empty-context",
            anyhow::anyhow!(
                "nothing to hand off: the context at the leaf of {} is empty",
                file.display()
            ),
        ));
    }
    let parent = std::path::absolute(&file).or_bad_input()?;
    let hooks = crate::hooks::from_settings(&settings, ctx.quiet()).or_bad_input()?;
    let rt = runtime()?;
    let progress = Progress::start(ctx, "writing the handoff document");
    let flags = args.llm.flags();
    // A provider is needed only when no hook supplies the document, so a
    // configuration error waits until then.
    let llm = provider(ctx, &settings, &flags, &progress);
    let generated = progress.run(&rt, async |cancel| {
        let mut warnings = Vec::new();
        let supplied = ask_hooks(
            &hooks,
            session,
            &context,
            args,
            &parent,
            cancel,
            &mut warnings,
        )
        .await?;
        let (document, from_extension) = if let Some(document) = supplied {
            (document, true)
        } else {
            let llm = llm?;
            let history = convert_to_llm(&context.messages, &ConvertOptions::default());
            let request = handoff_request(
                history,
                SUMMARIZATION_SYSTEM.text(),
                args.instructions.as_deref(),
                summary_reasoning(&context.thinking_level),
            );
            let response = llm
                .summarize(&request, cancel.clone())
                .await
                .map_err(|e| Failure {
                    error: anyhow::anyhow!("handoff generation failed: {e}"),
                    ..Failure::failed(e)
                })?;
            if response.truncated {
                warnings.push(musepi_runtime::compaction::truncation_warning(
                    request.purpose,
                    &llm,
                ));
            }
            (response.text.trim().to_owned(), false)
        };
        if cancel.is_cancelled() {
            return Err(Failure::new(
                Exit::Failed,
                "interrupted",
                anyhow::anyhow!("handoff cancelled"),
            ));
        }
        Ok((document, from_extension, warnings))
    });
    let (document, from_extension, warnings) = generated?;
    if document.is_empty() {
        return Err(Failure::new(
            Exit::Failed,
            "provider-failed",
            anyhow::anyhow!("handoff generation failed: the document is empty"),
        ));
    }
    let (header, new) = new_session(session, &parent, &document, ctx);
    write_session_file(&args.out, &new, mode_of(&file), replace)?;
    report(args, &header, &document, from_extension, &warnings, ctx)
}

/// Runs `session_before_compact` with reason `handoff`: the supplied
/// document, if any; an error when a hook cancels.
async fn ask_hooks(
    hooks: &Hooks,
    session: &Session,
    context: &SessionContext<'_>,
    args: &HandoffArgs,
    parent: &Path,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<Option<String>, Failure> {
    if !hooks.has(names::BEFORE_COMPACT) {
        return Ok(None);
    }
    let event = before_event(session, context, args, parent);
    let d = hooks.before_compact(&event, cancel).await;
    warnings.extend(d.warnings.iter().map(ToString::to_string));
    if d.failed_closed || d.result.as_ref().is_some_and(|r| r.cancel) {
        for w in &d.warnings {
            eprintln!("musepi: warning: {w}");
        }
        // Which hook, and its reason, as a compaction's cancel says them.
        let by = match &d.cancelled_by {
            Some(by) => match &by.reason {
                Some(reason) => format!("hook {}: {}", by.hook, reason.trim()),
                None => format!("hook {}", by.hook),
            },
            None => "a session_before_compact hook".to_owned(),
        };
        return Err(Failure::new(
            Exit::Failed,
            "cancelled",
            anyhow::anyhow!("handoff cancelled by {by}; nothing was written"),
        ));
    }
    Ok(d.result.and_then(|r| r.compaction).map(|c| c.summary))
}

/// The `session_before_compact` payload of a handoff: everything in the
/// context is "summarized", nothing is kept (`firstKeptEntryId` is empty).
fn before_event(
    session: &Session,
    context: &SessionContext<'_>,
    args: &HandoffArgs,
    parent: &Path,
) -> BeforeCompactEvent {
    let id = |i: usize| session.entries()[i].id.to_string();
    let mut ops = FileOps::default();
    for m in &context.messages {
        ops.add_message(&m.message);
    }
    let previous_summary =
        context
            .compaction_index
            .and_then(|i| match &session.entries()[i].body {
                EntryBody::Compaction(c) => Some(c.summary.as_str().to_owned()),
                _ => None,
            });
    BeforeCompactEvent {
        kind: names::BEFORE_COMPACT,
        session_file: Some(parent.display().to_string()),
        session_id: session.header().id.clone(),
        reason: HANDOFF_REASON.to_owned(),
        will_retry: false,
        custom_instructions: args.instructions.clone(),
        preparation: PreparationView {
            first_kept_entry_id: String::new(),
            tokens_before: crate::report::context::context_tokens(session, session.leaf_index()),
            is_split_turn: false,
            summarized: SummarizedMessages {
                messages_to_summarize: MessageView::all(session, &context.messages),
                turn_prefix_messages: Vec::new(),
            },
            kept_message_count: 0,
            previous_summary,
            files: ops.lists(),
        },
        branch_entry_ids: session
            .leaf_index()
            .map(|leaf| session.path_indices(leaf).into_iter().map(id).collect())
            .unwrap_or_default(),
    }
}

/// The new session: a fresh id, "now", the old working directory, the old
/// file as parent, and the document.
fn new_session(old: &Session, parent: &Path, document: &str, ctx: &Ctx) -> (Header, Session) {
    let id = crate::ids::new_session_id(ctx.deterministic_ids(), ctx.now_ms());
    let header = Header {
        version: CURRENT_VERSION,
        id,
        timestamp: Some(format_iso(ctx.now_ms())),
        cwd: old.header().cwd.clone().or_else(|| {
            std::env::current_dir()
                .ok()
                .map(|d| d.display().to_string())
        }),
        parent_session: Some(parent.display().to_string()),
    };
    let mut ids = crate::ids::for_new_entries(ctx.deterministic_ids(), std::iter::empty());
    let mut stamp = Stamp {
        ids: ids.as_mut(),
        now: ctx.now_ms(),
    };
    let session = handoff_session(header.clone(), document, &mut stamp);
    (header, session)
}

fn report(
    args: &HandoffArgs,
    header: &Header,
    document: &str,
    from_extension: bool,
    warnings: &[String],
    ctx: &Ctx,
) -> CmdResult {
    print_warnings(warnings, ctx);
    if ctx.json() {
        print_json(&musepi_protocol::cli::HandoffDoc {
            file: args.out.display().to_string(),
            session_id: header.id.clone(),
            parent_session: header.parent_session.clone(),
            document: document.to_owned(),
            from_extension,
            warnings: warnings.to_vec(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let rows = vec![
        (
            "new session".to_owned(),
            escape_controls(&args.out.display().to_string()).into_owned(),
        ),
        (
            "session id".to_owned(),
            escape_controls(&header.id).into_owned(),
        ),
        (
            "parent".to_owned(),
            escape_controls(header.parent_session.as_deref().unwrap_or_default()).into_owned(),
        ),
        (
            "document".to_owned(),
            if from_extension {
                "supplied by a hook".to_owned()
            } else {
                format!("{} lines", document.lines().count())
            },
        ),
    ];
    let mut text = aligned(&rows);
    let _ = writeln!(text, "{}", ctx.style.paint(Color::Dim, "handoff:"));
    // The document is the model's or a hook's: its line breaks are kept,
    // its other control characters escaped.
    push_lines_preview(&mut text, document, DOCUMENT_LINES, ctx.style);
    print_text(&text).or_failed()?;
    Ok(Exit::Ok)
}
