//! `musepi completions SHELL` and `musepi man`: the shell completion
//! scripts and the manual pages, generated from the clap definitions, so
//! they list exactly the commands and flags the binary takes.

use std::path::Path;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::ctx::{CmdResult, Ctx, Exit, Failure};
use crate::output::{note, print_text};

/// Prints the completion script of `args.shell` on stdout.
pub fn completions(args: &CompletionsArgs, _ctx: &Ctx) -> CmdResult {
    let mut cmd = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "musepi", &mut script);
    print_text(&String::from_utf8_lossy(&script)).map_err(Failure::failed)?;
    Ok(Exit::Ok)
}

/// The command the pages are made from: the package version alone (not
/// the commit), so the pages docs/man holds change only with the
/// interface.
/// `help` is left out, as [`clap_mangen::generate_to`] leaves it out.
fn man_command() -> clap::Command {
    Cli::command()
        .version(env!("CARGO_PKG_VERSION"))
        .disable_help_subcommand(true)
}

/// The `musepi(1)` page, as roff.
pub fn man_page() -> Vec<u8> {
    let mut page = Vec::new();
    // Writing to memory cannot fail.
    let _ = clap_mangen::Man::new(man_command()).render(&mut page);
    page
}

/// Writes `musepi.1` and a page per command (`musepi-compact.1`,
/// `musepi-session-tree.1`, …) into `dir`, which must exist.
pub fn write_pages(dir: &Path) -> std::io::Result<()> {
    clap_mangen::generate_to(man_command(), dir)
}

/// Prints `musepi.1` on stdout, or with `--out DIR` writes every page
/// into DIR (created when missing) and names the folder on stderr.
pub fn man(args: &ManArgs, ctx: &Ctx) -> CmdResult {
    let Some(dir) = &args.out else {
        print_text(&String::from_utf8_lossy(&man_page())).map_err(Failure::failed)?;
        return Ok(Exit::Ok);
    };
    if dir.exists() && !dir.is_dir() {
        return Err(Failure::usage(anyhow::anyhow!(
            "--out {}: not a folder",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir)
        .and_then(|()| write_pages(dir))
        .with_context(|| format!("{}: could not write the manual pages", dir.display()))
        .map_err(Failure::failed)?;
    note(
        ctx.quiet(),
        &format!("wrote the manual pages into {}", dir.display()),
    );
    Ok(Exit::Ok)
}
