//! Tool output: its conversation block (its lines, within the cap, and
//! its statements wherever they stand), and what the builds of one
//! history at its ledger levels share: each tool output read once (its
//! error lines, their forms and scores, its last line) and its
//! conversation block built once, since neither depends on how tight the
//! ledger is. A build at a level that does not fit only needs the
//! ledger's cost, so it holds a stand-in for each output block, and the
//! build that is kept gets the real blocks.

use std::collections::HashSet;

use super::blocks::{Block, OUTPUT_LINE_MAX, Piece, Rank, Scope, promote_best, prose_block, tier};
use super::calls::{READ_TOOLS, WRITE_TOOLS};
use super::score::{is_error_line, read, reads_as_statement, score};
use super::text::{Span, shape, shorten_head, split_lines};
use crate::parallel::{map_in_order, threads_for};
use crate::util::len16;

/// The error lines of one output that are looked at (a build can print
/// thousands).
const ERROR_CANDIDATES: usize = 200;

/// One error-looking line of an output.
#[derive(Debug, Clone)]
pub(crate) struct ErrorLine {
    pub text: String,
    /// Its form (numbers, quotes and file names masked).
    pub form: String,
    pub score: i32,
}

/// Tool output: its lines, optional; `skip` lines (already in the ledger)
/// left out. The last lines and the first line count a little more, since
/// results and errors sit at the end and headers at the start. A line
/// that states a fact ([`reads_as_statement`] and [`read`]) is offered
/// wherever it stands, beyond the cap too, and the best few of them rank
/// with the best of the conversation: a decision in a commit message or a
/// measured value in a log is not noise because a command printed it.
/// `facts` is false for the content of a file read and the confirmation
/// of a change: the file holds them.
pub(crate) fn output_block(
    tool: &str,
    text: &str,
    turn: u32,
    id: Option<&str>,
    skip: &[String],
    cap: OutputCap,
    facts: bool,
) -> Block {
    let mut block = Block::new(Scope::Out(tool.to_owned()), turn, id);
    block.source_chars = len16(text);
    let spans = split_lines(text, usize::MAX);
    let n = spans.len();
    let offered = cap.offered(text, &spans);
    let skip: HashSet<&str> = skip.iter().map(String::as_str).collect();
    // Lines beyond the cap not shown since the last one shown.
    let mut hidden = 0usize;
    for (i, span) in spans.iter().enumerate() {
        let line = &text[span.text.clone()];
        let sep = if block.pieces.is_empty() {
            String::new()
        } else {
            // One line break, then the line's own indentation.
            let original = &text[span.sep.clone()];
            format!("\n{}", original.rsplit('\n').next().unwrap_or_default())
        };
        let statement = facts && !skip.contains(line) && reads_as_statement(line);
        let reading = statement.then(|| read(line));
        let fact = reading.is_some_and(|r| r.fact);
        if !offered[i] && !fact {
            hidden += 1;
            continue;
        }
        if hidden > 0 {
            block.shortened = true;
            block.pieces.push(placeholder(hidden));
            hidden = 0;
        }
        if skip.contains(line) {
            continue;
        }
        let (shown, cut) = shorten_head(line, OUTPUT_LINE_MAX);
        block.shortened |= cut;
        // Results sit at the end and headers at the start; a fact counts
        // wherever it stands.
        let position = if fact {
            4
        } else if i + 3 >= n {
            6
        } else if i == 0 {
            3
        } else {
            0
        };
        let mut piece = Piece::new(
            sep,
            shown,
            Rank::Optional {
                tier: tier::OUTPUT,
                score: reading.map_or_else(|| score(line), |r| r.score) + position - 4,
            },
        );
        piece.fact = fact;
        block.pieces.push(piece);
    }
    if hidden > 0 {
        block.shortened = true;
        block.pieces.push(placeholder(hidden));
    }
    promote_best(&mut block, tier::OUTPUT_BEST, i32::MIN);
    promote_facts(&mut block);
    block
}

/// The stand-in for `hidden` lines beyond the cap, kept only if the
/// budget has nothing better.
/// A stand-in for a block of `scope`: empty, or with one empty optional
/// piece when the real block `shows` something, so it prints as the real
/// block does when nothing of it is kept.
fn stand_in_block(scope: Scope, turn: u32, id: Option<&str>, shows: bool) -> Block {
    let mut stand_in = Block::new(scope, turn, id);
    if shows {
        stand_in.pieces.push(Piece::new(
            "",
            "",
            Rank::Optional {
                tier: tier::OUTPUT,
                score: i32::MIN,
            },
        ));
    }
    stand_in
}

