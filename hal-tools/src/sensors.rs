//! Reading sensors through their crates.io drivers, on any bus with [`BusError`].
//!
//! Each read initialises the driver from scratch: the tool is stateless, and a sensor that was
//! power-cycled or reset in between still reads correctly. Drivers:
//! - `bme280`: temperature, humidity, pressure (crate `bme280`);
//! - `bmp280`: temperature, pressure (the same crate accepts the BMP280 chip id 0x58);
//! - `bh1750`: illuminance, one-time high-resolution measurement (crate `bh1750`);
//! - `sht4x`: temperature, humidity, one high-precision single shot, 9 ms (crate `sht4x`;
//!   addresses 0x44-0x46 only, as the crate takes them);
//! - `sht3x`: temperature, humidity, soft reset then one high-repeatability single shot with
//!   clock stretching (crate `embedded-sht3x`, which offers no polled variant);
//! - `aht20`: temperature, humidity; calibrates if the status says so, triggers, polls the
//!   busy bit (crate `aht20-driver`, its retry loops capped at 100 bus operations);
//! - `scd4x`: CO2, temperature, humidity (SCD40 and SCD41, crate `scd4x`). The SCD40 has no
//!   single shot, so a read stops any running measurement, starts periodic measurement,
//!   waits the 5 s for its first sample, reads it and stops again: **about 6 s**, with the
//!   bus held throughout (other reads on that bus wait);
//! - `ads1115`: the four single-ended inputs in volts, one one-shot conversion each at
//!   128 SPS and ±4.096 V full scale, about 40 ms in all (crate `ads1x1x`; addresses
//!   0x48-0x4B).
//!
//! What each driver measures, what a reading puts on the bus and the rest of its facts are in
//! its entry of [`Driver::info`](crate::driver::Driver::info); a further driver is that entry,
//! one `read_*` function and one arm in [`read_with`].

use crate::bus::BusError;
use crate::driver::Driver;
use embedded_hal::delay::DelayNs;
use embedded_hal::i2c::I2c;

/// One measured value.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    /// What it is (`temperature`).
    pub name: &'static str,
    /// The value in `unit`.
    pub value: f64,
    /// The unit (`degC`).
    pub unit: &'static str,
}

/// Why a sensor could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SensorError {
    /// The driver is not a sensor's (a display, a GPIO line, ...).
    #[error("'{0}' is not a sensor driver")]
    NotASensor(Driver),
    /// The bus failed (a NACK means nothing answered at that address).
    #[error(transparent)]
    Bus(BusError),
    /// The driver rejected what the device said (wrong chip id, bad data).
    #[error("driver: {0}")]
    Driver(String),
}

pub use crate::driver::Footprint;

/// Delays by sleeping the thread; drivers wait for conversions with it.
#[derive(Debug, Clone, Copy, Default)]
pub struct StdDelay;

impl DelayNs for StdDelay {
    fn delay_ns(&mut self, ns: u32) {
        std::thread::sleep(std::time::Duration::from_nanos(ns as u64));
    }
}

/// Skips every delay: for benchmarks on the sim, whose devices convert at once, so dispatch
/// overhead can be measured without the drivers' conversion waits.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoDelay;

impl DelayNs for NoDelay {
    fn delay_ns(&mut self, _ns: u32) {}
}

/// Reads every quantity of `driver` at `address`, waiting for conversions by sleeping.
pub fn read<I: I2c<Error = BusError>>(
    driver: Driver,
    i2c: I,
    address: u8,
) -> Result<Vec<Quantity>, SensorError> {
    read_with(driver, i2c, address, StdDelay)
}

/// Reads every quantity of `driver` at `address`, waiting with `delay`.
pub fn read_with<I: I2c<Error = BusError>, D: DelayNs + Copy>(
    driver: Driver,
    i2c: I,
    address: u8,
    delay: D,
) -> Result<Vec<Quantity>, SensorError> {
    use Driver as D;
    let values = match driver {
        D::Bme280 => read_bme280(i2c, address, delay, true)?,
        D::Bmp280 => read_bme280(i2c, address, delay, false)?,
        D::Bh1750 => read_bh1750(i2c, address, delay)?,
        D::Sht4x => read_sht4x(i2c, address, delay)?,
        D::Sht3x => read_sht3x(i2c, address, delay)?,
        D::Aht20 => read_aht20(i2c, address, delay)?,
        D::Scd4x => read_scd4x(i2c, address, delay)?,
        D::Ads1115 => read_ads1115(i2c, address, delay)?,
        D::Ssd1306 | D::GpioOut | D::GpioIn | D::Pwm | D::Serial | D::Mcu => {
            return Err(SensorError::NotASensor(driver))
        }
    };
    Ok(driver
        .quantities()
        .iter()
        .zip(values)
        .map(|(q, value)| Quantity {
            name: q.name,
            value,
            unit: q.unit,
        })
        .collect())
}

// Each `read_*` returns its values in the order its driver's `quantities` names them.

fn read_bme280<I: I2c<Error = BusError>, D: DelayNs>(
    i2c: I,
    address: u8,
    mut delay: D,
    humidity: bool,
) -> Result<Vec<f64>, SensorError> {
    let mut sensor = bme280::i2c::BME280::new(i2c, address);
    sensor.init(&mut delay).map_err(from_bme280)?;
    let m = sensor.measure(&mut delay).map_err(from_bme280)?;
    let (t, p) = (m.temperature as f64, m.pressure as f64 / 100.0);
    Ok(if humidity {
        vec![t, m.humidity as f64, p]
    } else {
        vec![t, p]
    })
}

fn read_bh1750<I: I2c<Error = BusError>, D: DelayNs>(
    i2c: I,
    address: u8,
    delay: D,
) -> Result<Vec<f64>, SensorError> {
    let mut sensor = bh1750::BH1750::new_custom_address(i2c, delay, address);
    sensor.power_on().map_err(from_bh1750)?;
    let lux = sensor
        .get_one_time_measurement(bh1750::Resolution::High)
        .map_err(from_bh1750)?;
    Ok(vec![lux as f64])
}

