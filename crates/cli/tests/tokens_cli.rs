//! One truth about tokens, end to end: `musepi plan` predicts what
//! `musepi compact` does (first kept entry, kept messages, tokens before,
//! pruning), `musepi prune` shows the same prune plan, and every command
//! reports the same context's tokens for the same context (`compact`
//! after, `context` in each view and in JSON, the archive's own text).

#![allow(clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::{Value, json};

fn musepi(home: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_musepi"))
        .args(args)
        .current_dir(home)
        .env("HOME", home)
        .env_remove("OPENAI_API_KEY")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("MUSEPI_API_KEY")
        .output()
        .unwrap()
}

fn ok(o: &Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).unwrap()
}

fn json_of(o: &Output) -> Value {
    serde_json::from_str(&ok(o)).unwrap()
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A session being generated, entry by entry, ids `00000001`, …
struct Gen {
    lines: Vec<Value>,
    n: u32,
    parent: Option<String>,
    /// The chars/4 estimate of the messages so far.
    estimate: usize,
}

impl Gen {
    fn push(&mut self, mut message: Value, chars: usize) {
        self.n += 1;
        let n = self.n;
        let id = format!("{n:08x}");
        self.estimate += chars.div_ceil(4);
        message["timestamp"] = json!(1_735_689_600_000_u64 + u64::from(n) * 1000);
        self.lines.push(json!({
            "type": "message", "id": id, "parentId": self.parent,
            "timestamp": format!("2025-01-01T{:02}:{:02}:{:02}.000Z", n / 3600, (n / 60) % 60, n % 60),
            "message": message,
        }));
        self.parent = Some(id);
    }
}

/// A generated long session of `turns` tool-using turns: each turn reads
/// a file, every third one the file its previous turn read (so that read
/// is superseded), with results of
/// `result_chars` characters, and each assistant reports a provider usage
/// `usage_ratio` times the estimate so far (a provider that counts more
/// than the chars/4 estimate makes the kept window adapt).
fn generated(
    dir: &Path,
    name: &str,
    turns: usize,
    result_chars: usize,
    usage_ratio: f64,
) -> PathBuf {
    let mut g = Gen {
        lines: vec![
            json!({"type": "session", "version": 3, "id": format!("gen-{name}"),
                           "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/repo"}),
        ],
        n: 0,
        parent: None,
        estimate: 0,
    };
    let assistant = |content: Value, stop: &str| {
        json!({"role": "assistant", "content": content, "stopReason": stop,
               "provider": "anthropic", "model": "claude-sonnet-4-5", "api": "anthropic-messages"})
    };
    for t in 0..turns {
        let ask =
            format!("Turn {t}: look at the parser again and tell me what changed in step {t}.");
        g.push(json!({"role": "user", "content": ask}), ask.len());
        let file = format!("src/module_{}.rs", if t % 3 == 2 { t - 1 } else { t });
        let call_id = format!("call-{t}");
        let args = json!({"path": file});
        let reading = format!("Reading {file} for step {t}.");
        g.push(
            assistant(
                json!([{"type": "text", "text": reading},
                       {"type": "toolCall", "id": call_id, "name": "read", "arguments": args}]),
                "toolUse",
            ),
            reading.len() + 4 + args.to_string().len(),
        );
        let body: String = (0..result_chars)
            .map(|i| {
                if i % 61 == 60 {
                    '\n'
                } else {
                    char::from(b'a' + ((i * 7 + t) % 26) as u8)
                }
            })
            .collect();
        g.push(
            json!({"role": "toolResult", "toolCallId": call_id, "toolName": "read",
                   "content": [{"type": "text", "text": body}], "isError": false}),
            body.len(),
        );
        let answer = format!("Step {t} changed the way {file} splits tokens.");
        let usage = (g.estimate as f64 * usage_ratio).round();
        let mut m = assistant(json!([{"type": "text", "text": answer}]), "stop");
        m["usage"] = json!({"input": usage, "output": 50, "cacheRead": 0, "cacheWrite": 0,
                            "totalTokens": usage + 50.0});
        g.push(m, answer.len());
    }
    let path = dir.join(format!("{name}.jsonl"));
    let mut text = String::new();
    for l in &g.lines {
        text.push_str(&l.to_string());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// The example session of the repository.
fn example(dir: &Path) -> PathBuf {
    let to = dir.join("example.jsonl");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/sessions/todo-refactor.jsonl"),
        &to,
    )
    .unwrap();
    to
}

/// A real pi session next to the repository, copied, or `None` with a
/// notice (they are never part of the repository).
fn real(dir: &Path, name: &str) -> Option<PathBuf> {
    let from = musepi_test_support::pi_fixture("the real-session token tests", name)?;
    let to = dir.join(name);
    std::fs::copy(&from, &to).unwrap();
    Some(to)
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_str().unwrap().to_owned())
        .collect()
}

/// `(entryId, kind, saved)` of each pruned result.
fn pruned(v: &Value) -> Vec<(String, String, u64)> {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["entryId"].as_str().unwrap().to_owned(),
                r["kind"].as_str().unwrap().to_owned(),
                r["saved"].as_u64().unwrap(),
            )
        })
        .collect()
}

