//! A compaction as it runs: what pruning blanks and what the compaction is
//! measured against, decided once on the session as it is, before anything
//! is pruned. `musepi plan` and the compaction pipeline both start here, so
//! that the plan predicts the compaction: the same prune plan, the same
//! cut, the same regions, the same tokens.

use std::borrow::Cow;

use musepi_context_builder::{ArchiveBlocks, Tokenizer, context_tokens, estimate_context_at};
use musepi_session_model::{Replacement, Session};

use crate::adapted_keep_recent_tokens;
use crate::prepare::{NothingToCompact, Preparation, prepare};
use crate::prune::{PruneConfig, PrunePlan, apply_prune, plan_prune};
use crate::settings::CompactionSettings;

/// What is decided before pruning, on the session as it is.
#[derive(Debug, Clone, PartialEq)]
pub struct PruneFirst {
    /// What pruning blanks ([`plan_prune`]; empty when pruning is off).
    pub plan: PrunePlan,
    /// The entries it changes: staged in
    /// a journal ([`musepi_session_model::Journal::stage_replacements`]) or
    /// applied to a copy ([`PruneFirst::apply_to`]).
    pub changes: Vec<Replacement>,
    /// The settings to prepare the pruned session with: `keepRecentTokens`
    /// adapted against the estimate of the messages before pruning (the
    /// provider's usage measured them unpruned), and the adaptation off.
    pub settings: CompactionSettings,
    /// pi's estimate of the context at the leaf before pruning
    /// ([`estimate_context_at`]): the compaction's `tokensBefore`.
    pub tokens_before: u64,
    /// The context's tokens at the leaf before pruning ([`context_tokens`]),
    /// musepi's own size of the same context, shown beside it.
    pub context_tokens: u64,
}

/// Decides pruning and measures the session at `leaf` before anything is
/// pruned. `prune` is the prune configuration (`None`: no pruning);
/// `archive` supplies snapcompact archives for the context's tokens; `now`
/// stamps the pruned results.
pub fn prune_first(
    session: &Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
    prune: Option<&PruneConfig>,
    archive: Option<&dyn ArchiveBlocks>,
    now: i64,
) -> PruneFirst {
    let context_tokens = context_tokens(session, leaf, archive, Tokenizer::Heuristic);
    prune_first_measured(session, leaf, settings, prune, context_tokens, now)
}

/// [`prune_first`] with the context's tokens at `leaf` already known, as a
/// runtime that keeps them while entries are appended knows them:
/// `context_tokens` must be what [`context_tokens`] gives at `leaf` with the
/// heuristic tokenizer and the session's archives.
pub fn prune_first_measured(
    session: &Session,
    leaf: Option<usize>,
    settings: &CompactionSettings,
    prune: Option<&PruneConfig>,
    context_tokens: u64,
    now: i64,
) -> PruneFirst {
    let tokens_before = estimate_context_at(session, leaf).tokens;
    let plan = prune.map_or_else(PrunePlan::default, |c| plan_prune(session, leaf, c));
    let changes = if plan.is_empty() {
        Vec::new()
    } else {
        apply_prune(session, &plan, now)
    };
    PruneFirst {
        plan,
        changes,
        settings: CompactionSettings {
            keep_recent_tokens: adapted_keep_recent_tokens(session, leaf, settings),
            adapt_keep_recent: false,
            ..settings.clone()
        },
        tokens_before,
        context_tokens,
    }
}

impl PruneFirst {
    /// The session as pruning leaves it, from the session the changes were
    /// decided on: that session itself when nothing is pruned (no copy),
    /// else with the changes applied in memory (in place when it is owned,
    /// on a copy when it is borrowed).
    pub fn pruned<'s>(&self, session: Cow<'s, Session>) -> Cow<'s, Session> {
        if self.changes.is_empty() {
            return session;
        }
        let mut session = session.into_owned();
        self.apply_to(&mut session);
        Cow::Owned(session)
    }

    /// Applies the changes to `session`, a copy of the session they were
    /// decided on, in memory.
    pub fn apply_to(&self, session: &mut Session) {
        for change in &self.changes {
            session.replace(change.clone());
        }
    }

    /// Prepares the compaction at `leaf` over `pruned`, the session with the
    /// changes applied, with [`PruneFirst::settings`]; its `tokens_before`
    /// and `context_tokens` are those measured before pruning.
    pub fn prepare<'a>(
        &self,
        pruned: &'a Session,
        leaf: Option<usize>,
    ) -> Result<Preparation<'a>, NothingToCompact> {
        let mut prep = prepare(pruned, leaf, &self.settings)?;
        prep.tokens_before = self.tokens_before;
        prep.context_tokens = Some(self.context_tokens);
        Ok(prep)
    }
}