fn read_sht4x<I: I2c<Error = BusError>, D: DelayNs>(
    i2c: I,
    address: u8,
    mut delay: D,
) -> Result<Vec<f64>, SensorError> {
    let address = match address {
        0x44 => sht4x::Address::Address0x44,
        0x45 => sht4x::Address::Address0x45,
        0x46 => sht4x::Address::Address0x46,
        other => {
            return Err(SensorError::Driver(format!(
                "0x{other:02x} is not an SHT4x address (0x44, 0x45 or 0x46)"
            )))
        }
    };
    let mut sensor = sht4x::Sht4x::new_with_address(i2c, address);
    let m = sensor
        .measure(sht4x::Precision::High, &mut delay)
        .map_err(from_sht4x)?;
    let t = m.temperature_celsius().to_num::<f64>();
    // The datasheet's formula runs from -6 to 119 %RH; it says to crop to the physical range.
    let rh = m.humidity_percent().to_num::<f64>().clamp(0.0, 100.0);
    Ok(vec![t, rh])
}

fn read_sht3x<I: I2c<Error = BusError>, D: DelayNs>(
    i2c: I,
    address: u8,
    delay: D,
) -> Result<Vec<f64>, SensorError> {
    let mut sensor = embedded_sht3x::Sht3x::new(i2c, address, delay).map_err(from_sht3x)?;
    sensor.repeatability = embedded_sht3x::Repeatability::High;
    let m = sensor.single_measurement().map_err(from_sht3x)?;
    Ok(vec![
        m.temperature.0 as f64,
        m.relative_humidity.value() as f64,
    ])
}

/// Bus operations one AHT20 read may take. A healthy read takes 4 to 6; the crate retries
/// calibration, busy polls and CRC failures without limit, so a chip that never reports
/// calibrated (or another device at 0x38, such as an FT6236 touch controller) would hold the
/// bus forever.
const AHT20_BUS_BUDGET: u32 = 100;

fn read_aht20<I: I2c<Error = BusError>, D: DelayNs>(
    i2c: I,
    address: u8,
    mut delay: D,
) -> Result<Vec<f64>, SensorError> {
    let mut sensor = aht20_driver::AHT20::new(Bounded::new(i2c, AHT20_BUS_BUDGET), address);
    let r = sensor
        .init(&mut delay)
        .and_then(|mut s| s.measure(&mut delay));
    let bounded = sensor.destroy();
    match r {
        Ok(m) => Ok(vec![m.temperature as f64, m.humidity as f64]),
        Err(_) if bounded.exhausted => Err(SensorError::Driver(format!(
            "aht20: no calibrated, ready, CRC-clean reading within {AHT20_BUS_BUDGET} bus \
             operations (is it an AHT20 at 0x{address:02x}?)"
        ))),
        Err(aht20_driver::Error::I2c(b)) => Err(SensorError::Bus(b)),
        Err(other) => Err(SensorError::Driver(format!("aht20: {other}"))),
    }
}

/// An I2C bus that refuses every operation after `budget` of them, to bound a driver's
/// retry loops; `exhausted` tells the refusal apart from a real bus error.
struct Bounded<I> {
    i2c: I,
    left: u32,
    exhausted: bool,
}

impl<I> Bounded<I> {
    fn new(i2c: I, budget: u32) -> Self {
        Bounded {
            i2c,
            left: budget,
            exhausted: false,
        }
    }

    fn spend(&mut self) -> Result<(), BusError> {
        if self.left == 0 {
            self.exhausted = true;
            return Err(BusError::Timeout);
        }
        self.left -= 1;
        Ok(())
    }
}

impl<I: I2c<Error = BusError>> embedded_hal::i2c::ErrorType for Bounded<I> {
    type Error = BusError;
}

impl<I: I2c<Error = BusError>> I2c for Bounded<I> {
    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [embedded_hal::i2c::Operation<'_>],
    ) -> Result<(), BusError> {
        self.spend()?;
        self.i2c.transaction(address, operations)
    }
    // The defaults would funnel these into `transaction`; forward them so the bus sees
    // exactly what the driver asked for.
    fn read(&mut self, address: u8, read: &mut [u8]) -> Result<(), BusError> {
        self.spend()?;
        self.i2c.read(address, read)
    }
    fn write(&mut self, address: u8, write: &[u8]) -> Result<(), BusError> {
        self.spend()?;
        self.i2c.write(address, write)
    }
    fn write_read(&mut self, address: u8, write: &[u8], read: &mut [u8]) -> Result<(), BusError> {
        self.spend()?;
        self.i2c.write_read(address, write, read)
    }
}

/// The SCD4x's only address; the crate has it fixed.
const SCD4X_ADDRESS: u8 = 0x62;
/// Periodic measurement delivers its first sample after one 5 s signal update interval.
const SCD4X_FIRST_SAMPLE_MS: u32 = 5000;
/// Data-ready polls after that, 100 ms apart: 2 s of slack for a slow oscillator.
const SCD4X_READY_POLLS: u32 = 20;

fn read_scd4x<I: I2c<Error = BusError>, D: DelayNs + Copy>(
    i2c: I,
    address: u8,
    mut delay: D,
) -> Result<Vec<f64>, SensorError> {
    if address != SCD4X_ADDRESS {
        return Err(SensorError::Driver(format!(
            "the SCD4x answers only at 0x{SCD4X_ADDRESS:02x}, not 0x{address:02x}"
        )));
    }
    let mut sensor = scd4x::Scd4x::new(i2c, delay);
    // A previous read, or another program, may have left it measuring; stopping is
    // harmless when idle and costs 500 ms.
    sensor.stop_periodic_measurement().map_err(from_scd4x)?;
    sensor.start_periodic_measurement().map_err(from_scd4x)?;
    delay.delay_ms(SCD4X_FIRST_SAMPLE_MS);
    let sample = scd4x_next_sample(&mut sensor, &mut delay);
    // Back to idle whatever happened: periodic measurement keeps the sensor drawing power and
    // refuses most commands.
    let stopped = sensor.stop_periodic_measurement().map_err(from_scd4x);
    let m = sample?;
    stopped?;
    Ok(vec![m.co2 as f64, m.temperature as f64, m.humidity as f64])
}

