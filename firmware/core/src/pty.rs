//! A simulated microcontroller behind a pseudo-terminal.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
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
    drive: Option<PathBuf>,
}

impl SimHandle {
    /// Path of the slave side, to open as a serial port.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The simulated BOOTSEL drive of [`spawn_pty_sim_with_bootsel`].
    pub fn bootsel_drive(&self) -> Option<&Path> {
        self.drive.as_deref()
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
    spawn(None)
}

/// Like [`spawn_pty_sim`], for a board with the RP2040's USB bootloader: a
/// [`covo_mcu_protocol::RequestBody::Bootloader`] request makes it go quiet on the port and
/// show a BOOTSEL drive in the directory `drive` (an `INFO_UF2.TXT` appears there, as on the
/// `RPI-RP2` drive). A UF2 file written there is taken as the RP2040 bootrom takes it: blocks
/// of the RP2040 family, 256 bytes each at 256-byte aligned flash addresses, others ignored;
/// once every block has arrived the drive goes away and the board reboots into the image. An
/// image stamped by a compatible covo firmware (see [`covo_mcu_protocol::stamp`]) boots
/// a device reporting the stamped name; any other image boots something that never answers.
/// Like a mount point, the directory exists only while the board is in BOOTSEL: it is created
/// then, and removed (with what was written to it) when the board reboots or the simulation
/// stops, so a simulation leaves nothing behind.
pub fn spawn_pty_sim_with_bootsel(drive: &Path) -> io::Result<(String, SimHandle)> {
    spawn(Some(drive.to_path_buf()))
}

fn spawn(drive: Option<PathBuf>) -> io::Result<(String, SimHandle)> {
    let (mut master, slave) = TTYPort::pair().map_err(io::Error::from)?;
    let path = slave
        .name()
        .ok_or_else(|| io::Error::other("pty slave has no name"))?;
    master.set_timeout(TICK).map_err(io::Error::from)?;
    let mut board = SimBoard::new();
    board.set_bootloader(drive.is_some());
    let device = Arc::new(Mutex::new(Device::new(board)));
    let stop = Arc::new(AtomicBool::new(false));

    let thread = {
        let device = device.clone();
        let stop = stop.clone();
        let drive = drive.clone();
        std::thread::Builder::new()
            .name("covo-mcu-sim".into())
            .spawn(move || {
                // Holding the slave open keeps the master readable between client sessions:
                // with no slave open, reads on the master fail with EIO.
                let _slave = slave;
                serve(&mut master, &device, &stop, drive.as_deref());
            })?
    };
    Ok((
        path.clone(),
        SimHandle {
            path,
            device,
            stop,
            thread: Some(thread),
            drive,
        },
    ))
}

/// What the simulated board runs.
enum Mode {
    /// The covo firmware: requests are answered.
    Running,
    /// The bootloader: the port is silent while the drive waits for a UF2.
    Bootsel,
    /// An image without a compatible covo stamp: it never answers.
    Foreign,
}

fn serve(
    master: &mut TTYPort,
    device: &Mutex<Device<SimBoard>>,
    stop: &AtomicBool,
    drive: Option<&Path>,
) {
    let mut buf = [0u8; 256];
    let mut out = std::vec::Vec::new();
    let mut mode = Mode::Running;
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
        match (&mode, drive) {
            (Mode::Running, _) => {
                let mut device = device.lock().unwrap_or_else(|e| e.into_inner());
                let mut tx = |frame: &[u8]| out.extend_from_slice(frame);
                device.on_bytes(&buf[..n], &mut tx);
                device.poll(&mut tx);
                if device.take_bootloader_request() {
                    if let Some(drive) = drive {
                        if bootsel::show(drive).is_ok() {
                            mode = Mode::Bootsel;
                        }
                    }
                }
            }
            (Mode::Bootsel, Some(drive)) => {
                if let Some(image) = bootsel::take(drive) {
                    let mut board = SimBoard::new();
                    board.set_bootloader(true);
                    mode = match covo_mcu_protocol::find_stamp(&image) {
                        Some(stamp) if stamp.compatible() => {
                            board.set_firmware(stamp.firmware);
                            Mode::Running
                        }
                        _ => Mode::Foreign,
                    };
                    *device.lock().unwrap_or_else(|e| e.into_inner()) = Device::new(board);
                }
            }
            _ => {}
        }
        if !out.is_empty() {
            // Nobody reading (the pty buffer full) loses frames, as a real UART would.
            let _ = master.write_all(&out);
            out.clear();
        }
    }
    if let (Mode::Bootsel, Some(drive)) = (&mode, drive) {
        bootsel::hide(drive);
    }
}

