//! The benchmark cases. Each is one function from the session file to a
//! JSON detail (counts that show the work was done); the first is the
//! baseline every other case is compared with.

use std::path::Path;

use musepi_session_model::{Journal, SequentialIds};
use serde_json::{Value, json};

use crate::BoxError;

/// One case.
pub(crate) struct Case {
    pub(crate) name: &'static str,
    pub(crate) run: fn(&Path) -> Result<Value, BoxError>,
}

/// Every case, the baseline first.
pub(crate) const CASES: &[Case] = &[
    Case {
        name: "floor",
        run: crate::floor::floor,
    },
    Case {
        name: "open",
        run: open,
    },
    Case {
        name: "context",
        run: context,
    },
    Case {
        name: "plan",
        run: plan,
    },
    Case {
        name: "cli-stats",
        run: crate::process::stats,
    },
    Case {
        name: "cli-plan",
        run: crate::process::plan,
    },
    Case {
        name: "cli-compact",
        run: crate::process::compact,
    },
    Case {
        name: "serve",
        run: crate::serve::serve,
    },
    Case {
        name: "snap-render",
        run: crate::snap::render,
    },
    Case {
        name: "snap-text",
        run: crate::snap::compact_text,
    },
    Case {
        name: "snap-png",
        run: crate::snap::compact_png,
    },
];

/// session-model: `Journal::open` (parse, index, tree links), then the
/// path from the root to the leaf.
fn open(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let leaf = session.leaf_id().map(|l| l.as_str().to_owned());
    let path_len = session.branch(None)?.len();
    Ok(json!({
        "entries": session.len(),
        "problems": session.problems().len(),
        "leaf": leaf,
        "pathLength": path_len,
    }))
}

/// `open`, then the context at the leaf and its token count; the detail's
/// `stepSeconds` is the time after the session is open.
fn context(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let start = std::time::Instant::now();
    let ctx = musepi_context_builder::build_context(session);
    let tokens = ctx.estimated_tokens();
    let estimate = musepi_context_builder::estimate_context_tokens(ctx.agent_messages());
    let step = start.elapsed().as_secs_f64();
    Ok(json!({
        "messages": ctx.messages.len(),
        "tokens": tokens,
        "contextTokens": estimate.tokens,
        "stepSeconds": step,
    }))
}

/// `open`, then a compaction plan at the leaf (prune plan, preparation
/// with the cut, regions and file lists); `stepSeconds` is the time after
/// the session is open.
fn plan(path: &Path) -> Result<Value, BoxError> {
    let journal = Journal::open(path, &mut SequentialIds::new())?;
    let session = journal.session();
    let start = std::time::Instant::now();
    let settings = musepi_compaction::CompactionSettings::default();
    let prune = musepi_compaction::plan_prune(
        session,
        session.leaf_index(),
        &musepi_compaction::PruneConfig::default(),
    );
    // The generated file ends on a compaction: plan at its parent, as a
    // session would be planned before compacting.
    let leaf = session
        .leaf_index()
        .and_then(|l| match session.entries()[l].body {
            musepi_session_model::EntryBody::Compaction(_) => session.parent_index(l),
            _ => Some(l),
        });
    let prep = musepi_compaction::prepare(session, leaf, &settings);
    let step = start.elapsed().as_secs_f64();
    let (summarize, kept) = prep.as_ref().map_or((0, 0), |p| {
        (p.messages_to_summarize.len(), p.recent_messages.len())
    });
    Ok(json!({
        "pruneCandidates": prune.candidates.len(),
        "prepared": prep.is_ok(),
        "summarize": summarize,
        "kept": kept,
        "stepSeconds": step,
    }))
}
