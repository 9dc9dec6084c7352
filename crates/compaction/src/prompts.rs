//! The compaction prompts, compiled in from `prompts/compaction/`.

use musepi_context_builder::{Template, template};

/// System prompt of every summarizer call.
pub const SUMMARIZATION_SYSTEM: Template = template!("compaction/summarization-system.md");
/// Instruction for a first summary.
pub const FIRST_SUMMARY: Template = template!("compaction/compaction-summary.md");
/// Instruction for a summary that folds new messages into a previous one.
pub const UPDATE_SUMMARY: Template = template!("compaction/compaction-update-summary.md");
/// Instruction for the prefix of a split turn.
pub const TURN_PREFIX: Template = template!("compaction/compaction-turn-prefix.md");
/// Instruction for the short, UI-facing summary.
pub const SHORT_SUMMARY: Template = template!("compaction/compaction-short-summary.md");
/// Instruction for a handoff document.
pub const HANDOFF_DOCUMENT: Template = template!("compaction/handoff-document.md");
/// The focus an automatic (threshold) handoff passes as custom instructions.
pub const HANDOFF_THRESHOLD_FOCUS: Template = template!("compaction/handoff-threshold-focus.md");
/// The developer prompt that resumes work after a threshold compaction.
pub const AUTO_CONTINUE: Template = template!("compaction/auto-continue.md");

/// Every template this crate owns, for tests and `--show-prompts`.
pub const ALL: [Template; 8] = [
    SUMMARIZATION_SYSTEM,
    FIRST_SUMMARY,
    UPDATE_SUMMARY,
    TURN_PREFIX,
    SHORT_SUMMARY,
    HANDOFF_DOCUMENT,
    HANDOFF_THRESHOLD_FOCUS,
    AUTO_CONTINUE,
];

#[cfg(test)]
mod tests {
    use super::*;
    use musepi_test_support::{SUMMARY_SECTIONS, assert_in_order};

    #[test]
    fn every_prompt_is_static_text_that_renders() {
        for t in ALL {
            assert_eq!(
                t.placeholders().unwrap(),
                Vec::<&str>::new(),
                "{}",
                t.name()
            );
            assert_eq!(t.render(&[]).unwrap(), t.text(), "{}", t.name());
            assert!(!t.text().trim().is_empty(), "{}", t.name());
        }
    }

    #[test]
    fn summary_prompts_have_the_design_era_sections_in_order() {
        for t in [FIRST_SUMMARY, UPDATE_SUMMARY] {
            let mut order = SUMMARY_SECTIONS.to_vec();
            order.push("## Critical Context");
            assert_in_order(t.name(), t.text(), &order);
        }
        for h in [
            "## Original Request",
            "## Early Progress",
            "## Context for Suffix",
        ] {
            assert!(TURN_PREFIX.text().contains(h));
        }
    }
}
