//! Tool-output pruning and useless-result elision (docs/design.md, "Pruning"): stale
//! tool results are blanked in place, never removed, so calls and results
//! stay paired. Pruning returns the changed entries; the caller rewrites
//! the journal atomically.

mod scan;

use musepi_context_builder::{chars_to_tokens, estimate_tokens};
use musepi_session_model::json::utf16_len;
use musepi_session_model::{Replacement, Session};

pub(crate) use scan::Reach;
pub use scan::supersede_key;
#[cfg(test)]
pub(crate) use scan::walked_before_window;
use scan::{ResultInfo, Scan, scan};

/// The notice of a result that aged out, `N` tokens long.
pub fn age_notice(tokens: u64) -> String {
    format!("Output truncated - {tokens} tokens")
}
/// The notice of a read that a newer read of the same file replaced.
pub const SUPERSEDED_NOTICE: &str = "Superseded by a newer read of this file";
/// The notice of a result its tool flagged as useless.
pub const USELESS_NOTICE: &str = "Uneventful result elided";

/// The placeholder a pruned result's content becomes: the notice, and how
/// to get the original back from the prune store, where the write that
/// blanks it keeps it first (docs/design.md, "The prune store").
///
/// ```
/// use musepi_compaction::{SUPERSEDED_NOTICE, placeholder};
///
/// assert_eq!(
///     placeholder(SUPERSEDED_NOTICE, "0000001a"),
///     "[Superseded by a newer read of this file; original kept: recall entry 0000001a]"
/// );
/// ```
pub fn placeholder(notice: &str, entry_id: &str) -> String {
    format!("[{notice}; original kept: recall entry {entry_id}]")
}

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
    /// The results never pruned, whatever their age.
    pub protected: Protected,
}

/// The tool results pruning never touches: those of protected tools, and
/// reads of `skill://` paths or of protected paths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    /// Tools whose results are never pruned (by default `skill`).
    pub tools: Vec<String>,
    /// Read paths whose results are never pruned (e.g. the active plan file).
    pub paths: Vec<String>,
}

impl Default for Protected {
    fn default() -> Self {
        Self {
            tools: vec!["skill".into()],
            paths: Vec::new(),
        }
    }
}

impl Protected {
    /// Whether the result of a `tool_name` call, reading `read_path` when
    /// it is a read, is protected.
    ///
    /// ```
    /// use musepi_compaction::Protected;
    ///
    /// let protected = Protected {
    ///     paths: vec!["PLAN.md".into()],
    ///     ..Protected::default()
    /// };
    /// assert!(protected.covers("skill", None));
    /// assert!(protected.covers("read", Some("skill://notes")));
    /// assert!(protected.covers("read", Some("PLAN.md")));
    /// assert!(!protected.covers("read", Some("src/plan.md")));
    /// assert!(!protected.covers("bash", None));
    /// ```
    pub fn covers(&self, tool_name: &str, read_path: Option<&str>) -> bool {
        self.tools.iter().any(|t| t == tool_name)
            || read_path
                .is_some_and(|p| p.starts_with("skill://") || self.paths.iter().any(|q| q == p))
    }
}

impl Default for PruneConfig {
    fn default() -> Self {
        Self {
            protect_tokens: 40_000,
            minimum_savings: 20_000,
            min_prune_tokens: 50,
            prune_useless: true,
            supersede_reads: true,
            protected: Protected::default(),
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

    /// The text that replaces the result `entry_id` of `tokens` tokens
    /// pruned for this reason.
    fn placeholder(self, tokens: u64, entry_id: &str) -> String {
        match self {
            Self::Age => placeholder(&age_notice(tokens), entry_id),
            Self::Superseded => placeholder(SUPERSEDED_NOTICE, entry_id),
            Self::Useless => placeholder(USELESS_NOTICE, entry_id),
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
        let placeholder = kind.placeholder(r.tokens, r.entry_id);
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

fn placeholder_tokens(s: &str) -> u64 {
    chars_to_tokens(utf16_len(s))
}

/// The threshold prune (`pruneToolOutputs`, docs/design.md, "Pruning"): superseded and
/// useless results anywhere after the boundary, and results older than the
/// protected window, if the total saving reaches `minimum_savings`.
///
/// It reads the path from the latest compaction's first kept entry on, so
/// its cost follows the history since that compaction, not the session.
pub fn plan_prune(session: &Session, leaf: Option<usize>, config: &PruneConfig) -> PrunePlan {
    plan_prune_reaching(session, leaf, config, Reach::Window)
}

/// [`plan_prune`], reading as much of the path as `reach` says.
pub(crate) fn plan_prune_reaching(
    session: &Session,
    leaf: Option<usize>,
    config: &PruneConfig,
    reach: Reach,
) -> PrunePlan {
    let Some(scan) = scan(session, leaf, config, reach) else {
        return PrunePlan::default();
    };
    let mut plan = PrunePlan::default();
    let mut accumulated = 0u64;
    for r in scan.results.iter().rev() {
        let tokens = r.tokens;
        if r.pruned || r.pos < scan.boundary || config.protected.covers(r.tool_name, r.read_path) {
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
/// them when the session has been idle past the cache lifetime. Like
/// [`plan_prune`], it reads the path from the latest compaction's first
/// kept entry on.
pub fn plan_stale_results(
    session: &Session,
    leaf: Option<usize>,
    config: &PruneConfig,
    suffix_token_limit: u64,
    idle: bool,
) -> PrunePlan {
    let stale = Stale {
        suffix_token_limit,
        idle,
    };
    plan_stale_reaching(session, leaf, config, stale, Reach::Window)
}

/// When the per-turn pass may blank a result.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stale {
    /// The most tokens of messages after a result that still allow it.
    pub suffix_token_limit: u64,
    /// Whether the session was idle past the cache lifetime.
    pub idle: bool,
}

/// [`plan_stale_results`], reading as much of the path as `reach` says.
pub(crate) fn plan_stale_reaching(
    session: &Session,
    leaf: Option<usize>,
    config: &PruneConfig,
    stale: Stale,
    reach: Reach,
) -> PrunePlan {
    let Stale {
        suffix_token_limit,
        idle,
    } = stale;
    let Some(Scan {
        path,
        results,
        boundary,
        superseded,
    }) = scan(session, leaf, config, reach)
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
        if r.pos < boundary || config.protected.covers(r.tool_name, r.read_path) || !cache_allows {
            continue;
        }
        plan.offer(r, kind);
    }
    plan
}

/// The changed entries of a plan: each candidate's content becomes exactly
/// one text block with its placeholder, and `prunedAt` is set to `now`
/// ([`Replacement::pruned`]), for
/// [`musepi_session_model::Journal::replace_entries`]. No line is read:
/// each new line is printed from the file when it is written.
pub fn apply_prune(session: &Session, plan: &PrunePlan, now: i64) -> Vec<Replacement> {
    // A candidate is a tool result.
    plan.candidates
        .iter()
        .filter_map(|c| Replacement::pruned(session, c.entry_index, &c.placeholder, now))
        .collect()
}
