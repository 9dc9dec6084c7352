//! Hook commands from the settings files (`hooks.<event>`), as the
//! pipelines' [`Hooks`].
//!
//! Every configured command becomes one [`ProcessHook`] for its event, in
//! the order the settings list them (docs/hooks.md has the protocol).
//! Settings that cannot work are bad input (exit 2) naming the key: an
//! unknown event, an empty command, a zero timeout, an `onFailure` other
//! than `continue` or `cancel`.

use std::sync::Arc;
use std::time::Duration;

use musepi_runtime::hooks::events::names;
use musepi_runtime::hooks::{CancelReport, HookWarning, Hooks, ProcessHook, StderrMode};

use crate::settings::{HookCommand, Settings};

/// Why a `hooks` setting cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HookSettingsError {
    /// `hooks.<event>` names no event.
    #[error("hooks.{key}: unknown event; expected one of {}", names::ALL.join(", "))]
    UnknownEvent {
        /// The key.
        key: String,
    },
    /// A command without a program.
    #[error(
        "hooks.{key}[{index}].command is empty: give the program and its arguments, e.g. [\"./hooks/check.sh\"]"
    )]
    EmptyCommand {
        /// The event key.
        key: String,
        /// The position in the list.
        index: usize,
    },
    /// `timeoutMs: 0`.
    #[error("hooks.{key}[{index}].timeoutMs must be at least 1")]
    ZeroTimeout {
        /// The event key.
        key: String,
        /// The position in the list.
        index: usize,
    },
    /// An `onFailure` that is neither `continue` nor `cancel`.
    #[error("hooks.{key}[{index}].onFailure is `{value}`; expected `continue` or `cancel`")]
    OnFailure {
        /// The event key.
        key: String,
        /// The position in the list.
        index: usize,
        /// What was given.
        value: String,
    },
}

/// The hooks the settings configure; their stderr is forwarded unless
/// `quiet` (`-q`).
pub fn from_settings(settings: &Settings, quiet: bool) -> Result<Hooks, HookSettingsError> {
    let mode = if quiet {
        StderrMode::Capture
    } else {
        StderrMode::Forward
    };
    from_settings_with(settings, &mode)
}

/// The hooks the settings configure, their stderr going where `mode`
/// says: a full-screen interface passes [`StderrMode::Callback`] so that
/// nothing is written under its screen (the callback then also receives
/// the failures that cancel an operation, under the hook's name).
pub fn from_settings_with(
    settings: &Settings,
    mode: &StderrMode,
) -> Result<Hooks, HookSettingsError> {
    let mut hooks = Hooks::new();
    for hook in process_hooks(settings, mode)? {
        hooks.register(Arc::new(hook));
    }
    // A failure that cancels is told at once (on stderr even with `-q`, or
    // to the callback): the command's error (`Compaction cancelled`) does
    // not say which hook failed or how.
    let report: CancelReport = match mode {
        StderrMode::Callback(f) => {
            let f = f.clone();
            Arc::new(move |w: &HookWarning| f(&w.hook, &w.to_string()))
        }
        StderrMode::Forward | StderrMode::Capture => {
            Arc::new(|w: &HookWarning| eprintln!("musepi: {w}"))
        }
    };
    hooks.report_cancels(report);
    Ok(hooks)
}

/// One [`ProcessHook`] per configured command, events in [`names::ALL`]
/// order, commands in settings order.
pub fn process_hooks(
    settings: &Settings,
    mode: &StderrMode,
) -> Result<Vec<ProcessHook>, HookSettingsError> {
    if let Some(key) = settings
        .hooks
        .keys()
        .find(|k| !names::ALL.contains(&k.as_str()))
    {
        return Err(HookSettingsError::UnknownEvent { key: key.clone() });
    }
    let mut out = Vec::new();
    for event in names::ALL {
        for (index, command) in settings.hooks.get(event).into_iter().flatten().enumerate() {
            out.push(process_hook(event, index, command, mode)?);
        }
    }
    Ok(out)
}

fn process_hook(
    event: &str,
    index: usize,
    c: &HookCommand,
    mode: &StderrMode,
) -> Result<ProcessHook, HookSettingsError> {
    let key = event.to_owned();
    let fail_closed = match c.on_failure.as_deref() {
        None | Some("continue") => false,
        Some("cancel") => true,
        Some(other) => {
            return Err(HookSettingsError::OnFailure {
                key,
                index,
                value: other.to_owned(),
            });
        }
    };
    let hook = ProcessHook::new(event, c.command.clone())
        .map_err(|_| HookSettingsError::EmptyCommand {
            key: key.clone(),
            index,
        })?
        .pass_env(c.env.iter().cloned())
        .with_fail_closed(fail_closed)
        .stderr(mode.clone());
    Ok(match c.timeout_ms {
        Some(0) => return Err(HookSettingsError::ZeroTimeout { key, index }),
        Some(ms) => hook.timeout(Duration::from_millis(ms)),
        None => hook,
    })
}