fn scd4x_next_sample<I: I2c<Error = BusError>, D: DelayNs>(
    sensor: &mut scd4x::Scd4x<I, D>,
    delay: &mut D,
) -> Result<scd4x::types::SensorData, SensorError> {
    for _ in 0..SCD4X_READY_POLLS {
        if sensor.data_ready_status().map_err(from_scd4x)? {
            return sensor.measurement().map_err(from_scd4x);
        }
        delay.delay_ms(100);
    }
    Err(SensorError::Driver(format!(
        "scd4x: no sample ready {} s after starting periodic measurement",
        (SCD4X_FIRST_SAMPLE_MS + 100 * SCD4X_READY_POLLS) / 1000
    )))
}

/// ±4.096 V: the narrowest range that still covers a 3.3 V input, so 125 µV per count.
const ADS1115_FULL_SCALE_V: f64 = 4.096;
/// One conversion at the default 128 SPS takes 7.8 ms, ±10 % for the internal oscillator.
const ADS1115_CONVERSION_US: u32 = 9_000;
/// Polls of the OS bit, 1 ms apart, before a conversion counts as lost.
const ADS1115_POLLS: u32 = 20;

fn read_ads1115<I: I2c<Error = BusError>, D: DelayNs>(
    i2c: I,
    address: u8,
    mut delay: D,
) -> Result<Vec<f64>, SensorError> {
    use ads1x1x::channel::{SingleA0, SingleA1, SingleA2, SingleA3};
    let target = match address {
        0x48 => ads1x1x::TargetAddr::Gnd,
        0x49 => ads1x1x::TargetAddr::Vdd,
        0x4A => ads1x1x::TargetAddr::Sda,
        0x4B => ads1x1x::TargetAddr::Scl,
        other => {
            return Err(SensorError::Driver(format!(
                "0x{other:02x} is not an ADS1115 address (0x48 to 0x4b)"
            )))
        }
    };
    let mut adc = ads1x1x::Ads1x1x::new_ads1115(i2c, target);
    adc.set_full_scale_range(ads1x1x::FullScaleRange::Within4_096V)
        .map_err(from_ads1x1x)?;
    let raw = [
        ads1115_one_shot(&mut delay, || adc.read(SingleA0))?,
        ads1115_one_shot(&mut delay, || adc.read(SingleA1))?,
        ads1115_one_shot(&mut delay, || adc.read(SingleA2))?,
        ads1115_one_shot(&mut delay, || adc.read(SingleA3))?,
    ];
    Ok(raw
        .iter()
        .map(|&r| r as f64 * ADS1115_FULL_SCALE_V / 32768.0)
        .collect())
}

/// Drives the crate's non-blocking one-shot `read`: the first call starts the conversion, later
/// calls poll until it is done. Waits between calls instead of spinning on the bus.
fn ads1115_one_shot<D: DelayNs>(
    delay: &mut D,
    mut read: impl FnMut() -> nb::Result<i16, ads1x1x::Error<BusError>>,
) -> Result<i16, SensorError> {
    let mut wait_us = ADS1115_CONVERSION_US;
    for _ in 0..=ADS1115_POLLS {
        match read() {
            Ok(raw) => return Ok(raw),
            Err(nb::Error::WouldBlock) => delay.delay_us(wait_us),
            Err(nb::Error::Other(e)) => return Err(from_ads1x1x(e)),
        }
        wait_us = 1_000;
    }
    Err(SensorError::Driver(format!(
        "ads1115: a conversion did not finish within {} ms",
        (ADS1115_CONVERSION_US + 1_000 * ADS1115_POLLS) / 1000
    )))
}

fn from_bme280(e: bme280::Error<BusError>) -> SensorError {
    match e {
        bme280::Error::Bus(b) => SensorError::Bus(b),
        bme280::Error::UnsupportedChip => {
            SensorError::Driver("chip id is neither BME280 (0x60) nor BMP280 (0x58)".into())
        }
        other => SensorError::Driver(format!("{other:?}")),
    }
}

fn from_bh1750(e: bh1750::BH1750Error<BusError>) -> SensorError {
    match e {
        bh1750::BH1750Error::I2C(b) => SensorError::Bus(b),
        other => SensorError::Driver(format!("{other:?}")),
    }
}

fn from_sht4x(e: sht4x::Error<BusError>) -> SensorError {
    match e {
        sht4x::Error::I2c(b) => SensorError::Bus(b),
        sht4x::Error::Crc => {
            SensorError::Driver("sht4x: the measurement failed its CRC check".into())
        }
        other => SensorError::Driver(format!("sht4x: {other:?}")),
    }
}

fn from_sht3x(e: embedded_sht3x::Error<BusError>) -> SensorError {
    match e {
        embedded_sht3x::Error::I2c(b) => SensorError::Bus(b),
        embedded_sht3x::Error::BadCrc => {
            SensorError::Driver("sht3x: the measurement failed its CRC check".into())
        }
    }
}

fn from_scd4x(e: scd4x::Error<BusError>) -> SensorError {
    match e {
        scd4x::Error::I2c(b) => SensorError::Bus(b),
        scd4x::Error::Crc => SensorError::Driver("scd4x: a word failed its CRC check".into()),
        other => SensorError::Driver(format!("scd4x: {other}")),
    }
}

fn from_ads1x1x(e: ads1x1x::Error<BusError>) -> SensorError {
    match e {
        ads1x1x::Error::I2C(b) => SensorError::Bus(b),
        ads1x1x::Error::InvalidInputData => {
            SensorError::Driver("ads1115: invalid input data".into())
        }
    }
}

/// What the drivers send, checked transaction by transaction against embedded-hal-mock. The
/// register map is declared here a second time, from the datasheets, so a wrong constant in a
/// model or a driver shows up.
#[cfg(test)]
// Binary literals are grouped by register bit field (osrs_t | osrs_p | mode), not by nibble.
#[allow(clippy::unusual_byte_groupings)]
pub(crate) mod tests {
    use super::*;
    use embedded_hal::i2c::{Error as _, ErrorKind, NoAcknowledgeSource};
    use embedded_hal_mock::eh1::i2c::{Mock, Transaction as T};

