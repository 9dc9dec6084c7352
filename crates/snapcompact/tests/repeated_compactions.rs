//! Compacting the same session again and again: what the first messages
//! said survives the archives that fold one another in.

mod common;

use std::fmt::Write as _;

use musepi_context_builder::estimate_context_at;
use musepi_test_support::EntryBuilder as Builder;

use common::{BuilderExt as _, SnapSettings, SnapTarget, compact_preparation};

/// Facts planted in the first user messages, one in each.
const FACTS: usize = 6;

/// The user's message of step `n`: a fact in each of the first
/// [`FACTS`], then one sentence said six times, as in the pi end-to-end
/// test (`integrations/pi/test/pi.rpc.e2e.test.ts`).
fn prompt(n: usize) -> String {
    let fact = if n <= FACTS {
        format!("Remember: {} ", fact(n))
    } else {
        String::new()
    };
    format!(
        "Step {n}: {fact}{}",
        "Keep the parser fast and the public API unchanged. ".repeat(6)
    )
}

fn fact(n: usize) -> String {
    format!("FACT-{n} batch size of module{n} is {}.", 20 + n * 7)
}

/// The model's reply of turn `n`: one sentence said 28 times.
fn reply(n: usize) -> String {
    format!(
        "Turn {n} done. {}",
        "The tokenizer now borrows its input and the parser allocates less. ".repeat(28)
    )
}

/// Runs turns, compacting as pi does when the context (counted as the
/// loopback model of the end-to-end test counts it, 1.3 tokens for four
/// characters) leaves less than `reserve` of `window`, until `times`
/// compactions are in the session; returns each compaction's summary.
fn compacted(window: u64, reserve: u64, keep: u64, times: usize) -> Vec<String> {
    compacted_turns(window, reserve, keep, times, |b, n| {
        b.user(&prompt(n));
        b.assistant(&reply(n), &[], None);
    })
}

/// [`compacted`] over the turns `turn` appends.
fn compacted_turns(
    window: u64,
    reserve: u64,
    keep: u64,
    times: usize,
    mut turn: impl FnMut(&mut Builder, usize),
) -> Vec<String> {
    let mut settings = SnapSettings::default();
    settings.reserve_tokens = reserve;
    settings.context_window = Some(window);
    let mut b = Builder::new();
    let mut summaries = Vec::new();
    for n in 1..=400 {
        turn(&mut b, n);
        let tokens = estimate_context_at(&b.session, b.leaf()).tokens as f64 * 1.3;
        if tokens <= (window - reserve) as f64 {
            continue;
        }
        let result = compact_preparation(&b.prepare(keep), &SnapTarget::default(), &settings)
            .unwrap_or_else(|e| panic!("{e}"));
        summaries.push(result.summary.clone());
        b.commit(result);
        if summaries.len() == times {
            return summaries;
        }
    }
    panic!("fewer than {times} compactions in 400 turns");
}

#[test]
fn three_compactions_in_a_small_window_keep_the_first_messages_facts() {
    let summaries = compacted(16_000, 4_000, 4_000, 3);
    let last = &summaries[2];
    let lost: Vec<String> = (1..=FACTS)
        .map(fact)
        .filter(|f| !last.contains(f.as_str()))
        .collect();
    assert!(lost.is_empty(), "lost {lost:?} in\n{last}");
}

/// An agent's turn `n`: the same request (a new fact in each of the first
/// [`FACTS`], the batch size restated with a new value in the last of
/// them), the same reasoning, the same test run with the same output and
/// the same answer.
fn agent_turn(b: &mut Builder, n: usize) {
    let fact = match n {
        1..FACTS => format!("Remember: {} ", agent_fact(n)),
        FACTS => format!("Remember: {} ", restated()),
        _ => String::new(),
    };
    b.user(&format!(
        "Step {n}: {fact}{}",
        "Run the parser tests again and tell me if anything changed. Do not touch the public API. "
            .repeat(2)
    ));
    let id = format!("c{n}");
    b.call(
        "Running the parser tests again, as before; nothing changed since the last run.",
        &id,
        "bash",
        serde_json::json!({"command": "cargo test -p parser"}),
    );
    let mut output = String::new();
    for i in 0..30 {
        let _ = writeln!(output, "test parser::tests::case_{i} ... ok");
    }
    output.push_str("test result: ok. 30 passed; 0 failed");
    b.result(&id, "bash", &output);
    b.assistant(
        &"All 30 parser tests pass again and nothing changed in its public API. ".repeat(4),
        &[],
        None,
    );
}

/// The fact of the agent's request `n`: a path, a number or a command.
fn agent_fact(n: usize) -> String {
    match n % 3 {
        0 => {
            format!("the fixtures of case {n} live in crates/parser/tests/fixtures/case_{n}.json.")
        }
        1 => format!("deploy step {n} runs `make deploy STAGE=s{n} REGION=eu-west-{n}`."),
        _ => format!("the retry limit of worker{n} is {} attempts.", 3 + n * 4),
    }
}

/// The batch size, said again with a new value: the value is the news.
fn restated() -> &'static str {
    "the batch size for the importer is 40, not 25 as said before."
}

#[test]
fn five_compactions_of_an_agent_repeating_itself_keep_its_first_requests_facts() {
    let summaries = compacted_turns(24_000, 6_000, 5_000, 5, agent_turn);
    let last = &summaries[4];
    let wanted: Vec<String> = (1..FACTS)
        .map(agent_fact)
        .chain([restated().to_owned()])
        .collect();
    let lost: Vec<&String> = wanted
        .iter()
        .filter(|f| !last.contains(f.as_str()))
        .collect();
    assert!(lost.is_empty(), "lost {lost:?} in\n{last}");
}
