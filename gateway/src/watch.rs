//! Sensor watches: threshold rules with a duration and hysteresis ("temperature > 30 °C for
//! 5 min"). The rule's state machine is pure (`Rule::step`); `evaluate` runs it on each new
//! reading and fires the action through the dispatch pipeline, so policy applies.

use crate::exec::Session;
use crate::runtime::{Runtime, Via};
use crate::store::{StoreError, Watch, WatchState};
use chrono::{DateTime, Utc};
use serde_json::Value;

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `>`
    Gt,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `<=`
    Le,
}

impl Op {
    /// Parses `>`, `>=`, `<`, `<=`.
    pub fn parse(s: &str) -> Option<Op> {
        Some(match s {
            ">" => Op::Gt,
            ">=" => Op::Ge,
            "<" => Op::Lt,
            "<=" => Op::Le,
            _ => return None,
        })
    }

    /// The symbol.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Gt => ">",
            Op::Ge => ">=",
            Op::Lt => "<",
            Op::Le => "<=",
        }
    }

    fn holds(self, v: f64, t: f64) -> bool {
        match self {
            Op::Gt => v > t,
            Op::Ge => v >= t,
            Op::Lt => v < t,
            Op::Le => v <= t,
        }
    }

    /// Whether `v` is back on the safe side by at least `hysteresis`.
    fn rearmed(self, v: f64, t: f64, hysteresis: f64) -> bool {
        match self {
            Op::Gt | Op::Ge => v < t - hysteresis,
            Op::Lt | Op::Le => v > t + hysteresis,
        }
    }
}

/// A threshold rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rule {
    /// The comparison.
    pub op: Op,
    /// The threshold.
    pub threshold: f64,
    /// How long the condition must hold, in seconds.
    pub for_secs: i64,
    /// The re-arm margin.
    pub hysteresis: f64,
}

impl Rule {
    /// The next state after a reading `v` at `now`, and whether the watch fires now.
    pub fn step(&self, state: WatchState, v: f64, now: DateTime<Utc>) -> (WatchState, bool) {
        let holds = self.op.holds(v, self.threshold);
        match state {
            WatchState::Armed if holds => {
                if self.for_secs <= 0 {
                    (WatchState::Fired, true)
                } else {
                    (WatchState::Pending(now), false)
                }
            }
            WatchState::Armed => (WatchState::Armed, false),
            WatchState::Pending(_) if !holds => (WatchState::Armed, false),
            WatchState::Pending(since) => {
                if (now - since).num_seconds() >= self.for_secs {
                    (WatchState::Fired, true)
                } else {
                    (WatchState::Pending(since), false)
                }
            }
            WatchState::Fired if self.op.rearmed(v, self.threshold, self.hysteresis) => {
                (WatchState::Armed, false)
            }
            WatchState::Fired => (WatchState::Fired, false),
        }
    }
}

/// Runs every active watch on `sensor` against a new reading; fires actions. Returns what fired.
pub fn evaluate(
    rt: &Runtime,
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

fn fire_action(rt: &Runtime, w: &Watch, v: f64, unit: &str) -> String {
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
            match rt.call(&session, Via::Watch, tool, args) {
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

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_800_000_000 + s, 0).unwrap()
    }

    #[test]
    fn a_rule_fires_only_after_holding_for_its_duration_and_rearms_with_hysteresis() {
        let r = Rule {
            op: Op::Gt,
            threshold: 30.0,
            for_secs: 300,
            hysteresis: 1.0,
        };
        let (s, f) = r.step(WatchState::Armed, 31.0, t(0));
        assert!(!f);
        assert_eq!(s, WatchState::Pending(t(0)));
        let (s, f) = r.step(s, 31.5, t(200));
        assert!(!f && s == WatchState::Pending(t(0)));
        let (s, f) = r.step(s, 31.2, t(300));
        assert!(f && s == WatchState::Fired);
        // Still hot, or barely below: no second alarm.
        let (s, f) = r.step(s, 31.0, t(400));
        assert!(!f && s == WatchState::Fired);
        let (s, f) = r.step(s, 29.5, t(500));
        assert!(!f && s == WatchState::Fired, "within hysteresis");
        let (s, _) = r.step(s, 28.9, t(600));
        assert_eq!(s, WatchState::Armed);
    }

    #[test]
    fn a_dip_below_the_threshold_restarts_the_duration() {
        let r = Rule {
            op: Op::Gt,
            threshold: 30.0,
            for_secs: 300,
            hysteresis: 0.0,
        };
        let (s, _) = r.step(WatchState::Armed, 31.0, t(0));
        let (s, _) = r.step(s, 29.0, t(100));
        assert_eq!(s, WatchState::Armed);
        let (s, f) = r.step(s, 31.0, t(350));
        assert!(!f);
        assert_eq!(s, WatchState::Pending(t(350)));
    }

    #[test]
    fn a_zero_duration_rule_fires_at_once_and_less_than_works() {
        let r = Rule {
            op: Op::Lt,
            threshold: 5.0,
            for_secs: 0,
            hysteresis: 0.5,
        };
        let (s, f) = r.step(WatchState::Armed, 4.0, t(0));
        assert!(f && s == WatchState::Fired);
        let (s, _) = r.step(s, 5.4, t(10));
        assert_eq!(s, WatchState::Fired);
        let (s, _) = r.step(s, 5.6, t(20));
        assert_eq!(s, WatchState::Armed);
    }
}
