//! The texts the archives put in front of the model, one template each
//! under `prompts/snapcompact/` (our own wording).

use musepi_context_builder::{Template, template};

/// The text-frame lead-in (`{{tokens_before}}`, `{{tokens_kept}}`); it
/// opens with `Resume the prior conversation`.
pub const TEXT_LEAD_IN: Template = template!("snapcompact/text-lead-in.md");
/// The lead-in of a branch digest (`{{tokens_before}}`, `{{tokens_kept}}`):
/// what follows is the branch the user left, not history to carry on from.
pub const TEXT_LEAD_IN_BRANCH: Template = template!("snapcompact/text-lead-in-branch.md");
/// The text-frame reading guide (`{{shortened}}`, `{{files}}`); it opens
/// with `Reading guide`.
pub const TEXT_READING_GUIDE: Template = template!("snapcompact/text-reading-guide.md");
/// The guide's line when nothing was shortened.
pub const TEXT_GUIDE_COMPLETE: Template = template!("snapcompact/text-guide-complete.md");
/// The guide's line that counts what was shortened, by kind.
pub const TEXT_GUIDE_SHORTENED: Template = template!("snapcompact/text-guide-shortened.md");
/// The guide's line when the file list could not show every file
/// (`{{shown}}`, `{{total}}`).
pub const TEXT_GUIDE_FILES: Template = template!("snapcompact/text-guide-files.md");
/// The PNG-frame summary: lead-in, legend of scopes, `{{reading_rules}}`,
/// `{{notes}}`, the advice to re-derive unclear details, `{{files}}` and
/// the HISTORY heading.
pub const FRAMES_SUMMARY: Template = template!("snapcompact/frames-summary.md");
/// Reading rules when the archive holds no image.
pub const FRAMES_RULES_TEXT: Template = template!("snapcompact/frames-rules-text.md");
/// Reading rules when the archive holds images.
pub const FRAMES_RULES_IMAGES: Template = template!("snapcompact/frames-rules-images.md");
/// How to read a grid frame (`{{cols}}`, `{{rows}}`).
pub const FRAMES_RULES_GRID: Template = template!("snapcompact/frames-rules-grid.md");
/// How to read a two-column `doc-` frame (`{{cols}}`, `{{rows}}`).
pub const FRAMES_RULES_DOC: Template = template!("snapcompact/frames-rules-doc.md");
/// The rule for shapes that print every row twice.
pub const FRAMES_RULES_REPEAT: Template = template!("snapcompact/frames-rules-repeat.md");
/// The note that a previous LLM summary opens the history.
pub const FRAMES_NOTE_DIGEST: Template = template!("snapcompact/frames-note-digest.md");
/// The note that older middle history was dropped (`{{chars}}`).
pub const FRAMES_NOTE_TRUNCATED: Template = template!("snapcompact/frames-note-truncated.md");
/// The FILES heading with the file tree (`{{tree}}`).
pub const FRAMES_FILES: Template = template!("snapcompact/frames-files.md");

/// Every template of the crate.
pub const ALL: [Template; 15] = [
    TEXT_LEAD_IN,
    TEXT_LEAD_IN_BRANCH,
    TEXT_READING_GUIDE,
    TEXT_GUIDE_COMPLETE,
    TEXT_GUIDE_SHORTENED,
    TEXT_GUIDE_FILES,
    FRAMES_SUMMARY,
    FRAMES_RULES_TEXT,
    FRAMES_RULES_IMAGES,
    FRAMES_RULES_GRID,
    FRAMES_RULES_DOC,
    FRAMES_RULES_REPEAT,
    FRAMES_NOTE_DIGEST,
    FRAMES_NOTE_TRUNCATED,
    FRAMES_FILES,
];

/// Renders a template of this crate. They are compiled in and a test
/// renders each with exactly its placeholders, so this cannot fail; should
/// it ever, the raw text is used rather than losing the summary.
pub(crate) fn render(template: &Template, values: &[(&str, &str)]) -> String {
    template
        .render(values)
        .unwrap_or_else(|_| template.text().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn placeholders(t: &Template) -> Vec<&'static str> {
        t.placeholders().unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_template_renders_with_exactly_its_placeholders() {
        let expected: [&[&str]; 15] = [
            &["tokens_before", "tokens_kept"],
            &["tokens_before", "tokens_kept"],
            &["shortened", "files"],
            &[],
            &[
                "users",
                "users_total",
                "users_omitted",
                "calls",
                "calls_total",
                "calls_omitted",
                "replies",
                "replies_total",
                "replies_omitted",
                "outputs",
                "outputs_total",
                "outputs_omitted",
                "left_out",
                "total",
            ],
            &["shown", "total"],
            &["reading_rules", "notes", "files"],
            &[],
            &[],
            &["cols", "rows"],
            &["cols", "rows"],
            &[],
            &[],
            &["chars"],
            &["tree"],
        ];
        for (t, names) in ALL.iter().zip(expected) {
            assert_eq!(placeholders(t), names, "{}", t.name());
            let values: Vec<(&str, &str)> = names.iter().map(|n| (*n, "X")).collect();
            let out = t.render(&values).unwrap_or_else(|e| panic!("{e}"));
            assert!(!out.contains("{{") && !out.contains("}}"), "{}", t.name());
            assert!(!out.ends_with('\n') && !out.is_empty(), "{}", t.name());
        }
    }

    #[test]
    fn the_phrases_tests_and_readers_look_for_are_there() {
        assert!(
            TEXT_LEAD_IN
                .text()
                .starts_with("Resume the prior conversation")
        );
        assert!(TEXT_READING_GUIDE.text().starts_with("Reading guide"));
        assert!(
            FRAMES_SUMMARY
                .text()
                .starts_with("Resume the prior conversation")
        );
        assert!(
            FRAMES_SUMMARY
                .text()
                .ends_with("HISTORY\n===================")
        );
        assert!(
            FRAMES_FILES
                .text()
                .starts_with("FILES\n===================\n\n")
        );
        for scope in ["¶user:", "¶think:", "¶ai:", "¶call:"] {
            assert!(FRAMES_SUMMARY.text().contains(scope), "{scope}");
        }
    }
}
