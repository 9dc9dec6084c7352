//! Spending the budget: every guaranteed piece first, then the optional
//! ones by tier, score and recency; and printing the kept pieces with a
//! marker wherever something was left out.

use std::cmp::Reverse;
use std::fmt::Write as _;

use std::collections::{HashMap, HashSet};

use super::blocks::{Block, CallNames, CallRefs, Piece, Rank, Scope, Section};
use super::score::{read, states_constraint};
use super::{CONVERSATION_HEADING, LEDGER_HEADING, marker, run_marker};
use crate::util::len16;

/// Which pieces of which blocks are kept.
pub(crate) type Kept = Vec<Vec<bool>>;

/// Keeps every guaranteed piece and then optional pieces while the
/// printed archive stays within `budget` UTF-16 units. The guaranteed
/// pieces must fit (see [`must_cost`]); if they do not, whole ledger
/// blocks are dropped oldest first.
pub(crate) fn select(blocks: &[Block], budget: usize) -> Kept {
    let mut kept: Kept = blocks
        .iter()
        .map(|b| b.pieces.iter().map(|p| p.rank == Rank::Must).collect())
        .collect();
    // Over budget with the guarantees alone: drop the oldest blocks, as
    // few as will do (found by bisection: fewer blocks never print longer,
    // give or take a run marker, which the final check below settles),
    // keeping the facts of the user messages among them (their
    // constraints, decisions, values, paths and commands) while the rest
    // of the ledger can make room for them; only when it cannot do they go
    // with their blocks.
    let guaranteed = kept.clone();
    let user_facts = user_facts(blocks);
    let dropping_keeping = |n: usize, facts: bool| -> Kept {
        let mut k = guaranteed.clone();
        for (b, pieces) in k.iter_mut().enumerate().take(n) {
            for (p, x) in pieces.iter_mut().enumerate() {
                *x = facts && *x && user_facts[b][p];
            }
        }
        k
    };
    let all = blocks.len();
    let facts = len16(&render(blocks, &dropping_keeping(all, true))) <= budget;
    let dropping = |n: usize| dropping_keeping(n, facts);
    let mut oldest = 0usize;
    if len16(&render(blocks, &kept)) > budget {
        // The ledger's newest entries leave the conversation's facts room
        // (those of the dropped entries' messages too), up to a quarter of
        // the budget, when the ledger can be that short at all.
        let room = facts_room(blocks).min(budget / 4);
        let target = if len16(&render(blocks, &dropping(all))) <= budget - room {
            budget - room
        } else {
            budget
        };
        let (mut lo, mut hi) = (1usize, blocks.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if len16(&render(blocks, &dropping(mid))) <= target {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        oldest = lo;
        kept = dropping(oldest);
        while len16(&render(blocks, &kept)) > target && oldest < blocks.len() {
            oldest += 1;
            kept = dropping(oldest);
        }
        if len16(&render(blocks, &kept)) > budget {
            kept.iter_mut().flatten().for_each(|k| *k = false);
            return kept;
        }
    }
    // Of the dropped entries, only the conversation's facts compete.
    let mut order: Vec<(usize, usize)> = blocks
        .iter()
        .enumerate()
        .flat_map(|(b, block)| {
            block
                .pieces
                .iter()
                .enumerate()
                .filter_map(move |(p, piece)| match piece.rank {
                    Rank::Optional { .. }
                        if !piece.gap && (b >= oldest || conversation_fact(block, piece)) =>
                    {
                        Some((b, p))
                    }
                    Rank::Optional { .. } | Rank::Must => None,
                })
        })
        .collect();
    order.sort_by_key(|&(b, p)| {
        let Rank::Optional { tier, score } = blocks[b].pieces[p].rank else {
            unreachable!("only optional pieces are ordered")
        };
        (Reverse(tier), Reverse(score), Reverse(b), p)
    });
    // Greedy with an upper bound of what each piece adds, then fill what the
    // bound overestimated, a few rounds.
    let mut used = len16(&render(blocks, &kept));
    for _ in 0..4 {
        let mut added = false;
        for &(b, p) in &order {
            if kept[b][p] {
                continue;
            }
            let cost = piece_cost(blocks, &kept, b, p);
            if used + cost <= budget {
                kept[b][p] = true;
                used += cost;
                added = true;
            }
        }
        let actual = len16(&render(blocks, &kept));
        if actual > budget {
            // The bound failed (it should not): give back the last pieces.
            for &(b, p) in order.iter().rev() {
                if kept[b][p] {
                    kept[b][p] = false;
                    if len16(&render(blocks, &kept)) <= budget {
                        break;
                    }
                }
            }
            break;
        }
        used = actual;
        if !added {
            break;
        }
    }
    kept
}

/// A sentence of reasoning or a reply, or a line of tool output, that
/// states a fact.
fn conversation_fact(block: &Block, piece: &Piece) -> bool {
    block.section() == Section::Conversation
        && piece.fact
        && !piece.gap
        && matches!(piece.rank, Rank::Optional { .. })
}

/// What the conversation's facts would print at most: each with its
/// separator, a gap marker and its block's framing.
fn facts_room(blocks: &[Block]) -> usize {
    blocks
        .iter()
        .flat_map(|b| b.pieces.iter().map(move |p| (b, p)))
        .filter(|(b, p)| conversation_fact(b, p))
        .map(|(b, p)| {
            len16(&p.sep).max(1) + len16(&p.text) + len16(&marker(b.id.as_deref())) + framing(b)
        })
        .sum()
}

/// Which guaranteed pieces are facts of a user message: a sentence that
/// states a constraint or a decision, or a fact (a value, a path, a
/// command, trouble).
fn user_facts(blocks: &[Block]) -> Vec<Vec<bool>> {
    blocks
        .iter()
        .map(|b| {
            b.pieces
                .iter()
                .map(|p| {
                    b.scope == Scope::User
                        && p.rank == Rank::Must
                        && !p.gap
                        && (states_constraint(&p.text) || read(&p.text).fact)
                })
                .collect()
        })
        .collect()
}

/// What keeping piece `p` of block `b` can add at most: its text and
/// separator, the gap markers it adds (it may split a gap in two, or close
/// one), and, when it opens the block, the block's framing, the run marker
/// it may split in two and a marker the next block may need again.
fn piece_cost(blocks: &[Block], kept: &Kept, b: usize, p: usize) -> usize {
    let block = &blocks[b];
    let piece = &block.pieces[p];
    let mut cost = len16(&piece.sep).max(1) + len16(&piece.text);
    let open = kept[b].iter().any(|&k| k);
    if !piece.silent {
        let dropped_beside = |range: &mut dyn Iterator<Item = usize>| {
            for i in range {
                if kept[b][i] {
                    return false;
                }
                if !block.pieces[i].silent {
                    return true;
                }
            }
            false
        };
        let left = dropped_beside(&mut (0..p).rev());
        let right = dropped_beside(&mut (p + 1..block.pieces.len()));
        let gaps = usize::from(left) + usize::from(right);
        let before = usize::from(open);
        cost += gaps.saturating_sub(before) * (len16(&marker(block.id.as_deref())) + 2);
    }
    if !open {
        let in_run = |i: usize| {
            blocks[i].section() == block.section()
                && !kept[i].iter().any(|&k| k)
                && !blocks[i].pieces.iter().all(|p| p.silent)
        };
        let same = |i: &usize| blocks[*i].section() == block.section();
        let left = (0..b).rev().find(same).is_some_and(in_run);
        let right = (b + 1..blocks.len()).find(same).is_some_and(in_run);
        let runs = usize::from(left) + usize::from(right);
        cost += framing(block) + runs.saturating_sub(1) * (RUN_MARKER_MAX + 1) + FOLLOW_MAX;
    }
    cost
}

/// What a block's opening can add to the block after it: its scope marker
/// and turn again.
const FOLLOW_MAX: usize = 16;

/// The longest run marker, `[…ID to ID…]`, for ids up to 16 characters
/// (longer ids are rare; the final check keeps the budget regardless).
const RUN_MARKER_MAX: usize = 42;

/// The length of a block's prefix and closing.
fn framing(block: &Block) -> usize {
    let turn = if block.turn > 0 {
        block.turn.to_string().len() + 2
    } else {
        0
    };
    turn + match &block.scope {
        Scope::User => "¶user:".len(),
        Scope::Summary => "¶summary:".len(),
        Scope::Call => "¶call:".len() + 8,
        Scope::Think => "¶think:".len(),
        Scope::Ai => "¶ai:".len(),
        Scope::Out(tool) => len16(tool) + "<out >\n\n</out>".len(),
        Scope::EarlierLedger | Scope::EarlierMarker => 0,
    } + 1
}

/// One section being printed.
#[derive(Default)]
struct Part<'b> {
    lines: Vec<String>,
    /// Blocks left out whole since the last printed one.
    run: Vec<&'b Block>,
    last: Option<&'b Scope>,
    last_turn: u32,
}

impl Part<'_> {
    fn flush(&mut self) {
        if !self.run.is_empty() {
            self.lines.push(run_marker(&self.run));
            self.run.clear();
            self.last = None;
        }
    }
}

