//! The methods of `musepi serve` over one open session (docs/protocol.md).

use std::path::PathBuf;
use std::sync::Arc;

use musepi_runtime::branch::NavigateError;
use musepi_runtime::compaction::{RemoteCompactor, SnapTarget};
use musepi_runtime::hooks::{Hooks, Summarizer};
use musepi_runtime::{
    AbortHandle, EventSink, Maintenance, MaintenanceError, PromotionTarget, TreeRequest,
};
use musepi_session_model::time::format_iso;
use musepi_session_model::{AgentMessage, EntryBody, Header, IdSource, Journal, SessionError};
use serde_json::Value;

use super::views::entry_body;
use crate::ctx::Ctx;
use crate::output::note;
use crate::settings::{Settings, merge_layers};
use musepi_protocol::runtime::{AfterAssistantDoc, DecisionDoc, PromotionDoc, TreeDoc};
use musepi_protocol::serve::{
    AbortDoc, AfterAssistantParams, AppendDoc, AppendParams, BeforeRequestParams, CloseDoc,
    CompactParams, IdleParams, NavigateParams, OpenParams, OpenSession, StateDoc, StatusDoc,
};
use musepi_protocol::value;

/// A failed request: a stable code and a message for people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RpcError {
    pub code: &'static str,
    pub message: String,
}

impl RpcError {
    pub(super) fn new(code: &'static str, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub(super) fn params(message: impl Into<String>) -> Self {
        Self::new("invalid_params", message)
    }
}

impl From<MaintenanceError> for RpcError {
    fn from(e: MaintenanceError) -> Self {
        let code = match &e {
            MaintenanceError::NotFound(_) => "not_found",
            MaintenanceError::NotAssistant(_) | MaintenanceError::Empty => "not_assistant",
            MaintenanceError::Session(SessionError::InvalidEntry { .. }) => "invalid_params",
            MaintenanceError::Session(s) if s.is_busy() => "busy",
            MaintenanceError::Session(_) => "write_failed",
            MaintenanceError::Navigate(NavigateError::NoModel) => "no_model",
            MaintenanceError::Navigate(_) => "navigation_failed",
            _ => "failed",
        };
        Self::new(code, e.to_string())
    }
}

/// What a method returns.
pub(super) type Reply = Result<Value, RpcError>;

/// Everything the server holds between requests.
pub(super) struct Server {
    pub settings: Settings,
    pub summarizer: Option<Arc<dyn Summarizer>>,
    pub remote: Option<Arc<dyn RemoteCompactor>>,
    pub hooks: Hooks,
    /// The global flags: `--deterministic-ids`, `-q` (no warnings on
    /// stderr) and `--now`.
    pub ctx: Ctx,
    pub context_window: u64,
    pub events: EventSink,
    pub session: Option<Maintenance>,
}

/// Reads a method's parameters as their type (docs/schemas/serve.*.params.json).
pub(super) fn params<T: serde::de::DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    musepi_protocol::read(params.clone()).map_err(RpcError::params)
}

/// `promotionTargets` as the runtime's targets; a window must be above 0.
fn promotion_targets(list: Vec<PromotionDoc>) -> Result<Vec<PromotionTarget>, RpcError> {
    list.into_iter()
        .enumerate()
        .map(|(i, t)| {
            if t.context_window == 0 {
                return Err(RpcError::params(format!(
                    "`promotionTargets[{i}].contextWindow` must be above 0"
                )));
            }
            Ok(PromotionTarget::new(
                &t.provider,
                &t.model_id,
                t.context_window,
            ))
        })
        .collect()
}

impl Server {
    /// The abort handle of the open session's runtime.
    pub(super) fn abort_handle(&self) -> Option<AbortHandle> {
        self.session.as_ref().map(Maintenance::abort_handle)
    }

    pub(super) fn runtime(&mut self) -> Result<&mut Maintenance, RpcError> {
        self.session
            .as_mut()
            .ok_or_else(|| RpcError::new("no_session", "no session is open: send `open` first"))
    }

    pub(super) fn clock(&self) -> Arc<dyn Fn() -> i64 + Send + Sync> {
        match self.ctx.now {
            Some(fixed) => Arc::new(move || fixed),
            None => Arc::new(musepi_runtime::system_clock),
        }
    }

    fn ids(&self, journal: &Journal) -> Box<dyn IdSource + Send> {
        crate::ids::for_session(self.ctx.deterministic_ids(), journal.session())
    }

    /// Runs one method. What the session file's writes during it had to
    /// tell (a rewrite that outlasted another process's open file) is in
    /// the `notes` of its answer, so the call that caused a warning
    /// reports it, once; a failed call, whose answer has no `notes`, says
    /// it on stderr.
    pub(super) async fn call(&mut self, method: &str, params: &Value) -> Reply {
        let mut reply = self.dispatch(method, params).await;
        let warnings = self
            .session
            .as_mut()
            .map(Maintenance::take_write_warnings)
            .unwrap_or_default();
        if warnings.is_empty() {
            return reply;
        }
        let notes = reply
            .as_mut()
            .ok()
            .and_then(|v| v.get_mut("notes"))
            .and_then(Value::as_array_mut);
        match notes {
            Some(notes) => notes.extend(warnings.into_iter().map(Value::from)),
            None => {
                // A loss is said even with `-q`, which hides chatter only.
                for w in &warnings {
                    note(false, &format!("musepi: warning: {w}"));
                }
            }
        }
        reply
    }

