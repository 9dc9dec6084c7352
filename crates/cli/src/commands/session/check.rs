//! `musepi session check FILE [--repair -o OUT]`.

use musepi_protocol::session::{CheckDoc, LineNoteDoc, ProblemDoc, RepairDoc};
use musepi_session_model::{Problem, SessionError};
use std::fmt::Write as _;

use super::repair::{self, Repair};
use super::{problem_doc, problem_line};
use crate::cli::CheckArgs;
use crate::commands::files::{Input, Loaded, load};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{Color, counted, escape_controls, note, print_json, print_text};

/// Checks the file; with `--repair`, writes a repaired copy to `-o OUT`.
/// The input is never written.
pub(super) fn run(args: &CheckArgs, ctx: &Ctx) -> CmdResult {
    let input = Input::from_arg(&args.file.path()?);
    let name = input.name();
    let loaded = match load(&input, ctx) {
        Ok(l) => l,
        Err(e @ (SessionError::Io { .. } | SessionError::NotRegular { .. })) => {
            return Err(e.into());
        }
        Err(e) if args.repair => {
            return Err(Failure::bad_input(anyhow::Error::new(e).context(format!(
                "{name}: no session header, so there is nothing to repair; nothing was written"
            ))));
        }
        Err(e) => return unusable(&name, &e, ctx),
    };
    let problems = loaded.session.problems();
    let repaired = match (&args.repair, &args.out) {
        (true, Some(out)) => Some(repair::run(&loaded, out, args.force).inspect_err(|f| {
            // The problems are still worth seeing when the copy fails, but
            // not when the session is live: its torn line is then an
            // append in progress.
            if !ctx.json() && f.exit != Exit::Busy {
                let _ = print_text(&render_problems(&name, problems, &loaded, ctx));
            }
        })?),
        _ => None,
    };
    if ctx.json() {
        let doc = CheckDoc {
            file: name.clone(),
            entry_count: loaded.session.len(),
            problems: problems.iter().map(problem_doc).collect(),
            repair: repaired.as_ref().map(repair_doc),
            // The copy is a new file: nothing another process does to the
            // input reaches it, so a repair has nothing to warn of.
            warnings: repaired.as_ref().map(|_| Vec::new()),
        };
        print_json(&doc).or_failed()?;
    } else {
        let mut text = render_problems(&name, problems, &loaded, ctx);
        if let Some(r) = &repaired {
            text.push_str(&render_repair(r, ctx));
        }
        print_text(&text).or_failed()?;
    }
    let clean = match &repaired {
        Some(r) => r.remaining.is_empty(),
        None => problems.is_empty(),
    };
    Ok(if clean { Exit::Ok } else { Exit::BadInput })
}

/// A file the model cannot read as a session at all: one file-level problem.
fn unusable(name: &str, e: &SessionError, ctx: &Ctx) -> CmdResult {
    let (line, kind) = (e.line().unwrap_or(0), e.code());
    if ctx.json() {
        print_json(&CheckDoc {
            file: name.to_owned(),
            entry_count: 0,
            problems: vec![ProblemDoc {
                line,
                kind,
                message: e.to_string(),
                entry_id: None,
            }],
            repair: None,
            warnings: None,
        })
        .or_failed()?;
    } else {
        print_text(&format!("{}\n", escape_controls(&e.to_string()))).or_failed()?;
    }
    Ok(Exit::BadInput)
}

fn render_problems(name: &str, problems: &[Problem], loaded: &Loaded, ctx: &Ctx) -> String {
    let st = ctx.style;
    let mut out = String::new();
    for p in problems {
        out.push_str(&problem_line(name, p));
        out.push_str(&st.paint(Color::Dim, &format!(" [{}]", p.kind.name())));
        out.push('\n');
    }
    let entries = counted(loaded.session.len(), "entry", "entries");
    let name = escape_controls(name);
    if problems.is_empty() {
        let _ = writeln!(
            out,
            "{name}: {} ({entries})",
            st.paint(Color::Green, "ok, no problems")
        );
    } else {
        let _ = writeln!(
            out,
            "{name}: {} ({entries})",
            st.paint(
                Color::Yellow,
                &counted(problems.len(), "problem", "problems")
            )
        );
    }
    out
}

fn repair_doc(r: &Repair) -> RepairDoc {
    let notes = |list: &[super::repair::LineNote]| -> Vec<LineNoteDoc> {
        list.iter()
            .map(|d| LineNoteDoc {
                line: d.line,
                reason: d.reason.clone(),
            })
            .collect()
    };
    RepairDoc {
        output: r.out.display().to_string(),
        kept_lines: r.kept,
        dropped: notes(&r.dropped),
        changed: notes(&r.changed),
        remaining: r.remaining.iter().map(problem_doc).collect(),
    }
}

/// The repair's report, for people: the names and the reasons, which may
/// quote the file, are printed through [`escape_controls`].
fn render_repair(r: &Repair, ctx: &Ctx) -> String {
    let out_name = escape_controls(&r.out.display().to_string()).into_owned();
    let mut text = String::new();
    for (what, lines) in [("dropped", &r.dropped), ("changed", &r.changed)] {
        for d in lines {
            let _ = writeln!(
                text,
                "{what} line {}: {}",
                d.line,
                escape_controls(&d.reason)
            );
        }
    }
    let rewritten = if r.rewritten > 0 {
        format!(", {} rewritten", r.rewritten)
    } else {
        String::new()
    };
    let _ = writeln!(
        text,
        "wrote {out_name}: {} kept byte for byte{rewritten}, {} dropped",
        counted(r.kept - r.rewritten, "line", "lines"),
        r.dropped.len()
    );
    if r.remaining.is_empty() {
        let _ = writeln!(
            text,
            "{out_name}: {}",
            ctx.style.paint(Color::Green, "ok, no problems")
        );
    } else {
        for p in &r.remaining {
            text.push_str(&problem_line(&out_name, p));
            text.push('\n');
        }
        note(
            ctx.quiet(),
            &format!(
                "{out_name}: {} that repair does not change (they lose no data)",
                if r.remaining.len() == 1 {
                    "1 problem remains".to_owned()
                } else {
                    format!("{} problems remain", r.remaining.len())
                }
            ),
        );
    }
    text
}
