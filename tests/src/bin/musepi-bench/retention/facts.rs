//! The facts a session holds by itself, in its summarized history: the
//! paths its tool calls name, the commands it ran, the numbers and the
//! constraints of its user messages. Each is checked verbatim (numbers
//! and constraints with whitespace folded) in what the model sees; a
//! user number counts with the words on either side of it on its line.

use serde_json::Value;

/// Argument keys that name a file.
const PATH_KEYS: [&str; 4] = ["path", "file_path", "filePath", "file"];
/// How much of a command must survive: the head of its first line.
pub(crate) const COMMAND_HEAD: usize = 80;

/// The session's own facts, by kind.
#[derive(Debug, Default)]
pub(crate) struct OwnFacts {
    pub paths: Vec<String>,
    pub commands: Vec<String>,
    pub numbers: Vec<String>,
    pub constraints: Vec<String>,
}

impl OwnFacts {
    /// These facts, less those `other` does not hold.
    pub(crate) fn also_in(mut self, other: &OwnFacts) -> Self {
        self.paths.retain(|f| other.paths.contains(f));
        self.commands.retain(|f| other.commands.contains(f));
        self.numbers.retain(|f| other.numbers.contains(f));
        self.constraints.retain(|f| other.constraints.contains(f));
        self
    }
}

fn push_unique(list: &mut Vec<String>, item: String) {
    if !item.is_empty() && !list.contains(&item) {
        list.push(item);
    }
}

/// Whitespace runs as single spaces.
pub(crate) fn fold(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn user_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b["type"] == "text")
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// Words that state a constraint (the bench's own list, not the archive's).
const CONSTRAINT: [&str; 7] = [
    "must", "never", "always", "don't", "do not", "should", "only",
];

/// Collects the facts of the summarized entries `region` of `entries`.
pub(crate) fn own_facts(entries: &[Value], region: &[usize]) -> OwnFacts {
    let mut f = OwnFacts::default();
    for &i in region {
        let m = &entries[i]["message"];
        match m["role"].as_str() {
            Some("assistant") => {
                for block in m["content"].as_array().into_iter().flatten() {
                    if block["type"] != "toolCall" {
                        continue;
                    }
                    let args = &block["arguments"];
                    for key in PATH_KEYS {
                        if let Some(p) = args[key].as_str() {
                            push_unique(&mut f.paths, p.to_owned());
                        }
                    }
                    if block["name"] == "bash"
                        && let Some(c) = args["command"].as_str()
                    {
                        let first = c.lines().next().unwrap_or_default().trim();
                        push_unique(&mut f.commands, first.chars().take(COMMAND_HEAD).collect());
                    }
                }
            }
            Some("user") => {
                let text = user_text(m);
                // A number's context is its line: the line after a pasted
                // stack trace is another statement, which the archive may
                // leave out (marking where) when it was said before.
                for line in text.lines() {
                    let words: Vec<&str> = line.split_whitespace().collect();
                    for (k, w) in words.iter().enumerate() {
                        if w.chars().filter(char::is_ascii_digit).count() >= 3 {
                            let from = k.saturating_sub(1);
                            let to = (k + 2).min(words.len());
                            push_unique(&mut f.numbers, words[from..to].join(" "));
                        }
                    }
                }
                for sentence in text.split(['.', '!', '?', '\n']) {
                    let lower = sentence.to_lowercase();
                    let s = fold(sentence);
                    if s.len() >= 12
                        && s.len() <= 300
                        && lower
                            .split(|c: char| !c.is_alphanumeric() && c != '\'')
                            .any(|w| CONSTRAINT.contains(&w))
                    {
                        push_unique(&mut f.constraints, s);
                    }
                }
            }
            _ => {}
        }
    }
    f
}

/// `(kept, total)` of `facts` in `text` (and, folded, in `folded`).
pub(crate) fn kept(facts: &[String], text: &str, folded: &str, fold_them: bool) -> (usize, usize) {
    let n = facts
        .iter()
        .filter(|f| {
            if fold_them {
                folded.contains(fold(f).as_str())
            } else {
                text.contains(f.as_str())
            }
        })
        .count();
    (n, facts.len())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn facts_come_from_calls_and_user_messages() {
        let entries = vec![
            json!({"message": {"role": "user", "content": "The limit is 2500 ms. You must keep the API stable.\nok"}}),
            json!({"message": {"role": "assistant", "content": [
                {"type": "toolCall", "name": "read", "arguments": {"path": "src/a.rs"}},
                {"type": "toolCall", "name": "bash", "arguments": {"command": "cargo test\necho done"}}
            ]}}),
        ];
        let f = own_facts(&entries, &[0, 1]);
        assert_eq!(f.paths, ["src/a.rs"]);
        assert_eq!(f.commands, ["cargo test"]);
        assert_eq!(f.numbers, ["is 2500 ms."]);
        assert_eq!(f.constraints, ["You must keep the API stable"]);
        let trace = vec![
            json!({"message": {"role": "user", "content": "it failed:\n  at run (lib/job.js:312:7)\nRetrying in a moment"}}),
        ];
        assert_eq!(
            own_facts(&trace, &[0]).numbers,
            ["run (lib/job.js:312:7)"],
            "a number's neighbours are the words of its line"
        );
        assert_eq!(
            kept(&f.numbers, "", "the limit is 2500 ms. here", true),
            (1, 1)
        );
    }

    #[test]
    fn a_fact_the_planting_split_is_not_counted() {
        let base =
            vec![json!({"message": {"role": "user", "content": "The cap is 2500 ms. Keep it."}})];
        let planted = vec![
            json!({"message": {"role": "user", "content": "The cap is 2500 ms. New fact here. Keep it."}}),
        ];
        let f = own_facts(&base, &[0]).also_in(&own_facts(&planted, &[0]));
        assert_eq!(f.numbers, ["is 2500 ms."]);
        let planted = vec![
            json!({"message": {"role": "user", "content": "The cap is 2500\n\nNew fact. ms. Keep it."}}),
        ];
        assert!(
            own_facts(&base, &[0])
                .also_in(&own_facts(&planted, &[0]))
                .numbers
                .is_empty()
        );
    }
}