/// Plans, prunes (dry run) and compacts `file` (plan and compact with the
/// budget flags `extra`), and
/// checks that the plan predicted the compaction. Returns the plan and
/// the compaction's JSON and the compacted file.
fn plan_predicts_compact(home: &Path, file: &Path, extra: &[&str]) -> (Value, Value, PathBuf) {
    let common = [
        "--json",
        "--deterministic-ids",
        "--now",
        "2026-01-01T00:00:00.000Z",
    ];
    let with = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(extra)
            .chain(&common)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let run = |args: Vec<String>| {
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        json_of(&musepi(home, &refs))
    };
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let plan = run(with(&["plan", p(file)]));
    assert_eq!(plan["nothingToCompact"], false, "{name}: {plan}");
    let plain = |args: &[&str]| -> Vec<String> {
        args.iter()
            .chain(&common)
            .map(|s| (*s).to_owned())
            .collect()
    };
    let out = home.join(format!("compacted-{name}"));
    // The same session may be compacted again with other flags: replace.
    let compact = run(with(&["compact", p(file), "-o", p(&out), "--force"]));
    assert_eq!(compact["compacted"], true, "{name}");
    assert_eq!(
        compact["firstKeptEntryId"], plan["firstKeptEntryId"],
        "{name}: first kept entry"
    );
    assert_eq!(
        compact["tokensBefore"], plan["tokensBefore"],
        "{name}: tokens before"
    );
    assert_eq!(
        compact["contextTokensBefore"], plan["contextTokensBefore"],
        "{name}: the context's tokens before"
    );
    // tokensBefore is pi's estimate of the context at the leaf (the last
    // usage plus the estimate of what follows it), not the context's tokens.
    let (session, _) =
        musepi_session_model::load_file(file, &mut musepi_session_model::SequentialIds::new())
            .unwrap();
    let leaf = match plan["leafId"].as_str() {
        Some(id) => session.index_of(id),
        None => None,
    };
    let reference = musepi_context_builder::estimate_context_at(&session, leaf);
    assert_eq!(
        plan["tokensBefore"].as_u64().unwrap(),
        reference.tokens,
        "{name}: pi's estimate"
    );
    assert_eq!(
        pruned(&compact["prune"]),
        pruned(&plan["prune"]),
        "{name}: what compact pruned"
    );
    if extra.contains(&"--no-prune") {
        assert!(
            pruned(&plan["prune"]).is_empty(),
            "{name}: --no-prune prunes nothing"
        );
    } else if !extra.contains(&"--leaf") {
        // `prune` works at the file's leaf, with the default pruning.
        let prune = run(plain(&["prune", p(file), "--dry-run"]));
        assert_eq!(
            pruned(&prune),
            pruned(&plan["prune"]),
            "{name}: what prune would prune"
        );
        assert_eq!(prune["tokensSaved"], plan["prune"]["tokensSaved"], "{name}");
    }
    // The kept messages are the context after the compaction, behind its summary.
    let after = run(plain(&["context", p(&out)]));
    let kept: Vec<String> = after["messages"].as_array().unwrap()[1..]
        .iter()
        .map(|m| m["entryId"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(kept, ids(&plan["keptMessages"]), "{name}: kept messages");
    // The compaction's tokens before are what the plan and the entry say,
    // its tokens after what `context` counts.
    assert_eq!(
        after["tokens"], compact["tokensAfter"],
        "{name}: tokens after"
    );
    let last: Value = serde_json::from_str(
        std::fs::read_to_string(&out)
            .unwrap()
            .lines()
            .last()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(last["type"], "compaction");
    assert_eq!(
        last["parentId"], plan["leafId"],
        "{name}: the entry goes under the leaf planned"
    );
    assert_eq!(
        last["tokensBefore"], plan["tokensBefore"],
        "{name}: the entry"
    );
    (plan, compact, out)
}

#[test]
fn plan_predicts_compact_on_generated_and_example_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    // Large enough for pruning to save more than its minimum, with a
    // provider that counts half again as much as the estimate.
    let large = generated(home, "large", 150, 3_000, 1.5);
    let (plan, _, _) = plan_predicts_compact(home, &large, &[]);
    assert!(
        !plan["prune"]["results"].as_array().unwrap().is_empty(),
        "the large session prunes: {}",
        plan["prune"]
    );
    // The provider counts 1.5 times the estimate and adds nothing else:
    // the kept window is about 20,000 / 1.5 estimated tokens.
    let adapted = plan["keepRecentTokens"].as_u64().unwrap();
    assert!(
        (12_500..14_300).contains(&adapted),
        "the kept window adapted by the measured ratio: {adapted}"
    );
    // Told that 5,000 of each request's tokens are not messages, the ratio
    // leaves them out, so the estimate runs less low and less is cut away;
    // compact honours the flag as plan does.
    let (told, _, _) = plan_predicts_compact(home, &large, &["--overhead-tokens", "5000"]);
    let told = told["keepRecentTokens"].as_u64().unwrap();
    assert!(
        told > adapted && told < 20_000,
        "with the overhead known: {told}, measured: {adapted}"
    );
    // Every flag that changes the compaction means the same to both.
    let (plan, _, _) = plan_predicts_compact(home, &large, &["--no-prune"]);
    assert_eq!(plan["prune"]["tokensSaved"], 0, "{}", plan["prune"]);
    let branch = plan["keptMessages"][0].as_str().unwrap().to_owned();
    let (plan, compact, out) =
        plan_predicts_compact(home, &large, &["--leaf", &branch, "--keep-recent", "2000"]);
    assert_eq!(plan["leafId"], branch.as_str());
    assert_eq!(compact["compacted"], true);
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        text.lines().count(),
        std::fs::read_to_string(&large).unwrap().lines().count() + 1,
        "the entries after --leaf stay, on a branch of their own"
    );
    let small = generated(home, "small", 30, 800, 1.0);
    plan_predicts_compact(home, &small, &["--keep-recent", "2000"]);
    let example = example(home);
    plan_predicts_compact(home, &example, &["--keep-recent", "4000"]);
    plan_predicts_compact(home, &example, &[]);
}

#[test]
fn plan_predicts_compact_on_the_real_sessions() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["large-session.jsonl", "before-compaction.jsonl"] {
        if let Some(file) = real(dir.path(), name) {
            plan_predicts_compact(dir.path(), &file, &[]);
        }
    }
}

