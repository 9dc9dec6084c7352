//! Golden snapshots of tree navigations that summarize the branch they
//! leave (`branch__*`, docs/design.md, "Branch summaries"): the old leaf, the target and their
//! common ancestor, the abandoned entries with their tokens and whether
//! they fit the budget, the file lists, the summary request, the stored
//! summary for a fixed answer, and where the leaf and the summary entry
//! land.
//!
//! Tool results follow our decision ([`ToolResults::Truncated`]) unless a
//! scenario's name ends in `_skip_tool_results` (the reference's
//! [`ToolResults::Skip`]). Nothing here calls a model.

use musepi_branch_summary::{DEFAULT_RESERVE_TOKENS, ToolResults};
use musepi_compaction::prompts::SUMMARIZATION_SYSTEM;
use musepi_tests::fixtures::load_fixture;
use musepi_tests::render_branch::{Navigation, render_navigation};

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

/// A navigation over `fixture` with the defaults: unknown context window,
/// the default reserve, tool results truncated.
struct Scenario {
    name: &'static str,
    about: &'static str,
    fixture: &'static str,
    old_leaf: &'static str,
    target: Option<&'static str>,
    context_window: Option<u64>,
    reserve_tokens: u64,
    tool_results: ToolResults,
    answer: &'static str,
}

impl Scenario {
    fn new(
        name: &'static str,
        about: &'static str,
        fixture: &'static str,
        (old_leaf, target): (&'static str, Option<&'static str>),
    ) -> Self {
        Self {
            name,
            about,
            fixture,
            old_leaf,
            target,
            context_window: None,
            reserve_tokens: DEFAULT_RESERVE_TOKENS,
            tool_results: ToolResults::Truncated,
            answer: ANSWER,
        }
    }

    fn answer(self, answer: &'static str) -> Self {
        Self { answer, ..self }
    }

    fn window(self, context_window: u64, reserve_tokens: u64) -> Self {
        Self {
            context_window: Some(context_window),
            reserve_tokens,
            ..self
        }
    }

    fn skip_tool_results(self, name: &'static str) -> Self {
        Self {
            name,
            tool_results: ToolResults::Skip,
            ..self
        }
    }

    fn check(&self) {
        let session = load_fixture(self.fixture);
        let nav = Navigation {
            old_leaf: self.old_leaf,
            target: self.target,
            context_window: self.context_window,
            reserve_tokens: self.reserve_tokens,
            tool_results: self.tool_results,
            system_prompt: SUMMARIZATION_SYSTEM.text(),
            answer: self.answer,
        };
        let text = format!(
            "fixture: {}\nscenario: {}\n{}",
            self.fixture,
            self.about,
            render_navigation(&session, &nav)
        );
        check(self.name, &text);
    }
}

/// The fixed answer of scenarios that do not need their own.
const ANSWER: &str = "## Goal\nContinue the wc-rs work on this branch.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n- [x] See the conversation.\n\n### In Progress\n- [ ] (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n- (none)\n\n## Next Steps\n1. Pick the branch up again if needed.";

/// An answer that writes its own, stale file list: the stored summary
/// replaces it with the `<files>` block of the branch.
const CLAP_ANSWER: &str = "## Goal\nTry clap's derive API for argument parsing.\n\n## Constraints & Preferences\n- (none)\n\n## Progress\n### Done\n- [x] Wrote `src/cli.rs` with a clap derive struct\n\n### In Progress\n- [ ] (none)\n\n### Blocked\n- (none)\n\n## Key Decisions\n- **Keep the hand-written parser**: clap adds 12 dependencies.\n\n## Next Steps\n1. Delete `src/cli.rs` if clap is not adopted.\n\n<read-files>\nsrc/stale.rs\n</read-files>\n";

const AHASH_ANSWER: &str = "## Goal\nFind out whether ahash makes line hashing faster.\n\n## Progress\n### Done\n- [x] Benchmarked ahash: 2.1× faster\n\n## Key Decisions\n- **Not adopted**: wc-rs never hashes lines.";

const TOTAL_LINE_ANSWER: &str = "## Goal\nPrint a total line for several files, then ship 0.2.0.\n\n## Progress\n### Done\n- [x] Total line after the last file\n- [x] Version bumped to 0.2.0 in `Cargo.toml`\n\n## Next Steps\n1. Tag the release.";

const SHIP_ANSWER: &str = "## Goal\nShip wc-rs 0.2.0.\n\n## Progress\n### Done\n- [x] Version bumped to 0.2.0 in `Cargo.toml`\n\n## Next Steps\n1. Tag the release.";

const COMPACTED_ANSWER: &str = "## Goal\nwc-rs: a --bytes flag and a total line.\n\n## Progress\n### Done\n- [x] --bytes flag, clippy clean, total line (from the compacted summary)";

