//! A simulated serial port that echoes, and answers `AT` with `OK` like a modem would.

use std::collections::VecDeque;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

const AT_FORMS: [&[u8]; 2] = [b"AT\r\n", b"AT\n"];

#[derive(Debug)]
struct Port {
    incoming: VecDeque<u8>,
    /// Written bytes held back while they could still be an `AT` line.
    held: Vec<u8>,
    at_line_start: bool,
    /// Every byte ever written to the port, counted.
    written: u64,
}

#[derive(Debug)]
pub(crate) struct Shared {
    port: Mutex<Port>,
    readable: Condvar,
}

impl Shared {
    pub(crate) fn new() -> Arc<Shared> {
        Arc::new(Shared {
            port: Mutex::new(Port {
                incoming: VecDeque::new(),
                held: Vec::new(),
                at_line_start: true,
                written: 0,
            }),
            readable: Condvar::new(),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Port> {
        self.port.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The port named `echo`. Whatever is written can be read back, except that a line that is
/// exactly `AT\r\n` or `AT\n` is answered with `OK\r\n` instead. Bytes at the start of a line
/// that could still become `AT` are held until the line decides. Reads wait up to the timeout
/// for at least one byte, then fail with `TimedOut`, as `serialport` does.
#[derive(Debug, Clone)]
pub struct SimSerial {
    name: String,
    shared: Arc<Shared>,
    timeout: Duration,
}

impl SimSerial {
    /// Read timeout of a new handle.
    pub const DEFAULT_TIMEOUT: Duration = Duration::from_millis(100);

    pub(crate) fn new(name: &str, shared: Arc<Shared>) -> SimSerial {
        SimSerial {
            name: name.to_string(),
            shared,
            timeout: Self::DEFAULT_TIMEOUT,
        }
    }

    /// The port name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How long a read waits for the first byte.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Sets how long a read waits for the first byte.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// Bytes the far end sends unprompted (a GPS sentence, a boot banner).
    pub fn push_incoming(&self, bytes: &[u8]) {
        self.shared.lock().incoming.extend(bytes);
        self.shared.readable.notify_all();
    }

    /// Bytes waiting to be read.
    pub fn bytes_to_read(&self) -> usize {
        self.shared.lock().incoming.len()
    }

    /// How many bytes have been written to the port, by any handle, since the board started.
    pub fn bytes_written(&self) -> u64 {
        self.shared.lock().written
    }
}

fn take(port: &mut Port, byte: u8) {
    if port.at_line_start || !port.held.is_empty() {
        port.held.push(byte);
        if AT_FORMS.contains(&port.held.as_slice()) {
            port.incoming.extend(b"OK\r\n");
            port.held.clear();
            port.at_line_start = true;
            return;
        }
        if AT_FORMS.iter().any(|f| f.starts_with(&port.held)) {
            port.at_line_start = false;
            return;
        }
        let held = std::mem::take(&mut port.held);
        port.incoming.extend(held);
    } else {
        port.incoming.push_back(byte);
    }
    port.at_line_start = byte == b'\n';
}

impl io::Write for SimSerial {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut port = self.shared.lock();
        port.written += buf.len() as u64;
        buf.iter().for_each(|b| take(&mut port, *b));
        drop(port);
        self.shared.readable.notify_all();
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl io::Read for SimSerial {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let deadline = Instant::now() + self.timeout;
        let mut port = self.shared.lock();
        while port.incoming.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("nothing arrived on {} within {:?}", self.name, self.timeout),
                ));
            }
            port = self
                .shared
                .readable
                .wait_timeout(port, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
        let n = buf.len().min(port.incoming.len());
        for (slot, b) in buf.iter_mut().zip(port.incoming.drain(..n)) {
            *slot = b;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Read, Write};

    fn drain(s: &mut SimSerial) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 64];
        while let Ok(n) = s.read(&mut buf) {
            out.extend_from_slice(&buf[..n]);
        }
        out
    }

    #[test]
    fn written_bytes_come_back_but_an_at_line_is_answered_with_ok() {
        let mut s = SimSerial::new("echo", Shared::new());
        s.set_timeout(Duration::from_millis(10));
        s.write_all(b"hello\n").unwrap();
        assert_eq!(drain(&mut s), b"hello\n");
        s.write_all(b"AT\r\n").unwrap();
        assert_eq!(drain(&mut s), b"OK\r\n");
        s.write_all(b"A").unwrap();
        s.write_all(b"T\n").unwrap();
        assert_eq!(drain(&mut s), b"OK\r\n");
        s.write_all(b"ATI\r\nxAT\n").unwrap();
        assert_eq!(drain(&mut s), b"ATI\r\nxAT\n");
        assert_eq!(s.bytes_written(), 6 + 4 + 1 + 2 + 9);
    }

    #[test]
    fn a_read_with_nothing_to_read_times_out() {
        let mut s = SimSerial::new("echo", Shared::new());
        s.set_timeout(Duration::from_millis(20));
        let t = Instant::now();
        let e = s.read(&mut [0u8; 4]).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        assert!(t.elapsed() >= Duration::from_millis(20));
    }
}