#[test]
fn every_view_of_the_context_reports_the_same_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let large = generated(home, "large", 150, 3_000, 1.5);
    // A vision model gets a PNG archive: its frames and text edges count.
    for (model, name) in [("claude-sonnet-4-5", "png"), ("text-only", "text")] {
        let out = home.join(format!("{name}.jsonl"));
        let compact = json_of(&musepi(
            home,
            &[
                "compact",
                p(&large),
                "-o",
                p(&out),
                "--model",
                model,
                "--json",
            ],
        ));
        let after = compact["tokensAfter"].as_u64().unwrap();
        let context = json_of(&musepi(home, &["context", p(&out), "--json"]));
        assert_eq!(context["tokens"], after, "{name}");
        assert_eq!(
            context["contextEstimate"]["tokens"], after,
            "{name}: no stale usage"
        );
        let llm = json_of(&musepi(home, &["context", p(&out), "--llm", "--json"]));
        assert_eq!(llm["tokens"], after, "{name}");
        let rows: u64 = llm["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["tokens"].as_u64().unwrap())
            .sum();
        assert_eq!(rows, after, "{name}: the provider messages add up");
        for view in [None, Some("--llm"), Some("--transcript")] {
            let mut args = vec!["context", p(&out)];
            args.extend(view);
            let text = ok(&musepi(home, &args));
            let footer = text.lines().last().unwrap();
            assert!(
                footer.contains(&format!(
                    ", {} tokens in context (heuristic)",
                    musepi_session_model::json::thousands(after)
                )),
                "{name} {view:?}: {footer}"
            );
        }
        // The archive's own text names the tokens before, as compact does.
        let before = compact["contextTokensBefore"].as_u64().unwrap();
        let summary = compact["summary"].as_str().unwrap();
        if name == "text" {
            let grouped = musepi_session_model::json::thousands(before);
            assert!(
                summary.contains(&format!("~{grouped} tokens before compaction")),
                "{summary}"
            );
        }
        if name == "png" {
            assert!(
                llm["messages"][0]["tokens"].as_u64().unwrap() > 1_200,
                "the frames count: {}",
                llm["messages"][0]
            );
        }
    }
}

