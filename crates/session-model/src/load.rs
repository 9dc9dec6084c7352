//! Loading a session from JSONL (docs/design.md, "The session file and its tree") and migrating it in memory
//! (docs/design.md, "The session file and its tree").

use std::io::{BufRead, BufReader};
use std::path::Path;

use serde_json::Value;

use crate::entry::{EntryBody, Header};
use crate::error::SessionError;
use crate::fsutil::{next_line, not_text, open_regular, trim_newline};
use crate::id::{EntryId, IdSet, IdSource, fresh_id};
use crate::json::js_set;
use crate::migrate::{LineEdit, V1Fields, print_edited};
use crate::problem::{Problem, ProblemKind};
use crate::session::{KeptLine, LineSource, Session};
use crate::wire::{HeaderRead, LineRead, ParsedEntry, read_entry, read_header};

/// How the bytes of the file end, which the journal needs before writing.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileTail {
    /// Total bytes read.
    pub len: u64,
    /// Whether the last byte is a newline (or the file is empty).
    pub ends_with_newline: bool,
    /// The torn last line, if any: `(line, offset)`.
    pub torn: Option<(u64, u64)>,
}

/// Reads the session file at `path`.
///
/// Problems with single lines are collected in [`Session::problems`]; only
/// an unreadable file, an empty file, a file that is not a regular file, a
/// file without a valid header (or with an unrecognised `version`) and a
/// line longer than [`crate::MAX_LINE_BYTES`] are errors. Files older than v3 are migrated in memory with ids from `ids`
/// (the file itself is not touched). Entry lines stay on disk: the session
/// refers to them by offset and copies them byte for byte on rewrites.
///
/// A last line without its newline that the file outgrows within a moment
/// was an append in progress, not a torn write: the file is read again
/// (a few times at most) so the line is read whole.
pub fn load_file(path: &Path, ids: &mut dyn IdSource) -> Result<(Session, FileTail), SessionError> {
    let mut tries = 0;
    loop {
        let file = open_regular(path)?;
        let mut reader = BufReader::with_capacity(1 << 20, file);
        let (mut session, tail) = Loader::new(path, false).run(&mut reader, ids)?;
        session.origin = Some(crate::journal::lines::file_origin(path));
        tries += 1;
        // A v1 file's ids come from `ids`: reading it again would number it anew.
        if tail.torn.is_none() || session.original_version() < 2 || tries == TORN_RETRIES {
            return Ok((session, tail));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let grown = std::fs::metadata(path).is_ok_and(|m| m.len() > tail.len);
        if !grown {
            return Ok((session, tail));
        }
    }
}

/// How many times [`load_file`] reads a file whose last line grows.
const TORN_RETRIES: u32 = 20;

/// Reads a session from bytes in memory (standard input, tests).
///
/// `name` is used in error messages.
pub fn load_bytes(
    name: &Path,
    bytes: &[u8],
    ids: &mut dyn IdSource,
) -> Result<Session, SessionError> {
    let mut reader = bytes;
    Loader::new(name, true)
        .run(&mut reader, ids)
        .map(|(s, _)| s)
}

struct Loader<'p> {
    path: &'p Path,
    keep_text: bool,
    line_no: u64,
    offset: u64,
    /// v1 migration: ids by position in the parsed-object list (header = 0).
    v1_ids: Vec<Option<EntryId>>,
    v1_taken: IdSet,
    /// Problems migration found with the line being read.
    v1_problems: Vec<ProblemKind>,
}

impl<'p> Loader<'p> {
    fn new(path: &'p Path, keep_text: bool) -> Self {
        Self {
            path,
            keep_text,
            line_no: 0,
            offset: 0,
            v1_ids: Vec::new(),
            v1_taken: IdSet::default(),
            v1_problems: Vec::new(),
        }
    }

