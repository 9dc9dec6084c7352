//! Planting facts in a session's summarized history: one fact per kind,
//! position and variant, written into an existing entry of that kind near
//! that position, so the session stays the session it was.

use serde_json::{Value, json};

/// Where in a message a fact goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A sentence in a user message.
    User,
    /// A sentence in an assistant reply.
    Assistant,
    /// A sentence in the assistant's reasoning.
    Thinking,
    /// An error line in the middle of a command's output.
    ErrorLine,
    /// The last line of a command's output.
    OutputEnd,
}

impl Kind {
    pub(crate) const ALL: [Kind; 5] = [
        Kind::User,
        Kind::Assistant,
        Kind::Thinking,
        Kind::ErrorLine,
        Kind::OutputEnd,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Kind::User => "user",
            Kind::Assistant => "assistant",
            Kind::Thinking => "thinking",
            Kind::ErrorLine => "error line",
            Kind::OutputEnd => "output end",
        }
    }
}

/// Where in the summarized history, as a share of its messages.
pub(crate) const POSITIONS: [(&str, f64); 3] = [("early", 0.1), ("middle", 0.5), ("late", 0.9)];
/// Facts per kind and position (the second lands a little later).
const VARIANTS: usize = 2;

/// One planted fact.
#[derive(Debug, Clone)]
pub(crate) struct Planted {
    pub kind: Kind,
    pub position: usize,
    pub text: String,
    /// The entry it was written into (a position in the session's lines).
    pub entry: usize,
}

/// The text of fact `n` of `kind`: specific, as the facts people need
/// later are (a number, a path, an identifier, a decision), and unique.
fn fact(kind: Kind, n: usize) -> String {
    const WORDS: [&str; 6] = ["ledger", "quota", "replay", "shard", "cursor", "beacon"];
    let num = 1000 + (n * 7919 + 331) % 9000;
    let w = WORDS[n % WORDS.len()];
    match (kind, n % 2) {
        (Kind::User, 0) => {
            format!("Keep the {w} request timeout at {num} ms; the gateway drops anything slower.")
        }
        (Kind::User, _) => {
            format!("The staging data lives in db/{w}-{num}.sqlite and must not be migrated.")
        }
        (Kind::Assistant, 0) => format!(
            "The flaky test `{w}_survives_restart` fails about 1 in {num} runs because the clock is not mocked."
        ),
        (Kind::Assistant, _) => format!(
            "I chose a ring buffer of {num} entries for the {w} log so its memory stays bounded."
        ),
        (Kind::Thinking, 0) => format!(
            "The cache key must include the tenant id, otherwise {w} entry {num} collides with its neighbour."
        ),
        (Kind::Thinking, _) => format!(
            "If the {w} retry budget of {num} attempts runs out, the worker should give up and report it."
        ),
        (Kind::ErrorLine, 0) => {
            format!("error[E{num}]: cannot borrow `{w}_state` as mutable more than once at a time")
        }
        (Kind::ErrorLine, _) => format!(
            "FAILED tests/{w}_test.py::test_{w}_limits - AssertionError: expected {num}, got {}",
            num + 1
        ),
        (Kind::OutputEnd, 0) => format!("wrote {num} rows to out/{w}.csv in 1.4s"),
        (Kind::OutputEnd, _) => format!("done: {num} files checked, 0 warnings ({w} profile)"),
    }
}

/// Tools whose output is file content or a confirmation, not a report.
fn is_command_tool(name: &str) -> bool {
    !matches!(
        name.to_ascii_lowercase().as_str(),
        "read" | "write" | "edit" | "multiedit" | "read_file" | "view" | "ls" | "find" | "grep"
    )
}

fn role(entry: &Value) -> &str {
    entry["message"]["role"].as_str().unwrap_or_default()
}

/// Whether `entry` can take a fact of `kind`.
fn fits(entry: &Value, kind: Kind, any_tool: bool) -> bool {
    let m = &entry["message"];
    let blocks = m["content"].as_array();
    let has = |t: &str| blocks.is_some_and(|b| b.iter().any(|x| x["type"] == t));
    match kind {
        Kind::User => role(entry) == "user" && (m["content"].is_string() || has("text")),
        Kind::Assistant => role(entry) == "assistant" && has("text"),
        Kind::Thinking => role(entry) == "assistant" && blocks.is_some(),
        Kind::ErrorLine | Kind::OutputEnd => {
            role(entry) == "toolResult"
                && has("text")
                && (any_tool || is_command_tool(m["toolName"].as_str().unwrap_or_default()))
        }
    }
}

