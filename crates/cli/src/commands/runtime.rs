//! What the commands that talk to models or run hooks share: settings,
//! the provider, the tokio runtime, Ctrl-C, and progress on stderr.

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use musepi_runtime::{DEFAULT_CONTEXT_WINDOW, MaintenanceSettings};
use tokio_util::sync::CancellationToken;

use crate::cli::BudgetArgs;
use crate::ctx::{Ctx, Failure, OrExit};
use crate::output::note;
use crate::settings::{LoadedSettings, Settings, SettingsSources, load_settings};
use musepi_providers::{
    Provider, ProviderConfig, ProviderError, ProviderFlags, RetryNotice, install_crypto_provider,
    process_env, resolve_config, resolve_provider,
};

/// The settings of the working directory, the home folder and
/// `--settings`, which every command read before it started
/// ([`Ctx::load_settings`]), for a command that uses them: what was wrong
/// with them is said on stderr, and so is the note that an untrusted
/// project file's hooks and providers were ignored. A command calls it
/// once.
pub fn settings(ctx: &Ctx) -> Settings {
    with_notes(ctx.settings.clone(), ctx)
}

/// Loads settings files other than the standard ones (`hooks test
/// --config FILE`), with the notes of [`settings`].
pub fn load(sources: &SettingsSources, ctx: &Ctx) -> Result<Settings, Failure> {
    Ok(with_notes(load_settings(sources).or_bad_input()?, ctx))
}

fn with_notes(loaded: LoadedSettings, ctx: &Ctx) -> Settings {
    let LoadedSettings {
        settings,
        warnings,
        untrusted,
        ..
    } = loaded;
    for w in &warnings {
        note(ctx.quiet(), &format!("musepi: warning: {w}"));
    }
    if let Some(u) = &untrusted {
        note(ctx.quiet(), &format!("musepi: warning: {u}"));
    }
    settings
}

/// What the runtime and the pipelines read: the settings files, then the
/// budget flags over them (`--keep-recent`, `--reserve`,
/// `--context-window`). Every command takes its budgets, pruning and
/// archive budgets from here.
pub fn maintenance(settings: &Settings, budget: &BudgetArgs) -> MaintenanceSettings {
    let mut m = settings.maintenance(budget.context_window.unwrap_or(DEFAULT_CONTEXT_WINDOW));
    if let Some(k) = budget.keep_recent {
        m.compaction.keep_recent_tokens = k;
    }
    if let Some(r) = budget.reserve {
        m.compaction.reserve_tokens = r;
    }
    if let Some(o) = budget.overhead_tokens {
        m.compaction.overhead_tokens = Some(o);
    }
    m
}

/// The provider the flags and settings select, with retries reported on stderr.
pub fn provider(
    ctx: &Ctx,
    settings: &Settings,
    flags: &ProviderFlags,
    progress: &Progress,
) -> Result<Provider, Failure> {
    install_crypto_provider();
    let provider =
        resolve_provider(flags, &settings.provider_settings(), &process_env).or_bad_input()?;
    let bar = progress.bar.clone();
    let quiet = ctx.quiet();
    Ok(
        provider.with_retry_observer(Arc::new(move |n: &RetryNotice| {
            // One line per retry, numbered as the final error counts
            // ("could not be reached after N attempts").
            let text = format!(
                "{}: attempt {} of {} failed ({}); retrying in {:.1}s{}",
                n.provider,
                n.attempt,
                n.max_attempts,
                n.reason,
                n.delay.as_secs_f64(),
                if n.from_retry_after {
                    " (Retry-After)"
                } else {
                    ""
                }
            );
            match &bar {
                Some(b) => b.println(text),
                None if !quiet => eprintln!("musepi: {text}"),
                None => {}
            }
        })),
    )
}

/// How a branch summary is written when no strategy is named: an LLM
/// summary when the flags or settings select a provider, else the
/// snapcompact digest, which needs no model. `Err` is a provider that is
/// selected but cannot be used (a missing key, a bad URL): the caller
/// reports it or falls back to the digest and says so.
pub fn default_branch_strategy(
    settings: &Settings,
    flags: &ProviderFlags,
) -> Result<musepi_runtime::branch::BranchStrategy, ProviderError> {
    match resolve_config(flags, &settings.provider_settings(), &process_env) {
        Ok(_) => Ok(musepi_runtime::branch::BranchStrategy::Llm),
        Err(ProviderError::NoProviderSelected { .. }) => {
            Ok(musepi_runtime::branch::BranchStrategy::Snapcompact)
        }
        Err(e) => Err(e),
    }
}