    /// The mock with `BusError`, keeping `write`, `read` and `write_read` apart (the mock
    /// checks which one a driver called; `bus::Erased` funnels all into `transaction`).
    pub(crate) struct MockBus(pub Mock);

    impl embedded_hal::i2c::ErrorType for MockBus {
        type Error = BusError;
    }

    impl I2c for MockBus {
        fn read(&mut self, a: u8, buf: &mut [u8]) -> Result<(), BusError> {
            self.0
                .read(a, buf)
                .map_err(|e| BusError::from_kind(e.kind(), a))
        }
        fn write(&mut self, a: u8, bytes: &[u8]) -> Result<(), BusError> {
            self.0
                .write(a, bytes)
                .map_err(|e| BusError::from_kind(e.kind(), a))
        }
        fn write_read(&mut self, a: u8, bytes: &[u8], buf: &mut [u8]) -> Result<(), BusError> {
            self.0
                .write_read(a, bytes, buf)
                .map_err(|e| BusError::from_kind(e.kind(), a))
        }
        fn transaction(
            &mut self,
            a: u8,
            ops: &mut [embedded_hal::i2c::Operation<'_>],
        ) -> Result<(), BusError> {
            self.0
                .transaction(a, ops)
                .map_err(|e| BusError::from_kind(e.kind(), a))
        }
    }

    /// Forwards to a bus and records the largest single write and read that reached it
    /// (a write-read's write part and read part count apart, as `Footprint` counts them).
    pub(crate) struct Sizes<I> {
        pub(crate) i2c: I,
        pub(crate) largest: std::rc::Rc<std::cell::Cell<(usize, usize)>>,
    }

    impl<I> Sizes<I> {
        pub(crate) fn new(i2c: I) -> (Self, std::rc::Rc<std::cell::Cell<(usize, usize)>>) {
            let largest = std::rc::Rc::new(std::cell::Cell::new((0, 0)));
            (
                Sizes {
                    i2c,
                    largest: largest.clone(),
                },
                largest,
            )
        }
        fn saw(&self, w: usize, r: usize) {
            let (a, b) = self.largest.get();
            self.largest.set((a.max(w), b.max(r)));
        }
    }

    impl<I: I2c<Error = BusError>> embedded_hal::i2c::ErrorType for Sizes<I> {
        type Error = BusError;
    }

    impl<I: I2c<Error = BusError>> I2c for Sizes<I> {
        fn read(&mut self, a: u8, buf: &mut [u8]) -> Result<(), BusError> {
            self.saw(0, buf.len());
            self.i2c.read(a, buf)
        }
        fn write(&mut self, a: u8, bytes: &[u8]) -> Result<(), BusError> {
            self.saw(bytes.len(), 0);
            self.i2c.write(a, bytes)
        }
        fn write_read(&mut self, a: u8, bytes: &[u8], buf: &mut [u8]) -> Result<(), BusError> {
            self.saw(bytes.len(), buf.len());
            self.i2c.write_read(a, bytes, buf)
        }
        fn transaction(
            &mut self,
            a: u8,
            ops: &mut [embedded_hal::i2c::Operation<'_>],
        ) -> Result<(), BusError> {
            for op in ops.iter() {
                match op {
                    embedded_hal::i2c::Operation::Read(b) => self.saw(0, b.len()),
                    embedded_hal::i2c::Operation::Write(b) => self.saw(b.len(), 0),
                }
            }
            self.i2c.transaction(a, ops)
        }
    }

    /// Reads `driver` through a recording bus and holds it to its declared footprint: the
    /// largest write and read must be exactly what `footprint` says.
    fn read_sized(driver: Driver, mock: &Mock, address: u8) -> Result<Vec<Quantity>, SensorError> {
        let (bus, largest) = Sizes::new(MockBus(mock.clone()));
        let q = read_with(driver, bus, address, NoDelay);
        let fp = driver.footprint().unwrap();
        assert_eq!(
            largest.get(),
            (fp.write, fp.read),
            "{driver}: the largest write and read on the bus against its footprint"
        );
        q
    }

    #[test]
    fn every_driver_has_a_footprint_that_writes() {
        for d in Driver::ALL.iter().copied().filter(|d| d.is_sensor()) {
            let fp = d
                .footprint()
                .unwrap_or_else(|| panic!("{d} has no footprint"));
            assert!(fp.write > 0 && fp.read > 0 && !fp.writes.is_empty(), "{d}");
        }
        assert_eq!(Driver::Ssd1306.footprint(), None);
    }

    // BME280 (BST-BME280-DS002, table 18)
    const BME: u8 = 0x76;
    const ID: u8 = 0xD0;
    const RESET: u8 = 0xE0;
    const CALIB00: u8 = 0x88;
    const CALIB26: u8 = 0xE1;
    const CTRL_HUM: u8 = 0xF2;
    const CTRL_MEAS: u8 = 0xF4;
    const CONFIG: u8 = 0xF5;
    const PRESS_MSB: u8 = 0xF7;

    /// The datasheet's worked example (section 8.1) for T and P, little-endian words; dig_H1 at
    /// 0xA1 = 75.
    const CALIB_PT: [u8; 26] = [
        0x70, 0x6B, 0x43, 0x67, 0x18, 0xFC, // T1 27504, T2 26435, T3 -1000
        0x7D, 0x8E, 0x43, 0xD6, 0xD0, 0x0B, // P1 36477, P2 -10685, P3 3024
        0x27, 0x0B, 0x8C, 0x00, 0xF9, 0xFF, // P4 2855, P5 140, P6 -7
        0x8C, 0x3C, 0xF8, 0xC6, 0x70, 0x17, // P7 15500, P8 -14600, P9 6000
        0x00, 0x4B, // reserved, H1 75
    ];
    /// H2 362, H3 0, H4 313 (0x13 << 4 | 0x9), H5 50 (0x03 << 4 | 0x2), H6 30.
    const CALIB_H: [u8; 7] = [0x6A, 0x01, 0x00, 0x13, 0x29, 0x03, 0x1E];

