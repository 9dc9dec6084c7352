//! The per-turn maintenance of a live agent loop (`musepi serve`): the
//! runtime opened over a copy of the session, then turns of a user message,
//! an assistant message with its usage (well under the threshold, so no
//! compaction is due), `afterAssistant` and `beforeRequest`, each timed.
//!
//! The copy lives next to the session (under `<target>/bench-data`) and is
//! removed at the end; appends are durable (fsynced), as in `musepi serve`.
//!
//! The append's baseline is measured in the same turns: the bytes musepi
//! wrote for the assistant's entry, written and `fdatasync`ed to another
//! file in the same folder kept open (the least a durable append costs on
//! this disk). The detail reports the append as that floor plus musepi's
//! overhead, and the maintenance (`afterAssistant` and `beforeRequest`)
//! alone against its 1 ms target. After the turns it times what a
//! compaction computes when it is planned, which no turn computes: the
//! prune candidates and the preparation (cut, regions, file operations),
//! then the cut and the file operations again, each alone; then the
//! `context` and `plan` methods of a `musepi serve` process at the leaf the
//! turns left, each beside its own baseline (`serve_methods.rs`).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::Path;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use musepi_runtime::{Maintenance, MaintenanceSettings, Outcome};
use musepi_session_model::{
    AgentMessage, AssistantMessage, Content, EntryBody, Journal, SequentialIds, Session,
    StopReason, Usage, UserMessage,
};
use serde_json::{Value, json};

use crate::BoxError;
use crate::serve_methods::median;

/// Turns measured.
const TURNS: usize = 40;

/// The target of `afterAssistant` and `beforeRequest` together, per turn.
const MAINTENANCE_TARGET_MS: f64 = 1.0;

/// Runs a future that must not wait: with no compaction due, the natural
/// points complete without awaiting anything.
fn now<F: Future>(future: F) -> Result<F::Output, BoxError> {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(out) => Ok(out),
        Poll::Pending => Err("a natural point waited, so a compaction ran".into()),
    }
}

/// `open` of the runtime, then [`TURNS`] turns; times in milliseconds.
pub(crate) fn serve(path: &Path) -> Result<Value, BoxError> {
    let copy = path.with_extension("serve-copy.jsonl");
    let floor = path.with_extension("serve-floor.jsonl");
    std::fs::copy(path, &copy)?;
    let result = turns(&copy, &floor);
    std::fs::remove_file(&copy)?;
    let _ = std::fs::remove_file(&floor);
    result
}

