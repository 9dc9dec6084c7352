//! The command line as clap definitions: global flags and one subcommand
//! enum per command group.
//!
//! Adding a command is one variant here and one module under
//! `commands/`; the flags every command shares live in [`Globals`].

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};
use musepi_runtime::MaintenanceStrategy;
use musepi_runtime::branch::BranchStrategy;

pub use crate::output::ColorWhen;

mod provider_args;
mod session_arg;
mod session_cmd;
mod strategy_args;
mod tool_args;
mod write_args;

pub use provider_args::ProviderArgs;
pub use session_arg::{LsArgs, SessionArg};
pub use session_cmd::{CheckArgs, MigrateArgs, SessionCommand, StatsArgs, TreeArgs};
pub use strategy_args::{BudgetArgs, StrategyArgs};
use strategy_args::{compaction_strategy, summary_strategy};
pub use tool_args::{
    CompletionsArgs, HooksCommand, HooksTestArgs, ManArgs, PiCommand, PiExtensionArgs, RenderArgs,
    ServeArgs, SnapcompactCommand, TrustArgs,
};
pub use write_args::WriteArgs;

/// `musepi`: inspect, compact, prune and navigate pi agent sessions.
#[derive(Debug, Parser)]
#[command(name = "musepi", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// Flags every command accepts, anywhere on the line.
    #[command(flatten)]
    pub globals: Globals,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

/// The version line `--version` prints after `musepi `: the package
/// version, and the commit it was built from when it was built from a git
/// checkout (`0.1.0 (abc1234 2026-12-05)`; see build.rs).
pub const VERSION: &str = env!("MUSEPI_VERSION_LINE");

/// The `--help` section of the flags every command accepts.
pub const GLOBAL: &str = "Global options";

/// Flags accepted anywhere on the line.
#[derive(Debug, Clone, Default, Args)]
pub struct Globals {
    /// Print one JSON document on stdout instead of text for people.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub json: bool,
    /// Fix the clock for new entries (ISO-8601, e.g. 2025-05-01T10:00:00.000Z).
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "ISO-8601")]
    pub now: Option<String>,
    /// New entry ids `00000001`, `00000002`, … after the highest such id in
    /// the file, and a new session's id from the clock alone (v1 entries,
    /// which have no ids, are numbered that way with or without it).
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub deterministic_ids: bool,
    /// A settings file read after ~/.musepi/settings.json and .musepi/settings.json (every command refuses one it cannot read or parse).
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "FILE")]
    pub settings: Option<PathBuf>,
    /// Print nothing on stderr but errors.
    #[arg(short, long, global = true, help_heading = GLOBAL, conflicts_with = "verbose")]
    pub quiet: bool,
    /// Say more: what `plan` and `compact` decide and why (-vv: every message too), every entry
    /// of `session tree`, every problem of `session stats`.
    #[arg(short, long, global = true, help_heading = GLOBAL, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// When to colour the output: `auto` (on a terminal, unless `NO_COLOR` is set; a
    /// `CLICOLOR_FORCE` other than 0 colours anyway), `always` or `never`.
    #[arg(long, global = true, help_heading = GLOBAL, value_name = "WHEN", value_enum, default_value_t)]
    pub color: ColorWhen,
    /// Never show a long report (`plan --show-prompts`) through a pager.
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub no_pager: bool,
}

/// Every command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// The sessions pi keeps for the working directory, newest first, with size, entries and
    /// context tokens.
    Ls(LsArgs),
    /// Inspect, check, repair and migrate session files.
    #[command(subcommand)]
    Session(SessionCommand),
    /// What the model sees at a leaf: messages, tokens, model and thinking level.
    Context(ContextArgs),
    /// A dry run of compaction: what would be summarized, kept and pruned, and why.
    Plan(PlanArgs),
    /// Blank stale tool output (superseded reads, useless results, old outputs) in place.
    Prune(PruneArgs),
    /// Put back the originals of pruned tool results, from the prune store beside the session.
    Unprune(UnpruneArgs),
    /// Print an entry's original content, or search what compactions and pruning took out of
    /// the context.
    Recall(RecallArgs),
    /// Compact at the leaf and append the compaction entry (default: snapcompact, no model needed).
    Compact(CompactArgs),
    /// Move to another point of the tree, optionally summarizing the branch you leave.
    Branch(BranchArgs),
    /// Start a new session from a handoff document of this one (docs/design.md, "Handoff").
    Handoff(HandoffArgs),
    /// Look at snapcompact archives.
    #[command(subcommand)]
    Snapcompact(SnapcompactCommand),
    /// Serve the maintenance runtime over JSON lines on stdin/stdout (docs/protocol.md).
    Serve(ServeArgs),
    /// Hook commands: run the configured hooks of an event with a sample payload.
    #[command(subcommand)]
    Hooks(HooksCommand),
    /// Trust a project's .musepi/settings.json: show what it would enable and record its hash,
    /// so its hooks, providers and key variables take effect.
    Trust(TrustArgs),
    /// The interactive transcript: compactions as dividers that expand with ctrl+o, the tree to
    /// navigate with an optional branch summary, `:compact` on demand.
    View(ViewArgs),
    /// The pi extension: install it where pi finds it by itself, or remove it.
    #[command(subcommand)]
    Pi(PiCommand),
    /// Print a shell's completion script (e.g. `musepi completions bash > ~/.local/share/bash-completion/completions/musepi`).
    Completions(CompletionsArgs),
    /// Print the manual page (roff), or write every command's page into a folder.
    Man(ManArgs),
}

