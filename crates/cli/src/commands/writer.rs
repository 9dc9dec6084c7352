//! Where a command that changes a session writes, and the checks before it
//! does: in place (refused while the session is live, unless `--force`), to
//! `-o OUT` (refused when OUT exists, unless `--force`; the new file gets
//! the source's mode), or to standard output with `-o -`. With `--dry-run`
//! nothing is written anywhere.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use musepi_runtime::branch::{NavigateOptions, NavigateOutcome};
use musepi_session_model::{
    EntryId, IdSource, Journal, Problem, Replace, SessionError, Stamp, check_not_live,
    refuse_special_file,
};

use crate::cli::WriteArgs;
use crate::ctx::{Ctx, Failure};
use crate::output::{Style, note};
use musepi_session_model::same_file;

/// Where the result goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// Over the file itself.
    InPlace,
    /// A new file (`-o OUT`).
    File(PathBuf),
    /// Standard output (`-o -`).
    Stdout,
}

/// The destination of a writing command, checked.
#[derive(Debug, Clone)]
pub struct Target {
    file: PathBuf,
    dest: Dest,
    force: bool,
    dry_run: bool,
}

impl Target {
    /// Checks `-o`, `--force` and `--dry-run` for `file`. `-o` naming the
    /// file itself means in place.
    pub fn new(file: &Path, write: &WriteArgs, ctx: &Ctx) -> Result<Self, Failure> {
        let WriteArgs {
            out,
            dry_run,
            force,
        } = write;
        let (force, dry_run) = (*force, *dry_run);
        let dest = match out.as_deref() {
            None => Dest::InPlace,
            Some(o) if o.as_os_str() == "-" => Dest::Stdout,
            Some(o) if same_file(file, o) => Dest::InPlace,
            Some(o) => Dest::File(o.to_owned()),
        };
        if dest == Dest::Stdout && ctx.json() {
            return Err(Failure::usage(anyhow::anyhow!(
                "-o - writes the session to standard output, so it cannot be combined with --json"
            )));
        }
        if let Dest::File(o) = &dest {
            replace_out(o, force)?;
        }
        Ok(Self {
            file: file.to_owned(),
            dest,
            force,
            dry_run,
        })
    }

    /// Where the result goes.
    pub fn dest(&self) -> &Dest {
        &self.dest
    }

    /// Whether the file itself is changed (in place and not a dry run).
    pub fn in_place(&self) -> bool {
        self.dest == Dest::InPlace && !self.dry_run
    }

    /// Opens the session for the command: v1 and v2 files are migrated in
    /// memory, a v1 file's entries numbered as every command numbers them
    /// ([`crate::ids::for_v1`]).
    /// A file with a torn last line is refused before any work, as live
    /// (exit 3) while it looks live and `--force` is not given, since the
    /// line is then most likely an append in progress. In place, a file
    /// that cannot be written is refused too; otherwise every write stays
    /// in memory until [`Target::finish`].
    pub fn open(&self, ctx: &Ctx) -> Result<Journal, Failure> {
        let mut journal = Journal::open(&self.file, &mut crate::ids::for_v1())?;
        super::files::note_problems(
            &super::files::Input::File(self.file.clone()),
            journal.session(),
            ctx,
        );
        if self.force {
            let dropped = journal.drop_unresolved_first_kept();
            note_dropped_first_kept(
                &self.file.display().to_string(),
                &dropped,
                self.dry_run,
                ctx,
            );
        }
        if !self.in_place() {
            journal.detach();
        }
        if let Err(e) = journal.check_can_write() {
            if matches!(e, SessionError::TornTail { .. }) {
                refuse_torn_while_live(&self.file, self.force)?;
            }
            return Err(e.into());
        }
        Ok(journal)
    }

    /// Says on stderr (unless `-q`) that the session, read from a file of
    /// version `from` (below 3), is written as v3 (with `what` the command
    /// adds): in place, the file is rewritten; otherwise the copy is v3.
    /// Commands call it when they write a session whose migration is
    /// pending ([`Journal::migration_pending`]).
    pub fn note_migration(&self, from: u32, what: Option<&str>, ctx: &Ctx) {
        if self.dry_run {
            return;
        }
        note(
            ctx.quiet(),
            &format!(
                "musepi: {} is a v{from} file; {} as v3{}",
                self.file.display(),
                if self.in_place() {
                    "it is rewritten"
                } else {
                    "the copy is written"
                },
                what.map(|w| format!(" with {w}")).unwrap_or_default(),
            ),
        );
    }

