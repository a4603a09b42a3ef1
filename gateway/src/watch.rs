//! Sensor watches: threshold rules with a duration and hysteresis ("temperature > 30 °C for
//! 5 min"). The rule's state machine is pure (`store::Rule::step`, kept with the rows it
//! steps); `evaluate` runs it on each new reading and fires the action through the dispatch
//! pipeline, so policy applies.
//!
//! Readings come from two places: `sensor_read` and the sampler (a declared sensor), and a
//! microcontroller's events ([`McuWatcher`]). A watch on an `mcu` device names a pin or an ADC
//! channel as its quantity ([`McuQuantity`]); the watcher subscribes the device to exactly
//! what its watches need, takes the events the link queued (bounded, see
//! `covo_hal_tools::mcu::EVENT_QUEUE`) and runs [`evaluate`] on each, as a sensor reading
//! would. A build without the `hal` feature opens no link, so no event arrives.

use crate::error::CallError;
use crate::exec::{Args, Cx, Services, Session, UserIo};
use crate::hardware::Hardware;
use crate::policy::Via;
pub use crate::store::{Op, Rule};
use crate::store::{Store, StoreError, Watch};
use chrono::{DateTime, Utc};
use covo_board::driver::Driver;
use covo_mcu_protocol::{Event, EventMask};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What runs the watches of a new reading: the store, the user's channels and the pipeline for
/// their actions. A reading a call took ([`Cx`], `sensor_read`) fires them one level deeper
/// than that call (`Cx::watch_action`), so the pipeline's depth limit holds for every re-entry;
/// a microcontroller's event, which no call made, fires them from the top ([`Services`]).
pub trait Fire {
    /// The database.
    fn store(&self) -> Result<&Store, StoreError>;
    /// The user's channels.
    fn user_io(&self) -> &dyn UserIo;
    /// Runs a watch's action through the pipeline as `Via::Watch`.
    fn action(&self, session: &Session, tool: &str, args: Value) -> Result<Value, CallError>;
}

impl Fire for Cx<'_> {
    fn store(&self) -> Result<&Store, StoreError> {
        Cx::store(self)
    }

    fn user_io(&self) -> &dyn UserIo {
        Cx::user_io(self)
    }

    fn action(&self, session: &Session, tool: &str, args: Value) -> Result<Value, CallError> {
        self.watch_action(session, tool, args)
    }
}

/// Fires from the top of the pipeline: for readings no call took (a microcontroller's events).
struct Top<'a>(&'a dyn Services);

impl Fire for Top<'_> {
    fn store(&self) -> Result<&Store, StoreError> {
        self.0.store()
    }

    fn user_io(&self) -> &dyn UserIo {
        self.0.user_io()
    }

    fn action(&self, session: &Session, tool: &str, args: Value) -> Result<Value, CallError> {
        self.0
            .dispatch(session, Via::Watch, tool, Args::Json(args), 0)
    }
}

/// Runs every active watch on `sensor` against a new reading; fires actions. Returns what fired.
pub fn evaluate(
    rt: &dyn Fire,
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
        // Only changes are written: microcontroller readings arrive many times a second.
        if next != w.state || fire {
            store.set_watch_state(w.id, next, fire.then_some(now))?;
        }
        if fire {
            fired.push(fire_action(rt, &w, *v, unit));
        }
    }
    Ok(fired)
}

