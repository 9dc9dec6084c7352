//! The archive as blocks of pieces: one block per user message, tool call,
//! reasoning, reply and tool output, each cut into pieces that the budget
//! keeps or leaves out one by one.

use super::score::{read, score, states_constraint};
use super::text::{Span, split_lines, split_prose};
use crate::util::len16;

/// The two parts of the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Section {
    /// Never elided: user messages, tool calls, errors, constraints.
    Ledger,
    /// Shrunk by salience: reasoning, replies and tool output.
    Conversation,
}

/// What a block holds, which decides its marker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// A user message (`#N ¶user:`).
    User,
    /// A previous LLM summary folded in (`¶summary:`).
    Summary,
    /// A tool call with its error and result lines (`¶call:`).
    Call,
    /// Lines of an earlier archive's ledger, verbatim.
    EarlierLedger,
    /// Assistant reasoning (`¶think:`).
    Think,
    /// An assistant reply (`¶ai:`).
    Ai,
    /// Tool output (`<out tool>` … `</out>`).
    Out(String),
    /// A marker line of an earlier archive.
    EarlierMarker,
}

impl Scope {
    /// The part of the archive a block of this scope is in.
    pub(crate) fn section(&self) -> Section {
        match self {
            Self::User | Self::Summary | Self::Call | Self::EarlierLedger => Section::Ledger,
            Self::Think | Self::Ai | Self::Out(_) | Self::EarlierMarker => Section::Conversation,
        }
    }
}

/// How a piece ranks for the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Rank {
    /// Dropped only when the budget cannot hold the ledger at all.
    Must,
    /// Kept in order of tier (higher first), then score, then recency.
    Optional { tier: u8, score: i32 },
}

/// Tiers of optional pieces, highest first.
pub(crate) mod tier {
    /// Every sentence of reasoning or a reply that states a fact, ordered
    /// by what each says for its length (see [`super::fact_score`]).
    pub(crate) const FACTS: u8 = 7;
    /// Error lines beyond the guaranteed ones.
    pub(crate) const ERRORS: u8 = 5;
    /// The best piece of each reasoning or reply (every message keeps
    /// something before any loses everything), the best few fact lines of
    /// each command's output, and the last line a command printed.
    pub(crate) const CONVERSATION_BEST: u8 = 6;
    /// A previous LLM summary beyond its guaranteed part.
    pub(crate) const SUMMARY: u8 = 4;
    /// The rest of the conversation, and the middle of long user messages.
    pub(crate) const CONVERSATION: u8 = 3;
    /// The best line of each tool output.
    pub(crate) const OUTPUT_BEST: u8 = 2;
    /// The rest of tool output, and earlier markers.
    pub(crate) const OUTPUT: u8 = 1;
}

/// One piece of a block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Piece {
    /// What goes in front of the piece when the one before it is kept:
    /// the original whitespace, or a line break and a lead such as `  ! `.
    pub sep: String,
    /// The text.
    pub text: String,
    /// How it ranks.
    pub rank: Rank,
    /// Leaving it out needs no marker (the ledger's optional lines: the
    /// full output is in the conversation).
    pub silent: bool,
    /// It states a fact (see [`read`]): it ranks with the best of the
    /// conversation.
    pub fact: bool,
    /// It stands for text an earlier archive had already left out (its
    /// marker, `[…]` or `[…ID…]`): never kept, printed as the marker of
    /// the gap it is in.
    pub gap: bool,
}

impl Piece {
    pub(crate) fn new(sep: impl Into<String>, text: impl Into<String>, rank: Rank) -> Self {
        Self {
            sep: sep.into(),
            text: text.into(),
            rank,
            silent: false,
            fact: false,
            gap: false,
        }
    }

    /// Text an earlier archive left out, shown by its marker `text`.
    pub(crate) fn gap(sep: impl Into<String>, text: impl Into<String>) -> Self {
        let mut piece = Self::new(
            sep,
            text,
            Rank::Optional {
                tier: tier::OUTPUT,
                score: i32::MIN,
            },
        );
        piece.gap = true;
        piece
    }
}

/// What a call line of the ledger shows and refers to, so that the
/// archive, as it prints, can check that each reference it prints points
/// at something printed before it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CallRefs {
    /// The tool.
    pub tool: String,
    /// The call with every path whole: equal keys are the same call.
    pub key: String,
    /// The line written out: every path whole, and a reference as the
    /// call it refers to.
    pub whole: String,
    /// Whether the line refers to an earlier call or shows the call itself.
    pub names: CallNames,
}

/// What a call line names besides its tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CallNames {
    /// A reference `=#N` to the call shown in full in turn N.
    Reference(u32),
    /// The call itself: the paths it shows whole, and the paths it names
    /// by their tails (`…/name`).
    Paths {
        shows: Vec<String>,
        tails: Vec<String>,
    },
}