/// A context window of at least one token: a window of 0 would make
/// every threshold and budget negative. A parser of its own, so that 0 is
/// refused as "must be at least 1", not as clap's range with its maximum.
pub(super) fn window_size(text: &str) -> Result<u64, String> {
    match text.parse::<u64>() {
        Ok(0) => Err("the context window must be at least 1 token".to_owned()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("`{text}` is not a whole number of tokens")),
    }
}

/// `musepi context FILE`.
#[derive(Debug, Args)]
pub struct ContextArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// The leaf to look from (an entry id, or `null` for the empty context); default: the file's leaf.
    #[arg(long, value_name = "ID|null")]
    pub leaf: Option<String>,
    /// List the display transcript: every path entry in order, compactions inline.
    #[arg(long, conflicts_with = "llm")]
    pub transcript: bool,
    /// List the provider-facing messages after conversion.
    #[arg(long)]
    pub llm: bool,
    /// How to count tokens: heuristic (chars/4, what every decision uses), o200k or cl100k.
    #[arg(long, value_name = "heuristic|o200k|cl100k")]
    pub tokenizer: Option<String>,
    /// Include each message in the JSON output.
    #[arg(long)]
    pub full: bool,
    /// Draw the context's tokens along the path to the leaf, with each compaction and what it
    /// removed (in the terminal, as JSON with --json, or as SVG with --out).
    #[arg(long, conflicts_with_all = ["transcript", "llm", "tokenizer", "full"])]
    pub chart: bool,
    /// Write the chart to this SVG file instead of drawing it in the terminal.
    #[arg(long, value_name = "FILE.svg", requires = "chart")]
    pub out: Option<PathBuf>,
    /// Replace the --out file when it exists.
    #[arg(long, requires = "out")]
    pub force: bool,
    /// The context window the chart reads the figures against (default 200000).
    #[arg(long, value_name = "N", value_parser = window_size, requires = "chart")]
    pub context_window: Option<u64>,
}

/// `musepi plan FILE`.
#[derive(Debug, Args)]
pub struct PlanArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Plan at this entry instead of the file's leaf (`null`: the empty path), as `compact --leaf`
    /// compacts there.
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Budgets.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Plan without pruning stale tool output first, as `compact --no-prune` runs.
    #[arg(long)]
    pub no_prune: bool,
    /// Which strategy the planned compaction runs, as for `compact`.
    #[command(flatten)]
    pub how: StrategyArgs,
    /// Also print the exact summary requests that would be sent.
    #[arg(long)]
    pub show_prompts: bool,
    /// Exit 1 when there is nothing to compact.
    #[arg(long)]
    pub strict: bool,
}

/// `musepi prune FILE`.
#[derive(Debug, Args)]
pub struct PruneArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Where the result goes.
    #[command(flatten)]
    pub write: WriteArgs,
    /// Prune old tool output by age only when that saves at least N tokens (default 20000; 0
    /// prunes whatever it can).
    #[arg(long, value_name = "N")]
    pub min_saving: Option<u64>,
}

