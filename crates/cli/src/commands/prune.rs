//! `musepi prune FILE`: blank stale tool output in place (docs/design.md, "Pruning").
//!
//! The plan is the one a compaction prunes with ([`plan_prune`], which
//! `musepi plan` shows): superseded reads, useless results and results
//! older than the protected window, after the latest compaction's kept
//! boundary, when together they save at least the minimum (20,000 tokens;
//! `--min-saving N` sets it). The result goes in place, or to `-o OUT`
//! (`-` for standard output).

use std::fmt::Write as _;

use musepi_protocol::cli::PruneCommandDoc;
use musepi_runtime::compaction::{apply_prune, plan_prune};

use crate::cli::PruneArgs;
use crate::commands::pi_dir::CHANGES_THE_FILE;
use crate::commands::runtime::Progress;
use crate::commands::writer::{Target, report_write_warnings};
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, column_width, escape_controls, pad_end, print_json};
use crate::report::plan::prune_doc;
use crate::report::plan::prune_text;

/// Runs the command.
pub fn run(args: &PruneArgs, ctx: &Ctx) -> CmdResult {
    let file = args.file.file_path("prune", CHANGES_THE_FILE)?;
    let target = Target::new(&file, &args.write, ctx)?;
    // What it does, on a terminal: reading, planning, writing.
    let progress = Progress::start(ctx, &format!("pruning · reading {}", shown(&file)));
    let mut journal = target.open(ctx)?;
    target.refuse_unreadable(&journal)?;
    let now = ctx.now_ms();
    let mut config = crate::commands::runtime::maintenance(
        &crate::commands::runtime::settings(ctx),
        &crate::cli::BudgetArgs::default(),
    )
    .prune();
    if let Some(n) = args.min_saving {
        config.minimum_savings = n;
    }
    let session = journal.session();
    progress.set_message(&format!(
        "pruning · planning over {}",
        crate::output::counted(session.len(), "entry", "entries")
    ));
    let plan = plan_prune(session, session.leaf_index(), &config);
    let changes = apply_prune(session, &plan, now);
    let write = !args.write.dry_run && !changes.is_empty();
    // Staging refuses a file that cannot be written (a torn tail) and a
    // change the checks refuse, before anything is written, even for a dry
    // run or when there is nothing to prune; the changes staged are the
    // ones the rewrite writes.
    let pruned = !changes.is_empty();
    journal.stage_replacements(changes).or_failed()?;
    // A v1 or v2 file is written as v3: in place when something is pruned,
    // and always in a copy.
    if journal.migration_pending() && (pruned || !target.in_place()) {
        target.note_migration(
            journal.session().original_version(),
            pruned.then_some("the pruned results"),
            ctx,
        );
    }
    let mut warnings = Vec::new();
    if write {
        target.refuse_live(&journal)?;
        progress.set_message(&format!(
            "pruning · keeping {} in the prune store, then writing {}",
            crate::output::counted(plan.candidates.len(), "original", "originals"),
            shown(&file)
        ));
        journal.rewrite()?;
        warnings = report_write_warnings(&mut journal);
    } else {
        journal.discard_staged();
    }
    let output = target.finish_changed(&journal, !plan.is_empty())?;
    progress.finish();
    let session = journal.session();
    if ctx.json() {
        let doc = PruneCommandDoc {
            prune: prune_doc(session, &plan),
            written: output.is_some(),
            output,
            warnings,
        };
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    let st = target.style(ctx);
    let mut out = String::new();
    // Each result's id escaped once, then measured and printed.
    let ids: Vec<_> = plan
        .candidates
        .iter()
        .map(|c| escape_controls(session.entries()[c.entry_index].id.as_str()))
        .collect();
    let id_width = column_width(&ids, 0);
    for (c, id) in plan.candidates.iter().zip(&ids) {
        let _ = writeln!(
            out,
            "{:<10}  {}  {:>7} → {:<5}  {}",
            c.kind.name(),
            st.paint(Color::Cyan, &pad_end(id, id_width)),
            crate::output::thousands(c.tokens),
            crate::output::thousands(c.tokens - c.saved),
            escape_controls(&c.placeholder)
        );
    }
    let verb = if args.write.dry_run {
        "would save"
    } else {
        "saved"
    };
    let _ = writeln!(out, "{}", prune_text(&plan, verb));
    if let Some(name) = output.filter(|_| !target.in_place()) {
        let _ = writeln!(out, "written to {}", escape_controls(&name));
    }
    target.report(&out, ctx)?;
    Ok(Exit::Ok)
}

/// The file as the spinner names it, escaped as every name on the terminal.
fn shown(file: &std::path::Path) -> String {
    escape_controls(&file.display().to_string()).into_owned()
}
