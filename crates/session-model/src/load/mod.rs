//! Loading a session from JSONL (docs/design.md, "The session file and its tree") and migrating it in memory
//! (docs/design.md, "The session file and its tree").
//!
//! The header is read first, then the entry lines are decoded on every
//! core (`decode.rs`) and taken in file order.

mod decode;
mod migration;

use std::io::{BufRead, BufReader};
use std::path::Path;

use crate::entry::Header;
use crate::error::SessionError;
use crate::fsutil::{next_line, not_text, open_regular, trim_newline};
use crate::id::{EntryId, IdSet, IdSource};
use crate::json::js_set;
use crate::migrate::LineEdit;
use crate::problem::{Problem, ProblemKind};
use crate::session::{KeptLine, LineSource, Session};
use crate::wire::{HeaderRead, ParsedEntry, read_header};
use decode::{Decoded, Line, Stop};

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
/// (100 ms) was an append in progress, not a torn write: the file is
/// read again (a few times at most) so the line is read whole.
pub fn load_file(path: &Path, ids: &mut dyn IdSource) -> Result<(Session, FileTail), SessionError> {
    // What the file holds when it is opened: lines another process appends
    // while it is read are left for later (past what the session has seen,
    // as after an append), so a writer that never stops cannot make the
    // read hold what it writes.
    let mut limit: Option<u64> = None;
    let mut tries = 0;
    loop {
        let file = open_regular(path)?;
        let len = match limit {
            Some(len) => len,
            None => file
                .metadata()
                .map_err(|source| SessionError::Io {
                    path: path.to_owned(),
                    source,
                })?
                .len(),
        };
        // A small buffer: the entry lines are read in chunks far larger,
        // straight into each chunk, past the buffer.
        let mut reader = BufReader::new(std::io::Read::take(file, len));
        let (mut session, tail) =
            Loader::new(path, false, decode::CHUNK_BYTES).run(&mut reader, ids)?;
        session.origin = Some(crate::journal::lines::file_origin(path));
        tries += 1;
        // A v1 file's ids come from `ids`: reading it again would number it anew.
        if tail.torn.is_none()
            || session.original_version() < 2
            || tries == TORN_RETRIES
            || !outgrown_within(path, tail.len, TORN_WAIT)
        {
            return Ok((session, tail));
        }
        // The last line was being written: read again up to its end, and
        // not the lines that follow it.
        limit = Some(end_of_line_from(path, tail.len)?);
    }
}

/// Where the line that runs past byte `from` of the file at `path` ends
/// (after its newline), or the file's length when it has none yet: the
/// line is still being written, and nothing follows it.
fn end_of_line_from(path: &Path, from: u64) -> Result<u64, SessionError> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let io = |source| SessionError::Io {
        path: path.to_owned(),
        source,
    };
    let mut file = open_regular(path)?;
    let len = file.metadata().map_err(io)?.len();
    file.seek(SeekFrom::Start(from)).map_err(io)?;
    let mut at = from;
    let mut buf = vec![0u8; 64 << 10];
    // Bounded by the longest line a file may have.
    while at < len && at - from <= crate::MAX_LINE_BYTES {
        let n = file.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        if let Some(i) = buf[..n].iter().position(|&b| b == b'\n') {
            return Ok(at + i as u64 + 1);
        }
        at += n as u64;
    }
    Ok(len.min(at.max(from)))
}

/// [`load_file`] of the first `len` bytes of the file only: what a rewrite
/// wrote and carried over, never what another process appends while it is
/// read, so reading the file back costs no more than the rewrite did.
pub(crate) fn load_file_prefix(
    path: &Path,
    len: u64,
    ids: &mut dyn IdSource,
) -> Result<(Session, FileTail), SessionError> {
    let file = open_regular(path)?;
    let mut reader = BufReader::new(std::io::Read::take(file, len));
    let (mut session, tail) =
        Loader::new(path, false, decode::CHUNK_BYTES).run(&mut reader, ids)?;
    session.origin = Some(crate::journal::lines::file_origin(path));
    Ok((session, tail))
}

/// How many times [`load_file`] reads a file whose last line grows.
const TORN_RETRIES: u32 = 20;

/// How long [`load_file`] waits for a torn last line to grow before it
/// calls it torn. A writer can be stopped between the pieces of one line
/// (a write that crosses a page boundary is copied a page at a time, and a
/// busy machine may not run the writer again for several milliseconds), so
/// the wait is far longer than one write takes; a file that really is
/// torn costs this once per read.
const TORN_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

/// Whether the file at `path` grows past `len` bytes within `wait`, looked
/// at every 2 ms.
fn outgrown_within(path: &Path, len: u64, wait: std::time::Duration) -> bool {
    let start = std::time::Instant::now();
    loop {
        std::thread::sleep(std::time::Duration::from_millis(2));
        if std::fs::metadata(path).is_ok_and(|m| m.len() > len) {
            return true;
        }
        if start.elapsed() >= wait {
            return false;
        }
    }
}

