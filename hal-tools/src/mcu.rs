//! The gateway's side of the microcontroller link: requests with a deadline, retries for
//! idempotent reads only, stale-frame skipping, resync after garbage (the frame reader drops
//! everything up to the next delimiter), and reconnection after a reset or re-plug.

use crate::backend::SerialIo;
use crate::bus::BusError;
use covo_mcu_protocol::{
    encode, DeviceError, DeviceInfo, DeviceMessage, FrameReader, Request, RequestBody,
    ResponseBody, MAX_FRAME, PROTOCOL_VERSION, SCHEMA_HASH,
};
use std::time::{Duration, Instant};

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
                if let Err(e) = self.reopen().and_then(|_| self.handshake(deadline)) {
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
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::TimedOut
                            | std::io::ErrorKind::WouldBlock
                            | std::io::ErrorKind::Interrupted
                    ) =>
                {
                    continue
                }
                Err(e) => return Err(McuError::Link(e.to_string())),
            };
            let mut input: &[u8] = &rx[..n];
            while let Some(msg) = self.reader.push::<DeviceMessage>(&mut input) {
                match msg {
                    Err(_) => self.stats.bad_frames += 1,
                    Ok(DeviceMessage::Event(_)) => {}
                    Ok(DeviceMessage::Response(r)) if r.seq != seq => self.stats.stale += 1,
                    Ok(DeviceMessage::Response(r)) => return r.body.map_err(McuError::Device),
                }
            }
        }
    }
}
