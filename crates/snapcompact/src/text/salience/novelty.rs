//! Weighing the conversation against the rest of the history: what is
//! new counts more than what repeats.
//!
//! A sentence of reasoning or of a reply gains for the words, numbers and
//! identifiers that no other message of the history holds, and loses when
//! its form (numbers masked) is that of sentences in many other messages:
//! "Running the tests for step 12." said a hundred times is said once.
//! Then each message's best sentence, and every sentence that states a
//! specific fact, rank with the best of the conversation.

use rustc_hash::FxHashMap;

use super::blocks::{Block, Rank, Scope, best_optional, fact_score, tier};
use super::lexicon::COUNTERS;
use super::text::shape;

/// The score a message's best sentence needs to rank with the best of the
/// conversation: a message of filler keeps nothing for its sake.
const BEST_MIN_SCORE: i32 = 6;
/// The score at which any sentence ranks with the best of the
/// conversation, whichever message it is in: a specific fact.
const FACT_SCORE: i32 = 13;
/// What each rare term adds, and how many count.
const RARE_BONUS: i32 = 2;
const RARE_MAX: usize = 3;
/// In how many messages a sentence's form may recur before it counts as
/// a repeat, and what a repeat loses.
const REPEATS: u32 = 3;
const REPEAT_PENALTY: i32 = 6;

fn is_prose(block: &Block) -> bool {
    matches!(block.scope, Scope::Think | Scope::Ai)
}

/// The terms of a piece that can make it stand out: words of four letters
/// or more, identifiers, and numbers of two digits or more that count no
/// step or line (`step 12` said in every turn is not news), lowercase.
fn terms(piece: &str) -> impl Iterator<Item = String> + '_ {
    let mut previous = "";
    piece
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .filter(move |t| {
            let digits = t.bytes().filter(u8::is_ascii_digit).count();
            let counted = digits == t.len() && COUNTERS.contains(&previous.to_lowercase().as_str());
            previous = t;
            !counted && (t.chars().count() >= 4 || digits >= 2)
        })
        .map(str::to_lowercase)
}

/// A rare term tells more when it is a number, an identifier or a long
/// word.
fn informative(term: &str) -> bool {
    term.bytes().any(|b| b.is_ascii_digit() || b == b'_') || term.chars().count() >= 6
}

/// Adjusts the scores of the reasoning and replies of `blocks` for
/// novelty and repetition, then ranks each one's best piece, and every
/// specific fact, with the best of the conversation.
pub(crate) fn weigh(blocks: &mut [Block]) {
    // In how many blocks each term occurs (prose, user messages and calls:
    // what the reader reads as the conversation), and each prose form.
    let mut df: FxHashMap<String, u32> = FxHashMap::default();
    let mut forms: FxHashMap<String, u32> = FxHashMap::default();
    for block in blocks.iter() {
        if !(is_prose(block) || matches!(block.scope, Scope::User | Scope::Call)) {
            continue;
        }
        let mut seen: Vec<String> = block.pieces.iter().flat_map(|p| terms(&p.text)).collect();
        seen.sort_unstable();
        seen.dedup();
        for term in seen {
            *df.entry(term).or_default() += 1;
        }
        if is_prose(block) {
            let mut shapes: Vec<String> = block.pieces.iter().map(|p| shape(&p.text)).collect();
            shapes.sort_unstable();
            shapes.dedup();
            for s in shapes {
                *forms.entry(s).or_default() += 1;
            }
        }
    }
    for block in blocks.iter_mut().filter(|b| is_prose(b)) {
        for piece in &mut block.pieces {
            let Rank::Optional { tier, score } = piece.rank else {
                continue;
            };
            let mut rare: Vec<String> = terms(&piece.text)
                .filter(|t| informative(t) && df.get(t).copied().unwrap_or(0) <= 1)
                .collect();
            rare.sort_unstable();
            rare.dedup();
            let mut s = score + RARE_BONUS * rare.len().min(RARE_MAX) as i32;
            // A form said in many messages is a repeat, unless this one
            // holds what no other message does: a new value is news.
            if rare.is_empty() && forms.get(&shape(&piece.text)).copied().unwrap_or(0) >= REPEATS {
                s -= REPEAT_PENALTY;
                piece.fact = false;
            }
            piece.rank = Rank::Optional { tier, score: s };
        }
        promote(block);
    }
    // The facts of tool output gain as well for what the conversation
    // does not say (their own output is not counted in it).
    for block in blocks
        .iter_mut()
        .filter(|b| matches!(b.scope, Scope::Out(_)))
    {
        for piece in block.pieces.iter_mut().filter(|p| p.fact) {
            let Rank::Optional { tier, score } = piece.rank else {
                continue;
            };
            let mut rare: Vec<String> = terms(&piece.text)
                .filter(|t| informative(t) && !df.contains_key(t))
                .collect();
            rare.sort_unstable();
            rare.dedup();
            let s = score + RARE_BONUS * rare.len().min(RARE_MAX) as i32;
            let s = if tier == tier::FACTS {
                fact_score(s, &piece.text)
            } else {
                s
            };
            piece.rank = Rank::Optional { tier, score: s };
        }
    }
}

