//! `musepi handoff FILE -o NEW` as a process, against a loopback
//! chat-completions server: the request (history at the leaf plus the
//! handoff prompt), the new session (header, parent, the handoff message),
//! the `session_before_compact` hooks with reason `handoff`, and that a
//! failure, a cancel or an existing NEW writes nothing.

#![allow(clippy::unwrap_used)]

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::{Value, json};
use support::{
    Model, Reply, assert_escaped, assert_has, assert_stderr_has, chat_text, code,
    hook_settings as settings, json_file, json_lines, json_out, musepi_with_env, p, recording_hook,
    script, stderr, strings, write_file,
};

const DOCUMENT: &str = "## Goal\nFix the parser.\n\n## Progress\n### Done\n- [x] Read src/parse.rs\n\n## Next Steps\n1. Edit src/lib.rs";

fn musepi(dir: &Path, args: &[&str]) -> Output {
    musepi_with_env(dir, dir, args, None, &[("NO_COLOR", "1")])
}

/// A session with a user question, a read and its result, and an answer.
fn session(dir: &Path) -> PathBuf {
    let path = dir.join("old.jsonl");
    let lines = [
        json!({"type": "session", "version": 3, "id": "old-session", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/work/repo"}),
        json!({"type": "message", "id": "00000001", "parentId": null, "timestamp": "2025-01-01T00:00:01.000Z",
               "message": {"role": "user", "content": "Fix the parser: it drops the last line.", "timestamp": 1}}),
        json!({"type": "message", "id": "00000002", "parentId": "00000001", "timestamp": "2025-01-01T00:00:02.000Z",
               "message": {"role": "assistant", "content": [{"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "src/parse.rs"}}],
                           "provider": "p", "model": "m", "stopReason": "toolUse", "timestamp": 2}}),
        json!({"type": "message", "id": "00000003", "parentId": "00000002", "timestamp": "2025-01-01T00:00:03.000Z",
               "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read",
                           "content": [{"type": "text", "text": "fn lines() {}"}], "isError": false, "timestamp": 3}}),
        json!({"type": "message", "id": "00000004", "parentId": "00000003", "timestamp": "2025-01-01T00:00:04.000Z",
               "message": {"role": "assistant", "content": [{"type": "text", "text": "The caller slices one line short."}],
                           "provider": "p", "model": "m", "stopReason": "stop", "timestamp": 4}}),
    ];
    let text: String = lines.iter().map(|l| l.to_string() + "\n").collect();
    std::fs::write(&path, text).unwrap();
    path
}

/// A model answering `status` with `text`: the document, or an error.
fn model(status: u16, text: &str) -> Model {
    Model::start(if status == 200 {
        chat_text(text)
    } else {
        Reply::json(
            status,
            &json!({"error": {"message": text, "type": "invalid_request_error"}}),
        )
    })
}

/// `musepi handoff` of [`session`], in a temporary folder of its own, by a
/// model that answers `status` with `text`.
fn hand_off_to(status: u16, text: &str) -> (tempfile::TempDir, Output) {
    let dir = tempfile::tempdir().unwrap();
    session(dir.path());
    let o = handoff(dir.path(), &model(status, text), &[]);
    (dir, o)
}

/// `musepi handoff OLD -o NEW --provider openai-compatible --base-url URL --model m …`.
fn handoff(dir: &Path, model: &Model, extra: &[&str]) -> Output {
    let old = dir.join("old.jsonl");
    let new = dir.join("new.jsonl");
    let mut args = vec![
        "handoff",
        p(&old),
        "-o",
        p(&new),
        "--provider",
        "openai-compatible",
        "--base-url",
        &model.url,
        "--model",
        "test-model",
        "--now",
        "2025-05-01T10:00:00.000Z",
        "--deterministic-ids",
    ];
    args.extend(extra);
    musepi(dir, &args)
}

#[test]
fn a_handoff_writes_a_new_session_that_starts_from_the_document() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path());
    let before = std::fs::read(&old).unwrap();
    let model = model(200, DOCUMENT);
    let o = handoff(
        dir.path(),
        &model,
        &["--instructions", "the parser only", "--json"],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    let new = dir.path().join("new.jsonl");
    assert_eq!(doc["file"], p(&new));
    // A UUIDv7 of --now, with --deterministic-ids the sequence number 1.
    assert_eq!(doc["sessionId"], "01968b49-ed00-7000-8000-000000000001");
    assert_eq!(doc["document"], DOCUMENT);
    assert_eq!(doc["fromExtension"], false);
    assert_eq!(
        std::fs::read(&old).unwrap(),
        before,
        "the old file is never written"
    );

    let written = json_lines(&new);
    assert_eq!(written.len(), 2);
    assert_eq!(
        written[0],
        json!({"type": "session", "version": 3, "id": "01968b49-ed00-7000-8000-000000000001",
               "timestamp": "2025-05-01T10:00:00.000Z", "cwd": "/work/repo", "parentSession": p(&old)})
    );
    let m = &written[1];
    assert_eq!(m["type"], "custom_message");
    assert_eq!(m["customType"], "handoff");
    assert_eq!(m["display"], true);
    assert_eq!(m["attribution"], "agent");
    assert_eq!(m["parentId"], Value::Null);
    assert_eq!(m["id"], "00000001");
    assert_eq!(m["content"][0]["text"], DOCUMENT);

    // The request: the history at the leaf, then the handoff prompt with the focus.
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    let messages = requests[0]["messages"].as_array().unwrap();
    assert_eq!(
        strings(&requests[0]["messages"], "role"),
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert!(messages[0]["content"].as_str().unwrap().contains("summar"));
    // The e2e server's own test (xtask/e2e/history.test.mjs) reads this
    // very body: the two agree on what an OpenAI-compatible server gets.
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../xtask/e2e/handoff-request.json");
    let expected: Value = json_file(&fixture);
    assert!(
        requests[0] == expected,
        "xtask/e2e/handoff-request.json is no longer the body musepi sends; write this there:\n{}",
        serde_json::to_string_pretty(&requests[0]).unwrap()
    );
    let last = messages.last().unwrap()["content"].to_string();
    assert_has(&last, "## Goal");
    assert_has(&last, "Additional focus: the parser only");

    // The new session is what `context` sees: the document alone.
    let o = musepi(dir.path(), &["context", p(&new), "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(json_out(&o)["messages"].as_array().unwrap().len(), 1);
}

/// The request asks for the session's thinking level, as every summary
/// request does; the session above has none, so its request asks for none.
#[test]
fn the_request_carries_the_thinking_level() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path());
    let level = json!({"type": "thinking_level_change", "id": "00000005", "parentId": "00000004",
                       "timestamp": "2025-01-01T00:00:05.000Z", "thinkingLevel": "xhigh"});
    let mut text = std::fs::read_to_string(&old).unwrap();
    text.push_str(&level.to_string());
    text.push('\n');
    std::fs::write(&old, text).unwrap();
    let model = model(200, DOCUMENT);
    let o = handoff(dir.path(), &model, &[]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let requests = model.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0]["reasoning_effort"], "xhigh");
}

/// Without `--deterministic-ids` the new session's id is a random version-7 UUID
/// whose time is the clock's (`--now`): version 7, variant 10, and it
/// sorts after the id of a session made a millisecond earlier.
#[test]
fn the_new_session_id_is_a_uuid_v7_of_the_clock() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path());
    let model = model(200, DOCUMENT);
    let mut ids = Vec::new();
    for (name, now) in [
        ("a.jsonl", "2025-05-01T09:59:59.999Z"),
        ("b.jsonl", "2025-05-01T10:00:00.000Z"),
    ] {
        let new = dir.path().join(name);
        let o = musepi(
            dir.path(),
            &[
                "handoff",
                p(&old),
                "-o",
                p(&new),
                "--provider",
                "openai-compatible",
                "--base-url",
                &model.url,
                "--model",
                "test-model",
                "--now",
                now,
                "--json",
            ],
        );
        assert_eq!(code(&o), 0, "{}", stderr(&o));
        let id = json_out(&o)["sessionId"].as_str().unwrap().to_owned();
        assert_eq!(json_lines(&new)[0]["id"], id.as_str());
        assert_eq!(&id[14..15], "7", "{id}");
        assert!("89ab".contains(&id[19..20]), "{id}");
        ids.push(id);
    }
    assert!(ids[0].starts_with("01968b49-ecff-7"), "{}", ids[0]);
    assert!(ids[1].starts_with("01968b49-ed00-7"), "{}", ids[1]);
    assert_ne!(&ids[1][15..], "000-8000-000000000001", "random bits");
    assert!(ids[0] < ids[1]);
}

