//! Handoff (docs/design.md, "Handoff", design-era semantics): a document for a successor,
//! and the new session that starts with it.

use musepi_context_builder::{LlmMessage, RequestPurpose, SummaryRequest};
use musepi_session_model::{Content, CustomMessageEntry, EntryBody, Header, Session, Stamp};

use crate::prompts::HANDOFF_DOCUMENT;

/// The `customType` of the handoff message.
pub const HANDOFF_CUSTOM_TYPE: &str = "handoff";

/// The handoff prompt, with `Additional focus:` when a focus is given.
pub fn handoff_prompt(focus: Option<&str>) -> String {
    let mut prompt = HANDOFF_DOCUMENT.text().to_owned();
    if let Some(f) = focus.filter(|f| !f.trim().is_empty()) {
        prompt.push_str("\n\nAdditional focus: ");
        prompt.push_str(f);
    }
    prompt
}

/// The handoff request: the live history as the model sees it, followed by
/// the handoff prompt as one more user message (so a warm prompt cache is reused).
pub fn handoff_request(
    history: Vec<LlmMessage>,
    system_prompt: &str,
    focus: Option<&str>,
    reasoning: Option<String>,
) -> SummaryRequest {
    let mut messages = history;
    messages.push(LlmMessage::user_text(handoff_prompt(focus)));
    SummaryRequest {
        purpose: RequestPurpose::Handoff,
        system_prompt: system_prompt.to_owned(),
        messages,
        max_tokens: None,
        reasoning,
    }
}

/// The new session a handoff starts: `header` (whose `parentSession`
/// should name the old file) and one visible `custom_message` with
/// `customType: "handoff"` and `attribution: "agent"` holding the document.
pub fn handoff_session(header: Header, document: &str, stamp: &mut Stamp<'_>) -> Session {
    let mut session = Session::new(header);
    session.append(
        EntryBody::CustomMessage(CustomMessageEntry {
            custom_type: HANDOFF_CUSTOM_TYPE.to_owned(),
            content: Content::text(document),
            display: true,
            details: None,
            attribution: Some("agent".to_owned()),
        }),
        stamp,
    );
    session
}
