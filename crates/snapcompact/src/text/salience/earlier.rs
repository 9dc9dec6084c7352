//! What came before: an earlier salience archive read back into blocks, a
//! transcript archive of the older format (the text frames of version 1,
//! or a PNG archive's source) parsed by its scope markers, or an LLM
//! summary folded in whole.

use super::blocks::{
    Block, CallNames, CallRefs, Limits, Piece, Rank, Scope, prose_block, summary_block, tier,
    user_block,
};
use std::collections::HashMap;

use super::calls::{READ_TOOLS, WRITE_TOOLS};
use super::outputs::{OutputCap, output_block};
use super::readback::{earlier_call_block, earlier_user_block, turn_prefix};
use super::score::is_error_line;
use super::text::shorten_head;
use super::{CONVERSATION_HEADING, LEDGER_HEADING};
use crate::util::len16;

/// The earlier history a compaction continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Earlier<'a> {
    /// Nothing: the archive starts here.
    None,
    /// A salience archive's text (this format).
    Archive(&'a str),
    /// A transcript with `¶user:`, `¶think:`, `¶ai:` and `¶call:` parts
    /// (the previous text-frame format, or a PNG archive's plain source).
    Transcript(&'a str),
    /// A summary written by a model.
    Summary(&'a str),
}

impl<'a> Earlier<'a> {
    /// An archive text in this format, else a transcript.
    pub fn archived(text: &'a str) -> Self {
        if is_salience_text(text) {
            Self::Archive(text)
        } else if text.trim().is_empty() {
            Self::None
        } else {
            Self::Transcript(text)
        }
    }

    /// UTF-16 length of the earlier text.
    pub fn chars(&self) -> usize {
        match self {
            Self::None => 0,
            Self::Archive(t) | Self::Transcript(t) | Self::Summary(t) => len16(t),
        }
    }
}

/// Whether `text` is a salience archive (it opens with one of its headings).
pub fn is_salience_text(text: &str) -> bool {
    text.starts_with(LEDGER_HEADING) || text.starts_with(CONVERSATION_HEADING)
}

/// The blocks of the earlier history and the last user turn it numbered.
pub(crate) fn earlier_blocks(earlier: Earlier<'_>, limits: &Limits) -> (Vec<Block>, u32) {
    match earlier {
        Earlier::None => (Vec::new(), 0),
        Earlier::Summary(text) if text.trim().is_empty() => (Vec::new(), 0),
        Earlier::Summary(text) => (vec![summary_block(text.trim(), limits)], 0),
        Earlier::Archive(text) => archive_blocks(text),
        Earlier::Transcript(text) => transcript_blocks(text, limits),
    }
}

/// An earlier salience archive: each ledger entry a guaranteed block as
/// it was printed, the conversation re-read into blocks that compete for
/// the budget again.
fn archive_blocks(text: &str) -> (Vec<Block>, u32) {
    let (ledger, conversation) = match text.find(&format!("\n\n{CONVERSATION_HEADING}\n")) {
        Some(at) => (&text[..at], &text[at + 2..]),
        None if text.starts_with(CONVERSATION_HEADING) => ("", text),
        None => (text, ""),
    };
    let mut blocks = Vec::new();
    let mut max_turn = 0u32;
    let mut in_call = false;
    for line in ledger.lines().skip(1) {
        let turn = turn_prefix(line).map(|(t, _)| t);
        let starts = turn.is_some()
            || line.starts_with('¶')
            || line.starts_with("[…")
            || (in_call && !line.starts_with(' '));
        if let Some(t) = turn {
            max_turn = max_turn.max(t);
        }
        let sep = if starts || blocks.is_empty() {
            ""
        } else {
            "\n"
        };
        if starts || blocks.is_empty() {
            in_call = line.starts_with("¶call:")
                || (in_call && turn.is_none() && !line.starts_with('¶') && !line.starts_with("[…"));
            blocks.push(Block::new(
                Scope::EarlierLedger,
                turn.unwrap_or(max_turn),
                None,
            ));
        }
        if let Some(block) = blocks.last_mut() {
            block.source_chars += len16(line) + 1;
            block.pieces.push(Piece::new(sep, line, Rank::Must));
        }
    }
    resolve_references(&mut blocks);
    for block in &mut blocks {
        if let Some(user) = earlier_user_block(block) {
            *block = user;
        } else if block.refs.is_some() {
            earlier_call_block(block);
        }
    }
    let mut current: Option<(Scope, u32, String)> = None;
    let flush = |current: &mut Option<(Scope, u32, String)>, blocks: &mut Vec<Block>| {
        if let Some((scope, turn, body)) = current.take() {
            blocks.push(match scope {
                Scope::Out(tool) => {
                    // What an earlier archive kept of a file it read or
                    // changed is content, as it was then.
                    let name = tool.to_ascii_lowercase();
                    let facts = !READ_TOOLS.contains(&name.as_str())
                        && !WRITE_TOOLS.contains(&name.as_str());
                    output_block(&tool, &body, turn, None, &[], OutputCap::NONE, facts)
                }
                Scope::EarlierMarker => marker_block(&body, turn),
                other => prose_block(other, &body, turn, None),
            });
        }
    };
    let mut turn = 0u32;
    let mut in_out = false;
    for line in conversation.lines().skip(1) {
        if in_out {
            if line == "</out>" {
                in_out = false;
                flush(&mut current, &mut blocks);
            } else if let Some((_, _, body)) = current.as_mut() {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(line);
            }
            continue;
        }
        let mut rest = line;
        if let Some((t, r)) = turn_prefix(line) {
            turn = t;
            max_turn = max_turn.max(t);
            rest = r;
        }
        let opened = if let Some(r) = rest.strip_prefix("¶think:") {
            Some((Scope::Think, r.to_owned()))
        } else if let Some(r) = rest.strip_prefix("¶ai:") {
            Some((Scope::Ai, r.to_owned()))
        } else if let Some(tool) = rest.strip_prefix("<out ").and_then(|r| r.strip_suffix('>')) {
            in_out = true;
            Some((Scope::Out(tool.to_owned()), String::new()))
        } else if rest.starts_with("[…") && rest.ends_with("…]") {
            Some((Scope::EarlierMarker, rest.to_owned()))
        } else {
            None
        };
        match opened {
            Some((scope, body)) => {
                flush(&mut current, &mut blocks);
                current = Some((scope, turn, body));
            }
            None => match current.as_mut() {
                Some((Scope::EarlierMarker, ..)) | None => {
                    flush(&mut current, &mut blocks);
                    current = Some((Scope::Ai, turn, rest.to_owned()));
                }
                Some((_, _, body)) => {
                    body.push('\n');
                    body.push_str(rest);
                }
            },
        }
    }
    flush(&mut current, &mut blocks);
    (blocks, max_turn)
}

/// Gives each call line of an earlier ledger what it shows and refers to
/// (`name(=#N)`, `name(HEAD… =#N)`, a path as `…/tail`), with the line
/// written out, so that the archive prints it whole where what it refers
/// to is not printed. A line whose reference is not in the ledger (an
/// archive that had already dropped it) is left as it is.
fn resolve_references(blocks: &mut [Block]) {
    let mut seen = Seen::default();
    for block in blocks.iter_mut() {
        let line = block.pieces.first().map_or("", |p| p.text.as_str());
        block.refs = seen.refs(line, block.turn);
    }
}

/// What the ledger lines read so far show.
#[derive(Default)]
struct Seen {
    /// The calls shown in full in each turn: the tool, the call as shown
    /// (without the `×N` of a repeat) and its key.
    calls: HashMap<u32, Vec<(String, String, String)>>,
    /// Each tail `/b/c.rs` of a path shown whole, and the first such path.
    tails: HashMap<String, String>,
}

impl Seen {
    /// What the call line `line` of turn `turn` shows and refers to, when
    /// every reference in it names a line before it; remembers what it
    /// shows.
    fn refs(&mut self, line: &str, turn: u32) -> Option<CallRefs> {
        let (prefix, body) = match line.strip_prefix("¶call:") {
            Some(body) => ("¶call:", body),
            None => ("", line),
        };
        let open = call_open(body)?;
        let tool = &body[..open];
        if let Some((n, head, close)) = reference_of(body, open) {
            let (_, call, key) = self.calls.get(&n)?.iter().find(|(t, call, _)| {
                t == tool && head.is_none_or(|h| call[open + 1..].starts_with(h))
            })?;
            return Some(CallRefs {
                tool: tool.to_owned(),
                key: key.clone(),
                whole: format!("{prefix}{call}{}", &body[close + 1..]),
                names: CallNames::Reference(n),
            });
        }
        let mut whole = String::from(prefix);
        let mut tails = Vec::new();
        let mut rest = body;
        while let Some(at) = rest.find("…/") {
            let end = rest[at..].find([',', ')']).map_or(rest.len(), |e| at + e);
            let path = self.tails.get(&rest[at + "…".len()..end])?;
            whole.push_str(&rest[..at]);
            whole.push_str(path);
            tails.push(path.clone());
            rest = &rest[end..];
        }
        whole.push_str(rest);
        let call = strip_repeat(&whole[prefix.len()..]).to_owned();
        let key = strip_marker(&call).to_owned();
        let shows = shown_paths(&body[open + 1..]);
        for path in &shows {
            for (cut, _) in path.match_indices('/').filter(|&(c, _)| c > 0) {
                self.tails
                    .entry(path[cut..].to_owned())
                    .or_insert_with(|| path.clone());
            }
        }
        self.calls
            .entry(turn)
            .or_default()
            .push((tool.to_owned(), call, key.clone()));
        Some(CallRefs {
            tool: tool.to_owned(),
            key,
            whole,
            names: CallNames::Paths { shows, tails },
        })
    }
}

/// The paths shown whole among a call line's arguments `args` (what
/// follows its `(`): values with a `/` and no space (a command has one)
/// that are not a tail.
fn shown_paths(args: &str) -> Vec<String> {
    args.split(", ")
        .map(|arg| {
            let value = match arg.split_once('=') {
                Some((key, value)) if key.chars().all(|c| c.is_alphanumeric() || c == '_') => value,
                _ => arg,
            };
            value.split(')').next().unwrap_or(value)
        })
        .filter(|v| v.contains('/') && !v.contains(' ') && !v.starts_with('…'))
        .map(str::to_owned)
        .collect()
}

/// A call without the marker `[…ID…]` after it.
fn strip_marker(call: &str) -> &str {
    match call.rsplit_once(" […") {
        Some((before, marker)) if marker.ends_with("…]") || marker == "]" => before,
        _ => call,
    }
}

/// Where the `(` of a call line `name(…)` is.
fn call_open(body: &str) -> Option<usize> {
    body.find('(')
        .filter(|&o| o > 0 && !body[..o].contains([' ', '¶', '#']))
}

/// The turn N of a reference `(=#N)` or `(HEAD… =#N)` whose `(` is at
/// `open` in `body`, HEAD, and where its `)` is.
fn reference_of(body: &str, open: usize) -> Option<(u32, Option<&str>, usize)> {
    let args = &body[open + 1..];
    let at = args.find("=#")?;
    let digits = args[at + 2..]
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(args.len() - at - 2);
    let turn: u32 = args[at + 2..at + 2 + digits].parse().ok()?;
    let close = at + 2 + digits;
    if !args[close..].starts_with(')') {
        return None;
    }
    let head = match &args[..at] {
        "" => None,
        h => Some(h.strip_suffix("… ")?),
    };
    Some((turn, head, open + 1 + close))
}

/// A call line without the ` ×N` of a repeat.
fn strip_repeat(text: &str) -> &str {
    match text.rsplit_once(" ×") {
        Some((call, n)) if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) => call,
        _ => text,
    }
}

/// A marker line of an earlier archive: kept if the budget is left over.
fn marker_block(text: &str, turn: u32) -> Block {
    let mut block = Block::new(Scope::EarlierMarker, turn, None);
    block.pieces.push(Piece::new(
        "",
        text,
        Rank::Optional {
            tier: tier::OUTPUT,
            score: 0,
        },
    ));
    block
}

const SCOPES: [&str; 4] = ["¶user:", "¶think:", "¶ai:", "¶call:"];

/// The parts of a transcript: `(marker, content)`, where a part opens at
/// the start of a line with a scope marker (parts are separated by a blank
/// line in text archives, by one line break in a PNG archive's source);
/// text before the first marker comes with an empty marker.
fn parts(text: &str) -> Vec<(&str, &str)> {
    let mut starts: Vec<usize> = Vec::new();
    for scope in SCOPES {
        if text.starts_with(scope) {
            starts.push(0);
        }
        starts.extend(
            text.match_indices(&format!("\n{scope}"))
                .map(|(i, _)| i + 1),
        );
    }
    starts.sort_unstable();
    starts.dedup();
    let mut out = Vec::new();
    let first = starts.first().copied().unwrap_or(text.len());
    if first > 0 {
        out.push(("", text[..first].trim_end()));
    }
    for (k, &s) in starts.iter().enumerate() {
        let end = starts.get(k + 1).map_or(text.len(), |&e| e - 1);
        let part = &text[s..end.max(s)];
        let scope = SCOPES
            .iter()
            .find(|m| part.starts_with(**m))
            .copied()
            .unwrap_or_default();
        out.push((scope, &part[scope.len()..]));
    }
    out
}

/// A transcript of the older format, parsed into blocks like fresh
/// messages (without entry ids).
fn transcript_blocks(text: &str, limits: &Limits) -> (Vec<Block>, u32) {
    let mut blocks = Vec::new();
    let mut turn = 0u32;
    for (scope, content) in parts(text) {
        let content = content.trim();
        if content.is_empty() {
            continue;
        }
        match scope {
            "" => blocks.push(summary_block(content, limits)),
            "¶user:" => {
                turn += 1;
                blocks.push(user_block(content, turn, None, limits));
            }
            "¶think:" => blocks.push(prose_block(Scope::Think, content, turn, None)),
            "¶ai:" => blocks.push(prose_block(Scope::Ai, content, turn, None)),
            _ => call_blocks(content, turn, limits, &mut blocks),
        }
    }
    (blocks, turn)
}

/// `name(args)` lines, each optionally followed by `<out>` … `</out>`.
fn call_blocks(content: &str, turn: u32, limits: &Limits, blocks: &mut Vec<Block>) {
    let mut lines = content.lines().peekable();
    while let Some(line) = lines.next() {
        let mut call = Block::new(Scope::Call, turn, None);
        let (shown, cut) = shorten_head(line, limits.path_chars.max(limits.command_chars));
        call.shortened = cut;
        call.source_chars = len16(line);
        call.pieces.push(Piece::new("", shown, Rank::Must));
        let mut output = None;
        if lines.peek() == Some(&"<out>") {
            lines.next();
            let mut body: Vec<&str> = Vec::new();
            for l in lines.by_ref() {
                if l == "</out>" {
                    break;
                }
                body.push(l);
            }
            let body = body.join("\n");
            let mut lifted = Vec::new();
            for l in body.lines().filter(|l| is_error_line(l)) {
                if lifted.len() >= limits.error_lines {
                    break;
                }
                let (shown, _) = shorten_head(l, limits.error_chars);
                let mut piece = Piece::new("\n  ! ", shown, Rank::Must);
                piece.silent = true;
                call.pieces.push(piece);
                lifted.push(l.to_owned());
            }
            output = Some(output_block(
                "tool",
                &body,
                turn,
                None,
                &lifted,
                OutputCap::NONE,
                true,
            ));
        }
        blocks.push(call);
        blocks.extend(output);
    }
}

#[cfg(test)]
mod tests {
    use super::super::blocks::{LEVELS, Section};
    use super::*;

    #[test]
    fn a_transcript_is_parsed_by_its_scope_markers() {
        let text = "[Summary of earlier history] old\n\n¶user:do it\n\n¶think:hmm\n\n¶ai:ok\n\n¶call:bash(command=\"make\")\n<out>\nerror: boom\nlast\n</out>\nread(path=\"a\")";
        let (blocks, turn) = earlier_blocks(Earlier::Transcript(text), &LEVELS[0]);
        let scopes: Vec<&Scope> = blocks.iter().map(|b| &b.scope).collect();
        assert_eq!(
            scopes,
            [
                &Scope::Summary,
                &Scope::User,
                &Scope::Think,
                &Scope::Ai,
                &Scope::Call,
                &Scope::Out("tool".into()),
                &Scope::Call,
            ]
        );
        assert_eq!(turn, 1);
        assert_eq!(blocks[4].pieces[1].text, "error: boom");
        assert_eq!(blocks[6].pieces[0].text, "read(path=\"a\")");
    }

    #[test]
    fn a_user_line_keeps_its_markers_as_gaps_and_names_the_entry_of_the_last() {
        let text =
            format!("{LEDGER_HEADING}\n#3 ¶user:Keep it. Use port 8080. […] Run it. […e7…] Done.");
        let (blocks, _) = earlier_blocks(Earlier::archived(&text), &LEVELS[0]);
        let user = &blocks[0];
        assert_eq!(user.id.as_deref(), Some("e7"));
        let pieces: Vec<(&str, bool)> = user
            .pieces
            .iter()
            .map(|p| (p.text.as_str(), p.gap))
            .collect();
        assert_eq!(
            pieces,
            [
                ("Keep it.", false),
                ("Use port 8080.", false),
                ("[…]", true),
                ("Run it.", false),
                ("[…e7…]", true),
                ("Done.", false)
            ]
        );
        // Printed again as it was: a gap is printed as its marker.
        let kept = super::super::select::select(&blocks, 10_000);
        assert_eq!(
            super::super::select::render(&blocks, &kept),
            format!("{LEDGER_HEADING}\n#3 ¶user:Keep it. Use port 8080. […] Run it. […e7…] Done.")
        );
    }

    #[test]
    fn an_archive_is_read_back_entry_by_entry() {
        let text = format!(
            "{LEDGER_HEADING}\n#1 ¶user:first\nsecond line\n¶call:bash(command=make)\n  ! error: boom\nls()\n#2 ¶user:again\n\n{CONVERSATION_HEADING}\n#1 ¶ai:Done. It works.\n<out bash>\nok\n</out>\n[…a1…]\n#2 ¶think:plan"
        );
        assert!(is_salience_text(&text));
        let (blocks, turn) = earlier_blocks(Earlier::archived(&text), &LEVELS[0]);
        assert_eq!(turn, 2);
        let ledger: Vec<(&Scope, u32, bool, String)> = blocks
            .iter()
            .filter(|b| b.section() == Section::Ledger)
            .map(|b| {
                let text = b.pieces.iter().fold(String::new(), |mut out, p| {
                    out.push_str(&p.sep);
                    out.push_str(&p.text);
                    out
                });
                (&b.scope, b.turn, b.earlier, text)
            })
            .collect();
        // User messages and calls are blocks of their scope again, which
        // prints `#N ¶user:` and `¶call:` for them.
        assert_eq!(
            ledger,
            [
                (&Scope::User, 1, true, "first\nsecond line".to_owned()),
                (
                    &Scope::Call,
                    1,
                    true,
                    "bash(command=make)\n  ! error: boom".to_owned()
                ),
                (&Scope::Call, 1, true, "ls()".to_owned()),
                (&Scope::User, 2, true, "again".to_owned())
            ]
        );
        assert_eq!(blocks[0].pieces.len(), 2, "a sentence or line a piece");
        let conversation: Vec<(&Scope, u32)> = blocks
            .iter()
            .filter(|b| b.section() == Section::Conversation)
            .map(|b| (&b.scope, b.turn))
            .collect();
        assert_eq!(
            conversation,
            [
                (&Scope::Ai, 1),
                (&Scope::Out("bash".into()), 1),
                (&Scope::EarlierMarker, 1),
                (&Scope::Think, 2)
            ]
        );
    }
}
