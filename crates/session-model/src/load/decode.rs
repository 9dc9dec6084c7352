//! Decoding the entry lines of a file on every core.
//!
//! The lines after the header are read in chunks of whole lines. Each
//! chunk's lines are parsed into typed entries, and checked on their own,
//! by one of several threads; the decoded chunks come back in file order,
//! so the loader does the work that depends on what came before (ids,
//! parents, migration, the index) one line after another, exactly as if it
//! had parsed each line itself. A file of one chunk, or a process that may
//! use one core, is decoded on the calling thread.
//!
//! Memory stays bounded: a chunk's bytes are dropped once its lines are
//! taken, and at most twice as many chunks as there are decoders (about a
//! megabyte with two) are read ahead of the loader, however large the file
//! and however the threads are scheduled.

use std::collections::BTreeMap;
use std::io::{self, BufRead};
use std::sync::{Arc, Mutex, mpsc};

use crate::fsutil::{MAX_LINE_BYTES, read_line_capped};
use crate::problem::ProblemKind;
use crate::wire::{LineRead, ParsedEntry, read_entry};

/// How many bytes of whole lines a chunk holds (a longer line makes a
/// longer chunk).
pub(crate) const CHUNK_BYTES: usize = 256 << 10;

/// A run of whole lines of the file, decoded.
pub(crate) struct Chunk {
    /// The lines' bytes, newlines included.
    pub(crate) bytes: Vec<u8>,
    /// Each line, in file order.
    pub(crate) lines: Vec<Line>,
}

/// One line of a [`Chunk`].
pub(crate) struct Line {
    /// Where the line starts in its chunk.
    pub(crate) start: usize,
    /// Where it ends, its newline excluded.
    pub(crate) end: usize,
    /// Whether a newline ends it (only the file's last line may lack one).
    pub(crate) has_newline: bool,
    /// What it holds.
    pub(crate) read: Decoded,
}

impl Line {
    /// The bytes the line takes in the file, its newline included.
    pub(crate) fn file_len(&self) -> u64 {
        (self.end - self.start) as u64 + u64::from(self.has_newline)
    }
}

/// What a line holds.
pub(crate) enum Decoded {
    /// Nothing but whitespace.
    Blank,
    /// An entry, with the problems it has on its own.
    Entry(Box<ParsedEntry>, Vec<ProblemKind>),
    /// Valid JSON that is not an object.
    NotAnObject,
    /// Invalid JSON.
    Malformed(String),
}

/// Why reading stopped before the end of the file. It comes after the
/// chunk of the whole lines before it, so the loader meets it at its line.
pub(crate) enum Stop {
    /// The next line is longer than [`MAX_LINE_BYTES`].
    TooLong,
    /// Reading failed.
    Io(io::Error),
}

/// What the loader does with each decoded chunk: it takes the lines and
/// reads their bytes, which are then read into again for a later chunk.
pub(crate) type Take<'t, E> = dyn FnMut(Result<&mut Chunk, Stop>) -> Result<(), E> + 't;

/// Reads the rest of `reader` in chunks of whole lines, decodes them, and
/// hands each to `take` in file order, a [`Stop`] last if reading stopped
/// short. The first error `take` returns ends the reading and is returned.
pub(crate) fn decode_lines<E>(
    reader: &mut (dyn BufRead + Send),
    chunk_bytes: usize,
    take: &mut Take<'_, E>,
) -> Result<(), E> {
    let mut chunks = Chunks {
        reader,
        size: chunk_bytes,
        stop: None,
        done: false,
    };
    let Some(first) = chunks.next_chunk(None) else {
        return Ok(());
    };
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    if threads < 2 || chunks.is_exhausted() {
        let mut next = Some(first);
        while let Some(chunk) = next {
            let spare = hand_on(chunk.map(decode), take)?;
            next = chunks.next_chunk(spare);
        }
        return Ok(());
    }
    in_parallel(first, chunks, threads, decode, take)
}

/// Hands one chunk (or the stop) to `take`, and gives back its bytes.
fn hand_on<E>(chunk: Result<Chunk, Stop>, take: &mut Take<'_, E>) -> Result<Option<Vec<u8>>, E> {
    match chunk {
        Ok(mut chunk) => {
            take(Ok(&mut chunk))?;
            Ok(Some(chunk.bytes))
        }
        Err(stop) => take(Err(stop)).map(|()| None),
    }
}

