//! `musepi ls`: the sessions pi keeps for the working directory, newest
//! first, with size, entries and context tokens.

use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

use musepi_protocol::session::{LsDoc, LsReadDoc, LsRowDoc};
use musepi_session_model::time::format_iso;
use musepi_session_model::{AgentMessage, EntryBody, Session, load_file};

use crate::cli::LsArgs;
use crate::commands::pi_dir::{Env, Listed, cwd, resolve, sessions};
use crate::ctx::{CmdResult, Ctx, Exit, OrExit};
use crate::output::{
    Color, column_width, counted, display_width, escape_controls, fit, note, pad_end, pad_start,
    preview, print_json, print_text, stdout_columns,
};
use crate::report::context::context_tokens;

/// Characters of the first user message shown.
const PREVIEW: usize = 48;

/// One listed session, read.
struct Row {
    listed: Listed,
    /// `None` when the file could not be read as a session (the reason).
    read: Result<Read, String>,
}

/// What a session file holds.
struct Read {
    entries: usize,
    tokens: u64,
    leaf_id: Option<String>,
    name: Option<String>,
    first_message: Option<String>,
    problems: usize,
}

impl Read {
    fn of(session: &Session) -> Self {
        let first_message = session.entries().iter().find_map(|e| match &e.body {
            EntryBody::Message(AgentMessage::User(u)) => Some(u.content.joined_text()),
            _ => None,
        });
        Self {
            entries: session.len(),
            tokens: context_tokens(session, session.leaf_index()),
            leaf_id: session.leaf_id().map(|id| id.as_str().to_owned()),
            name: session.session_name().map(str::to_owned),
            first_message,
            problems: session.problems().len(),
        }
    }
}

/// Runs the command.
pub fn run(args: &LsArgs, ctx: &Ctx) -> CmdResult {
    let folder = resolve(args.session_dir.as_deref(), &cwd()?, &Env::process())?;
    let rows: Vec<Row> = sessions(&folder.dir)?
        .into_iter()
        .map(|listed| {
            let read = load_file(&listed.path, &mut crate::ids::for_v1())
                .map(|(s, _)| Read::of(&s))
                .map_err(|e| e.to_string());
            Row { listed, read }
        })
        .collect();
    for row in &rows {
        if let Err(why) = &row.read {
            note(ctx.quiet(), &format!("musepi: cannot read {why}"));
        }
    }
    if ctx.json() {
        let doc = LsDoc {
            dir: folder.dir.display().to_string(),
            source: folder.source.to_string(),
            sessions: rows.iter().map(row_doc).collect(),
        };
        print_json(&doc).or_failed()?;
        return Ok(Exit::Ok);
    }
    if rows.is_empty() {
        print_text(&format!(
            "no pi session in {} ({})\n",
            escape_controls(&folder.dir.display().to_string()),
            folder.source
        ))
        .or_failed()?;
        return Ok(Exit::Ok);
    }
    print_text(&render(&rows, &folder.dir, ctx)).or_failed()?;
    Ok(Exit::Ok)
}

fn millis(t: SystemTime) -> i64 {
    t.duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

fn row_doc(row: &Row) -> LsRowDoc {
    let l = &row.listed;
    let (read, error) = match &row.read {
        Ok(r) => (
            Some(LsReadDoc {
                entries: r.entries,
                context_tokens: r.tokens,
                leaf_id: r.leaf_id.clone(),
                name: r.name.clone(),
                first_message: r.first_message.as_deref().map(|m| preview(m, 200)),
                problems: r.problems,
            }),
            None,
        ),
        Err(why) => (None, Some(why.clone())),
    };
    LsRowDoc {
        file: l.path.file_name().map(|n| n.to_string_lossy().into_owned()),
        path: l.path.display().to_string(),
        modified: format_iso(millis(l.modified)),
        size: l.size,
        read,
        error,
    }
}

/// `12.3 KB`, as people read sizes.
fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KB", "MB", "GB", "TB"];
    if bytes < 1000 {
        return format!("{bytes} B");
    }
    #[allow(clippy::cast_precision_loss)]
    let mut value = bytes as f64 / 1000.0;
    let mut unit = 0;
    while value >= 999.95 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// The session's name in the `session` column: on a terminal, pi's
/// `<time>_<session id>.jsonl` shows as the shortest prefix of its id
/// that tells the listed sessions apart, at least 8 characters (`len`,
/// from [`short_id_len`]), as a short commit hash does; any other name as
/// its stem cut to [`SHORT_NAME`] columns. Piped, the whole file name
/// (`--json` has `file` and `path` either way).
fn session_name(file: &str, short: Option<usize>) -> String {
    let Some(len) = short else {
        return escape_controls(file).into_owned();
    };
    match pi_session_id(file) {
        Some(id) => id[..len.min(id.len())].to_owned(),
        None => fit(
            &escape_controls(file.strip_suffix(".jsonl").unwrap_or(file)),
            SHORT_NAME,
        ),
    }
}

/// The session id of pi's file name `<time>_<session id>.jsonl`.
fn pi_session_id(file: &str) -> Option<&str> {
    let stem = file.strip_suffix(".jsonl")?;
    stem.rsplit_once('_')
        .map(|(_, id)| id)
        .filter(|id| looks_like_uuid(id))
}

/// The shortest prefix, of 8 characters or more, that tells `ids` apart
/// (a prefix never ends at a dash).
fn short_id_len(ids: &[&str]) -> usize {
    let mut len = 8;
    while len < 36 {
        let mut seen = std::collections::BTreeSet::new();
        if ids.iter().all(|id| seen.insert(&id[..len.min(id.len())])) {
            break;
        }
        len += 1;
        if matches!(len, 8 | 13 | 18 | 23) {
            len += 1;
        }
    }
    len
}

/// `8-4-4-4-12` hexadecimal digits.
fn looks_like_uuid(id: &str) -> bool {
    let parts: Vec<&str> = id.split('-').collect();
    parts.len() == 5
        && parts
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(p, n)| p.len() == n && p.chars().all(|c| c.is_ascii_hexdigit()))
}

