//! `musepi view FILE`: the interactive transcript and tree.
//!
//! The screen, keys and state live in [`crate::view`]; this module reads
//! the file, decides how summaries will be made, takes over the terminal,
//! and runs what the view asks for through the same pipelines and helpers
//! as `musepi branch` and `musepi compact`.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use anyhow::anyhow;
use musepi_runtime::branch::{BranchStrategy, NavigateOptions, TreeRequest, navigate};
use musepi_runtime::compaction::{CompactError, compact};
use musepi_runtime::hooks::{Hooks, StderrMode, StderrSink, Summarizer};
use musepi_runtime::{MaintenanceSettings, MaintenanceStrategy};
use musepi_session_model::{Journal, LiveSign, Session, SessionError};
use tokio_util::sync::CancellationToken;

use crate::cli::ViewArgs;
use crate::commands::runtime::{
    Progress, default_branch_strategy, maintenance, provider, runtime, settings,
};
use crate::commands::strategy::{pick, uses_model};
use crate::commands::writer::{mark_leaf, take_write_warnings};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::settings::Settings;
use crate::view::terminal::TerminalGuard;
use crate::view::text::{sanitize, thousands};
use crate::view::{App, Done, Job, Strategies, Worker, event_loop, snapshot};
use musepi_providers::{ProviderFlags, process_env, resolve_config};

/// Runs the command.
pub fn run(args: &ViewArgs, ctx: &Ctx) -> CmdResult {
    let file = args.file.file_path(
        "view",
        "reads its keys from the terminal and changes the session file in place",
    )?;
    if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
        return Err(Failure::usage(anyhow!(
            "musepi view needs a terminal: run it in an interactive shell (for text, use `musepi context --transcript` or `musepi session tree`)"
        )));
    }
    let settings = settings(ctx);
    let m = maintenance(&settings, &args.budget);
    // A large session takes a moment to read: say so before the screen
    // changes, as nothing else is drawn until the view is.
    let progress = crate::commands::runtime::Progress::start(
        ctx,
        &format!(
            "reading {}",
            crate::output::escape_controls(&file.display().to_string())
        ),
    );
    let session = load(&file).or_bad_input()?;
    let snapshot = snapshot(&session);
    progress.finish();
    let flags = args.llm.flags();
    let (branch, branch_note) = branch_strategy(args.branch_strategy, &settings, &flags);
    let strategies = describe(args, &settings, &m, &flags, branch);
    // Progress, warnings and hook stderr would draw over the screen.
    let mut quiet = ctx.clone();
    quiet.globals.quiet = true;
    let worker = Pipelines {
        path: file.clone(),
        ctx: quiet,
        settings,
        flags,
        compact_flag: args.strategy,
        branch,
        maintenance: m,
        force: args.force,
        own_write: Mutex::default(),
        hook_lines: Arc::default(),
    };
    let mut guard = TerminalGuard::enter().or_failed()?;
    let size = guard.terminal().size().or_failed()?;
    let mut app = App::new(
        file.display().to_string(),
        snapshot,
        strategies,
        (size.width, size.height),
    );
    app.context_window = worker.maintenance.context_window;
    let problems = session.problems().len();
    if problems > 0 {
        app.say(
            format!(
                "{} of the file could not be read: see `musepi session check`",
                crate::output::counted(problems, "line", "lines")
            ),
            true,
        );
    } else if let Some(note) = branch_note {
        app.say(note, true);
    }
    let result = event_loop::run(guard.terminal(), &mut app, &worker);
    drop(guard);
    result.or_failed()?;
    Ok(Exit::Ok)
}

/// The session the view shows: an unmigrated v1 file's entries are
/// numbered `00000001`, `00000002`, … in file order, as every command that
/// reads shows them, so an id the view shows is the one `musepi session
/// tree` prints and the one its own jobs find.
pub fn load(path: &std::path::Path) -> Result<Session, musepi_session_model::SessionError> {
    let journal = Journal::open(path, &mut crate::ids::for_v1())?;
    Ok(journal.session().clone())
}

/// How branch summaries are written: `--branch-strategy`, else an LLM when
/// a provider is configured, else the snapcompact digest. The note says
/// why a configured provider is not used.
fn branch_strategy(
    flag: Option<BranchStrategy>,
    settings: &Settings,
    flags: &ProviderFlags,
) -> (BranchStrategy, Option<String>) {
    match flag {
        Some(strategy) => (strategy, None),
        None => match default_branch_strategy(settings, flags) {
            Ok(strategy) => (strategy, None),
            Err(e) => (
                BranchStrategy::Snapcompact,
                Some(format!(
                    "provider not usable ({e}); branch summaries use the snapcompact digest"
                )),
            ),
        },
    }
}

