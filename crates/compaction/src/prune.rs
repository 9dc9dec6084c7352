//! Tool-output pruning and useless-result elision (docs/design.md, "Pruning"): stale
//! tool results are blanked in place, never removed, so calls and results
//! stay paired. Pruning returns the changed entries; the caller rewrites
//! the journal atomically.

use std::collections::{HashMap, HashSet};

use musepi_context_builder::{
    chars_to_tokens, estimate_tokens, has_url_scheme, strip_read_selector,
};
use musepi_session_model::json::{js_set, js_stringify, utf16_len};
use musepi_session_model::{
    AgentMessage, Content, ContentBlock, Entry, EntryBody, Session, SessionError,
};
use serde_json::{Value, json};

/// Placeholder for a result that aged out.
pub fn age_placeholder(tokens: u64) -> String {
    format!("[Output truncated - {tokens} tokens]")
}
/// Placeholder for a read that a newer read of the same file replaced.
pub const SUPERSEDED_NOTICE: &str = "[Superseded by a newer read of this file]";
/// Placeholder for a result its tool flagged as useless.
pub const USELESS_NOTICE: &str = "[Uneventful result elided]";

/// Pruning settings (docs/design.md, "Pruning").
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PruneConfig {
    /// The newest this many tokens of tool output are never age-pruned.
    pub protect_tokens: u64,
    /// Age-pruning happens only when it saves at least this much.
    pub minimum_savings: u64,
    /// Results smaller than this are never age-pruned.
    pub min_prune_tokens: u64,
    /// Useless results are blanked regardless of age.
    pub prune_useless: bool,
    /// Older reads of a file a newer read replaced are blanked.
    pub supersede_reads: bool,
    /// Tools whose results are never pruned.
    pub protected_tools: Vec<String>,
    /// Read paths whose results are never pruned (e.g. the active plan file).
    pub protected_paths: Vec<String>,
}

impl Default for PruneConfig {
    fn default() -> Self {
        Self {
            protect_tokens: 40_000,
            minimum_savings: 20_000,
            min_prune_tokens: 50,
            prune_useless: true,
            supersede_reads: true,
            protected_tools: vec!["skill".into()],
            protected_paths: Vec::new(),
        }
    }
}

/// Why a result was pruned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PruneKind {
    /// Older than the protected window.
    Age,
    /// A newer read of the same file exists.
    Superseded,
    /// Its tool flagged it as useless.
    Useless,
}

impl PruneKind {
    /// A stable name for JSON.
    pub fn name(self) -> &'static str {
        match self {
            Self::Age => "age",
            Self::Superseded => "superseded",
            Self::Useless => "useless",
        }
    }

    /// The text that replaces a result of `tokens` tokens pruned for this reason.
    fn placeholder(self, tokens: u64) -> String {
        match self {
            Self::Age => age_placeholder(tokens),
            Self::Superseded => SUPERSEDED_NOTICE.to_owned(),
            Self::Useless => USELESS_NOTICE.to_owned(),
        }
    }
}

/// One result to blank.
#[derive(Debug, Clone, PartialEq)]
pub struct PruneCandidate {
    /// Position of the tool-result entry.
    pub entry_index: usize,
    /// Why.
    pub kind: PruneKind,
    /// The placeholder text.
    pub placeholder: String,
    /// Estimated tokens of the original result.
    pub tokens: u64,
    /// Estimated tokens saved.
    pub saved: u64,
}

/// What pruning would do.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PrunePlan {
    /// The results to blank, newest first.
    pub candidates: Vec<PruneCandidate>,
    /// Total estimated savings.
    pub tokens_saved: u64,
}

impl PrunePlan {
    /// Whether nothing would change.
    pub fn is_empty(&self) -> bool {
        self.candidates.is_empty()
    }