/// Inserts `sentence` into prose after the first sentence end at or past
/// its middle (or at its end).
fn into_prose(text: &str, sentence: &str) -> String {
    let mid = text.len() / 2;
    let at = text
        .char_indices()
        .filter(|&(i, c)| i >= mid && matches!(c, '.' | '!' | '?'))
        .map(|(i, _)| i + 1)
        .find(|&i| text[i..].starts_with(' ') || text[i..].starts_with('\n'));
    match at {
        Some(i) => format!("{} {sentence}{}", &text[..i], &text[i..]),
        None => format!("{} {sentence}", text.trim_end()),
    }
}

fn plant_into(entry: &mut Value, kind: Kind, fact: &str) {
    let m = &mut entry["message"];
    if kind == Kind::User
        && let Some(text) = m["content"].as_str()
    {
        m["content"] = Value::String(into_prose(text, fact));
        return;
    }
    let Some(blocks) = m["content"].as_array_mut() else {
        return;
    };
    let wanted = if kind == Kind::Thinking {
        "thinking"
    } else {
        "text"
    };
    let field = wanted;
    let Some(block) = blocks.iter_mut().find(|b| b["type"] == wanted) else {
        // No reasoning in this reply: it gets some.
        blocks.insert(0, json!({"type": "thinking", "thinking": fact}));
        return;
    };
    let text = block[field].as_str().unwrap_or_default().to_owned();
    block[field] = Value::String(match kind {
        Kind::User | Kind::Assistant | Kind::Thinking => into_prose(&text, fact),
        Kind::ErrorLine => {
            let lines: Vec<&str> = text.lines().collect();
            let mid = lines.len() / 2;
            let mut out: Vec<&str> = lines[..mid].to_vec();
            out.push(fact);
            out.extend(&lines[mid..]);
            out.join("\n")
        }
        Kind::OutputEnd => format!("{}\n{fact}", text.trim_end()),
    });
}

/// Plants every fact into `entries` (the session's lines as JSON, by
/// position) among the summarized entries `region` (positions into
/// `entries`, oldest first); returns what was planted.
pub(crate) fn plant(entries: &mut [Value], region: &[usize]) -> Vec<Planted> {
    let mut planted = Vec::new();
    let mut used: Vec<(usize, Kind)> = Vec::new();
    let mut n = 0usize;
    if region.is_empty() {
        return planted;
    }
    for kind in Kind::ALL {
        let any_tool = !region.iter().any(|&i| fits(&entries[i], kind, false));
        for (position, (_, share)) in POSITIONS.iter().enumerate() {
            for variant in 0..VARIANTS {
                let share = (share + 0.03 * variant as f64).min(1.0);
                let target = ((region.len() - 1) as f64 * share).round() as usize;
                // The nearest entry of the kind not used for it yet.
                let found = (0..region.len())
                    .flat_map(|d| [target.checked_sub(d), Some(target + d)])
                    .flatten()
                    .filter(|&k| k < region.len())
                    .map(|k| region[k])
                    .find(|&i| !used.contains(&(i, kind)) && fits(&entries[i], kind, any_tool));
                let Some(i) = found else { continue };
                let text = fact(kind, n);
                n += 1;
                plant_into(&mut entries[i], kind, &text);
                used.push((i, kind));
                planted.push(Planted {
                    kind,
                    position,
                    text,
                    entry: i,
                });
            }
        }
    }
    planted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn facts_are_unique() {
        let all: Vec<String> = (0..60)
            .flat_map(|n| Kind::ALL.map(|k| fact(k, n)))
            .collect();
        let mut sorted = all.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), all.len());
    }

    #[test]
    fn prose_takes_the_fact_after_a_sentence_past_its_middle() {
        assert_eq!(into_prose("One. Two. Three.", "X."), "One. Two. X. Three.");
        assert_eq!(into_prose("no end", "X."), "no end X.");
    }

    #[test]
    fn every_kind_lands_in_an_entry_of_its_kind() {
        let mut entries = vec![
            json!({"type": "message", "message": {"role": "user", "content": "Do it. Please."}}),
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "On it."}]}}),
            json!({"type": "message", "message": {"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "a\nb"}]}}),
        ];
        let planted = plant(&mut entries, &[0, 1, 2]);
        // One entry of each kind: one fact of each kind.
        assert_eq!(planted.len(), 5);
        let text = serde_json::to_string(&entries).unwrap_or_default();
        for p in &planted {
            let json = serde_json::to_string(&p.text).unwrap_or_default();
            assert!(text.contains(json.trim_matches('"')), "{}", p.text);
        }
    }
}
