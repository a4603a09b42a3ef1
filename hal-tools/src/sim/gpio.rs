//! Simulated GPIO lines 2..=27: levels, outputs with a write history, and injected edges that
//! wake a waiting reader.

use crate::bus::{BusError, Edge, EdgeEvent, Line};
use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// BCM numbers the sim board exposes.
pub const PINS: std::ops::RangeInclusive<u32> = 2..=27;
/// Edges kept per pin for readers that have not caught up.
const EVENT_CAPACITY: usize = 1024;

#[derive(Debug, Default)]
struct Pin {
    level: bool,
    input_only: bool,
    events: VecDeque<(u64, Instant, bool)>,
    log: Vec<(Instant, bool)>,
}

#[derive(Debug, Default)]
struct GpioState {
    pins: BTreeMap<u32, Pin>,
    sequence: u64,
}

impl GpioState {
    fn pin(&mut self, pin: u32) -> &mut Pin {
        assert!(
            PINS.contains(&pin),
            "GPIO{pin} is not on the sim board (2..=27)"
        );
        self.pins.entry(pin).or_default()
    }

    fn edge(&mut self, pin: u32, rising: bool, at: Instant) {
        self.sequence += 1;
        let seq = self.sequence;
        let p = self.pin(pin);
        p.level = rising;
        if p.events.len() == EVENT_CAPACITY {
            p.events.pop_front();
        }
        p.events.push_back((seq, at, rising));
    }
}

/// All lines of one board; one lock and one condition variable, since edges are rare.
#[derive(Debug, Default)]
pub(crate) struct Gpio {
    state: Mutex<GpioState>,
    changed: Condvar,
}

impl Gpio {
    fn lock(&self) -> MutexGuard<'_, GpioState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A pin the outside world drives (a button with a pull-up idles high).
    pub(crate) fn declare_input(&self, pin: u32, idle: bool) {
        let mut s = self.lock();
        let p = s.pin(pin);
        p.input_only = true;
        p.level = idle;
    }

    pub(crate) fn set_input(&self, pin: u32, level: bool) {
        let mut s = self.lock();
        if s.pin(pin).level != level {
            s.edge(pin, level, Instant::now());
        }
        drop(s);
        self.changed.notify_all();
    }

    pub(crate) fn inject_edge(&self, pin: u32, rising: bool) {
        self.lock().edge(pin, rising, Instant::now());
        self.changed.notify_all();
    }

    pub(crate) fn press(&self, pin: u32) {
        let mut s = self.lock();
        let now = Instant::now();
        s.edge(pin, false, now);
        s.edge(pin, true, now);
        drop(s);
        self.changed.notify_all();
    }

    pub(crate) fn level(&self, pin: u32) -> bool {
        self.lock().pin(pin).level
    }

    pub(crate) fn output_log(&self, pin: u32) -> Vec<(Instant, bool)> {
        self.lock().pin(pin).log.clone()
    }

    fn sequence(&self) -> u64 {
        self.lock().sequence
    }
}

/// One simulated GPIO line. Like covo's kernel line request, a wait sees the edges that happen
/// after it began, in order, each once; edges between waits are old news.
#[derive(Debug, Clone)]
pub struct SimLine {
    pin: u32,
    gpio: Arc<Gpio>,
    seen: u64,
}

impl SimLine {
    pub(crate) fn new(pin: u32, gpio: Arc<Gpio>) -> SimLine {
        let seen = gpio.sequence();
        SimLine { pin, gpio, seen }
    }

    /// The BCM number.
    pub fn pin(&self) -> u32 {
        self.pin
    }
}

impl Line for SimLine {
    fn read(&mut self) -> Result<bool, BusError> {
        Ok(self.gpio.level(self.pin))
    }

    fn write(&mut self, high: bool) -> Result<(), BusError> {
        let mut s = self.gpio.lock();
        if s.pin(self.pin).input_only {
            return Err(BusError::Unsupported(format!(
                "GPIO{} is an input on the sim board; it cannot be driven",
                self.pin
            )));
        }
        let now = Instant::now();
        if s.pin(self.pin).level != high {
            s.edge(self.pin, high, now);
        }
        s.pin(self.pin).log.push((now, high));
        drop(s);
        self.gpio.changed.notify_all();
        Ok(())
    }

    fn wait_edge(&mut self, edge: Edge, timeout: Duration) -> Result<Option<EdgeEvent>, BusError> {
        let start = Instant::now();
        let deadline = start + timeout;
        let mut s = self.gpio.lock();
        // As on Linux, edges from before the wait are old news: a handle held across calls
        // (covo keeps one per line) waits for the next one.
        self.seen = s.sequence;
        loop {
            let seen = self.seen;
            let next = s
                .pin(self.pin)
                .events
                .iter()
                .find(|(seq, _, _)| *seq > seen)
                .copied();
            if let Some((seq, at, rising)) = next {
                self.seen = seq;
                let wanted = match edge {
                    Edge::Rising => rising,
                    Edge::Falling => !rising,
                    Edge::Both => true,
                };
                if wanted {
                    return Ok(Some(EdgeEvent {
                        rising,
                        after: at.saturating_duration_since(start),
                    }));
                }
                continue;
            }
            let now = Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            s = self
                .gpio
                .changed
                .wait_timeout(s, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

impl embedded_hal::digital::ErrorType for SimLine {
    type Error = BusError;
}

impl embedded_hal::digital::InputPin for SimLine {
    fn is_high(&mut self) -> Result<bool, BusError> {
        Line::read(self)
    }

    fn is_low(&mut self) -> Result<bool, BusError> {
        Line::read(self).map(|h| !h)
    }
}

impl embedded_hal::digital::OutputPin for SimLine {
    fn set_low(&mut self) -> Result<(), BusError> {
        Line::write(self, false)
    }

    fn set_high(&mut self) -> Result<(), BusError> {
        Line::write(self, true)
    }
}