/// `musepi unprune FILE [--entry ID]`.
#[derive(Debug, Args)]
pub struct UnpruneArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Put back this entry's original only (default: every pruned result the store has).
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Where the result goes.
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `musepi recall FILE (--entry ID | --grep TEXT)`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("what").args(["entry", "grep"]).required(true)))]
pub struct RecallArgs {
    /// The session: FILE (`-` reads standard input), or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Print this entry's content as the agent wrote it: a pruned result's original from the
    /// prune store, an entry a compaction summarized as it stands in the session.
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Search what compactions summarized and pruning blanked for TEXT (literally, in any case),
    /// and list the entry ids with the matching line.
    #[arg(long, value_name = "TEXT", conflicts_with = "entry")]
    pub grep: Option<String>,
    /// The leaf whose context decides what was taken out of it (default: the file's leaf).
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Where the page starts: in bytes of the entry's text with --entry, in matches with --grep
    /// (the `next` the page before gives).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub offset: usize,
    /// The most one page shows: bytes of text with --entry (default 16000), matches with --grep
    /// (default 20).
    #[arg(long, value_name = "N")]
    pub limit: Option<usize>,
    /// Read the prune store kept beside this session file instead of the one beside FILE (for a
    /// copy of a session, or one read from standard input).
    #[arg(long, value_name = "FILE")]
    pub store_of: Option<PathBuf>,
}

/// `musepi compact FILE`.
#[derive(Debug, Args)]
#[command(
    mut_arg("model", |a| a.help(
        "The model: with `llm`, the summarizing model; with `snapcompact`, the model that will \
         read the archive (a vision model gets PNG frames, any other text frames)"
    )),
    mut_arg("dry_run", |a| a.help("Show what would be sent and write nothing"))
)]
pub struct CompactArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Which strategy runs.
    #[command(flatten)]
    pub how: StrategyArgs,
    /// A focus for the summary (implies `llm` unless a strategy is given).
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// The provider and model.
    #[command(flatten)]
    pub llm: ProviderArgs,
    /// Compact at this entry instead of the file's leaf: the compaction entry goes under it and
    /// becomes the leaf, as `plan --leaf` plans there (`null`: the empty path, nothing to compact).
    #[arg(long, value_name = "ID")]
    pub leaf: Option<String>,
    /// Budgets.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Do not prune stale tool output first (`plan --no-prune` plans the same).
    #[arg(long)]
    pub no_prune: bool,
    /// When the model's summary fails (an error, a timeout), write the snapcompact archive
    /// instead, with a warning, rather than failing.
    #[arg(long)]
    pub archive_on_failure: bool,
    /// Where the result goes.
    #[command(flatten)]
    pub write: WriteArgs,
    /// Exit 1 when there is nothing to compact.
    #[arg(long)]
    pub strict: bool,
    /// With --dry-run: print the requests that would be sent, whole.
    #[arg(long, requires = "dry_run")]
    pub show_prompts: bool,
}

/// `musepi branch FILE --to ID|root`.
#[derive(Debug, Args)]
#[command(
    mut_arg("provider", |a| a.help("A provider kind or a name from the settings")),
    mut_arg("model", |a| a.help("The summarizing model")),
    mut_arg("dry_run", |a| a.help(
        "Show the abandoned entries and what the run would write (the digest, or the request's \
         size); write nothing"
    ))
)]
pub struct BranchArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// Where to go: an entry id, or `root` (before the first entry).
    #[arg(long, value_name = "ID|root")]
    pub to: String,
    /// Where to start from (default: the leaf).
    #[arg(long, value_name = "ID")]
    pub from: Option<String>,
    /// Leave a summary of the abandoned branch under the target.
    #[arg(long)]
    pub summarize: bool,
    /// A focus for the summary, added to the default prompt (as for `compact` and `handoff`).
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// The instructions replace the default prompt instead of adding a focus to it.
    #[arg(
        long,
        requires = "instructions",
        conflicts_with = "append_instructions"
    )]
    pub replace_instructions: bool,
    /// What `--instructions` does without `--replace-instructions` (kept for scripts that passed
    /// it when `--instructions` replaced the prompt).
    #[arg(long, requires = "instructions", hide = true)]
    pub append_instructions: bool,
    /// A label for the new position.
    #[arg(long, value_name = "TEXT")]
    pub label: Option<String>,
    /// `llm` or `snapcompact` (a deterministic digest, no model); default: `llm` when a provider
    /// is configured, else `snapcompact`.
    #[arg(long, value_name = "llm|snapcompact", value_parser = summary_strategy())]
    pub strategy: Option<BranchStrategy>,
    /// The strategy of a summary when neither `--strategy` nor the settings' `compaction.strategy`
    /// names one (an agent's own default; `snapcompact` there means the digest).
    #[arg(long, value_name = "llm|snapcompact", value_parser = summary_strategy())]
    pub default_strategy: Option<BranchStrategy>,
    /// The summarizing provider and model.
    #[command(flatten)]
    pub llm: ProviderArgs,
    /// With --dry-run: print the whole request (an LLM summary) or the whole digest.
    #[arg(long, requires = "dry_run")]
    pub show_prompts: bool,
    /// The summarizing model's context window (budget = window − branchSummary.reserveTokens).
    #[arg(long, value_name = "N", value_parser = window_size)]
    pub context_window: Option<u64>,
    /// Where the result goes.
    #[command(flatten)]
    pub write: WriteArgs,
}

