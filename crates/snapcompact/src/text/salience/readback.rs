//! An earlier archive's ledger lines read back as the blocks they were
//! printed from: a user message as a user block whose sentences are
//! pieces again (its markers gaps), a call line as a call block, so that
//! the new archive can leave out what repeats (see `repeats`) and print
//! `¶call:` where a call follows something else.

use super::blocks::{Block, PIECE_MAX, Piece, Rank, Scope};
use super::text::split_prose;

/// An earlier ledger's user message (`#N ¶user:…` and the lines that
/// continue it) as a user block again: its sentences pieces of their own,
/// all guaranteed, so that a sentence said before can be left out of it
/// (see `repeats`), and each marker of text the earlier archive left out
/// a gap, printed as a marker again; the entry the last marker names is
/// the block's.
pub(super) fn earlier_user_block(block: &Block) -> Option<Block> {
    let text: String = block.pieces.iter().fold(String::new(), |mut out, p| {
        out.push_str(&p.sep);
        out.push_str(&p.text);
        out
    });
    let (turn, rest) = match turn_prefix(&text) {
        Some((turn, rest)) => (turn, rest),
        None => (0, text.as_str()),
    };
    let body = rest.strip_prefix("¶user:")?;
    let mut user = Block::new(Scope::User, turn, None);
    user.earlier = true;
    user.source_chars = block.source_chars;
    let mut at = 0usize;
    let mut sep_from = 0usize;
    let prose = |from: usize, to: usize, sep_from: &mut usize, user: &mut Block| {
        for span in split_prose(&body[from..to], PIECE_MAX) {
            let start = from + span.text.start;
            let sep = if user.pieces.is_empty() {
                ""
            } else {
                &body[*sep_from..start]
            };
            user.pieces.push(Piece::new(
                sep,
                &body[start..from + span.text.end],
                Rank::Must,
            ));
            *sep_from = from + span.text.end;
        }
    };
    while let Some((start, end, id)) = next_marker(body, at) {
        prose(at, start, &mut sep_from, &mut user);
        let sep = if user.pieces.is_empty() {
            ""
        } else {
            &body[sep_from..start]
        };
        user.pieces.push(Piece::gap(sep, &body[start..end]));
        if let Some(id) = id {
            user.id = Some(id.to_owned());
        }
        sep_from = end;
        at = end;
    }
    prose(at, body.len(), &mut sep_from, &mut user);
    Some(user)
}

/// An earlier ledger's call line (with the error and result lines under
/// it) as a call block again, printed with `¶call:` where a call follows
/// something else, so that a call left out (see `repeats`) leaves the
/// next one marked.
pub(super) fn earlier_call_block(block: &mut Block) {
    block.scope = Scope::Call;
    block.earlier = true;
    if let Some(first) = block.pieces.first_mut()
        && let Some(call) = first.text.strip_prefix("¶call:")
    {
        first.text = call.to_owned();
    }
    if let Some(refs) = block.refs.as_mut()
        && let Some(call) = refs.whole.strip_prefix("¶call:")
    {
        refs.whole = call.to_owned();
    }
}

/// The next marker `[…]` or `[…ID…]` in `text` from `from`: where it
/// starts and ends, and the entry it names.
fn next_marker(text: &str, from: usize) -> Option<(usize, usize, Option<&str>)> {
    let mut search = from;
    loop {
        let start = search + text[search..].find("[…")?;
        let open = start + "[".len();
        if let Some(close) = text[open..].find("…]").map(|c| open + c) {
            let end = close + "…]".len();
            if close == open {
                return Some((start, end, None));
            }
            let inner = &text[open + "…".len()..close];
            if !inner.is_empty() && inner.len() <= 80 && !inner.contains(['[', ']', '\n']) {
                let id = (!inner.contains(char::is_whitespace)).then_some(inner);
                return Some((start, end, id));
            }
        }
        search = open;
    }
}

/// `#12 rest` → `(12, "rest")`.
pub(super) fn turn_prefix(line: &str) -> Option<(u32, &str)> {
    let rest = line.strip_prefix('#')?;
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let turn = rest[..digits].parse().ok()?;
    Some((turn, rest[digits..].strip_prefix(' ')?))
}