    async fn dispatch(&mut self, method: &str, params: &Value) -> Reply {
        match method {
            "open" => self.open(params),
            "close" => Ok(value(&self.close())),
            "status" => Ok(value(&self.status())),
            "append" => self.append(params),
            "afterAssistant" => self.after_assistant(params).await,
            "beforeRequest" => {
                let p: BeforeRequestParams = self::params(params)?;
                let decision = self.runtime()?.before_request(p.safe_boundary).await;
                Ok(value(&DecisionDoc::from(&decision)))
            }
            "idle" => {
                let p: IdleParams = self::params(params)?;
                let decision = self.runtime()?.idle(p.idle_seconds).await;
                Ok(value(&DecisionDoc::from(&decision)))
            }
            "compact" => {
                let p: CompactParams = self::params(params)?;
                Ok(value(&DecisionDoc::from(
                    &self.runtime()?.compact(p.instructions).await,
                )))
            }
            "navigate" => self.navigate(params).await,
            "context" => self.context(params),
            "plan" => self.plan(params),
            "recall" => self.recall(params),
            "abort" => Ok(value(&AbortDoc {
                aborted: self.abort_handle().is_some_and(|h| h.abort()),
            })),
            other => Err(RpcError::new(
                "unknown_method",
                format!("unknown method `{other}` (see docs/protocol.md)"),
            )),
        }
    }

    fn open(&mut self, params: &Value) -> Reply {
        let p: OpenParams = self::params(params)?;
        let path = p.path;
        if path.is_empty() {
            // No file has that name: every later write would fail.
            return Err(RpcError::params(
                "`path` is empty: give the session file's path",
            ));
        }
        let path = PathBuf::from(path);
        let create = p.create.unwrap_or(false);
        let mut settings = self.settings.clone();
        let mut warnings = Vec::new();
        if let Some(overrides) = p.settings.filter(|v| !v.is_null()) {
            let base = serde_json::to_value(&self.settings).unwrap_or(Value::Null);
            let merged = merge_layers(vec![
                (PathBuf::from("<settings>"), base),
                (PathBuf::from("<open.settings>"), overrides),
            ]);
            warnings.extend(merged.warnings.iter().map(ToString::to_string));
            settings = merged.settings;
        }
        let window = p.context_window.unwrap_or(self.context_window);
        let targets = promotion_targets(p.promotion_targets.unwrap_or_default())?;
        let clock = self.clock();
        let journal = if create {
            if path.exists() {
                return Err(RpcError::new(
                    "already_exists",
                    format!("{} exists; open it without `create`", path.display()),
                ));
            }
            let id = p.session_id.unwrap_or_else(|| {
                crate::ids::new_session_id(self.ctx.deterministic_ids(), clock())
            });
            let cwd = p.cwd.unwrap_or_else(|| {
                std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default()
            });
            Journal::create(&path, Header::new(id, format_iso(clock()), cwd))
        } else {
            Journal::open(&path, &mut crate::ids::for_v1())
        }
        .map_err(|e| RpcError::new("bad_session", e.to_string()))?;
        let ids = self.ids(&journal);
        let mut maintenance = settings.maintenance(window);
        // What every request carries besides its messages, when the agent
        // knows it: the kept window's adaptation leaves it out of the ratio.
        if let Some(overhead) = p.overhead_tokens {
            maintenance.compaction.overhead_tokens = Some(overhead);
        }
        let mut runtime = Maintenance::new(journal, maintenance)
            .with_hooks(self.hooks.clone())
            .with_ids(ids)
            .with_clock(clock)
            .with_events(self.events.clone());
        if let Some(s) = &self.summarizer {
            runtime = runtime.with_summarizer(s.clone());
        }
        if let Some(r) = &self.remote {
            runtime = runtime.with_remote(r.clone());
        }
        if let Some(model) = p.model {
            // The archive's reader: PNG frames when the model reads images.
            let mut reader = SnapTarget::default();
            reader.vision = model.vision.unwrap_or(false);
            reader.api = model.api;
            runtime = runtime.with_reader(reader);
            runtime.set_model(&model.provider, &model.model_id, None);
        }
        runtime.set_promotion_targets(targets);
        if let Some(prompt) = p.system_prompt {
            runtime = runtime.with_system_prompt(&prompt);
        }
        self.session = Some(runtime);
        let mut status = self.status();
        if let Some(open) = &mut status.session {
            open.created = Some(create);
            open.warnings = Some(warnings);
        }
        Ok(value(&status))
    }

