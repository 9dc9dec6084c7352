//! What the pipeline tests share: a scripted summarizer, hook scripts,
//! session files of read turns, and running a pipeline over a file.
#![allow(dead_code, unreachable_pub, clippy::unwrap_used)]

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use musepi_context_builder::{RequestPurpose, SummaryRequest, SummaryResponse};
use musepi_hooks::{
    CompactError, CompactOptions, CompactOutcome, NavigateError, NavigateOptions, NavigateOutcome,
    ProcessHook, StderrMode, SummarizeError, SummarizeFuture, Summarizer, compact, navigate,
};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, ContentBlock, EntryBody, Header, Journal, JsonValue,
    SequentialIds, Stamp, StopReason, Text, ToolCall, ToolResultMessage, Usage, UserMessage,
};
use tokio_util::sync::CancellationToken;

/// The clock of every pipeline run (`prunedAt` and the new entries).
pub const NOW: i64 = 1_800_000_000_000;

/// A summarizer that records every request and answers by purpose, or
/// fails the requests it was told to fail.
pub struct Scripted {
    name: &'static str,
    answer: fn(RequestPurpose) -> String,
    usage: Option<Usage>,
    /// The purpose that fails (`None`: every request), and how.
    failure: Option<(Option<RequestPurpose>, SummarizeError)>,
    /// Every request, in order.
    pub seen: Mutex<Vec<SummaryRequest>>,
}

impl Scripted {
    /// `name`, answering each request with `answer(purpose)`.
    pub fn new(name: &'static str, answer: fn(RequestPurpose) -> String) -> Self {
        Self {
            name,
            answer,
            usage: None,
            failure: None,
            seen: Mutex::new(Vec::new()),
        }
    }

    /// Its answers report `usage`.
    pub fn with_usage(mut self, usage: Usage) -> Self {
        self.usage = Some(usage);
        self
    }

    /// Fails the requests of `purpose` (every request with `None`) with `error`.
    pub fn failing(mut self, purpose: Option<RequestPurpose>, error: SummarizeError) -> Self {
        self.failure = Some((purpose, error));
        self
    }
}

impl Scripted {
    /// Its answer to `request`, known at once.
    fn answer(
        &self,
        request: &SummaryRequest,
        cancel: &CancellationToken,
    ) -> Result<SummaryResponse, SummarizeError> {
        self.seen.lock().unwrap().push(request.clone());
        if cancel.is_cancelled() {
            return Err(SummarizeError::Cancelled);
        }
        if let Some((purpose, error)) = &self.failure
            && purpose.is_none_or(|p| p == request.purpose)
        {
            return Err(error.clone());
        }
        Ok(SummaryResponse {
            text: (self.answer)(request.purpose),
            usage: self.usage.clone(),
            truncated: false,
        })
    }
}

/// Asserts that `result` is an error saying `message` and that the file at
/// `path` still holds `before`, byte for byte.
pub fn assert_failed_unwritten<T: std::fmt::Debug, E: std::fmt::Display>(
    result: Result<T, E>,
    message: &str,
    path: &Path,
    before: &[u8],
) {
    match result {
        Ok(out) => panic!("expected the error `{message}`, got {out:?}"),
        Err(e) => assert_eq!(e.to_string(), message),
    }
    assert_eq!(std::fs::read(path).unwrap(), before);
}

impl Summarizer for Scripted {
    fn summarize<'a>(
        &'a self,
        request: &'a SummaryRequest,
        cancel: CancellationToken,
    ) -> SummarizeFuture<'a> {
        Box::pin(std::future::ready(self.answer(request, &cancel)))
    }

    fn describe(&self) -> String {
        self.name.to_owned()
    }
}

/// Writes an executable `/bin/sh` script.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// How long a test's hook may take to answer: far longer than starting a
/// shell can take on the busiest machine, since those tests are about the
/// answer, not its speed. Tests of the timeout set their own.
pub const IN_TIME: Duration = Duration::from_mins(10);

/// How long a test waits for something that happens at once on an idle
/// machine (a pid file written, a killed process gone) before it fails.
pub const PATIENCE: Duration = Duration::from_mins(2);

/// A hook for `event` that runs `path`, its stderr captured, with time
/// enough ([`IN_TIME`]) to answer.
pub fn process_hook(event: &str, path: &Path) -> ProcessHook {
    ProcessHook::new(event, vec![path.display().to_string()])
        .unwrap()
        .stderr(StderrMode::Capture)
        .timeout(IN_TIME)
}

/// Appends entries to a session file, one second apart.
pub struct Writer {
    journal: Journal,
    ids: SequentialIds,
    now: i64,
}

