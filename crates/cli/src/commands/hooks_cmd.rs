//! `musepi hooks test EVENT [--config FILE]`: runs the configured hooks of
//! one event with a sample payload and shows what each returned.
//!
//! The payloads ([`sample`]) are the ones docs/hooks.md shows: a short
//! session in which the user asked for a fix, the assistant read and edited
//! a file, and the tests were run. Nothing is read from or written to a
//! session.

use std::fmt::Write as _;
use std::time::Instant;

use musepi_protocol::setup::{HookRunDoc, HooksTestDoc};
use musepi_runtime::hooks::events::names;
use musepi_runtime::hooks::{HookError, HookWarning, ProcessHook, Reply, StderrMode};
use tokio_util::sync::CancellationToken;

use crate::cli::{HooksCommand, HooksTestArgs};
use crate::ctx::{CmdResult, Ctx, Exit, Failure, OrExit};
use crate::output::{Color, counted, escape_controls, escaped_lines, print_json, print_text};
use crate::settings::SettingsSources;

mod sample;

pub use sample::{SAMPLE_SESSION_FILE, sample};

/// Runs `musepi hooks …`.
pub fn run(command: &HooksCommand, ctx: &Ctx) -> CmdResult {
    match command {
        HooksCommand::Test(args) => test(args, ctx),
    }
}

/// What one hook did with the sample.
struct Report {
    hook: ProcessHook,
    exit_code: Option<i32>,
    duration_ms: u128,
    outcome: Result<Reply, HookError>,
}

impl Report {
    fn outcome_name(&self) -> &'static str {
        match &self.outcome {
            Ok(Reply::Empty) => "empty",
            Ok(Reply::Answer(_)) => "answer",
            Ok(Reply::Cancel { .. }) => "cancel",
            Err(_) => "failed",
        }
    }

    fn warning(&self) -> Option<String> {
        use musepi_runtime::hooks::Hook as _;
        self.outcome.as_ref().err().map(|e| {
            HookWarning {
                hook: self.hook.name(),
                event: self.hook.event(),
                error: e.clone(),
                cancelled: self.hook.fail_closed(),
            }
            .to_string()
        })
    }

    fn to_doc(&self) -> HookRunDoc {
        use musepi_runtime::hooks::Hook as _;
        let mut doc = HookRunDoc {
            hook: self.hook.name(),
            command: self.hook.command().to_vec(),
            exit_code: self.exit_code,
            duration_ms: u64::try_from(self.duration_ms).unwrap_or(u64::MAX),
            outcome: self.outcome_name(),
            fail_closed: self.hook.fail_closed(),
            answer: None,
            reason: None,
            error: None,
            warning: None,
        };
        match &self.outcome {
            Ok(Reply::Answer(a)) => doc.answer = Some(a.clone()),
            Ok(Reply::Cancel { reason }) => doc.reason = Some(reason.clone()),
            Ok(Reply::Empty) => {}
            Err(e) => {
                doc.error = Some(e.to_string());
                doc.warning = self.warning();
            }
        }
        doc
    }
}

fn test(args: &HooksTestArgs, ctx: &Ctx) -> CmdResult {
    let Some(event) = names::ALL.into_iter().find(|n| *n == args.event) else {
        return Err(Failure::usage(anyhow::anyhow!(
            "unknown hook event `{}`: expected one of {}",
            args.event,
            names::ALL.join(", ")
        )));
    };
    let settings = match &args.config {
        Some(file) => crate::commands::runtime::load(
            &SettingsSources::default().with_explicit(file.clone()),
            ctx,
        )?,
        None => crate::commands::runtime::settings(ctx),
    };
    let mode = if ctx.quiet() {
        StderrMode::Capture
    } else {
        StderrMode::Forward
    };
    let hooks: Vec<ProcessHook> = crate::hooks::process_hooks(&settings, &mode)
        .or_bad_input()?
        .into_iter()
        .filter(|h| h.event() == event)
        .collect();
    let payload = sample(event);
    let bytes = musepi_runtime::hooks::payload(&payload).or_failed()?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .or_failed()?;
    let reports: Vec<Report> = rt.block_on(async {
        let cancel = CancellationToken::new();
        let fire = cancel.clone();
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                fire.cancel();
            }
        });
        let mut reports = Vec::new();
        for hook in hooks {
            let started = Instant::now();
            let run = hook.run(&bytes, Some(SAMPLE_SESSION_FILE), &cancel).await;
            let (exit_code, outcome) = match run {
                Ok(inv) => (Some(inv.status), hook.interpret(&inv)),
                Err(e) => (None, Err(e)),
            };
            reports.push(Report {
                hook,
                exit_code,
                duration_ms: started.elapsed().as_millis(),
                outcome,
            });
        }
        reports
    });
    let failed = reports
        .iter()
        .any(|r| matches!(r.outcome, Err(_) | Ok(Reply::Cancel { .. })));
    let exit = if failed { Exit::Failed } else { Exit::Ok };
    if ctx.json() {
        print_json(&HooksTestDoc {
            event,
            payload,
            hooks: reports.iter().map(Report::to_doc).collect(),
        })
        .or_failed()?;
        return Ok(exit);
    }
    print_text(&render(event, &reports, ctx)).or_failed()?;
    Ok(exit)
}

fn render(event: &str, reports: &[Report], ctx: &Ctx) -> String {
    use musepi_runtime::hooks::Hook as _;
    let st = ctx.style;
    if reports.is_empty() {
        return format!(
            "no hooks configured for {event} (settings key hooks.{event}; see docs/hooks.md)\n"
        );
    }
    let mut out = format!(
        "{event}: {} run with the sample payload\n",
        counted(reports.len(), "hook", "hooks")
    );
    for (i, r) in reports.iter().enumerate() {
        let status = r
            .exit_code
            .map_or_else(|| "no exit status".to_owned(), |c| format!("exit {c}"));
        let verdict = match &r.outcome {
            Ok(Reply::Empty) => st.paint(Color::Green, "ok, no answer"),
            Ok(Reply::Answer(_)) => st.paint(Color::Green, "ok, answered"),
            Ok(Reply::Cancel { .. }) => st.paint(Color::Yellow, "cancels the operation"),
            Err(_) => st.paint(Color::Red, "failed"),
        };
        let _ = writeln!(
            out,
            "\n{}. {}  {status}  {} ms  {verdict}",
            i + 1,
            escape_controls(&r.hook.name()),
            r.duration_ms
        );
        match &r.outcome {
            // What the settings file and the hook wrote is escaped: JSON
            // escapes the C0 controls of an answer, not DEL, C1 or a
            // bidirectional control.
            Ok(Reply::Answer(a)) => {
                let text = serde_json::to_string_pretty(a).unwrap_or_default();
                for l in escaped_lines(&text) {
                    let _ = writeln!(out, "   {l}");
                }
            }
            Ok(Reply::Cancel { reason }) if !reason.is_empty() => {
                for l in escaped_lines(&format!("reason: {reason}")) {
                    let _ = writeln!(out, "   {l}");
                }
            }
            Ok(_) => {}
            Err(_) => {
                for l in escaped_lines(&r.warning().unwrap_or_default()) {
                    let _ = writeln!(out, "   {l}");
                }
                if !r.hook.fail_closed() {
                    let _ = writeln!(
                        out,
                        "   (in a real run: reported, its answer ignored, the operation goes on)"
                    );
                }
            }
        }
    }
    out
}
