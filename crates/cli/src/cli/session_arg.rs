//! The flags that name a session for every command that takes FILE
//! (`FILE` or `--latest`), and `musepi ls`, which lists the sessions
//! `--latest` chooses from.

use std::path::PathBuf;

use clap::{ArgGroup, Args};

/// The session a command works on: FILE, or the newest pi session of the
/// working directory (resolved in `commands::pi_dir`).
/// One of FILE and `--latest` is required: a group, so that the error
/// without either names both.
#[derive(Debug, Clone, Default, Args)]
#[command(group(ArgGroup::new("session").args(["file", "latest"]).required(true)))]
pub struct SessionArg {
    /// The session file; `-` reads standard input, except for the commands that need the file itself (prune, compact, branch, handoff, view).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Instead of FILE, the session pi wrote last for the working directory.
    #[arg(
        long,
        conflicts_with = "file",
        help = "Instead of FILE, the session of the working directory that pi wrote last, from \
                pi's session folder (~/.pi/agent/sessions/--<cwd>--/; see --session-dir)"
    )]
    pub latest: bool,
    /// The folder `--latest` looks in.
    #[arg(
        long,
        value_name = "DIR",
        requires = "latest",
        help = "The folder --latest looks in (default: $MUSEPI_SESSION_DIR, pi's \
                $PI_CODING_AGENT_SESSION_DIR or sessionDir setting, else pi's folder for the \
                working directory)"
    )]
    pub session_dir: Option<PathBuf>,
}

/// `musepi ls`.
#[derive(Debug, Args)]
#[command(after_help = "\
The folder is the one pi keeps this directory's sessions in: --session-dir DIR, else
$MUSEPI_SESSION_DIR, else pi's $PI_CODING_AGENT_SESSION_DIR, else sessionDir in pi's settings
(.pi/settings.json, then ~/.pi/agent/settings.json), else
~/.pi/agent/sessions/--<working directory with / turned into ->--/ ($PI_CODING_AGENT_DIR replaces
~/.pi/agent). `--latest` on any command that takes FILE picks the first session listed.")]
pub struct LsArgs {
    /// The folder to list (default: pi's folder for the working directory).
    #[arg(long, value_name = "DIR")]
    pub session_dir: Option<PathBuf>,
}