fn fire_action(rt: &dyn Fire, w: &Watch, v: f64, unit: &str) -> String {
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
            match rt.action(&session, tool, args) {
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

/// What a watch on a microcontroller measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum McuQuantity {
    /// `pinN`: the level of pin N, 0 or 1, reported when it changes.
    Pin(u8),
    /// `adcN`: ADC channel N in millivolts, sampled every [`MCU_ADC_PERIOD_MS`].
    AdcMillivolts(u8),
    /// `adcN_raw`: ADC channel N in raw counts.
    AdcRaw(u8),
}

/// How often the device samples the ADC channels that watches name.
pub const MCU_ADC_PERIOD_MS: u16 = 100;

impl McuQuantity {
    /// Parses `pin3`, `adc0`, `adc0_raw`. Pins 0..=31 and channels 0..=7 (what an event
    /// subscription can name).
    pub fn parse(q: &str) -> Option<McuQuantity> {
        let num = |s: &str, max: u8| -> Option<u8> {
            let n: u8 = s.parse().ok()?;
            (s.bytes().all(|b| b.is_ascii_digit()) && n <= max).then_some(n)
        };
        if let Some(n) = q.strip_prefix("pin") {
            return num(n, 31).map(McuQuantity::Pin);
        }
        let adc = q.strip_prefix("adc")?;
        match adc.strip_suffix("_raw") {
            Some(n) => num(n, 7).map(McuQuantity::AdcRaw),
            None => num(adc, 7).map(McuQuantity::AdcMillivolts),
        }
    }

    /// What the device must stream for this quantity.
    pub fn mask(self) -> EventMask {
        match self {
            McuQuantity::Pin(p) => EventMask {
                pin_change: 1 << p,
                ..EventMask::default()
            },
            McuQuantity::AdcMillivolts(c) | McuQuantity::AdcRaw(c) => EventMask {
                pin_change: 0,
                adc_period_ms: MCU_ADC_PERIOD_MS,
                adc_channels: 1 << c,
            },
        }
    }
}

/// The subscription that serves every quantity in `quantities` (unknown ones are skipped).
pub fn mcu_mask<'a>(quantities: impl IntoIterator<Item = &'a str>) -> EventMask {
    let mut mask = EventMask::default();
    for m in quantities
        .into_iter()
        .filter_map(McuQuantity::parse)
        .map(McuQuantity::mask)
    {
        mask.pin_change |= m.pin_change;
        mask.adc_channels |= m.adc_channels;
        mask.adc_period_ms = mask.adc_period_ms.max(m.adc_period_ms);
    }
    mask
}

/// An event as the readings a watch compares: `(quantity, value, unit)`. `adc` is the
/// device's ADC resolution in bits and reference in millivolts (from its `DeviceInfo`).
pub fn mcu_readings(event: &Event, adc: (u8, u16)) -> Vec<(String, f64, String)> {
    match *event {
        Event::PinChange { pin, high, .. } => {
            vec![(
                format!("pin{pin}"),
                f64::from(u8::from(high)),
                "level".into(),
            )]
        }
        Event::Adc { channel, raw, .. } => {
            let (bits, vref) = adc;
            let full = if (1..=16).contains(&bits) {
                f64::from((1u32 << bits) - 1)
            } else {
                f64::NAN
            };
            let mut out = vec![(format!("adc{channel}_raw"), f64::from(raw), "counts".into())];
            if full.is_finite() {
                let mv = (f64::from(raw) * f64::from(vref) / full).round();
                out.push((format!("adc{channel}"), mv, "mV".into()));
            }
            out
        }
    }
}

/// Delivers microcontroller events to the watches: one [`McuWatcher::pass`] subscribes each
/// `mcu` device to what its watches need, takes its queued events and runs the watches.
/// `covo run` and `covo chat` keep one running on a thread ([`McuWatcher::spawn`]).
#[derive(Debug, Default)]
pub struct McuWatcher {
    /// Devices this watcher subscribed, to unsubscribe when their last watch goes.
    subscribed: BTreeSet<String>,
    /// The last level each device reported per pin: a pin reports only its changes, so a
    /// rule with a duration ("pin3 > 0.5 for 5m") is stepped with it on every pass.
    levels: BTreeMap<String, BTreeMap<u8, bool>>,
}

/// What one pass did.
#[derive(Debug, Default, PartialEq)]
pub struct McuPass {
    /// Devices with watches.
    pub watched: usize,
    /// Events taken from the links.
    pub events: usize,
    /// Reports of the watches that fired.
    pub fired: Vec<String>,
}