/// The simulated `RPI-RP2` drive.
mod bootsel {
    use std::path::Path;
    use std::vec::Vec;

    /// The RP2040's UF2 family id.
    const RP2040_FAMILY: u32 = 0xe48b_ff56;
    /// Where the RP2040's XIP flash starts, and its largest size.
    const FLASH: u32 = 0x1000_0000;
    const FLASH_MAX: u32 = 16 << 20;
    /// What the real drive's `INFO_UF2.TXT` says.
    const INFO: &str = "UF2 Bootloader v3.0\nModel: Raspberry Pi RP2\nBoard-ID: RPI-RP2\n";

    /// The drive appears.
    pub(super) fn show(drive: &Path) -> std::io::Result<()> {
        std::fs::create_dir_all(drive)?;
        std::fs::write(drive.join("INFO_UF2.TXT"), INFO)
    }

    /// The drive goes away: its files, then the directory.
    pub(super) fn hide(drive: &Path) {
        if let Ok(entries) = std::fs::read_dir(drive) {
            for gone in entries.flatten() {
                let _ = std::fs::remove_file(gone.path());
            }
        }
        let _ = std::fs::remove_dir(drive);
    }

    /// The flash image once a complete UF2 has been written to the drive, which then goes
    /// away; `None` while none is complete.
    pub(super) fn take(drive: &Path) -> Option<Vec<u8>> {
        let entries = std::fs::read_dir(drive).ok()?;
        for entry in entries.flatten() {
            let path = entry.path();
            let is_uf2 = path
                .extension()
                .is_some_and(|e| e.eq_ignore_ascii_case("uf2"));
            let small = entry
                .metadata()
                .is_ok_and(|m| m.len() <= FLASH_MAX as u64 * 2);
            if !is_uf2 || !small {
                continue;
            }
            let Ok(bytes) = std::fs::read(&path) else {
                continue;
            };
            if let Some(image) = flash(&bytes) {
                hide(drive);
                return Some(image);
            }
        }
        None
    }

    /// Writes the RP2040 blocks of a UF2 into a flash image, as the bootrom does; `None` until
    /// every block of the file has arrived.
    fn flash(bytes: &[u8]) -> Option<Vec<u8>> {
        let mut image = Vec::new();
        let mut seen = Vec::new();
        let mut total = None;
        for chunk in bytes.chunks_exact(uftwo::BLOCK_SIZE) {
            let Ok(block) = uftwo::Block::from_bytes(chunk) else {
                continue;
            };
            let addr = block.target_addr;
            if block.board_family_id() != Some(RP2040_FAMILY)
                || block.data_len != 256
                || addr % 256 != 0
                || !(FLASH..FLASH + FLASH_MAX).contains(&addr)
            {
                continue;
            }
            let n = block.total_blocks as usize;
            if n == 0 || n > (FLASH_MAX / 256) as usize || *total.get_or_insert(n) != n {
                return None;
            }
            seen.resize(n, false);
            if let Some(s) = seen.get_mut(block.block as usize) {
                *s = true;
            }
            let at = (addr - FLASH) as usize;
            if image.len() < at + 256 {
                image.resize(at + 256, 0xff);
            }
            image[at..at + 256].copy_from_slice(block.data());
        }
        (total.is_some() && seen.iter().all(|&s| s)).then_some(image)
    }
}
