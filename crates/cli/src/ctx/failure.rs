//! Exit codes and error codes: one condition, one exit code, one code.
//!
//! A command that cannot finish returns a [`Failure`]: the error with its
//! sources, the exit code, a stable kebab-case code for `--json` output and,
//! when the condition is about one line of a file, that line. The exit code
//! and the code come from the error itself wherever its type says which
//! condition it is ([`classify`]), so the same condition gets the same exit
//! code in every command; the constructor a call site picks
//! ([`Failure::bad_input`], [`Failure::failed`]) only decides for errors
//! that carry no such type. docs/cli.md lists every code.

use musepi_runtime::branch::BranchError;
use musepi_runtime::branch::NavigateError;
use musepi_runtime::compaction::CompactError;
use musepi_runtime::hooks::SummarizeError;
use musepi_session_model::SessionError;

use crate::hooks::HookSettingsError;
use crate::output::lowercase_start;
use crate::settings::SettingsError;
use crate::trust::TrustError;
use musepi_providers::ProviderError;

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// 0: success.
    Ok = 0,
    /// 1: the operation failed (a provider error, a deadline, a cancelling
    /// hook, a failed write, nothing to do with `--strict`).
    Failed = 1,
    /// 2: bad usage or bad input (bad flags, an unreadable or invalid file,
    /// a torn tail, an unknown entry id, unusable settings).
    BadInput = 2,
    /// 3: the session is busy (another process holds its lock, or it
    /// changed while we worked): nothing was written, retry later.
    Busy = 3,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// A command that could not finish.
#[derive(Debug)]
pub struct Failure {
    /// The exit code.
    pub exit: Exit,
    /// The stable code of the condition, e.g. `torn-tail`.
    pub code: &'static str,
    /// The line of the file the condition is about, when there is one.
    pub line: Option<u64>,
    /// What went wrong, with its sources.
    pub error: anyhow::Error,
}

impl Failure {
    /// A failure with an explicit exit code and code.
    pub fn new(exit: Exit, code: &'static str, error: impl Into<anyhow::Error>) -> Self {
        Self {
            exit,
            code,
            line: None,
            error: error.into(),
        }
    }

    /// Bad input (exit 2), unless the error names another condition.
    pub fn bad_input(error: impl Into<anyhow::Error>) -> Self {
        Self::classified(error.into(), Exit::BadInput)
    }

    /// The operation failed (exit 1), unless the error names another condition.
    pub fn failed(error: impl Into<anyhow::Error>) -> Self {
        Self::classified(error.into(), Exit::Failed)
    }

    /// Bad usage: a flag or argument that cannot work (exit 2, `usage`).
    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self::new(Exit::BadInput, "usage", error)
    }

    /// The output file `-o OUT` exists and `--force`, which replaces it,
    /// was not given (exit 2, `file-exists`). Every command that writes to
    /// `-o OUT` refuses it with this one message, and so does a write that
    /// finds the file created meanwhile.
    pub fn file_exists(path: &std::path::Path) -> Self {
        Self::new(
            Exit::BadInput,
            "file-exists",
            anyhow::anyhow!(
                "{}: the file already exists; pass --force to replace it",
                path.display()
            ),
        )
    }

    /// An entry id the session does not have (exit 2, `unknown-entry`).
    pub fn unknown_entry(id: &str) -> Self {
        Self::new(
            Exit::BadInput,
            "unknown-entry",
            anyhow::anyhow!("unknown entry id `{id}` (see `musepi session tree`)"),
        )
    }

    fn classified(error: anyhow::Error, fallback: Exit) -> Self {
        let condition = classify(&error, fallback);
        Self {
            exit: condition.exit,
            code: condition.code,
            line: condition.line,
            error: with_cancel_reason(error),
        }
    }

    /// The `--json` error document:
    /// `{"error": {"code", "message", "line"?}}`.
    pub fn to_json(&self) -> serde_json::Value {
        let mut message = self.error.to_string();
        for cause in self.error.chain().skip(1) {
            let text = cause.to_string();
            if !message.contains(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
        }
        let message = lowercase_start(&message);
        musepi_protocol::value(&musepi_protocol::cli::ErrorLine {
            error: musepi_protocol::cli::CommandError {
                code: self.code,
                message,
                line: self.line,
            },
        })
    }
}

