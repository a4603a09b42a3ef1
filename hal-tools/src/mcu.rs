//! The gateway's side of the microcontroller link: requests with a deadline, retries for
//! idempotent reads only, stale-frame skipping, resync after garbage (the frame reader drops
//! everything up to the next delimiter), and reconnection after a reset or re-plug.
//!
//! Events: [`McuLink::subscribe`] tells the device what to stream (the subscription is sent
//! again after every reconnect, since a new handshake clears it on the device). Event frames
//! that arrive while a request waits for its answer, or during [`McuLink::poll_events`], go
//! into a queue of at most [`EVENT_QUEUE`] events; beyond it the oldest is dropped and counted
//! in [`LinkStats::events_dropped`].

use crate::backend::SerialIo;
use crate::bus::BusError;
use covo_mcu_protocol::{
    encode, DeviceError, DeviceInfo, DeviceMessage, Event, EventMask, FrameReader, Request,
    RequestBody, ResponseBody, MAX_FRAME, PROTOCOL_VERSION, SCHEMA_HASH,
};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// How long [`McuLink::poll_events`] gives a device to shake hands again after the port broke
/// (a QEMU pty notices a new client only on a 1 s poll; a Pico re-enumerates).
pub const RECONNECT_DEADLINE: Duration = Duration::from_secs(3);

/// Events held between two reads of the queue; the oldest go first beyond it.
pub const EVENT_QUEUE: usize = 256;

/// Errors of an MCU call, kept apart: the link versus what the device said.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum McuError {
    /// The port could not be opened, or broke.
    #[error("link: {0}")]
    Link(String),
    /// No answer before the deadline.
    #[error("no answer within {0} ms")]
    Timeout(u64),
    /// The device answered with an error.
    #[error("device: {0:?}")]
    Device(DeviceError),
    /// The device speaks another protocol version or schema.
    #[error("protocol mismatch: {0}")]
    Mismatch(String),
}

/// Link counters, for `mcu_list`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkStats {
    /// Requests sent.
    pub requests: u64,
    /// Retries of idempotent requests.
    pub retries: u64,
    /// Deadlines missed.
    pub timeouts: u64,
    /// Frames dropped as corrupt.
    pub bad_frames: u64,
    /// Responses skipped because they answered an earlier request.
    pub stale: u64,
    /// Reconnections.
    pub reconnects: u64,
    /// Events received.
    pub events: u64,
    /// Events dropped because the queue was full.
    pub events_dropped: u64,
}

/// Opens the port again (after a reset or a re-plug the path may have changed).
pub type Opener = Box<dyn Fn() -> Result<Box<dyn SerialIo>, BusError> + Send>;

/// One connected microcontroller.
pub struct McuLink {
    port: Option<Box<dyn SerialIo>>,
    open: Opener,
    reader: FrameReader<MAX_FRAME>,
    seq: u16,
    info: Option<DeviceInfo>,
    stats: LinkStats,
    subscription: EventMask,
    events: VecDeque<Event>,
}

/// How many times an idempotent request is tried.
pub const ATTEMPTS: u32 = 3;

impl McuLink {
    /// Opens the port and shakes hands (protocol version and schema hash must match).
    pub fn connect(open: Opener, deadline: Duration) -> Result<McuLink, McuError> {
        let mut link = McuLink {
            port: None,
            open,
            reader: FrameReader::new(),
            seq: 0,
            info: None,
            stats: LinkStats::default(),
            subscription: EventMask::default(),
            events: VecDeque::new(),
        };
        link.reopen()?;
        link.handshake(deadline)?;
        Ok(link)
    }

    fn reopen(&mut self) -> Result<(), McuError> {
        self.port = None;
        self.reader.reset();
        let port = (self.open)().map_err(|e| McuError::Link(e.to_string()))?;
        self.port = Some(port);
        Ok(())
    }

    /// Reopens the port, shakes hands and restores the subscription (a handshake clears it).
    fn reconnect(&mut self, deadline: Duration) -> Result<(), McuError> {
        self.reopen()?;
        self.handshake(deadline)?;
        if self.subscription != EventMask::default() {
            let events = self.subscription;
            self.call_once(RequestBody::Subscribe { events }, deadline)?;
        }
        Ok(())
    }

    fn handshake(&mut self, deadline: Duration) -> Result<(), McuError> {
        let body = RequestBody::Hello {
            version: PROTOCOL_VERSION,
            schema_hash: SCHEMA_HASH,
        };
        match self.call_once(body, deadline)? {
            ResponseBody::Hello {
                version,
                schema_hash,
                info,
            } => {
                if version != PROTOCOL_VERSION || schema_hash != SCHEMA_HASH {
                    return Err(McuError::Mismatch(format!(
                        "device speaks v{version} (schema {schema_hash:#x}), the gateway v{PROTOCOL_VERSION} (schema {SCHEMA_HASH:#x}); update the firmware"
                    )));
                }
                self.info = Some(info);
                Ok(())
            }
            other => Err(McuError::Mismatch(format!(
                "unexpected answer to Hello: {other:?}"
            ))),
        }
    }

    /// The identity and capabilities from the handshake.
    pub fn info(&self) -> Option<&DeviceInfo> {
        self.info.as_ref()
    }

    /// Link counters.
    pub fn stats(&self) -> LinkStats {
        self.stats
    }

    /// What the device was last asked to stream.
    pub fn subscription(&self) -> EventMask {
        self.subscription
    }