fn placeholder(hidden: usize) -> Piece {
    Piece::new(
        "\n",
        format!("[…{hidden} lines…]"),
        Rank::Optional {
            tier: tier::OUTPUT,
            score: i32::MIN,
        },
    )
}

/// The fact lines of one output that rank with the best of the
/// conversation: an output of many (a configuration printed whole) offers
/// its best few, the rest compete as output.
const FACT_LINES: usize = 3;

fn promote_facts(block: &mut Block) {
    let mut facts: Vec<(i32, usize)> = block
        .pieces
        .iter()
        .enumerate()
        .filter(|(_, p)| p.fact)
        .filter_map(|(i, p)| match p.rank {
            Rank::Optional { score, .. } => Some((score, i)),
            Rank::Must => None,
        })
        .collect();
    facts.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for (k, &(score, i)) in facts.iter().enumerate() {
        if k < FACT_LINES {
            block.pieces[i].rank = Rank::Optional {
                tier: tier::CONVERSATION_BEST,
                score,
            };
        } else {
            block.pieces[i].fact = false;
        }
    }
}

/// How much of one tool output the conversation may show at most: its
/// head and its tail, `head_ratio` of `max` UTF-16 units from the head
/// (the archive's `toolResultMaxChars`, unlimited when `None`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct OutputCap {
    pub max: Option<usize>,
    pub head_ratio: f64,
}

impl OutputCap {
    /// No cap.
    pub(crate) const NONE: Self = Self {
        max: None,
        head_ratio: 0.6,
    };

    /// Which lines are offered: all within the cap, else those of the head
    /// and the tail that fit their shares.
    fn offered(&self, text: &str, spans: &[Span]) -> Vec<bool> {
        let lens: Vec<usize> = spans
            .iter()
            .map(|s| len16(&text[s.text.clone()]) + 1)
            .collect();
        let total: usize = lens.iter().sum();
        let Some(max) = self.max.filter(|&m| total > m) else {
            return vec![true; spans.len()];
        };
        let ratio = if self.head_ratio.is_nan() {
            0.0
        } else {
            self.head_ratio.clamp(0.0, 1.0)
        };
        let head = (max as f64 * ratio).round() as usize;
        let tail = max.saturating_sub(head);
        let mut offered = vec![false; spans.len()];
        let mut used = 0usize;
        for (i, len) in lens.iter().enumerate() {
            if used + len > head {
                break;
            }
            offered[i] = true;
            used += len;
        }
        used = 0;
        for (i, len) in lens.iter().enumerate().rev() {
            if used + len > tail || offered[i] {
                break;
            }
            offered[i] = true;
            used += len;
        }
        // A line longer than its share still shows its head.
        if let Some(first) = offered.first_mut() {
            *first = true;
        }
        if let Some(last) = offered.last_mut() {
            *last = true;
        }
        offered
    }
}

/// A tool output as the ledger reads it.
#[derive(Debug, Clone)]
pub(crate) struct Analysis {
    /// A read of a file, or a change to one.
    pub reads: bool,
    pub writes: bool,
    /// The error-looking lines, each once, in their order (a failed call
    /// with none: its last line).
    pub errors: Vec<ErrorLine>,
    /// The last line with its score.
    pub last: Option<(String, i32)>,
}

impl Analysis {
    fn new(tool: &str, text: &str, is_error: bool) -> Self {
        let name = tool.to_ascii_lowercase();
        let reads = READ_TOOLS.contains(&name.as_str());
        let writes = WRITE_TOOLS.contains(&name.as_str());
        let lines: Vec<&str> = split_lines(text, usize::MAX)
            .into_iter()
            .map(|s| &text[s.text])
            .collect();
        let mut errors: Vec<&str> = Vec::new();
        if is_error || !reads {
            let mut seen: HashSet<&str> = HashSet::new();
            for line in &lines {
                if errors.len() == ERROR_CANDIDATES {
                    break;
                }
                if is_error_line(line) && seen.insert(line) {
                    errors.push(line);
                }
            }
            if errors.is_empty()
                && is_error
                && let Some(last) = lines.last()
            {
                errors.push(last);
            }
        }
        Self {
            reads,
            writes,
            errors: errors
                .into_iter()
                .map(|l| ErrorLine {
                    text: l.to_owned(),
                    form: shape(l),
                    score: score(l),
                })
                .collect(),
            last: lines.last().map(|l| ((*l).to_owned(), score(l))),
        }
    }

    /// The output's conversation block, without the lines the ledger
    /// lifts (its turn and entry are set when the build meets it).
    fn block(&self, tool: &str, text: &str, cap: OutputCap) -> Block {
        let lifted: Vec<String> = self.lifted().into_iter().map(str::to_owned).collect();
        let facts = !self.reads && !self.writes;
        output_block(tool, text, 0, None, &lifted, cap, facts)
    }

