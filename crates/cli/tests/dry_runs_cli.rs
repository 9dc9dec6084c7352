//! Dry runs answer "what would happen and what would I save": `compact
//! --dry-run` gives the tokens after, `branch --dry-run` describes the
//! move (and shows the digest the run would write) instead of printing a
//! request of thousands of lines, and `--show-prompts` prints the prompts
//! when they are wanted.

#![allow(clippy::unwrap_used)]

mod support;

use std::path::Path;
use std::process::Output;

use serde_json::Value;
use support::{assert_has, code, example_session, json_out, musepi_with_env, p, stderr, stdout};

fn run(dir: &Path, args: &[&str]) -> Output {
    musepi_with_env(dir, dir, args, None, &[("MUSEPI_API_KEY", "k")])
}

/// An LLM provider on a port nothing listens on: a dry run sends nothing.
const LLM: [&str; 8] = [
    "--strategy",
    "llm",
    "--provider",
    "openai-compatible",
    "--base-url",
    "http://127.0.0.1:9/v1",
    "--model",
    "m",
];

#[test]
fn compact_dry_run_reports_the_tokens_after_and_prints_prompts_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let o = run(dir.path(), &["compact", p(&file), "--dry-run"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_has(
        &stdout(&o),
        "tokens: 31,315 → ~17,967 in context (kept messages + the archive; tokensBefore 45,210)\n",
    );
    // The figure is plan's estimate for the same strategy.
    let doc = json_out(&run(
        dir.path(),
        &["compact", p(&file), "--dry-run", "--json"],
    ));
    let plan = json_out(&run(dir.path(), &["plan", p(&file), "--json"]));
    assert_eq!(doc["estimatedTokensAfter"], plan["estimatedTokensAfter"]);
    assert_eq!(doc["estimatedTokensAfter"], 17_967);
    // An LLM summary: the requests are named, not printed…
    let args = [&["compact", p(&file), "--dry-run"][..], &LLM].concat();
    let o = run(dir.path(), &args);
    let text = stdout(&o);
    assert_has(
        &text,
        "tokens: 31,315 → ~26,646 in context (kept messages + the summary's output limit",
    );
    assert_has(
        &text,
        "requests: history, turnPrefix, shortSummary (--show-prompts prints them)\n",
    );
    assert!(text.lines().count() < 10, "{text}");
    // …unless --show-prompts.
    let o = run(dir.path(), &[&args[..], &["--show-prompts"]].concat());
    let text = stdout(&o);
    assert_has(&text, "── history request (max ");
    assert!(text.lines().count() > 1000, "{}", text.lines().count());
    // --show-prompts belongs to a dry run.
    let o = run(dir.path(), &["compact", p(&file), "--show-prompts"]);
    assert_eq!(code(&o), 2);
}

#[test]
fn branch_dry_run_without_summarize_describes_the_move_without_a_request() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let args = [
        &["branch", p(&file), "--to", "00000010", "--dry-run"][..],
        &LLM,
    ]
    .concat();
    let o = run(dir.path(), &args);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert_eq!(
        text,
        "from             00000074\n\
         to               00000010\n\
         common ancestor  00000010\n\
         abandoned        100 entries\n\
         summary          none (--summarize leaves one)\n\
         writes           a navigation marker under the target, the new leaf (nothing when it is the leaf already)\n\
         dry run: nothing written\n"
    );
    let doc = json_out(&run(dir.path(), &[&args[..], &["--json"]].concat()));
    assert_eq!(doc["summarize"], false);
    assert_eq!(doc["request"], Value::Null);
    assert_eq!(doc["entries"].as_array().unwrap().len(), 100);
    // With --summarize and a provider: the request's size, and the request
    // itself with --show-prompts.
    let summarize = [&args[..], &["--summarize"]].concat();
    let text = stdout(&run(dir.path(), &summarize));
    assert_has(&text, "summary          an LLM summary: 1 request of ");
    assert_has(&text, "(--show-prompts prints it)");
    assert!(!text.contains("── branch summary request"), "{text}");
    let text = stdout(&run(
        dir.path(),
        &[&summarize[..], &["--show-prompts"]].concat(),
    ));
    assert_has(&text, "── branch summary request (max 2,048 tokens) ──\n");
}

#[test]
fn branch_dry_run_with_summarize_and_no_provider_shows_the_digest_the_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let file = example_session(dir.path(), "s.jsonl");
    let args = ["branch", p(&file), "--to", "00000010", "--summarize"];
    let o = run(dir.path(), &[&args[..], &["--dry-run"]].concat());
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = stdout(&o);
    assert_has(
        &text,
        "summary          the snapcompact digest (no model), ",
    );
    assert_has(
        &text,
        "\n── the digest ──\n  Before coming back to this point",
    );
    assert!(!text.contains("request"), "{text}");
    // Said on stderr as the run says it.
    assert_has(&stderr(&o), "the branch summary is the snapcompact digest");
    let dry = json_out(&run(
        dir.path(),
        &[&args[..], &["--dry-run", "--json"]].concat(),
    ));
    assert_eq!(dry["strategy"], "snapcompact");
    assert_eq!(dry["request"], Value::Null);
    // The digest is the one the run writes.
    let out = dir.path().join("b.jsonl");
    let done = json_out(&run(
        dir.path(),
        &[&args[..], &["-o", p(&out), "--json"]].concat(),
    ));
    assert_eq!(done["strategy"], "snapcompact");
    assert_eq!(dry["digest"], done["summary"]);
    assert!(dry["digest"].as_str().unwrap().len() > 1000);
}