/// A hook's cancel with who cancelled and why: pi's own words
/// (`Compaction cancelled`, `Navigation cancelled`) followed by the hook
/// and its reason, so the error line and the `--json` message say what
/// the hook said. Any other error is returned as it is.
fn with_cancel_reason(error: anyhow::Error) -> anyhow::Error {
    let by = error.chain().find_map(|e| {
        if let Some(CompactError::CancelledByHook { by: Some(by), .. }) = e.downcast_ref() {
            Some((e.to_string(), by.clone()))
        } else if let Some(NavigateError::CancelledByHook { by: Some(by), .. }) = e.downcast_ref() {
            Some((e.to_string(), by.clone()))
        } else {
            None
        }
    });
    match by {
        Some((what, by)) => {
            let message = match &by.reason {
                Some(reason) => format!("{what} by hook {}: {}", by.hook, reason.trim()),
                None => format!("{what} by hook {}", by.hook),
            };
            error.context(message)
        }
        None => error,
    }
}

/// What a command returns.
pub type CmdResult = Result<Exit, Failure>;

/// Turning errors into [`Failure`]s.
pub trait OrExit<T> {
    /// Fails as bad input (exit 2) unless the error names another condition.
    fn or_bad_input(self) -> Result<T, Failure>;
    /// Fails (exit 1) unless the error names another condition.
    fn or_failed(self) -> Result<T, Failure>;
}

impl<T, E: Into<anyhow::Error>> OrExit<T> for Result<T, E> {
    fn or_bad_input(self) -> Result<T, Failure> {
        self.map_err(Failure::bad_input)
    }

    fn or_failed(self) -> Result<T, Failure> {
        self.map_err(Failure::failed)
    }
}

/// A condition: its exit code, its code and the line it is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Condition {
    /// The exit code.
    pub exit: Exit,
    /// The stable code.
    pub code: &'static str,
    /// The line of the file, when the condition is about one.
    pub line: Option<u64>,
}

const fn condition(exit: Exit, code: &'static str) -> Condition {
    Condition {
        exit,
        code,
        line: None,
    }
}

/// The condition `error` reports: the first error of its chain whose type
/// names one, else `fallback` with the generic `bad-input` or `failed`.
pub fn classify(error: &anyhow::Error, fallback: Exit) -> Condition {
    error
        .chain()
        .find_map(|e| {
            if let Some(e) = e.downcast_ref::<SessionError>() {
                Some(session(e, fallback))
            } else if let Some(e) = e.downcast_ref::<CompactError>() {
                Some(compact(e, fallback))
            } else if let Some(e) = e.downcast_ref::<NavigateError>() {
                Some(navigate(e, fallback))
            } else if let Some(e) = e.downcast_ref::<BranchError>() {
                Some(branch(e, fallback))
            } else if let Some(e) = e.downcast_ref::<SummarizeError>() {
                Some(summarize(e))
            } else if e.downcast_ref::<std::io::Error>().is_some() {
                Some(io(fallback))
            } else if let Some(e) = e.downcast_ref::<ProviderError>() {
                Some(provider(e))
            } else if e.downcast_ref::<SettingsError>().is_some()
                || e.downcast_ref::<HookSettingsError>().is_some()
            {
                Some(condition(Exit::BadInput, "bad-settings"))
            } else {
                e.downcast_ref::<TrustError>().map(trust)
            }
        })
        .unwrap_or(match fallback {
            Exit::BadInput => condition(Exit::BadInput, "bad-input"),
            Exit::Busy => condition(Exit::Busy, "busy"),
            Exit::Ok | Exit::Failed => condition(Exit::Failed, "failed"),
        })
}

