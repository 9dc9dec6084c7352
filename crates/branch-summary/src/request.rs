//! The summary request of a branch (docs/design.md, "Branch summaries"), as plain data.

use musepi_context_builder::{
    RequestPurpose, SummaryRequest, Template, escape_wrapper_tags, template,
};

use crate::prepare::BranchPreparation;

/// The default instruction: what a branch summary holds.
pub const INSTRUCTIONS: Template = template!("branch-summary/branch-summary.md");

/// Output limit of a branch summary call (docs/design.md, "Summaries").
pub const MAX_TOKENS: u32 = 2048;

/// How to ask for the summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestOptions<'a> {
    /// The summarizer system prompt, the one every summary call uses (the
    /// compaction crate owns it).
    pub system_prompt: &'a str,
    /// The user's instructions for this summary, if any. Empty text counts
    /// as none.
    pub custom_instructions: Option<&'a str>,
    /// Whether custom instructions replace the default instruction
    /// (docs/design.md, "Branch summaries", the default) or are added to it as
    /// `Additional focus:` (`replaceInstructions: false`).
    pub replace_instructions: bool,
    /// The reasoning effort to ask for: the session's thinking level where
    /// the navigation starts, none when it is `off`
    /// ([`musepi_context_builder::summary_reasoning`]).
    pub reasoning: Option<&'a str>,
}

impl<'a> RequestOptions<'a> {
    /// The default instruction, with this system prompt.
    pub fn new(system_prompt: &'a str) -> Self {
        Self {
            system_prompt,
            custom_instructions: None,
            replace_instructions: true,
            reasoning: None,
        }
    }
}

/// The instruction that follows the conversation: the default, the custom
/// instructions in its place, or the default with
/// `\n\nAdditional focus: <custom>` appended.
pub fn instructions(custom: Option<&str>, replace: bool) -> String {
    match custom.filter(|c| !c.is_empty()) {
        None => INSTRUCTIONS.text().to_owned(),
        Some(c) if replace => c.to_owned(),
        Some(c) => format!("{}\n\nAdditional focus: {c}", INSTRUCTIONS.text()),
    }
}

/// The request for a branch summary: one user message
/// `<conversation>\n{serialized}\n</conversation>\n\n{instructions}`,
/// at most [`MAX_TOKENS`] output tokens, with the options' reasoning effort.
///
/// `None` when nothing fits: no model is asked, and the summary is
/// [`crate::NO_CONTENT`] ([`crate::Summary::no_content`]).
pub fn summary_request(
    prep: &BranchPreparation<'_>,
    options: &RequestOptions<'_>,
) -> Option<SummaryRequest> {
    if prep.is_empty() {
        return None;
    }
    // A wrapper tag in the session is escaped, so the session cannot
    // close the `<conversation>` it sits in.
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\n{}",
        escape_wrapper_tags(&prep.serialized()),
        instructions(options.custom_instructions, options.replace_instructions)
    );
    Some(SummaryRequest::single(
        RequestPurpose::BranchSummary,
        options.system_prompt,
        prompt,
        Some(MAX_TOKENS),
        options.reasoning.map(str::to_owned),
    ))
}

#[cfg(test)]
mod tests {
    use musepi_context_builder::LlmMessage;
    use serde_json::json;

    use super::*;
    use crate::prepare::{PrepareOptions, prepare_branch};
    use crate::test_support::{assistant, call, entry, session_from, user};
    use musepi_test_support::SUMMARY_SECTIONS;

    const SYSTEM: &str = "You summarize conversations.";

    fn request(options: &RequestOptions<'_>) -> Option<SummaryRequest> {
        let session = session_from(vec![
            entry("a", None, user("try the cache")),
            entry(
                "b",
                Some("a"),
                assistant(json!([call("c", "read", json!({"path": "x.rs"}))])),
            ),
        ]);
        let prep = prepare_branch(&session, &[0, 1], 0, &PrepareOptions::default()).unwrap();
        summary_request(&prep, options)
    }

    const CONVERSATION: &str = "<conversation>\n[User]: try the cache\n\n[Assistant tool calls]: read(path=\"x.rs\")\n</conversation>\n\n";

    #[test]
    fn the_request_is_the_conversation_then_the_instructions() {
        let r = request(&RequestOptions::new(SYSTEM)).unwrap();
        assert_eq!(r.purpose, RequestPurpose::BranchSummary);
        assert_eq!(r.system_prompt, SYSTEM);
        assert_eq!(r.max_tokens, Some(2048));
        assert_eq!(r.reasoning, None);
        let with_level = RequestOptions {
            reasoning: Some("low"),
            ..RequestOptions::new(SYSTEM)
        };
        assert_eq!(
            request(&with_level).unwrap().reasoning.as_deref(),
            Some("low")
        );
        assert_eq!(r.messages.len(), 1);
        assert!(matches!(r.messages[0], LlmMessage::User { .. }));
        assert_eq!(
            r.prompt_text(),
            format!("{CONVERSATION}{}", INSTRUCTIONS.text())
        );
    }

    #[test]
    fn custom_instructions_replace_the_default() {
        let options = RequestOptions {
            custom_instructions: Some("List the failed attempts."),
            ..RequestOptions::new(SYSTEM)
        };
        let r = request(&options).unwrap();
        assert_eq!(
            r.prompt_text(),
            format!("{CONVERSATION}List the failed attempts.")
        );
    }

    #[test]
    fn custom_instructions_are_an_additional_focus_when_not_replacing() {
        let options = RequestOptions {
            custom_instructions: Some("the cache keys"),
            replace_instructions: false,
            ..RequestOptions::new(SYSTEM)
        };
        let r = request(&options).unwrap();
        assert_eq!(
            r.prompt_text(),
            format!(
                "{CONVERSATION}{}\n\nAdditional focus: the cache keys",
                INSTRUCTIONS.text()
            )
        );
    }

    #[test]
    fn empty_custom_instructions_are_none() {
        assert_eq!(instructions(Some(""), true), INSTRUCTIONS.text());
        assert_eq!(instructions(Some(""), false), INSTRUCTIONS.text());
        assert_eq!(instructions(None, false), INSTRUCTIONS.text());
    }

    #[test]
    fn no_messages_means_no_request() {
        let session = session_from(vec![entry("a", None, user("x"))]);
        let prep = prepare_branch(&session, &[], 0, &PrepareOptions::default()).unwrap();
        assert!(summary_request(&prep, &RequestOptions::new(SYSTEM)).is_none());
    }

    #[test]
    fn the_instruction_asks_for_the_branch_sections_in_order() {
        assert_eq!(INSTRUCTIONS.placeholders().unwrap(), Vec::<&str>::new());
        let text = INSTRUCTIONS.text();
        musepi_test_support::assert_in_order(INSTRUCTIONS.name(), text, &SUMMARY_SECTIONS);
        assert!(!text.contains("## Critical Context"));
    }
}