/// `musepi handoff FILE -o NEW`.
#[derive(Debug, Args)]
#[command(after_help = "\
The model writes the document from the context at the leaf. session_before_compact hooks run first
with reason \"handoff\": a cancel stops the handoff, a supplied compaction's summary is the document.
FILE is never changed; NEW is not overwritten without --force; nothing is written when anything fails.")]
#[command(mut_arg("model", |a| a.help("The model that writes the document")))]
pub struct HandoffArgs {
    /// The session to hand off: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// The new session file (it must not exist unless --force); it gets FILE's mode.
    #[arg(short = 'o', long = "out", value_name = "NEW")]
    pub out: PathBuf,
    /// Replace NEW when it exists.
    #[arg(long)]
    pub force: bool,
    /// A focus for the document (`Additional focus: …`).
    #[arg(long, value_name = "TEXT")]
    pub instructions: Option<String>,
    /// The provider and the model that writes the document.
    #[command(flatten)]
    pub llm: ProviderArgs,
}

/// `musepi view FILE`.
#[derive(Debug, Args)]
#[command(mut_arg("model", |a| a.help(
    "The model: the summarizing model, or the one that will read a snapcompact archive"
)))]
pub struct ViewArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// How `:compact` summarizes: `snapcompact`, `llm` or `remote` (default: as `musepi compact`).
    #[arg(long, value_name = "snapcompact|llm|remote", value_parser = compaction_strategy())]
    pub strategy: Option<MaintenanceStrategy>,
    /// How branch summaries are written: `llm` or `snapcompact` (default: `llm` when a provider is
    /// configured, else the snapcompact digest, which needs no model).
    #[arg(long, value_name = "llm|snapcompact", value_parser = summary_strategy())]
    pub branch_strategy: Option<BranchStrategy>,
    /// The provider and model.
    #[command(flatten)]
    pub llm: ProviderArgs,
    /// Budgets for `:compact`, and `--context-window` for the header's context usage.
    #[command(flatten)]
    pub budget: BudgetArgs,
    /// Let `:compact` and navigation write even when the session looks live (locked, or written
    /// in the last 5 s).
    #[arg(long)]
    pub force: bool,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::{Cli, GLOBAL};

    /// Every command's `--help`, the top one first, with its path.
    fn helps() -> Vec<(String, String)> {
        fn walk(cmd: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            out.push((path.to_owned(), cmd.render_help().to_string()));
            // clap's own `help` subcommand takes no flags.
            for sub in cmd.get_subcommands_mut().filter(|s| s.get_name() != "help") {
                let path = format!("{path} {}", sub.get_name());
                walk(sub, &path, out);
            }
        }
        let mut cmd = Cli::command();
        cmd.build();
        let mut out = Vec::new();
        walk(&mut cmd, "musepi", &mut out);
        out
    }

    #[test]
    fn every_help_lists_the_global_flags_in_their_own_section() {
        let helps = helps();
        assert!(helps.len() > 15, "{} helps", helps.len());
        for (path, help) in helps {
            let heading = format!("\n{GLOBAL}:\n");
            let Some((own, global)) = help.split_once(&heading) else {
                panic!("`{path} --help` has no {GLOBAL} section:\n{help}");
            };
            // A flag's own line starts with it (other help text may name it).
            let defines = |section: &str, flag: &str| {
                section.lines().any(|l| l.trim_start().starts_with(flag))
            };
            for flag in [
                "--json",
                "--now <ISO-8601>",
                "--deterministic-ids",
                "--settings <FILE>",
                "-q, --quiet",
                "-v, --verbose",
            ] {
                assert!(
                    defines(global, flag),
                    "`{path} --help`: {flag} missing:\n{help}"
                );
                assert!(
                    !defines(own, flag),
                    "`{path} --help`: {flag} outside {GLOBAL}:\n{help}"
                );
            }
        }
    }
}