/// Reads a session from bytes in memory (standard input, tests).
///
/// `name` is used in error messages.
pub fn load_bytes(
    name: &Path,
    bytes: &[u8],
    ids: &mut dyn IdSource,
) -> Result<Session, SessionError> {
    load_bytes_in_chunks(name, bytes, ids, decode::CHUNK_BYTES)
}

/// [`load_bytes`] with entry lines decoded in chunks of about `chunk_bytes`.
fn load_bytes_in_chunks(
    name: &Path,
    bytes: &[u8],
    ids: &mut dyn IdSource,
    chunk_bytes: usize,
) -> Result<Session, SessionError> {
    let mut reader = bytes;
    Loader::new(name, true, chunk_bytes)
        .run(&mut reader, ids)
        .map(|(s, _)| s)
}

struct Loader<'p> {
    path: &'p Path,
    keep_text: bool,
    /// How many bytes of lines are decoded together.
    chunk_bytes: usize,
    /// The version the file was written in.
    version: u32,
    line_no: u64,
    offset: u64,
    /// v1 migration: ids by position in the parsed-object list (header = 0).
    v1_ids: Vec<Option<EntryId>>,
    v1_taken: IdSet,
    /// Problems migration found with the line being read.
    v1_problems: Vec<ProblemKind>,
}

