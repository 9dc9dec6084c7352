//! What every command gets and how it ends: the command context ([`Ctx`],
//! the global flags read and checked) and the one mapping of error
//! conditions to exit codes and `--json` error codes ([`Failure`],
//! [`Exit`]).

mod failure;

use musepi_session_model::time::{EpochMillis, parse_iso};

pub use crate::output::lowercase_start;
pub use failure::{CmdResult, Condition, Exit, Failure, OrExit, classify};

use crate::cli::Globals;
use crate::output::Style;
use crate::settings::{LoadedSettings, SettingsSources, load_settings};

/// What every command gets: the global flags, read and checked, and the
/// settings files, read once for every command.
#[derive(Debug, Clone)]
pub struct Ctx {
    /// The flags as given.
    pub globals: Globals,
    /// `--now`, in epoch milliseconds.
    pub now: Option<EpochMillis>,
    /// How to colour standard output.
    pub style: Style,
    /// How to colour standard error, decided on its own: a report printed
    /// there follows whether standard error is a terminal, not standard
    /// output.
    pub err_style: Style,
    /// The settings files as [`Ctx::load_settings`] read them (the
    /// defaults until then).
    pub settings: LoadedSettings,
}

impl Ctx {
    /// Checks the global flags.
    pub fn new(globals: Globals) -> Result<Self, Failure> {
        let now = match &globals.now {
            Some(text) => Some(parse_iso(text).ok_or_else(|| {
                Failure::usage(anyhow::anyhow!(
                    "--now {text}: not an ISO-8601 date-time (e.g. 2025-05-01T10:00:00.000Z)"
                ))
            })?),
            None => None,
        };
        Ok(Self {
            globals,
            now,
            style: Style::stdout(),
            err_style: Style::stderr(),
            settings: LoadedSettings::default(),
        })
    }

    /// Reads the settings files of the home folder, the working directory
    /// and `--settings FILE` (docs/cli.md). Every command does, before it
    /// starts, so a `--settings FILE` that cannot be read or parsed is
    /// `bad-settings` whatever the command; the project file's keys that
    /// need trust are dropped unless it is trusted, and nothing is run.
    pub fn load_settings(mut self) -> Result<Self, Failure> {
        let sources = SettingsSources::discover_here(self.globals.settings.clone());
        self.settings = load_settings(&sources).map_err(Failure::bad_input)?;
        Ok(self)
    }

    /// What is wrong with the settings files, and the note that an
    /// untrusted project file's hooks and providers are ignored, one line
    /// each, as stderr says them: a command's JSON document carries them in
    /// `warnings` too, so a caller that reads only the document (the pi
    /// extension) can show them.
    pub fn settings_warnings(&self) -> Vec<String> {
        let s = &self.settings;
        s.warnings
            .iter()
            .map(ToString::to_string)
            .chain(s.untrusted.iter().map(ToString::to_string))
            .collect()
    }

    /// `--json`.
    pub fn json(&self) -> bool {
        self.globals.json
    }

    /// `-q`.
    pub fn quiet(&self) -> bool {
        self.globals.quiet
    }

    /// `--no-pager`.
    pub fn no_pager(&self) -> bool {
        self.globals.no_pager
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
        self.now.unwrap_or_else(musepi_runtime::system_clock)
    }
}