/// A block: one message's share of the archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// What it holds; it decides the block's section.
    pub scope: Scope,
    /// The user turn it belongs to (0 before the first user message).
    pub turn: u32,
    /// The session entry it comes from, when known.
    pub id: Option<String>,
    pub pieces: Vec<Piece>,
    /// The same call this many times in a row.
    pub repeat: u32,
    /// The block's text was already shortened when it was built (call
    /// arguments): counted in the reading guide.
    pub shortened: bool,
    /// UTF-16 length of the history this block stands for.
    pub source_chars: usize,
    /// What its first piece shows and refers to, when it is a call.
    pub refs: Option<CallRefs>,
    /// Read back from an earlier archive: counted with it.
    pub earlier: bool,
}

impl Block {
    pub(crate) fn new(scope: Scope, turn: u32, id: Option<&str>) -> Self {
        Self {
            scope,
            turn,
            id: id.map(str::to_owned),
            pieces: Vec::new(),
            repeat: 1,
            shortened: false,
            source_chars: 0,
            refs: None,
            earlier: false,
        }
    }

    /// The part of the archive it is in.
    pub(crate) fn section(&self) -> Section {
        self.scope.section()
    }
}

/// How much of the ledger is guaranteed, from generous to tight; the
/// archive uses the first level whose ledger fits the budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// A user message up to this long is kept whole.
    pub user_whole: usize,
    /// Otherwise its head and tail of these lengths are kept…
    pub user_head: usize,
    pub user_tail: usize,
    /// …and up to this much of its middle that states a constraint or
    /// holds a number or a path.
    pub user_salient: usize,
    /// Error lines guaranteed per tool output, and their length.
    pub error_lines: usize,
    pub error_chars: usize,
    /// The head of a command kept in a call.
    pub command_chars: usize,
    /// A path argument, and any other short argument.
    pub path_chars: usize,
    pub arg_chars: usize,
    /// The last line a command printed.
    pub result_chars: usize,
    /// The guaranteed part of a previous LLM summary.
    pub summary_chars: usize,
}

/// The ledger levels, most generous first.
pub(crate) const LEVELS: [Limits; 3] = [
    Limits {
        user_whole: 4000,
        user_head: 600,
        user_tail: 400,
        user_salient: 800,
        error_lines: 2,
        error_chars: 160,
        command_chars: 120,
        path_chars: 300,
        arg_chars: 60,
        result_chars: 160,
        summary_chars: 3000,
    },
    Limits {
        user_whole: 3000,
        user_head: 400,
        user_tail: 300,
        user_salient: 600,
        error_lines: 1,
        error_chars: 140,
        command_chars: 100,
        path_chars: 200,
        arg_chars: 40,
        result_chars: 120,
        summary_chars: 1500,
    },
    Limits {
        user_whole: 300,
        user_head: 160,
        user_tail: 100,
        user_salient: 0,
        error_lines: 1,
        error_chars: 100,
        command_chars: 80,
        path_chars: 160,
        arg_chars: 24,
        result_chars: 80,
        summary_chars: 800,
    },
];

/// Longest prose piece before it is split at whitespace.
pub(crate) const PIECE_MAX: usize = 400;
/// Longest line of tool output kept (its head).
pub(crate) const OUTPUT_LINE_MAX: usize = 240;

/// Pieces of `text` split by `spans`, with the ranks `rank` gives each.
pub(crate) fn pieces_of(
    text: &str,
    spans: &[Span],
    mut rank: impl FnMut(usize, &str) -> Rank,
) -> Vec<Piece> {
    spans
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let piece = &text[s.text.clone()];
            let sep = if i == 0 { "" } else { &text[s.sep.clone()] };
            Piece::new(sep, piece, rank(i, piece))
        })
        .collect()
}

/// A user message: whole when short; else its head and tail, and the
/// pieces of its middle that state a constraint or hold a number or a path,
/// are guaranteed; the rest of its middle is optional.
pub(crate) fn user_block(text: &str, turn: u32, id: Option<&str>, limits: &Limits) -> Block {
    user_like(Scope::User, text, turn, id, limits.user_whole, limits)
}

/// A previous LLM summary: its first `summary_chars` guaranteed, the rest
/// optional and high.
pub(crate) fn summary_block(text: &str, limits: &Limits) -> Block {
    let mut block = Block::new(Scope::Summary, 0, None);
    block.source_chars = len16(text);
    let spans = split_lines(text, PIECE_MAX);
    let mut used = 0usize;
    block.pieces = pieces_of(text, &spans, |_, piece| {
        used += len16(piece) + 1;
        if used <= limits.summary_chars {
            Rank::Must
        } else {
            Rank::Optional {
                tier: tier::SUMMARY,
                score: score(piece),
            }
        }
    });
    block
}