    /// Reads the next line (with its newline) into `buf`.
    fn next_line(
        &self,
        reader: &mut dyn BufRead,
        buf: &mut Vec<u8>,
    ) -> Result<usize, SessionError> {
        next_line(self.path, self.line_no + 1, reader, buf)
    }

    fn source(&self, offset: u64, line: &[u8]) -> LineSource {
        if self.keep_text {
            LineSource::Text(String::from_utf8_lossy(line).into_owned().into_boxed_str())
        } else {
            LineSource::File {
                offset,
                len: line.len() as u64,
            }
        }
    }

    fn run(
        mut self,
        reader: &mut dyn BufRead,
        ids: &mut dyn IdSource,
    ) -> Result<(Session, FileTail), SessionError> {
        let mut buf = Vec::with_capacity(1 << 16);
        let mut pending_before_header: Vec<(u64, Vec<u8>, Problem)> = Vec::new();
        let mut tail = FileTail {
            ends_with_newline: true,
            ..FileTail::default()
        };
        let mut any_bytes = false;

        // Find the header: the first line that parses as JSON.
        let mut session = loop {
            buf.clear();
            let n = self.next_line(reader, &mut buf)?;
            if n == 0 {
                return Err(if any_bytes && !pending_before_header.is_empty() {
                    SessionError::NotASession {
                        path: self.path.to_owned(),
                        line: pending_before_header.first().map_or(0, |(_, _, p)| p.line),
                        reason: "no line is valid JSON".into(),
                    }
                } else {
                    SessionError::Empty {
                        path: self.path.to_owned(),
                    }
                });
            }
            let start = self.offset;
            self.offset += n as u64;
            self.line_no += 1;
            let has_newline = buf.last() == Some(&b'\n');
            trim_newline(&mut buf);
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            if !any_bytes && let Some(reason) = not_text(&buf) {
                return Err(SessionError::NotASession {
                    path: self.path.to_owned(),
                    line: self.line_no,
                    reason,
                });
            }
            any_bytes = true;
            match read_header(&buf) {
                HeaderRead::Header(header) => {
                    let migrate = header.version < crate::CURRENT_VERSION;
                    let mut session = Session::new(header);
                    session.header_source = if migrate {
                        session.header.version = crate::CURRENT_VERSION;
                        self.rewrite(&buf, |map| {
                            js_set(map, "version", crate::CURRENT_VERSION.into());
                        })?
                    } else {
                        self.source(start, &buf)
                    };
                    for (offset, bytes, problem) in pending_before_header.drain(..) {
                        session.problems.push(problem);
                        session.kept_lines.push(KeptLine {
                            before_entry: 0,
                            before_header: true,
                            source: if self.keep_text {
                                LineSource::Text(
                                    String::from_utf8_lossy(&bytes)
                                        .into_owned()
                                        .into_boxed_str(),
                                )
                            } else {
                                LineSource::File {
                                    offset,
                                    len: bytes.len() as u64,
                                }
                            },
                        });
                    }
                    if !has_newline {
                        tail.ends_with_newline = false;
                    }
                    break session;
                }
                HeaderRead::NotAHeader => {
                    return Err(SessionError::NotASession {
                        path: self.path.to_owned(),
                        line: self.line_no,
                        reason: "the first JSON line is not a `session` header with a string `id`"
                            .into(),
                    });
                }
                HeaderRead::BadVersion(found) => {
                    return Err(SessionError::UnknownVersion {
                        path: self.path.to_owned(),
                        line: self.line_no,
                        found,
                    });
                }
                HeaderRead::Malformed(error) => {
                    let problem = Problem {
                        line: self.line_no,
                        entry_id: None,
                        kind: ProblemKind::MalformedJson { error },
                    };
                    pending_before_header.push((start, buf.clone(), problem));
                }
            }
        };
        let version = session.original_version;
        self.v1_ids.push(None); // the header is object 0

        loop {
            buf.clear();
            let n = self.next_line(reader, &mut buf)?;
            if n == 0 {
                break;
            }
            let start = self.offset;
            self.offset += n as u64;
            self.line_no += 1;
            let has_newline = buf.last() == Some(&b'\n');
            tail.ends_with_newline = has_newline;
            trim_newline(&mut buf);
            if buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match read_entry(&buf) {
                LineRead::Entry(parsed) => {
                    self.accept(&mut session, *parsed, start, &buf, version, ids)?;
                }
                LineRead::NotAnObject => {
                    self.keep(&mut session, start, &buf, ProblemKind::NotAnObject);
                }
                LineRead::Malformed(error) => {
                    let kind = if has_newline {
                        ProblemKind::MalformedJson { error }
                    } else {
                        tail.torn = Some((self.line_no, start));
                        ProblemKind::TornLine {
                            bytes: buf.len() as u64,
                        }
                    };
                    self.keep(&mut session, start, &buf, kind);
                }
            }
        }
        tail.len = self.offset;
        session.finish_tree();
        session.leaf = session.entries.len().checked_sub(1).map(|i| i as u32);
        Ok((session, tail))
    }

