//! Where a command that changes a session writes it, for `prune`,
//! `compact`, `branch` and `session migrate`: in place, to `-o OUT` or to
//! standard output, or nowhere with `--dry-run`. Each command may word
//! `--out` and `--dry-run` for what it writes.

use std::path::PathBuf;

use clap::Args;

/// `-o OUT`, `--dry-run` and `--force`.
#[derive(Debug, Clone, Default, Args)]
pub struct WriteArgs {
    /// Write the result to OUT (`-`: standard output), not FILE; OUT must not exist unless --force.
    #[arg(short = 'o', long = "out", value_name = "OUT")]
    pub out: Option<PathBuf>,
    /// Show what would change and write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Write even when the session looks live (locked, or written in the last 5 s); replace OUT;
    /// drop, as pi does, a v1 compaction's firstKeptEntryIndex that names no earlier entry.
    #[arg(long)]
    pub force: bool,
}