/// What the prompts say about how summaries will be made.
fn describe(
    args: &ViewArgs,
    settings: &Settings,
    maintenance: &MaintenanceSettings,
    flags: &ProviderFlags,
    branch: BranchStrategy,
) -> Strategies {
    let model = || {
        resolve_config(flags, &settings.provider_settings(), &process_env)
            .map_or_else(|_| "no provider configured".to_owned(), |c| c.describe())
    };
    let name = |strategy: musepi_runtime::compaction::Strategy| {
        if uses_model(&strategy) {
            format!("{} ({})", strategy.name(), model())
        } else {
            strategy.name().to_owned()
        }
    };
    let flag = args.strategy;
    Strategies {
        compact: name(pick(flag, maintenance, false, flags.model.as_deref())),
        compact_with_instructions: name(pick(flag, maintenance, true, flags.model.as_deref())),
        branch: match branch {
            BranchStrategy::Llm => format!("an LLM summary ({})", model()),
            BranchStrategy::Snapcompact => "the snapcompact digest (no model)".to_owned(),
        },
    }
}

/// Runs the view's jobs on the file, as `musepi branch` and `musepi
/// compact` do.
struct Pipelines {
    path: PathBuf,
    ctx: Ctx,
    settings: Settings,
    flags: ProviderFlags,
    compact_flag: Option<MaintenanceStrategy>,
    branch: BranchStrategy,
    /// The settings files and the budget flags, as the runtime reads them.
    maintenance: MaintenanceSettings,
    /// `--force`: write even into a session that looks live.
    force: bool,
    /// The file as the view's last job left it (modified time, length): a
    /// recent write that is the view's own does not make it live.
    own_write: Mutex<Option<(std::time::SystemTime, u64)>>,
    /// What the hooks of the running job wrote on stderr.
    hook_lines: Arc<Mutex<Vec<String>>>,
}

impl Worker for Pipelines {
    fn run(&self, job: &Job, cancel: &CancellationToken) -> Done {
        if let Ok(mut lines) = self.hook_lines.lock() {
            lines.clear();
        }
        let mut result = match job {
            Job::Navigate { target, summarize } => {
                self.navigate(target.as_deref(), *summarize, cancel)
            }
            Job::Compact { instructions } => self.compact(instructions.clone(), cancel),
        };
        // What hooks wrote on stderr would draw over the screen: the last
        // line is told instead.
        let last_hook_line = self.hook_lines.lock().ok().and_then(|l| l.last().cloned());
        if let Some(line) = last_hook_line {
            result = match result {
                Ok(text) => Ok(format!("{text} · {line}")),
                Err(e) => Err(anyhow!("{e:#} · {line}")),
            };
        }
        // What the job wrote is the view's own; a job that failed may have
        // been refused because someone else wrote.
        if result.is_ok()
            && let Ok(mut own) = self.own_write.lock()
        {
            *own = self.stamp();
        }
        // The file is read again whatever happened: it shows what is true.
        match load(&self.path) {
            Ok(session) => Done {
                result: result.map_err(|e| format!("{e:#}")),
                reload: Some(snapshot(&session)),
            },
            Err(e) => Done {
                result: Err(format!("cannot read {} again: {e}", self.path.display())),
                reload: None,
            },
        }
    }
}

fn failure(f: Failure) -> anyhow::Error {
    f.error
}

impl Pipelines {
    /// The configured hooks, their stderr kept for the status line.
    fn hooks(&self) -> anyhow::Result<Hooks> {
        let lines = Arc::clone(&self.hook_lines);
        let sink: StderrSink = Arc::new(move |name: &str, line: &str| {
            if let Ok(mut l) = lines.lock() {
                l.push(format!("hook {name}: {}", sanitize(line)));
            }
        });
        Ok(crate::hooks::from_settings_with(
            &self.settings,
            &StderrMode::Callback(sink),
        )?)
    }

    /// The session to change in place, with the ids the view shows, and
    /// refused while it looks live (another process holds its lock, or
    /// wrote it in the last seconds) unless `--force`, as every command
    /// that writes in place refuses it.
    fn journal(&self) -> anyhow::Result<Journal> {
        let journal = Journal::open(&self.path, &mut crate::ids::for_v1())?;
        if !self.force {
            match journal.check_not_live(musepi_runtime::system_clock()) {
                Err(SessionError::Live {
                    sign: LiveSign::RecentWrite { .. },
                    ..
                }) if self.unchanged_since_own_write() => {}
                other => other?,
            }
        }
        Ok(journal)
    }