/// A spinner on stderr while waiting (only on a terminal, never with `-q`).
pub struct Progress {
    bar: Option<ProgressBar>,
}

impl Progress {
    /// Starts a spinner with `message`.
    pub fn start(ctx: &Ctx, message: &str) -> Self {
        if ctx.quiet()
            || ctx.json() && !std::io::stderr().is_terminal()
            || !std::io::stderr().is_terminal()
        {
            return Self { bar: None };
        }
        let bar = ProgressBar::new_spinner();
        bar.set_style(
            // The message gives way on a narrow terminal; the time stays.
            ProgressStyle::with_template("{spinner} {wide_msg} {elapsed:>4}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner()),
        );
        bar.set_message(message.to_owned());
        // Drawn at once, so even short work shows what it does.
        bar.tick();
        bar.enable_steady_tick(Duration::from_millis(100));
        crate::output::set_spinner(Some(bar.clone()));
        Self { bar: Some(bar) }
    }

    /// No spinner at all (what `start` gives off a terminal or with `-q`).
    pub fn hidden() -> Self {
        Self { bar: None }
    }

    /// Replaces the spinner's message.
    pub fn set_message(&self, message: &str) {
        if let Some(b) = &self.bar {
            b.set_message(message.to_owned());
        }
    }

    /// Runs `work` to its end on `rt` with a token that fires on Ctrl-C
    /// (the operation then writes nothing), and clears the spinner.
    pub fn run<T>(
        &self,
        rt: &tokio::runtime::Runtime,
        work: impl AsyncFnOnce(&CancellationToken) -> T,
    ) -> T {
        let out = rt.block_on(async {
            let cancel = ctrl_c();
            work(&cancel).await
        });
        self.finish();
        out
    }

    /// Stops the spinner and clears its line.
    pub fn finish(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
            crate::output::set_spinner(None);
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

/// A current-thread runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime, Failure> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .or_failed()
}

/// A token that fires on Ctrl-C (the operation then writes nothing).
pub fn ctrl_c() -> CancellationToken {
    let token = CancellationToken::new();
    let fire = token.clone();
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            fire.cancel();
        }
    });
    token
}

/// Model families known to read images, for choosing PNG frames over text
/// frames when no provider entry says either way.
const VISION_FAMILIES: [&str; 8] = [
    "claude", "gpt-4o", "gpt-4.1", "gpt-5", "gemini", "o3", "o4", "pixtral",
];

/// Who will read a snapcompact archive: the `--model` (or the provider's
/// model), whether it reads images (the provider entry's `vision`, else its
/// family), and the wire API its provider speaks (for image pricing); the
/// shape the settings force, if any.
pub fn snap_target(
    settings: &MaintenanceSettings,
    model: Option<&str>,
    provider: Option<&Provider>,
) -> musepi_runtime::compaction::SnapTarget {
    let config = provider.map(Provider::config);
    let model_id = model
        .map(str::to_owned)
        .or_else(|| config.and_then(|c| c.model().map(str::to_owned)))
        .filter(|m| !m.is_empty());
    let vision = config.is_some_and(ProviderConfig::vision)
        || model_id.as_deref().is_some_and(|m| {
            let m = m.to_ascii_lowercase();
            VISION_FAMILIES.iter().any(|f| m.contains(f))
        });
    let api = config.map(|c| {
        match c.kind() {
            musepi_providers::ProviderKind::Anthropic => "anthropic-messages",
            musepi_providers::ProviderKind::OpenaiResponses => "openai-responses",
            _ => "openai-completions",
        }
        .to_owned()
    });
    let mut target = model_id.map_or_else(
        musepi_runtime::compaction::SnapTarget::default,
        musepi_runtime::compaction::SnapTarget::model,
    );
    target.api = api;
    target.provider = config.map(|c| c.kind().as_str().to_owned());
    target.vision = vision;
    target.forced_shape.clone_from(&settings.snapcompact_shape);
    target
}

/// The snapcompact strategy for `target`, with the archive budgets of
/// `settings` (whose reserve sizes the text archive).
pub fn snap_strategy(
    settings: &MaintenanceSettings,
    target: musepi_runtime::compaction::SnapTarget,
) -> musepi_runtime::compaction::Strategy {
    musepi_runtime::compaction::Strategy::Snapcompact(Box::new(
        musepi_runtime::compaction::SnapcompactStrategy {
            target,
            settings: settings.snap_settings(),
        },
    ))
}
