//! The model calls of an LLM summary: the remote compaction first where the
//! strategy asks for it, then the history and turn-prefix summaries (the
//! history window by window when it is too large for the summarizer) and
//! the short summary.

use musepi_compaction::{
    CompactionResult, DEFAULT_SUMMARIZER_WINDOW, HistoryUnits, SummaryPlan, input_budget_tokens,
    min_window_tokens, sum_usage, window_from_overflow_message,
};
use musepi_context_builder::{RequestPurpose, SummaryRequest, SummaryResponse};
use musepi_session_model::Usage;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::route::Route;
use super::{CompactError, CompactOptions};
use crate::summarizer::{SummarizeError, Summarizer, truncation_warning};

/// The finished result of the route the pipeline chose, with the requests
/// it sent; writes nothing.
pub(super) async fn finish(
    route: Route,
    options: &CompactOptions<'_>,
    cancel: &CancellationToken,
    warnings: &mut Vec<String>,
) -> Result<(CompactionResult, Vec<RequestPurpose>), CompactError> {
    match route {
        Route::Supplied(result) => Ok((*result, Vec::new())),
        Route::Summarize {
            plan,
            preserve,
            remote_input,
        } => {
            let summarizer = options.summarizer.ok_or(CompactError::NoModel)?;
            let mut preserve = preserve;
            let mut requests = Vec::new();
            let mut replayed = false;
            if let (Some(remote), Some(input)) = (options.remote, &remote_input) {
                match remote.compact(input, cancel.clone()).await {
                    Ok(payload) => {
                        replayed = true;
                        let mut map = match preserve.take() {
                            Some(Value::Object(m)) => m,
                            _ => serde_json::Map::new(),
                        };
                        map.insert("openaiRemoteCompaction".into(), payload);
                        preserve = Some(Value::Object(map));
                    }
                    Err(SummarizeError::Cancelled) => return Err(CompactError::Aborted),
                    Err(e) => warnings.push(format!(
                        "remote compaction failed, writing a local summary instead: {e}"
                    )),
                }
            }
            let (merged, short, usage) =
                summarize(&plan, summarizer, cancel, &mut requests, warnings).await?;
            let mut result = plan.finish(&merged, short, usage, preserve);
            if replayed {
                result.method = Some("remote".to_owned());
            }
            Ok((result, requests))
        }
    }
}

async fn call(
    summarizer: &dyn Summarizer,
    request: &SummaryRequest,
    cancel: &CancellationToken,
) -> Result<SummaryResponse, CompactError> {
    match summarizer.summarize(request, cancel.clone()).await {
        Ok(r) => Ok(r),
        Err(SummarizeError::Cancelled) => Err(CompactError::Aborted),
        Err(error) => Err(CompactError::Summarize {
            purpose: request.purpose,
            error,
        }),
    }
}

/// The history summary: one request, or, when the history is too large for
/// the summarizer (known from its context window, or learnt from an
/// overflow rejection), windows folded one into the next (docs/design.md, "Summaries").
/// Returns the answer and how many requests were sent.
async fn history_summary(
    plan: &SummaryPlan,
    summarizer: &dyn Summarizer,
    cancel: &CancellationToken,
) -> Result<(Option<SummaryResponse>, usize), CompactError> {
    let Some(request) = &plan.history else {
        return Ok((None, 0));
    };
    let units = &plan.history_units;
    let window = summarizer.context_window();
    let min = min_window_tokens(window.unwrap_or(DEFAULT_SUMMARIZER_WINDOW));
    if let Some(budget) = known_budget(units, window) {
        // Announced with the other requests.
        return windowed(units, summarizer, cancel, budget, min, false)
            .await
            .map(|(r, n)| (Some(r), n));
    }
    match call(summarizer, request, cancel).await {
        Ok(r) => Ok((Some(r), 1)),
        Err(CompactError::Summarize { error, .. }) if error.is_context_overflow() => {
            // The rejection often states the model's window; else halve.
            let (budget, min) = match overflow_window(&error) {
                Some(w) => (
                    input_budget_tokens(w, units.max_tokens()),
                    min_window_tokens(w),
                ),
                None => (units.tokens() / 2, min),
            };
            let (r, n) = windowed(units, summarizer, cancel, budget, min, true).await?;
            Ok((Some(r), n + 1))
        }
        Err(e) => Err(e),
    }
}

/// The window budget when the summarizer's known window is too small for
/// the whole history in one request.
fn known_budget(units: &HistoryUnits, window: Option<u64>) -> Option<u64> {
    let budget = input_budget_tokens(window?, units.max_tokens());
    (units.tokens() > budget).then_some(budget)
}

