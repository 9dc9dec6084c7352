//! The context at a leaf against the reference answers: model, thinking
//! level, message list, per-message estimates and digests, the context
//! estimate, and the provider-message count.
//!
//! Adjustment (docs/design.md, "Where musepi differs from pi"): a user image counts 1,200 tokens here
//! and nothing in the reference, so the reference numbers are raised by
//! that much before comparing.

#![allow(clippy::unwrap_used)]

use musepi_context_builder::{
    ConvertOptions, build_context, convert_to_llm, estimate_context_tokens,
};
use musepi_session_model::{AgentMessage, EntryBody, Journal, SequentialIds, Session};
use musepi_tests::{answer_index, canonical_json, sha256_hex, user_images};
use serde_json::{Value, json};

/// The message as JSON, the way the answers hash it.
fn message_json(session: &Session, entry_index: usize, message: &AgentMessage) -> Value {
    let entry = &session.entries()[entry_index];
    match &entry.body {
        EntryBody::Message(_) => {
            let line: Value =
                serde_json::from_str(&session.raw_line(entry_index).unwrap()).unwrap();
            line["message"].clone()
        }
        _ => serde_json::to_value(message).unwrap(),
    }
}

fn content_json(role: &str, message: &Value) -> Value {
    match role {
        "bashExecution" => json!({"command": message["command"], "output": message["output"]}),
        "branchSummary" | "compactionSummary" => message["summary"].clone(),
        _ => message["content"].clone(),
    }
}

#[test]
fn context_at_each_leaf_matches_the_reference() {
    for record in answer_index() {
        let answer = record.read_answer();
        let name = &record.answer;
        let mut journal = Journal::open(record.session_path(), &mut SequentialIds::new()).unwrap();
        if let Some(leaf) = &record.leaf {
            journal.set_leaf(leaf).unwrap();
        }
        let session = journal.session();
        let ctx = build_context(session);
        let expected = &answer["context"];
        let model = ctx
            .model
            .as_ref()
            .map(|m| json!({"provider": m.provider, "modelId": m.model_id}));
        assert_eq!(expected["model"], json!(model), "{name}");
        assert_eq!(
            expected["thinkingLevel"],
            json!(ctx.thinking_level),
            "{name}"
        );
        assert_eq!(
            expected["messageCount"],
            json!(ctx.messages.len()),
            "{name}"
        );
        let llm = convert_to_llm(&ctx.messages, &ConvertOptions::for_summary());
        assert_eq!(expected["llmMessageCount"], json!(llm.len()), "{name}");

        let extra: Vec<u64> = ctx
            .messages
            .iter()
            .map(|m| 1200 * user_images(&m.message))
            .collect();
        let mut sum = 0;
        for (i, (m, exp)) in ctx
            .messages
            .iter()
            .zip(expected["messages"].as_array().unwrap())
            .enumerate()
        {
            let entry = &session.entries()[m.entry_index];
            let role = m.message.role();
            assert_eq!(exp["i"], json!(i), "{name} #{i}");
            assert_eq!(exp["entryId"], json!(entry.id.as_str()), "{name} #{i}");
            assert_eq!(exp["role"], json!(role), "{name} #{i}");
            assert_eq!(
                exp["tokens"].as_u64().unwrap() + extra[i],
                m.tokens(),
                "{name} #{i} {}",
                entry.id
            );
            assert_eq!(
                exp["timestamp"].as_f64(),
                m.message.timestamp(),
                "{name} #{i}"
            );
            let value = message_json(session, m.entry_index, &m.message);
            assert_eq!(
                exp["digest"],
                json!(sha256_hex(canonical_json(&value).as_bytes())),
                "{name} #{i} {}",
                entry.id
            );
            let content = content_json(role, &value);
            assert_eq!(
                exp["contentDigest"],
                json!(sha256_hex(canonical_json(&content).as_bytes())),
                "{name} #{i} {}",
                entry.id
            );
            sum += m.tokens();
        }
        let extra_sum: u64 = extra.iter().sum();
        assert_eq!(
            expected["estimatedTokensSum"].as_u64().unwrap() + extra_sum,
            sum,
            "{name}"
        );

        let est = estimate_context_tokens(ctx.agent_messages());
        let exp = &expected["estimateContextTokens"];
        let after: u64 = match est.last_usage_index {
            Some(l) => extra[l + 1..].iter().sum(),
            None => extra_sum,
        };
        assert_eq!(exp["lastUsageIndex"], json!(est.last_usage_index), "{name}");
        assert_eq!(
            exp["usageTokens"].as_u64().unwrap(),
            est.usage_tokens,
            "{name}"
        );
        assert_eq!(
            exp["trailingTokens"].as_u64().unwrap() + after,
            est.trailing_tokens,
            "{name}"
        );
        assert_eq!(
            exp["tokens"].as_u64().unwrap() + after,
            est.tokens,
            "{name}"
        );
    }
}