/// The columns a name other than pi's keeps on a terminal.
const SHORT_NAME: usize = 24;

fn render(rows: &[Row], dir: &Path, ctx: &Ctx) -> String {
    let st = ctx.style;
    let columns = stdout_columns();
    let short = columns.map(|_| {
        let ids: Vec<&str> = rows
            .iter()
            .filter_map(|r| {
                r.listed
                    .path
                    .file_name()
                    .and_then(|n| n.to_str())
                    .and_then(pi_session_id)
            })
            .collect();
        short_id_len(&ids)
    });
    let header = [
        "modified (UTC)",
        "size",
        "entries",
        "tokens",
        "session",
        "name or first message",
    ];
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|row| {
            let l = &row.listed;
            let modified = format_iso(millis(l.modified));
            // `2025-05-01T10:00:00.000Z` shown as `2025-05-01 10:00` (UTC).
            let modified = format!(
                "{} {}",
                modified.get(..10).unwrap_or(&modified),
                modified.get(11..16).unwrap_or_default()
            );
            let file = l
                .path
                .file_name()
                .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
            let name = session_name(&file, short);
            match &row.read {
                Ok(r) => {
                    let what = r
                        .name
                        .as_deref()
                        .or(r.first_message.as_deref())
                        .map(|m| escape_controls(&preview(m, PREVIEW)).into_owned())
                        .unwrap_or_default();
                    [
                        modified,
                        human_size(l.size),
                        r.entries.to_string(),
                        crate::output::thousands(r.tokens),
                        name,
                        what,
                    ]
                }
                Err(_) => [
                    modified,
                    human_size(l.size),
                    "?".to_owned(),
                    "?".to_owned(),
                    name,
                    "(unreadable)".to_owned(),
                ],
            }
        })
        .collect();
    let width = |i: usize| column_width(cells.iter().map(|c| &c[i]), display_width(header[i]));
    let widths: Vec<usize> = (0..5).map(width).collect();
    // On a terminal the last column takes the room left, and is left out
    // when too little is.
    let last = columns.map(|cols| {
        let used: usize = widths.iter().sum::<usize>() + 2 * widths.len();
        Some(cols.saturating_sub(used)).filter(|w| *w >= MIN_LAST)
    });
    let line = |c: [&str; 6], paint: &dyn Fn(usize, String) -> String| {
        // Dates and names to the left, numbers to the right.
        let text = match last {
            Some(Some(w)) => fit(c[5], w),
            Some(None) => String::new(),
            None => c[5].to_owned(),
        };
        let row = format!(
            "{}  {}  {}  {}  {}  {}",
            paint(0, pad_end(c[0], widths[0])),
            paint(1, pad_start(c[1], widths[1])),
            paint(2, pad_start(c[2], widths[2])),
            paint(3, pad_start(c[3], widths[3])),
            paint(4, pad_end(c[4], widths[4])),
            paint(5, text),
        );
        format!("{}\n", row.trim_end())
    };
    let mut out = line(header, &|_, s| st.paint(Color::Dim, &s));
    for c in &cells {
        out.push_str(&line(
            [&c[0], &c[1], &c[2], &c[3], &c[4], &c[5]],
            &|i, s| match i {
                0 => st.paint(Color::Dim, &s),
                4 => st.paint(Color::Cyan, &s),
                _ => s,
            },
        ));
    }
    out.push_str(&st.paint(
        Color::Dim,
        &format!(
            "{} in {}, newest first (tokens: the context at the leaf, as `musepi context` counts it)\n",
            counted(rows.len(), "session", "sessions"),
            escape_controls(&dir.display().to_string())
        ),
    ));
    out
}

/// The columns the last column keeps on the narrowest terminal.
const MIN_LAST: usize = 12;

#[cfg(test)]
mod tests {
    use super::human_size;

    #[test]
    fn sizes_read_as_people_write_them() {
        for (bytes, shown) in [
            (0, "0 B"),
            (999, "999 B"),
            (1000, "1.0 KB"),
            (12_345, "12.3 KB"),
            (999_960, "1.0 MB"),
            (4_200_000_000, "4.2 GB"),
        ] {
            assert_eq!(human_size(bytes), shown, "{bytes} bytes");
        }
    }
}