impl McuWatcher {
    /// A watcher that has subscribed nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// One pass over the board's microcontrollers, waiting up to `wait` per device that has
    /// watches for its events. A device that fails is logged and tried again next pass.
    pub fn pass(&mut self, rt: &dyn Services, wait: Duration) -> McuPass {
        let mut out = McuPass::default();
        let mcus: Vec<String> = rt
            .board()
            .def()
            .device
            .iter()
            .filter(|d| d.driver == Driver::Mcu)
            .map(|d| d.name.clone())
            .collect();
        if mcus.is_empty() {
            return out;
        }
        let store = match rt.store() {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(error = %e, "MCU events: the store is unavailable");
                return out;
            }
        };
        for name in mcus {
            let watches = match store.watches_for(&name) {
                Ok(w) => w,
                Err(e) => {
                    tracing::warn!(mcu = name, error = %e, "MCU events: cannot read the watches");
                    continue;
                }
            };
            let mask = mcu_mask(watches.iter().map(|w| w.quantity.as_str()));
            if mask == EventMask::default() && !self.subscribed.contains(&name) {
                continue;
            }
            let hw = match rt.board().hardware() {
                Ok(hw) => hw,
                Err(e) => {
                    tracing::warn!(mcu = name, error = %e, "MCU events: the board is unavailable");
                    return out;
                }
            };
            let (adc, events) = match poll(&hw, &name, mask, wait) {
                Ok(Ok(r)) => r,
                Ok(Err(e)) => {
                    tracing::warn!(mcu = name, error = %e, "MCU events: the link failed");
                    continue;
                }
                Err(e) => {
                    tracing::warn!(mcu = name, error = %e, "MCU events: cannot reach the microcontroller");
                    continue;
                }
            };
            if mask == EventMask::default() {
                self.subscribed.remove(&name);
                self.levels.remove(&name);
                continue;
            }
            self.subscribed.insert(name.clone());
            out.watched += 1;
            out.events += events.len();
            let levels = self.levels.entry(name.clone()).or_default();
            let mut changed = 0u32;
            let mut readings: Vec<Vec<(String, f64, String)>> = Vec::new();
            for event in &events {
                if let Event::PinChange { pin, high, .. } = *event {
                    levels.insert(pin, high);
                    changed |= 1u32.checked_shl(u32::from(pin)).unwrap_or(0);
                }
                readings.push(mcu_readings(event, adc));
            }
            // Pins that did not change this pass still hold their level: step duration rules.
            for (&pin, &high) in levels.iter() {
                let watched = mask.pin_change & 1u32.checked_shl(u32::from(pin)).unwrap_or(0);
                if watched != 0 && changed & watched == 0 {
                    readings.push(mcu_readings(
                        &Event::PinChange {
                            pin,
                            high,
                            at_ms: 0,
                        },
                        adc,
                    ));
                }
            }
            for r in &readings {
                match evaluate(&Top(rt), &name, r, Utc::now()) {
                    Ok(fired) => out.fired.extend(fired),
                    Err(e) => tracing::warn!(mcu = name, error = %e, "MCU events: watch failed"),
                }
            }
        }
        out
    }

    /// Runs passes on a thread until the handle is dropped. Between passes with no watched
    /// microcontroller it sleeps `IDLE`; a pass waits at most `WAIT` per device.
    pub fn spawn<S: Services + 'static>(rt: Arc<S>) -> McuWatcherHandle {
        const WAIT: Duration = Duration::from_millis(50);
        const IDLE: Duration = Duration::from_millis(500);
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("covo-mcu-events".into())
                .spawn(move || {
                    let mut watcher = McuWatcher::new();
                    while !stop.load(Ordering::Relaxed) {
                        let pass = watcher.pass(rt.as_ref(), WAIT);
                        for report in &pass.fired {
                            tracing::info!(%report, "MCU watch fired");
                        }
                        if pass.watched == 0 {
                            std::thread::sleep(IDLE);
                        }
                    }
                })
        };
        match thread {
            Ok(t) => McuWatcherHandle {
                stop,
                thread: Some(t),
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot start the MCU event thread: MCU watches will not fire");
                McuWatcherHandle { stop, thread: None }
            }
        }
    }
}