/// Prints the kept pieces: the ledger, then the conversation, each under
/// its heading; a run of blocks left out whole is one marker line. A call
/// line whose reference points at nothing printed before it is printed
/// so that it does (see [`Printed`]).
pub(crate) fn render(blocks: &[Block], kept: &Kept) -> String {
    let mut printed = Printed::default();
    let mut ledger = Part::default();
    let mut conversation = Part::default();
    let mut has_conversation = false;
    for (block, kept) in blocks.iter().zip(kept) {
        let part = match block.section() {
            Section::Ledger => &mut ledger,
            Section::Conversation => {
                has_conversation = true;
                &mut conversation
            }
        };
        if !kept.iter().any(|&k| k) {
            if !block.pieces.iter().all(|p| p.silent) {
                part.run.push(block);
            }
            continue;
        }
        part.flush();
        let mut line = String::new();
        let new_turn = block.turn > 0 && block.turn != part.last_turn;
        let same = part.last == Some(&block.scope);
        match &block.scope {
            Scope::User => {
                if block.turn > 0 {
                    let _ = write!(line, "#{} ", block.turn);
                }
                line.push_str("¶user:");
            }
            Scope::Summary => line.push_str("¶summary:"),
            Scope::Call if !same => line.push_str("¶call:"),
            Scope::Think | Scope::Ai | Scope::Out(_) if new_turn => {
                let _ = write!(line, "#{} ", block.turn);
            }
            _ => {}
        }
        match &block.scope {
            Scope::Think if new_turn || !same => line.push_str("¶think:"),
            Scope::Ai if new_turn || !same => line.push_str("¶ai:"),
            Scope::Out(tool) => {
                line.push_str("<out ");
                line.push_str(tool);
                line.push_str(">\n");
            }
            _ => {}
        }
        let first = block.refs.as_ref().and_then(|refs| {
            printed.call(
                refs,
                block.turn,
                block.pieces.first().map_or("", |p| p.text.as_str()),
            )
        });
        let opens_turn = match block.scope {
            Scope::User => true,
            Scope::EarlierLedger => block
                .pieces
                .first()
                .is_some_and(|p| p.text.starts_with('#')),
            _ => false,
        };
        if opens_turn && block.turn > 0 {
            printed.turns.insert(block.turn);
        }
        pieces(block, kept, first.as_deref(), &mut line);
        if let Scope::Out(_) = block.scope {
            line.push_str("\n</out>");
        }
        part.last = match block.scope {
            Scope::EarlierLedger | Scope::EarlierMarker => None,
            _ => Some(&block.scope),
        };
        if block.section() == Section::Conversation {
            part.last_turn = block.turn.max(part.last_turn);
        }
        part.lines.push(line);
    }
    ledger.flush();
    conversation.flush();
    let mut text = String::new();
    if !ledger.lines.is_empty() {
        text.push_str(LEDGER_HEADING);
        text.push('\n');
        text.push_str(&ledger.lines.join("\n"));
    }
    if has_conversation {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(CONVERSATION_HEADING);
        text.push('\n');
        text.push_str(&conversation.lines.join("\n"));
    }
    text
}

