//! The documents of `musepi serve` and of the command line as types:
//! every request line and the parameters of every method ([`serve`]), the
//! response and event lines, the runtime's answers they carry
//! ([`runtime`]: decisions, finished compactions, navigations, the
//! provider messages of a context), and the `--json` documents of the
//! commands that show the context, plan and run a compaction, and read
//! back what it took out ([`cli`]: `context`, `plan`, `compact`, `prune`,
//! `recall`). The events hook processes are sent and the answers they
//! give are `musepi-hooks`' own types; their schemas are listed here too.
//!
//! A document is built by filling one of these types and serializing it,
//! never by writing a JSON literal, so its shape lives in one place, and
//! its JSON Schema is generated from the same type ([`schemas`]). The
//! schemas are kept in the repository's `docs/schemas/` for clients in any
//! language; a test of this crate fails when one differs from what its
//! type generates, and `MUSEPI_UPDATE_SCHEMAS=1 cargo test -p
//! musepi-protocol` writes them again.
//!
//! Parameters are read with [`read`], whose error names the key a bad
//! value sits at; documents are written with [`value`].

pub mod cli;
pub mod context;
pub mod runtime;
pub mod serve;
pub mod session;
pub mod setup;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;

/// The schema of `T`, titled `title`.
fn schema<T: JsonSchema>(title: &str) -> Schema {
    let mut schema = SchemaGenerator::default().into_root_schema_for::<T>();
    schema.insert("title".into(), title.into());
    schema
}