    fn close(&mut self) -> CloseDoc {
        let path = self
            .session
            .take()
            .map(|m| m.journal().path().display().to_string());
        CloseDoc {
            closed: path.is_some(),
            path,
        }
    }

    fn status(&mut self) -> StatusDoc {
        let Some(m) = &mut self.session else {
            return StatusDoc {
                open: false,
                session: None,
            };
        };
        let measured = m.context_tokens().0;
        let context_tokens = m.leaf_context_tokens();
        let session = m.journal().session();
        let s = m.settings();
        let state = m.state();
        let open = OpenSession {
            path: m.journal().path().display().to_string(),
            session_id: session.header().id.clone(),
            leaf_id: session.leaf_id().map(ToString::to_string),
            entry_count: session.len(),
            strategy: s.strategy.name(),
            context_window: s.context_window,
            threshold_tokens: musepi_runtime::context::resolve_threshold_tokens(
                s.context_window,
                &s.thresholds(),
            ),
            context_tokens,
            measured_tokens: measured,
            context_promotion: s.context_promotion,
            branch_summary: s.branch_summary_enabled,
            promotion_targets: m
                .promotion_targets()
                .iter()
                .map(PromotionDoc::from)
                .collect(),
            summarizer: self
                .summarizer
                .as_ref()
                .map(|p| Summarizer::describe(p.as_ref())),
            state: StateDoc {
                overflow_recovery_attempted: state.overflow_recovery_attempted,
                empty_incomplete_recoveries: state.empty_incomplete_recoveries,
                acted_usage_entry_id: state.acted_usage.as_ref().map(ToString::to_string),
            },
            created: None,
            warnings: None,
        };
        StatusDoc {
            open: true,
            session: Some(open),
        }
    }

    fn append(&mut self, params: &Value) -> Reply {
        let p: AppendParams = self::params(params)?;
        let entries = match (p.entries, p.entry) {
            (Some(list), None) => list,
            (None, Some(one)) => vec![one],
            _ => {
                return Err(RpcError::params(
                    "give `entries` (a list) or `entry` (one entry)",
                ));
            }
        };
        let bodies = entries
            .into_iter()
            .enumerate()
            .map(|(i, e)| {
                entry_body(&Value::Object(e))
                    .map_err(|m| RpcError::params(format!("entries[{i}]: {m}")))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let runtime = self.runtime()?;
        let ids: Vec<String> = runtime
            .append_all(bodies)?
            .iter()
            .map(ToString::to_string)
            .collect();
        let leaf_id = runtime
            .journal()
            .session()
            .leaf_id()
            .map(ToString::to_string);
        // `notes` gets the warnings of the rewrite the first append to a
        // v1 or v2 file makes to write its migration (see `call`).
        Ok(value(&AppendDoc {
            ids,
            leaf_id,
            notes: Vec::new(),
        }))
    }

    async fn after_assistant(&mut self, params: &Value) -> Reply {
        let p: AfterAssistantParams = self::params(params)?;
        let mut entry_id = p.entry_id;
        if let Some(mut message) = p.message {
            if entry_id.is_some() {
                return Err(RpcError::params("give `entryId` or `message`, not both"));
            }
            let mut entry = serde_json::Map::new();
            entry.insert("type".into(), "message".into());
            entry.insert(
                "message".into(),
                Value::Object(std::mem::take(&mut message)),
            );
            let body = entry_body(&Value::Object(entry)).map_err(RpcError::params)?;
            if !matches!(body, EntryBody::Message(AgentMessage::Assistant(_))) {
                return Err(RpcError::params("`message` must be an assistant message"));
            }
            entry_id = Some(self.runtime()?.append(body)?.to_string());
        }
        let runtime = self.runtime()?;
        let decision = runtime.after_assistant(entry_id.as_deref()).await?;
        Ok(value(&AfterAssistantDoc {
            decision: DecisionDoc::from(&decision),
            entry_id,
        }))
    }

    async fn navigate(&mut self, params: &Value) -> Reply {
        let p: NavigateParams = self::params(params)?;
        let mut request = TreeRequest::default();
        request.target_id = p.target_id;
        request.summarize = match p.summarize {
            None => self.runtime()?.settings().branch_summary_enabled,
            Some(b) => b,
        };
        request.custom_instructions = p.instructions;
        request.replace_instructions = p.replace_instructions.unwrap_or(true);
        request.label = p.label;
        let outcome = self.runtime()?.navigate_tree(request).await?;
        Ok(value(&TreeDoc::from(&outcome)))
    }

    /// The leaf a `leaf` parameter names: the session's when absent,
    /// none for `"null"`.
    pub(super) fn leaf(&mut self, leaf: Option<&str>) -> Result<Option<usize>, RpcError> {
        let session = self.runtime()?.journal().session();
        session
            .leaf_named(leaf)
            .map_err(|id| RpcError::new("not_found", format!("Entry {id} not found")))
    }
}