fn user_like(
    scope: Scope,
    text: &str,
    turn: u32,
    id: Option<&str>,
    whole: usize,
    limits: &Limits,
) -> Block {
    let mut block = Block::new(scope, turn, id);
    block.source_chars = len16(text);
    let spans = split_prose(text, PIECE_MAX);
    if len16(text) <= whole {
        block.pieces = pieces_of(text, &spans, |_, _| Rank::Must);
        return block;
    }
    let lens: Vec<usize> = spans.iter().map(|s| len16(&text[s.text.clone()])).collect();
    let n = spans.len();
    let mut must = vec![false; n];
    let mut used = 0usize;
    for i in 0..n {
        if used + lens[i] > limits.user_head && i > 0 {
            break;
        }
        must[i] = true;
        used += lens[i] + 1;
    }
    used = 0;
    for i in (0..n).rev() {
        if used + lens[i] > limits.user_tail && i + 1 < n {
            break;
        }
        must[i] = true;
        used += lens[i] + 1;
    }
    // The salient middle, best first, then in order.
    let mut middle: Vec<(i32, usize)> = (0..n)
        .filter(|&i| !must[i])
        .map(|i| {
            let piece = &text[spans[i].text.clone()];
            let s = score(piece);
            let wanted = states_constraint(piece) || s >= 4;
            (if wanted { s } else { i32::MIN }, i)
        })
        .filter(|&(s, _)| s > i32::MIN)
        .collect();
    middle.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    used = 0;
    for (_, i) in middle {
        if used + lens[i] > limits.user_salient {
            continue;
        }
        must[i] = true;
        used += lens[i] + 1;
    }
    block.pieces = pieces_of(text, &spans, |i, piece| {
        if must[i] {
            Rank::Must
        } else {
            Rank::Optional {
                tier: tier::CONVERSATION,
                score: score(piece) + 6,
            }
        }
    });
    block
}

/// Reasoning or a reply: every piece optional, scored by itself (the
/// archive then weighs it against the rest of the history and ranks its
/// best piece higher: see `novelty`).
pub(crate) fn prose_block(scope: Scope, text: &str, turn: u32, id: Option<&str>) -> Block {
    let mut block = Block::new(scope, turn, id);
    block.source_chars = len16(text);
    let spans = split_prose(text, PIECE_MAX);
    block.pieces = spans
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let piece = &text[s.text.clone()];
            let sep = if i == 0 { "" } else { &text[s.sep.clone()] };
            let reading = read(piece);
            let mut p = Piece::new(
                sep,
                piece,
                Rank::Optional {
                    tier: tier::CONVERSATION,
                    score: reading.score,
                },
            );
            p.fact = reading.fact;
            p
        })
        .collect();
    block
}

/// The score a fact ranks by among facts: its score for its length (with
/// what keeping a piece costs besides its text), so that where the budget
/// cannot hold every fact it holds as many as it can.
pub(crate) fn fact_score(score: i32, text: &str) -> i32 {
    let cost = i32::try_from(len16(text))
        .unwrap_or(i32::MAX / 2)
        .saturating_add(32);
    score.saturating_mul(256) / cost
}

/// The score and index of the best-scored optional piece of `block` (the
/// later one of equals).
pub(crate) fn best_optional(block: &Block) -> Option<(i32, usize)> {
    block
        .pieces
        .iter()
        .enumerate()
        .filter_map(|(i, p)| match p.rank {
            Rank::Optional { score, .. } => Some((score, i)),
            Rank::Must => None,
        })
        .max()
}

/// Moves the best-scored optional piece of `block` up to `to` (the later
/// one of equals).
pub(crate) fn promote_best(block: &mut Block, to: u8, min_score: i32) {
    if let Some((score, i)) = best_optional(block).filter(|&(score, _)| score >= min_score) {
        block.pieces[i].rank = Rank::Optional { tier: to, score };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn must_text(block: &Block) -> String {
        block
            .pieces
            .iter()
            .filter(|p| p.rank == Rank::Must)
            .map(|p| p.text.as_str())
            .collect::<Vec<_>>()
            .join(" | ")
    }

    #[test]
    fn a_short_user_message_is_guaranteed_whole() {
        let b = user_block("Fix it. Then run the tests.", 1, Some("a1"), &LEVELS[0]);
        assert_eq!(must_text(&b), "Fix it. | Then run the tests.");
        assert_eq!(b.id.as_deref(), Some("a1"));
    }

    #[test]
    fn a_long_user_message_keeps_head_tail_and_its_constraints() {
        let filler = "This sentence is here to make the message long. ".repeat(60);
        let text = format!(
            "Please port the parser. {filler}Never touch the vendored folder. {filler}Thanks, that is all."
        );
        let b = user_block(&text, 1, None, &LEVELS[0]);
        let must = must_text(&b);
        assert!(must.starts_with("Please port the parser."), "{must}");
        assert!(must.ends_with("Thanks, that is all."), "{must}");
        assert!(must.contains("Never touch the vendored folder."), "{must}");
        assert!(b.pieces.iter().any(|p| p.rank != Rank::Must));
    }
}
