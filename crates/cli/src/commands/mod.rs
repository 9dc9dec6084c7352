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
pub mod decisions;
pub mod files;
pub mod handoff;
pub mod hooks_cmd;
pub mod ls;
pub mod manual;
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

use std::io::Write as _;

use crate::cli::{Cli, Command, VERSION};
use crate::ctx::{CmdResult, Ctx, Exit, Failure};
use crate::output::{ColorWhen, Style, print_error, print_json, print_text, set_color_when};

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
    // `--color` decides the colour of clap's own messages too, so it is
    // read before clap reads the line (an invalid value is clap's error).
    set_color_when(color_on_line(&args));
    let cli = match parse(&args) {
        Ok(cli) => cli,
        Err(exit) => return exit.into(),
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

/// The line read by clap, or what clap had to say about it printed (help
/// and the version on stdout, exit 0; an error on stderr as
/// `musepi: error: …` and, with `--json`, as a JSON document; exit 2).
fn parse(args: &[OsString]) -> Result<Cli, Exit> {
    use clap::error::ErrorKind;
    use clap::{CommandFactory as _, FromArgMatches as _};
    let choice = if Style::stderr().colors() {
        clap::ColorChoice::Always
    } else {
        clap::ColorChoice::Never
    };
    let mut cmd = Cli::command().color(choice);
    let e = match cmd
        .try_get_matches_from_mut(args)
        .and_then(|m| Cli::from_arg_matches(&m))
    {
        Ok(cli) => return Ok(cli),
        Err(e) => e,
    };
    match e.kind() {
        // `musepi ls --version` is the same line as `musepi --version`,
        // not clap's `musepi-ls 0.1.0`.
        ErrorKind::DisplayVersion => {
            let _ = print_text(&format!("musepi {VERSION}\n"));
            Err(Exit::Ok)
        }
        // Help asked for goes to stdout with 0; help shown for a missing
        // command (`musepi`, `musepi session`) to stderr with 2, as clap
        // does: it is not an error message, so it has no prefix.
        _ if !e.use_stderr() => {
            let _ = e.print();
            Err(Exit::Ok)
        }
        ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            Err(Exit::BadInput)
        }
        _ => {
            let text = if choice == clap::ColorChoice::Always {
                e.render().ansi().to_string()
            } else {
                e.render().to_string()
            };
            // Every error starts `musepi: error: …`; clap's usage lines
            // and its pointer to `--help` follow as clap prints them.
            let _ = std::io::stderr().write_all(format!("musepi: {text}").as_bytes());
            if wants_json(args) {
                let failure = Failure::usage(anyhow::anyhow!("{}", clap_message(&e.to_string())));
                let _ = print_json(&failure.to_json());
            }
            Err(Exit::BadInput)
        }
    }
}

/// The `--color` on a line, read before clap reads it (the last one wins,
/// as clap takes it; an invalid value is `auto` here and clap's error
/// later).
fn color_on_line(args: &[OsString]) -> ColorWhen {
    use clap::ValueEnum as _;
    let mut when = ColorWhen::Auto;
    let mut args = args.iter().skip(1).take_while(|a| *a != "--");
    while let Some(arg) = args.next() {
        let value = match arg.to_str() {
            Some("--color") => args.next().and_then(|v| v.to_str()),
            Some(a) => a.strip_prefix("--color="),
            None => None,
        };
        if let Some(w) = value.and_then(|v| ColorWhen::from_str(v, false).ok()) {
            when = w;
        }
    }
    when
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
        Command::Completions(args) => manual::completions(&args, ctx),
        Command::Man(args) => manual::man(&args, ctx),
    }
}