#[test]
fn text_output_names_the_new_file_and_shows_the_document() {
    let (dir, o) = hand_off_to(200, DOCUMENT);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        text.contains(&format!(
            "new session  {}",
            p(&dir.path().join("new.jsonl"))
        )),
        "{text}"
    );
    assert_has(&text, "  ## Goal\n  Fix the parser.\n");
}

/// The document comes from a model: its line breaks are kept, its other
/// control characters escaped, in the text output only.
#[test]
fn text_output_escapes_the_documents_control_characters() {
    let (_dir, o) = hand_off_to(200, "## Goal\nFix \x1b[2Jthe parser.\r\nNext:\tgo\x07");
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout);
    assert_escaped(
        &text,
        &["  ## Goal\n  Fix \\u001b[2Jthe parser.\n  Next:\\tgo\\u0007\n"],
    );
}

#[test]
fn an_existing_new_file_is_replaced_only_with_force() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path());
    std::fs::set_permissions(&old, std::fs::Permissions::from_mode(0o640)).unwrap();
    let new = write_file(dir.path(), "new.jsonl", "precious\n");
    let model = model(200, DOCUMENT);
    let o = handoff(dir.path(), &model, &[]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_stderr_has(&o, "already exists");
    assert_stderr_has(&o, "--force");
    assert_eq!(std::fs::read_to_string(&new).unwrap(), "precious\n");
    assert!(model.requests().is_empty(), "refused before any request");
    let o = handoff(dir.path(), &model, &["--force"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        std::fs::read_to_string(&new)
            .unwrap()
            .contains("\"type\":\"session\"")
    );
    let mode = std::fs::metadata(&new).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640, "the new session gets the mode of the old one");
}