    /// The file's modified time and length now.
    fn stamp(&self) -> Option<(std::time::SystemTime, u64)> {
        let meta = std::fs::metadata(&self.path).ok()?;
        Some((meta.modified().ok()?, meta.len()))
    }

    /// Whether nobody wrote the file since the view's own last job did.
    fn unchanged_since_own_write(&self) -> bool {
        let own = self.own_write.lock().ok().and_then(|o| *o);
        own.is_some() && own == self.stamp()
    }

    fn navigate(
        &self,
        target: Option<&str>,
        summarize: bool,
        cancel: &CancellationToken,
    ) -> anyhow::Result<String> {
        let mut journal = self.journal()?;
        let hooks = self.hooks()?;
        let rt = runtime().map_err(failure)?;
        let progress = Progress::start(&self.ctx, "summarizing the branch");
        let llm = if summarize && self.branch == BranchStrategy::Llm {
            Some(provider(&self.ctx, &self.settings, &self.flags, &progress).map_err(failure)?)
        } else {
            None
        };
        let options = {
            let mut options = NavigateOptions::new(
                TreeRequest::to(target.map(str::to_owned)),
                &hooks,
                self.ctx.now_ms(),
            );
            options.request.summarize = summarize;
            options.request.replace_instructions = true;
            options.strategy = self.branch;
            options.summarizer = llm.as_ref().map(|p| p as &dyn Summarizer);
            options.context_window = llm
                .as_ref()
                .and_then(|p| p.config().context_window())
                .map(u64::from);
            options.reserve_tokens = self.maintenance.branch_summary_reserve_tokens;
            options
        };
        let mut ids = crate::ids::for_session(self.ctx.deterministic_ids(), journal.session());
        let out = rt.block_on(navigate(&mut journal, &options, ids.as_mut(), cancel))?;
        mark_leaf(&mut journal, &out, &options, ids.as_mut())?;
        let place = target.unwrap_or("root");
        if out.no_op {
            return Ok(format!("already at {place}"));
        }
        let mut text = match &out.summary_entry {
            Some(id) => format!(
                "at {place}: branch summary {id} of {} abandoned entries written under it",
                out.abandoned.len()
            ),
            None => format!(
                "at {place}: {} entries left behind, no summary",
                out.abandoned.len()
            ),
        };
        if let Some(editor) = out.editor_text() {
            let _ = write!(
                text,
                " · the message to edit again: {}",
                crate::output::preview(editor, 40)
            );
        }
        hook_warnings(&mut text, &out.warnings);
        write_warnings_to(&mut text, &mut journal);
        Ok(text)
    }

    fn compact(
        &self,
        instructions: Option<String>,
        cancel: &CancellationToken,
    ) -> anyhow::Result<String> {
        let strategy = pick(
            self.compact_flag,
            &self.maintenance,
            instructions.is_some(),
            self.flags.model.as_deref(),
        );
        let name = strategy.name();
        let mut journal = self.journal()?;
        let hooks = self.hooks()?;
        let rt = runtime().map_err(failure)?;
        let progress = Progress::start(&self.ctx, "compacting");
        let llm = if uses_model(&strategy) {
            Some(provider(&self.ctx, &self.settings, &self.flags, &progress).map_err(failure)?)
        } else {
            None
        };
        let mut options = self.maintenance.compact_options(&hooks, self.ctx.now_ms());
        options.custom_instructions = instructions;
        options.strategy = strategy;
        options.summarizer = llm.as_ref().map(|p| p as &dyn Summarizer);
        options.remote = llm
            .as_ref()
            .and_then(musepi_providers::Provider::remote_compactor);
        let mut ids = crate::ids::for_session(self.ctx.deterministic_ids(), journal.session());
        let out = match rt.block_on(compact(&mut journal, &options, ids.as_mut(), cancel)) {
            Ok(out) => out,
            Err(CompactError::Nothing(reason)) => {
                return Ok(crate::report::plan::nothing_text(&reason));
            }
            Err(e) => return Err(e.into()),
        };
        let mut text = format!(
            "compacted with {name}: {} → {} tokens · entry {} keeps from {} · ctrl+o shows it",
            thousands(out.context_tokens_before),
            thousands(out.tokens_after),
            out.entry_id,
            out.result.first_kept_entry_id
        );
        hook_warnings(&mut text, &out.warnings);
        write_warnings_to(&mut text, &mut journal);
        Ok(text)
    }
}