#[cfg(test)]
mod tests {
    use musepi_runtime::hooks::events::BeforeTreeEvent;
    use tokio_util::sync::CancellationToken;

    use super::*;

    /// Event, command, timeout in ms, fail-closed.
    type Row = (String, Vec<String>, u64, bool);

    fn check(hooks: &serde_json::Value) -> Result<Vec<Row>, String> {
        let settings: Settings =
            serde_json::from_value(serde_json::json!({ "hooks": hooks })).unwrap_or_default();
        process_hooks(&settings, &StderrMode::Capture)
            .map(|hs| {
                use musepi_runtime::hooks::Hook as _;
                hs.iter()
                    .map(|h| {
                        (
                            h.event().to_owned(),
                            h.command().to_vec(),
                            h.time_limit().as_millis() as u64,
                            h.fail_closed(),
                        )
                    })
                    .collect()
            })
            .map_err(|e| e.to_string())
    }

    #[test]
    fn commands_keep_their_order_and_options() {
        let got = check(&serde_json::json!({
            "session_tree": [{"command": ["t"]}],
            "session_before_compact": [
                {"command": ["a", "-x"], "timeoutMs": 500, "onFailure": "cancel"},
                {"command": ["b"], "onFailure": "continue"},
            ],
        }));
        assert_eq!(
            got,
            Ok(vec![
                (
                    "session_before_compact".into(),
                    vec!["a".into(), "-x".into()],
                    500,
                    true
                ),
                (
                    "session_before_compact".into(),
                    vec!["b".into()],
                    10_000,
                    false
                ),
                ("session_tree".into(), vec!["t".into()], 10_000, false),
            ])
        );
    }

    #[test]
    fn bad_settings_name_their_key() {
        assert_eq!(
            check(&serde_json::json!({"session_before_compaction": [{"command": ["a"]}]})),
            Err("hooks.session_before_compaction: unknown event; expected one of session_before_compact, session.compacting, session_compact, session_before_tree, session_tree".into())
        );
        assert_eq!(
            check(&serde_json::json!({"session_tree": [{"command": ["a"]}, {"command": []}]})),
            Err("hooks.session_tree[1].command is empty: give the program and its arguments, e.g. [\"./hooks/check.sh\"]".into())
        );
        assert_eq!(
            check(&serde_json::json!({"session_tree": [{"command": ["a"], "timeoutMs": 0}]})),
            Err("hooks.session_tree[0].timeoutMs must be at least 1".into())
        );
        assert_eq!(
            check(&serde_json::json!({"session_tree": [{"command": ["a"], "onFailure": "stop"}]})),
            Err(
                "hooks.session_tree[0].onFailure is `stop`; expected `continue` or `cancel`".into()
            )
        );
    }

    #[test]
    fn fail_closed_failures_reach_the_callback_with_the_stderr() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let script = dir.path().join("fail.sh");
        std::fs::write(&script, "#!/bin/sh\necho broken >&2\nexit 3\n").unwrap_or_default();
        let perms = <std::fs::Permissions as std::os::unix::fs::PermissionsExt>::from_mode(0o755);
        std::fs::set_permissions(&script, perms).unwrap_or_default();
        let settings: Settings = serde_json::from_value(serde_json::json!({"hooks": {
            "session_before_tree": [{"command": [script.display().to_string()], "onFailure": "cancel"}],
        }}))
        .unwrap_or_default();
        let seen = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let mode = StderrMode::Callback(Arc::new(move |name: &str, line: &str| {
            if let Ok(mut s) = sink.lock() {
                s.push(format!("{name}|{line}"));
            }
        }));
        let hooks = from_settings_with(&settings, &mode).unwrap_or_default();
        let event = BeforeTreeEvent {
            kind: names::BEFORE_TREE,
            session_file: None,
            preparation: musepi_runtime::hooks::events::TreePreparation {
                request: musepi_runtime::TreeRequest::to(None),
                old_leaf_id: None,
                common_ancestor_id: None,
                entries_to_summarize: Vec::new(),
            },
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        let d = rt.block_on(hooks.before_tree(&event, &CancellationToken::new()));
        assert!(d.failed_closed);
        let name = script.display().to_string();
        let seen = seen.lock().map(|s| s.clone()).unwrap_or_default();
        assert_eq!(
            seen,
            [
                format!("{name}|broken"),
                format!(
                    "{name}|hook {name} (session_before_tree) exited with status 3: broken; the operation was cancelled (the hook is fail-closed)"
                ),
            ]
        );
    }
}
