//! Golden snapshots over the real pi sessions of `../shared/fixtures/pi`,
//! read in place and migrated in memory with deterministic ids: the
//! context at the file leaf (`context__pi_*`) and the cut at
//! `keepRecentTokens` 2000, 8000 and 20000 (`cut__pi_*`).
//!
//! Only ids, roles, numbers and hashes appear (the first 12 hex digits of
//! the SHA-256 of each message's text): the sessions' text never enters
//! the repository. The cuts are the reference's (no adaptation); the line
//! after each table says where the adaptation (docs/design.md, "When to compact") would cut.

#![allow(clippy::unwrap_used)]

use std::fmt::Write as _;

use musepi_compaction::{CompactionSettings, prepare};
use musepi_tests::fixtures::load_pi;
use musepi_tests::render_context::{kind, render_context};
use musepi_tests::render_cut::{Rows, render_cut};
use musepi_tests::show::Show;

/// Compares `text` with `tests/snapshots/<name>.snap`.
fn check(name: &str, text: &str) {
    musepi_test_support::golden!(name, text);
}

const FIXTURES: [(&str, &str); 2] = [
    ("large_session", "large-session.jsonl"),
    ("before_compaction", "before-compaction.jsonl"),
];

#[test]
fn context_at_the_file_leaf() {
    for (name, file) in FIXTURES {
        let Some(session) = load_pi("context_at_the_file_leaf", file) else {
            continue;
        };
        let leaf = session.leaf_index().unwrap();
        check(
            &format!("context__pi_{name}"),
            &format!(
                "fixture: pi/{file}\n{}",
                render_context(&session, leaf, Show::Hash)
            ),
        );
    }
}

#[test]
fn cuts_at_three_budgets() {
    for (name, file) in FIXTURES {
        let Some(session) = load_pi("cuts_at_three_budgets", file) else {
            continue;
        };
        let leaf = session.leaf_index().unwrap();
        for keep in [2_000, 8_000, 20_000] {
            let mut plain = CompactionSettings::default();
            plain.keep_recent_tokens = keep;
            plain.adapt_keep_recent = false;
            let mut text = format!(
                "fixture: pi/{file}\n{}",
                render_cut(&session, leaf, &plain, Show::Hash, Rows::Around(4))
            );
            let mut adapted = CompactionSettings::default();
            adapted.keep_recent_tokens = keep;
            match prepare(&session, Some(leaf), &adapted) {
                Ok(p) => {
                    let first = &session.entries()[p.branch()[p.cut.first_kept_index]];
                    let _ = writeln!(
                        text,
                        "\nwith adaptation: keepRecentTokens used {}, first kept #{} {} ({}), split turn {}",
                        p.keep_recent_tokens,
                        p.cut.first_kept_index,
                        first.id,
                        kind(first),
                        p.is_split_turn()
                    );
                }
                Err(e) => {
                    let _ = writeln!(text, "\nwith adaptation: {e}");
                }
            }
            check(&format!("cut__pi_{name}_keep_{keep}"), &text);
        }
    }
}
