//! `musepi session migrate FILE [-o OUT | --in-place] [--dry-run]`.

use std::io::Write as _;
use std::path::Path;

use musepi_protocol::session::MigrateDoc;
use musepi_session_model::{
    CURRENT_VERSION, ProblemKind, Session, SessionError, write_file, write_session_file,
    write_session_to,
};

use super::problem_doc;
use crate::cli::MigrateArgs;
use crate::commands::files::{Input, load_with, mode_of, note_problems};
use crate::commands::writer::{
    Dest, Target, note_dropped_first_kept, replace_out, report_write_warnings,
};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{note, print_json};

/// What migrate did.
struct Outcome<'a> {
    file: String,
    session: &'a Session,
    output: Option<String>,
    changed: bool,
    dry_run: bool,
    /// `--force`: v1 indexes that name no earlier entry are dropped, as the
    /// open said.
    forced: bool,
    /// What the rewrite in place had to tell (see [`report_write_warnings`]).
    warnings: Vec<String>,
}

/// Migrates a v1 or v2 file to v3: in place (atomically) by default, or to
/// `-o OUT` (`-` for standard output). A v3 file is left alone. A file that
/// does not read as a session, or whose last line is torn, is refused and
/// never written; so is a live one in place, unless `--force`.
pub(super) fn run(args: &MigrateArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    match &input {
        Input::Stdin => from_stdin(args, ctx),
        Input::File(path) => from_file(path, args, ctx),
    }
}

fn from_file(path: &Path, args: &MigrateArgs, ctx: &Ctx) -> CmdResult {
    let name = path.display().to_string();
    let target = Target::new(path, &args.write, ctx)?;
    let mut journal = target.open(ctx)?;
    let pending = journal.migration_pending();
    if pending {
        target.refuse_live(&journal)?;
    }
    let mut warnings = Vec::new();
    let output = match (target.dest(), pending) {
        (_, _) if args.write.dry_run => match target.dest() {
            Dest::InPlace => None,
            Dest::File(out) => Some(out.display().to_string()),
            Dest::Stdout => Some("<stdout>".to_owned()),
        },
        (Dest::InPlace, true) => {
            journal.persist_migration()?;
            warnings = report_write_warnings(&mut journal);
            Some(name.clone())
        }
        (Dest::InPlace, false) => None,
        (_, true) => target.finish(&journal)?,
        // Already v3: the copy is the file, byte for byte.
        (Dest::File(out), false) => {
            let mut src = std::fs::File::open(path)
                .map_err(|e| Failure::bad_input(anyhow::Error::new(e).context(name.clone())))?;
            write_file(
                out,
                mode_of(path),
                replace_out(out, args.write.force)?,
                |w| std::io::copy(&mut src, w).map(|_| ()),
            )?;
            Some(out.display().to_string())
        }
        (Dest::Stdout, false) => {
            let mut src = std::fs::File::open(path)
                .map_err(|e| Failure::bad_input(anyhow::Error::new(e).context(name.clone())))?;
            let mut out = crate::output::stdout();
            std::io::copy(&mut src, &mut out)
                .and_then(|_| out.flush())
                .map_err(Failure::failed)?;
            Some("<stdout>".to_owned())
        }
    };
    report(
        &Outcome {
            file: name,
            session: journal.session(),
            output,
            changed: pending,
            dry_run: args.write.dry_run,
            forced: args.write.force,
            warnings,
        },
        &target,
        ctx,
    )
}