    /// Adds `r` as a candidate pruned for `kind`, unless it is a useless
    /// result whose placeholder would save nothing.
    fn offer(&mut self, r: &ResultInfo<'_>, kind: PruneKind) {
        let placeholder = kind.placeholder(r.tokens);
        let saved = r.tokens.saturating_sub(placeholder_tokens(&placeholder));
        if kind == PruneKind::Useless && saved == 0 {
            return;
        }
        self.tokens_saved += saved;
        self.candidates.push(PruneCandidate {
            entry_index: r.entry_index,
            kind,
            placeholder,
            tokens: r.tokens,
            saved,
        });
    }
}

/// Whether a tool result is protected: a protected tool, a read of a
/// `skill://` path or of a protected path.
fn is_protected(config: &PruneConfig, tool_name: &str, read_path: Option<&str>) -> bool {
    config.protected_tools.iter().any(|t| t == tool_name)
        || read_path.is_some_and(|p| {
            p.starts_with("skill://") || config.protected_paths.iter().any(|q| q == p)
        })
}

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

struct ResultInfo<'a> {
    pos: usize,
    entry_index: usize,
    tool_name: &'a str,
    read_path: Option<&'a str>,
    is_error: bool,
    useless: bool,
    pruned: bool,
    tokens: u64,
}

/// Tool results on the path, oldest first, with the read path of their call.
fn results<'a>(session: &'a Session, path: &[usize]) -> Vec<ResultInfo<'a>> {
    let entries = session.entries();
    let mut read_paths: HashMap<&str, &str> = HashMap::new();
    let mut out = Vec::new();
    for (pos, &i) in path.iter().enumerate() {
        match entries[i].message() {
            Some(AgentMessage::Assistant(a)) => {
                for call in a.tool_calls() {
                    if call.name.as_str() == "read"
                        && let Some(Value::String(p)) = call.arguments.value().get("path")
                    {
                        read_paths.insert(call.id.as_str(), p.as_str());
                    }
                }
            }
            Some(m @ AgentMessage::ToolResult(t)) => out.push(ResultInfo {
                pos,
                entry_index: i,
                tool_name: t.tool_name.as_str(),
                read_path: (t.tool_name == "read")
                    .then(|| read_paths.get(t.tool_call_id.as_str()).copied())
                    .flatten(),
                is_error: t.is_error,
                useless: t.is_useless(),
                pruned: t.pruned_at.is_some(),
                tokens: estimate_tokens(m),
            }),
            _ => {}
        }
    }
    out
}

