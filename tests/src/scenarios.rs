//! Generated scenarios whose sizes are the point: the cases of pi's compaction tests
//! that need long texts, the end-to-end example of pi's design, and the
//! pruning cases musepi adds to pi's. Each returns the JSONL builder so a
//! test can still add to it.

use serde_json::json;

use musepi_test_support::{SessionBuilder, text_block, tool_call};

/// `[tag] ` followed by `x` up to exactly `len` UTF-16 units (ASCII).
pub fn filler(tag: &str, len: usize) -> String {
    let mut s = format!("[{tag}] ");
    assert!(s.len() <= len, "{tag}: {len} is too short");
    s.push_str(&"x".repeat(len - s.len()));
    s
}

/// The end-to-end example of pi's design: eleven entries, a model change at index 6, usage
/// 45,000 + 500 on the last assistant.
pub fn appendix_c() -> SessionBuilder {
    let mut b = SessionBuilder::new();
    b.user(&filler("u0", 400));
    b.assistant(
        &[
            text_block(&filler("a1", 200)),
            tool_call("c1", "read", &json!({"path": "src/a.ts"})),
        ],
        None,
    );
    b.tool_result("c1", "read", &filler("t2", 40_000));
    b.user(&filler("u3", 800));
    // {"path":"src/a.ts","x":"…"} is 3,000 characters with 2,974 in "x".
    b.assistant(
        &[
            text_block(&filler("a4", 400)),
            tool_call(
                "c2",
                "edit",
                &json!({"path": "src/a.ts", "x": "y".repeat(2_974)}),
            ),
        ],
        None,
    );
    b.tool_result("c2", "edit", &filler("t5", 200));
    b.entry(
        "model_change",
        json!({"provider": "anthropic", "modelId": "claude-sonnet-4-5"}),
    );
    b.user(&filler("u7", 400));
    b.assistant(
        &[
            text_block(&filler("a8", 1_200)),
            tool_call("c3", "bash", &json!({"command": "npm test"})),
        ],
        None,
    );
    b.tool_result("c3", "bash", &filler("t9", 60_000));
    b.assistant(&[text_block(&filler("a10", 2_000))], Some((45_000, 500)));
    b
}

/// From pi's compaction tests: ten user/assistant pairs; assistant `i` reports
/// input 100, output 50 and cacheRead `(i+1) × 1000`.
pub fn pairs_with_cache_reads() -> SessionBuilder {
    let mut b = SessionBuilder::new();
    for i in 0..10u64 {
        b.user(&format!(
            "Question {i}: what does step {i} of the pipeline do?"
        ));
        let mut m = json!({"role": "assistant", "content": [text_block(&format!("Step {i} counts the words of one file."))],
            "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop"});
        let cache = (i + 1) * 1000;
        m["usage"] = json!({"input": 100, "output": 50, "cacheRead": cache, "cacheWrite": 0, "totalTokens": 150 + cache});
        b.message(m);
    }
    b
}

/// From pi's compaction tests: a single assistant entry.
pub fn single_assistant() -> SessionBuilder {
    let mut b = SessionBuilder::new();
    b.assistant(&[text_block("A lone answer with no question.")], None);
    b
}

/// From pi's compaction tests: `Turn 1`, `A1`, `Turn 2`, then three long answers
/// of 1,250 tokens each.
pub fn long_second_turn() -> SessionBuilder {
    let mut b = SessionBuilder::new();
    b.user("Turn 1");
    b.assistant(&[text_block("A1")], None);
    b.user("Turn 2");
    for part in ["A2-1 ", "A2-2 ", "A2-3 "] {
        b.assistant(&[text_block(&part.repeat(1_000))], None);
    }
    b
}

/// From pi's compaction tests: `hi`, `hello`, a 4,000-character custom message, `ok`.
pub fn custom_message_between() -> SessionBuilder {
    let mut b = SessionBuilder::new();
    b.user("hi");
    b.assistant(&[text_block("hello")], None);
    b.entry(
        "custom_message",
        json!({"customType": "note", "content": "x".repeat(4_000), "display": true}),
    );
    b.assistant(&[text_block("ok")], None);
    b
}

/// From pi's compaction tests: three turns, a compaction keeping from the second
/// user message, a fourth turn; texts repeated `repeat` times.
pub fn previous_compaction(repeat: usize) -> SessionBuilder {
    let mut b = SessionBuilder::new();
    let r = |s: &str| s.repeat(repeat);
    b.user(&r("user msg 1 "));
    b.assistant(&[text_block(&r("assistant 1 "))], None);
    let kept = b.user(&r("user msg 2 - kept by compaction1 "));
    b.assistant(&[text_block(&r("assistant 2 "))], None);
    b.user(&r("user msg 3 - kept by compaction1 "));
    b.assistant(&[text_block(&r("assistant 3 "))], Some((5_000, 1_000)));
    b.entry(
        "compaction",
        json!({"summary": "First summary", "firstKeptEntryId": kept, "tokensBefore": 6_000,
            "details": {"readFiles": [], "modifiedFiles": []}, "fromExtension": false}),
    );
    b.user(&r("user msg 4 "));
    b.assistant(&[text_block(&r("assistant 4 "))], Some((8_000, 2_000)));
    b
}

/// One assistant `read` call of `path` and its result of `tokens` × 4
/// characters, with extra result fields.
pub fn read_result(
    b: &mut SessionBuilder,
    call: &str,
    tool: &str,
    path: &str,
    tokens: usize,
    extra: &serde_json::Value,
) -> String {
    b.assistant(&[tool_call(call, tool, &json!({ "path": path }))], None);
    b.tool_result_with(call, tool, &filler(call, tokens * 4), extra)
}
