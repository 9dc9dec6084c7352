//! The kept window stays `keepRecentTokens` provider tokens, within 15%,
//! whatever the number of compactions before it.
//!
//! A simulated agent talks to a provider that counts 1.3 tokens for each
//! estimated token and adds its system prompt and tools to every request.
//! Each request's usage is what that provider would report for the context
//! the agent sends; when it crosses the threshold, the agent compacts with
//! `keepRecentTokens` 4,000 and carries on.

use musepi_context_builder::{build_context_at, estimate_tokens};
use musepi_test_support::EntryBuilder as Builder;

use crate::{CompactionSettings, prepare};

/// Provider tokens per estimated token.
const RATIO: f64 = 1.3;
/// The system prompt and tool definitions, estimated as messages are.
const OVERHEAD: u64 = 3_000;
const KEEP: u64 = 4_000;
const THRESHOLD: f64 = 14_000.0;

/// What the provider counts for a request holding the context at the leaf.
fn prompt_tokens(b: &Builder) -> f64 {
    let held: u64 = build_context_at(&b.session, b.leaf())
        .agent_messages()
        .map(estimate_tokens)
        .sum();
    RATIO * (held + OVERHEAD) as f64
}

/// Runs the agent through `compactions` compactions and returns the kept
/// window of each, in provider tokens.
fn kept_windows(settings: &CompactionSettings, compactions: usize) -> Vec<f64> {
    let mut b = Builder::new();
    let mut kept = Vec::new();
    let mut turn = 0;
    while kept.len() < compactions {
        turn += 1;
        // Turns of varied size: ~110 to ~330 estimated tokens a message.
        let words = 60 + (turn * 37) % 120;
        let text: Vec<String> = (0..words).map(|i| format!("t{turn}w{i}")).collect();
        b.user(&text.join(" "));
        let prompt = prompt_tokens(&b);
        b.assistant(&text.join(" "), &[], Some((prompt, 200.0)));
        if prompt <= THRESHOLD {
            continue;
        }
        let p = prepare(&b.session, b.leaf(), settings).expect("something to compact");
        let kept_estimate: u64 = p
            .recent_messages
            .iter()
            .map(|m| estimate_tokens(&m.message))
            .sum();
        kept.push(RATIO * kept_estimate as f64);
        let first_kept = p.first_kept_entry_id.clone();
        let tokens_before = p.tokens_before;
        b.compaction(
            &"summary of the work so far ".repeat(60),
            &first_kept,
            tokens_before,
        );
    }
    kept
}

fn assert_within_15_percent(kept: &[f64], how: &str) {
    for (n, k) in kept.iter().enumerate() {
        let off = (k - KEEP as f64).abs() / KEEP as f64;
        assert!(
            off <= 0.15,
            "{how}: compaction {} kept {k:.0} provider tokens for keepRecentTokens {KEEP} ({:.0}% off); all: {kept:.0?}",
            n + 1,
            off * 100.0
        );
    }
}

#[test]
fn the_kept_window_holds_after_many_compactions_when_the_overhead_is_measured() {
    let settings = CompactionSettings {
        keep_recent_tokens: KEEP,
        ..CompactionSettings::default()
    };
    assert_within_15_percent(&kept_windows(&settings, 6), "measured overhead");
}

#[test]
fn the_kept_window_holds_after_many_compactions_when_the_overhead_is_known() {
    let settings = CompactionSettings {
        keep_recent_tokens: KEEP,
        overhead_tokens: Some(OVERHEAD),
        ..CompactionSettings::default()
    };
    assert_within_15_percent(&kept_windows(&settings, 6), "known overhead");
}