#[test]
fn a_provider_failure_writes_nothing() {
    let (dir, o) = hand_off_to(400, "context too long for this model");
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, "handoff generation failed: ");
    assert!(!dir.path().join("new.jsonl").exists());
}

#[test]
fn before_compact_hooks_see_reason_handoff_and_can_cancel() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path());
    let seen = dir.path().join("event.json");
    let veto = recording_hook(
        dir.path(),
        "veto.sh",
        &seen,
        "echo 'no handoff during a release' >&2\nexit 2",
    );
    let s = settings(
        dir.path(),
        &json!({"session_before_compact": [{"command": [p(&veto)]}]}),
    );
    let model = model(200, DOCUMENT);
    let o = handoff(dir.path(), &model, &["--settings", p(&s)]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, "no handoff during a release");
    assert_stderr_has(
        &o,
        &format!(
            "handoff cancelled by hook {}: no handoff during a release",
            p(&veto)
        ),
    );
    assert!(!dir.path().join("new.jsonl").exists());
    assert!(model.requests().is_empty());
    let event: Value = json_file(&seen);
    assert_eq!(event["type"], "session_before_compact");
    assert_eq!(event["reason"], "handoff");
    assert_eq!(event["sessionFile"], p(&old));
    assert_eq!(event["preparation"]["firstKeptEntryId"], "");
    assert_eq!(event["preparation"]["keptMessageCount"], 0);
    assert_eq!(
        event["preparation"]["messagesToSummarize"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
    assert_eq!(event["preparation"]["readFiles"], json!(["src/parse.rs"]));
    assert_eq!(
        event["branchEntryIds"],
        json!(["00000001", "00000002", "00000003", "00000004"])
    );
}

#[test]
fn a_hook_can_supply_the_document_and_no_model_is_needed() {
    let dir = tempfile::tempdir().unwrap();
    let old = session(dir.path());
    let supply = script(
        dir.path(),
        "supply.sh",
        "cat > /dev/null\nprintf '%s\\n' '{\"compaction\": {\"summary\": \"Goal: done by a hook.\\nNext: continue.\"}}'",
    );
    let s = settings(
        dir.path(),
        &json!({"session_before_compact": [{"command": [p(&supply)]}]}),
    );
    let new = dir.path().join("new.jsonl");
    // No provider flags at all.
    let o = musepi(
        dir.path(),
        &[
            "handoff",
            p(&old),
            "-o",
            p(&new),
            "--settings",
            p(&s),
            "--json",
        ],
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let doc = json_out(&o);
    assert_eq!(doc["fromExtension"], true);
    assert_eq!(doc["document"], "Goal: done by a hook.\nNext: continue.");
    assert_eq!(
        json_lines(&new)[1]["content"][0]["text"],
        "Goal: done by a hook.\nNext: continue."
    );
    // Without the hook, no provider is a clear error and nothing is written.
    std::fs::remove_file(&new).unwrap();
    let o = musepi(dir.path(), &["handoff", p(&old), "-o", p(&new)]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_stderr_has(&o, "no provider selected");
    assert!(!new.exists());
}

#[test]
fn an_empty_context_has_nothing_to_hand_off() {
    let dir = tempfile::tempdir().unwrap();
    let header = json!({"type": "session", "version": 3, "id": "empty", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/"});
    write_file(dir.path(), "old.jsonl", format!("{header}\n"));
    let model = model(200, DOCUMENT);
    let o = handoff(dir.path(), &model, &[]);
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert_stderr_has(&o, "nothing to hand off");
    assert!(!dir.path().join("new.jsonl").exists());
}
