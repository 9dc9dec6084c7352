//! Command dispatch and the shared command context.
//!
//! Each command is one module with a `run(args, ctx) -> CmdResult`
//! function; [`run`] parses the line, builds the [`Ctx`] and maps every
//! outcome to an exit code ([`crate::ctx`], docs/cli.md): 0 success, 1 the
//! operation failed, 2 bad usage or bad input, 3 the session is busy.
//! Errors are printed on stderr with their source chain and, with `--json`,
//! as one JSON document on stdout.

pub mod branch;
pub mod chart;
pub mod compact;
pub mod context;
pub mod files;
pub mod handoff;
pub mod hooks_cmd;
pub mod ls;
pub mod pi_dir;
pub mod pi_extension;
pub mod plan;
pub mod prune;
pub mod recall;
pub mod requests;
pub mod runtime;
pub mod serve;
pub mod session;
pub mod snapcompact;
pub mod strategy;
pub mod trust;
pub mod unprune;
pub mod view;
pub mod writer;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::Parser as _;

use crate::cli::{Cli, Command};
use crate::ctx::{CmdResult, Ctx, Exit, Failure};
use crate::output::{print_error, print_json};

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
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            // Help and version go to stdout with 0.
            let _ = e.print();
            return Exit::Ok.into();
        }
        Err(e) => {
            let _ = e.print();
            if wants_json(&args) {
                let failure = Failure::usage(anyhow::anyhow!("{}", clap_message(&e.to_string())));
                let _ = print_json(&failure.to_json());
            }
            return Exit::BadInput.into();
        }
    };
    let json = cli.globals.json;
    let result = Ctx::new(cli.globals)
        .and_then(Ctx::load_settings)
        .and_then(|ctx| dispatch(cli.command, &ctx));
    match result {
        Ok(exit) => exit.into(),
        Err(failure) => {
            print_error(&failure.error);
            if json {
                let _ = print_json(&failure.to_json());
            }
            failure.exit.into()
        }
    }
}

/// Whether `--json` is on a line clap could not parse (before any `--`).
fn wants_json(args: &[OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| *a != "--")
        .any(|a| a == "--json")
}

/// A clap error's message on one line, without its `error: ` prefix and
/// what follows it for a terminal (the usage lines, the pointer to
/// `--help`), but with the valid values and the tip clap gives.
fn clap_message(text: &str) -> String {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .filter(|l| !l.is_empty())
        .collect();
    // A line ending in a colon introduces the next ("not provided:" and
    // the missing argument): they read as one clause.
    let mut message = String::new();
    for (i, line) in lines.iter().enumerate() {
        if i > 0 {
            message.push_str(if lines[i - 1].ends_with(':') {
                " "
            } else {
                "; "
            });
        }
        message.push_str(line);
    }
    message
        .strip_prefix("error: ")
        .map_or_else(|| message.clone(), str::to_owned)
}

fn dispatch(command: Command, ctx: &Ctx) -> CmdResult {
    match command {
        Command::Ls(args) => ls::run(&args, ctx),
        Command::Session(cmd) => session::run(cmd, ctx),
        Command::Context(args) => context::run(&args, ctx),
        Command::Plan(args) => plan::run(&args, ctx),
        Command::Prune(args) => prune::run(&args, ctx),
        Command::Unprune(args) => unprune::run(&args, ctx),
        Command::Recall(args) => recall::run(&args, ctx),
        Command::Compact(args) => compact::run(&args, ctx),
        Command::Branch(args) => branch::run(&args, ctx),
        Command::Handoff(args) => handoff::run(&args, ctx),
        Command::Snapcompact(cmd) => snapcompact::run(&cmd, ctx),
        Command::Serve(args) => serve::run(&args, ctx),
        Command::Hooks(cmd) => hooks_cmd::run(&cmd, ctx),
        Command::Trust(args) => trust::run(&args, ctx),
        Command::View(args) => view::run(&args, ctx),
        Command::Pi(cmd) => pi_extension::run(&cmd, ctx),
    }
}