impl<'p> Loader<'p> {
    fn new(path: &'p Path, keep_text: bool, chunk_bytes: usize) -> Self {
        Self {
            path,
            keep_text,
            chunk_bytes,
            version: crate::CURRENT_VERSION,
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
        reader: &mut (dyn BufRead + Send),
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
        self.version = session.original_version;
        self.v1_ids.push(None); // the header is object 0

        decode::decode_lines(reader, self.chunk_bytes, &mut |chunk| {
            let chunk = chunk.map_err(|stop| self.stopped(stop))?;
            for line in std::mem::take(&mut chunk.lines) {
                self.line(&mut session, &chunk.bytes, line, &mut tail, ids)?;
            }
            Ok(())
        })?;
        tail.len = self.offset;
        session.finish_tree();
        session.leaf = session.entries.len().checked_sub(1).map(|i| i as u32);
        Ok((session, tail))
    }

    /// Takes one decoded line of `bytes`.
    fn line(
        &mut self,
        session: &mut Session,
        bytes: &[u8],
        line: Line,
        tail: &mut FileTail,
        ids: &mut dyn IdSource,
    ) -> Result<(), SessionError> {
        let start = self.offset;
        self.offset += line.file_len();
        self.line_no += 1;
        tail.ends_with_newline = line.has_newline;
        let text = &bytes[line.start..line.end];
        match line.read {
            Decoded::Blank => {}
            Decoded::Entry(parsed, own) => self.accept(session, *parsed, own, start, text, ids)?,
            Decoded::NotAnObject => self.keep(session, start, text, ProblemKind::NotAnObject),
            Decoded::Malformed(error) => {
                let kind = if line.has_newline {
                    ProblemKind::MalformedJson { error }
                } else {
                    tail.torn = Some((self.line_no, start));
                    ProblemKind::TornLine {
                        bytes: text.len() as u64,
                    }
                };
                self.keep(session, start, text, kind);
            }
        }
        Ok(())
    }

    /// The error of reading that stopped before the line after the last one taken.
    fn stopped(&self, stop: Stop) -> SessionError {
        match stop {
            Stop::TooLong => SessionError::LineTooLong {
                path: self.path.to_owned(),
                line: self.line_no + 1,
                limit: crate::MAX_LINE_BYTES,
            },
            Stop::Io(source) => SessionError::Io {
                path: self.path.to_owned(),
                source,
            },
        }
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
        own: Vec<ProblemKind>,
        offset: u64,
        line: &[u8],
        ids: &mut dyn IdSource,
    ) -> Result<(), SessionError> {
        let version = self.version;
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
                    pruned: None,
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
        // Migration's problems first, then the entry's own (found when it was decoded).
        let mut kinds = std::mem::take(&mut self.v1_problems);
        kinds.extend(own);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::SequentialIds;

    /// A v3 file with a problem of every kind a line can have on its own or
    /// with the lines before it, and a torn last line.
    const V3: &str = concat!(
        "\n",
        "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
        "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"héllo 😀\\n\\\"x\\\"\"}}\n",
        "   \n",
        "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"timestamp\":\"t\",\"message\":{\"role\":\"assistant\",\"content\":[{\"type\":\"toolCall\",\"id\":\"c1\",\"name\":\"bash\",\"arguments\":\"ls\"}]}}\n",
        "{not json\n",
        "[1,2]\n",
        "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"b\",\"timestamp\":\"t\",\"message\":{\"role\":\"wizard\"}}\n",
        "{\"type\":\"message\",\"id\":\"c\",\"parentId\":\"nowhere\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"again\"}}\n",
        "{\"type\":\"label\",\"id\":\"d\",\"id\":\"d2\",\"parentId\":\"c\",\"timestamp\":\"t\",\"targetId\":\"a\",\"label\":\"start\"}\n",
        "{\"type\":\"compaction\",\"id\":\"e\",\"parentId\":\"d2\",\"timestamp\":\"t\",\"summary\":\"s\",\"firstKeptEntryId\":\"zz\",\"tokensBefore\":1}\n",
        "{\"type\":\"message\",\"id\":\"f\",\"parentId\":\"e\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"tor",
    );

    /// A v1 file: ids, parents and the first kept entry come from migration.
    const V1: &str = concat!(
        "{\"type\":\"session\",\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
        "{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"one\"}}\n",
        "{broken\n",
        "{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"hookMessage\",\"customType\":\"k\",\"content\":\"two\"}}\n",
        "{\"type\":\"compaction\",\"timestamp\":\"t\",\"summary\":\"s\",\"firstKeptEntryIndex\":1,\"tokensBefore\":5}\n",
        "{\"type\":\"compaction\",\"timestamp\":\"t\",\"summary\":\"s\",\"firstKeptEntryIndex\":9,\"tokensBefore\":5}\n",
        "{\"type\":\"message\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"three\"}}\n",
    );

    /// Everything loading gives, in words.
    fn loaded(text: &str, keep_text: bool, chunk_bytes: usize) -> String {
        let mut reader = text.as_bytes();
        let (session, tail) = Loader::new(Path::new("f.jsonl"), keep_text, chunk_bytes)
            .run(&mut reader, &mut SequentialIds::new())
            .unwrap();
        format!("{session:#?}\n{tail:?}")
    }

    #[test]
    fn lines_decoded_in_chunks_on_every_core_load_as_one_after_another() {
        for text in [V3, V1] {
            for keep_text in [false, true] {
                // One chunk: decoded on this thread, line after line.
                let whole = loaded(text, keep_text, 1 << 16);
                // A chunk per line, a few lines per chunk: on other threads.
                for chunk_bytes in [1, 40, 300] {
                    assert_eq!(loaded(text, keep_text, chunk_bytes), whole, "{chunk_bytes}");
                }
            }
        }
        // The file's problems are all there, in line order.
        let mut reader = V3.as_bytes();
        let (session, tail) = Loader::new(Path::new("f.jsonl"), false, 1)
            .run(&mut reader, &mut SequentialIds::new())
            .unwrap();
        let problems: Vec<(u64, String)> = session
            .problems()
            .iter()
            .map(|p| (p.line, p.kind.to_string()))
            .collect();
        let lines: Vec<u64> = problems.iter().map(|(line, _)| *line).collect();
        assert_eq!(lines, [5, 6, 7, 8, 9, 9, 11, 12], "{problems:#?}");
        let words = [
            "arguments",
            "malformed",
            "not an object",
            "role",
            "duplicate",
            "parent",
            "names no entry",
            "torn",
        ];
        for ((_, problem), word) in problems.iter().zip(words) {
            assert!(problem.contains(word), "{problem} (expected {word})");
        }
        assert_eq!(tail.torn.map(|(line, _)| line), Some(12));
        assert_eq!(session.len(), 6);
        assert_eq!(session.line_of(5), 11);
    }

    /// A line its writer was stopped in the middle of, for a while, is read
    /// whole once the writer finishes it, not reported torn: the loader
    /// waits for the file to outgrow the piece it read. A round in which
    /// the busy machine held the writer back longer than the loader waits
    /// cannot tell, and is run again.
    #[test]
    fn a_line_whose_writer_pauses_in_the_middle_is_read_whole() {
        use std::io::Write;
        use std::time::{Duration, Instant};
        let dir = tempfile::tempdir().unwrap();
        let head = concat!(
            "{\"type\":\"session\",\"version\":3,\"id\":\"s\",\"timestamp\":\"2025-01-01T00:00:00.000Z\",\"cwd\":\"/w\"}\n",
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null,\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n",
        );
        let line = "{\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\",\"timestamp\":\"t\",\"message\":{\"role\":\"user\",\"content\":\"again\"}}\n";
        let (first, rest) = line.split_at(line.len() / 2);
        // Longer than the 2 ms a single look would wait, well within TORN_WAIT.
        let pause = Duration::from_millis(20);
        for round in 0..20 {
            let path = dir.path().join(format!("s{round}.jsonl"));
            std::fs::write(&path, format!("{head}{first}")).unwrap();
            let writer = {
                let path = path.clone();
                std::thread::spawn(move || {
                    let started = Instant::now();
                    std::thread::sleep(pause);
                    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
                    f.write_all(rest.as_bytes()).unwrap();
                    started.elapsed()
                })
            };
            let (session, tail) = load_file(&path, &mut SequentialIds::new()).unwrap();
            let paused = writer.join().unwrap();
            if paused >= TORN_WAIT / 2 {
                continue;
            }
            assert_eq!(tail.torn, None, "round {round}: {:?}", session.problems());
            assert_eq!(session.len(), 2, "round {round}");
            assert!(tail.ends_with_newline);
            return;
        }
        panic!("in 20 rounds the machine never let the writer finish its line in time");
    }
}