/// ` · warning: …` after a status line for each thing the view's write
/// had to tell (a replaced file another process kept open).
fn write_warnings_to(text: &mut String, journal: &mut Journal) {
    for w in take_write_warnings(journal) {
        let _ = write!(text, " · warning: {w}");
    }
}

/// ` · N hook warnings: …` after a status line, when there are any.
fn hook_warnings(text: &mut String, warnings: &[String]) {
    if !warnings.is_empty() {
        let _ = write!(
            text,
            " · {}: {}",
            crate::output::counted(warnings.len(), "hook warning", "hook warnings"),
            warnings.join("; ")
        );
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::time::Duration;

    use std::io::Write as _;

    use musepi_test_support::{copy_written_ago, fixture};

    use super::*;
    use crate::cli::Globals;

    /// The fixture `name` copied into `dir`, as nobody has written it for a minute.
    fn settled_copy(dir: &Path, name: &str) -> std::path::PathBuf {
        copy_written_ago(&fixture(name), &dir.join(name), Duration::from_mins(1))
    }

    fn pipelines(path: &Path, force: bool) -> Pipelines {
        let globals = Globals {
            quiet: true,
            deterministic_ids: true,
            ..Globals::default()
        };
        let settings = Settings::default();
        Pipelines {
            path: path.to_owned(),
            ctx: Ctx::new(globals).unwrap(),
            maintenance: settings.maintenance(musepi_runtime::DEFAULT_CONTEXT_WINDOW),
            settings,
            flags: ProviderFlags::default(),
            compact_flag: None,
            branch: BranchStrategy::Snapcompact,
            force,
            own_write: Mutex::default(),
            hook_lines: Arc::default(),
        }
    }

    fn ids(session: &Session) -> Vec<String> {
        session.entries().iter().map(|e| e.id.to_string()).collect()
    }

    fn go_to(worker: &Pipelines, target: &str) -> Done {
        let job = Job::Navigate {
            target: Some(target.to_owned()),
            summarize: false,
        };
        worker.run(&job, &CancellationToken::new())
    }

    #[test]
    fn a_live_session_is_not_changed_without_force() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("live.jsonl");
        std::fs::copy(fixture("tree.jsonl"), &path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let target = load(&path).unwrap().entries()[0].id.to_string();

        let refused = go_to(&pipelines(&path, false), &target);
        let error = refused.result.unwrap_err();
        assert!(error.contains("the session is live"), "{error}");
        assert_eq!(std::fs::read(&path).unwrap(), before);

        let forced = go_to(&pipelines(&path, true), &target);
        assert!(forced.result.is_ok(), "{:?}", forced.result);
        assert_ne!(std::fs::read(&path).unwrap(), before);
    }

    #[test]
    fn the_views_own_write_does_not_make_the_session_live_but_anothers_does() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_copy(dir.path(), "tree.jsonl");
        let worker = pipelines(&path, false);
        let entries = ids(&load(&path).unwrap());
        assert!(go_to(&worker, &entries[0]).result.is_ok());
        // Right after its own write, the view may write again.
        assert!(go_to(&worker, &entries[1]).result.is_ok());
        // Another process appends: the session is live again.
        let leaf = ids(&load(&path).unwrap()).pop().unwrap();
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap();
        writeln!(
            file,
            r#"{{"type":"custom","id":"0000beef","parentId":"{leaf}","timestamp":"2025-01-01T00:10:00.000Z","customType":"agent"}}"#
        )
        .unwrap();
        drop(file);
        let refused = go_to(&worker, &entries[0]).result.unwrap_err();
        assert!(refused.contains("the session is live"), "{refused}");
    }

    #[test]
    fn a_v1_file_shows_the_ids_every_reader_shows_and_its_jobs_find_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = settled_copy(dir.path(), "v1.jsonl");
        let shown = ids(&load(&path).unwrap());
        let read = crate::commands::files::load_with(
            &crate::commands::files::Input::File(path.clone()),
            &mut crate::ids::for_v1(),
        )
        .unwrap();
        assert_eq!(shown, ids(&read.session));
        assert_eq!(shown, ids(&load(&path).unwrap()));
        assert_eq!(shown[0], "00000001");
        // A job finds the entry the view shows.
        let done = go_to(&pipelines(&path, false), &shown[1]);
        assert!(done.result.is_ok(), "{:?}", done.result);
    }
}
