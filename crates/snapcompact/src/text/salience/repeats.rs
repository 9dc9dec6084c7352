//! Repeated filler in the ledger: what was said or done before is no
//! longer guaranteed.
//!
//! A sentence of a user message (24 characters or more, ending as a
//! sentence does: a line of pasted output stays) that an earlier user
//! message, an earlier part of the same one or an earlier archive's
//! ledger already said, and a call made before with nothing new under it
//! in a turn whose request said nothing new, is shown only when the
//! budget has room for it after the facts of the conversation and each
//! reply's best sentence. The first time it was said stays in the ledger,
//! and the oldest user messages and calls are no longer dropped to make
//! room for the same sentence said again. "Said before" is the same
//! text, whitespace and case aside and a number that counts steps or
//! turns (`Step 12:`) masked; a sentence with a new value ("the batch
//! size is 40" after "… is 25") is not a repeat.

use rustc_hash::FxHashSet;

use super::blocks::{Block, Rank, Scope, tier};
use super::lexicon::COUNTERS;
use super::score::score;
use crate::util::len16;

/// The shortest sentence, in UTF-16 units, that is left out as a repeat
/// (a shorter one said again is kept, and is no news).
const REPEAT_MIN: usize = 24;

/// Makes the repeated sentences of user messages and the repeated calls
/// of `blocks` (in history order) optional, below the conversation.
pub(crate) fn demote(blocks: &mut [Block]) {
    let mut said: FxHashSet<String> = FxHashSet::default();
    let mut calls: FxHashSet<String> = FxHashSet::default();
    let mut lines: FxHashSet<String> = FxHashSet::default();
    // Whether the user message of the current turn said something new.
    let mut turn_news = false;
    for block in blocks.iter_mut() {
        match block.scope {
            Scope::User => {
                turn_news = false;
                for piece in block.pieces.iter_mut().filter(|p| !p.gap) {
                    let key = key(&piece.text);
                    if key.is_empty() {
                        continue;
                    }
                    // A short one stays: it costs about what its marker
                    // would, and it may join a value to its neighbours; so
                    // does a line that is not a sentence (pasted terminal
                    // output or a stack trace, whose lines say where the
                    // values around them belong).
                    let keep = len16(&key) < REPEAT_MIN || !is_sentence(&piece.text);
                    if said.contains(&key) {
                        if !keep {
                            piece.rank = repeat_rank(&piece.text);
                        }
                    } else if piece.rank == Rank::Must {
                        said.insert(key);
                        turn_news = true;
                    }
                }
            }
            Scope::Call => {
                let Some(refs) = &block.refs else { continue };
                let first_time = calls.insert(refs.key.clone());
                // An error or result line under it not shown before.
                let mut news = false;
                for piece in block.pieces.iter().skip(1) {
                    let line = piece.text.trim();
                    news |= piece.rank == Rank::Must && !lines.contains(line);
                    lines.insert(line.to_owned());
                }
                if !(first_time || news || turn_news)
                    && let Some(piece) = block.pieces.first_mut()
                    && piece.rank == Rank::Must
                {
                    piece.rank = repeat_rank(&piece.text);
                }
            }
            _ => {}
        }
    }
}

/// Whether `text` ends as a sentence does (`.`, `!` or `?`, a closing
/// quote or bracket aside).
fn is_sentence(text: &str) -> bool {
    text.trim_end()
        .trim_end_matches(['"', '\'', ')', '`', '*'])
        .ends_with(['.', '!', '?'])
}

/// What a repeat ranks as: below every fact and each reply's best
/// sentence, beside the error lines beyond the guaranteed ones, above
/// the rest of the conversation and tool output.
fn repeat_rank(text: &str) -> Rank {
    Rank::Optional {
        tier: tier::ERRORS,
        score: score(text),
    }
}

