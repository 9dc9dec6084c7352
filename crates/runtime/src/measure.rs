//! What the maintenance runtime measures: the context size the triggers
//! compare (never the same usage twice, never a usage from before the
//! latest compaction), from the context's token account the runtime keeps
//! as entries are appended, and the latest compaction.

use musepi_context_builder::{ContextAccount, LlmMessage};
use musepi_session_model::{AgentMessage, EntryId, Session, StopReason};
use musepi_snapcompact::SessionArchives;

/// Timestamp (ms) of the latest compaction on the current branch.
pub(crate) fn latest_compaction_ms(session: &Session) -> Option<f64> {
    let leaf = session.leaf_index()?;
    let compaction = session.path_summary(leaf).compaction? as usize;
    session.entries()[compaction]
        .timestamp_ms()
        .map(|ms| ms as f64)
}

/// Whether entry `index` lies before the latest compaction on the
/// current branch (its usage measured a context that no longer exists),
/// whatever the timestamps say.
pub(crate) fn before_latest_compaction(session: &Session, index: usize) -> bool {
    let Some(leaf) = session.leaf_index() else {
        return false;
    };
    let Some(compaction) = session.path_summary(leaf).compaction else {
        return false;
    };
    session.path_summary(index).depth < session.path_summary(compaction as usize).depth
        && session.is_on_path(index, leaf)
}

/// Brings `account` to the session's leaf, with the session's archives.
pub(crate) fn sync(account: &mut ContextAccount, session: &Session) {
    account.sync(session, Some(&SessionArchives::new(session)));
}

/// The context size the triggers compare, from `account` (kept at the
/// session's leaf): the last usage plus the context's tokens of what
/// followed it (the measured tokens, which never anchor on a usage from
/// before the latest compaction on the path), or the context's tokens when
/// that usage was already acted on (`acted`) or is dated before the latest
/// compaction. Also returns the anchoring assistant's entry.
pub(crate) fn context_tokens(
    account: &ContextAccount,
    session: &Session,
    acted: Option<&EntryId>,
) -> (u64, Option<EntryId>) {
    let measured = account.measured();
    let Some(entry) = account.anchor_entry() else {
        return (measured.tokens, None);
    };
    let anchor = &session.entries()[entry];
    let stale = acted == Some(&anchor.id)
        || matches!(
            (anchor.message().and_then(AgentMessage::timestamp), latest_compaction_ms(session)),
            (Some(t), Some(c)) if t <= c
        );
    if stale {
        (account.context_tokens(), None)
    } else {
        (measured.tokens, Some(anchor.id.clone()))
    }
}

/// The context without a trailing failed (error or truncated) assistant,
/// also when it is the last kept message of a provider history that ends
/// the context.
pub(crate) fn without_failed_tail(mut messages: Vec<LlmMessage>) -> Vec<LlmMessage> {
    let failed = |m: Option<&LlmMessage>| {
        matches!(
            m,
            Some(LlmMessage::Assistant {
                stop_reason: Some(StopReason::Error | StopReason::Length),
                ..
            })
        )
    };
    if failed(messages.last()) {
        messages.pop();
    } else if let Some(LlmMessage::ProviderHistory(h)) = messages.last_mut()
        && failed(h.kept.last())
    {
        h.kept.pop();
    }
    messages
}

#[cfg(test)]
mod tests {
    use musepi_context_builder::ProviderHistory;
    use musepi_session_model::ContentBlock;

    use super::*;

    fn assistant(stop: StopReason) -> LlmMessage {
        LlmMessage::Assistant {
            content: vec![ContentBlock::text("a")],
            provider: None,
            model: None,
            stop_reason: Some(stop),
        }
    }

    fn history(kept: Vec<LlmMessage>) -> LlmMessage {
        LlmMessage::ProviderHistory(ProviderHistory {
            provider: "openai".into(),
            items: Vec::new(),
            summary: Box::new(LlmMessage::user_text("S")),
            kept,
        })
    }

    #[test]
    fn a_failed_tail_goes_also_from_a_provider_history() {
        let out = without_failed_tail(vec![
            LlmMessage::user_text("u"),
            assistant(StopReason::Length),
        ]);
        assert_eq!(out, [LlmMessage::user_text("u")]);
        let out = without_failed_tail(vec![history(vec![
            LlmMessage::user_text("u"),
            assistant(StopReason::Error),
        ])]);
        assert_eq!(out, [history(vec![LlmMessage::user_text("u")])]);
        let kept = vec![assistant(StopReason::Stop)];
        assert_eq!(
            without_failed_tail(vec![history(kept.clone())]),
            [history(kept)]
        );
    }
}