/// The session model says which of its errors are busy and which are bad
/// input; the command line words two codes its own way.
fn session(e: &SessionError, fallback: Exit) -> Condition {
    let exit = if e.is_busy() {
        Exit::Busy
    } else if let SessionError::Io { .. } = e {
        return io(fallback);
    } else if e.is_bad_input() {
        Exit::BadInput
    } else if matches!(e, SessionError::WriteFailed { .. } | SessionError::NoOrigin) {
        Exit::Failed
    } else {
        // A condition this build does not know yet keeps its own code.
        fallback
    };
    let code = match e {
        SessionError::AlreadyExists { .. } => "file-exists",
        SessionError::NoOrigin => "failed",
        _ => e.code(),
    };
    let line = match e {
        // Loading names the line even when it is 0 (no line is valid JSON).
        SessionError::NotASession { line, .. } | SessionError::TornTail { line, .. } => Some(*line),
        _ => e.line(),
    };
    Condition {
        line,
        ..condition(exit, code)
    }
}

/// A session error exits by its own condition; an I/O error without one
/// is a file that could not be read (session-model reports failed writes
/// as [`SessionError::WriteFailed`]).
impl From<SessionError> for Failure {
    fn from(e: SessionError) -> Self {
        match e {
            SessionError::AlreadyExists { path } => Self::file_exists(&path),
            e => Self::bad_input(e),
        }
    }
}

/// Reading a file and writing one fail the same way; the call site knows
/// which it was.
fn io(fallback: Exit) -> Condition {
    match fallback {
        Exit::BadInput => condition(Exit::BadInput, "unreadable-file"),
        _ => condition(Exit::Failed, "write-failed"),
    }
}

fn compact(e: &CompactError, fallback: Exit) -> Condition {
    match e {
        CompactError::Nothing(_) => condition(Exit::Failed, "nothing-to-compact"),
        CompactError::CancelledByHook { .. } => condition(Exit::Failed, "cancelled"),
        CompactError::Aborted => condition(Exit::Failed, "interrupted"),
        CompactError::NoModel => condition(Exit::BadInput, "no-model"),
        CompactError::Summarize { error, .. } => summarize(error),
        CompactError::Session(e) => session(e, fallback),
        CompactError::Snapcompact(_) => condition(Exit::Failed, "snapcompact-failed"),
        _ => condition(Exit::Failed, "failed"),
    }
}

fn navigate(e: &NavigateError, fallback: Exit) -> Condition {
    match e {
        NavigateError::NotFound(_) => condition(Exit::BadInput, "unknown-entry"),
        NavigateError::NoModel => condition(Exit::BadInput, "no-model"),
        NavigateError::CancelledByHook { .. } => condition(Exit::Failed, "cancelled"),
        NavigateError::Aborted => condition(Exit::Failed, "interrupted"),
        NavigateError::Summarize(e) => summarize(e),
        NavigateError::Branch(e) => branch(e, fallback),
        NavigateError::Session(e) => session(e, fallback),
        _ => condition(Exit::Failed, "failed"),
    }
}

fn branch(e: &BranchError, fallback: Exit) -> Condition {
    match e {
        BranchError::EntryNotFound { .. } | BranchError::PositionOutOfRange { .. } => {
            condition(Exit::BadInput, "unknown-entry")
        }
        BranchError::Session(e) => session(e, fallback),
        _ => condition(Exit::Failed, "failed"),
    }
}

