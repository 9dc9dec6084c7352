//! `musepi unprune FILE [--entry ID]`: puts back the originals of pruned
//! tool results from the prune store beside the session (docs/design.md,
//! "The prune store"). Each restored line is the line as it stood before
//! pruning, byte for byte; the rewrite is the journal's, atomic and
//! carrying what another process appends meanwhile.

use std::fmt::Write as _;

use musepi_protocol::cli::UnpruneDoc;
use musepi_runtime::context::is_pruned;
use musepi_session_model::{Replacement, Session};

use crate::cli::UnpruneArgs;
use crate::commands::pi_dir::CHANGES_THE_FILE;
use crate::commands::recall::no_original;
use crate::commands::writer::{Target, report_write_warnings};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{counted, escape_controls, note, print_json};
use crate::report::recall::Originals;

/// Runs the command.
pub fn run(args: &UnpruneArgs, ctx: &Ctx) -> CmdResult {
    let file = args.file.file_path("unprune", CHANGES_THE_FILE)?;
    let target = Target::new(&file, &args.write, ctx)?;
    let mut journal = target.open(ctx)?;
    let session = journal.session();
    let mut originals = Originals::open(Some(&file), session);
    let wanted: Vec<usize> = match &args.entry {
        Some(id) => {
            let index = session
                .index_of(id)
                .ok_or_else(|| Failure::unknown_entry(id))?;
            if !is_pruned(&session.entries()[index]) {
                return Err(Failure::new(
                    Exit::BadInput,
                    "not-pruned",
                    anyhow::anyhow!("entry {id} is not a pruned tool result; nothing to put back"),
                ));
            }
            vec![index]
        }
        None => (0..session.len())
            .filter(|&i| is_pruned(&session.entries()[i]))
            .collect(),
    };
    let (changes, restored, unrecoverable) = restorations(session, &wanted, &mut originals);
    if let (Some(id), true) = (&args.entry, changes.is_empty()) {
        return Err(no_original(id, &originals.warnings));
    }
    let mut warnings = std::mem::take(&mut originals.warnings);
    for w in &warnings {
        note(ctx.quiet(), &format!("musepi: warning: {w}"));
    }
    let changed = !changes.is_empty();
    journal.stage_replacements(changes).or_failed()?;
    if journal.migration_pending() && (changed || !target.in_place()) {
        target.note_migration(
            journal.session().original_version(),
            changed.then_some("the originals put back"),
            ctx,
        );
    }
    if changed && !args.write.dry_run {
        target.refuse_live(&journal)?;
        journal.rewrite()?;
        warnings.extend(report_write_warnings(&mut journal));
    } else {
        journal.discard_staged();
    }
    let output = target.finish_changed(&journal, changed)?;
    if ctx.json() {
        let doc = UnpruneDoc {
            restored,
            unrecoverable,
            written: output.is_some(),
            output,
            warnings,
        };
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    let mut out = String::new();
    let verb = if args.write.dry_run {
        "would put back"
    } else {
        "put back"
    };
    let ids = |list: &[String]| {
        list.iter()
            .map(|id| escape_controls(id).into_owned())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if restored.is_empty() {
        out.push_str("nothing to put back");
    } else {
        let _ = write!(
            out,
            "{verb} the {} of {}",
            if restored.len() == 1 {
                "original"
            } else {
                "originals"
            },
            ids(&restored)
        );
    }
    if !unrecoverable.is_empty() {
        let _ = write!(
            out,
            "; {} no original in the prune store: {}",
            counted(
                unrecoverable.len(),
                "pruned result has",
                "pruned results have"
            ),
            ids(&unrecoverable)
        );
    }
    out.push('\n');
    if let Some(name) = output.filter(|_| !target.in_place()) {
        let _ = writeln!(out, "written to {}", escape_controls(&name));
    }
    target.report(&out, ctx)?;
    Ok(Exit::Ok)
}

/// The replacements that put back the originals of the entries `wanted`,
/// the ids put back, and the ids whose originals the store lacks.
fn restorations(
    session: &Session,
    wanted: &[usize],
    originals: &mut Originals,
) -> (Vec<Replacement>, Vec<String>, Vec<String>) {
    let mut changes = Vec::new();
    let (mut restored, mut missing) = (Vec::new(), Vec::new());
    for &i in wanted {
        let entry = &session.entries()[i];
        let found = match originals.store().original(entry) {
            Ok(found) => found,
            Err(w) => {
                originals.warnings.push(w.to_string());
                None
            }
        };
        match found.and_then(|o| String::from_utf8(o.line).ok().map(|line| (o.entry, line))) {
            Some((original, line)) => {
                changes.push(Replacement::new(i, original, line));
                restored.push(entry.id.to_string());
            }
            None => missing.push(entry.id.to_string()),
        }
    }
    (changes, restored, missing)
}