    fn bme280_init() -> Vec<T> {
        vec![
            T::write_read(BME, vec![ID], vec![0x60]),
            T::write(BME, vec![RESET, 0xB6]),
            T::write_read(BME, vec![CALIB00], CALIB_PT.to_vec()),
            T::write_read(BME, vec![CALIB26], CALIB_H.to_vec()),
            // sleeping, so no second reset
            T::write_read(BME, vec![CTRL_MEAS], vec![0x00]),
            T::write(BME, vec![CTRL_HUM, 0b001]),
            T::write_read(BME, vec![CTRL_MEAS], vec![0x00]),
            // osrs_t 2x, osrs_p 16x, sleep
            T::write(BME, vec![CTRL_MEAS, 0b010_10100]),
            T::write_read(BME, vec![CONFIG], vec![0x00]),
            // IIR filter coefficient 16
            T::write(BME, vec![CONFIG, 0b000_100_00]),
        ]
    }

    #[test]
    fn bme280_reads_the_chip_id_then_resets_calibrates_configures_and_forces_a_conversion() {
        let mut expected = bme280_init();
        expected.extend([
            T::write_read(BME, vec![CTRL_MEAS], vec![0b010_10100]),
            T::write_read(BME, vec![CTRL_MEAS], vec![0b010_10100]),
            T::write(BME, vec![CTRL_MEAS, 0b010_10101]),
            // adc_P 415148, adc_T 519888 (the datasheet example), adc_H 28004
            T::write_read(
                BME,
                vec![PRESS_MSB],
                vec![0x65, 0x5A, 0xC0, 0x7E, 0xED, 0x00, 0x6D, 0x64],
            ),
        ]);
        let mut mock = Mock::new(&expected);
        let q = read_sized(Driver::Bme280, &mock, BME).unwrap();
        mock.done();
        assert_eq!(q.len(), 3);
        assert_eq!((q[0].name, q[0].unit), ("temperature", "degC"));
        assert!((q[0].value - 25.08).abs() < 0.01, "{q:?}");
        assert_eq!((q[1].name, q[1].unit), ("humidity", "%RH"));
        assert!((q[1].value - 43.88).abs() < 0.05, "{q:?}");
        assert_eq!((q[2].name, q[2].unit), ("pressure", "hPa"));
        assert!((q[2].value - 1006.5327).abs() < 0.01, "{q:?}");
    }

    #[test]
    fn bme280_stops_at_a_chip_id_that_is_not_a_bosch_sensor() {
        let mut mock = Mock::new(&[T::write_read(BME, vec![ID], vec![0x00])]);
        let e = read(Driver::Bme280, MockBus(mock.clone()), BME).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("chip id")),
            "{e}"
        );
    }

