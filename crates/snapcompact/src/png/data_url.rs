//! Inline base64 data URLs, replaced atomically by a short notice, so
//! that a later truncation can never leave half an image
//! in the archive.

use std::borrow::Cow;

/// How sure the elision must be that a `data:` prefix starts a real payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DataUrlMode {
    /// Fresh conversation text: a short payload that is not canonical
    /// base64 is left alone (it is more likely prose about data URLs).
    Fresh,
    /// Text that was archived before: every recognized prefix is elided,
    /// whatever follows it (an earlier cut may have shortened the payload).
    Archived,
}

/// Payloads at least this long are elided even when not canonical base64.
const LONG_PAYLOAD: usize = 32;

/// Replaces every inline base64 data URL in `text`, together with a
/// Markdown image or link wrapper around it (`![alt](…)`, `[text](…)`), by
/// `[data URL omitted: <mime>, <n> base64 chars]`.
pub fn elide_data_urls(text: &str, mode: DataUrlMode) -> Cow<'_, str> {
    let bytes = text.as_bytes();
    let mut out = String::new();
    // Everything before `copied` is already represented in `out`.
    let mut copied = 0usize;
    let mut cursor = 0usize;
    while let Some(found) = find_data_prefix(bytes, cursor) {
        let Some(url) = parse_at(text, found) else {
            cursor = found + 5;
            continue;
        };
        cursor = url.end;
        if mode == DataUrlMode::Fresh && !substantial(url.payload) {
            continue;
        }
        out.push_str(&text[copied..found]);
        let mut end = url.end;
        if let Some((wrap_start, wrap_end)) = markdown_wrapper(text, found, url.end)
            && wrap_start >= copied
        {
            out.truncate(out.len() - (found - wrap_start));
            end = wrap_end;
        }
        out.push_str("[data URL omitted: ");
        out.push_str(url.mime);
        out.push_str(", ");
        out.push_str(&url.payload.len().to_string());
        out.push_str(" base64 chars]");
        copied = end;
        cursor = end;
    }
    if copied == 0 && out.is_empty() {
        return Cow::Borrowed(text);
    }
    out.push_str(&text[copied..]);
    Cow::Owned(out)
}

struct DataUrl<'a> {
    mime: &'a str,
    payload: &'a str,
    end: usize,
}

/// The next `data:` (any case) at or after `from` that does not continue a word.
fn find_data_prefix(bytes: &[u8], from: usize) -> Option<usize> {
    let mut i = from;
    while i + 5 <= bytes.len() {
        let b = bytes[i];
        if (b == b'd' || b == b'D')
            && bytes[i..i + 5].eq_ignore_ascii_case(b"data:")
            && (i == 0 || !is_word_byte(bytes[i - 1]))
        {
            return Some(i);
        }
        i += 1;
    }
    None
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b == b'-'
}

fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric()
        || matches!(
            b,
            b'!' | b'#' | b'$' | b'&' | b'^' | b'_' | b'.' | b'+' | b'-'
        )
}

fn is_base64_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=' | b'-' | b'_')
}

/// Parses `data:<type>/<subtype>[;param=value…];base64,<payload>` at `at`.
fn parse_at(text: &str, at: usize) -> Option<DataUrl<'_>> {
    let bytes = text.as_bytes();
    let mime_start = at + 5;
    let mut i = mime_start;
    let token = |mut j: usize| {
        while j < bytes.len() && is_token_byte(bytes[j]) {
            j += 1;
        }
        j
    };
    let type_end = token(i);
    if type_end == i || bytes.get(type_end) != Some(&b'/') {
        return None;
    }
    let sub_end = token(type_end + 1);
    if sub_end == type_end + 1 {
        return None;
    }
    let mime = &text[mime_start..sub_end];
    i = sub_end;
    loop {
        if bytes.get(i) != Some(&b';') {
            return None;
        }
        i += 1;
        if bytes.len() >= i + 7 && bytes[i..i + 7].eq_ignore_ascii_case(b"base64,") {
            i += 7;
            break;
        }
        let param_start = i;
        while i < bytes.len()
            && !matches!(bytes[i], b';' | b',' | b'(' | b')')
            && !bytes[i].is_ascii_whitespace()
        {
            i += 1;
        }
        if i == param_start || !text[param_start..i].contains('=') {
            return None;
        }
    }
    let payload_start = i;
    while i < bytes.len() && is_base64_byte(bytes[i]) {
        i += 1;
    }
    Some(DataUrl {
        mime,
        payload: &text[payload_start..i],
        end: i,
    })
}