/// Every document with its file name under `docs/schemas/` (without
/// `.json`), in the order
/// docs/protocol.md describes them.
pub fn schemas() -> Vec<(&'static str, Schema)> {
    use cli::{
        BranchDoc, BranchDryRunDoc, CompactedDoc, DryRunDoc, ErrorLine, HandoffDoc,
        NotCompactedDoc, PlanAnswer, PruneCommandDoc,
    };
    use context::{ContextDoc, EntryPage, SearchPage};
    use musepi_runtime::hooks::events::{
        BeforeCompactEvent, BeforeCompactResult, BeforeTreeEvent, BeforeTreeResult, CompactEvent,
        CompactingEvent, CompactingResult, TreeEvent,
    };
    use runtime::{AfterAssistantDoc, DecisionDoc, EventLine, TreeDoc};
    use serve::{
        AbortDoc, AfterAssistantParams, AppendDoc, AppendParams, BeforeRequestParams, CloseDoc,
        CompactParams, ContextParams, IdleParams, NavigateParams, OpenParams, PlanParams,
        RecallParams, RequestLine, ResponseLine, StatusDoc,
    };
    vec![
        (
            "serve.request",
            schema::<RequestLine>("musepi serve: a request line"),
        ),
        (
            "serve.response",
            schema::<ResponseLine>("musepi serve: a response line"),
        ),
        (
            "serve.event",
            schema::<EventLine>("musepi serve: an event line"),
        ),
        (
            "serve.open.params",
            schema::<OpenParams>("musepi serve: open's params"),
        ),
        (
            "serve.status.result",
            schema::<StatusDoc>("musepi serve: the answer of open and status"),
        ),
        (
            "serve.close.result",
            schema::<CloseDoc>("musepi serve: close's answer"),
        ),
        (
            "serve.append.params",
            schema::<AppendParams>("musepi serve: append's params"),
        ),
        (
            "serve.append.result",
            schema::<AppendDoc>("musepi serve: append's answer"),
        ),
        (
            "serve.afterAssistant.params",
            schema::<AfterAssistantParams>("musepi serve: afterAssistant's params"),
        ),
        (
            "serve.afterAssistant.result",
            schema::<AfterAssistantDoc>("musepi serve: afterAssistant's answer"),
        ),
        (
            "serve.beforeRequest.params",
            schema::<BeforeRequestParams>("musepi serve: beforeRequest's params"),
        ),
        (
            "serve.idle.params",
            schema::<IdleParams>("musepi serve: idle's params"),
        ),
        (
            "serve.compact.params",
            schema::<CompactParams>("musepi serve: compact's params"),
        ),
        (
            "serve.decision",
            schema::<DecisionDoc>("musepi serve: the answer of beforeRequest, idle and compact"),
        ),
        (
            "serve.navigate.params",
            schema::<NavigateParams>("musepi serve: navigate's params"),
        ),
        (
            "serve.navigate.result",
            schema::<TreeDoc>("musepi serve: navigate's answer"),
        ),
        (
            "serve.context.params",
            schema::<ContextParams>("musepi serve: context's params"),
        ),
        (
            "serve.plan.params",
            schema::<PlanParams>("musepi serve: plan's params"),
        ),
        (
            "serve.recall.params",
            schema::<RecallParams>("musepi serve: recall's params"),
        ),
        (
            "serve.abort.result",
            schema::<AbortDoc>("musepi serve: abort's answer"),
        ),
        (
            "cli.plan",
            schema::<PlanAnswer>("musepi plan --json, and the answer of serve's plan"),
        ),
        (
            "cli.compact",
            schema::<CompactedDoc>("musepi compact --json: a compaction written"),
        ),
        (
            "cli.compact.nothing",
            schema::<NotCompactedDoc>("musepi compact --json: nothing to compact"),
        ),
        (
            "cli.compact.dry-run",
            schema::<DryRunDoc>("musepi compact --dry-run --json"),
        ),
        (
            "cli.prune",
            schema::<PruneCommandDoc>("musepi prune --json"),
        ),
        (
            "cli.context",
            schema::<ContextDoc>("musepi context --json, and the answer of serve's context"),
        ),
        (
            "cli.recall.entry",
            schema::<EntryPage>("musepi recall --entry --json, and serve's recall of an entry"),
        ),
        (
            "cli.recall.grep",
            schema::<SearchPage>("musepi recall --grep --json, and serve's recall search"),
        ),
        ("cli.branch", schema::<BranchDoc>("musepi branch --json")),
        (
            "cli.branch.dry-run",
            schema::<BranchDryRunDoc>("musepi branch --dry-run --json"),
        ),
        ("cli.handoff", schema::<HandoffDoc>("musepi handoff --json")),
        (
            "cli.session.stats",
            schema::<session::StatsDoc>("musepi session stats --json"),
        ),
        (
            "cli.session.tree",
            schema::<session::SessionTreeDoc>("musepi session tree --json"),
        ),
        (
            "cli.session.check",
            schema::<session::CheckDoc>("musepi session check --json"),
        ),
        (
            "cli.session.migrate",
            schema::<session::MigrateDoc>("musepi session migrate --json"),
        ),
        ("cli.ls", schema::<session::LsDoc>("musepi ls --json")),
        (
            "cli.context.chart",
            schema::<setup::ChartDoc>("musepi context --chart --json"),
        ),
        (
            "cli.trust",
            schema::<setup::TrustDoc>("musepi trust FILE --json"),
        ),
        (
            "cli.trust.list",
            schema::<setup::TrustListDoc>("musepi trust --list --json"),
        ),
        (
            "cli.pi.install",
            schema::<setup::PiInstallDoc>("musepi pi install --json"),
        ),
        (
            "cli.pi.remove",
            schema::<setup::PiRemoveDoc>("musepi pi remove --json"),
        ),
        (
            "cli.hooks.test",
            schema::<setup::HooksTestDoc>("musepi hooks test EVENT --json"),
        ),
        (
            "cli.snapcompact.render",
            schema::<setup::RenderDoc>("musepi snapcompact render --json, and its archive.json"),
        ),
        (
            "cli.unprune",
            schema::<cli::UnpruneDoc>("musepi unprune --json"),
        ),
        (
            "cli.error",
            schema::<ErrorLine>("what every command prints with --json when it fails"),
        ),
        (
            "hook.session_before_compact",
            schema::<BeforeCompactEvent>("hook event session_before_compact"),
        ),
        (
            "hook.session_before_compact.answer",
            schema::<BeforeCompactResult>("a hook's answer to session_before_compact"),
        ),
        (
            "hook.session.compacting",
            schema::<CompactingEvent>("hook event session.compacting"),
        ),
        (
            "hook.session.compacting.answer",
            schema::<CompactingResult>("a hook's answer to session.compacting"),
        ),
        (
            "hook.session_compact",
            schema::<CompactEvent>("hook event session_compact"),
        ),
        (
            "hook.session_before_tree",
            schema::<BeforeTreeEvent>("hook event session_before_tree"),
        ),
        (
            "hook.session_before_tree.answer",
            schema::<BeforeTreeResult>("a hook's answer to session_before_tree"),
        ),
        (
            "hook.session_tree",
            schema::<TreeEvent>("hook event session_tree"),
        ),
    ]
}

/// Reads `value` as `T`; the error names the key a bad value sits at
/// (`` `create`: invalid type: string "yes", expected a boolean ``).
pub fn read<T: DeserializeOwned>(value: serde_json::Value) -> Result<T, String> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        if path == "." {
            inner.to_string()
        } else {
            format!("`{path}`: {inner}")
        }
    })
}