    #[test]
    fn a_nack_from_the_driver_comes_out_as_a_bus_nack() {
        let mut mock = Mock::new(&[T::write_read(BME, vec![ID], vec![0x00])
            .with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address))]);
        let e = read(Driver::Bme280, MockBus(mock.clone()), BME).unwrap_err();
        mock.done();
        assert_eq!(e, SensorError::Bus(BusError::Nack(BME)));
    }

    // BH1750FVI (datasheet, instruction set architecture)
    const BH: u8 = 0x23;
    const POWER_ON: u8 = 0b0000_0001;
    const ONE_TIME_H: u8 = 0b0010_0000;

    #[test]
    fn bh1750_powers_on_starts_a_one_time_high_resolution_measurement_and_reads_two_bytes() {
        let mut mock = Mock::new(&[
            T::write(BH, vec![POWER_ON]),
            T::write(BH, vec![ONE_TIME_H]),
            T::read(BH, vec![0x01, 0x90]),
        ]);
        let q = read_sized(Driver::Bh1750, &mock, BH).unwrap();
        mock.done();
        assert_eq!((q[0].name, q[0].unit), ("illuminance", "lux"));
        assert!((q[0].value - 400.0 / 1.2).abs() < 0.01, "{q:?}");
    }

    /// Sensirion's CRC-8 (SHT4x datasheet, checksum calculation): polynomial 0x31, init 0xFF, no
    /// reflection, no final XOR. The SHT3x, SCD4x and AHT20 use the same one.
    fn crc8(bytes: &[u8]) -> u8 {
        let mut crc = 0xFF_u8;
        for &b in bytes {
            crc ^= b;
            for _ in 0..8 {
                crc = if crc & 0x80 != 0 {
                    (crc << 1) ^ 0x31
                } else {
                    crc << 1
                };
            }
        }
        crc
    }

    /// A 16-bit word as Sensirion sensors send it: big-endian, then its CRC.
    fn word(w: u16) -> [u8; 3] {
        let [msb, lsb] = w.to_be_bytes();
        [msb, lsb, crc8(&[msb, lsb])]
    }

    /// Words concatenated, as in a multi-word response.
    fn words(ws: &[u16]) -> Vec<u8> {
        ws.iter().flat_map(|&w| word(w)).collect()
    }

    #[test]
    fn the_test_crc_matches_the_datasheet_example() {
        // The worked example in Sensirion's SHT4x and SCD4x datasheets: CRC(0xBEEF) = 0x92
        assert_eq!(word(0xBEEF), [0xBE, 0xEF, 0x92]);
    }

    // SHT4x (datasheet, command overview)
    const SHT4X: u8 = 0x44;
    const SHT4X_MEASURE_HIGH_PRECISION: u8 = 0xFD;

    #[test]
    fn sht4x_sends_one_high_precision_command_and_converts_both_words() {
        let (raw_t, raw_rh) = (0x6666_u16, 0x7AE1_u16);
        let mut mock = Mock::new(&[
            T::write(SHT4X, vec![SHT4X_MEASURE_HIGH_PRECISION]),
            T::read(SHT4X, words(&[raw_t, raw_rh])),
        ]);
        let q = read_sized(Driver::Sht4x, &mock, SHT4X).unwrap();
        mock.done();
        assert_eq!((q[0].name, q[0].unit), ("temperature", "degC"));
        let t = -45.0 + 175.0 * raw_t as f64 / 65535.0;
        assert!((t - 25.0).abs() < 0.01, "{t}");
        assert!((q[0].value - t).abs() < 0.01, "{q:?}");
        assert_eq!((q[1].name, q[1].unit), ("humidity", "%RH"));
        let rh = -6.0 + 125.0 * raw_rh as f64 / 65535.0;
        assert!((q[1].value - rh).abs() < 0.01, "{q:?}");
    }

    #[test]
    fn sht4x_crops_humidity_above_100_percent_as_the_datasheet_says() {
        let mut mock = Mock::new(&[
            T::write(SHT4X, vec![SHT4X_MEASURE_HIGH_PRECISION]),
            T::read(SHT4X, words(&[0x6666, 0xFFFF])),
        ]);
        let q = read_with(Driver::Sht4x, MockBus(mock.clone()), SHT4X, NoDelay).unwrap();
        mock.done();
        assert_eq!(q[1].value, 100.0);
    }

    #[test]
    fn sht4x_refuses_a_measurement_whose_crc_does_not_match() {
        let mut bytes = words(&[0x6666, 0x7AE1]);
        bytes[2] ^= 0x01;
        let mut mock = Mock::new(&[
            T::write(SHT4X, vec![SHT4X_MEASURE_HIGH_PRECISION]),
            T::read(SHT4X, bytes),
        ]);
        let e = read_with(Driver::Sht4x, MockBus(mock.clone()), SHT4X, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("CRC")),
            "{e}"
        );
    }

    #[test]
    fn sht4x_at_an_absent_address_comes_out_as_a_bus_nack() {
        let mut mock = Mock::new(&[T::write(0x45, vec![SHT4X_MEASURE_HIGH_PRECISION])
            .with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address))]);
        let e = read_with(Driver::Sht4x, MockBus(mock.clone()), 0x45, NoDelay).unwrap_err();
        mock.done();
        assert_eq!(e, SensorError::Bus(BusError::Nack(0x45)));
    }

    #[test]
    fn sht4x_refuses_an_address_the_chip_cannot_have_without_touching_the_bus() {
        let mut mock = Mock::new(&[]);
        let e = read_with(Driver::Sht4x, MockBus(mock.clone()), 0x40, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("0x40")),
            "{e}"
        );
    }

    // SHT3x-DIS (datasheet, single shot and soft reset commands)
    const SHT3X: u8 = 0x45;
    const SHT3X_SOFT_RESET: [u8; 2] = [0x30, 0xA2];
    const SHT3X_SINGLE_SHOT_HIGH_STRETCHING: [u8; 2] = [0x2C, 0x06];

    #[test]
    fn sht3x_soft_resets_then_measures_in_one_write_read_with_clock_stretching() {
        let (raw_t, raw_rh) = (0x6666_u16, 0x6B85_u16);
        let mut mock = Mock::new(&[
            T::write(SHT3X, SHT3X_SOFT_RESET.to_vec()),
            T::transaction_start(SHT3X),
            T::write(SHT3X, SHT3X_SINGLE_SHOT_HIGH_STRETCHING.to_vec()),
            T::read(SHT3X, words(&[raw_t, raw_rh])),
            T::transaction_end(SHT3X),
        ]);
        let q = read_sized(Driver::Sht3x, &mock, SHT3X).unwrap();
        mock.done();
        assert_eq!((q[0].name, q[0].unit), ("temperature", "degC"));
        let t = -45.0 + 175.0 * raw_t as f64 / 65535.0;
        assert!((q[0].value - t).abs() < 0.01, "{q:?}");
        assert_eq!((q[1].name, q[1].unit), ("humidity", "%RH"));
        let rh = 100.0 * raw_rh as f64 / 65535.0;
        assert!((rh - 42.0).abs() < 0.01, "{rh}");
        assert!((q[1].value - rh).abs() < 0.01, "{q:?}");
    }

    #[test]
    fn sht3x_refuses_a_humidity_word_whose_crc_does_not_match() {
        let mut bytes = words(&[0x6666, 0x6B85]);
        bytes[5] ^= 0x80;
        let mut mock = Mock::new(&[
            T::write(SHT3X, SHT3X_SOFT_RESET.to_vec()),
            T::transaction_start(SHT3X),
            T::write(SHT3X, SHT3X_SINGLE_SHOT_HIGH_STRETCHING.to_vec()),
            T::read(SHT3X, bytes),
            T::transaction_end(SHT3X),
        ]);
        let e = read_with(Driver::Sht3x, MockBus(mock.clone()), SHT3X, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("CRC")),
            "{e}"
        );
    }

    // AHT20 (datasheet, sensor reading process and status bits)
    const AHT20: u8 = 0x38;
    const AHT20_INITIALIZE: [u8; 3] = [0xBE, 0x08, 0x00];
    const AHT20_TRIGGER_MEASUREMENT: [u8; 3] = [0xAC, 0x33, 0x00];
    const AHT20_BUSY: u8 = 0b1000_0000;
    const AHT20_CALIBRATED: u8 = 0b0000_1000;

    /// Status, 20 bits of humidity, 20 bits of temperature, CRC over the first six bytes.
    fn aht20_reading(status: u8, raw_rh: u32, raw_t: u32) -> Vec<u8> {
        let mut b = vec![
            status,
            (raw_rh >> 12) as u8,
            (raw_rh >> 4) as u8,
            ((raw_rh & 0xF) << 4) as u8 | (raw_t >> 16) as u8,
            (raw_t >> 8) as u8,
            raw_t as u8,
        ];
        b.push(crc8(&b));
        b
    }

    #[test]
    fn aht20_calibrates_an_uncalibrated_sensor_then_triggers_polls_busy_and_reads_seven_bytes() {
        let (raw_rh, raw_t) = (0x6_6666_u32, 0x5_EB85_u32);
        let idle = 0b0001_0000 | AHT20_CALIBRATED;
        let mut mock = Mock::new(&[
            T::read(AHT20, vec![0b0001_0000]),
            T::write(AHT20, AHT20_INITIALIZE.to_vec()),
            T::read(AHT20, vec![idle]),
            T::write(AHT20, AHT20_TRIGGER_MEASUREMENT.to_vec()),
            T::read(AHT20, vec![idle | AHT20_BUSY]),
            T::read(AHT20, vec![idle]),
            T::read(AHT20, aht20_reading(idle, raw_rh, raw_t)),
        ]);
        let q = read_sized(Driver::Aht20, &mock, AHT20).unwrap();
        mock.done();
        assert_eq!((q[0].name, q[0].unit), ("temperature", "degC"));
        let t = raw_t as f64 / (1 << 20) as f64 * 200.0 - 50.0;
        assert!((t - 24.0).abs() < 0.01, "{t}");
        assert!((q[0].value - t).abs() < 0.01, "{q:?}");
        assert_eq!((q[1].name, q[1].unit), ("humidity", "%RH"));
        let rh = raw_rh as f64 / (1 << 20) as f64 * 100.0;
        assert!((rh - 40.0).abs() < 0.01, "{rh}");
        assert!((q[1].value - rh).abs() < 0.01, "{q:?}");
    }

    #[test]
    fn aht20_gives_up_on_a_device_that_never_reports_calibrated_instead_of_holding_the_bus() {
        let mut expected = Vec::new();
        while expected.len() < AHT20_BUS_BUDGET as usize {
            expected.push(T::read(AHT20, vec![0x00]));
            expected.push(T::write(AHT20, AHT20_INITIALIZE.to_vec()));
        }
        let mut mock = Mock::new(&expected);
        let e = read_with(Driver::Aht20, MockBus(mock.clone()), AHT20, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("within 100 bus operations")),
            "{e}"
        );
    }

    #[test]
    fn aht20_passes_a_nack_through_as_a_bus_nack() {
        let mut mock = Mock::new(&[T::read(AHT20, vec![0x00])
            .with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address))]);
        let e = read_with(Driver::Aht20, MockBus(mock.clone()), AHT20, NoDelay).unwrap_err();
        mock.done();
        assert_eq!(e, SensorError::Bus(BusError::Nack(AHT20)));
    }

    // SCD4x (datasheet, command overview)
    const SCD4X: u8 = 0x62;
    const SCD4X_START_PERIODIC_MEASUREMENT: [u8; 2] = [0x21, 0xB1];
    const SCD4X_READ_MEASUREMENT: [u8; 2] = [0xEC, 0x05];
    const SCD4X_STOP_PERIODIC_MEASUREMENT: [u8; 2] = [0x3F, 0x86];
    const SCD4X_GET_DATA_READY_STATUS: [u8; 2] = [0xE4, 0xB8];

    #[test]
    fn scd4x_stops_starts_periodic_measurement_polls_data_ready_reads_and_stops_again() {
        let (co2, raw_t, raw_rh) = (812_u16, 0x6667_u16, 0x5EB8_u16);
        let mut mock = Mock::new(&[
            T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec()),
            T::write(SCD4X, SCD4X_START_PERIODIC_MEASUREMENT.to_vec()),
            T::write(SCD4X, SCD4X_GET_DATA_READY_STATUS.to_vec()),
            // not ready: the low 11 bits are 0
            T::read(SCD4X, word(0x8000).to_vec()),
            T::write(SCD4X, SCD4X_GET_DATA_READY_STATUS.to_vec()),
            T::read(SCD4X, word(0x8006).to_vec()),
            T::write(SCD4X, SCD4X_READ_MEASUREMENT.to_vec()),
            T::read(SCD4X, words(&[co2, raw_t, raw_rh])),
            T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec()),
        ]);
        let q = read_sized(Driver::Scd4x, &mock, SCD4X).unwrap();
        mock.done();
        assert_eq!((q[0].name, q[0].value, q[0].unit), ("co2", 812.0, "ppm"));
        assert_eq!((q[1].name, q[1].unit), ("temperature", "degC"));
        let t = -45.0 + 175.0 * raw_t as f64 / 65535.0;
        assert!((t - 25.0).abs() < 0.01, "{t}");
        assert!((q[1].value - t).abs() < 0.01, "{q:?}");
        assert_eq!((q[2].name, q[2].unit), ("humidity", "%RH"));
        let rh = 100.0 * raw_rh as f64 / 65535.0;
        assert!((rh - 37.0).abs() < 0.01, "{rh}");
        assert!((q[2].value - rh).abs() < 0.01, "{q:?}");
    }

    #[test]
    fn scd4x_stops_measuring_even_when_the_sample_fails_its_crc() {
        let mut sample = words(&[812, 0x6667, 0x5EB8]);
        sample[8] ^= 0x01;
        let mut mock = Mock::new(&[
            T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec()),
            T::write(SCD4X, SCD4X_START_PERIODIC_MEASUREMENT.to_vec()),
            T::write(SCD4X, SCD4X_GET_DATA_READY_STATUS.to_vec()),
            T::read(SCD4X, word(0x8006).to_vec()),
            T::write(SCD4X, SCD4X_READ_MEASUREMENT.to_vec()),
            T::read(SCD4X, sample),
            T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec()),
        ]);
        let e = read_with(Driver::Scd4x, MockBus(mock.clone()), SCD4X, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("CRC")),
            "{e}"
        );
    }

    #[test]
    fn scd4x_gives_up_when_no_sample_becomes_ready_and_stops_measuring() {
        let mut expected = vec![
            T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec()),
            T::write(SCD4X, SCD4X_START_PERIODIC_MEASUREMENT.to_vec()),
        ];
        for _ in 0..SCD4X_READY_POLLS {
            expected.push(T::write(SCD4X, SCD4X_GET_DATA_READY_STATUS.to_vec()));
            expected.push(T::read(SCD4X, word(0x8000).to_vec()));
        }
        expected.push(T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec()));
        let mut mock = Mock::new(&expected);
        let e = read_with(Driver::Scd4x, MockBus(mock.clone()), SCD4X, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("no sample")),
            "{e}"
        );
    }

    #[test]
    fn scd4x_that_is_absent_comes_out_as_a_bus_nack() {
        let mut mock = Mock::new(&[T::write(SCD4X, SCD4X_STOP_PERIODIC_MEASUREMENT.to_vec())
            .with_error(ErrorKind::NoAcknowledge(NoAcknowledgeSource::Address))]);
        let e = read_with(Driver::Scd4x, MockBus(mock.clone()), SCD4X, NoDelay).unwrap_err();
        mock.done();
        assert_eq!(e, SensorError::Bus(BusError::Nack(SCD4X)));
    }

    // ADS1115 (datasheet SBAS444, register map and config register fields)
    const ADS1115: u8 = 0x48;
    const ADS_CONVERSION: u8 = 0b00;
    const ADS_CONFIG: u8 = 0b01;
    /// Written: start a conversion. Read: 1 = idle, 0 = converting.
    const ADS_OS: u16 = 0b1 << 15;
    /// MUX, bits 14:12: AINx against GND is 0b100 + x; AIN0 against AIN1 (reset value) 0b000.
    const ADS_MUX_AIN0_AIN1: u16 = 0b000;
    const ADS_MUX_SINGLE: [u16; 4] = [0b100, 0b101, 0b110, 0b111];
    /// PGA ±4.096 V (bits 11:9 = 0b001), single-shot mode (bit 8), 128 SPS (bits 7:5 = 0b100),
    /// comparator disabled (bits 1:0 = 0b11).
    const ADS_REST: u16 = (0b001 << 9) | (0b1 << 8) | (0b100 << 5) | 0b11;

    fn ads_config(os: bool, mux: u16) -> Vec<u8> {
        let os = if os { ADS_OS } else { 0 };
        (os | (mux << 12) | ADS_REST).to_be_bytes().to_vec()
    }

    fn ads_write_config(os: bool, mux: u16) -> T {
        let mut bytes = vec![ADS_CONFIG];
        bytes.extend(ads_config(os, mux));
        T::write(ADS1115, bytes)
    }

    #[test]
    fn ads1115_sets_4v_full_scale_then_runs_one_polled_one_shot_conversion_per_input() {
        let raw: [i16; 4] = [26400, 13200, -2, 4000];
        let mut expected = vec![
            // The crate writes the whole config with OS set, which starts a conversion of the
            // reset MUX setting; the first poll of A0 finds it still running.
            ads_write_config(true, ADS_MUX_AIN0_AIN1),
            T::write_read(
                ADS1115,
                vec![ADS_CONFIG],
                ads_config(false, ADS_MUX_AIN0_AIN1),
            ),
            T::write_read(
                ADS1115,
                vec![ADS_CONFIG],
                ads_config(true, ADS_MUX_AIN0_AIN1),
            ),
        ];
        for (i, &mux) in ADS_MUX_SINGLE.iter().enumerate() {
            if i > 0 {
                expected.push(T::write_read(
                    ADS1115,
                    vec![ADS_CONFIG],
                    ads_config(true, ADS_MUX_SINGLE[i - 1]),
                ));
            }
            expected.push(ads_write_config(true, mux));
            if i == 0 {
                expected.push(T::write_read(
                    ADS1115,
                    vec![ADS_CONFIG],
                    ads_config(false, mux),
                ));
            }
            expected.extend([
                T::write_read(ADS1115, vec![ADS_CONFIG], ads_config(true, mux)),
                T::write_read(ADS1115, vec![ADS_CONVERSION], raw[i].to_be_bytes().to_vec()),
            ]);
        }
        let mut mock = Mock::new(&expected);
        let q = read_sized(Driver::Ads1115, &mock, ADS1115).unwrap();
        mock.done();
        let names: Vec<_> = q.iter().map(|q| (q.name, q.unit)).collect();
        assert_eq!(
            names,
            [
                ("voltage_a0", "V"),
                ("voltage_a1", "V"),
                ("voltage_a2", "V"),
                ("voltage_a3", "V")
            ]
        );
        for (q, want) in q.iter().zip([3.3, 1.65, -0.00025, 0.5]) {
            assert!((q.value - want).abs() < 1e-9, "{q:?} != {want}");
        }
    }

    #[test]
    fn ads1115_refuses_an_address_outside_its_four_without_touching_the_bus() {
        let mut mock = Mock::new(&[]);
        let e = read_with(Driver::Ads1115, MockBus(mock.clone()), 0x50, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("0x50")),
            "{e}"
        );
    }

    #[test]
    fn ads1115_gives_up_on_a_conversion_that_never_finishes() {
        let mut expected = vec![
            ads_write_config(true, ADS_MUX_AIN0_AIN1),
            T::write_read(
                ADS1115,
                vec![ADS_CONFIG],
                ads_config(true, ADS_MUX_AIN0_AIN1),
            ),
            ads_write_config(true, ADS_MUX_SINGLE[0]),
        ];
        for _ in 0..ADS1115_POLLS {
            expected.push(T::write_read(
                ADS1115,
                vec![ADS_CONFIG],
                ads_config(false, ADS_MUX_SINGLE[0]),
            ));
        }
        let mut mock = Mock::new(&expected);
        let e = read_with(Driver::Ads1115, MockBus(mock.clone()), ADS1115, NoDelay).unwrap_err();
        mock.done();
        assert!(
            matches!(e, SensorError::Driver(ref m) if m.contains("did not finish")),
            "{e}"
        );
    }

    #[test]
    fn a_driver_that_is_not_a_sensor_is_refused_without_touching_the_bus() {
        for d in Driver::ALL.iter().copied().filter(|d| !d.is_sensor()) {
            let mut mock = Mock::new(&[]);
            let e = read(d, MockBus(mock.clone()), 0x40).unwrap_err();
            mock.done();
            assert_eq!(e, SensorError::NotASensor(d));
            assert!(d.quantities().is_empty(), "{d}");
        }
    }
}