fn summarize(e: &SummarizeError) -> Condition {
    match e {
        SummarizeError::Cancelled => condition(Exit::Failed, "interrupted"),
        SummarizeError::ContextOverflow { .. } => condition(Exit::Failed, "context-overflow"),
        SummarizeError::Deadline { .. } => condition(Exit::Failed, "deadline-exceeded"),
        SummarizeError::TooLarge { .. } | SummarizeError::SummaryTooLong { .. } => {
            condition(Exit::Failed, "response-too-large")
        }
        SummarizeError::Redirected { .. } => condition(Exit::Failed, "redirect-refused"),
        SummarizeError::Provider { .. }
        | SummarizeError::EmptyResponse { .. }
        | SummarizeError::Refusal { .. }
        | SummarizeError::MalformedResponse { .. }
        | SummarizeError::Transport { .. }
        | SummarizeError::Remote { .. } => condition(Exit::Failed, "provider-failed"),
        _ => condition(Exit::Failed, "failed"),
    }
}

/// A provider error names its own code and whether it is bad input.
fn provider(e: &ProviderError) -> Condition {
    let exit = if e.is_bad_input() {
        Exit::BadInput
    } else {
        Exit::Failed
    };
    condition(exit, e.code())
}

fn trust(e: &TrustError) -> Condition {
    match e {
        TrustError::NoHome => condition(Exit::BadInput, "no-home"),
        TrustError::Read { .. } => condition(Exit::BadInput, "bad-trust-store"),
        TrustError::Write { .. } => condition(Exit::Failed, "write-failed"),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use musepi_session_model::LiveSign;

    use super::*;

    fn code_of(e: impl Into<anyhow::Error>, fallback: Exit) -> (Exit, &'static str, Option<u64>) {
        let c = classify(&e.into(), fallback);
        (c.exit, c.code, c.line)
    }

    #[test]
    fn a_condition_has_one_exit_code_whatever_the_call_site_says() {
        let changed = || SessionError::ChangedOnDisk {
            path: PathBuf::from("s.jsonl"),
            what: "it was replaced".into(),
        };
        assert_eq!(
            code_of(changed(), Exit::BadInput),
            (Exit::Busy, "changed-on-disk", None)
        );
        assert_eq!(
            code_of(changed(), Exit::Failed),
            (Exit::Busy, "changed-on-disk", None)
        );
        let torn = || SessionError::TornTail {
            path: PathBuf::from("s.jsonl"),
            line: 7,
        };
        assert_eq!(
            code_of(torn(), Exit::Failed),
            (Exit::BadInput, "torn-tail", Some(7))
        );
        assert_eq!(
            code_of(CompactError::Session(torn()), Exit::Failed),
            (Exit::BadInput, "torn-tail", Some(7))
        );
    }

    #[test]
    fn provider_errors_are_bad_input_with_their_own_codes() {
        let name = || "p".to_owned();
        let cases = [
            (
                ProviderError::NoProviderSelected { known: Vec::new() },
                "no-model",
            ),
            (
                ProviderError::UnknownProvider {
                    name: name(),
                    known: Vec::new(),
                },
                "bad-provider",
            ),
            (ProviderError::MissingKind { name: name() }, "bad-provider"),
            (
                ProviderError::MissingBaseUrl { name: name() },
                "bad-provider",
            ),
            (
                ProviderError::InvalidUrl {
                    name: name(),
                    url: "ftp://x".into(),
                    reason: "not http(s)".into(),
                },
                "bad-provider",
            ),
            (ProviderError::MissingModel { name: name() }, "bad-provider"),
            (
                ProviderError::MissingApiKey {
                    name: name(),
                    variables: vec!["OPENAI_API_KEY".into()],
                },
                "missing-api-key",
            ),
            (
                ProviderError::MissingKeyVariable {
                    name: name(),
                    variable: "MY_KEY".into(),
                },
                "missing-api-key",
            ),
            (
                ProviderError::InvalidKey {
                    variable: "MY_KEY".into(),
                    what: "a line break",
                    position: 3,
                },
                "invalid-api-key",
            ),
        ];
        for (error, code) in cases {
            let what = format!("{error:?}");
            assert_eq!(
                code_of(error, Exit::Failed),
                (Exit::BadInput, code, None),
                "{what}"
            );
        }
    }

    #[test]
    fn every_session_error_has_its_exit_code_and_line() {
        let path = || PathBuf::from("s.jsonl");
        let io = || std::io::Error::other("disk on fire");
        let cases = [
            (
                SessionError::EntryNotFound("e1".into()),
                (Exit::BadInput, "unknown-entry", None),
            ),
            (
                SessionError::Empty { path: path() },
                (Exit::BadInput, "empty-file", None),
            ),
            (
                SessionError::NotASession {
                    path: path(),
                    line: 0,
                    reason: "no JSON".into(),
                },
                (Exit::BadInput, "not-a-session", Some(0)),
            ),
            (
                SessionError::UnknownVersion {
                    path: path(),
                    line: 1,
                    found: "9".into(),
                },
                (Exit::BadInput, "unknown-version", Some(1)),
            ),
            (
                SessionError::Blocked {
                    path: path(),
                    line: 4,
                    problem: "torn".into(),
                },
                (Exit::BadInput, "problems-block-rewrite", Some(4)),
            ),
            (
                SessionError::Live {
                    path: path(),
                    sign: LiveSign::Locked,
                },
                (Exit::Busy, "session-live", None),
            ),
            (
                SessionError::AlreadyExists { path: path() },
                (Exit::BadInput, "file-exists", None),
            ),
            (
                SessionError::WriteFailed {
                    path: path(),
                    source: io(),
                },
                (Exit::Failed, "write-failed", None),
            ),
            (SessionError::NoOrigin, (Exit::Failed, "failed", None)),
        ];
        for (error, expected) in cases {
            let what = format!("{error:?}");
            assert_eq!(code_of(error, Exit::Failed), expected, "{what}");
        }
    }

    #[test]
    fn an_existing_output_is_one_message_whether_refused_before_or_at_the_write() {
        let path = PathBuf::from("out.jsonl");
        let before = Failure::file_exists(&path);
        let at_write = Failure::from(SessionError::AlreadyExists { path });
        assert_eq!(before.to_json(), at_write.to_json());
        assert_eq!(
            (at_write.exit, at_write.code),
            (Exit::BadInput, "file-exists")
        );
        assert_eq!(
            at_write.to_json()["error"]["message"],
            "out.jsonl: the file already exists; pass --force to replace it"
        );
    }

    #[test]
    fn wrapped_errors_are_found_in_the_chain() {
        let inner = anyhow::Error::new(SessionError::Empty {
            path: PathBuf::from("e.jsonl"),
        })
        .context("while compacting");
        assert_eq!(
            code_of(inner, Exit::Failed),
            (Exit::BadInput, "empty-file", None)
        );
        assert_eq!(
            code_of(anyhow::anyhow!("plain"), Exit::Failed),
            (Exit::Failed, "failed", None)
        );
        assert_eq!(
            code_of(anyhow::anyhow!("plain"), Exit::BadInput),
            (Exit::BadInput, "bad-input", None)
        );
    }

    #[test]
    fn json_errors_carry_code_message_and_line() {
        let f = Failure::bad_input(SessionError::NotASession {
            path: PathBuf::from("x.jsonl"),
            line: 1,
            reason: "no header".into(),
        });
        assert_eq!(
            f.to_json(),
            serde_json::json!({"error": {
                "code": "not-a-session",
                "message": "x.jsonl:1: not a pi session file: no header",
                "line": 1,
            }})
        );
        let f = Failure::usage(anyhow::anyhow!("--strategy x: expected llm"));
        assert_eq!(
            f.to_json(),
            serde_json::json!({"error": {"code": "usage", "message": "--strategy x: expected llm"}})
        );
    }

    #[test]
    fn a_cause_the_message_already_holds_is_not_repeated() {
        let error = SessionError::WriteFailed {
            path: "d/x.jsonl".into(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        let doc = Failure::from(error).to_json();
        let message = doc["error"]["message"].as_str().unwrap();
        assert_eq!(message.matches("not found").count(), 1, "{message}");
    }
}
