//! Sensor watches: threshold rules with a duration and hysteresis ("temperature > 30 °C for
//! 5 min"). The rule's state machine is pure (`store::Rule::step`, kept with the rows it
//! steps); `evaluate` runs it on each new reading and fires the action through the dispatch
//! pipeline, so policy applies.

use crate::exec::Session;
use crate::exec::{Args, Services};
use crate::policy::Via;
pub use crate::store::{Op, Rule};
use crate::store::{StoreError, Watch};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// Runs every active watch on `sensor` against a new reading; fires actions. Returns what fired.
pub fn evaluate(
    rt: &dyn Services,
    sensor: &str,
    readings: &[(String, f64, String)],
    now: DateTime<Utc>,
) -> Result<Vec<String>, StoreError> {
    let store = rt.store()?;
    let mut fired = Vec::new();
    for w in store.watches_for(sensor)? {
        let Some((_, v, unit)) = readings.iter().find(|(q, _, _)| *q == w.quantity) else {
            continue;
        };
        let (next, fire) = w.rule().step(w.state, *v, now);
        store.set_watch_state(w.id, next, fire.then_some(now))?;
        if fire {
            fired.push(fire_action(rt, &w, *v, unit));
        }
    }
    Ok(fired)
}

fn fire_action(rt: &dyn Services, w: &Watch, v: f64, unit: &str) -> String {
    let session = Session::new(w.session.clone(), w.channel.clone());
    let what = format!(
        "watch #{}: {} {} is {v:.2} {unit} ({} {} {unit}{})",
        w.id,
        w.sensor,
        w.quantity,
        w.op,
        w.threshold,
        if w.for_secs > 0 {
            format!(" for {}s", w.for_secs)
        } else {
            String::new()
        }
    );
    let report = match &w.tool {
        Some(tool) => {
            let args = w
                .arguments
                .clone()
                .unwrap_or(Value::Object(Default::default()));
            match rt.dispatch(&session, Via::Watch, tool, Args::Json(args), 0) {
                Ok(r) => format!("{what}; ran {tool}: {r}"),
                Err(e) => format!("{what}; {tool} failed: {e}"),
            }
        }
        None => match &w.message {
            Some(m) => format!("{m} ({what})"),
            None => what,
        },
    };
    if let Err(e) = rt.user_io().send(&w.channel, &report) {
        tracing::warn!(watch = w.id, error = %e, "could not deliver the watch notification");
    }
    report
}