#[test]
fn compact_reserve_sizes_the_snapcompact_archive_like_the_setting() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let large = generated(home, "large", 150, 3_000, 1.0);
    let archive = |args: &[&str], out: &str| -> usize {
        let out = home.join(out);
        let mut all = vec!["compact", p(&large), "-o", p(&out), "--json"];
        all.extend(args);
        let compact = json_of(&musepi(home, &all));
        compact["details"]["snapcompact"]["text"]
            .as_str()
            .unwrap()
            .encode_utf16()
            .count()
    };
    let default = archive(&[], "default.jsonl");
    let flag = archive(&["--reserve", "4000"], "flag.jsonl");
    let settings = home.join("settings.json");
    std::fs::write(&settings, r#"{"compaction": {"reserveTokens": 4000}}"#).unwrap();
    let setting = archive(&["--settings", p(&settings)], "setting.jsonl");
    assert_eq!(
        flag, setting,
        "--reserve does what compaction.reserveTokens does"
    );
    assert!(
        flag < default,
        "a smaller reserve, a smaller archive: {flag} < {default}"
    );
}

/// `plan` shows the compaction that would run: under snapcompact (the
/// default) no request and the archive's own size after it; under `llm`
/// the requests, without the short summary when it is off.
#[test]
fn plan_shows_the_strategy_that_would_run() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let example = example(home);
    let plan = json_of(&musepi(
        home,
        &["plan", p(&example), "--json", "--show-prompts"],
    ));
    assert_eq!(plan["strategy"], "snapcompact");
    assert_eq!(plan["requests"], json!([]));
    let after = plan["estimatedTokensAfter"].as_u64().unwrap();
    assert!(
        after < plan["contextTokensBefore"].as_u64().unwrap(),
        "the archive leaves less than there was: {after} after, {} before",
        plan["contextTokensBefore"]
    );
    // The compaction itself leaves about that.
    let out = home.join("compacted.jsonl");
    let compact = json_of(&musepi(
        home,
        &["compact", p(&example), "-o", p(&out), "--json"],
    ));
    let made = compact["tokensAfter"].as_u64().unwrap();
    assert!(
        made.abs_diff(after) * 20 <= made,
        "planned {after}, made {made}"
    );
    let text = ok(&musepi(home, &["plan", p(&example)]));
    assert!(
        text.contains("snapcompact (the archive: no model)"),
        "{text}"
    );
    assert!(text.contains("none (the archive needs no model)"), "{text}");

    let llm = json_of(&musepi(
        home,
        &[
            "plan",
            p(&example),
            "--json",
            "--show-prompts",
            "--strategy",
            "llm",
        ],
    ));
    let purposes = |doc: &Value| -> Vec<String> {
        doc["requests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["purpose"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(purposes(&llm), ["history", "turnPrefix", "shortSummary"]);
    let fewer = json_of(&musepi(
        home,
        &[
            "plan",
            p(&example),
            "--json",
            "--show-prompts",
            "--strategy",
            "llm",
            "--no-short-summary",
        ],
    ));
    assert_eq!(purposes(&fewer), ["history", "turnPrefix"]);
}

#[test]
fn the_chart_says_before_and_after_as_compact_reported_them_after_a_pruning_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let large = generated(home, "large", 150, 3_000, 1.5);
    let out = home.join("compacted.jsonl");
    let compact = json_of(&musepi(
        home,
        &["compact", p(&large), "-o", p(&out), "--json"],
    ));
    assert!(
        !compact["prune"]["results"].as_array().unwrap().is_empty(),
        "the compaction pruned first: {}",
        compact["prune"]
    );
    let chart = json_of(&musepi(home, &["context", p(&out), "--chart", "--json"]));
    let drop = &chart["compactions"][0];
    assert_eq!(
        drop["tokensBefore"], compact["contextTokensBefore"],
        "before: the context before the compaction pruned it"
    );
    assert_eq!(drop["tokensAfter"], compact["tokensAfter"], "after");
    // The point before the compaction is the same figure, so the line
    // drops from where the label says.
    let points = chart["points"].as_array().unwrap();
    let at = drop["position"].as_u64().unwrap();
    let before = points
        .iter()
        .find(|pt| pt["position"].as_u64() == Some(at - 1))
        .unwrap();
    assert_eq!(before["tokens"], compact["contextTokensBefore"]);
    // Without the prune store the pruned results count as they stand: a
    // smaller figure, and no failure.
    std::fs::remove_dir_all(musepi_session_model::store_dir(&out)).unwrap();
    let bare = json_of(&musepi(home, &["context", p(&out), "--chart", "--json"]));
    assert!(
        bare["compactions"][0]["tokensBefore"].as_u64().unwrap()
            < compact["contextTokensBefore"].as_u64().unwrap(),
        "{}",
        bare["compactions"][0]
    );
}
