//! Compacting the same session again and again: what the first messages
//! said survives the archives that fold one another in.

use musepi_context_builder::estimate_context_at;
use musepi_test_support::EntryBuilder as Builder;

use super::testkit::BuilderExt as _;
use super::*;

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
    let mut settings = SnapSettings::default();
    settings.reserve_tokens = reserve;
    settings.context_window = Some(window);
    let mut b = Builder::new();
    let mut summaries = Vec::new();
    for n in 1..=200 {
        b.user(&prompt(n));
        b.assistant(&reply(n), &[], None);
        let tokens = estimate_context_at(&b.session, b.leaf()).tokens * 1.3;
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
    panic!("fewer than {times} compactions in 200 turns");
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