/// The text that decides whether a sentence was said before: lowercase,
/// whitespace folded, a number after a word that counts (`step 12`,
/// `#12`) masked.
fn key(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut previous = String::new();
    for word in text.split_whitespace() {
        let lower = word.to_lowercase();
        let bare = lower.trim_end_matches(|c: char| !c.is_alphanumeric());
        let counter = COUNTERS.contains(&previous.as_str());
        let number = |w: &str| !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit());
        if !out.is_empty() {
            out.push(' ');
        }
        if counter && number(bare) {
            out.push('#');
            out.push_str(&lower[bare.len()..]);
        } else if let Some(n) = bare.strip_prefix('#').filter(|n| number(n)) {
            out.push('#');
            out.push_str(&lower[1 + n.len()..]);
        } else {
            out.push_str(&lower);
        }
        previous.clear();
        previous.push_str(bare.trim_start_matches(|c: char| !c.is_alphanumeric()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::blocks::{LEVELS, Piece, user_block};
    use super::*;

    fn must(block: &Block) -> Vec<&str> {
        block
            .pieces
            .iter()
            .filter(|p| p.rank == Rank::Must)
            .map(|p| p.text.as_str())
            .collect()
    }

    #[test]
    fn a_counted_step_is_masked_and_a_value_is_not() {
        assert_eq!(
            key("Step 12: Run  the tests."),
            key("step 13: run the tests.")
        );
        assert_eq!(key("Fix item #4 now."), key("Fix item #5 now."));
        assert_ne!(
            key("The batch size for the parser is 25."),
            key("The batch size for the parser is 40.")
        );
        assert_ne!(key("Use port 8080."), key("Use port 9090."));
    }

    #[test]
    fn a_sentence_said_before_is_no_longer_guaranteed_and_the_first_is() {
        let filler = "Keep the parser fast and the public API unchanged. ";
        let mut blocks = vec![
            user_block(
                &format!("Step 1: the batch size is 25. {}", filler.repeat(3)),
                1,
                Some("u1"),
                &LEVELS[0],
            ),
            user_block(
                &format!("Step 2: the batch size is 40. {}", filler.repeat(2)),
                2,
                Some("u2"),
                &LEVELS[0],
            ),
            user_block("Step 3: the batch size is 40.", 3, Some("u3"), &LEVELS[0]),
        ];
        demote(&mut blocks);
        assert_eq!(
            must(&blocks[0]),
            [
                "Step 1: the batch size is 25.",
                "Keep the parser fast and the public API unchanged."
            ]
        );
        assert_eq!(must(&blocks[1]), ["Step 2: the batch size is 40."]);
        assert!(must(&blocks[2]).is_empty());
    }

    #[test]
    fn a_line_of_pasted_output_said_again_stays() {
        let trace =
            "Error: bad color\n    at parse (src/theme.ts:148:9)\n    at load (src/theme.ts:388:9)";
        let mut blocks = vec![
            user_block(trace, 1, None, &LEVELS[0]),
            user_block(trace, 2, None, &LEVELS[0]),
        ];
        demote(&mut blocks);
        assert_eq!(must(&blocks[1]).len(), 3);
    }

    #[test]
    fn a_short_sentence_said_again_stays() {
        let mut blocks = vec![
            user_block("Debugger attached. Error at line 388.", 1, None, &LEVELS[0]),
            user_block("Debugger attached. Error at line 401.", 2, None, &LEVELS[0]),
        ];
        demote(&mut blocks);
        assert_eq!(
            must(&blocks[1]),
            ["Debugger attached.", "Error at line 401."]
        );
    }

    #[test]
    fn a_call_made_before_is_a_repeat_unless_something_new_is_under_it() {
        let mut blocks: Vec<Block> = ["", "", "error: new"]
            .iter()
            .map(|under| {
                let mut b = Block::new(Scope::Call, 1, None);
                b.refs = Some(super::super::blocks::CallRefs {
                    tool: "bash".into(),
                    key: "bash(make)".into(),
                    whole: "bash(make)".into(),
                    names: super::super::blocks::CallNames::Paths {
                        shows: Vec::new(),
                        tails: Vec::new(),
                    },
                });
                b.pieces.push(Piece::new("", "bash(make)", Rank::Must));
                if !under.is_empty() {
                    b.pieces.push(Piece::new("\n  ! ", *under, Rank::Must));
                }
                b
            })
            .collect();
        demote(&mut blocks);
        let guaranteed: Vec<bool> = blocks
            .iter()
            .map(|b| b.pieces[0].rank == Rank::Must)
            .collect();
        assert_eq!(guaranteed, [true, false, true]);
    }
}