    /// Refuses (exit 2, naming the line) when the path to the leaf runs
    /// through a line that cannot be read, dry runs included: what the
    /// command works on would silently lack everything before that line.
    pub fn refuse_unreadable(&self, journal: &Journal) -> Result<(), Failure> {
        let session = journal.session();
        if let Some(leaf) = session.leaf_index() {
            session.check_path_readable(leaf, &self.file)?;
        }
        Ok(())
    }

    /// Refuses to change a live session in place (exit 3), unless
    /// `--force`. Commands call it as soon as they know they will write,
    /// before any slow work.
    pub fn refuse_live(&self, journal: &Journal) -> Result<(), Failure> {
        if self.in_place() && !self.force {
            journal.check_not_live(musepi_runtime::system_clock())?;
        }
        Ok(())
    }

    /// Writes the result where it goes (nothing in place, where every
    /// change is already on disk, and nothing for a dry run). Returns the
    /// name of what was written.
    pub fn finish(&self, journal: &Journal) -> Result<Option<String>, Failure> {
        if self.dry_run {
            return Ok(None);
        }
        match &self.dest {
            Dest::InPlace => Ok(Some(self.file.display().to_string())),
            Dest::File(out) => {
                journal.write_copy(out, replace_out(out, self.force)?)?;
                Ok(Some(out.display().to_string()))
            }
            Dest::Stdout => {
                let mut out = crate::output::stdout();
                journal.write_to(&mut out)?;
                out.flush().map_err(Failure::failed)?;
                Ok(Some("<stdout>".to_owned()))
            }
        }
    }

    /// Writes the result as [`Target::finish`] does, except that in place a
    /// session nothing `changed` is left alone and not named: a command
    /// with nothing to do writes nothing there, while a copy is written (and
    /// named) all the same.
    pub fn finish_changed(
        &self,
        journal: &Journal,
        changed: bool,
    ) -> Result<Option<String>, Failure> {
        if !changed && self.in_place() {
            return Ok(None);
        }
        self.finish(journal)
    }

    /// Whether the report goes to standard error: standard output carries
    /// the session.
    fn reports_on_stderr(&self) -> bool {
        self.dest == Dest::Stdout && !self.dry_run
    }

    /// How to colour the command's report: as the stream
    /// [`Target::report`] prints it on, standard error's colour choice when
    /// standard output carries the session.
    pub fn style(&self, ctx: &Ctx) -> Style {
        if self.reports_on_stderr() {
            ctx.err_style
        } else {
            ctx.style
        }
    }

    /// Prints the command's report: on standard output, or on standard
    /// error (unless `-q`) when standard output carries the session. The
    /// report is printed as it is, its colours too (painted with
    /// [`Target::style`]): what it quotes from the session is escaped
    /// already where the report is built.
    pub fn report(&self, text: &str, ctx: &Ctx) -> Result<(), Failure> {
        if self.reports_on_stderr() {
            if !ctx.quiet() {
                let _ = writeln!(std::io::stderr(), "{}", text.trim_end());
            }
            Ok(())
        } else {
            crate::output::print_text(text).map_err(Failure::failed)
        }
    }
}

/// How a command writes the new file `-o OUT`: refused when the folder
/// of OUT does not exist (exit 2, `usage`), when OUT is a
/// folder or another file that is not regular (exit 2,
/// `not-a-regular-file`, even with `force`), and when OUT exists
/// (or is a symbolic link), exit 2 with `file-exists`, unless `force`,
/// which replaces it. Every command that writes to `-o OUT` asks this
/// before any work and writes with the answer, so a file created
/// meanwhile is refused the same way ([`Failure::file_exists`]).
pub(crate) fn replace_out(out: &Path, force: bool) -> Result<Replace, Failure> {
    refuse_missing_folder(out)?;
    // A folder or a FIFO at OUT cannot be replaced, `--force` or not: say
    // what it is rather than "pass --force".
    refuse_special_file(out)?;
    if force {
        return Ok(Replace::Existing);
    }
    if out.exists() || out.is_symlink() {
        return Err(Failure::file_exists(out));
    }
    Ok(Replace::Never)
}

