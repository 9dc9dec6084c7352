//! Planting facts in a session's summarized history: for one seed, facts
//! of every kind in every host (a user message, a reply, the reasoning, a
//! command's output), at random places of the history and of the host,
//! written into existing entries, so the session stays the session it
//! was. Some facts are stated again later with a new value (the same
//! sentence, another number, choice or command): the value is the news.

use serde_json::{Value, json};

use super::slots::Slots;
use super::templates::{Kind, pick_template};
use crate::rng::Rng;

/// Where a fact is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Host {
    /// A sentence in a user message.
    User,
    /// A sentence in an assistant reply.
    Assistant,
    /// A sentence in the assistant's reasoning.
    Reasoning,
    /// A line of a command's output.
    Output,
}

impl Host {
    pub(crate) const ALL: [Host; 4] = [Host::User, Host::Assistant, Host::Reasoning, Host::Output];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Host::User => "user",
            Host::Assistant => "assistant",
            Host::Reasoning => "reasoning",
            Host::Output => "tool output",
        }
    }
}

/// Where in its host a fact stands: the first sentence or line, one in
/// the middle, the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    Start,
    Middle,
    End,
}

impl Place {
    pub(crate) const ALL: [Place; 3] = [Place::Start, Place::Middle, Place::End];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Place::Start => "first",
            Place::Middle => "inside",
            Place::End => "last",
        }
    }
}

/// Where in the summarized history, as shares of its messages.
pub(crate) const POSITIONS: [(&str, f64, f64); 3] = [
    ("early", 0.0, 0.34),
    ("middle", 0.34, 0.67),
    ("late", 0.67, 1.0),
];
/// Facts per kind and host for one seed.
const PER_KIND_AND_HOST: usize = 2;
/// Facts stated again later with a new value, for one seed.
const RESTATED: usize = 6;

/// One planted fact.
#[derive(Debug, Clone)]
pub(crate) struct Planted {
    pub kind: Kind,
    pub host: Host,
    pub place: Place,
    /// Early, middle or late: an index into [`POSITIONS`].
    pub position: usize,
    /// A restatement of an earlier planted fact with a new value.
    pub restated: bool,
    pub text: String,
    /// The entry it was written into (a position in the session's lines).
    pub entry: usize,
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

/// Whether `entry` can host a fact in `host`.
fn fits(entry: &Value, host: Host, any_tool: bool) -> bool {
    let m = &entry["message"];
    let blocks = m["content"].as_array();
    let has = |t: &str| blocks.is_some_and(|b| b.iter().any(|x| x["type"] == t));
    match host {
        Host::User => role(entry) == "user" && (m["content"].is_string() || has("text")),
        Host::Assistant => role(entry) == "assistant" && has("text"),
        Host::Reasoning => role(entry) == "assistant" && blocks.is_some(),
        Host::Output => {
            role(entry) == "toolResult"
                && has("text")
                && (any_tool || is_command_tool(m["toolName"].as_str().unwrap_or_default()))
        }
    }
}

/// The byte offsets of `text` after which a sentence ends (before the
/// whitespace that follows it).
fn sentence_ends(text: &str) -> Vec<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .filter(|&i| {
            matches!(bytes[i], b'.' | b'!' | b'?' | b'\n')
                && bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace)
        })
        .map(|i| if bytes[i] == b'\n' { i } else { i + 1 })
        .collect()
}

/// `sentence` written into prose at `place`.
fn into_prose(text: &str, sentence: &str, place: Place, rng: &mut Rng) -> String {
    let text = text.trim_end();
    let ends_sentence = text.ends_with(['.', '!', '?', ':']);
    let at_end = || {
        if text.is_empty() {
            sentence.to_owned()
        } else if ends_sentence {
            format!("{text} {sentence}")
        } else {
            format!("{text}\n\n{sentence}")
        }
    };
    match place {
        Place::Start if text.is_empty() => sentence.to_owned(),
        Place::Start => format!("{sentence} {text}"),
        Place::End => at_end(),
        Place::Middle => {
            let ends = sentence_ends(text);
            let inner: Vec<usize> = ends
                .into_iter()
                .filter(|&i| i > 0 && i < text.len())
                .collect();
            if inner.is_empty() {
                return at_end();
            }
            let i = *rng.pick(&inner);
            format!("{} {sentence}{}", &text[..i], &text[i..])
        }
    }
}

