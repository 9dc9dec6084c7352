//! `musepi context FILE`: what the model sees at a leaf.

use std::fmt::Write as _;

use musepi_runtime::context::{Tokenizer, build_context_at};
use musepi_session_model::Session;

use crate::cli::ContextArgs;
use crate::commands::files::{Input, load_or_fail};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{
    Color, column_width, display_width, escape_controls, fit, pad_end, print_json, print_text,
    stdout_columns,
};
use crate::report::context::{Output, View, document, rows};

/// The columns a preview keeps on the narrowest terminal.
const MIN_PREVIEW: usize = 12;

/// Resolves `--leaf ID|null`: `Ok(None)` is the explicit null leaf.
pub(crate) fn resolve_leaf(
    session: &Session,
    leaf: Option<&str>,
) -> Result<Option<usize>, Failure> {
    session.leaf_named(leaf).map_err(Failure::unknown_entry)
}

/// Runs the command.
pub fn run(args: &ContextArgs, ctx: &Ctx) -> CmdResult {
    let file = args.file.path()?;
    let input = Input::from_arg(&file);
    let loaded = load_or_fail(&input, ctx)?;
    let session = &loaded.session;
    let tokenizer = match &args.tokenizer {
        Some(name) => Tokenizer::parse(name).ok_or_else(|| {
            Failure::usage(anyhow::anyhow!(
                "--tokenizer {name}: expected heuristic, o200k or cl100k"
            ))
        })?,
        None => Tokenizer::Heuristic,
    };
    let leaf = resolve_leaf(session, args.leaf.as_deref())?;
    if args.chart {
        let window = args
            .context_window
            .unwrap_or(musepi_runtime::DEFAULT_CONTEXT_WINDOW);
        return crate::commands::chart::run(
            session,
            leaf,
            window,
            &file,
            match &input {
                Input::File(path) => Some(path.as_path()),
                Input::Stdin => None,
            },
            args.out.as_deref().map(|o| (o, args.force)),
            ctx,
        );
    }
    let context = build_context_at(session, leaf);
    let leaf_id = leaf.map(|i| session.entries()[i].id.to_string());
    let view = if args.transcript {
        View::Transcript
    } else if args.llm {
        View::Llm
    } else {
        View::Context
    };
    let output = if ctx.json() {
        Output::Json
    } else {
        Output::Text
    };
    let rows = rows(session, &context, leaf, view, tokenizer, args.full, output);
    let total = musepi_runtime::context::context_tokens(session, leaf, tokenizer);
    if ctx.json() {
        let doc = document(session, &context, leaf, &rows, tokenizer, None);
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    let mut out = String::new();
    let st = ctx.style;
    // Each row's role and id escaped once, then measured and printed.
    let names: Vec<_> = rows
        .iter()
        .map(|r| (escape_controls(&r.role), escape_controls(&r.entry_id)))
        .collect();
    let role_width = column_width(names.iter().map(|(role, _)| role), 4);
    // Ids are 8 hex digits in pi's sessions; a longer one widens the column.
    let id_width = column_width(names.iter().map(|(_, id)| id), 8);
    let token_width = column_width(rows.iter().map(|r| crate::output::thousands(r.tokens)), 6);
    let columns = stdout_columns();
    for (r, (role, id)) in rows.iter().zip(&names) {
        let mut marks = String::new();
        if r.superseded {
            marks.push_str(" (superseded)");
        }
        if r.compacted_away {
            marks.push_str(" (not in context)");
        }
        if let Some(p) = &r.payload {
            let _ = write!(
                marks,
                " (replays the {} history: {} items for {} kept messages)",
                p.provider, p.items, p.kept_messages
            );
        }
        // On a terminal the preview gives way to the width (at least a
        // few words stay); piped, the row is printed whole.
        let preview = escape_controls(r.preview.as_deref().unwrap_or_default());
        let preview = match columns {
            Some(cols) => {
                let used = role_width + id_width + token_width + 6 + display_width(&marks);
                fit(&preview, cols.saturating_sub(used).max(MIN_PREVIEW))
            }
            None => preview.into_owned(),
        };
        let _ = writeln!(
            out,
            "{}  {}  {:>token_width$}  {}{}",
            pad_end(role, role_width),
            st.paint(Color::Cyan, &pad_end(id, id_width)),
            crate::output::thousands(r.tokens),
            preview,
            st.paint(Color::Dim, &marks)
        );
    }
    let what = if args.transcript {
        "transcript entries"
    } else {
        "messages"
    };
    // The model, the thinking level and the leaf are read from the session
    // too.
    let model = context.model.as_ref().map_or_else(
        || "none".to_owned(),
        |m| escape_controls(&format!("{}/{}", m.provider, m.model_id)).into_owned(),
    );
    let _ = writeln!(
        out,
        "{}",
        st.paint(
            Color::Bold,
            &format!(
                "{} {what}, {} tokens in context ({}), model {model}, thinking {}, leaf {}",
                crate::output::thousands(rows.len() as u64),
                crate::output::thousands(total),
                tokenizer.name(),
                escape_controls(&context.thinking_level),
                escape_controls(leaf_id.as_deref().unwrap_or("null"))
            )
        )
    );
    print_text(&out).or_failed()?;
    Ok(Exit::Ok)
}