impl Writer {
    /// A new file at `path` for session `id`.
    pub fn create(path: &Path, id: &str, cwd: &str) -> Self {
        let header = Header::new(id, "2025-01-01T00:00:00.000Z", cwd);
        Self {
            journal: Journal::create(path, header).unwrap(),
            ids: SequentialIds::new(),
            now: 1_735_689_600_000,
        }
    }

    /// The file at `path`, its clock at `now`.
    pub fn open(path: &Path, now: i64) -> Self {
        let journal = Journal::open(path, &mut SequentialIds::new()).unwrap();
        let ids = SequentialIds::after(journal.session().entries().iter().map(|e| &e.id));
        Self { journal, ids, now }
    }

    /// Appends `body` a second after the last entry; its id.
    pub fn push(&mut self, body: EntryBody) -> String {
        self.now += 1000;
        let mut stamp = Stamp {
            ids: &mut self.ids,
            now: self.now,
        };
        self.journal.append(body, &mut stamp).unwrap().to_string()
    }

    /// Appends `message`.
    pub fn message(&mut self, message: AgentMessage) -> String {
        self.push(EntryBody::Message(message))
    }

    /// Appends one read turn per number in `turns`, named by `reads`.
    pub fn reads(&mut self, turns: std::ops::Range<u32>, reads: &Reads) {
        for turn in turns {
            self.message(user(&format!("{} {turn}", reads.task)));
            let id = format!("{}{turn}", reads.call);
            let call = read_call(&id, &format!("src/{}{turn}.rs", reads.file));
            let mut asst = assistant(vec![call], StopReason::ToolUse);
            if reads.with_usage {
                if let Content::Blocks(blocks) = &mut asst.content {
                    blocks.insert(0, ContentBlock::text("reading"));
                }
                let input = 1000.0 * f64::from(turn + 1);
                asst.usage = Some(Usage {
                    input,
                    output: 10.0,
                    total_tokens: input + 10.0,
                    ..Default::default()
                });
            }
            self.message(AgentMessage::Assistant(asst));
            let output = reads.fill.to_string().repeat(8_000);
            self.message(tool_result(&id, "read", &output));
        }
    }
}

/// How a run of read turns is named: the user says `"{task} {n}"`, the
/// assistant calls `read` as `"{call}{n}"` on `src/{file}{n}.rs` (saying
/// "reading" first and reporting a usage that grows by 1,000 input tokens a
/// turn when `with_usage`), and each read returns 8,000 `fill`s.
pub struct Reads {
    pub task: &'static str,
    pub call: &'static str,
    pub file: &'static str,
    pub fill: char,
    pub with_usage: bool,
}

/// A user's message.
pub fn user(text: &str) -> AgentMessage {
    AgentMessage::User(UserMessage {
        content: Content::Text(Text::new(text)),
        ..Default::default()
    })
}

/// An assistant's message from model `m` of provider `p`.
pub fn assistant(blocks: Vec<ContentBlock>, stop: StopReason) -> AssistantMessage {
    AssistantMessage {
        content: Content::Blocks(blocks),
        provider: Some("p".into()),
        model: Some("m".into()),
        stop_reason: Some(stop),
        ..Default::default()
    }
}

/// A `read` call of `file`.
pub fn read_call(id: &str, file: &str) -> ContentBlock {
    ContentBlock::ToolCall(ToolCall {
        id: id.into(),
        name: Text::new("read"),
        arguments: JsonValue::new(serde_json::json!({ "path": file })),
        intent: None,
    })
}

/// The result of call `id` of `tool`.
pub fn tool_result(id: &str, tool: &str, text: &str) -> AgentMessage {
    AgentMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: tool.into(),
        content: Content::text(text),
        ..Default::default()
    })
}

/// Compacts the session file at `path`.
pub async fn compact_file(
    path: &Path,
    opts: &CompactOptions<'_>,
    cancel: &CancellationToken,
) -> Result<CompactOutcome, CompactError> {
    let mut journal = Journal::open(path, &mut SequentialIds::new()).unwrap();
    let mut ids = SequentialIds::after(journal.session().entries().iter().map(|e| &e.id));
    compact(&mut journal, opts, &mut ids, cancel).await
}

/// Navigates in the session file at `path`.
pub async fn navigate_file(
    path: &Path,
    opts: &NavigateOptions<'_>,
) -> Result<NavigateOutcome, NavigateError> {
    let mut journal = Journal::open(path, &mut SequentialIds::new()).unwrap();
    let mut ids = SequentialIds::after(journal.session().entries().iter().map(|e| &e.id));
    navigate(&mut journal, opts, &mut ids, &CancellationToken::new()).await
}