/// `line` written into a tool output at `place`: the first line, a line
/// strictly between the first and the last, or the last.
fn into_output(text: &str, line: &str, place: Place, rng: &mut Rng) -> String {
    let mut lines: Vec<&str> = text.trim_end_matches('\n').split('\n').collect();
    let at = match place {
        Place::Start => 0,
        Place::End => lines.len(),
        Place::Middle if lines.len() < 2 => 1.min(lines.len()),
        Place::Middle => rng.range(1, lines.len() as u64 - 1) as usize,
    };
    lines.insert(at, line);
    lines.join("\n")
}

fn plant_into(entry: &mut Value, host: Host, place: Place, fact: &str, rng: &mut Rng) {
    let m = &mut entry["message"];
    if host == Host::User
        && let Some(text) = m["content"].as_str()
    {
        m["content"] = Value::String(into_prose(text, fact, place, rng));
        return;
    }
    let Some(blocks) = m["content"].as_array_mut() else {
        return;
    };
    let wanted = if host == Host::Reasoning {
        "thinking"
    } else {
        "text"
    };
    let Some(block) = blocks.iter_mut().find(|b| b["type"] == wanted) else {
        // No reasoning in this reply: it gets some.
        blocks.insert(0, json!({"type": "thinking", "thinking": fact}));
        return;
    };
    let text = block[wanted].as_str().unwrap_or_default().to_owned();
    block[wanted] = Value::String(match host {
        Host::Output => into_output(&text, fact, place, rng),
        _ => into_prose(&text, fact, place, rng),
    });
}

/// What one seed plants: a fact's kind, host, place, share of the history
/// and text.
struct Wanted {
    kind: Kind,
    host: Host,
    place: Place,
    share: f64,
    restated: bool,
    text: String,
}

/// Draws the facts of `seed` (`held_out`: from every template).
fn draw(seed: u64, held_out: bool) -> Vec<Wanted> {
    let mut rng = Rng::new(seed.wrapping_mul(0x9E37_79B9) ^ 0xFAC7);
    let mut wanted = Vec::new();
    let mut n = 0usize;
    for kind in Kind::ALL {
        for host in Host::ALL {
            for _ in 0..PER_KIND_AND_HOST {
                // The positions take turns, the places are drawn.
                let (_, lo, hi) = POSITIONS[(n + seed as usize) % POSITIONS.len()];
                n += 1;
                let share = lo + (hi - lo) * (rng.range(0, 999) as f64 / 1000.0);
                let place = *rng.pick(&Place::ALL);
                let output = host == Host::Output;
                let text = loop {
                    let template = pick_template(&mut rng, kind, output, held_out);
                    let text = Slots::new(&mut rng).fill(template);
                    if !wanted.iter().any(|w: &Wanted| w.text == text) {
                        break text;
                    }
                };
                wanted.push(Wanted {
                    kind,
                    host,
                    place,
                    share,
                    restated: false,
                    text,
                });
            }
        }
    }
    // Restatements: a fact in the first half, the same sentence with new
    // values later, in a host of the same kind.
    for _ in 0..RESTATED {
        let kind = *rng.pick(&Kind::ALL);
        let host = *rng.pick(&Host::ALL);
        let output = host == Host::Output;
        let template = pick_template(&mut rng, kind, output, held_out);
        let mut slots = Slots::new(&mut rng);
        let first = 0.05 + 0.45 * (rng.range(0, 999) as f64 / 1000.0);
        let later = first + 0.1 + (0.95 - first - 0.1) * (rng.range(0, 999) as f64 / 1000.0);
        let text = slots.fill(template);
        slots.revalue(&mut rng);
        let again = slots.fill(template);
        if again == text || wanted.iter().any(|w| w.text == text || w.text == again) {
            continue;
        }
        for (share, restated, text) in [(first, false, text), (later, true, again)] {
            wanted.push(Wanted {
                kind,
                host,
                place: *rng.pick(&Place::ALL),
                share,
                restated,
                text,
            });
        }
    }
    wanted
}

/// The index into [`POSITIONS`] of `share`.
fn position_of(share: f64) -> usize {
    POSITIONS
        .iter()
        .position(|&(_, lo, hi)| share >= lo && share < hi)
        .unwrap_or(POSITIONS.len() - 1)
}