/// Serializes a document this module defines. Its types hold no map with
/// non-string keys and no float, so serializing cannot fail.
pub fn value<T: serde::Serialize>(doc: &T) -> serde_json::Value {
    serde_json::to_value(doc).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../docs/schemas")
    }

    /// The schemas in docs/ are the ones the types generate; with
    /// `MUSEPI_UPDATE_SCHEMAS=1` the test writes them instead, and removes
    /// any file no type generates.
    #[test]
    fn schemas_in_docs_are_generated_from_the_types() {
        let update = std::env::var_os("MUSEPI_UPDATE_SCHEMAS").is_some();
        let dir = dir();
        let mut stale = Vec::new();
        let mut names = Vec::new();
        for (name, schema) in schemas() {
            let file = dir.join(format!("{name}.json"));
            let mut text = serde_json::to_string_pretty(&schema).unwrap();
            text.push('\n');
            names.push(format!("{name}.json"));
            if update {
                std::fs::create_dir_all(&dir).unwrap();
                std::fs::write(&file, &text).unwrap();
            } else if std::fs::read_to_string(&file).ok().as_deref() != Some(text.as_str()) {
                stale.push(file.display().to_string());
            }
        }
        for entry in std::fs::read_dir(&dir).unwrap() {
            let entry = entry.unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            let json = std::path::Path::new(&name)
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("json"));
            if json && !names.contains(&name) {
                if update {
                    std::fs::remove_file(entry.path()).unwrap();
                } else {
                    stale.push(format!("{} (no type generates it)", entry.path().display()));
                }
            }
        }
        assert!(
            stale.is_empty(),
            "these schemas differ from their types; run `MUSEPI_UPDATE_SCHEMAS=1 cargo test -p musepi-protocol` and commit docs/schemas:\n  {}",
            stale.join("\n  ")
        );
    }

    #[test]
    fn a_bad_parameter_is_named_by_its_key() {
        let e = read::<serve::OpenParams>(serde_json::json!({"path": 3})).unwrap_err();
        assert!(e.starts_with("`path`: invalid type: integer `3`"), "{e}");
        let e = read::<serve::OpenParams>(
            serde_json::json!({"path": "s.jsonl", "promotionTargets": [{"provider": "p"}]}),
        )
        .unwrap_err();
        assert!(
            e.starts_with("`promotionTargets[0]`: missing field `modelId`"),
            "{e}"
        );
    }

    #[test]
    fn events_are_written_as_the_protocol_writes_them() {
        use musepi_runtime::compaction::Reason;
        use musepi_runtime::{MaintenanceEvent, PromotionTarget};
        let line = |e: MaintenanceEvent| {
            value(&runtime::EventLine {
                event: runtime::EventDoc::of(&e).unwrap(),
            })
            .to_string()
        };
        assert_eq!(
            line(MaintenanceEvent::CompactionStart {
                reason: Reason::Overflow
            }),
            r#"{"event":{"type":"compaction_start","reason":"overflow"}}"#
        );
        assert_eq!(
            line(MaintenanceEvent::CompactionEnd {
                reason: Reason::Threshold,
                result: None,
                aborted: false,
                will_retry: false,
                error_message: Some("Auto-compaction failed: boom".into()),
            }),
            r#"{"event":{"type":"compaction_end","reason":"threshold","aborted":false,"willRetry":false,"errorMessage":"Auto-compaction failed: boom"}}"#
        );
        assert_eq!(
            line(MaintenanceEvent::ContextPromotion {
                reason: Reason::Threshold,
                from_model: None,
                target: PromotionTarget::new("p", "big", 400_000),
            }),
            r#"{"event":{"type":"context_promotion","provider":"p","modelId":"big","contextWindow":400000,"reason":"threshold","fromModel":null}}"#
        );
        assert_eq!(
            line(MaintenanceEvent::TreeEnd {
                old_leaf_id: Some("a".into()),
                new_leaf_id: None,
                summary_entry_id: None,
                aborted: true,
                error_message: None,
            }),
            r#"{"event":{"type":"tree_end","oldLeafId":"a","newLeafId":null,"aborted":true}}"#
        );
    }

    #[test]
    fn navigate_needs_a_target_that_may_be_null() {
        let p: serve::NavigateParams = read(serde_json::json!({"targetId": null})).unwrap();
        assert_eq!(p.target_id, None);
        let p: serve::NavigateParams = read(serde_json::json!({"targetId": "a1"})).unwrap();
        assert_eq!(p.target_id.as_deref(), Some("a1"));
        let e = read::<serve::NavigateParams>(serde_json::json!({})).unwrap_err();
        assert_eq!(e, "missing field `targetId`");
    }
}