    /// The lines the ledger lifts out of the output: every error line,
    /// and a command's last line.
    pub(crate) fn lifted(&self) -> Vec<&str> {
        let mut lifted: Vec<&str> = self.errors.iter().map(|e| e.text.as_str()).collect();
        if let Some((last, _)) = &self.last
            && self.lifts_last()
        {
            lifted.push(last);
        }
        lifted
    }

    /// Whether the last line goes under the call: a command's, unless it
    /// is one of the error lines.
    pub(crate) fn lifts_last(&self) -> bool {
        !self.reads
            && !self.writes
            && self
                .last
                .as_ref()
                .is_some_and(|(last, _)| !self.errors.iter().any(|e| e.text == *last))
    }
}

/// The tool outputs of one history, by their order in it.
#[derive(Debug, Default)]
pub(crate) struct Outputs {
    analyses: Vec<Analysis>,
    blocks: Vec<Option<Block>>,
    /// The tool and length of each output read ahead, to check that a
    /// build meets the outputs in the order they were read.
    read: Vec<(String, usize)>,
    /// Each reasoning and reply, read once too, by its number.
    prose: Vec<Option<Block>>,
    /// A build met an output other than the one read ahead as its number.
    missed_ahead: bool,
}

/// One tool output as the builder meets it: the tool, the text, whether
/// the call failed.
pub(crate) type Output = (String, String, bool);

impl Outputs {
    /// Every output of a history read at once, on every core the process
    /// may use: each output's analysis and conversation block depend on
    /// that output alone, and they are nearly all of an archive's work.
    pub(crate) fn read_ahead(outputs: &[Output], cap: OutputCap) -> Self {
        let threads = threads_for(outputs.len());
        let read: Result<Vec<(Analysis, Block)>, std::convert::Infallible> =
            map_in_order(outputs, threads, |(tool, text, is_error)| {
                let analysis = Analysis::new(tool, text, *is_error);
                let block = analysis.block(tool, text, cap);
                Ok((analysis, block))
            });
        let (analyses, blocks) = read
            .unwrap_or_default()
            .into_iter()
            .map(|(a, b)| (a, Some(b)))
            .unzip();
        Self {
            analyses,
            blocks,
            read: outputs
                .iter()
                .map(|(tool, text, _)| (tool.clone(), text.len()))
                .collect(),
            prose: Vec::new(),
            missed_ahead: false,
        }
    }

    /// Whether every output a build met was the one read ahead as its
    /// number (for tests).
    #[cfg(test)]
    pub(crate) fn met_as_read(&self) -> bool {
        !self.missed_ahead
    }

    /// The analysis of output number `seq`, read now if this is the first
    /// build to meet it (or if it is not the output read ahead as that
    /// number).
    pub(crate) fn analysis(
        &mut self,
        seq: usize,
        tool: &str,
        text: &str,
        is_error: bool,
    ) -> &Analysis {
        let ahead = self
            .read
            .get(seq)
            .is_some_and(|(t, len)| t == tool && *len == text.len());
        if !ahead && seq < self.read.len() {
            // Not what was read ahead: read from here on as it comes.
            self.missed_ahead = true;
            self.read.truncate(seq);
            self.analyses.truncate(seq);
            self.blocks.truncate(seq);
        }
        if self.analyses.len() <= seq {
            self.analyses.push(Analysis::new(tool, text, is_error));
        }
        &self.analyses[seq]
    }

    /// A stand-in for the conversation block of output number `seq` of
    /// `tool` (the real one built now if this is the first build to meet
    /// it): printed as the real block is when nothing of it is kept, which
    /// is all the ledger's cost sees.
    pub(crate) fn stand_in(
        &mut self,
        seq: usize,
        tool: &str,
        text: &str,
        turn: u32,
        id: Option<&str>,
        cap: OutputCap,
    ) -> Block {
        if self.blocks.len() <= seq {
            let mut block = self.analyses[seq].block(tool, text, cap);
            block.turn = turn;
            block.id = id.map(str::to_owned);
            self.blocks.push(Some(block));
        }
        let shows = self.blocks[seq]
            .as_ref()
            .is_some_and(|b| b.pieces.iter().any(|p| !p.silent));
        stand_in_block(Scope::Out(tool.to_owned()), turn, id, shows)
    }