const TODO_ANSWER: &str = "## Goal\nFind the TODOs and read the argument parser, then add a --lines flag.\n\n## Progress\n### Done\n- [x] No TODOs in `src`\n- [x] --lines added in `src/args.rs`\n\n### Blocked\n- `grep: /root: Permission denied`";

#[test]
fn sibling_branch() {
    // Back from the clap experiment (b…) to the main line (a…): the
    // abandoned entries run up to the fork at a000000b.
    let sibling = Scenario::new(
        "branch__sibling",
        "leave the clap experiment for the tip of the main line (a sibling branch)",
        "tree.jsonl",
        ("b0000004", Some("a0000027")),
    )
    .answer(CLAP_ANSWER);
    sibling.check();
    sibling
        .skip_tool_results("branch__sibling_skip_tool_results")
        .check();
}

#[test]
fn branch_under_an_earlier_compaction() {
    // The ahash side branch hangs below compaction a0000017: the shared
    // path (and its compaction) is not summarized.
    Scenario::new(
        "branch__under_compaction",
        "leave the ahash side branch, which starts after compaction a0000017, for the main line",
        "tree.jsonl",
        ("d0000002", Some("a0000027")),
    )
    .answer(AHASH_ANSWER)
    .check();
}

#[test]
fn branch_holding_compactions_and_summaries() {
    // The abandoned part holds two compactions, a pi-made branch summary
    // with file lists, an empty one and an extension-made one.
    Scenario::new(
        "branch__across_compactions",
        "leave the tip of the main line for the end of the clap experiment; a known context window",
        "tree.jsonl",
        ("a0000027", Some("b0000004")),
    )
    .window(200_000, DEFAULT_RESERVE_TOKENS)
    .check();
}

#[test]
fn navigation_to_root() {
    Scenario::new(
        "branch__to_root",
        "leave the JSON question for the root, before the first entry",
        "tree.jsonl",
        ("c0000002", None),
    )
    .check();
}

#[test]
fn navigation_to_an_ancestor() {
    // A user message target: the leaf lands on its parent and its text
    // goes back to the editor.
    Scenario::new(
        "branch__to_ancestor_user_message",
        "go back up the main line to the user message that asked for a total line",
        "tree.jsonl",
        ("a0000027", Some("a0000019")),
    )
    .answer(TOTAL_LINE_ANSWER)
    .check();
    // A custom message target: the same, with its text.
    Scenario::new(
        "branch__to_ancestor_custom_message",
        "go back up the main line to the ci-status custom message",
        "tree.jsonl",
        ("a0000027", Some("a0000021")),
    )
    .answer(SHIP_ANSWER)
    .check();
}

#[test]
fn navigation_to_a_descendant() {
    Scenario::new(
        "branch__to_descendant",
        "from the total-line request down to the tip of the main line (nothing abandoned)",
        "tree.jsonl",
        ("a0000019", Some("a0000027")),
    )
    .check();
}

#[test]
fn budget_smaller_than_one_message() {
    // A 16-token budget: the newest message alone is over it.
    Scenario::new(
        "branch__budget_smaller_than_one_message",
        "leave the ahash side branch with a 16-token budget",
        "tree.jsonl",
        ("d0000002", Some("a0000027")),
    )
    .window(16_400, DEFAULT_RESERVE_TOKENS)
    .check();
    // The same budget, the newest entry a compaction: taken anyway, since
    // nothing was taken before it.
    Scenario::new(
        "branch__budget_smaller_than_a_compaction",
        "leave compaction a0000022 for the JSON question with a 16-token budget",
        "tree.jsonl",
        ("a0000022", Some("c0000002")),
    )
    .window(16_400, DEFAULT_RESERVE_TOKENS)
    .answer(COMPACTED_ANSWER)
    .check();
    // The same budget from the Cargo.toml edit: the call does not fit, but
    // its file counts; with no message the summary has no file lists.
    Scenario::new(
        "branch__budget_smaller_than_a_tool_call",
        "leave the Cargo.toml edit for the total-line answer with a 16-token budget",
        "tree.jsonl",
        ("a0000025", Some("a000001f")),
    )
    .window(16_400, DEFAULT_RESERVE_TOKENS)
    .check();
}

#[test]
fn useless_and_pruned_tool_results() {
    // Back to the first user message, which has no parent: the leaf is
    // cleared. A useless result and its call are left out, a useless
    // error is kept, a pruned result counts as its placeholder.
    let useless = Scenario::new(
        "branch__useless_results",
        "from the end of a linear session back to its first user message",
        "useless_and_pruned.jsonl",
        ("0000000c", Some("00000001")),
    )
    .answer(TODO_ANSWER);
    useless.check();
    useless
        .skip_tool_results("branch__useless_results_skip_tool_results")
        .check();
}