/// The requests a summary plan sends when none is rejected: the history
/// (one, or one per window), the turn prefix, the short summary when the
/// plan asks for one.
fn expected_requests(plan: &SummaryPlan, window: Option<u64>) -> usize {
    let units = &plan.history_units;
    let history = match (&plan.history, known_budget(units, window)) {
        (None, _) => 0,
        (Some(_), None) => 1,
        (Some(_), Some(budget)) => {
            let min = min_window_tokens(window.unwrap_or(DEFAULT_SUMMARIZER_WINDOW));
            units.window_count(0, budget.max(min))
        }
    };
    history + usize::from(plan.turn_prefix.is_some()) + usize::from(plan.short_summary)
}

fn overflow_window(error: &SummarizeError) -> Option<u64> {
    match error {
        SummarizeError::ContextOverflow { message, .. } => window_from_overflow_message(message),
        _ => None,
    }
}

/// Summarizes the history window by window, halving the window after an
/// overflow rejection, down to `min_tokens`. The windows are announced to
/// the summarizer unless the caller did (`announce`), and so are those a
/// halving adds.
async fn windowed(
    units: &HistoryUnits,
    summarizer: &dyn Summarizer,
    cancel: &CancellationToken,
    mut budget: u64,
    min_tokens: u64,
    announce: bool,
) -> Result<(SummaryResponse, usize), CompactError> {
    let mut summary = units.previous_summary().map(str::to_owned);
    let mut usages = Vec::new();
    let mut truncated = false;
    let mut calls = 0;
    let mut start = 0;
    budget = budget.max(min_tokens);
    if announce {
        summarizer.expect_requests(units.window_count(0, budget));
    }
    while start < units.len() {
        let window = units.next_window(start, budget);
        let request = units.window_request(window.clone(), summary.as_deref(), budget);
        calls += 1;
        match call(summarizer, &request, cancel).await {
            Ok(r) => {
                summary = Some(r.text);
                usages.extend(r.usage);
                truncated |= r.truncated;
                start = window.end;
            }
            Err(CompactError::Summarize { error, purpose }) if error.is_context_overflow() => {
                if budget <= min_tokens {
                    return Err(CompactError::Summarize { error, purpose });
                }
                let expected = units.window_count(start, budget);
                budget = (budget / 2).max(min_tokens);
                // The rejected window was sent; its smaller windows follow.
                summarizer.expect_requests(
                    (units.window_count(start, budget) + 1).saturating_sub(expected),
                );
            }
            Err(e) => return Err(e),
        }
    }
    let text = summary.unwrap_or_default();
    Ok((
        SummaryResponse {
            text,
            usage: sum_usage(usages.iter()),
            truncated,
        },
        calls,
    ))
}

/// The history and turn-prefix calls run concurrently; the short summary
/// follows (it reads the merged summary). A failed short summary is a
/// warning, not a failure: the compaction is still good.
async fn summarize(
    plan: &SummaryPlan,
    summarizer: &dyn Summarizer,
    cancel: &CancellationToken,
    requests: &mut Vec<RequestPurpose>,
    warnings: &mut Vec<String>,
) -> Result<(String, Option<String>, Option<Usage>), CompactError> {
    summarizer.expect_requests(expected_requests(plan, summarizer.context_window()));
    let history = history_summary(plan, summarizer, cancel);
    let prefix = async {
        match &plan.turn_prefix {
            Some(r) => call(summarizer, r, cancel).await.map(Some),
            None => Ok(None),
        }
    };
    let (history, prefix) = tokio::join!(history, prefix);
    let ((history, history_calls), prefix) = (history?, prefix?);
    requests.extend(std::iter::repeat_n(RequestPurpose::History, history_calls));
    if plan.turn_prefix.is_some() {
        requests.push(RequestPurpose::TurnPrefix);
    }
    let merged = plan.merge(
        history.as_ref().map(|h| h.text.as_str()),
        prefix.as_ref().map(|p| p.text.as_str()),
    );
    let short = if plan.short_summary {
        let short_request = plan.short_request(&merged);
        requests.push(RequestPurpose::ShortSummary);
        match call(summarizer, &short_request, cancel).await {
            Ok(r) => Some(r),
            Err(CompactError::Aborted) => return Err(CompactError::Aborted),
            Err(e) => {
                warnings.push(e.to_string());
                None
            }
        }
    } else {
        None
    };
    let answers = [
        (RequestPurpose::History, &history),
        (RequestPurpose::TurnPrefix, &prefix),
        (RequestPurpose::ShortSummary, &short),
    ];
    for (purpose, answer) in answers {
        if answer.as_ref().is_some_and(|a| a.truncated) {
            warnings.push(truncation_warning(purpose, summarizer));
        }
    }
    let usage = {
        let usages: Vec<&Usage> = [&history, &prefix, &short]
            .into_iter()
            .filter_map(|r| r.as_ref().and_then(|r| r.usage.as_ref()))
            .collect();
        sum_usage(usages)
    };
    Ok((merged, short.map(|s| s.text.trim().to_owned()), usage))
}