/// What the ledger printed so far: the turns whose opening line it
/// printed, each call it printed in full (by key) with the turn it was
/// printed in, how many calls of each tool a turn printed in full, and the
/// paths it printed whole.
#[derive(Default)]
struct Printed {
    turns: HashSet<u32>,
    calls: HashMap<String, u32>,
    tools: HashMap<(u32, String), usize>,
    paths: HashSet<String>,
}

impl Printed {
    /// How the call line of `refs` (printed as `line` in turn `turn`) is
    /// printed, when not as it is: a reference `=#N` to a call that turn N
    /// did not print (its opening line or the call left out) refers to the
    /// turn that printed it in full instead, when that turn printed no
    /// other call of the tool, or is written out; so is a line naming a
    /// path by its tail that was not printed whole. Remembers what the
    /// line prints.
    fn call(&mut self, refs: &CallRefs, turn: u32, line: &str) -> Option<String> {
        let printed = match &refs.names {
            &CallNames::Reference(n) => match self.calls.get(&refs.key) {
                Some(&m) if m == n && self.turns.contains(&n) => None,
                Some(&m)
                    if m != turn
                        && self.turns.contains(&m)
                        && self.tools.get(&(m, refs.tool.clone())) == Some(&1) =>
                {
                    retarget(line, &refs.tool, m).or_else(|| Some(refs.whole.clone()))
                }
                _ => Some(refs.whole.clone()),
            },
            CallNames::Paths { tails, .. } if tails.iter().all(|p| self.paths.contains(p)) => None,
            CallNames::Paths { .. } => Some(refs.whole.clone()),
        };
        let written_out = printed.as_deref() == Some(refs.whole.as_str());
        let shown = match &refs.names {
            CallNames::Reference(_) => None,
            CallNames::Paths { shows, tails } => Some((shows, tails)),
        };
        // The turn that shows a call in full, for the references after it:
        // the first, or a later one when the first's opening line is not
        // printed (a reference to it could not be read).
        let registered = self
            .calls
            .get(&refs.key)
            .is_some_and(|m| self.turns.contains(m));
        if (shown.is_some() || written_out) && !registered {
            self.calls.insert(refs.key.clone(), turn);
            *self.tools.entry((turn, refs.tool.clone())).or_default() += 1;
        }
        if let Some((shows, tails)) = shown {
            self.paths.extend(shows.iter().cloned());
            if written_out {
                self.paths.extend(tails.iter().cloned());
            }
        }
        printed
    }
}