/// Facts for a history compacted again and again: [`FEW`] of them, the
/// kinds and the hosts in turn, at random places of the history and of
/// the host, and one stated again later with a new value.
fn draw_few(seed: u64, held_out: bool) -> Vec<Wanted> {
    let mut rng = Rng::new(seed.wrapping_mul(0x51_7CC1) ^ 0xFE3);
    let mut wanted: Vec<Wanted> = Vec::new();
    let mut add = |rng: &mut Rng, kind: Kind, host: Host, share: f64, restated| {
        let output = host == Host::Output;
        let mut slots = Slots::new(rng);
        let text = loop {
            let text = slots.fill(pick_template(rng, kind, output, held_out));
            if !wanted.iter().any(|w| w.text == text) {
                break text;
            }
            slots = Slots::new(rng);
        };
        wanted.push(Wanted {
            kind,
            host,
            place: *rng.pick(&Place::ALL),
            share,
            restated,
            text,
        });
        slots
    };
    for i in 0..FEW {
        let kind = Kind::ALL[i % Kind::ALL.len()];
        let host = Host::ALL[(i + i / Kind::ALL.len() + seed as usize) % Host::ALL.len()];
        let share = rng.range(0, 999) as f64 / 1000.0;
        add(&mut rng, kind, host, share, false);
    }
    // A template whose values change when restated (one without a value
    // to change says the same again).
    for _ in 0..50 {
        let kind = *rng.pick(&Kind::ALL);
        let host = *rng.pick(&Host::ALL);
        let output = host == Host::Output;
        let template = pick_template(&mut rng, kind, output, held_out);
        let mut slots = Slots::new(&mut rng);
        let first = slots.fill(template);
        slots.revalue(&mut rng);
        let again = slots.fill(template);
        if first == again || wanted.iter().any(|w| w.text == first || w.text == again) {
            continue;
        }
        for (lo, restated, text) in [(0.0, false, first), (0.5, true, again)] {
            wanted.push(Wanted {
                kind,
                host,
                place: *rng.pick(&Place::ALL),
                share: lo + 0.5 * (rng.range(0, 999) as f64 / 1000.0),
                restated,
                text,
            });
        }
        break;
    }
    wanted
}

/// Facts planted by [`plant_few`] besides the restated pair.
pub(crate) const FEW: usize = 10;

/// Plants the facts of `seed` into `entries` (the session's lines as
/// JSON, by position) among the summarized entries `region` (positions
/// into `entries`, oldest first); returns what was planted. A held-out
/// seed draws from every template.
pub(crate) fn plant(
    entries: &mut [Value],
    region: &[usize],
    seed: u64,
    held_out: bool,
) -> Vec<Planted> {
    place(entries, region, seed, draw(seed, held_out))
}

/// Plants a few facts of `seed` into `entries` among `region`, as
/// [`plant`] does, for a history compacted several times: [`FEW`] facts,
/// every kind twice, and one stated again with a new value.
pub(crate) fn plant_few(
    entries: &mut [Value],
    region: &[usize],
    seed: u64,
    held_out: bool,
) -> Vec<Planted> {
    place(entries, region, seed, draw_few(seed, held_out))
}