/// Ranks every piece of `block` that states a fact with the facts, and
/// its best piece (the later one of equals) with the best of the
/// conversation when it says something specific.
fn promote(block: &mut Block) {
    let best = best_optional(block);
    for (i, piece) in block.pieces.iter_mut().enumerate() {
        let Rank::Optional { score, .. } = piece.rank else {
            continue;
        };
        if piece.fact {
            piece.rank = Rank::Optional {
                tier: tier::FACTS,
                score: fact_score(score, &piece.text),
            };
        } else if score >= FACT_SCORE || (best == Some((score, i)) && score >= BEST_MIN_SCORE) {
            piece.rank = Rank::Optional {
                tier: tier::CONVERSATION_BEST,
                score,
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::prose_block;
    use super::super::score::score;
    use super::*;

    /// The pieces ranked with the facts or the best of the conversation.
    fn best(block: &Block) -> Vec<&str> {
        block
            .pieces
            .iter()
            .filter(|p| matches!(p.rank, Rank::Optional { tier, .. } if tier >= tier::CONVERSATION_BEST))
            .map(|p| p.text.as_str())
            .collect()
    }

    #[test]
    fn every_reply_has_its_best_piece_and_its_facts_ranked_first() {
        let mut blocks = vec![
            prose_block(
                Scope::Ai,
                "Let me look. The timeout is 2500 ms in src/net.rs. Done.",
                2,
                None,
            ),
            prose_block(
                Scope::Ai,
                "The parser lives in `src/parse.rs` and handles `parse_expr`. \
                 We decided the arena must hold 4096 nodes because deep nesting overflowed it.",
                2,
                None,
            ),
        ];
        weigh(&mut blocks);
        assert_eq!(best(&blocks[0]), ["The timeout is 2500 ms in src/net.rs."]);
        assert_eq!(best(&blocks[1]).len(), 2, "{:?}", best(&blocks[1]));
    }

    fn score_of(block: &Block, text: &str) -> i32 {
        block
            .pieces
            .iter()
            .find(|p| p.text == text)
            .map_or(i32::MIN, |p| match p.rank {
                Rank::Optional { score, .. } => score,
                Rank::Must => i32::MAX,
            })
    }

    #[test]
    fn what_repeats_counts_less_and_what_is_new_counts_more() {
        let mut blocks: Vec<Block> = (0..5)
            .map(|i| {
                prose_block(
                    Scope::Ai,
                    &format!(
                        "Running the tests for step {} of the planner. Checked the planner module again.",
                        100 + i
                    ),
                    i,
                    None,
                )
            })
            .collect();
        blocks.push(prose_block(
            Scope::Ai,
            "Checked the planner module again. The quorum_size of 7 came from the flaky replica.",
            9,
            None,
        ));
        let before = blocks.clone();
        weigh(&mut blocks);
        let repeated = "Running the tests for step 100 of the planner.";
        assert!(score_of(&blocks[0], repeated) < score_of(&before[0], repeated));
        let new = "The quorum_size of 7 came from the flaky replica.";
        assert!(score_of(&blocks[5], new) > score_of(&before[5], new));
    }

    #[test]
    fn facts_rank_first_and_by_what_they_say_for_their_length() {
        let mut blocks = vec![prose_block(
            Scope::Ai,
            "Peak memory was 812 MB. \
             The retry budget of the uploader must stay at 2500 ms because the gateway \
             drops anything slower than that in production. Reading the parser next.",
            1,
            None,
        )];
        weigh(&mut blocks);
        let rank = |text: &str| {
            blocks[0]
                .pieces
                .iter()
                .find(|p| p.text.starts_with(text))
                .map(|p| p.rank)
        };
        let (
            Some(Rank::Optional {
                tier: a,
                score: short,
            }),
            Some(Rank::Optional {
                tier: b,
                score: long,
            }),
        ) = (rank("Peak memory"), rank("The retry budget"))
        else {
            panic!("{:?}", blocks[0].pieces);
        };
        assert_eq!((a, b), (tier::FACTS, tier::FACTS));
        // The longer one scores more by itself, the shorter more for its
        // length.
        assert!(
            score(
                "The retry budget of the uploader must stay at 2500 ms because the gateway drops anything slower than that in production."
            ) > score("Peak memory was 812 MB.")
        );
        assert!(short > long, "{short} {long}");
        assert!(matches!(rank("Reading"), Some(Rank::Optional { tier, .. }) if tier < tier::FACTS));
    }
}