/// [`decode_lines`] with `threads` threads that `decode` and one reading.
fn in_parallel<E>(
    first: Result<Vec<u8>, Stop>,
    mut chunks: Chunks<'_>,
    threads: usize,
    decode: fn(Vec<u8>) -> Chunk,
    take: &mut Take<'_, E>,
) -> Result<(), E> {
    type Job = (usize, Result<Vec<u8>, Stop>);
    std::thread::scope(|scope| {
        // A chunk is read only when fewer than `ahead` chunks are read and
        // not yet taken: the loader hands back a credit for each chunk it
        // takes, with the chunk's bytes to read the next one into. However
        // the threads are scheduled (a decoder held up while the other
        // decodes on), a few chunks are in memory at most.
        let ahead = 2 * threads;
        let (credit, credits) = mpsc::channel::<Option<Vec<u8>>>();
        let (jobs, queue) = mpsc::sync_channel::<Job>(1);
        let queue = Arc::new(Mutex::new(queue));
        let (done, results) = mpsc::sync_channel::<(usize, Result<Chunk, Stop>)>(1);
        scope.spawn(move || {
            let mut first = Some(first);
            for seq in 0.. {
                // Both fail once the loader or every decoder has stopped.
                let spare = if seq >= ahead {
                    let Ok(spare) = credits.recv() else { break };
                    spare
                } else {
                    None
                };
                let Some(job) = first.take().or_else(|| chunks.next_chunk(spare)) else {
                    break;
                };
                if jobs.send((seq, job)).is_err() {
                    break;
                }
            }
        });
        for _ in 0..threads {
            let queue = Arc::clone(&queue);
            let done = done.clone();
            scope.spawn(move || {
                loop {
                    // The lock is held only to take the next chunk.
                    let job = match queue.lock() {
                        Ok(queue) => queue.recv(),
                        Err(_) => break,
                    };
                    let Ok((seq, chunk)) = job else { break };
                    if done.send((seq, chunk.map(decode))).is_err() {
                        break;
                    }
                }
            });
        }
        drop(done);
        drop(queue);
        // Chunks finish out of order; hand them on in order. Returning
        // early drops `results`, which stops the decoders, then the reader.
        let mut next = 0;
        let mut early = BTreeMap::new();
        for (seq, chunk) in results {
            early.insert(seq, chunk);
            while let Some(chunk) = early.remove(&next) {
                next += 1;
                let spare = hand_on(chunk, take)?;
                // The reader has stopped when this fails: nothing to hand back.
                let _ = credit.send(spare);
            }
        }
        Ok(())
    })
}

/// The chunks of whole lines left in a reader.
struct Chunks<'r> {
    reader: &'r mut (dyn BufRead + Send),
    size: usize,
    /// Why reading stopped, to be told after the lines before it.
    stop: Option<Stop>,
    done: bool,
}

impl Chunks<'_> {
    /// Whether nothing is left to read.
    fn is_exhausted(&mut self) -> bool {
        self.done || (self.stop.is_none() && self.reader.fill_buf().is_ok_and(<[u8]>::is_empty))
    }

    /// Reads about `size` bytes into `spare` (the bytes of a chunk taken
    /// already, or a new buffer), then on to the end of the line they end
    /// in; the end of the file gives no bytes.
    fn read(&mut self, spare: Option<Vec<u8>>) -> Vec<u8> {
        // The file is read straight into the buffer (past the reader's own
        // buffer), over the old bytes of a spare one.
        let mut bytes = spare.unwrap_or_else(|| vec![0; self.size]);
        if bytes.len() < self.size {
            bytes.resize(self.size, 0);
        }
        let mut filled = 0;
        let mut failed = None;
        while filled < self.size {
            match self.reader.read(&mut bytes[filled..self.size]) {
                Ok(0) => break,
                Ok(n) => filled += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    failed = Some(Stop::Io(e));
                    break;
                }
            }
        }
        bytes.truncate(filled);
        // Whatever the failure, the whole lines read before it are decoded.
        let stopped = match failed {
            Some(stop) => Some(stop),
            None if bytes.is_empty() || bytes.last() == Some(&b'\n') => None,
            None => {
                let tail = bytes.len() - memchr::memrchr(b'\n', &bytes).map_or(0, |p| p + 1);
                let limit = MAX_LINE_BYTES.saturating_sub(tail as u64);
                match read_line_capped(self.reader, &mut bytes, limit) {
                    Ok(Some(_)) => None,
                    Ok(None) => Some(Stop::TooLong),
                    Err(e) => Some(Stop::Io(e)),
                }
            }
        };
        if let Some(stop) = stopped {
            bytes.truncate(memchr::memrchr(b'\n', &bytes).map_or(0, |p| p + 1));
            self.stop = Some(stop);
        }
        bytes
    }
}

