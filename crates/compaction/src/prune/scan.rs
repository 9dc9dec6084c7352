//! What the prune passes read of the path to a leaf: its tool results with
//! the read path of their calls, where pruning may start, and the reads a
//! newer read superseded.

use std::collections::{HashMap, HashSet};

use musepi_context_builder::{estimate_tokens, has_url_scheme, strip_read_selector};
use musepi_session_model::{AgentMessage, AssistantMessage, EntryBody, Session};
use serde_json::Value;

use super::PruneConfig;

/// The supersede key of a read (docs/design.md, "Pruning"): the bare path, or the path with
/// its selector after `\0` (line ranges) or `\1` (`raw`/`conflicts`).
pub fn supersede_key(path: &str) -> Option<String> {
    if has_url_scheme(path) {
        return None;
    }
    let bare = strip_read_selector(path);
    if bare.len() == path.len() {
        return Some(bare);
    }
    let selector = &path[bare.len() + 1..];
    let mode = selector
        .split(':')
        .any(|c| c.eq_ignore_ascii_case("raw") || c.eq_ignore_ascii_case("conflicts"));
    Some(format!(
        "{bare}{}{selector}",
        if mode { '\u{1}' } else { '\u{0}' }
    ))
}

pub(super) struct ResultInfo<'a> {
    pub(super) pos: usize,
    pub(super) entry_index: usize,
    pub(super) entry_id: &'a str,
    pub(super) tool_name: &'a str,
    pub(super) read_path: Option<&'a str>,
    pub(super) is_error: bool,
    pub(super) useless: bool,
    pub(super) pruned: bool,
    pub(super) tokens: u64,
}

/// Tool results on `path`, oldest first, with the read path of their call:
/// the latest `read` call with the result's id before it on the path. A
/// path that starts after the root (the window) may hold results whose
/// call lies before it: those calls are looked up walking back from the
/// window's first entry ([`resolve_before`]), whose entries read it counts.
fn results<'a>(session: &'a Session, path: &[usize]) -> (Vec<ResultInfo<'a>>, usize) {
    let entries = session.entries();
    let mut read_paths: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::new();
    // Results whose call is not on `path` before them, by call id.
    let mut unresolved: HashMap<&str, Vec<usize>> = HashMap::new();
    for (pos, &i) in path.iter().enumerate() {
        match entries[i].message() {
            Some(AgentMessage::Assistant(a)) => {
                for (id, p) in read_calls(a) {
                    read_paths.insert(id, p);
                }
            }
            Some(m @ AgentMessage::ToolResult(t)) => {
                let read_path = if t.tool_name == "read" {
                    let found = read_paths.get(t.tool_call_id.as_str()).copied();
                    if found.is_none() {
                        unresolved
                            .entry(t.tool_call_id.as_str())
                            .or_default()
                            .push(out.len());
                    }
                    found
                } else {
                    None
                };
                out.push(ResultInfo {
                    pos,
                    entry_index: i,
                    entry_id: entries[i].id.as_str(),
                    tool_name: t.tool_name.as_str(),
                    read_path,
                    is_error: t.is_error,
                    useless: t.is_useless(),
                    pruned: t.pruned_at.is_some(),
                    tokens: estimate_tokens(m),
                });
            }
            _ => {}
        }
    }
    let walked = resolve_before(session, path, &mut unresolved, &mut out);
    (out, walked)
}

/// Finds, walking back from the parent of `path`'s first entry, the read
/// path of each result in `unresolved` (positions in `out` by call id): the
/// latest `read` call of its id before the path. The session's index of
/// call ids bounds the walk: an id no entry before the path names is not
/// looked for, and the walk stops at the depth of the oldest entry that
/// names one of the others. Returns how many entries it read.
fn resolve_before<'a>(
    session: &'a Session,
    path: &[usize],
    unresolved: &mut HashMap<&str, Vec<usize>>,
    out: &mut [ResultInfo<'a>],
) -> usize {
    let Some(&first) = path.first() else {
        return 0;
    };
    let start = session.path_summary(first).depth;
    let mut floor = u32::MAX;
    unresolved.retain(|id, _| {
        let oldest = session
            .entries_calling(id)
            .map(|i| session.path_summary(i).depth)
            .filter(|&d| d < start)
            .min();
        if let Some(d) = oldest {
            floor = floor.min(d);
        }
        oldest.is_some()
    });
    let entries = session.entries();
    let mut walked = 0;
    let mut cur = session.parent_index(first);
    while let Some(i) = cur {
        if unresolved.is_empty() || session.path_summary(i).depth < floor {
            break;
        }
        walked += 1;
        if let Some(AgentMessage::Assistant(a)) = entries[i].message() {
            // The latest call of an id before the window is the last one
            // this message names.
            let calls: Vec<_> = read_calls(a).collect();
            for (id, p) in calls.into_iter().rev() {
                for r in unresolved.remove(id).unwrap_or_default() {
                    out[r].read_path = Some(p);
                }
            }
        }
        cur = session.parent_index(i);
    }
    walked
}

