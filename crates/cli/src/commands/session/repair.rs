//! The repaired copy of `check --repair -o OUT`.
//!
//! The copy keeps every line the session model read as the header or an
//! entry, byte for byte, and drops blank lines, lines before the header,
//! and lines that are not JSON objects (malformed or torn). A v1
//! compaction whose `firstKeptEntryIndex` names no earlier entry loses the
//! index, as pi's migration drops it, so the copy can be migrated. It is
//! written atomically to `OUT`, which must not be the input.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use musepi_session_model::{Problem, ProblemKind, load_file, without_first_kept_index, write_file};

use crate::commands::files::{Input, Loaded, mode_of};
use crate::commands::writer::{refuse_torn_while_live, replace_out};
use crate::ctx::{Failure, OrExit};
use musepi_session_model::same_file;

/// A line dropped or changed, and why.
#[derive(Debug, Clone)]
pub(super) struct LineNote {
    pub(super) line: u64,
    pub(super) reason: String,
}

/// What a repair did.
#[derive(Debug)]
pub(super) struct Repair {
    pub(super) out: PathBuf,
    pub(super) kept: u64,
    /// Of the lines kept, those written with a change ([`without_first_kept_index`]).
    pub(super) rewritten: u64,
    pub(super) dropped: Vec<LineNote>,
    pub(super) changed: Vec<LineNote>,
    /// Problems the copy still has (dangling parents, duplicate ids, …).
    pub(super) remaining: Vec<Problem>,
}

/// Writes the repaired copy of `loaded` to `out`, which must not exist
/// unless `force`; it gets the input file's mode. A file whose last line
/// is torn is refused as live (exit 3) while it looks live, unless `force`.
pub(super) fn run(loaded: &Loaded, out: &Path, force: bool) -> Result<Repair, Failure> {
    if out.as_os_str() == "-" {
        return Err(Failure::usage(anyhow::anyhow!(
            "--repair writes a file: give -o a path"
        )));
    }
    if let Input::File(input) = &loaded.input
        && same_file(input, out)
    {
        return Err(Failure::usage(anyhow::anyhow!(
            "{}: --repair never writes in place; give -o another path",
            out.display()
        )));
    }
    let replace = replace_out(out, force)?;
    // A copy without the torn last line of a session being written would
    // drop the line the agent may still be finishing.
    if let (Input::File(path), Some(tail)) = (&loaded.input, &loaded.tail)
        && tail.torn.is_some()
    {
        refuse_torn_while_live(path, force)?;
    }
    let drop = dropped_lines(loaded.session.problems());
    let unresolved = unresolved_indexes(loaded.session.problems());
    let mut kept = 0u64;
    let mut rewritten = 0u64;
    let mut dropped = Vec::new();
    let mut changed = Vec::new();
    let mut header_seen = false;
    let mut read_bytes = 0u64;
    let mut reader: Box<dyn BufRead> = match (&loaded.input, &loaded.bytes) {
        (Input::File(path), _) => Box::new(BufReader::with_capacity(
            1 << 20,
            File::open(path).map_err(|e| {
                Failure::bad_input(anyhow::Error::new(e).context(path.display().to_string()))
            })?,
        )),
        (Input::Stdin, Some(bytes)) => Box::new(bytes.as_slice()),
        (Input::Stdin, None) => return Err(Failure::bad_input(anyhow::anyhow!("no input"))),
    };
    let mode = match &loaded.input {
        Input::File(path) => mode_of(path),
        Input::Stdin => None,
    };
    write_file(out, mode, replace, |w| {
        let mut buf = Vec::new();
        let mut line_no = 0u64;
        loop {
            buf.clear();
            let n = reader.read_until(b'\n', &mut buf)?;
            if n == 0 {
                break;
            }
            read_bytes += n as u64;
            line_no += 1;
            let has_newline = buf.last() == Some(&b'\n');
            if has_newline {
                buf.pop();
            }
            if buf.iter().all(u8::is_ascii_whitespace) {
                dropped.push(LineNote {
                    line: line_no,
                    reason: "blank line".into(),
                });
                continue;
            }
            if let Some(reason) = drop.get(&line_no) {
                let reason = if header_seen {
                    reason.clone()
                } else {
                    format!("before the session header: {reason}")
                };
                dropped.push(LineNote {
                    line: line_no,
                    reason,
                });
                continue;
            }
            header_seen = true;
            if let Some(problem) = unresolved.get(&line_no) {
                let line = without_first_kept_index(&buf).map_err(io::Error::other)?;
                w.write_all(line.as_bytes())?;
                rewritten += 1;
                changed.push(LineNote {
                    line: line_no,
                    reason: problem.clone(),
                });
            } else {
                w.write_all(&buf)?;
            }
            w.write_all(b"\n")?;
            kept += 1;
            if !has_newline {
                changed.push(LineNote {
                    line: line_no,
                    reason: "added the missing final newline".into(),
                });
            }
        }
        match &loaded.tail {
            Some(tail) if tail.len != read_bytes => Err(io::Error::other(format!(
                "the file changed while it was read ({} bytes, then {read_bytes})",
                tail.len
            ))),
            _ => Ok(()),
        }
    })
    .map_err(|e| {
        Failure::failed(
            anyhow::Error::new(e)
                .context(format!("cannot write the repaired copy {}", out.display())),
        )
    })?;
    let (copy, _) = load_file(out, &mut crate::ids::for_v1())
        .or_failed()
        .map_err(|f| Failure {
            error: f.error.context("the repaired copy does not read back"),
            ..f
        })?;
    Ok(Repair {
        out: out.to_owned(),
        kept,
        rewritten,
        dropped,
        changed,
        remaining: copy.problems().to_vec(),
    })
}

/// The lines of v1 compactions whose `firstKeptEntryIndex` names no
/// earlier entry, with what the copy does to them.
fn unresolved_indexes(problems: &[Problem]) -> BTreeMap<u64, String> {
    problems
        .iter()
        .filter_map(|p| match &p.kind {
            ProblemKind::FirstKeptIndex { index, reason } => Some((
                p.line,
                format!(
                    "dropped the v1 compaction's `firstKeptEntryIndex` {index}, which {reason}, as pi's migration drops it: the compaction keeps no entry from before it"
                ),
            )),
            _ => None,
        })
        .collect()
}

/// Lines the copy leaves out, with the reason.
fn dropped_lines(problems: &[Problem]) -> BTreeMap<u64, String> {
    problems
        .iter()
        .filter_map(|p| match &p.kind {
            ProblemKind::MalformedJson { .. }
            | ProblemKind::NotAnObject
            | ProblemKind::TornLine { .. }
            | ProblemKind::BeforeHeader => Some((p.line, p.kind.to_string())),
            _ => None,
        })
        .collect()
}
