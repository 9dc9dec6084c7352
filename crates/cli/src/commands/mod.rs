//! Command dispatch, the shared command context, and exit codes.
//!
//! Each command is one module with a `run(args, ctx) -> CmdResult`
//! function; [`run`] parses the line, builds the [`Ctx`] and maps every
//! outcome to an exit code (CLI.md): 0 success, 1 the operation failed,
//! 2 bad usage or bad input. Errors are printed on stderr with their source
//! chain.

pub mod branch;
pub mod compact;
pub mod context;
pub mod files;
pub mod handoff;
pub mod hooks_cmd;
pub mod plan;
pub mod prune;
pub mod runtime;
pub mod serve;
pub mod session;
pub mod settings_glue;
pub mod snapcompact;
pub mod view;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser as _;
use musepi_session_model::time::{EpochMillis, parse_iso};

use crate::cli::{Cli, Command, Globals};
use crate::output::{Style, print_error};

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok = 0,
    /// 1: the operation failed (a write failed, nothing to do with `--strict`, …).
    Failed = 1,
    /// 2: bad usage or bad input (unreadable file, invalid session, problems found).
    BadInput = 2,
}

impl From<Exit> for ExitCode {
    fn from(e: Exit) -> Self {
        ExitCode::from(e as u8)
    }
}

/// A command that could not finish: the error to print and the exit code.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// What went wrong, with its sources.
    pub error: anyhow::Error,
}

impl Failure {
    /// Bad usage or bad input (exit 2).
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::BadInput,
            error: error.into(),
        }
    }

    /// The operation failed (exit 1).
    pub fn failed(error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit: Exit::Failed,
            error: error.into(),
        }
    }
}

/// What a command returns.
pub type CmdResult = Result<Exit, Failure>;

/// Turning errors into [`Failure`]s.
pub trait OrExit<T> {
    /// Fails with exit 2.
    fn or_bad_input(self) -> Result<T, Failure>;
    /// Fails with exit 1.
    fn or_failed(self) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> OrExit<T> for Result<T, E> {
    fn or_bad_input(self) -> Result<T, Failure> {
        self.map_err(Failure::bad_input)
    }

    fn or_failed(self) -> Result<T, Failure> {
        self.map_err(Failure::failed)
    }
}

/// What every command gets: the global flags, read and checked.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The flags as given.
    pub globals: Globals,
    /// `--now`, in epoch milliseconds.
    pub now: Option<EpochMillis>,
    /// How to colour standard output.
    pub style: Style,
}

impl Ctx {
    /// Checks the global flags.
    pub fn new(globals: Globals) -> Result<Self, Failure> {
        let now = match &globals.now {
            Some(text) => Some(parse_iso(text).ok_or_else(|| {
                Failure::bad_input(anyhow::anyhow!(
                    "--now {text}: not an ISO-8601 date-time (e.g. 2025-05-01T10:00:00.000Z)"
                ))
            })?),
            None => None,
        };
        Ok(Self {
            globals,
            now,
            style: Style::stdout(),
        })
    }

    /// `--json`.
    pub fn json(&self) -> bool {
        self.globals.json
    }

    /// `-q`.
    pub fn quiet(&self) -> bool {
        self.globals.quiet
    }

    /// `-v` count.
    pub fn verbose(&self) -> u8 {
        self.globals.verbose
    }

    /// `--deterministic-ids`.
    pub fn deterministic_ids(&self) -> bool {
        self.globals.deterministic_ids
    }

    /// "Now": `--now`, or the system clock.
    pub fn now_ms(&self) -> EpochMillis {
        self.now.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        })
    }
}

/// The binary's entry point: the process arguments in, an exit code out.
pub fn main() -> ExitCode {
    run(std::env::args_os())
}

/// Parses `args` (the program name first) and runs the command.
pub fn run<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout with 0; usage errors to stderr with 2.
            let _ = e.print();
            return if e.use_stderr() {
                Exit::BadInput.into()
            } else {
                Exit::Ok.into()
            };
        }
    };
    let result = Ctx::new(cli.globals).and_then(|ctx| dispatch(cli.command, &ctx));
    match result {
        Ok(exit) => exit.into(),
        Err(failure) => {
            print_error(&failure.error);
            failure.exit.into()
        }
    }
}

fn dispatch(command: Command, ctx: &Ctx) -> CmdResult {
    match command {
        Command::Session(cmd) => session::run(cmd, ctx),
        Command::Context(args) => context::run(&args, ctx),
        Command::Plan(args) => plan::run(&args, ctx),
        Command::Prune(args) => prune::run(&args, ctx),
        Command::Compact(args) => compact::run(&args, ctx),
        Command::Branch(args) => branch::run(&args, ctx),
        Command::Handoff(args) => handoff::run(&args, ctx),
        Command::Snapcompact(cmd) => snapcompact::run(&cmd, ctx),
        Command::Serve(args) => serve::run(&args, ctx),
        Command::Hooks(cmd) => hooks_cmd::run(&cmd, ctx),
        Command::View(args) => view::run(&args, ctx),
    }
}
