//! The arguments of the commands that set musepi up, run it for an agent
//! or show what it made: `completions`, `man`, `pi`, `serve`, `trust`,
//! `hooks test` and `snapcompact render`.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::{ProviderArgs, SessionArg, window_size};

/// `musepi completions SHELL`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_name = "SHELL", value_enum)]
    pub shell: clap_complete::Shell,
}

/// `musepi man [--out DIR]`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// Write `musepi.1` and one page per command (`musepi-compact.1`, …) into this folder instead
    /// of printing `musepi.1`.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// `musepi pi …`.
#[derive(Debug, Subcommand)]
pub enum PiCommand {
    /// Install this musepi's pi extension in ~/.pi/agent/extensions/musepi (or the project's
    /// .pi/extensions/musepi with --project): pi loads it at its next start, and it does not
    /// depend on this checkout.
    Install(PiExtensionArgs),
    /// Remove the extension `musepi pi install` installed.
    Remove(PiExtensionArgs),
}

/// `musepi pi install|remove`.
#[derive(Debug, Args)]
pub struct PiExtensionArgs {
    /// The project's .pi/extensions/musepi in the working directory, instead of pi's agent folder
    /// (`PI_CODING_AGENT_DIR`, else `~/.pi/agent`).
    #[arg(long)]
    pub project: bool,
    /// Say what would be written or removed; change nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// `musepi serve`.
#[derive(Debug, Args)]
#[command(
    mut_arg("provider", |a| a.help("The summarizing provider: a kind or a name from the settings' providers map")),
    mut_arg("model", |a| a.help("The summarizing model"))
)]
pub struct ServeArgs {
    /// The summarizing provider and model.
    #[command(flatten)]
    pub llm: ProviderArgs,
    /// The agent model's context window, for the thresholds (default 200000; `open` may set it per session).
    #[arg(long, value_name = "N", value_parser = window_size)]
    pub context_window: Option<u64>,
}

/// `musepi trust [FILE]`.
#[derive(Debug, Args)]
#[command(after_help = "\
A project settings file (.musepi/settings.json in the working directory) comes with the repository:
its hooks run programs, its providers receive the conversation and an API key. They take effect only
once you trust the file's exact content; any change to the file needs `musepi trust` again. Until
then musepi warns and applies only its compaction, branchSummary, snapcompact and contextPromotion
settings (without compaction.remoteEndpoint). ~/.musepi/settings.json and --settings FILE are always
trusted. Approvals are kept in ~/.musepi/trusted.json.")]
pub struct TrustArgs {
    /// The settings file, or a folder holding .musepi/settings.json (default: the working
    /// directory's).
    #[arg(value_name = "FILE")]
    pub file: Option<PathBuf>,
    /// Show what the file would enable and its hash; record nothing.
    #[arg(long, conflicts_with_all = ["revoke", "list"])]
    pub dry_run: bool,
    /// Withdraw the approval of the file.
    #[arg(long, conflicts_with = "list")]
    pub revoke: bool,
    /// List every trusted file and whether it still has the approved content.
    #[arg(long, conflicts_with = "file")]
    pub list: bool,
}

/// `musepi snapcompact …`.
#[derive(Debug, Subcommand)]
pub enum SnapcompactCommand {
    /// Write the archive of a compaction as PNG frames or text pages to look at.
    Render(RenderArgs),
}

/// `musepi snapcompact render FILE --out DIR`.
#[derive(Debug, Args)]
pub struct RenderArgs {
    /// The session: FILE, or `--latest`.
    #[command(flatten)]
    pub file: SessionArg,
    /// The folder to write `frame-001.png` … (or `page-001.txt` …), the text edges and `archive.json` into.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// The compaction entry to render (default: the latest on the path to the leaf).
    #[arg(long, value_name = "ID")]
    pub entry: Option<String>,
    /// Print the archive's text anew with this shape (e.g. 8on22-bw; auto: the model's) instead of writing the stored frames.
    #[arg(long, value_name = "NAME", value_parser = shape_names())]
    pub shape: Option<String>,
    /// Print the archive's text anew in the shape measured for this model.
    #[arg(long, value_name = "ID")]
    pub model: Option<String>,
    /// Replace the files of an earlier render in DIR (without it, a DIR that holds one is refused).
    #[arg(long)]
    pub force: bool,
}

/// The values `--shape` takes: `auto` and every shape, so clap refuses any
/// other as bad usage and `--help` lists them.
fn shape_names() -> clap::builder::PossibleValuesParser {
    std::iter::once("auto")
        .chain(musepi_runtime::archive::SHAPES.iter().map(|s| s.name))
        .collect::<Vec<_>>()
        .into()
}

/// `musepi hooks …`.
#[derive(Debug, Subcommand)]
pub enum HooksCommand {
    /// Run the configured hooks of EVENT with a sample payload and show what each returned.
    #[command(after_help = "\
Exit status: 0 when every hook succeeded, 1 when one failed or would cancel the operation,
2 for an unknown event or unusable hook settings. The payloads are documented in docs/hooks.md.")]
    Test(HooksTestArgs),
}

/// `musepi hooks test EVENT [--config FILE]`.
#[derive(Debug, Args)]
pub struct HooksTestArgs {
    /// The event: `session_before_compact`, `session.compacting`, `session_compact`,
    /// `session_before_tree` or `session_tree`.
    #[arg(value_name = "EVENT")]
    pub event: String,
    /// Take the hooks from this settings file alone, instead of the settings files every command
    /// reads (with the global `--settings FILE` among them). Hidden: `--settings` is the flag
    /// that names a settings file; this is kept for scripts.
    #[arg(long, value_name = "FILE", hide = true)]
    pub config: Option<PathBuf>,
}