/// The least a durable append costs: `bytes` written to a file kept open
/// and `fdatasync`ed, as the journal syncs its appends; milliseconds.
fn bare_append(file: &mut File, bytes: &[u8]) -> Result<f64, BoxError> {
    let t = Instant::now();
    file.write_all(bytes)?;
    file.sync_data()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

fn turns(copy: &Path, floor_path: &Path) -> Result<Value, BoxError> {
    let mut floor = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(floor_path)?;
    let start = Instant::now();
    let mut journal = Journal::open(copy, &mut SequentialIds::new())?;
    // The generated file ends on a compaction: work at its parent, where
    // the whole history since the previous compaction is in the context.
    let session = journal.session();
    if let Some(leaf) = crate::snap::working_leaf(session)
        && Some(leaf) != session.leaf_index()
    {
        let id = session.entries()[leaf].id.to_string();
        journal.set_leaf(&id)?;
    }
    let mut m = Maintenance::new(journal, MaintenanceSettings::default());
    let open_ms = start.elapsed().as_secs_f64() * 1e3;
    // The clock of the session's own turns: after its last entry.
    let mut clock = 1_900_000_000_000f64;
    let [mut user, mut assistant, mut after, mut before, mut turn]: [Vec<f64>; 5] =
        Default::default();
    let [mut bare, mut overhead, mut maintenance]: [Vec<f64>; 3] = Default::default();
    for i in 0..TURNS {
        clock += 1000.0;
        let t = Instant::now();
        m.append(EntryBody::Message(AgentMessage::User(UserMessage {
            content: Content::text(format!("turn {i}: run the tests again")),
            timestamp: Some(clock),
            ..UserMessage::default()
        })))?;
        let user_ms = t.elapsed().as_secs_f64() * 1e3;
        clock += 1000.0;
        let t = Instant::now();
        m.append(EntryBody::Message(AgentMessage::Assistant(
            AssistantMessage {
                content: Content::text(format!("All tests pass (turn {i}).")),
                provider: Some("anthropic".into()),
                model: Some("claude-sonnet-4-5".into()),
                usage: Some(Usage {
                    input: 20_000.0,
                    output: 200.0,
                    total_tokens: 20_200.0,
                    ..Usage::default()
                }),
                stop_reason: Some(StopReason::Stop),
                timestamp: Some(clock),
                ..AssistantMessage::default()
            },
        )))?;
        let append_ms = t.elapsed().as_secs_f64() * 1e3;
        let session = m.journal().session();
        let mut line = session.raw_line(session.len() - 1)?.into_bytes();
        line.push(b'\n');
        let bare_ms = bare_append(&mut floor, &line)?;
        let t = Instant::now();
        let d = now(m.after_assistant(None))??;
        let after_ms = t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let d2 = now(m.before_request(None))?;
        let before_ms = t.elapsed().as_secs_f64() * 1e3;
        if d.outcome != Outcome::Nothing || d2.outcome != Outcome::Nothing {
            return Err(format!(
                "turn {i}: maintenance acted ({:?}, {:?})",
                d.outcome, d2.outcome
            )
            .into());
        }
        user.push(user_ms);
        assistant.push(append_ms);
        after.push(after_ms);
        before.push(before_ms);
        turn.push(append_ms + after_ms + before_ms);
        bare.push(bare_ms);
        overhead.push(append_ms - bare_ms);
        maintenance.push(after_ms + before_ms);
    }
    let plan = plan_once(m.journal().session());
    drop(m);
    let served = crate::serve_methods::context_and_plan(copy)?;
    let (first, last) = (turn[..10].to_vec(), turn[TURNS - 10..].to_vec());
    let maintenance_ms = median(maintenance);
    Ok(json!({
        "openMs": open_ms,
        "turns": TURNS,
        "appendMs": median(assistant),
        "appendFloorMs": median(bare),
        "appendOverheadMs": median(overhead),
        "maintenanceMs": maintenance_ms,
        "maintenanceTargetMs": MAINTENANCE_TARGET_MS,
        "maintenanceMet": maintenance_ms <= MAINTENANCE_TARGET_MS,
        "planPruneMs": plan.prune_ms,
        "planPrepareMs": plan.prepare_ms,
        "planCutMs": plan.cut_ms,
        "planFileOpsMs": plan.file_ops_ms,
        "planMessagesToSummarize": plan.summarize,
        "serveStatus": served.status.to_json(),
        "serveContext": served.context.to_json(),
        "servePlan": served.plan.to_json(),
        "appendUserMs": median(user),
        "afterAssistantMs": median(after),
        "beforeRequestMs": median(before),
        "turnMs": median(turn.clone()),
        "turnMaxMs": turn.iter().copied().fold(0.0, f64::max),
        "firstTenTurnsMs": median(first),
        "lastTenTurnsMs": median(last),
    }))
}

/// What planning a compaction at the leaf computes, timed once: the prune
/// candidates, then the preparation (cut candidates, regions, file
/// operations), then two of its parts again alone; and the messages it
/// would summarize.
fn plan_once(session: &Session) -> Plan {
    let t = Instant::now();
    let prune = musepi_compaction::plan_prune(
        session,
        session.leaf_index(),
        &musepi_compaction::PruneConfig::default(),
    );
    let prune_ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(prune.candidates.len());
    let t = Instant::now();
    let prep = musepi_compaction::prepare(
        session,
        session.leaf_index(),
        &musepi_compaction::CompactionSettings::default(),
    );
    let prepare_ms = t.elapsed().as_secs_f64() * 1e3;
    let (cut_ms, file_ops_ms, summarize) = prep.map_or((0.0, 0.0, 0), |p| {
        let (cut_ms, file_ops_ms) = parts_of(session, &p);
        (cut_ms, file_ops_ms, p.messages_to_summarize.len())
    });
    Plan {
        prune_ms,
        prepare_ms,
        cut_ms,
        file_ops_ms,
        summarize,
    }
}

/// Two parts of a preparation, each timed again on its own: the cut over
/// the path it read, and the file operations read from the summarized
/// messages (the pass the preparation makes as it collects them).
fn parts_of(session: &Session, p: &musepi_compaction::Preparation<'_>) -> (f64, f64) {
    let local = p.boundary_start - p.path_start();
    let t = Instant::now();
    let cut = musepi_compaction::find_cut_point(
        session.entries(),
        p.path_read(),
        local,
        p.path_read().len(),
        p.keep_recent_tokens,
    );
    let cut_ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(cut);
    let t = Instant::now();
    let mut ops = musepi_context_builder::FileOps::default();
    for m in p
        .messages_to_summarize
        .iter()
        .chain(&p.turn_prefix_messages)
    {
        ops.add_message(&m.message);
    }
    let file_ops_ms = t.elapsed().as_secs_f64() * 1e3;
    std::hint::black_box(ops);
    (cut_ms, file_ops_ms)
}

/// What [`plan_once`] measured, in milliseconds.
struct Plan {
    prune_ms: f64,
    prepare_ms: f64,
    cut_ms: f64,
    file_ops_ms: f64,
    summarize: usize,
}
