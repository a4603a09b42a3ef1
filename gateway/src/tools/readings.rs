//! Sensor readings without the hardware: the background sampler, which reads each due sensor
//! through the pipeline's `sensor_read` (so it opens nothing itself), and the windows of time
//! (`30m`, `24h`, `7d`) that history, exports and watches take. The daemon, the terminal chat
//! and the MCP server use these in every build; in a build without the `hal` feature there is
//! no sensor to read, so the sampler reads none.

use crate::exec::{Args, Services, Session};
use crate::policy::Via;
use covo_core::catalog::sensors as c;
use serde_json::{json, Value};

/// The longest window or duration accepted: ten years, far beyond any stored history, and small
/// enough that subtracting it from any time covo handles cannot overflow.
pub(crate) const MAX_WINDOW_DAYS: i64 = 3650;

/// Parses a window such as `30m`, `24h`, `7d` (at most [`MAX_WINDOW_DAYS`]).
pub(crate) fn window(s: &str) -> Option<chrono::Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit())?;
    let n: i64 = s[..split].parse().ok()?;
    let d = match s[split..].trim() {
        "s" => chrono::Duration::try_seconds(n),
        "m" | "min" => chrono::Duration::try_minutes(n),
        "h" => chrono::Duration::try_hours(n),
        "d" => chrono::Duration::try_days(n),
        "w" => chrono::Duration::try_weeks(n),
        _ => None,
    }?;
    (d <= chrono::Duration::days(MAX_WINDOW_DAYS)).then_some(d)
}

/// The sampler's session id and channel in the audit log.
pub const SAMPLER_SESSION: &str = "sampler";

/// How often a watched sensor without its own interval is sampled.
pub const WATCH_SAMPLE_SECS: u64 = 60;

/// Samples every declared sensor whose interval has passed (sensors with watches but no interval
/// every [`WATCH_SAMPLE_SECS`]); logs the readings and runs the watches. `last` remembers when
/// each was sampled. Returns one line per sample, for logs.
pub fn sample_due(
    rt: &dyn Services,
    last: &mut std::collections::HashMap<String, std::time::Instant>,
) -> Vec<String> {
    sample_due_readings(rt, last, None)
        .into_iter()
        .map(|(name, r)| match r {
            Ok(v) => format!("{name}: {}", v["readings"]),
            Err(e) => format!("{name}: sampling failed: {e}"),
        })
        .collect()
}

/// How early a sample may be taken: a tick that comes this much before a sensor's interval is
/// up samples it, rather than the tick after (timer jitter is a few milliseconds).
pub const SAMPLE_SLACK: std::time::Duration = std::time::Duration::from_millis(500);

/// Like [`sample_due`], returning each sample (the `sensor_read` JSON) or why it failed.
/// `default_every` also samples sensors that have neither an interval nor a watch.
pub fn sample_due_readings(
    rt: &dyn Services,
    last: &mut std::collections::HashMap<String, std::time::Instant>,
    default_every: Option<u64>,
) -> Vec<(String, Result<Value, String>)> {
    let mut out = Vec::new();
    sample_due_each(rt, last, default_every, |name, r| {
        out.push((name.to_string(), r))
    });
    out
}

/// Like [`sample_due_readings`], handing each sample to `each` as soon as it is taken, before
/// the next sensor is read (the dashboard shows it within milliseconds of its timestamp).
pub fn sample_due_each(
    rt: &dyn Services,
    last: &mut std::collections::HashMap<String, std::time::Instant>,
    default_every: Option<u64>,
    mut each: impl FnMut(&str, Result<Value, String>),
) {
    if cfg!(not(feature = "hal")) {
        // No hardware in this build: `sensor_read` is missing, and nothing is sampled.
        return;
    }
    let watched: Vec<String> = rt
        .store()
        .and_then(|s| s.watches())
        .map(|ws| ws.into_iter().map(|w| w.sensor).collect())
        .unwrap_or_default();
    let now = std::time::Instant::now();
    let session = Session::new(SAMPLER_SESSION, SAMPLER_SESSION);
    for d in &rt.board().def().device {
        if !d.driver.is_sensor() {
            continue;
        }
        let every = match (d.sample_interval_secs, watched.contains(&d.name)) {
            (Some(s), _) => s,
            (None, true) => default_every.unwrap_or(WATCH_SAMPLE_SECS),
            (None, false) => match default_every {
                Some(s) => s,
                None => continue,
            },
        };
        // Compared as durations, with a little slack: whole seconds truncated 59.99 s to 59 and
        // pushed a 60 s sample to the next tick (75 s with a 15 s tick).
        let due = last.get(&d.name).is_none_or(|t| {
            now.duration_since(*t) + SAMPLE_SLACK >= std::time::Duration::from_secs(every)
        });
        if !due {
            continue;
        }
        last.insert(d.name.clone(), now);
        // Through the pipeline, like any call: the board policy, `[policy] read_only` and the
        // audit log apply here once, as they do to `sensor_read` from anywhere else.
        let r = rt
            .dispatch(
                &session,
                Via::Sampler,
                c::SENSOR_READ.name,
                Args::Json(json!({ "sensor": d.name })),
                0,
            )
            .map_err(|e| e.to_string());
        each(&d.name, r);
    }
}
