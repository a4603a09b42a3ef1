//! The `sensors` toolset.

use super::hwargs;
use super::readings::{window, MAX_WINDOW_DAYS};
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Need, Parse, Part, ToolArgs, ToolDef, Typed};
use covo_board::board::BoardDef;
use covo_board::values;
use covo_core::catalog::sensors as c;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The tools of this family.
pub(crate) static TOOLS: &[ToolDef] = &[
    ToolDef::typed(&c::SENSOR_LIST, &Typed { run: sensor_list }).needs(Need::Board(Part::Sensors)),
    ToolDef::typed(&c::SENSOR_READ, &Typed { run: sensor_read }).needs(Need::Board(Part::Sensors)),
    ToolDef::local(&c::SENSOR_HISTORY, sensor_history).needs(Need::Board(Part::Sensors)),
    ToolDef::local(&c::SENSOR_EXPORT_CSV, sensor_export_csv).needs(Need::Board(Part::Sensors)),
];

fn sensor_list(cx: &Cx<'_>, _args: ()) -> Result<Value, CallError> {
    let board = cx.board().clone();
    let def = board.def();
    let sensors: Vec<Value> = def
        .device
        .iter()
        .filter(|d| d.driver.is_sensor())
        .map(|d| {
            json!({
                "sensor": d.name,
                "driver": d.driver,
                "bus": d.bus.or(def.default_i2c_bus()),
                "address": d.address.map(values::show_address),
                "quantities": d.driver.quantities()
                    .iter()
                    .map(|q| json!({"quantity": q.name, "unit": q.unit}))
                    .collect::<Vec<_>>(),
                "sample_interval_secs": d.sample_interval_secs,
            })
        })
        .collect();
    Ok(json!({ "sensors": sensors }))
}

/// What reading sensor `name` touches: its driver's writes and reads at the sensor's address
/// (`Driver::footprint`). Nothing for a name that is not a declared sensor: the executor
/// refuses it without touching the bus.
pub fn sensor_access(def: &BoardDef, name: &str) -> Vec<Access> {
    let Some(d) = def.device(name) else {
        return Vec::new();
    };
    let Some(fp) = d.driver.footprint() else {
        return Vec::new();
    };
    vec![Access::SensorMeasure {
        sensor: d.name.clone(),
        driver: d.driver,
        bus: d.bus.or(def.default_i2c_bus()),
        address: d.address,
        bytes: fp.write.max(fp.read),
        writes: fp.writes,
    }]
}

/// `sensor_read`: a declared device, and what reading it touches.
pub struct Read {
    sensor: String,
    access: Vec<Access>,
}

impl ToolArgs for Read {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let named = p.str("sensor")?.ok_or_else(|| p.missing("sensor"))?;
        let d = p.board.find_device(&named).map_err(|e| p.hw(e))?;
        Ok(Read {
            access: sensor_access(p.board, &d.name),
            sensor: d.name.clone(),
        })
    }

    fn access(&self) -> Vec<Access> {
        self.access.clone()
    }
}

/// Reads a declared sensor, logs the reading and runs its watches (their actions one level
/// deeper in the pipeline than this call): `sensor_read`'s body. It judges nothing: the
/// pipeline has judged what the call touches (`read_access`) before it runs, whoever called,
/// the background sampler included (`readings::sample_due_each` calls `sensor_read` as
/// `Via::Sampler`).
pub fn read_and_log(cx: &Cx<'_>, name: &str) -> Result<Value, ReadFailure> {
    let hw = cx.board().hardware().map_err(ReadFailure::Board)?;
    let qs = hw.sensor_read(name).map_err(ReadFailure::Hw)?;
    let at = crate::store::now_rfc3339();
    let rows: Vec<(&str, f64, &str)> = qs.iter().map(|q| (q.name, q.value, q.unit)).collect();
    cx.store()
        .and_then(|s| s.log_reading(name, &at, &rows))
        .map_err(ReadFailure::Store)?;
    let values: Vec<(String, f64, String)> = qs
        .iter()
        .map(|q| (q.name.to_string(), q.value, q.unit.to_string()))
        .collect();
    let fired = crate::watch::evaluate(cx, name, &values, chrono::Utc::now())
        .map_err(ReadFailure::Store)?;
    let driver = hw.device(name).ok().map(|d| d.driver);
    Ok(json!({
        "sensor": name,
        "driver": driver,
        "at": at,
        "readings": qs
            .iter()
            .map(|q| json!({"quantity": q.name, "value": (q.value * 100.0).round() / 100.0, "unit": q.unit}))
            .collect::<Vec<_>>(),
        "watches_fired": fired,
    }))
}

/// Why a sensor could not be read.
#[derive(Debug)]
pub enum ReadFailure {
    /// The board did not open.
    Board(String),
    /// The hardware failed.
    Hw(covo_hal_tools::hw::HwError),
    /// The reading could not be logged.
    Store(crate::store::StoreError),
}

fn sensor_read(cx: &Cx<'_>, Read { sensor: name, .. }: Read) -> Result<Value, CallError> {
    read_and_log(cx, &name).map_err(|f| match f {
        ReadFailure::Board(e) => cx.fail(format!("the board is unavailable: {e}")),
        ReadFailure::Hw(e) => hwargs::fail(cx, e),
        ReadFailure::Store(e) => e.into(),
    })
}