/// The `(call id, path)` of each `read` call with a string path, in order.
fn read_calls(a: &AssistantMessage) -> impl Iterator<Item = (&str, &str)> {
    a.tool_calls()
        .filter_map(|call| match call.arguments.value().get("path") {
            Some(Value::String(p)) if call.name.as_str() == "read" => {
                Some((call.id.as_str(), p.as_str()))
            }
            _ => None,
        })
}

/// Results superseded by newer reads of the same file (docs/design.md, "Pruning").
fn superseded(results: &[ResultInfo<'_>], config: &PruneConfig) -> HashSet<usize> {
    let mut out = HashSet::new();
    let mut newer_ok: HashSet<String> = HashSet::new();
    let mut newer_any: HashSet<String> = HashSet::new();
    for r in results.iter().rev() {
        let Some(path) = r.read_path else { continue };
        if config.protected.covers(r.tool_name, Some(path)) {
            continue;
        }
        let Some(key) = supersede_key(path) else {
            continue;
        };
        let parent = key.split('\u{0}').next().unwrap_or(&key).to_owned();
        let complete_parent_newer = parent != key && newer_ok.contains(&parent);
        let hit = if r.is_error {
            newer_any.contains(&key) || complete_parent_newer
        } else {
            newer_ok.contains(&key) || complete_parent_newer
        };
        if hit && !r.pruned {
            out.insert(r.entry_index);
        }
        newer_any.insert(key.clone());
        if !r.is_error {
            newer_ok.insert(key);
        }
    }
    out
}

/// The boundary: the latest compaction's first kept entry on the path (0 if none).
fn boundary(session: &Session, path: &[usize]) -> usize {
    let entries = session.entries();
    path.iter()
        .rev()
        .find_map(|&i| match &entries[i].body {
            EntryBody::Compaction(c) => c.first_kept_entry_id.as_ref(),
            _ => None,
        })
        .and_then(|fk| path.iter().position(|&i| entries[i].id == *fk))
        .unwrap_or(0)
}

/// What both prune passes read of the path to a leaf.
pub(super) struct Scan<'a> {
    /// The path's entry indices, root first.
    pub(super) path: Vec<usize>,
    /// Its tool results.
    pub(super) results: Vec<ResultInfo<'a>>,
    /// The path position before which nothing is pruned.
    pub(super) boundary: usize,
    /// Entry indices of superseded reads (empty when `supersede_reads` is off).
    pub(super) superseded: HashSet<usize>,
}

/// How much of the path a prune pass reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reach {
    /// From the latest compaction's first kept entry on, when it can be
    /// found without walking the whole path (the answer is the same).
    Window,
    /// From the root (what the tests check the window against).
    #[cfg(test)]
    WholePath,
}

/// The path from the latest compaction's first kept entry to `leaf`, both
/// included, or `None` when the whole path must be read to find where
/// pruning may start: no compaction on the path, a latest compaction
/// without a first kept entry (an older one's boundary counts then), a
/// first kept entry that is not on the path, or ids the file repeats.
///
/// Nothing before that entry is ever pruned, and nothing before it changes
/// what is pruned after it: a read is superseded only by newer reads, a
/// result is protected by the age rule only by newer output, and the cache
/// rule counts only the messages after a result.
fn window(session: &Session, leaf: usize) -> Option<Vec<usize>> {
    if session.has_duplicate_ids() {
        return None;
    }
    let compaction = session.path_summary(leaf).compaction? as usize;
    let EntryBody::Compaction(c) = &session.entries()[compaction].body else {
        return None;
    };
    let first_kept = session.index_of(c.first_kept_entry_id.as_ref()?.as_ref())?;
    let depth = session.path_summary(first_kept).depth as usize;
    let path = session.path_indices_from(leaf, depth);
    (path.first() == Some(&first_kept)).then_some(path)
}

/// What both passes read of the path to `leaf`; `None` without a leaf.
pub(super) fn scan<'a>(
    session: &'a Session,
    leaf: Option<usize>,
    config: &PruneConfig,
    reach: Reach,
) -> Option<Scan<'a>> {
    let leaf = leaf?;
    let window = if reach == Reach::Window {
        window(session, leaf)
    } else {
        None
    };
    let (path, boundary) = if let Some(path) = window {
        (path, 0)
    } else {
        let path = session.path_indices(leaf);
        let boundary = boundary(session, &path);
        (path, boundary)
    };
    let (results, _) = results(session, &path);
    let superseded = if config.supersede_reads {
        superseded(&results, config)
    } else {
        HashSet::new()
    };
    Some(Scan {
        path,
        results,
        boundary,
        superseded,
    })
}

/// How many entries before the window at `leaf` the scan reads to find the
/// calls of the window's results (0 when the whole path is read).
#[cfg(test)]
pub(crate) fn walked_before_window(session: &Session, leaf: usize) -> usize {
    window(session, leaf).map_or(0, |path| results(session, &path).1)
}
