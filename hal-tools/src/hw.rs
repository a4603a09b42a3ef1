//! `Hardware`: one board's buses, lines and channels, opened from its definition, with one owner
//! per bus. Every operation takes the bus lock (with a timeout) for its whole duration, so a
//! sensor driver's multi-step read and a raw `i2c_read` never interleave.

use crate::backend::{SerialIo, SpiDev};
use crate::board::{BoardDef, DeviceDef, FlashDef, FlashMethod, SerialDef};
use crate::bus::{BusError, DynI2c, Edge, EdgeEvent, Line, Pwm};
use crate::driver::Driver;
use crate::resolve::ResolveError;
use crate::sensors::{self, Quantity};
use crate::sim::SimBoard;
use crate::values::PinRef;
use embedded_hal::i2c::I2c;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, MutexGuard, TryLockError};
use std::time::{Duration, Instant};

/// How long an operation waits for a bus another operation holds.
pub const LOCK_TIMEOUT: Duration = Duration::from_secs(2);

/// A line covo holds, shared by the calls that use it.
type HeldLine = Arc<Mutex<Box<dyn Line>>>;

/// Open errors collected by kind while a Linux board opens.
#[derive(Default)]
#[cfg_attr(not(all(target_os = "linux", feature = "linux")), allow(dead_code))]
struct Failures(BTreeMap<&'static str, String>);

#[cfg_attr(not(all(target_os = "linux", feature = "linux")), allow(dead_code))]
impl Failures {
    fn add(&mut self, kind: &'static str, why: String) {
        let e = self.0.entry(kind).or_default();
        if !e.is_empty() {
            e.push_str("; ");
        }
        e.push_str(&why);
    }

    fn take(&mut self, kind: &str) -> String {
        self.0.remove(kind).unwrap_or_default()
    }
}

/// Errors of hardware operations, each phrased so the model can act on it.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum HwError {
    /// A bus (I2C, SPI, PWM, serial) reported an error.
    #[error(transparent)]
    Bus(#[from] BusError),
    /// A GPIO line reported an error (kept apart from bus errors: their remedies differ).
    #[error(transparent)]
    Line(BusError),
    /// The board has no such bus, pin, channel or device.
    #[error("{0}")]
    NotFound(String),
    /// Another operation held the bus for too long.
    #[error("bus {0} is busy; try again")]
    Busy(u8),
    /// A sensor driver failed.
    #[error("{0}")]
    Sensor(String),
    /// The board could not be opened.
    #[error("cannot open the board: {0}")]
    Open(String),
}

/// Where and how one microcontroller is flashed ([`Hardware::mcu_flash_target`]).
#[derive(Debug, Clone)]
pub struct FlashTarget {
    /// The board file's `flash`.
    pub flash: FlashDef,
    /// The BOOTSEL drive: configured, or the simulation's; `None` means "look under /media".
    pub drive: Option<std::path::PathBuf>,
    /// The serial port's path now, when it can be found.
    pub port: Option<String>,
}

/// A name the board definition does not resolve is a `NotFound` like any other.
impl From<ResolveError> for HwError {
    fn from(e: ResolveError) -> Self {
        match e {
            ResolveError::NotFound(m) => HwError::NotFound(m),
        }
    }
}

/// One board, opened.
pub struct Hardware {
    def: BoardDef,
    i2c: BTreeMap<u8, Mutex<DynI2c>>,
    /// Lines covo holds, one request each for the life of the process (so its direction and
    /// level stay as covo left them), each behind its own lock: a long edge wait on one line
    /// does not hold up the others. At most one entry per line of the chip.
    lines: Mutex<BTreeMap<u32, HeldLine>>,
    /// Parts of the board that failed to open, by toolset (`i2c`, `gpio`, ...), with why.
    unavailable: BTreeMap<&'static str, String>,
    pwm: BTreeMap<u32, Mutex<Box<dyn Pwm>>>,
    spi: BTreeMap<(u8, u8), Mutex<Box<dyn SpiDev>>>,
    sim: Option<SimBoard>,
    no_delays: std::sync::atomic::AtomicBool,
    mcus: Mutex<BTreeMap<String, crate::mcu::McuLink>>,
    mcu_sims: Mutex<BTreeMap<String, covo_mcu_core::SimHandle>>,
    gpio_writes: std::sync::atomic::AtomicU64,
}

impl Hardware {
    /// The simulated board with its built-in definition.
    pub fn sim() -> Hardware {
        Self::sim_with(BoardDef::sim(), SimBoard::new())
    }

    /// A simulated board with this definition and these device models.
    pub fn sim_with(def: BoardDef, sim: SimBoard) -> Hardware {
        let i2c = def
            .i2c
            .iter()
            .filter_map(|b| {
                sim.i2c(b.bus)
                    .map(|h| (b.bus, Mutex::new(DynI2c(Box::new(h)))))
            })
            .collect();
        let pwm = def
            .pwm
            .iter()
            .filter_map(|p| {
                sim.pwm(p.channel)
                    .map(|c| (p.channel, Mutex::new(Box::new(c) as Box<dyn Pwm>)))
            })
            .collect();
        let spi = def
            .spi
            .iter()
            .filter(|d| d.path.as_deref() == Some(crate::sim::LOOPBACK_PATH))
            .map(|d| {
                let dev: Box<dyn SpiDev> = Box::new(sim.spi(d.bus, d.cs));
                ((d.bus, d.cs), Mutex::new(dev))
            })
            .collect();
        Hardware {
            def,
            i2c,
            lines: Mutex::new(BTreeMap::new()),
            unavailable: BTreeMap::new(),
            pwm,
            spi,
            sim: Some(sim),
            no_delays: Default::default(),
            mcus: Default::default(),
            mcu_sims: Default::default(),
            gpio_writes: Default::default(),
        }
    }

    /// Opens a board from its definition: the sim, or the Linux kernel interfaces.
    pub fn open(def: BoardDef) -> Result<Hardware, HwError> {
        match def.board.backend.as_str() {
            "sim" => Ok(Self::sim_with(def, SimBoard::new())),
            "linux" => Self::open_linux(def),
            other => Err(HwError::Open(format!(
                "unknown backend '{other}' (expected sim or linux)"
            ))),
        }
    }

    #[cfg(all(target_os = "linux", feature = "linux"))]
    fn open_linux(def: BoardDef) -> Result<Hardware, HwError> {
        use crate::backend as linux;
        let mut failed = Failures::default();
        let mut i2c = BTreeMap::new();
        for b in &def.i2c {
            let path = b
                .path
                .clone()
                .unwrap_or_else(|| format!("/dev/i2c-{}", b.bus));
            match linux::open_i2c(&path) {
                Ok(bus) => {
                    i2c.insert(b.bus, Mutex::new(DynI2c(bus)));
                }
                Err(e) => {
                    tracing::warn!(bus = b.bus, %path, error = %e, "I2C bus unavailable");
                    failed.add("i2c", e.to_string());
                }
            }
        }
        if !def.pins.available.is_empty() || def.pins.chip.is_some() {
            let chip = def.pins.chip.as_deref().unwrap_or("/dev/gpiochip0");
            if let Err(e) = linux::probe_gpio_chip(chip) {
                tracing::warn!(%chip, error = %e, "GPIO chip unavailable");
                failed.add("gpio", e.to_string());
            }
        }
        let mut pwm = BTreeMap::new();
        for p in &def.pwm {
            let chip = p
                .chip
                .clone()
                .unwrap_or_else(|| "/sys/class/pwm/pwmchip0".into());
            match linux::SysfsPwm::open(std::path::Path::new(&chip), p.channel) {
                Ok(c) => {
                    pwm.insert(p.channel, Mutex::new(Box::new(c) as Box<dyn Pwm>));
                }
                Err(e) => {
                    tracing::warn!(channel = p.channel, %chip, error = %e, "PWM channel unavailable");
                    failed.add("pwm", e.to_string());
                }
            }
        }
        let mut spi = BTreeMap::new();
        for d in &def.spi {
            let path = d
                .path
                .clone()
                .unwrap_or_else(|| linux::default_spi_path(d.bus, d.cs));
            match linux::open_spi(&path, d.max_speed_hz.unwrap_or(1_000_000)) {
                Ok(dev) => {
                    spi.insert((d.bus, d.cs), Mutex::new(dev));
                }
                Err(e) => {
                    tracing::warn!(bus = d.bus, cs = d.cs, %path, error = %e, "SPI device unavailable");
                    failed.add("spi", e.to_string());
                }
            }
        }
        // A toolset is unavailable when nothing of its kind opened; when some of it did, the
        // tools work on what opened and name what did not when asked for it.
        let mut unavailable = BTreeMap::new();
        if !def.i2c.is_empty() && i2c.is_empty() {
            unavailable.insert("i2c", failed.take("i2c"));
        }
        if let Some(why) = failed.0.remove("gpio") {
            unavailable.insert("gpio", why);
        }
        if !def.spi.is_empty() && spi.is_empty() {
            unavailable.insert("spi", failed.take("spi"));
        }
        if !def.pwm.is_empty() && pwm.is_empty() {
            unavailable.insert("pwm", failed.take("pwm"));
        }
        Ok(Hardware {
            def,
            i2c,
            lines: Mutex::new(BTreeMap::new()),
            unavailable,
            pwm,
            spi,
            sim: None,
            no_delays: Default::default(),
            mcus: Default::default(),
            mcu_sims: Default::default(),
            gpio_writes: Default::default(),
        })
    }

    #[cfg(not(all(target_os = "linux", feature = "linux")))]
    fn open_linux(_def: BoardDef) -> Result<Hardware, HwError> {
        Err(HwError::Open(
            "this build has no Linux backend (feature `linux`)".into(),
        ))
    }

    /// Makes sensor drivers skip their conversion waits. Only meaningful on the sim, whose
    /// devices convert at once: benchmarks use it to measure dispatch without device time.
    pub fn skip_driver_delays(&self, skip: bool) {
        self.no_delays
            .store(skip, std::sync::atomic::Ordering::Relaxed);
    }

    /// The board definition.
    pub fn def(&self) -> &BoardDef {
        &self.def
    }

    /// Why a kind of hardware (`i2c`, `spi`, `gpio`, `pwm`) could not be opened, when none of
    /// it could: the open errors, joined.
    pub fn unavailable(&self, kind: &str) -> Option<&str> {
        self.unavailable.get(kind).map(String::as_str)
    }

    /// Whether I2C bus `bus` opened.
    pub fn has_i2c_bus(&self, bus: u8) -> bool {
        self.i2c.contains_key(&bus)
    }

    /// The simulated board's handle (fault injection, framebuffer), on the sim backend.
    pub fn sim_handle(&self) -> Option<&SimBoard> {
        self.sim.as_ref()
    }

    /// I2C buses that opened.
    pub fn i2c_buses(&self) -> Vec<u8> {
        self.i2c.keys().copied().collect()
    }

    /// The bus a call names, else the board's first (`BoardDef::resolve_i2c_bus`).
    pub fn bus_or_default(&self, bus: Option<u8>) -> Result<u8, HwError> {
        Ok(self.def.resolve_i2c_bus(bus)?)
    }

    fn lock_bus(&self, bus: u8) -> Result<MutexGuard<'_, DynI2c>, HwError> {
        let m = self.i2c.get(&bus).ok_or_else(|| {
            HwError::NotFound(format!(
                "no I2C bus {bus} on this board (buses: {})",
                self.i2c
                    .keys()
                    .map(|b| b.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let deadline = Instant::now() + LOCK_TIMEOUT;
        loop {
            match m.try_lock() {
                Ok(g) => return Ok(g),
                Err(TryLockError::Poisoned(p)) => return Ok(p.into_inner()),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_micros(200))
                }
                Err(TryLockError::WouldBlock) => return Err(HwError::Busy(bus)),
            }
        }
    }

    /// Probes every non-reserved 7-bit address (0x08–0x77) with a one-byte read, like
    /// `i2cdetect -r`; returns the addresses that acknowledged.
    pub fn i2c_scan(&self, bus: u8) -> Result<Vec<u8>, HwError> {
        let mut g = self.lock_bus(bus)?;
        let mut found = Vec::new();
        let mut buf = [0u8; 1];
        for a in 0x08u8..=0x77 {
            match g.read(a, &mut buf) {
                Ok(()) => found.push(a),
                Err(BusError::Nack(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(found)
    }

    /// Reads `n` bytes.
    pub fn i2c_read(&self, bus: u8, address: u8, n: usize) -> Result<Vec<u8>, HwError> {
        let mut buf = vec![0u8; n];
        self.lock_bus(bus)?.read(address, &mut buf)?;
        Ok(buf)
    }

    /// Writes bytes.
    pub fn i2c_write(&self, bus: u8, address: u8, data: &[u8]) -> Result<(), HwError> {
        self.lock_bus(bus)?.write(address, data)?;
        Ok(())
    }

    /// Writes, then reads `n` bytes, in one repeated-start transaction.
    pub fn i2c_write_read(
        &self,
        bus: u8,
        address: u8,
        data: &[u8],
        n: usize,
    ) -> Result<Vec<u8>, HwError> {
        let mut buf = vec![0u8; n];
        self.lock_bus(bus)?.write_read(address, data, &mut buf)?;
        Ok(buf)
    }

    /// The declared device called `name` (`BoardDef::find_device`).
    pub fn device(&self, name: &str) -> Result<&DeviceDef, HwError> {
        Ok(self.def.find_device(name)?)
    }

    /// Reads a declared I2C sensor through its crates.io driver, holding the bus throughout.
    pub fn sensor_read(&self, name: &str) -> Result<Vec<Quantity>, HwError> {
        let d = self.device(name)?;
        if !d.driver.is_sensor() {
            return Err(HwError::NotFound(format!(
                "'{name}' ({}) is not a sensor",
                d.driver
            )));
        }
        let bus = self.bus_or_default(d.bus)?;
        let address = d
            .address
            .ok_or_else(|| HwError::NotFound(format!("sensor '{name}' declares no address")))?;
        let mut g = self.lock_bus(bus)?;
        let r = if self.no_delays.load(std::sync::atomic::Ordering::Relaxed) {
            sensors::read_with(d.driver, &mut *g, address, sensors::NoDelay)
        } else {
            sensors::read(d.driver, &mut *g, address)
        };
        r.map_err(|e| match e {
            sensors::SensorError::Bus(b) => HwError::Bus(b),
            other => HwError::Sensor(other.to_string()),
        })
    }

    /// Shows lines of text on a declared display.
    pub fn display_text(&self, name: &str, lines: &[String]) -> Result<(), HwError> {
        let (bus, address) = self.display(name)?;
        let mut g = self.lock_bus(bus)?;
        crate::display::show_text(&mut *g, address, lines)
            .map_err(|e| HwError::Sensor(e.to_string()))
    }

    /// Clears a declared display.
    pub fn display_clear(&self, name: &str) -> Result<(), HwError> {
        let (bus, address) = self.display(name)?;
        let mut g = self.lock_bus(bus)?;
        crate::display::clear(&mut *g, address).map_err(|e| HwError::Sensor(e.to_string()))
    }

    fn display(&self, name: &str) -> Result<(u8, u8), HwError> {
        let d = self.device(name)?;
        if d.driver != Driver::Ssd1306 {
            return Err(HwError::NotFound(format!(
                "'{name}' ({}) is not a display",
                d.driver
            )));
        }
        let bus = self.bus_or_default(d.bus)?;
        let address = d
            .address
            .ok_or_else(|| HwError::NotFound(format!("display '{name}' declares no address")))?;
        Ok((bus, address))
    }

    /// The first declared display.
    pub fn default_display(&self) -> Option<&str> {
        self.def.default_display().ok().map(|d| d.name.as_str())
    }

    /// A pin argument as a BCM number (`BoardDef::resolve_pin`).
    pub fn resolve_pin(&self, p: &PinRef) -> Result<u32, HwError> {
        Ok(self.def.resolve_pin(p)?)
    }

    /// A PWM channel argument (`BoardDef::resolve_channel`).
    pub fn resolve_channel(&self, p: &PinRef) -> Result<u32, HwError> {
        Ok(self.def.resolve_channel(p)?)
    }

    /// The line covo holds for `pin`, requested on first use.
    fn line(&self, pin: u32) -> Result<HeldLine, HwError> {
        let mut lines = self.lines.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(l) = lines.get(&pin) {
            return Ok(l.clone());
        }
        let l = Arc::new(Mutex::new(self.open_line(pin)?));
        lines.insert(pin, l.clone());
        Ok(l)
    }

    /// Runs `f` on a line, waiting at most [`LOCK_TIMEOUT`] for another call that holds it (an
    /// edge wait holds its line for the wait).
    fn with_line<T>(
        &self,
        pin: u32,
        f: impl FnOnce(&mut dyn Line) -> Result<T, BusError>,
    ) -> Result<T, HwError> {
        let line = self.line(pin)?;
        let deadline = Instant::now() + LOCK_TIMEOUT;
        let mut g = loop {
            match line.try_lock() {
                Ok(g) => break g,
                Err(TryLockError::Poisoned(p)) => break p.into_inner(),
                Err(TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(1))
                }
                Err(TryLockError::WouldBlock) => {
                    return Err(HwError::Line(BusError::Other(format!(
                        "GPIO{pin} is busy: another call (an edge wait?) is using it; try again"
                    ))))
                }
            }
        };
        f(g.as_mut()).map_err(HwError::Line)
    }

    fn open_line(&self, pin: u32) -> Result<Box<dyn Line>, HwError> {
        if let Some(sim) = &self.sim {
            return sim
                .line(pin)
                .map(|l| Box::new(l) as Box<dyn Line>)
                .ok_or_else(|| {
                    HwError::NotFound(format!("GPIO{pin} does not exist on the sim board"))
                });
        }
        self.open_linux_line(pin)
    }

    #[cfg(all(target_os = "linux", feature = "linux"))]
    fn open_linux_line(&self, pin: u32) -> Result<Box<dyn Line>, HwError> {
        let chip = self
            .def
            .pins
            .chip
            .clone()
            .unwrap_or_else(|| "/dev/gpiochip0".into());
        crate::backend::open_line(&chip, pin).map_err(HwError::Line)
    }

    #[cfg(not(all(target_os = "linux", feature = "linux")))]
    fn open_linux_line(&self, _pin: u32) -> Result<Box<dyn Line>, HwError> {
        Err(HwError::Open("this build has no GPIO backend".into()))
    }

    /// Reads a line's level, leaving its direction as it is.
    pub fn gpio_read(&self, pin: u32) -> Result<bool, HwError> {
        self.with_line(pin, |l| l.read())
    }

    /// Drives a line (making it an output if it was not).
    pub fn gpio_write(&self, pin: u32, high: bool) -> Result<(), HwError> {
        self.with_line(pin, |l| l.write(high))?;
        self.gpio_writes
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }

    /// How many GPIO writes have succeeded since the board was opened: a cheap way to notice
    /// that some output changed, whatever path wrote it.
    pub fn gpio_write_count(&self) -> u64 {
        self.gpio_writes.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The level of an output line, its direction left as it is: covo takes every line as is
    /// (see [`Hardware::gpio_read`]), so this is a read.
    pub fn gpio_output_level(&self, pin: u32) -> Result<bool, HwError> {
        self.gpio_read(pin)
    }

    /// Waits for an edge, up to `timeout`, on the line covo holds (an input; an output is
    /// refused rather than switched). The wait holds that line only.
    pub fn gpio_wait_edge(
        &self,
        pin: u32,
        edge: Edge,
        timeout: Duration,
    ) -> Result<Option<EdgeEvent>, HwError> {
        if let Some(d) = self
            .def
            .device
            .iter()
            .find(|d| d.driver == Driver::GpioOut && d.pin == Some(pin))
        {
            return Err(HwError::Line(BusError::Unsupported(format!(
                "GPIO{pin} ('{}') is declared an output (gpio_out): edges are watched on inputs; \
                 read its level with gpio_read",
                d.name
            ))));
        }
        self.with_line(pin, |l| l.wait_edge(edge, timeout))
    }

    /// Sets a PWM channel; returns what the hardware set.
    pub fn pwm_set(
        &self,
        channel: u32,
        frequency_hz: f64,
        duty: f64,
    ) -> Result<(f64, f64), HwError> {
        let m = self.pwm.get(&channel).ok_or_else(|| {
            HwError::NotFound(format!(
                "no PWM channel {channel} on this board (channels: {})",
                self.pwm
                    .keys()
                    .map(|c| c.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let mut g = m.lock().unwrap_or_else(|p| p.into_inner());
        Ok(g.set(frequency_hz, duty)?)
    }

    /// What a PWM channel is set to.
    pub fn pwm_get(&self, channel: u32) -> Option<(f64, f64)> {
        self.pwm
            .get(&channel)
            .map(|m| m.lock().unwrap_or_else(|p| p.into_inner()).get())
    }

    /// Full-duplex SPI transfer on `bus`/`cs` (default: the first declared); returns what was read.
    pub fn spi_transfer(
        &self,
        bus: Option<u8>,
        cs: Option<u8>,
        data: &[u8],
    ) -> Result<Vec<u8>, HwError> {
        let key = self.spi_key(bus, cs)?;
        let m = self
            .spi
            .get(&key)
            .ok_or_else(|| HwError::NotFound(format!("SPI {}.{} did not open", key.0, key.1)))?;
        let mut buf = data.to_vec();
        m.lock()
            .unwrap_or_else(|p| p.into_inner())
            .transfer_in_place(&mut buf)?;
        Ok(buf)
    }

    /// Writes on `bus`/`cs`, discarding what is read.
    pub fn spi_write(&self, bus: Option<u8>, cs: Option<u8>, data: &[u8]) -> Result<(), HwError> {
        let key = self.spi_key(bus, cs)?;
        let m = self
            .spi
            .get(&key)
            .ok_or_else(|| HwError::NotFound(format!("SPI {}.{} did not open", key.0, key.1)))?;
        m.lock().unwrap_or_else(|p| p.into_inner()).write(data)?;
        Ok(())
    }

    fn spi_key(&self, bus: Option<u8>, cs: Option<u8>) -> Result<(u8, u8), HwError> {
        let d = self.def.resolve_spi(bus, cs)?;
        Ok((d.bus, d.cs))
    }

    /// The declared serial port with this name or path (`BoardDef::resolve_serial`).
    pub fn serial_def(&self, port: &str) -> Result<&SerialDef, HwError> {
        Ok(self.def.resolve_serial(port)?)
    }

    /// Opens a declared serial port, found by USB ids when it declares them (device paths get
    /// renumbered), else by path.
    pub fn open_serial(
        &self,
        port: &str,
        baud: Option<u32>,
        timeout: Duration,
    ) -> Result<Box<dyn SerialIo>, HwError> {
        let d = self.serial_def(port)?;
        if let (Some(sim), Some(path)) = (&self.sim, d.path.as_deref()) {
            if let Some(name) = path.strip_prefix("sim:") {
                let mut p = sim.serial(name).ok_or_else(|| {
                    HwError::NotFound(format!("the sim has no serial device '{name}'"))
                })?;
                p.set_timeout(timeout);
                return Ok(Box::new(p));
            }
        }
        let path = match &d.usb {
            Some(usb) => {
                let ports = crate::backend::list_ports();
                crate::backend::match_port(usb, &ports)?.path.clone()
            }
            None => d.path.clone().ok_or_else(|| {
                HwError::NotFound(format!(
                    "serial port '{}' declares neither a path nor USB ids",
                    d.name
                ))
            })?,
        };
        self.open_serial_path(&path, baud.or(d.baud).unwrap_or(115_200), timeout)
    }

    #[cfg(all(target_os = "linux", feature = "linux"))]
    fn open_serial_path(
        &self,
        path: &str,
        baud: u32,
        timeout: Duration,
    ) -> Result<Box<dyn SerialIo>, HwError> {
        Ok(crate::backend::open_serial(path, baud, timeout)?)
    }

    #[cfg(not(all(target_os = "linux", feature = "linux")))]
    fn open_serial_path(
        &self,
        _path: &str,
        _baud: u32,
        _timeout: Duration,
    ) -> Result<Box<dyn SerialIo>, HwError> {
        Err(HwError::Open("this build has no serial backend".into()))
    }

    /// The declared microcontrollers (`BoardDef::mcu_devices`).
    pub fn mcu_devices(&self) -> Vec<&DeviceDef> {
        self.def.mcu_devices().collect()
    }

    /// The MCU device a call means: the named one, or the only one (`BoardDef::resolve_mcu`).
    pub fn mcu_name(&self, name: Option<&str>) -> Result<String, HwError> {
        Ok(self.def.resolve_mcu(name).map(|d| d.name.clone())?)
    }

    /// Runs `f` on the link to MCU `name`, connecting (with a handshake) on first use.
    pub fn with_mcu<R>(
        &self,
        name: &str,
        f: impl FnOnce(&mut crate::mcu::McuLink) -> R,
    ) -> Result<R, HwError> {
        let mut links = self.mcus.lock().unwrap_or_else(|p| p.into_inner());
        if !links.contains_key(name) {
            let open = self.mcu_opener(name)?;
            let link = crate::mcu::McuLink::connect(open, MCU_CONNECT_DEADLINE)
                .map_err(|e| HwError::Open(format!("microcontroller '{name}': {e}")))?;
            links.insert(name.to_string(), link);
        }
        let link = links.get_mut(name).ok_or_else(|| {
            HwError::NotFound(format!("microcontroller '{name}' did not connect"))
        })?;
        Ok(f(link))
    }

    /// Whether MCU `name` is connected now, and its link counters.
    pub fn mcu_status(
        &self,
        name: &str,
    ) -> Option<(Option<covo_mcu_protocol::DeviceInfo>, crate::mcu::LinkStats)> {
        let links = self.mcus.lock().unwrap_or_else(|p| p.into_inner());
        links.get(name).map(|l| (l.info().cloned(), l.stats()))
    }

    /// Starts (once) the host simulation of MCU `name`, the firmware behind a real pty (the
    /// same client code path as a real port); returns the pty's path and, when its `flash`
    /// method is `uf2`, its simulated BOOTSEL drive (the board file's `drive`, else a directory
    /// of this process under the temporary directory).
    fn mcu_sim(&self, name: &str) -> Result<(String, Option<std::path::PathBuf>), HwError> {
        let d = self.device(name)?;
        let mut sims = self.mcu_sims.lock().unwrap_or_else(|p| p.into_inner());
        if !sims.contains_key(name) {
            let started = match d.flash.as_ref().filter(|f| f.method == FlashMethod::Uf2) {
                Some(f) => {
                    let drive = f.drive.clone().unwrap_or_else(|| {
                        // One per simulation, also with several boards in one process.
                        static SIMS: std::sync::atomic::AtomicU64 =
                            std::sync::atomic::AtomicU64::new(0);
                        let n = SIMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        std::env::temp_dir()
                            .join(format!("covo-bootsel-{}-{n}-{name}", std::process::id()))
                    });
                    covo_mcu_core::spawn_pty_sim_with_bootsel(&drive)
                }
                None => covo_mcu_core::spawn_pty_sim(),
            };
            let (_, handle) = started.map_err(|e| {
                HwError::Open(format!("cannot start the simulated microcontroller: {e}"))
            })?;
            sims.insert(name.to_string(), handle);
        }
        let sim = &sims[name];
        Ok((
            sim.path().to_string(),
            sim.bootsel_drive().map(|p| p.to_path_buf()),
        ))
    }

    /// Closes the link to MCU `name`, so the next call connects and shakes hands afresh: for
    /// when the device goes away on purpose (a reboot into its bootloader).
    pub fn mcu_forget(&self, name: &str) {
        let mut links = self.mcus.lock().unwrap_or_else(|p| p.into_inner());
        links.remove(name);
    }

    /// How MCU `name` is flashed: its board file's `flash`, the path of its serial port now,
    /// and (on the sim board) its simulated BOOTSEL drive.
    pub fn mcu_flash_target(&self, name: &str) -> Result<FlashTarget, HwError> {
        let d = self.device(name)?;
        let flash = d.flash.clone().ok_or_else(|| {
            HwError::NotFound(format!(
                "microcontroller '{name}' declares no `flash` in the board file \
                 (a Pico: flash = {{ method = \"uf2\" }}; an SWD probe: \
                 flash = {{ method = \"probe-rs\", chip = \"…\" }})"
            ))
        })?;
        let port = d.port.clone().ok_or_else(|| {
            HwError::NotFound(format!("microcontroller '{name}' declares no port"))
        })?;
        let sdef = self.serial_def(&port)?.clone();
        if sdef.path.as_deref() == Some("sim:mcu") {
            let (path, drive) = self.mcu_sim(name)?;
            return Ok(FlashTarget {
                drive: drive.or(flash.drive.clone()),
                flash,
                port: Some(path),
            });
        }
        let path = match &sdef.usb {
            Some(usb) => crate::backend::match_port(usb, &crate::backend::list_ports())
                .ok()
                .map(|p| p.path.clone()),
            None => sdef.path.clone(),
        };
        Ok(FlashTarget {
            drive: flash.drive.clone(),
            flash,
            port: path,
        })
    }

    fn mcu_opener(&self, name: &str) -> Result<crate::mcu::Opener, HwError> {
        let d = self.device(name)?;
        let port = d.port.clone().ok_or_else(|| {
            HwError::NotFound(format!("microcontroller '{name}' declares no port"))
        })?;
        let sdef = self.serial_def(&port)?.clone();
        let baud = sdef.baud.unwrap_or(115_200);
        if sdef.path.as_deref() == Some("sim:mcu") {
            let path = self.mcu_sim(name)?.0;
            return Ok(Box::new(move || open_serial_port(&path, baud)));
        }
        Ok(Box::new(move || {
            let path = match &sdef.usb {
                Some(usb) => crate::backend::match_port(usb, &crate::backend::list_ports())?
                    .path
                    .clone(),
                None => sdef.path.clone().ok_or_else(|| {
                    BusError::Other(format!("serial port '{}' has no path", sdef.name))
                })?,
            };
            open_serial_port(&path, baud)
        }))
    }
}

/// Reads from a port until `delimiter` (when given) has been read, `max` bytes have arrived, or
/// `timeout` has passed; returns what arrived and why it stopped.
pub fn read_until(
    port: &mut dyn SerialIo,
    delimiter: Option<&[u8]>,
    max: usize,
    timeout: Duration,
) -> Result<(Vec<u8>, &'static str), HwError> {
    let deadline = Instant::now() + timeout;
    let mut out = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        if let Some(d) = delimiter {
            if !d.is_empty() && out.windows(d.len()).any(|w| w == d) {
                return Ok((out, "delimiter"));
            }
        }
        if out.len() >= max {
            out.truncate(max);
            return Ok((out, "max_bytes"));
        }
        if Instant::now() >= deadline {
            return Ok((out, "timeout"));
        }
        match port.read(&mut buf[..(max - out.len()).min(256)]) {
            Ok(0) => std::thread::sleep(Duration::from_millis(2)),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e)
                if e.kind() == std::io::ErrorKind::TimedOut
                    || e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(HwError::Bus(BusError::Other(e.to_string()))),
        }
    }
}

/// How long the first handshake with a microcontroller may take (QEMU's pty notices a new
/// client slowly; a Pico re-enumerating after a reset takes a moment too).
pub const MCU_CONNECT_DEADLINE: Duration = Duration::from_secs(3);

#[cfg(all(target_os = "linux", feature = "linux"))]
fn open_serial_port(path: &str, baud: u32) -> Result<Box<dyn SerialIo>, BusError> {
    crate::backend::open_serial(path, baud, Duration::from_millis(20))
}

#[cfg(not(all(target_os = "linux", feature = "linux")))]
fn open_serial_port(_path: &str, _baud: u32) -> Result<Box<dyn SerialIo>, BusError> {
    Err(BusError::Unsupported(
        "this build has no serial backend".into(),
    ))
}