    /// Asks the device to stream `events` (all zero: nothing). Kept and sent again after a
    /// reconnect. Events of an older subscription still queued are kept.
    pub fn subscribe(&mut self, events: EventMask, deadline: Duration) -> Result<(), McuError> {
        self.call(RequestBody::Subscribe { events }, true, deadline)?;
        self.subscription = events;
        Ok(())
    }

    /// Takes the queued events, first reading the port for up to `wait` when none are queued
    /// (returning as soon as some arrived). A broken port is reopened on the next call; a
    /// device that is gone is an error, as for a request.
    pub fn poll_events(&mut self, wait: Duration) -> Result<Vec<Event>, McuError> {
        if self.events.is_empty() {
            if self.port.is_none() {
                self.stats.reconnects += 1;
                if let Err(e) = self.reconnect(RECONNECT_DEADLINE) {
                    // Not half open: the next poll starts again from the port.
                    self.port = None;
                    return Err(e);
                }
            }
            let until = Instant::now() + wait;
            let mut rx = [0u8; 256];
            while self.events.is_empty() && Instant::now() < until {
                let Some(port) = self.port.as_mut() else {
                    break;
                };
                let n = match port.read(&mut rx) {
                    Ok(0) => continue,
                    Ok(n) => n,
                    Err(e) if transient(&e) => continue,
                    Err(e) => {
                        self.port = None;
                        return Err(McuError::Link(e.to_string()));
                    }
                };
                let mut input: &[u8] = &rx[..n];
                while let Some(msg) = self.reader.push::<DeviceMessage>(&mut input) {
                    match msg {
                        Err(_) => self.stats.bad_frames += 1,
                        Ok(DeviceMessage::Event(e)) => {
                            queue_event(&mut self.events, &mut self.stats, e)
                        }
                        // An answer nobody waits for any more.
                        Ok(DeviceMessage::Response(_)) => self.stats.stale += 1,
                    }
                }
            }
        }
        Ok(self.events.drain(..).collect())
    }

    /// Sends a request and waits for its answer. Idempotent requests are retried (reconnecting
    /// when the link broke); others are sent once, so an actuator command never runs twice.
    pub fn call(
        &mut self,
        body: RequestBody,
        idempotent: bool,
        deadline: Duration,
    ) -> Result<ResponseBody, McuError> {
        let attempts = if idempotent { ATTEMPTS } else { 1 };
        let mut last = McuError::Timeout(deadline.as_millis() as u64);
        for attempt in 0..attempts {
            if attempt > 0 {
                self.stats.retries += 1;
            }
            if self.port.is_none() {
                if let Err(e) = self.reconnect(deadline) {
                    last = e;
                    self.stats.reconnects += 1;
                    continue;
                }
                self.stats.reconnects += 1;
            }
            match self.call_once(body.clone(), deadline) {
                Ok(r) => return Ok(r),
                Err(e @ McuError::Device(_)) => return Err(e),
                Err(e @ McuError::Mismatch(_)) => return Err(e),
                Err(e) => {
                    if matches!(e, McuError::Link(_)) {
                        // The port broke (unplugged, reset): reopen before the next attempt.
                        self.port = None;
                    }
                    last = e;
                }
            }
        }
        Err(last)
    }

    fn call_once(
        &mut self,
        body: RequestBody,
        deadline: Duration,
    ) -> Result<ResponseBody, McuError> {
        self.seq = self.seq.wrapping_add(1);
        let seq = self.seq;
        let mut buf = [0u8; MAX_FRAME];
        let frame = encode(&Request { seq, body }, &mut buf)
            .map_err(|e| McuError::Link(format!("encode: {e:?}")))?;
        let port = self
            .port
            .as_mut()
            .ok_or_else(|| McuError::Link("not connected".into()))?;
        self.stats.requests += 1;
        port.write_all(frame)
            .and_then(|_| port.flush())
            .map_err(|e| McuError::Link(e.to_string()))?;
        let until = Instant::now() + deadline;
        let mut rx = [0u8; 256];
        loop {
            if Instant::now() >= until {
                self.stats.timeouts += 1;
                return Err(McuError::Timeout(deadline.as_millis() as u64));
            }
            let n = match port.read(&mut rx) {
                Ok(0) => continue,
                Ok(n) => n,
                Err(e) if transient(&e) => continue,
                Err(e) => return Err(McuError::Link(e.to_string())),
            };
            let mut input: &[u8] = &rx[..n];
            let mut answer = None;
            // Every frame of this read is taken, also after the answer: an event sent right
            // after it must reach the queue, and the reader keeps a partial frame for later.
            while let Some(msg) = self.reader.push::<DeviceMessage>(&mut input) {
                match msg {
                    Err(_) => self.stats.bad_frames += 1,
                    Ok(DeviceMessage::Event(e)) => {
                        queue_event(&mut self.events, &mut self.stats, e)
                    }
                    Ok(DeviceMessage::Response(r)) if r.seq != seq || answer.is_some() => {
                        self.stats.stale += 1
                    }
                    Ok(DeviceMessage::Response(r)) => answer = Some(r.body),
                }
            }
            if let Some(body) = answer {
                return body.map_err(McuError::Device);
            }
        }
    }
}

fn transient(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut
            | std::io::ErrorKind::WouldBlock
            | std::io::ErrorKind::Interrupted
    )
}

/// Queues an event, dropping the oldest beyond [`EVENT_QUEUE`].
fn queue_event(queue: &mut VecDeque<Event>, stats: &mut LinkStats, event: Event) {
    stats.events += 1;
    if queue.len() == EVENT_QUEUE {
        queue.pop_front();
        stats.events_dropped += 1;
    }
    queue.push_back(event);
}
