//! The methods of `musepi serve` over one open session (docs/protocol.md).

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::Arc;

use musepi_hooks::{Hooks, Summarizer};
use musepi_runtime::branch::NavigateError;
use musepi_runtime::compaction::{PruneFirst, prune_first_measured};
use musepi_runtime::compaction::{RemoteCompactor, SnapTarget, Strategy};
use musepi_runtime::{
    AbortHandle, EventSink, Maintenance, MaintenanceError, MaintenanceStrategy, PromotionTarget,
    TreeRequest,
};
use musepi_session_model::time::format_iso;
use musepi_session_model::{
    AgentMessage, EntryBody, Header, IdSource, Journal, Session, SessionError,
};
use serde_json::{Value, json};

use super::views::entry_body;
use crate::commands::runtime::snap_strategy;
use crate::ctx::Ctx;
use crate::output::note;
use crate::report::context::{Known, View, context_json};
use crate::report::plan::{Planned, planned_json};
use crate::report::runtime::{decision_json, tree_json};
use crate::settings::{Settings, merge_layers};

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

pub(super) fn str_param<'a>(params: &'a Value, key: &str) -> Result<Option<&'a str>, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(RpcError::params(format!("`{key}` must be a string"))),
    }
}

fn bool_param(params: &Value, key: &str) -> Result<bool, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(RpcError::params(format!("`{key}` must be true or false"))),
    }
}

pub(super) fn u64_param(params: &Value, key: &str) -> Result<Option<u64>, RpcError> {
    match params.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v
            .as_u64()
            .map(Some)
            .ok_or_else(|| RpcError::params(format!("`{key}` must be a non-negative integer"))),
    }
}

