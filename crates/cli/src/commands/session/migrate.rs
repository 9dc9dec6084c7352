//! `musepi session migrate FILE [-o OUT | --in-place] [--dry-run]`.

use std::io::Write as _;
use std::path::Path;

use musepi_session_model::{
    CURRENT_VERSION, Journal, ProblemKind, Session, SessionError, write_session,
};
use serde_json::json;

use super::problem_json;
use crate::cli::MigrateArgs;
use crate::commands::files::{Input, load_or_fail, same_file, write_atomically};
use crate::commands::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{note, print_json, print_text};

/// What migrate did.
struct Outcome<'a> {
    file: String,
    session: &'a Session,
    output: Option<String>,
    changed: bool,
    dry_run: bool,
}

/// Migrates a v1 or v2 file to v3: in place (atomically) by default, or to
/// `-o OUT`. A v3 file is left alone. A file that does not read as a
/// session, or whose last line is torn, is refused and never written.
pub(super) fn run(args: &MigrateArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file);
    match &input {
        Input::Stdin => from_stdin(args, ctx),
        Input::File(path) => from_file(path, args, ctx),
    }
}

fn refuse_torn(session: &Session, name: &str) -> Result<(), Failure> {
    if let Some(p) = session
        .problems()
        .iter()
        .find(|p| matches!(p.kind, ProblemKind::TornLine { .. }))
    {
        return Err(Failure::bad_input(SessionError::TornTail {
            path: name.into(),
            line: p.line,
        }));
    }
    Ok(())
}

fn from_file(path: &Path, args: &MigrateArgs, ctx: &Ctx) -> CmdResult {
    let name = path.display().to_string();
    let mut ids = crate::ids::for_migration(ctx.deterministic_ids());
    let mut journal = Journal::open(path, ids.as_mut()).or_bad_input()?;
    refuse_torn(journal.session(), &name)?;
    let pending = journal.migration_pending();
    let out = args.out.as_deref().filter(|o| !same_file(path, o));
    let mut output = None;
    if args.dry_run {
        output = out.map(|o| o.display().to_string());
    } else {
        match out {
            Some(out) => {
                if pending {
                    journal.write_copy(out).map_err(write_failure)?;
                } else {
                    // Already v3: the copy is the file, byte for byte.
                    copy_bytes(path, out)?;
                }
                output = Some(out.display().to_string());
            }
            None if pending => {
                journal.persist_migration().map_err(write_failure)?;
                output = Some(name.clone());
            }
            None => {}
        }
    }
    report(
        &Outcome {
            file: name,
            session: journal.session(),
            output,
            changed: pending,
            dry_run: args.dry_run,
        },
        ctx,
    )
}

fn from_stdin(args: &MigrateArgs, ctx: &Ctx) -> CmdResult {
    let Some(out) = args.out.as_deref().filter(|o| o.as_os_str() != "-") else {
        return Err(Failure::usage(anyhow::anyhow!(
            "reading standard input needs -o OUT (a file) for the migrated session"
        )));
    };
    if args.in_place {
        return Err(Failure::usage(anyhow::anyhow!(
            "--in-place needs a file, not standard input"
        )));
    }
    let loaded = load_or_fail(&Input::Stdin, ctx)?;
    refuse_torn(&loaded.session, "<stdin>")?;
    let changed = loaded.session.was_migrated();
    if !args.dry_run {
        if changed {
            write_session(out, &loaded.session).map_err(write_failure)?;
        } else {
            let bytes = loaded.bytes.as_deref().unwrap_or_default();
            write_atomically(out, |w| w.write_all(bytes)).map_err(|e| {
                Failure::failed(anyhow::Error::new(e).context(out.display().to_string()))
            })?;
        }
    }
    report(
        &Outcome {
            file: "<stdin>".into(),
            session: &loaded.session,
            output: Some(out.display().to_string()),
            changed,
            dry_run: args.dry_run,
        },
        ctx,
    )
}

fn copy_bytes(from: &Path, to: &Path) -> Result<(), Failure> {
    let mut src = std::fs::File::open(from).map_err(|e| {
        Failure::bad_input(anyhow::Error::new(e).context(from.display().to_string()))
    })?;
    write_atomically(to, |w| std::io::copy(&mut src, w).map(|_| ()))
        .map_err(|e| Failure::failed(anyhow::Error::new(e).context(to.display().to_string())))
}

/// A failed write; the file, when it was there, is intact.
fn write_failure(e: SessionError) -> Failure {
    Failure::failed(
        anyhow::Error::new(e).context("nothing was changed; the original file is intact"),
    )
}

fn report(o: &Outcome<'_>, ctx: &Ctx) -> CmdResult {
    let s = o.session;
    let from = s.original_version();
    let ids_assigned = if from < 2 { s.len() } else { 0 };
    for p in s.problems() {
        note(
            ctx.quiet() || ctx.json(),
            &format!(
                "warning: {}:{}: {} (kept as it was)",
                o.file, p.line, p.kind
            ),
        );
    }
    if ctx.json() {
        print_json(&json!({
            "file": o.file,
            "fromVersion": from,
            "toVersion": CURRENT_VERSION,
            "changed": o.changed,
            "dryRun": o.dry_run,
            "output": o.output,
            "entryCount": s.len(),
            "idsAssigned": ids_assigned,
            "problems": s.problems().iter().map(problem_json).collect::<Vec<_>>(),
        }))
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
    print_text(&text).or_failed()?;
    Ok(Exit::Ok)
}
