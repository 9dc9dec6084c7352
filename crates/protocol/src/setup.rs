//! The `--json` documents of the commands that set musepi up, try it and
//! show what it made: `musepi trust`, `musepi pi install|remove`,
//! `musepi hooks test`, `musepi context --chart` and
//! `musepi snapcompact render`.

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// `musepi trust FILE --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustDoc {
    /// The settings file, by the path it was named by.
    pub file: String,
    /// When that path is a symbolic link: where it leads (an approval is
    /// for the path only).
    pub link: Option<LinkDoc>,
    /// The SHA-256 of its content.
    pub sha256: String,
    /// Its state before: `trusted`, `changed` or `untrusted`.
    pub before: &'static str,
    /// Its state now.
    pub status: &'static str,
    /// The trust store was written.
    pub recorded: bool,
    /// What the file turns on once trusted, key by key.
    pub enables: Vec<EnableDoc>,
}

/// A symbolic link.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LinkDoc {
    /// The link.
    pub path: String,
    /// What it leads to.
    pub target: String,
}

/// A setting a trusted file turns on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct EnableDoc {
    /// The key (`hooks.session_before_compact[0]`, `providers.p`, …).
    pub key: String,
    /// What it does, for people.
    pub what: String,
}

/// `musepi trust --list --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TrustListDoc {
    /// The trust store.
    pub store: String,
    /// The approved files.
    pub files: Vec<TrustedFileDoc>,
}

/// An approved settings file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TrustedFileDoc {
    /// Its path.
    pub file: String,
    /// The SHA-256 approved.
    pub sha256: String,
    /// When.
    pub trusted_at: String,
    /// `trusted` (the same content), `changed` or `missing`.
    pub status: &'static str,
}

/// `musepi pi install --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PiInstallDoc {
    /// The extension's folder.
    pub folder: String,
    /// The version written.
    pub version: &'static str,
    /// The version it replaced, if any.
    pub previous_version: Option<String>,
    /// `--dry-run`: nothing was written.
    pub dry_run: bool,
    /// The files of the extension.
    pub files: Vec<&'static str>,
    /// Other places pi also loads the extension from.
    pub also_loaded_from: Vec<String>,
}

/// `musepi pi remove --json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PiRemoveDoc {
    /// The extension's folder.
    pub folder: String,
    /// It was removed (false with `--dry-run`, or when none was installed).
    pub removed: bool,
    /// The version removed; absent when none was installed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// The marker file `musepi pi install` writes beside the extension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PiMarker {
    /// The musepi version that wrote the extension.
    pub musepi: &'static str,
}

/// `musepi hooks test EVENT --json`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct HooksTestDoc {
    /// The event.
    pub event: &'static str,
    /// The sample payload sent.
    pub payload: Value,
    /// Each hook's run.
    pub hooks: Vec<HookRunDoc>,
}

/// One hook's run of `musepi hooks test`.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HookRunDoc {
    /// The hook's name.
    pub hook: String,
    /// Its command.
    pub command: Vec<String>,
    /// Its exit code (null when it did not exit: a timeout, a signal).
    pub exit_code: Option<i32>,
    /// How long it ran.
    pub duration_ms: u64,
    /// `answer`, `cancel`, `empty` or `failed`.
    pub outcome: &'static str,
    /// A failure stops the operation instead of being warned about.
    pub fail_closed: bool,
    /// The answer it gave.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<Value>,
    /// Why it cancelled.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The warning a real run would print.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
}

/// `musepi context --chart --json`: the context's tokens along the path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartDoc {
    /// The leaf.
    pub leaf_id: Option<String>,
    /// Entries on the path.
    pub path_length: usize,
    /// The model's context window.
    pub context_window: u64,
    /// The context's tokens at the leaf.
    pub tokens: u64,
    /// The most the context held along the path.
    pub peak: u64,
    /// The measured points, in path order.
    pub points: Vec<ChartPointDoc>,
    /// The compactions on the path.
    pub compactions: Vec<ChartCompactionDoc>,
    /// With `--out`: the SVG written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
}

/// A point of the chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartPointDoc {
    /// Its position on the path.
    pub position: usize,
    /// Its entry.
    pub entry_id: String,
    /// The context's tokens when that entry was the leaf.
    pub tokens: u64,
}

/// A compaction on the chart.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChartCompactionDoc {
    /// Its entry.
    pub entry_id: String,
    /// Its position on the path.
    pub position: usize,
    /// The context's tokens just before it.
    pub tokens_before: u64,
    /// Just after it.
    pub tokens_after: u64,
    /// What it took out.
    pub removed: u64,
    /// The messages it summarized.
    pub messages_summarized: usize,
    /// Who made it, as far as the entry tells: `snapcompact`, `llm`,
    /// `remote` or `hook`.
    pub made_by: &'static str,
}

/// `musepi snapcompact render --json`, also written as `archive.json`
/// beside the files: what was rendered of a compaction's archive.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RenderDoc {
    /// The PNG frames written (a PNG archive, or any archive printed anew).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frames: Option<Vec<FrameDoc>>,
    /// The pages written (a text archive as stored).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pages: Option<Vec<PageDoc>>,
    /// The text archive's version.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// Printed anew: the page shape.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shape: Option<String>,
    /// Printed anew: the frame's side in pixels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frame_size: Option<u32>,
    /// A PNG archive: the characters of its source text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total_chars: Option<u64>,
    /// Characters the archive dropped for room.
    pub truncated_chars: u64,
    /// The compaction entry.
    pub entry_id: String,
    /// `png` or `text`: the archive as stored.
    pub archive: &'static str,
    /// `--shape` or `--model` printed it anew.
    pub rerendered: bool,
    /// `--json` only: the folder written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<String>,
    /// `--json` only: the files written, in order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
}

/// A PNG frame of a render.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FrameDoc {
    /// Its file; null when the frame holds no image.
    pub file: Option<String>,
    /// The PNG's size.
    pub png_bytes: Option<usize>,
    /// The base64 the archive stores.
    pub base64_bytes: usize,
    /// Character columns.
    pub cols: u32,
    /// Character rows.
    pub rows: u32,
    /// Characters it holds.
    pub chars: u64,
    /// Its page shape.
    pub shape: Option<String>,
    /// Its font.
    pub font: Option<String>,
    /// Its font variant.
    pub variant: Option<String>,
    /// Lines drawn twice for legibility.
    pub line_repeat: Option<u32>,
    /// The image detail asked for.
    pub detail: Option<String>,
}

/// A page of a text archive.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct PageDoc {
    /// Its file.
    pub file: String,
    /// Characters it holds.
    pub chars: usize,
}