/// Results superseded by newer reads of the same file (docs/design.md, "Pruning").
fn superseded(results: &[ResultInfo<'_>], config: &PruneConfig) -> HashSet<usize> {
    let mut out = HashSet::new();
    let mut newer_ok: HashSet<String> = HashSet::new();
    let mut newer_any: HashSet<String> = HashSet::new();
    for r in results.iter().rev() {
        let Some(path) = r.read_path else { continue };
        if is_protected(config, r.tool_name, Some(path)) {
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
struct Scan<'a> {
    /// The path's entry indices, root first.
    path: Vec<usize>,
    /// Its tool results.
    results: Vec<ResultInfo<'a>>,
    /// The path position before which nothing is pruned.
    boundary: usize,
    /// Entry indices of superseded reads (empty when `supersede_reads` is off).
    superseded: HashSet<usize>,
}

/// What both passes read of the path to `leaf`; `None` without a leaf.
fn scan<'a>(session: &'a Session, leaf: Option<usize>, config: &PruneConfig) -> Option<Scan<'a>> {
    let path = session.path_indices(leaf?);
    let results = results(session, &path);
    let boundary = boundary(session, &path);
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

fn placeholder_tokens(s: &str) -> u64 {
    chars_to_tokens(utf16_len(s))
}

/// The threshold prune (`pruneToolOutputs`, docs/design.md, "Pruning"): superseded and
/// useless results anywhere after the boundary, and results older than the
/// protected window, if the total saving reaches `minimum_savings`.
pub fn plan_prune(session: &Session, leaf: Option<usize>, config: &PruneConfig) -> PrunePlan {
    let Some(scan) = scan(session, leaf, config) else {
        return PrunePlan::default();
    };
    let mut plan = PrunePlan::default();
    let mut accumulated = 0u64;
    for r in scan.results.iter().rev() {
        let tokens = r.tokens;
        if r.pruned || r.pos < scan.boundary || is_protected(config, r.tool_name, r.read_path) {
            accumulated += tokens;
            continue;
        }
        let kind = if scan.superseded.contains(&r.entry_index) {
            Some(PruneKind::Superseded)
        } else if config.prune_useless && r.useless {
            Some(PruneKind::Useless)
        } else if accumulated >= config.protect_tokens && tokens >= config.min_prune_tokens {
            Some(PruneKind::Age)
        } else {
            None
        };
        accumulated += tokens;
        if let Some(kind) = kind {
            plan.offer(r, kind);
        }
    }
    if plan.tokens_saved < config.minimum_savings {
        return PrunePlan::default();
    }
    plan
}

/// The per-turn pass (docs/design.md, "Pruning"): superseded reads and useless
/// results only, blanked when the messages after them are small enough
/// (≤ `suffix_token_limit`) not to disturb the prompt cache much, or all of
/// them when the session has been idle past the cache lifetime.
pub fn plan_stale_results(
    session: &Session,
    leaf: Option<usize>,
    config: &PruneConfig,
    suffix_token_limit: u64,
    idle: bool,
) -> PrunePlan {
    let Some(Scan {
        path,
        results,
        boundary,
        superseded,
    }) = scan(session, leaf, config)
    else {
        return PrunePlan::default();
    };
    // suffix[pos]: estimated tokens of every message after path position `pos`.
    let entries = session.entries();
    let mut suffix = vec![0u64; path.len() + 1];
    for pos in (0..path.len()).rev() {
        suffix[pos] = suffix[pos + 1] + entries[path[pos]].message().map_or(0, estimate_tokens);
    }
    let mut plan = PrunePlan::default();
    for r in results.iter().rev() {
        let kind = if superseded.contains(&r.entry_index) {
            PruneKind::Superseded
        } else if config.prune_useless && r.useless && !r.pruned {
            PruneKind::Useless
        } else {
            continue;
        };
        let cache_allows = idle || suffix[r.pos + 1] <= suffix_token_limit;
        if r.pos < boundary || is_protected(config, r.tool_name, r.read_path) || !cache_allows {
            continue;
        }
        plan.offer(r, kind);
    }
    plan
}

/// The changed entries of a plan: each candidate's content becomes exactly
/// one text block with its placeholder, and `prunedAt` is set to `now`.
/// Returns `(entry position, new entry, new line text)` for
/// [`musepi_session_model::Journal::replace_entries`].
pub fn apply_prune(
    session: &Session,
    plan: &PrunePlan,
    now: i64,
) -> Result<Vec<(usize, Entry, String)>, SessionError> {
    let mut out = Vec::with_capacity(plan.candidates.len());
    for c in &plan.candidates {
        let mut entry = session.entries()[c.entry_index].clone();
        if let EntryBody::Message(AgentMessage::ToolResult(t)) = &mut entry.body {
            t.content = Content::Blocks(vec![ContentBlock::text(c.placeholder.as_str())]);
            t.pruned_at = Some(now as f64);
        }
        let raw = session.raw_line(c.entry_index)?;
        let mut value: Value = serde_json::from_str(&raw).unwrap_or(Value::Null);
        if let Some(Value::Object(m)) = value.get_mut("message") {
            js_set(
                m,
                "content",
                json!([{"type": "text", "text": c.placeholder}]),
            );
            js_set(m, "prunedAt", json!(now));
        }
        out.push((c.entry_index, entry, js_stringify(&value)));
    }
    Ok(out)
}
