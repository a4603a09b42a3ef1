//! Runs scheduled jobs while `covo chat` (or the daemon) is up.
//!
//! Policy: a job is claimed (its run recorded and its next run computed) *before* it executes, so
//! a crash mid-run never runs it twice. A job whose runs were missed while the gateway was down
//! runs once at the first check after start-up, then follows its cron cadence again (no catch-up
//! storm); see `store::schedules`.

use super::{Agent, Outcome, Silent};
use crate::error::CallError;
use crate::exec::Session;
use crate::llm::ChatModel;
use crate::runtime::{Runtime, Via};
use crate::store::{Schedule, ScheduleAction, StoreError};
use chrono::{DateTime, Utc};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Claims every job due at `now`: each is marked as run before it is returned, in one write
/// transaction, so two processes on one home (`covo chat` and `covo run`) never both claim it.
/// A stored job that cannot be read or rescheduled is skipped, cancelled and reported (in the
/// log and on its channel); the others run.
pub fn claim_due(rt: &Runtime, now: DateTime<Utc>) -> Result<Vec<Schedule>, StoreError> {
    let claimed = rt.store()?.claim_due_schedules(now)?;
    for bad in &claimed.bad {
        tracing::warn!(
            schedule = bad.id,
            error = %bad.error,
            "a stored schedule is invalid: it was skipped and cancelled"
        );
        let text = format!(
            "schedule #{} could not run and was cancelled: {}",
            bad.id, bad.error
        );
        let channel = if bad.channel.is_empty() {
            "cli"
        } else {
            &bad.channel
        };
        if let Err(e) = rt.user_io().send(channel, &text) {
            tracing::warn!(schedule = bad.id, error = %e, "could not report the invalid schedule");
        }
    }
    Ok(claimed.jobs)
}

fn label(job: &Schedule) -> String {
    match &job.name {
        Some(n) => format!("schedule #{} ({n})", job.id),
        None => format!("schedule #{}", job.id),
    }
}

/// Runs one claimed job and reports the outcome on the job's channel. Returns the report.
pub async fn run_job(
    rt: &Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    job: &Schedule,
) -> String {
    let session = Session::new(job.session.clone(), job.channel.clone());
    let report = match &job.action {
        ScheduleAction::Tool { name, arguments } => {
            let (rt2, s2, name2, args) =
                (rt.clone(), session.clone(), name.clone(), arguments.clone());
            let out =
                tokio::task::spawn_blocking(move || rt2.call(&s2, Via::Schedule, &name2, args))
                    .await;
            match out {
                Ok(Ok(v)) => format!("{}: {name} → {v}", label(job)),
                Ok(Err(CallError::Respond(e))) => format!("{}: {name} failed: {e}", label(job)),
                Ok(Err(CallError::Fatal(e))) => {
                    format!("{}: {name} failed (fatal): {e}", label(job))
                }
                Err(e) => format!("{}: {name} crashed: {e}", label(job)),
            }
        }
        ScheduleAction::Prompt(prompt) => {
            let mut agent = Agent::new(rt.clone(), model, session.clone());
            let r = agent
                .turn(prompt, &CancellationToken::new(), &mut Silent)
                .await;
            match r.outcome {
                Outcome::Answer(a) => format!("{}: {a}", label(job)),
                other => format!("{}: prompt did not finish: {other:?}", label(job)),
            }
        }
    };
    if let Err(e) = rt.user_io().send(&job.channel, &report) {
        tracing::warn!(job = job.id, error = %e, "could not deliver the schedule report");
    }
    report
}