/// Writes each of `wanted` into the entry of its host nearest its share of
/// `region`.
fn place(entries: &mut [Value], region: &[usize], seed: u64, wanted: Vec<Wanted>) -> Vec<Planted> {
    let mut planted = Vec::new();
    if region.is_empty() {
        return planted;
    }
    let mut rng = Rng::new(seed ^ 0x91A7);
    let mut used: Vec<(usize, Host)> = Vec::new();
    for w in wanted {
        let any_tool = !region.iter().any(|&i| fits(&entries[i], w.host, false));
        let target = ((region.len() - 1) as f64 * w.share).round() as usize;
        // The nearest entry of the host not used for it yet, else the
        // nearest of the host.
        let nearest = |free: bool| {
            (0..region.len())
                .flat_map(|d| [target.checked_sub(d), Some(target + d)])
                .flatten()
                .filter(|&k| k < region.len())
                .map(|k| (k, region[k]))
                .find(|&(_, i)| {
                    (!free || !used.contains(&(i, w.host))) && fits(&entries[i], w.host, any_tool)
                })
        };
        let Some((k, i)) = nearest(true).or_else(|| nearest(false)) else {
            continue;
        };
        plant_into(&mut entries[i], w.host, w.place, &w.text, &mut rng);
        used.push((i, w.host));
        planted.push(Planted {
            kind: w.kind,
            host: w.host,
            place: w.place,
            position: position_of(k as f64 / region.len().max(1) as f64),
            restated: w.restated,
            text: w.text,
            entry: i,
        });
    }
    planted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_facts_of_a_seed_are_unique_and_cover_every_kind_and_host() {
        for (seed, held_out) in [(1, false), (2, false), (1001, true)] {
            let wanted = draw(seed, held_out);
            let mut texts: Vec<&str> = wanted.iter().map(|w| w.text.as_str()).collect();
            texts.sort_unstable();
            texts.dedup();
            assert_eq!(texts.len(), wanted.len());
            for kind in Kind::ALL {
                for host in Host::ALL {
                    assert!(wanted.iter().any(|w| w.kind == kind && w.host == host));
                }
            }
            assert!(wanted.iter().any(|w| w.restated));
        }
        // Other seeds, other facts.
        let a: Vec<String> = draw(1, false).into_iter().map(|w| w.text).collect();
        let b: Vec<String> = draw(2, false).into_iter().map(|w| w.text).collect();
        assert!(a.iter().all(|t| !b.contains(t)));
    }

    #[test]
    fn a_few_facts_take_every_kind_twice_and_restate_one() {
        for (seed, held_out) in [(1, false), (1002, true)] {
            let wanted = draw_few(seed, held_out);
            assert_eq!(wanted.len(), FEW + 2);
            for kind in Kind::ALL {
                let n = wanted
                    .iter()
                    .filter(|w| w.kind == kind && !w.restated)
                    .count();
                assert!(n >= 2, "{}: {n}", kind.name());
            }
            let restated = wanted.iter().filter(|w| w.restated).count();
            assert_eq!(restated, 1);
            let mut texts: Vec<&str> = wanted.iter().map(|w| w.text.as_str()).collect();
            texts.sort_unstable();
            texts.dedup();
            assert_eq!(texts.len(), wanted.len());
        }
    }

    #[test]
    fn prose_takes_the_fact_first_inside_or_last() {
        let mut rng = Rng::new(1);
        assert_eq!(
            into_prose("One. Two.", "X.", Place::Start, &mut rng),
            "X. One. Two."
        );
        assert_eq!(
            into_prose("One. Two.", "X.", Place::Middle, &mut rng),
            "One. X. Two."
        );
        assert_eq!(
            into_prose("no end", "X.", Place::End, &mut rng),
            "no end\n\nX."
        );
        assert_eq!(
            into_prose("no end", "X.", Place::Middle, &mut rng),
            "no end\n\nX."
        );
    }

    #[test]
    fn an_output_takes_the_line_first_between_or_last() {
        let mut rng = Rng::new(1);
        assert_eq!(
            into_output("a\nb\nc", "X", Place::Start, &mut rng),
            "X\na\nb\nc"
        );
        assert_eq!(
            into_output("a\nb\nc\n", "X", Place::End, &mut rng),
            "a\nb\nc\nX"
        );
        for _ in 0..20 {
            let out = into_output("a\nb\nc", "X", Place::Middle, &mut rng);
            assert!(out == "a\nX\nb\nc" || out == "a\nb\nX\nc", "{out}");
        }
    }

    #[test]
    fn every_fact_lands_in_an_entry_of_its_host() {
        let mut entries = vec![
            json!({"type": "message", "message": {"role": "user", "content": "Do it. Please."}}),
            json!({"type": "message", "message": {"role": "assistant", "content": [{"type": "text", "text": "On it."}]}}),
            json!({"type": "message", "message": {"role": "toolResult", "toolName": "bash", "content": [{"type": "text", "text": "a\nb"}]}}),
        ];
        let planted = plant(&mut entries, &[0, 1, 2], 3, false);
        assert!(planted.len() >= 40, "{}", planted.len());
        for p in &planted {
            let entry = &entries[p.entry];
            let text = serde_json::to_string(entry).unwrap_or_default();
            let json = serde_json::to_string(&p.text).unwrap_or_default();
            assert!(text.contains(json.trim_matches('"')), "{}", p.text);
            let role = entry["message"]["role"].as_str().unwrap_or_default();
            let expected = match p.host {
                Host::User => "user",
                Host::Assistant | Host::Reasoning => "assistant",
                Host::Output => "toolResult",
            };
            assert_eq!(role, expected, "{}", p.text);
        }
    }
}
