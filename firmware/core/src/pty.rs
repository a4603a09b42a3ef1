//! A simulated microcontroller behind a pseudo-terminal.

use std::io::{self, Read, Write};
use std::string::String;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serialport::{SerialPort, TTYPort};

use crate::sim::SimBoard;
use crate::Device;

/// How long the serving thread blocks in a read: bounds shutdown latency and the event tick.
const TICK: Duration = Duration::from_millis(2);

/// Keeps a [`spawn_pty_sim`] device running; dropping it stops the thread and closes the pty.
pub struct SimHandle {
    path: String,
    device: Arc<Mutex<Device<SimBoard>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SimHandle {
    /// Path of the slave side, to open as a serial port.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Runs `f` on the simulated device between two reads, e.g. to press a simulated button
    /// with `device.board().set_input(..)`.
    pub fn with_device<R>(&self, f: impl FnOnce(&mut Device<SimBoard>) -> R) -> R {
        let mut device = self.device.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut device)
    }
}

impl Drop for SimHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Starts a `Device<SimBoard>` on the master side of a new pty and returns the slave's path.
///
/// The device serves until the [`SimHandle`] is dropped. A client opens the path with
/// `serialport::new(path, 115200).open()` (the baud rate is ignored by a pty).
pub fn spawn_pty_sim() -> io::Result<(String, SimHandle)> {
    let (mut master, slave) = TTYPort::pair().map_err(io::Error::from)?;
    let path = slave
        .name()
        .ok_or_else(|| io::Error::other("pty slave has no name"))?;
    master.set_timeout(TICK).map_err(io::Error::from)?;
    let device = Arc::new(Mutex::new(Device::new(SimBoard::new())));
    let stop = Arc::new(AtomicBool::new(false));

    let thread = {
        let device = device.clone();
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("covo-mcu-sim".into())
            .spawn(move || {
                // Holding the slave open keeps the master readable between client sessions:
                // with no slave open, reads on the master fail with EIO.
                let _slave = slave;
                serve(&mut master, &device, &stop);
            })?
    };
    Ok((
        path.clone(),
        SimHandle {
            path,
            device,
            stop,
            thread: Some(thread),
        },
    ))
}

fn serve(master: &mut TTYPort, device: &Mutex<Device<SimBoard>>, stop: &AtomicBool) {
    let mut buf = [0u8; 256];
    let mut out = std::vec::Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let n = match master.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::TimedOut => 0,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => 0,
            Err(_) => {
                std::thread::sleep(TICK);
                0
            }
        };
        {
            let mut device = device.lock().unwrap_or_else(|e| e.into_inner());
            let mut tx = |frame: &[u8]| out.extend_from_slice(frame);
            device.on_bytes(&buf[..n], &mut tx);
            device.poll(&mut tx);
        }
        if !out.is_empty() {
            // Nobody reading (the pty buffer full) loses frames, as a real UART would.
            let _ = master.write_all(&out);
            out.clear();
        }
    }
}
