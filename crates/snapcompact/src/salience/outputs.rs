//! What the builds of one history at its ledger levels share: each tool
//! output read once (its error lines, their forms and scores, its last
//! line) and its conversation block built once, since neither depends on
//! how tight the ledger is. A build at a level that does not fit only
//! needs the ledger's cost, so it holds a stand-in for each output block,
//! and the build that is kept gets the real blocks.

use std::collections::HashSet;

use super::blocks::{Block, OutputCap, Piece, Rank, Scope, output_block, tier};
use super::calls::{READ_TOOLS, WRITE_TOOLS};
use super::text::{is_error_line, score, shape, split_lines};

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
}

impl Outputs {
    /// The analysis of output number `seq`, read now if this is the first
    /// build to meet it.
    pub(crate) fn analysis(
        &mut self,
        seq: usize,
        tool: &str,
        text: &str,
        is_error: bool,
    ) -> &Analysis {
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
            let lifted: Vec<String> = self.analyses[seq]
                .lifted()
                .into_iter()
                .map(str::to_owned)
                .collect();
            self.blocks
                .push(Some(output_block(tool, text, turn, id, &lifted, cap)));
        }
        let mut stand_in = Block::new(Scope::Out(tool.to_owned()), turn, id);
        if self.blocks[seq]
            .as_ref()
            .is_some_and(|b| b.pieces.iter().any(|p| !p.silent))
        {
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

    /// The real block of output number `seq` in place of its stand-in.
    pub(crate) fn take(&mut self, seq: usize, stand_in: &Block) -> Option<Block> {
        let mut block = self.blocks.get_mut(seq)?.take()?;
        block.turn = stand_in.turn;
        block.id.clone_from(&stand_in.id);
        Some(block)
    }
}
