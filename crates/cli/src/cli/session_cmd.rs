//! `musepi session …`: the commands that read one session file and
//! report on it (stats, tree, check and repair) or migrate it.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{SessionArg, WriteArgs};

/// `musepi session …`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Version, entry counts by type and role, leaf, path length, labels, name, problems.
    Stats(StatsArgs),
    /// The tree, indented, with ids, types or roles, previews and labels; the leaf marked.
    Tree(TreeArgs),
    /// Every problem of the file, one per line; exit 2 if there is any (with --repair, any left in the repaired copy).
    Check(CheckArgs),
    /// Rewrite a v1 or v2 file as v3, as the reference does; a v3 file is left alone.
    Migrate(MigrateArgs),
}

/// `musepi session stats FILE`.
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
}

/// `musepi session tree FILE`.
#[derive(Debug, Args)]
pub struct TreeArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Show every entry: do not collapse long linear runs.
    // `--full`, its name before, is a hidden alias: elsewhere `--full`
    // means whole messages.
    #[arg(long, alias = "full")]
    pub all: bool,
}

/// `musepi session check FILE [--repair -o OUT]`.
#[derive(Debug, Args)]
#[command(after_help = "\
Exit status: 0 when the file has no problem, 2 when it has any.
With --repair, the repaired copy decides: 0 when it has no problem left, 2 otherwise; but a torn
last line in a session that looks live (locked, or written in the last 5 s) is most likely an append
in progress, so nothing is written and the exit status is 3 (retry later) unless --force.
The input file is never changed.")]
pub struct CheckArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Write a repaired copy to OUT: blank, malformed and torn lines and
    /// lines before the header are dropped; a v1 compaction's firstKeptEntryIndex that names no
    /// earlier entry is dropped as pi's migration drops it; every other line is copied byte for
    /// byte. Never in place.
    #[arg(long, requires = "out")]
    pub repair: bool,
    /// Where the repaired copy goes (it must not exist unless --force).
    #[arg(short = 'o', long = "out", value_name = "OUT", requires = "repair")]
    pub out: Option<PathBuf>,
    /// Replace OUT when it exists; repair a torn last line even when the session looks live
    /// (locked, or written in the last 5 s), when it is most likely an append in progress.
    #[arg(long, requires = "repair")]
    pub force: bool,
}

/// `musepi session migrate FILE [-o OUT | --in-place]`.
#[derive(Debug, Args)]
#[command(
    mut_arg("out", |a| a.help(
        "Write the migrated session to OUT (`-` for standard output) instead of in place"
    )),
    mut_arg("dry_run", |a| a.help("Say what would change and write nothing"))
)]
pub struct MigrateArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Where the result goes.
    #[command(flatten)]
    pub write: WriteArgs,
    /// Rewrite FILE itself, atomically (the default when -o is not given).
    #[arg(long, conflicts_with = "out")]
    pub in_place: bool,
}