/// Whether a fresh payload is worth eliding: long, or canonical base64.
fn substantial(payload: &str) -> bool {
    if payload.len() >= LONG_PAYLOAD {
        return true;
    }
    if payload.is_empty() || !payload.len().is_multiple_of(4) {
        return false;
    }
    let body = payload.trim_end_matches('=');
    payload.len() - body.len() <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

/// The byte range of a Markdown `![alt](url)` or `[text](url)` around the
/// URL at `url_start..url_end`, if there is one on the same line.
fn markdown_wrapper(text: &str, url_start: usize, url_end: usize) -> Option<(usize, usize)> {
    let before = text.get(..url_start)?;
    if !before.ends_with("](") || text.as_bytes().get(url_end) != Some(&b')') {
        return None;
    }
    let label_end = url_start - 2;
    let open = before[..label_end].rfind(['[', ']', '\n'])?;
    if before.as_bytes()[open] != b'[' {
        return None;
    }
    let start = if open > 0 && before.as_bytes()[open - 1] == b'!' {
        open - 1
    } else {
        open
    };
    Some((start, url_end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk";

    fn fresh(s: &str) -> String {
        elide_data_urls(s, DataUrlMode::Fresh).into_owned()
    }

    #[test]
    fn a_bare_data_url_is_replaced_by_a_notice_with_mime_and_length() {
        let text = format!("see data:image/png;base64,{PNG} here");
        assert_eq!(
            fresh(&text),
            format!(
                "see [data URL omitted: image/png, {} base64 chars] here",
                PNG.len()
            )
        );
    }

    #[test]
    fn markdown_image_and_link_wrappers_are_replaced_whole() {
        let text = format!(
            "a ![shot](data:image/png;base64,{PNG}) b [f](data:text/plain;charset=utf-8;base64,aGVsbG8gd29ybGQ=) c"
        );
        assert_eq!(
            fresh(&text),
            format!(
                "a [data URL omitted: image/png, {} base64 chars] b [data URL omitted: text/plain, 16 base64 chars] c",
                PNG.len()
            )
        );
    }

    #[test]
    fn short_non_canonical_payloads_survive_in_fresh_text_only() {
        let text = "the prefix data:image/png;base64,abc is how it starts";
        assert_eq!(fresh(text), text);
        assert_eq!(
            elide_data_urls(text, DataUrlMode::Archived),
            "the prefix [data URL omitted: image/png, 3 base64 chars] is how it starts"
        );
        let cut = "tail data:image/png;base64, […10ch elided…]";
        assert_eq!(
            elide_data_urls(cut, DataUrlMode::Archived),
            "tail [data URL omitted: image/png, 0 base64 chars] […10ch elided…]"
        );
    }

    #[test]
    fn text_without_data_urls_is_borrowed_unchanged() {
        let text = "metadata:image/png;base64,AAAA and data: nothing";
        assert!(matches!(
            elide_data_urls(text, DataUrlMode::Archived),
            Cow::Borrowed(_)
        ));
    }

    #[test]
    fn consecutive_urls_are_all_elided() {
        let text =
            format!("data:image/png;base64,{PNG}\ndata:image/gif;base64,R0lGODlhAQABAAAAACw=");
        assert_eq!(
            fresh(&text),
            format!(
                "[data URL omitted: image/png, {} base64 chars]\n[data URL omitted: image/gif, 20 base64 chars]",
                PNG.len()
            )
        );
    }
}