    fn keep(&self, session: &mut Session, offset: u64, line: &[u8], kind: ProblemKind) {
        session.problems.push(Problem {
            line: self.line_no,
            entry_id: None,
            kind,
        });
        session.kept_lines.push(KeptLine {
            before_entry: session.entries.len(),
            before_header: false,
            source: self.source(offset, line),
        });
    }

    fn accept(
        &mut self,
        session: &mut Session,
        mut parsed: ParsedEntry,
        offset: u64,
        line: &[u8],
        version: u32,
        ids: &mut dyn IdSource,
    ) -> Result<(), SessionError> {
        let mut source = self.source(offset, line);
        if version < 2 {
            source = self.migrate_v1(&mut parsed, offset, line, ids)?;
        } else {
            if !parsed.has_id {
                parsed.missing.push("id");
            }
            if version < 3 {
                // The reference rewrites a migrated file by printing every
                // entry again with `JSON.stringify`, so every line of a v2
                // file takes its JavaScript form, not only the changed ones.
                let edit = LineEdit {
                    v1: None,
                    hook_role: parsed.hook_message_role,
                };
                source = self.migrated(offset, line, edit)?;
            }
        }
        let entry_id = (!parsed.entry.id.as_str().is_empty()).then(|| parsed.entry.id.clone());
        for field in parsed.missing.drain(..) {
            session.problems.push(Problem {
                line: self.line_no,
                entry_id: entry_id.clone(),
                kind: ProblemKind::MissingField { field },
            });
        }
        if let Some(error) = parsed.invalid.take() {
            session.problems.push(Problem {
                line: self.line_no,
                entry_id: entry_id.clone(),
                kind: ProblemKind::InvalidEntry { error },
            });
        }
        let mut kinds = std::mem::take(&mut self.v1_problems);
        crate::validate::entry_problems(&parsed.entry, &mut kinds);
        for kind in kinds {
            session.problems.push(Problem {
                line: self.line_no,
                entry_id: entry_id.clone(),
                kind,
            });
        }
        session.push_loaded(parsed.entry, source, self.line_no);
        Ok(())
    }