fn time_arg(
    cx: &Cx<'_>,
    args: &Value,
    key: &str,
) -> Result<Option<chrono::DateTime<chrono::Utc>>, CallError> {
    match args.get(key).and_then(Value::as_str) {
        None => Ok(None),
        Some(t) => chrono::DateTime::parse_from_rfc3339(t)
            .map(|t| Some(t.with_timezone(&chrono::Utc)))
            .map_err(|_| {
                ToolError::invalid(
                    cx.tool.name,
                    &format!("/{key}"),
                    format!("'{t}' is not an RFC 3339 time"),
                )
                .into()
            }),
    }
}

/// The (since, until) an executor's arguments ask for; default the last 24 hours.
fn range(cx: &Cx<'_>, args: &Value) -> Result<(String, String), CallError> {
    let until = time_arg(cx, args, "until")?.unwrap_or_else(chrono::Utc::now);
    let since = match time_arg(cx, args, "since")? {
        Some(s) => s,
        None => {
            let w = args.get("window").and_then(Value::as_str).unwrap_or("24h");
            let bad = || -> CallError {
                ToolError::invalid(
                    cx.tool.name,
                    "/window",
                    format!(
                        "'{w}' is not a window like 30m, 24h or 7d (at most {MAX_WINDOW_DAYS}d)"
                    ),
                )
                .into()
            };
            let d = window(w).ok_or_else(bad)?;
            until.checked_sub_signed(d).ok_or_else(bad)?
        }
    };
    let fmt =
        |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
    Ok((fmt(since), fmt(until)))
}

fn known_sensor(cx: &Cx<'_>, name: &str) -> Result<(), CallError> {
    let def = cx.board().def();
    match def.device(name) {
        Some(d) if d.driver.is_sensor() => Ok(()),
        _ => Err(ToolError::NotFound {
            what: "sensor".into(),
            id: name.into(),
        }
        .into()),
    }
}

/// The stored readings an executor's arguments ask for: sensor, window, optional quantity.
fn stored_readings(
    cx: &Cx<'_>,
    args: &Value,
) -> Result<(String, String, String, Vec<crate::store::Reading>), CallError> {
    let name = args
        .get("sensor")
        .and_then(Value::as_str)
        .unwrap_or_default();
    known_sensor(cx, name)?;
    let quantity = args.get("quantity").and_then(Value::as_str);
    let (since, until) = range(cx, args)?;
    let rows = cx.store()?.readings(name, quantity, &since, &until)?;
    Ok((name.to_string(), since, until, rows))
}

fn sensor_history(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let (name, since, until, rows) = stored_readings(cx, &args)?;
    let name = name.as_str();
    let mut per: BTreeMap<&str, Vec<&crate::store::Reading>> = BTreeMap::new();
    for r in &rows {
        per.entry(r.quantity.as_str()).or_default().push(r);
    }
    let quantities: Vec<Value> = per
        .iter()
        .map(|(q, rs)| {
            let vals: Vec<f64> = rs.iter().map(|r| r.value).collect();
            let mean = vals.iter().sum::<f64>() / vals.len() as f64;
            let min = vals.iter().cloned().fold(f64::INFINITY, f64::min);
            let max = vals.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            // At most 48 points, evenly spaced, so a day of minute samples stays readable.
            let step = rs.len().div_ceil(48).max(1);
            let series: Vec<Value> = rs
                .iter()
                .step_by(step)
                .map(|r| json!([r.at, (r.value * 100.0).round() / 100.0]))
                .collect();
            let round = |x: f64| (x * 100.0).round() / 100.0;
            json!({
                "quantity": q,
                "unit": rs[0].unit,
                "count": rs.len(),
                "min": round(min),
                "max": round(max),
                "mean": round(mean),
                "first": rs[0].at,
                "last": rs[rs.len() - 1].at,
                "series": series,
            })
        })
        .collect();
    Ok(json!({"sensor": name, "since": since, "until": until, "quantities": quantities}))
}

fn sensor_export_csv(cx: &Cx<'_>, args: Value) -> Result<Value, CallError> {
    let (name, since, until, rows) = stored_readings(cx, &args)?;
    let name = name.as_str();
    let dir = cx.home().join("artifacts");
    std::fs::create_dir_all(&dir)?;
    let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ");
    let path = dir.join(format!("{name}-{stamp}.csv"));
    let tmp = tempfile::NamedTempFile::new_in(&dir)?;
    {
        let mut w = csv::Writer::from_writer(tmp.as_file());
        w.write_record(["at", "sensor", "quantity", "value", "unit"])
            .map_err(|e| cx.fail(e.to_string()))?;
        for r in &rows {
            w.write_record([&r.at, &r.sensor, &r.quantity, &r.value.to_string(), &r.unit])
                .map_err(|e| cx.fail(e.to_string()))?;
        }
        w.flush()?;
    }
    tmp.persist(&path).map_err(|e| cx.fail(e.to_string()))?;
    let bytes = std::fs::metadata(&path)?.len();
    Ok(json!({
        "artifact": path.display().to_string(),
        "rows": rows.len(),
        "bytes": bytes,
        "since": since,
        "until": until,
    }))
}
