//! Repeated filler in the ledger: what was said or done before is no
//! longer guaranteed.
//!
//! A sentence of a user message that an earlier user message (or an
//! earlier part of the same one, or an earlier archive's ledger) already
//! said, and a call made before with nothing new under it in a turn whose
//! request said nothing new, is shown only
//! when the budget has room for it after the facts of the conversation
//! and each reply's best sentence: the first
//! time it was said stays in the ledger, and the oldest user messages and
//! calls are no longer dropped to make room for the same sentence said
//! again. "Said before" is the same text, whitespace and case aside and a
//! number that counts steps or turns (`Step 12:`) masked; a sentence with
//! a new value ("the batch size is 40" after "… is 25") is not a repeat.

use rustc_hash::FxHashSet;

use super::blocks::{Block, Rank, Scope, tier};
use super::lexicon::COUNTERS;
use super::score::score;

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
                    if said.contains(&key) {
                        piece.rank = repeat_rank(&piece.text);
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
