//! `musepi session …`: stats, tree, check (with repair) and migrate.

mod check;
mod migrate;
mod repair;
mod stats;
mod tree;

use std::fmt::Write as _;

use musepi_protocol::session::ProblemDoc;
use musepi_session_model::Problem;

use crate::cli::SessionCommand;
use crate::ctx::{CmdResult, Ctx};
use crate::output::escape_controls;

/// Runs one `session` subcommand.
pub fn run(cmd: SessionCommand, ctx: &Ctx) -> CmdResult {
    match cmd {
        SessionCommand::Stats(args) => stats::run(&args, ctx),
        SessionCommand::Tree(args) => tree::run(&args, ctx),
        SessionCommand::Check(args) => check::run(&args, ctx),
        SessionCommand::Migrate(args) => migrate::run(&args, ctx),
    }
}

/// A problem as its document: `{line, kind, message, entryId?}`.
pub(crate) fn problem_doc(p: &Problem) -> ProblemDoc {
    ProblemDoc {
        line: p.line,
        kind: p.kind.name(),
        message: p.kind.to_string(),
        entry_id: p.entry_id.as_ref().map(ToString::to_string),
    }
}

/// `FILE:LINE: [entry ID: ]message`, for people: what it quotes from the
/// file (an id, a role, a type) is printed through [`escape_controls`].
pub(crate) fn problem_line(file: &str, p: &Problem) -> String {
    let mut s = format!("{file}:{}: ", p.line);
    if let Some(id) = &p.entry_id {
        let _ = write!(s, "entry {id}: ");
    }
    s.push_str(&p.kind.to_string());
    escape_controls(&s).into_owned()
}