/// What one poll of a microcontroller gave: its ADC's (bits, reference in mV) and the events
/// its link had queued.
type Polled = ((u8, u16), Vec<Event>);

/// Subscribes MCU `name` to `mask` (when its subscription differs) and takes its queued events,
/// waiting up to `wait`: the link's error inside, or outside why the device cannot be reached.
#[cfg(feature = "hal")]
fn poll(
    hw: &Hardware,
    name: &str,
    mask: EventMask,
    wait: Duration,
) -> Result<Result<Polled, String>, String> {
    hw.with_mcu(name, |link| {
        if link.subscription() != mask {
            link.subscribe(mask, Duration::from_secs(1))?;
        }
        let adc = link.info().map_or((0, 0), |i| (i.adc_bits, i.adc_vref_mv));
        if mask == EventMask::default() {
            // Unsubscribed: drop what was still queued.
            link.poll_events(Duration::ZERO)?;
            return Ok((adc, Vec::new()));
        }
        link.poll_events(wait).map(|events| (adc, events))
    })
    .map(|r| r.map_err(|e| e.to_string()))
    .map_err(|e| e.to_string())
}

/// A build without the HAL has no hardware to poll (and no value of [`Hardware`]).
#[cfg(not(feature = "hal"))]
fn poll(
    hw: &Hardware,
    _name: &str,
    _mask: EventMask,
    _wait: Duration,
) -> Result<Result<Polled, String>, String> {
    match *hw {}
}

/// Keeps a [`McuWatcher::spawn`] thread running; dropping it stops the thread.
pub struct McuWatcherHandle {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for McuWatcherHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcu_quantities_parse_and_map_to_one_subscription() {
        assert_eq!(McuQuantity::parse("pin3"), Some(McuQuantity::Pin(3)));
        assert_eq!(
            McuQuantity::parse("adc0"),
            Some(McuQuantity::AdcMillivolts(0))
        );
        assert_eq!(McuQuantity::parse("adc7_raw"), Some(McuQuantity::AdcRaw(7)));
        for bad in [
            "pin32",
            "pin",
            "pin+1",
            "adc8",
            "adc",
            "adc0_mv",
            "temperature",
            "pin٣",
        ] {
            assert_eq!(McuQuantity::parse(bad), None, "{bad}");
        }
        let mask = mcu_mask(["pin1", "pin3", "adc0", "adc2_raw", "humidity"]);
        assert_eq!(
            mask,
            EventMask {
                pin_change: 0b1010,
                adc_period_ms: MCU_ADC_PERIOD_MS,
                adc_channels: 0b101,
            }
        );
        assert_eq!(mcu_mask(["pin5"]).adc_period_ms, 0);
    }

    #[test]
    fn events_become_readings() {
        let pin = Event::PinChange {
            pin: 1,
            high: true,
            at_ms: 5,
        };
        assert_eq!(
            mcu_readings(&pin, (10, 3000)),
            vec![("pin1".to_string(), 1.0, "level".to_string())]
        );
        let adc = Event::Adc {
            channel: 0,
            raw: 1023,
            at_ms: 5,
        };
        assert_eq!(
            mcu_readings(&adc, (10, 3000)),
            vec![
                ("adc0_raw".to_string(), 1023.0, "counts".to_string()),
                ("adc0".to_string(), 3000.0, "mV".to_string()),
            ]
        );
        // Without a usable resolution only the raw value is offered.
        assert_eq!(mcu_readings(&adc, (0, 0)).len(), 1);
    }
}
