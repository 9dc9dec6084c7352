//! `musepi prune FILE`: blank stale tool output in place (SPEC §5, §6).
//!
//! The file is not being used by a live agent, so the cache-aware timing of
//! the per-turn pass does not apply: every superseded read and useless
//! result after the latest compaction's kept boundary is blanked, then
//! results older than the protected window are, when that saves enough.

use std::fmt::Write as _;

use musepi_compaction::{PrunePlan, apply_prune, plan_prune, plan_stale_results};
use musepi_session_model::Journal;
use serde_json::json;

use crate::cli::PruneArgs;
use crate::commands::plan::prune_json;
use crate::commands::settings_glue::prune_config;
use crate::commands::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{Color, print_json, print_text};

/// Runs the command.
pub fn run(args: &PruneArgs, ctx: &Ctx) -> CmdResult {
    let mut ids = crate::ids::for_migration(ctx.deterministic_ids());
    let mut journal = Journal::open(&args.file, ids.as_mut()).or_bad_input()?;
    let now = ctx.now_ms();
    let config = prune_config(args.force);
    let session = journal.session();
    let leaf = session.leaf_index();
    let stale = plan_stale_results(session, leaf, &config, 0, true);
    let mut changes = apply_prune(session, &stale, now).or_failed()?;
    // Age-based pruning sees the stale results as already pruned.
    journal.stage_replacements(changes.clone()).or_failed()?;
    let aged = plan_prune(journal.session(), leaf, &config);
    changes.extend(apply_prune(journal.session(), &aged, now).or_failed()?);
    journal.discard_staged();
    let plan = PrunePlan {
        tokens_saved: stale.tokens_saved + aged.tokens_saved,
        candidates: stale
            .candidates
            .iter()
            .chain(&aged.candidates)
            .cloned()
            .collect(),
    };
    if !args.dry_run && !changes.is_empty() {
        journal.replace_entries(changes).or_failed()?;
    }
    let session = journal.session();
    if ctx.json() {
        let mut doc = prune_json(session, &plan);
        doc["written"] = json!(!args.dry_run && !plan.is_empty());
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    let st = ctx.style;
    let mut out = String::new();
    for c in &plan.candidates {
        let _ = writeln!(
            out,
            "{:<10}  {}  {:>7} → {:<5}  {}",
            c.kind.name(),
            st.paint(Color::Cyan, session.entries()[c.entry_index].id.as_str()),
            c.tokens,
            c.tokens - c.saved,
            c.placeholder
        );
    }
    let verb = if args.dry_run { "would save" } else { "saved" };
    if plan.is_empty() {
        out.push_str("nothing to prune\n");
    } else {
        let _ = writeln!(
            out,
            "{} results, {verb} {} tokens",
            plan.candidates.len(),
            plan.tokens_saved
        );
    }
    print_text(&out).or_failed()?;
    Ok(Exit::Ok)
}