/// `line` (a reference `tool(…=#N)…`) referring to turn `turn` instead.
fn retarget(line: &str, tool: &str, turn: u32) -> Option<String> {
    let open = line.find(&format!("{tool}("))?;
    let at = open + line[open..].find("=#")?;
    let close = at + line[at..].find(')')?;
    Some(format!(
        "{}{tool}(=#{turn}){}",
        &line[..open],
        &line[close + 1..]
    ))
}

/// Appends the kept pieces of `block` (with `first` in place of the first
/// piece's text, when given), a marker in each gap that is not silent, and
/// `×N` after a repeated call.
fn pieces(block: &Block, kept: &[bool], first: Option<&str>, out: &mut String) {
    // Where each gap starts; the last one names the entry, the others are
    // plain `[…]`.
    let mut gaps = Vec::new();
    let mut in_gap = false;
    for (i, (piece, &k)) in block.pieces.iter().zip(kept).enumerate() {
        if k {
            in_gap = false;
        } else if !piece.silent && !in_gap {
            gaps.push(i);
            in_gap = true;
        }
    }
    let last_gap = gaps.last().copied();
    let named = marker(block.id.as_deref());
    let mark = |at: usize| {
        if Some(at) == last_gap {
            named.as_str()
        } else {
            "[…]"
        }
    };
    let mut any = false;
    // A pending gap: where it starts, and whether on a new line.
    let mut gap: Option<(usize, bool)> = None;
    for (i, (piece, &k)) in block.pieces.iter().zip(kept).enumerate() {
        if !k {
            if !piece.silent && gap.is_none() {
                gap = Some((i, piece.sep.contains('\n')));
            }
            continue;
        }
        if let Some((at, newline)) = gap.take() {
            if any {
                out.push_str(if newline { "\n" } else { " " });
            }
            out.push_str(mark(at));
            out.push_str(if piece.sep.contains('\n') {
                &piece.sep
            } else {
                " "
            });
        } else if any {
            out.push_str(&piece.sep);
        }
        out.push_str(match first {
            Some(text) if i == 0 => text,
            _ => &piece.text,
        });
        if i == 0 && block.repeat > 1 {
            let _ = write!(out, " ×{}", block.repeat);
        }
        any = true;
    }
    if let Some((at, newline)) = gap {
        if any {
            out.push_str(if newline { "\n" } else { " " });
        }
        out.push_str(mark(at));
    }
}

/// What the guaranteed pieces cost when printed alone.
pub(crate) fn must_cost(blocks: &[Block]) -> usize {
    let kept: Kept = blocks
        .iter()
        .map(|b| b.pieces.iter().map(|p| p.rank == Rank::Must).collect())
        .collect();
    len16(&render(blocks, &kept))
}

#[cfg(test)]
mod tests {
    use super::super::blocks::{Piece, tier};
    use super::*;

    fn block(scope: Scope, turn: u32, id: &str, pieces: &[(&str, &str, Rank)]) -> Block {
        let mut b = Block::new(scope, turn, Some(id));
        b.pieces = pieces
            .iter()
            .map(|(sep, text, rank)| Piece::new(*sep, *text, *rank))
            .collect();
        b
    }

