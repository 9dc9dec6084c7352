//! What `-v` and `-vv` say on stderr for `plan` and `compact`: each
//! decision a compaction takes, and why (the strategy, the kept window and
//! its adaptation to the provider's usage, the cut, the threshold, the
//! pruning); `-vv` adds every message summarized or kept.

use musepi_runtime::MaintenanceStrategy;
use musepi_runtime::compaction::Strategy;
use musepi_runtime::compaction::{CompactionSettings, Preparation, PruneConfig};
use musepi_session_model::Session;

use crate::ctx::Ctx;
use crate::output::{escape_controls, note, thousands};
use crate::report::plan::{Planned, tokens};

/// Why the strategy is the one it is, in the order [`super::strategy`]
/// decides: `--strategy`, else `--default-strategy` when the settings name
/// none, else the settings (instructions asking for a model's summary),
/// else the built-in default.
pub(crate) fn strategy_reason(
    strategy: &Strategy,
    flag: Option<MaintenanceStrategy>,
    default: Option<MaintenanceStrategy>,
    settings_named: bool,
    settings_strategy: MaintenanceStrategy,
    instructions: bool,
) -> String {
    let name = strategy.name();
    if let Some(f) = flag {
        return format!("strategy {name}: --strategy {}", f.name());
    }
    if let (Some(d), false) = (default, settings_named) {
        let d = d.name();
        return if instructions && d != "llm" {
            format!(
                "strategy {name}: --instructions ask for a summary by the model, over --default-strategy {d}"
            )
        } else {
            format!("strategy {name}: --default-strategy {d}, as no settings file names one")
        };
    }
    if settings_named {
        let set = match settings_strategy {
            MaintenanceStrategy::ContextFull => "llm",
            MaintenanceStrategy::Remote => "remote",
            _ => "snapcompact",
        };
        return format!("strategy {name}: the settings' compaction.strategy is {set}");
    }
    if instructions {
        return format!("strategy {name}: --instructions ask for a summary by the model");
    }
    format!(
        "strategy {name}: the default (no --strategy, and no settings file names compaction.strategy)"
    )
}

/// The decisions of a planned compaction, one line each; with `very`
/// (`-vv`) each message summarized, in the turn prefix or kept, too.
pub(crate) fn lines(
    strategy_reason: &str,
    planned: &Planned<'_>,
    prep: &Preparation<'_>,
    settings: &CompactionSettings,
    prune: Option<&PruneConfig>,
    very: bool,
) -> Vec<String> {
    let session = planned.pruned.as_ref();
    let mut out = vec![strategy_reason.to_owned()];
    let configured = settings.keep_recent_tokens;
    let kept = prep.keep_recent_tokens;
    out.push(if kept == configured {
        format!(
            "kept window: the last {} tokens (keepRecentTokens; no provider usage shows musepi's estimate runs low)",
            thousands(kept)
        )
    } else {
        format!(
            "kept window: the last {} tokens: keepRecentTokens {} scaled by {:.2}, the provider's reported prompt tokens over musepi's estimate of the same messages",
            thousands(kept),
            thousands(configured),
            kept as f64 / configured.max(1) as f64
        )
    });
    let first = escape_controls(prep.first_kept_entry_id.as_str()).into_owned();
    out.push(match prep.turn_start_entry() {
        Some(ts) if prep.cut.is_split_turn => format!(
            "cut: keeps from {first}, where the kept window begins inside a turn; the turn started at {}, so its first {} are summarized apart as the turn prefix",
            escape_controls(session.entries()[ts].id.as_str()),
            crate::output::counted(prep.turn_prefix_messages.len(), "message", "messages")
        ),
        _ => format!("cut: keeps from {first}, the start of the turn where the kept window begins"),
    });
    out.push(format!(
        "threshold: {} ({})",
        planned.threshold_text(),
        if planned.over_threshold() {
            "an automatic compaction would run now"
        } else {
            "an automatic compaction would wait; an explicit one runs anyway"
        }
    ));
    out.push(match prune {
        None => "pruning: off (--no-prune)".to_owned(),
        Some(p) if planned.step.plan.is_empty() => format!(
            "pruning: nothing: what it could blank (superseded reads, useless results, tool output older than the newest {} tokens) would not save the minimum of {} tokens (--min-saving of prune)",
            thousands(p.protect_tokens),
            thousands(p.minimum_savings)
        ),
        Some(_) => format!(
            "pruning first: {}",
            crate::report::plan::prune_text(&planned.step.plan, "saves")
        ),
    });
    if very {
        let rows = [
            ("summarize", &prep.messages_to_summarize),
            ("turn prefix", &prep.turn_prefix_messages),
            ("keep", &prep.recent_messages),
        ];
        for (what, messages) in rows {
            out.push(format!(
                "{what}: {}, {} tokens",
                crate::output::counted(messages.len(), "message", "messages"),
                thousands(tokens(messages))
            ));
            for m in messages {
                out.push(format!(
                    "  {} {} tokens",
                    entry_id(session, m.entry_index),
                    thousands(m.tokens())
                ));
            }
        }
    }
    out
}

fn entry_id(session: &Session, index: usize) -> String {
    escape_controls(session.entries()[index].id.as_str()).into_owned()
}

/// Says on stderr, with `-v`, what the compaction `compact` is about to
/// run decides, planned as `plan` plans it (`-vv`: every message too).
pub(crate) fn say_for_compact(
    ctx: &Ctx,
    session: &Session,
    m: &musepi_runtime::MaintenanceSettings,
    prune: Option<&PruneConfig>,
    strategy_reason: &str,
) {
    if ctx.verbose() == 0 {
        return;
    }
    let leaf = session.leaf_index();
    let planned = Planned::new(
        std::borrow::Cow::Borrowed(session),
        leaf,
        &m.compaction,
        prune,
        m.context_window,
        ctx.now_ms(),
    );
    let lines = match planned.step.prepare(planned.pruned.as_ref(), leaf) {
        Ok(prep) => lines(
            strategy_reason,
            &planned,
            &prep,
            &m.compaction,
            prune,
            ctx.verbose() > 1,
        ),
        Err(nothing) => vec![
            strategy_reason.to_owned(),
            format!(
                "nothing to compact: {}",
                crate::ctx::lowercase_start(&nothing.to_string())
            ),
        ],
    };
    say(ctx, &lines);
}

/// Says `lines` on stderr, each as `musepi: LINE`, when `-v` was given
/// (and not `-q`).
pub(crate) fn say(ctx: &Ctx, lines: &[String]) {
    if ctx.verbose() == 0 {
        return;
    }
    for line in lines {
        note(ctx.quiet(), &format!("musepi: {line}"));
    }
}
