//! `musepi serve`'s `context` and `plan` methods: the documents of
//! `musepi context --json` and `musepi plan --json`, from the open session
//! and the sizes the runtime keeps at its leaf (docs/protocol.md).

use std::borrow::Cow;

use musepi_protocol::cli::PlanAnswer;
use musepi_protocol::serve::{ContextParams, PlanParams};
use musepi_protocol::value;
use musepi_runtime::MaintenanceStrategy;
use musepi_runtime::compaction::{PruneFirst, Strategy, prune_first_measured};
use musepi_session_model::Session;
use serde_json::Value;

use super::methods::{Reply, Server, params};
use crate::commands::runtime::snap_strategy;
use crate::report::context::{Known, View, context_json};
use crate::report::plan::{Planned, planned_doc};

impl Server {
    pub(super) fn context(&mut self, params: &Value) -> Reply {
        let p: ContextParams = self::params(params)?;
        let leaf = self.leaf(p.leaf.as_deref())?;
        let (llm, full) = (p.llm.unwrap_or(false), p.full.unwrap_or(false));
        let runtime = self.runtime()?;
        // At the runtime's leaf, both sizes come from the account it keeps.
        let known = (leaf == runtime.journal().session().leaf_index()).then(|| Known {
            context_tokens: runtime.leaf_context_tokens(),
            measured: runtime.leaf_measured(),
        });
        let session = runtime.journal().session();
        let view = if llm { View::Llm } else { View::Context };
        Ok(value(&context_json(session, leaf, view, full, known)))
    }

    pub(super) fn plan(&mut self, params: &Value) -> Reply {
        let p: PlanParams = self::params(params)?;
        let leaf = self.leaf(p.leaf.as_deref())?;
        let show_prompts = p.show_prompts.unwrap_or(false);
        let (keep, reserve, window) = (p.keep_recent, p.reserve, p.context_window);
        let now = (self.clock())();
        let warnings = self.ctx.settings_warnings();
        let runtime = self.runtime()?;
        let s = runtime.settings();
        let mut compaction = s.compaction.clone();
        compaction.keep_recent_tokens = keep.unwrap_or(compaction.keep_recent_tokens);
        compaction.reserve_tokens = reserve.unwrap_or(compaction.reserve_tokens);
        let window = window.unwrap_or(s.context_window);
        let prune = s.prune();
        // The strategy the runtime's compaction runs, as `musepi plan`
        // shows the one `musepi compact` runs.
        let strategy = match s.strategy {
            MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off => {
                snap_strategy(s, runtime.reader().clone())
            }
            MaintenanceStrategy::Remote => Strategy::Remote,
            _ => Strategy::Llm,
        };
        let with_warnings = |doc: PlanAnswer| value(&doc.with_warnings(warnings.clone()));
        if leaf == runtime.journal().session().leaf_index() {
            // At the runtime's leaf: the sizes from its account, and the
            // pruned results staged in its journal for the preparation,
            // then undone, instead of a copy of the whole session.
            let tokens_before = runtime.leaf_context_tokens();
            let measured = runtime.leaf_measured();
            let session = runtime.journal().session();
            let step =
                prune_first_measured(session, leaf, &compaction, Some(&prune), tokens_before, now);
            let answer = |step: &PruneFirst, pruned: Cow<'_, Session>| {
                let planned =
                    Planned::decided(Cow::Borrowed(step), pruned, measured, &compaction, window);
                planned_doc(&planned, leaf, &compaction, show_prompts, &strategy)
            };
            if !step.changes.is_empty()
                && let Some(doc) = runtime.with_staged(step.changes.clone(), |pruned| {
                    answer(&step, Cow::Borrowed(pruned))
                })
            {
                return Ok(with_warnings(doc));
            }
            // Nothing to prune (the session itself), or the journal cannot
            // stage the changes (its file ends with a torn line, or has a
            // problem a rewrite would get wrong): the step decided above,
            // applied to a copy; pruning is not decided again.
            let session = runtime.journal().session();
            return Ok(with_warnings(answer(
                &step,
                step.pruned(Cow::Borrowed(session)),
            )));
        }
        let session = runtime.journal().session();
        let planned = Planned::new(
            Cow::Borrowed(session),
            leaf,
            &compaction,
            Some(&prune),
            window,
            now,
        );
        Ok(with_warnings(planned_doc(
            &planned,
            leaf,
            &compaction,
            show_prompts,
            &strategy,
        )))
    }
}