/// Refuses `-o OUT` whose folder does not exist (or is not a folder), as
/// bad usage (exit 2, `usage`) naming that folder: the write would fail
/// only after all the work, with the system's bare "No such file or
/// directory".
fn refuse_missing_folder(out: &Path) -> Result<(), Failure> {
    let Some(folder) = out.parent().filter(|f| !f.as_os_str().is_empty()) else {
        return Ok(());
    };
    let problem = match std::fs::metadata(folder) {
        Ok(meta) if meta.is_dir() => return Ok(()),
        Ok(_) => "is not a folder",
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "does not exist",
        // Another reason (no permission to look) is the write's to report.
        Err(_) => return Ok(()),
    };
    Err(Failure::usage(anyhow::anyhow!(
        "-o {}: the folder {} {problem}; nothing was written",
        out.display(),
        folder.display()
    )))
}

/// Says on stderr, for each v1 compaction whose `firstKeptEntryIndex`
/// `--force` drops (or would drop, in a dry run) as pi's migration does,
/// what that changes.
pub fn note_dropped_first_kept(file: &str, dropped: &[Problem], dry_run: bool, ctx: &Ctx) {
    for p in dropped {
        note(
            ctx.quiet(),
            &format!(
                "musepi: warning: {file}:{}: {}; --force {} as pi does: the compaction keeps no entry from before it (as musepi and pi read it already), and what the index named is no longer in the file",
                p.line,
                p.kind,
                if dry_run { "would drop it" } else { "drops it" },
            ),
        );
    }
}

/// Refuses a session whose last line is torn while it looks live (another
/// process holds its lock, or wrote it within the live window), unless
/// `force`: the line is then most likely an append in progress, so the
/// session is busy (exit 3, retry later), not a torn file to repair,
/// wherever the result was to go. Every command that writes from a session
/// with a torn last line asks this first.
pub(crate) fn refuse_torn_while_live(file: &Path, force: bool) -> Result<(), Failure> {
    if force {
        return Ok(());
    }
    check_not_live(file, musepi_runtime::system_clock()).map_err(Failure::from)
}

/// What the command's writes in place had to tell the user, one line each:
/// a replaced file that another process kept open past the wait for it (a
/// line it writes there now is lost), lines another process appended right
/// after the entries written. Each is printed on standard error at once,
/// `-q` or not (`-q` hides chatter, never a loss), and returned for the
/// `warnings` of a JSON result.
pub(crate) fn report_write_warnings(journal: &mut Journal) -> Vec<String> {
    let warnings = take_write_warnings(journal);
    for w in &warnings {
        note(false, &format!("musepi: warning: {w}"));
    }
    warnings
}

/// The warnings of the journal's writes since the last look, one line
/// each, printed nowhere (`musepi view` shows them on its status line).
pub(crate) fn take_write_warnings(journal: &mut Journal) -> Vec<String> {
    journal
        .take_warnings()
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Prints each of the other warnings (a hook that failed, a summary cut at
/// its output limit) on standard error, one line each, unless `-q`.
pub(crate) fn print_warnings(warnings: &[String], ctx: &Ctx) {
    for w in warnings {
        note(ctx.quiet(), &format!("musepi: warning: {w}"));
    }
}

/// Without a summary (or label) a navigation moves the leaf in memory
/// only; the file records its leaf as its last line, so one marker entry
/// makes it stick. Returns the marker's id when one was written.
pub(crate) fn mark_leaf(
    journal: &mut Journal,
    out: &NavigateOutcome,
    options: &NavigateOptions<'_>,
    ids: &mut dyn IdSource,
) -> Result<Option<EntryId>, SessionError> {
    if out.no_op || out.summary_entry.is_some() || options.request.label.is_some() {
        return Ok(None);
    }
    let mut stamp = Stamp {
        ids,
        now: options.now,
    };
    let body = musepi_runtime::navigation_marker(
        out.old_leaf.as_ref(),
        options.request.target_id.as_deref(),
    );
    journal.append(body, &mut stamp).map(Some)
}