    /// v1 → v3 for one entry: a fresh id, the previous entry as parent,
    /// `firstKeptEntryIndex` resolved to an id, `hookMessage` renamed.
    fn migrate_v1(
        &mut self,
        parsed: &mut ParsedEntry,
        offset: u64,
        line: &[u8],
        ids: &mut dyn IdSource,
    ) -> Result<LineSource, SessionError> {
        let taken = &self.v1_taken;
        let id = fresh_id(ids, &|c| taken.contains(c));
        self.v1_taken.insert(id.clone());
        let parent = self.v1_ids.iter().rev().find_map(Clone::clone);
        self.v1_ids.push(Some(id.clone()));
        parsed.entry.id = id.clone();
        parsed.entry.parent_id.clone_from(&parent);
        parsed.has_id = true;
        let is_compaction = matches!(parsed.entry.body, EntryBody::Compaction(_));
        let first_kept = parsed.first_kept_entry_index.and_then(|index| {
            let resolved = if index.fract() != 0.0 {
                Err("is not a whole number")
            } else if index < 0.0 {
                Err("is negative")
            } else if index == 0.0 {
                Err("names the header")
            } else {
                self.v1_ids
                    .get(index as usize)
                    .cloned()
                    .flatten()
                    .ok_or("names no earlier entry")
            };
            match resolved {
                Ok(id) => Some(id),
                Err(reason) => {
                    if is_compaction {
                        self.v1_problems.push(ProblemKind::FirstKeptIndex {
                            index: {
                                let mut text = String::new();
                                crate::json::push_js_number(&mut text, index);
                                text
                            },
                            reason,
                        });
                    }
                    None
                }
            }
        });
        let is_compaction_with_index = parsed.first_kept_entry_index.is_some();
        if let EntryBody::Compaction(c) = &mut parsed.entry.body
            && is_compaction_with_index
        {
            c.first_kept_entry_id.clone_from(&first_kept);
        }
        let edit = LineEdit {
            v1: Some(V1Fields {
                id,
                parent,
                is_compaction,
                first_kept,
            }),
            hook_role: parsed.hook_message_role,
        };
        self.migrated(offset, line, edit)
    }

    /// Where a line that migration changes lives: in memory, printed at
    /// once, when the session has no file to read it back from; otherwise
    /// in the file, with the edit that prints it when it is read.
    fn migrated(
        &self,
        offset: u64,
        line: &[u8],
        edit: LineEdit,
    ) -> Result<LineSource, SessionError> {
        if self.keep_text {
            let text = edit.print(line).map_err(|e| self.invalid_data(e))?;
            return Ok(LineSource::Text(text.into_boxed_str()));
        }
        Ok(LineSource::Migrated {
            offset,
            len: line.len() as u64,
            edit: Box::new(edit),
        })
    }

    fn invalid_data(&self, e: serde_json::Error) -> SessionError {
        SessionError::Io {
            path: self.path.to_owned(),
            source: std::io::Error::new(std::io::ErrorKind::InvalidData, e),
        }
    }

    /// The line re-printed by `JSON.stringify` after `edit`.
    fn rewrite(
        &self,
        line: &[u8],
        edit: impl FnOnce(&mut serde_json::Map<String, Value>),
    ) -> Result<LineSource, SessionError> {
        let text = print_edited(line, edit).map_err(|e| self.invalid_data(e))?;
        Ok(LineSource::Text(text.into_boxed_str()))
    }
}

/// Reads the header of `path` only: `Ok(None)` for an empty file.
pub fn read_header_of(path: &Path) -> Result<Option<Header>, SessionError> {
    let file = open_regular(path)?;
    let mut reader = BufReader::new(file);
    let mut buf = Vec::new();
    let mut line = 0;
    let mut any = false;
    loop {
        buf.clear();
        if next_line(path, line + 1, &mut reader, &mut buf)? == 0 {
            return Ok(None);
        }
        line += 1;
        trim_newline(&mut buf);
        if buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        if !any && let Some(reason) = not_text(&buf) {
            return Err(SessionError::NotASession {
                path: path.to_owned(),
                line,
                reason,
            });
        }
        any = true;
        match read_header(&buf) {
            HeaderRead::Header(h) => return Ok(Some(h)),
            HeaderRead::Malformed(_) => {}
            HeaderRead::NotAHeader => {
                return Err(SessionError::NotASession {
                    path: path.to_owned(),
                    line,
                    reason: "the first JSON line is not a `session` header with a string `id`"
                        .into(),
                });
            }
            HeaderRead::BadVersion(found) => {
                return Err(SessionError::UnknownVersion {
                    path: path.to_owned(),
                    line,
                    found,
                });
            }
        }
    }
}