    fn opt(score: i32) -> Rank {
        Rank::Optional {
            tier: tier::CONVERSATION,
            score,
        }
    }

    fn sample() -> Vec<Block> {
        vec![
            block(Scope::User, 1, "u1", &[("", "Fix the bug.", Rank::Must)]),
            block(
                Scope::Call,
                1,
                "a1",
                &[("", "bash(command=make)", Rank::Must)],
            ),
            block(
                Scope::Ai,
                1,
                "a1",
                &[
                    ("", "Looking.", opt(-5)),
                    (" ", "The bug is in src/a.rs at line 120.", opt(12)),
                    (" ", "Done.", opt(-5)),
                ],
            ),
            block(
                Scope::Out("bash".into()),
                1,
                "r1",
                &[("", "cc a.c", opt(-4)), ("\n", "ok", opt(-2))],
            ),
        ]
    }

    #[test]
    fn everything_fits_verbatim() {
        let blocks = sample();
        let kept = select(&blocks, 10_000);
        assert_eq!(
            render(&blocks, &kept),
            "=== LEDGER ===\n#1 ¶user:Fix the bug.\n¶call:bash(command=make)\n\n=== CONVERSATION ===\n#1 ¶ai:Looking. The bug is in src/a.rs at line 120. Done.\n<out bash>\ncc a.c\nok\n</out>"
        );
    }

    /// What `select` keeps of `blocks` within `budget`, rendered: never
    /// longer than the budget.
    fn render_within(blocks: &[Block], budget: usize) -> String {
        let kept = select(blocks, budget);
        let text = render(blocks, &kept);
        assert!(len16(&text) <= budget, "{text}");
        text
    }

    #[test]
    fn a_tight_budget_keeps_the_ledger_and_the_salient_sentence() {
        let blocks = sample();
        let text = render_within(&blocks, must_cost(&blocks) + 80);
        assert_eq!(
            text,
            "=== LEDGER ===\n#1 ¶user:Fix the bug.\n¶call:bash(command=make)\n\n=== CONVERSATION ===\n#1 ¶ai:Looking. The bug is in src/a.rs at line 120. Done.\n[…r1…]"
        );
    }

    #[test]
    fn without_room_for_the_ledger_the_oldest_blocks_go() {
        let blocks = sample();
        let text = render_within(&blocks, must_cost(&blocks) - 10);
        assert_eq!(
            text,
            "=== LEDGER ===\n[…u1…]\n¶call:bash(command=make)\n\n=== CONVERSATION ===\n[…a1 to r1…]"
        );
    }

    #[test]
    fn a_ledger_too_long_leaves_the_conversations_facts_a_share() {
        // An early reply states a fact; twenty later turns of requests and
        // calls make a ledger longer than the budget.
        let mut blocks = vec![
            block(
                Scope::User,
                1,
                "u1",
                &[("", "Set up the queue.", Rank::Must)],
            ),
            block(
                Scope::Ai,
                1,
                "a1",
                &[(
                    "",
                    "Chose Redis streams over Kafka for the queue.",
                    Rank::Optional {
                        tier: tier::FACTS,
                        score: 20,
                    },
                )],
            ),
        ];
        blocks[1].pieces[0].fact = true;
        for t in 2..22 {
            let (u, c) = (format!("u{t}"), format!("c{t}"));
            let ask = format!("Now do part {t} of the plan, carefully.");
            let call = format!("bash(make part-{t} && ./check part-{t})");
            blocks.push(block(Scope::User, t, &u, &[("", ask.as_str(), Rank::Must)]));
            blocks.push(block(
                Scope::Call,
                t,
                &c,
                &[("", call.as_str(), Rank::Must)],
            ));
        }
        let budget = must_cost(&blocks) / 2;
        let text = render_within(&blocks, budget);
        assert!(
            text.contains("¶ai:Chose Redis streams over Kafka for the queue."),
            "{text}"
        );
        assert!(text.contains("part-21"), "the newest ledger stays: {text}");
        // Without a fact to keep, the ledger takes the whole budget.
        blocks[1].pieces[0].fact = false;
        let without = render_within(&blocks, budget);
        assert!(!without.contains("Redis"), "{without}");
        let first_kept = |t: &str| (2..22).find(|n| t.contains(&format!("part {n} "))).unwrap();
        assert!(
            first_kept(&without) < first_kept(&text),
            "the fact's room comes from the oldest ledger entries:\n{without}\n---\n{text}"
        );
    }
}