impl Chunks<'_> {
    /// The next chunk's bytes, read into `spare` if given; then the stop,
    /// if reading stopped short; then nothing.
    fn next_chunk(&mut self, spare: Option<Vec<u8>>) -> Option<Result<Vec<u8>, Stop>> {
        if self.done {
            return None;
        }
        if let Some(stop) = self.stop.take() {
            self.done = true;
            return Some(Err(stop));
        }
        let bytes = self.read(spare);
        if bytes.is_empty() {
            // The end of the file, or a stop before any whole line.
            self.done = true;
            return self.stop.take().map(Err);
        }
        Some(Ok(bytes))
    }
}

/// Decodes every line of `bytes`.
fn decode(bytes: Vec<u8>) -> Chunk {
    let mut lines = Vec::new();
    let mut start = 0;
    while start < bytes.len() {
        let (end, has_newline) = match memchr::memchr(b'\n', &bytes[start..]) {
            Some(p) => (start + p, true),
            None => (bytes.len(), false),
        };
        let text = &bytes[start..end];
        let read = if text.iter().all(u8::is_ascii_whitespace) {
            Decoded::Blank
        } else {
            match read_entry(text) {
                LineRead::Entry(parsed) => {
                    let mut problems = Vec::new();
                    crate::validate::entry_problems(&parsed.entry, &mut problems);
                    Decoded::Entry(parsed, problems)
                }
                LineRead::NotAnObject => Decoded::NotAnObject,
                LineRead::Malformed(error) => Decoded::Malformed(error),
            }
        };
        lines.push(Line {
            start,
            end,
            has_newline,
            read,
        });
        start = end + usize::from(has_newline);
    }
    Chunk { bytes, lines }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, Read};
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Bytes in memory that tell how far they have been read.
    struct Watched {
        bytes: Vec<u8>,
        at: Arc<AtomicUsize>,
    }

    impl Read for Watched {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let at = self.at.load(Ordering::SeqCst);
            let n = buf.len().min(self.bytes.len() - at);
            buf[..n].copy_from_slice(&self.bytes[at..at + n]);
            self.at.store(at + n, Ordering::SeqCst);
            Ok(n)
        }
    }

    impl BufRead for Watched {
        fn fill_buf(&mut self) -> io::Result<&[u8]> {
            Ok(&self.bytes[self.at.load(Ordering::SeqCst)..])
        }
        fn consume(&mut self, n: usize) {
            self.at.fetch_add(n, Ordering::SeqCst);
        }
    }

    /// [`decode`], held up on the chunk with the line that says `stall`.
    fn held_up(bytes: Vec<u8>) -> Chunk {
        if memchr::memmem::find(&bytes, b"stall").is_some() {
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        decode(bytes)
    }

    #[test]
    fn a_decoder_held_up_keeps_the_reading_a_few_chunks_ahead_of_the_loader() {
        const CHUNK: usize = 1000;
        let line = |word: &str| format!("{{\"type\":\"custom\",\"customType\":\"{word:x<90}\"}}\n");
        // The second chunk is held up; the other decoder goes on with the rest.
        let text = line("a").repeat(20) + &line("stall") + &line("b").repeat(2000);
        let at = Arc::new(AtomicUsize::new(0));
        let mut reader = Watched {
            bytes: text.into_bytes(),
            at: Arc::clone(&at),
        };
        let mut chunks = Chunks {
            reader: &mut reader,
            size: CHUNK,
            stop: None,
            done: false,
        };
        let first = chunks.next_chunk(None).unwrap();
        let (mut lines, mut taken, mut furthest_ahead) = (0, 0, 0);
        let mut take = |chunk: Result<&mut Chunk, Stop>| -> Result<(), ()> {
            let chunk = chunk.map_err(|_| ())?;
            lines += chunk.lines.len();
            taken += chunk.bytes.len();
            furthest_ahead = furthest_ahead.max(at.load(Ordering::SeqCst) - taken);
            Ok(())
        };
        in_parallel(first, chunks, 2, held_up, &mut take).unwrap();
        assert_eq!(lines, 2021);
        // A chunk is CHUNK bytes and the rest of its last line; four (twice
        // the decoders) are read and not yet taken, and one is being read.
        let most = 5 * (CHUNK + line("").len());
        assert!(
            furthest_ahead <= most,
            "read {furthest_ahead} bytes ahead of the loader (at most {most})"
        );
    }
}