/// `promotionTargets`: `[{"provider", "modelId", "contextWindow"}]`.
fn promotion_targets(params: &Value) -> Result<Vec<PromotionTarget>, RpcError> {
    let list = match params.get("promotionTargets") {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(list)) => list,
        Some(_) => {
            return Err(RpcError::params(
                "`promotionTargets` must be a list of {\"provider\", \"modelId\", \"contextWindow\"}",
            ));
        }
    };
    list.iter()
        .enumerate()
        .map(|(i, t)| {
            let field = |key: &str| t.get(key).and_then(Value::as_str);
            match (field("provider"), field("modelId"), t.get("contextWindow").and_then(Value::as_u64)) {
                (Some(provider), Some(model_id), Some(window)) if window > 0 => {
                    Ok(PromotionTarget::new(provider, model_id, window))
                }
                _ => Err(RpcError::params(format!(
                    "promotionTargets[{i}]: needs \"provider\" and \"modelId\" (strings) and \"contextWindow\" (a positive integer)"
                ))),
            }
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

    fn clock(&self) -> Arc<dyn Fn() -> i64 + Send + Sync> {
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
            "close" => Ok(self.close()),
            "status" => Ok(self.status()),
            "append" => self.append(params),
            "afterAssistant" => self.after_assistant(params).await,
            "beforeRequest" => {
                let safe = match params.get("safeBoundary") {
                    None | Some(Value::Null) => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(_) => {
                        return Err(RpcError::params("`safeBoundary` must be true or false"));
                    }
                };
                Ok(decision_json(&self.runtime()?.before_request(safe).await))
            }
            "idle" => {
                let seconds = u64_param(params, "idleSeconds")?.ok_or_else(|| {
                    RpcError::params("`idleSeconds` is required: how long the agent has been idle")
                })?;
                Ok(decision_json(&self.runtime()?.idle(seconds).await))
            }
            "compact" => {
                let instructions = str_param(params, "instructions")?.map(str::to_owned);
                Ok(decision_json(&self.runtime()?.compact(instructions).await))
            }
            "navigate" => self.navigate(params).await,
            "context" => self.context(params),
            "plan" => self.plan(params),
            "recall" => self.recall(params),
            "abort" => Ok(json!({"aborted": self.abort_handle().is_some_and(|h| h.abort())})),
            other => Err(RpcError::new(
                "unknown_method",
                format!("unknown method `{other}` (see docs/protocol.md)"),
            )),
        }
    }

    fn open(&mut self, params: &Value) -> Reply {
        let path =
            str_param(params, "path")?.ok_or_else(|| RpcError::params("`path` is required"))?;
        if path.is_empty() {
            // No file has that name: every later write would fail.
            return Err(RpcError::params(
                "`path` is empty: give the session file's path",
            ));
        }
        let path = PathBuf::from(path);
        let create = bool_param(params, "create")?;
        let mut settings = self.settings.clone();
        let mut warnings = Vec::new();
        if let Some(overrides) = params.get("settings").filter(|v| !v.is_null()) {
            let base = serde_json::to_value(&self.settings).unwrap_or(Value::Null);
            let merged = merge_layers(vec![
                (PathBuf::from("<settings>"), base),
                (PathBuf::from("<open.settings>"), overrides.clone()),
            ]);
            warnings.extend(merged.warnings.iter().map(ToString::to_string));
            settings = merged.settings;
        }
        let window = u64_param(params, "contextWindow")?.unwrap_or(self.context_window);
        let targets = promotion_targets(params)?;
        let clock = self.clock();
        let journal = if create {
            if path.exists() {
                return Err(RpcError::new(
                    "already_exists",
                    format!("{} exists; open it without `create`", path.display()),
                ));
            }
            let id = match str_param(params, "sessionId")? {
                Some(id) => id.to_owned(),
                None => crate::ids::new_session_id(self.ctx.deterministic_ids(), clock()),
            };
            let cwd = match str_param(params, "cwd")? {
                Some(c) => c.to_owned(),
                None => std::env::current_dir()
                    .map(|d| d.display().to_string())
                    .unwrap_or_default(),
            };
            Journal::create(&path, Header::new(id, format_iso(clock()), cwd))
        } else {
            Journal::open(&path, &mut crate::ids::for_v1())
        }
        .map_err(|e| RpcError::new("bad_session", e.to_string()))?;
        let ids = self.ids(&journal);
        let mut maintenance = settings.maintenance(window);
        // What every request carries besides its messages, when the agent
        // knows it: the kept window's adaptation leaves it out of the ratio.
        if let Some(overhead) = u64_param(params, "overheadTokens")? {
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
        if let Some(model) = params.get("model").filter(|v| !v.is_null()) {
            let (Some(provider), Some(model_id)) = (
                model.get("provider").and_then(Value::as_str),
                model.get("modelId").and_then(Value::as_str),
            ) else {
                return Err(RpcError::params(
                    "`model` is {\"provider\", \"modelId\", \"vision\"?, \"api\"?}",
                ));
            };
            // The archive's reader: PNG frames when the model reads images.
            let mut reader = SnapTarget::default();
            reader.vision = model
                .get("vision")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            reader.api = model.get("api").and_then(Value::as_str).map(str::to_owned);
            runtime = runtime.with_reader(reader);
            runtime.set_model(provider, model_id, None);
        }
        runtime.set_promotion_targets(targets);
        if let Some(prompt) = str_param(params, "systemPrompt")? {
            runtime = runtime.with_system_prompt(prompt);
        }
        self.session = Some(runtime);
        let mut status = self.status();
        status["created"] = create.into();
        status["warnings"] = json!(warnings);
        Ok(status)
    }

    fn close(&mut self) -> Value {
        let path = self
            .session
            .take()
            .map(|m| m.journal().path().display().to_string());
        json!({"closed": path.is_some(), "path": path})
    }

    fn status(&mut self) -> Value {
        let Some(m) = &mut self.session else {
            return json!({"open": false});
        };
        let measured = m.context_tokens().0;
        let context_tokens = m.leaf_context_tokens();
        let session = m.journal().session();
        let s = m.settings();
        let state = m.state();
        json!({
            "open": true,
            "path": m.journal().path().display().to_string(),
            "sessionId": session.header().id,
            "leafId": session.leaf_id().map(ToString::to_string),
            "entryCount": session.len(),
            "strategy": s.strategy.name(),
            "contextWindow": s.context_window,
            "thresholdTokens": musepi_runtime::context::resolve_threshold_tokens(s.context_window, &s.thresholds()),
            "contextTokens": context_tokens,
            "measuredTokens": measured,
            "contextPromotion": s.context_promotion,
            "branchSummary": s.branch_summary_enabled,
            "promotionTargets": m.promotion_targets().iter().map(PromotionTarget::to_json).collect::<Vec<_>>(),
            "summarizer": self.summarizer.as_ref().map(|p| Summarizer::describe(p.as_ref())),
            "state": {
                "overflowRecoveryAttempted": state.overflow_recovery_attempted,
                "emptyIncompleteRecoveries": state.empty_incomplete_recoveries,
                "actedUsageEntryId": state.acted_usage.as_ref().map(ToString::to_string),
            },
        })
    }

    fn append(&mut self, params: &Value) -> Reply {
        let entries: Vec<&Value> = match (params.get("entries"), params.get("entry")) {
            (Some(Value::Array(list)), None) => list.iter().collect(),
            (None, Some(one)) => vec![one],
            _ => {
                return Err(RpcError::params(
                    "give `entries` (a list) or `entry` (one entry)",
                ));
            }
        };
        let bodies = entries
            .iter()
            .enumerate()
            .map(|(i, e)| entry_body(e).map_err(|m| RpcError::params(format!("entries[{i}]: {m}"))))
            .collect::<Result<Vec<_>, _>>()?;
        let runtime = self.runtime()?;
        let ids: Vec<String> = runtime
            .append_all(bodies)?
            .iter()
            .map(ToString::to_string)
            .collect();
        let leaf = runtime
            .journal()
            .session()
            .leaf_id()
            .map(ToString::to_string);
        // `notes` gets the warnings of the rewrite the first append to a
        // v1 or v2 file makes to write its migration (see `call`).
        Ok(json!({"ids": ids, "leafId": leaf, "notes": []}))
    }

    async fn after_assistant(&mut self, params: &Value) -> Reply {
        let mut entry_id = str_param(params, "entryId")?.map(str::to_owned);
        if let Some(message) = params.get("message").filter(|v| !v.is_null()) {
            if entry_id.is_some() {
                return Err(RpcError::params("give `entryId` or `message`, not both"));
            }
            let body = entry_body(&json!({"type": "message", "message": message}))
                .map_err(RpcError::params)?;
            if !matches!(body, EntryBody::Message(AgentMessage::Assistant(_))) {
                return Err(RpcError::params("`message` must be an assistant message"));
            }
            entry_id = Some(self.runtime()?.append(body)?.to_string());
        }
        let runtime = self.runtime()?;
        let decision = runtime.after_assistant(entry_id.as_deref()).await?;
        let mut v = decision_json(&decision);
        v["entryId"] = json!(entry_id);
        Ok(v)
    }

    async fn navigate(&mut self, params: &Value) -> Reply {
        let target = match params.get("targetId") {
            Some(Value::String(id)) => Some(id.clone()),
            Some(Value::Null) => None,
            _ => {
                return Err(RpcError::params(
                    "`targetId` is required: an entry id, or null for the root",
                ));
            }
        };
        let mut request = TreeRequest::default();
        request.target_id = target;
        request.summarize = match params.get("summarize") {
            None | Some(Value::Null) => self.runtime()?.settings().branch_summary_enabled,
            _ => bool_param(params, "summarize")?,
        };
        request.custom_instructions = str_param(params, "instructions")?.map(str::to_owned);
        request.replace_instructions = match params.get("replaceInstructions") {
            None | Some(Value::Null) => true,
            _ => bool_param(params, "replaceInstructions")?,
        };
        request.label = str_param(params, "label")?.map(str::to_owned);
        let outcome = self.runtime()?.navigate_tree(request).await?;
        Ok(tree_json(&outcome))
    }

    pub(super) fn leaf(&mut self, params: &Value) -> Result<Option<usize>, RpcError> {
        let session = self.runtime()?.journal().session();
        match str_param(params, "leaf")? {
            None => Ok(session.leaf_index()),
            Some("null") => Ok(None),
            Some(id) => session
                .index_of(id)
                .map(Some)
                .ok_or_else(|| RpcError::new("not_found", format!("Entry {id} not found"))),
        }
    }

    fn context(&mut self, params: &Value) -> Reply {
        let leaf = self.leaf(params)?;
        let (llm, full) = (bool_param(params, "llm")?, bool_param(params, "full")?);
        let runtime = self.runtime()?;
        // At the runtime's leaf, both sizes come from the account it keeps.
        let known = (leaf == runtime.journal().session().leaf_index()).then(|| Known {
            context_tokens: runtime.leaf_context_tokens(),
            measured: runtime.leaf_measured(),
        });
        let session = runtime.journal().session();
        let view = if llm { View::Llm } else { View::Context };
        Ok(context_json(session, leaf, view, full, known))
    }

    fn plan(&mut self, params: &Value) -> Reply {
        let leaf = self.leaf(params)?;
        let show_prompts = bool_param(params, "showPrompts")?;
        let (keep, reserve, window) = (
            u64_param(params, "keepRecent")?,
            u64_param(params, "reserve")?,
            u64_param(params, "contextWindow")?,
        );
        let now = (self.clock())();
        let warnings = self.ctx.settings_warnings();
        let runtime = self.runtime()?;
        let s = runtime.settings();
        let mut compaction = s.compaction.clone();
        compaction.keep_recent_tokens = keep.unwrap_or(compaction.keep_recent_tokens);
        compaction.reserve_tokens = reserve.unwrap_or(compaction.reserve_tokens);
        let window = window.unwrap_or(s.context_window);
        let prune = s.prune();
        // The strategy the runtime's compaction runs, as `musepi plan`
        // shows the one `musepi compact` runs.
        let strategy = match s.strategy {
            MaintenanceStrategy::Snapcompact | MaintenanceStrategy::Off => {
                snap_strategy(s, runtime.reader().clone())
            }
            MaintenanceStrategy::Remote => Strategy::Remote,
            _ => Strategy::Llm,
        };
        let with_warnings = |mut doc: Value| {
            doc["warnings"] = json!(warnings);
            doc
        };
        if leaf == runtime.journal().session().leaf_index() {
            // At the runtime's leaf: the sizes from its account, and the
            // pruned results staged in its journal for the preparation,
            // then undone, instead of a copy of the whole session.
            let tokens_before = runtime.leaf_context_tokens();
            let measured = runtime.leaf_measured();
            let session = runtime.journal().session();
            let step =
                prune_first_measured(session, leaf, &compaction, Some(&prune), tokens_before, now);
            let answer = |step: &PruneFirst, pruned: Cow<'_, Session>| {
                let planned =
                    Planned::decided(Cow::Borrowed(step), pruned, measured, &compaction, window);
                planned_json(&planned, leaf, &compaction, show_prompts, &strategy)
            };
            if !step.changes.is_empty()
                && let Some(doc) = runtime.with_staged(step.changes.clone(), |pruned| {
                    answer(&step, Cow::Borrowed(pruned))
                })
            {
                return Ok(with_warnings(doc));
            }
            // Nothing to prune (the session itself), or the journal cannot
            // stage the changes (its file ends with a torn line, or has a
            // problem a rewrite would get wrong): the step decided above,
            // applied to a copy; pruning is not decided again.
            let session = runtime.journal().session();
            return Ok(with_warnings(answer(
                &step,
                step.pruned(Cow::Borrowed(session)),
            )));
        }
        let session = runtime.journal().session();
        let planned = Planned::new(
            Cow::Borrowed(session),
            leaf,
            &compaction,
            Some(&prune),
            window,
            now,
        );
        Ok(with_warnings(planned_json(
            &planned,
            leaf,
            &compaction,
            show_prompts,
            &strategy,
        )))
    }
}