    /// A stand-in for reasoning or reply number `seq` (its block read now
    /// if this is the first build to meet it), as [`Outputs::stand_in`]
    /// is for an output: its pieces are all optional.
    pub(crate) fn prose_stand_in(
        &mut self,
        seq: usize,
        scope: Scope,
        text: &str,
        turn: u32,
        id: Option<&str>,
    ) -> Block {
        if self.prose.len() <= seq {
            self.prose
                .push(Some(prose_block(scope.clone(), text, turn, id)));
        }
        let shows = self.prose[seq]
            .as_ref()
            .is_some_and(|b| !b.pieces.is_empty());
        stand_in_block(scope, turn, id, shows)
    }

    /// The real block of reasoning or reply number `seq` in place of its
    /// stand-in.
    pub(crate) fn take_prose(&mut self, seq: usize, stand_in: &Block) -> Option<Block> {
        let mut block = self.prose.get_mut(seq)?.take()?;
        block.turn = stand_in.turn;
        block.id.clone_from(&stand_in.id);
        Some(block)
    }

    /// The real block of output number `seq` in place of its stand-in.
    pub(crate) fn take(&mut self, seq: usize, stand_in: &Block) -> Option<Block> {
        let mut block = self.blocks.get_mut(seq)?.take()?;
        block.turn = stand_in.turn;
        block.id.clone_from(&stand_in.id);
        Some(block)
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::tier;
    use super::*;

    #[test]
    fn a_capped_output_offers_its_head_and_tail_and_one_stand_in() {
        use std::fmt::Write as _;
        let text = (0..100).fold(String::new(), |mut out, i| {
            let _ = writeln!(out, "line {i:03}");
            out
        });
        let cap = OutputCap {
            max: Some(100),
            head_ratio: 0.6,
        };
        let b = output_block("bash", &text, 1, None, &[], cap, true);
        let texts: Vec<&str> = b.pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(
            texts,
            [
                "line 000",
                "line 001",
                "line 002",
                "line 003",
                "line 004",
                "line 005",
                "[…90 lines…]",
                "line 096",
                "line 097",
                "line 098",
                "line 099"
            ]
        );
    }

    fn fact_lines(b: &Block) -> Vec<&str> {
        b.pieces
            .iter()
            .filter(|p| {
                matches!(
                    p.rank,
                    Rank::Optional {
                        tier: tier::CONVERSATION_BEST,
                        ..
                    }
                )
            })
            .map(|p| p.text.as_str())
            .collect()
    }

    #[test]
    fn a_statement_in_the_middle_of_a_long_output_is_offered_with_the_best() {
        use std::fmt::Write as _;
        let mut text = (0..200).fold(String::new(), |mut out, i| {
            let _ = writeln!(out, "    let x{i} = reader.get({i})?;");
            out
        });
        text.push_str("note: the importer now batches 250 rows per insert\n");
        for i in 0..200 {
            let _ = writeln!(text, "    let y{i} = writer.put({i})?;");
        }
        let cap = OutputCap {
            max: Some(2000),
            head_ratio: 0.6,
        };
        let b = output_block("bash", &text, 1, None, &[], cap, true);
        assert_eq!(
            fact_lines(&b),
            ["note: the importer now batches 250 rows per insert"]
        );
        // The lines hidden by the cap on either side have a stand-in each.
        let stand_ins = b
            .pieces
            .iter()
            .filter(|p| p.text.ends_with("lines…]"))
            .count();
        assert_eq!(stand_ins, 2);
        // A file's content is not searched for statements.
        let read = output_block("read", &text, 1, None, &[], cap, false);
        assert!(fact_lines(&read).is_empty());
    }

    #[test]
    fn rows_of_a_listing_are_data_not_statements() {
        let text = "\
total 24
drwxr-xr-x  5 dev dev 4096 Jan  1 10:00 src
drwxr-xr-x  2 dev dev 4096 Jan  1 10:00 tests
-rw-r--r--  1 dev dev 1290 Jan  1 10:00 Cargo.toml
-rw-r--r--  1 dev dev 5120 Jan  1 10:00 README.md
done";
        let b = output_block("bash", text, 1, None, &[], OutputCap::NONE, true);
        assert!(fact_lines(&b).is_empty(), "{:?}", fact_lines(&b));
    }

    #[test]
    fn output_lines_skip_what_the_ledger_holds_and_favour_the_end() {
        let b = output_block(
            "bash",
            "start\nerror: boom\nmiddle\nmore\nlast",
            1,
            Some("r1"),
            &["error: boom".to_owned()],
            OutputCap::NONE,
            true,
        );
        let texts: Vec<&str> = b.pieces.iter().map(|p| p.text.as_str()).collect();
        assert_eq!(texts, ["start", "middle", "more", "last"]);
        assert!(matches!(
            b.pieces[3].rank,
            Rank::Optional {
                tier: tier::OUTPUT_BEST,
                ..
            }
        ));
    }
}