fn from_stdin(args: &MigrateArgs, ctx: &Ctx) -> CmdResult {
    let Some(out) = args.write.out.as_deref() else {
        return Err(Failure::usage(anyhow::anyhow!(
            "reading standard input needs -o OUT (a file, or - for standard output) for the migrated session"
        )));
    };
    if args.in_place {
        return Err(Failure::usage(anyhow::anyhow!(
            "--in-place needs a file, not standard input"
        )));
    }
    let target = Target::new(Path::new("-"), &args.write, ctx)?;
    let loaded = load_with(&Input::Stdin, &mut crate::ids::for_v1())?;
    note_problems(&Input::Stdin, &loaded.session, ctx);
    refuse_unwritable(&loaded.session, "<stdin>", args.write.force)?;
    if args.write.force {
        let dropped: Vec<_> = loaded
            .session
            .problems()
            .iter()
            .filter(|p| matches!(p.kind, ProblemKind::FirstKeptIndex { .. }))
            .cloned()
            .collect();
        note_dropped_first_kept("<stdin>", &dropped, args.write.dry_run, ctx);
    }
    let changed = loaded.session.was_migrated();
    if !args.write.dry_run {
        let bytes = loaded.bytes.as_deref().unwrap_or_default();
        match (target.dest(), changed) {
            (Dest::Stdout, true) => {
                let mut out = crate::output::stdout();
                write_session_to(&mut out, &loaded.session)?;
                out.flush().map_err(Failure::failed)?;
            }
            (Dest::Stdout, false) => {
                let mut out = crate::output::stdout();
                out.write_all(bytes)
                    .and_then(|()| out.flush())
                    .map_err(Failure::failed)?;
            }
            (Dest::File(out), true) => {
                write_session_file(
                    out,
                    &loaded.session,
                    None,
                    replace_out(out, args.write.force)?,
                )?;
            }
            (Dest::File(out), false) => {
                write_file(out, None, replace_out(out, args.write.force)?, |w| {
                    w.write_all(bytes)
                })?;
            }
            (Dest::InPlace, _) => {
                return Err(Failure::bad_input(anyhow::anyhow!(
                    "standard input cannot be migrated in place; give -o OUT"
                )));
            }
        }
    }
    report(
        &Outcome {
            file: "<stdin>".into(),
            session: &loaded.session,
            output: Some(out.display().to_string()),
            changed,
            dry_run: args.write.dry_run,
            forced: args.write.force,
            warnings: Vec::new(),
        },
        &target,
        ctx,
    )
}

/// Problems that stop a migrated copy: a torn last line, or a v1
/// compaction index migration would drop (unless `force`, which drops it
/// as pi does).
fn refuse_unwritable(session: &Session, name: &str, force: bool) -> Result<(), Failure> {
    let blocks = |kind: &ProblemKind| {
        kind.blocks_rewrite() && !(force && matches!(kind, ProblemKind::FirstKeptIndex { .. }))
    };
    match session.problems().iter().find(|p| blocks(&p.kind)) {
        Some(p) if matches!(p.kind, ProblemKind::TornLine { .. }) => {
            Err(Failure::from(SessionError::TornTail {
                path: name.into(),
                line: p.line,
            }))
        }
        Some(p) => Err(Failure::from(SessionError::Blocked {
            path: name.into(),
            line: p.line,
            problem: p.kind.to_string(),
        })),
        None => Ok(()),
    }
}

fn report(o: &Outcome<'_>, target: &Target, ctx: &Ctx) -> CmdResult {
    let s = o.session;
    let from = s.original_version();
    let ids_assigned = if from < 2 { s.len() } else { 0 };
    // A dropped index was named when the file was opened.
    let said = |p: &&musepi_session_model::Problem| {
        o.forced && matches!(p.kind, ProblemKind::FirstKeptIndex { .. })
    };
    for p in s.problems().iter().filter(|p| !said(p)) {
        note(
            ctx.quiet() || ctx.json(),
            &format!(
                "warning: {}:{}: {} (kept as it was)",
                o.file, p.line, p.kind
            ),
        );
    }
    if ctx.json() {
        print_json(&MigrateDoc {
            file: o.file.clone(),
            from_version: from,
            to_version: CURRENT_VERSION,
            changed: o.changed,
            dry_run: o.dry_run,
            output: o.output.clone(),
            entry_count: s.len(),
            ids_assigned,
            problems: s.problems().iter().map(problem_doc).collect(),
            warnings: o.warnings.clone(),
        })
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    let text = if o.changed {
        let what = format!(
            "v{from} to v{CURRENT_VERSION}: {} entries{}",
            s.len(),
            if ids_assigned > 0 {
                format!(", {ids_assigned} ids assigned")
            } else {
                String::new()
            }
        );
        match (&o.output, o.dry_run) {
            (_, true) => format!("{}: would migrate {what}; nothing written\n", o.file),
            (Some(out), false) if *out == o.file => {
                format!("{}: migrated {what}, rewritten in place\n", o.file)
            }
            (Some(out), false) => format!("{}: migrated {what}, written to {out}\n", o.file),
            (None, false) => format!("{}: migrated {what}\n", o.file),
        }
    } else {
        match &o.output {
            Some(out) if !o.dry_run => {
                format!("{}: already v{from}; copied unchanged to {out}\n", o.file)
            }
            _ => format!("{}: already v{from}; nothing to do\n", o.file),
        }
    };
    target.report(&text, ctx)?;
    Ok(Exit::Ok)
}
