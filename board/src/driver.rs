//! The drivers a board's `[[device]]` may name, and everything each one implies.
//!
//! [`Driver`] is the one type for a device's driver: board files spell it as before
//! (`driver = "bme280"`), and it shows as the same string ([`Driver::as_str`], `Display`,
//! `Serialize`). Every fact about a driver — what kind of device it is, the quantities it
//! measures with their units and Home Assistant classes, what a reading puts on the bus, how
//! `covo doctor` probes it, its documentation page, the keys its `[[device]]` needs — is in its
//! entry of [`Driver::info`], and only there. Code elsewhere asks the entry
//! (`d.driver.is_sensor()`, `d.driver.quantities()`, `d.driver.kind() == Kind::GpioOut`) or
//! compares variants (`d.driver == Driver::Mcu`), never a string.
//!
//! Adding an I2C sensor driver: a variant in `drivers!` below with its entry in `info`, its
//! `read_*` function and dispatch arm in `hal-tools/src/sensors.rs` (the match is exhaustive,
//! so the compiler asks for it), and its page in `docs/hardware/`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// Declares [`Driver`] and [`Driver::ALL`] from one list, so a variant cannot be left out of
/// `ALL` (and so out of the loader, which finds names there).
macro_rules! drivers {
    ($($(#[$doc:meta])* $variant:ident,)*) => {
        /// A device's driver, as a board file names it.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Driver {
            $($(#[$doc])* $variant,)*
        }

        impl Driver {
            /// Every driver, sensors first, in the order errors list them.
            pub const ALL: &'static [Driver] = &[$(Driver::$variant,)*];
        }
    };
}

drivers! {
    /// Bosch BME280: temperature, humidity, pressure.
    Bme280,
    /// Bosch BMP280: temperature, pressure (the BME280 without humidity).
    Bmp280,
    /// ROHM BH1750: illuminance.
    Bh1750,
    /// Sensirion SHT4x: temperature, humidity.
    Sht4x,
    /// Sensirion SHT3x: temperature, humidity.
    Sht3x,
    /// Aosong AHT20: temperature, humidity.
    Aht20,
    /// Sensirion SCD40/SCD41: CO2, temperature, humidity.
    Scd4x,
    /// TI ADS1115: four single-ended voltages.
    Ads1115,
    /// SSD1306 OLED display.
    Ssd1306,
    /// A GPIO line driven by covo (relay, LED).
    GpioOut,
    /// A GPIO line covo reads (button, switch).
    GpioIn,
    /// A hardware PWM channel (fan, dimmer).
    Pwm,
    /// A device on a declared serial port.
    Serial,
    /// A microcontroller running covo's firmware, on a serial port.
    Mcu,
}

/// What kind of device a driver drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// An I2C sensor read through `covo_hal_tools::sensors::read`.
    Sensor,
    /// A display.
    Display,
    /// A GPIO output.
    GpioOut,
    /// A GPIO input.
    GpioIn,
    /// A PWM channel.
    Pwm,
    /// A serial device.
    Serial,
    /// A microcontroller.
    Mcu,
}

/// A key of a `[[device]]` table that a driver uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Key {
    /// `address` (and `bus`, which defaults to the first I2C bus).
    Address,
    /// `pin`, a BCM number (checked against `[pins] available`).
    Pin,
    /// `channel`, a PWM channel.
    Channel,
    /// `port`, a `[[serial]]` name.
    Port,
}

/// How Home Assistant's MQTT discovery announces a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HaComponent {
    /// One `sensor` per quantity, reading the gateway's telemetry.
    Sensor,
    /// A `switch` whose commands become `gpio_write` calls.
    Switch,
}

impl HaComponent {
    /// Its name in discovery topics (`sensor`, `switch`).
    pub const fn as_str(self) -> &'static str {
        match self {
            HaComponent::Sensor => "sensor",
            HaComponent::Switch => "switch",
        }
    }
}

/// One quantity a sensor driver measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QuantityInfo {
    /// Its name in readings, watches and the store (`temperature`).
    pub name: &'static str,
    /// Its unit in readings (`degC`).
    pub unit: &'static str,
    /// Home Assistant's `device_class` for it.
    pub ha_class: Option<&'static str>,
    /// Home Assistant's `unit_of_measurement` for it (`°C`).
    pub ha_unit: &'static str,
}

/// What one reading by a driver puts on the bus: the largest single write and read, and the
/// commands it must write. Every sensor driver writes to take a reading (none can measure by
/// reading registers alone), so a board that writes nothing cannot read these sensors; the
/// gateway's policy judges sensor reads by these numbers (`Access::SensorMeasure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Footprint {
    /// Bytes in the largest single write (a register pointer counts).
    pub write: usize,
    /// Bytes in the largest single read.
    pub read: usize,
    /// What the driver writes to measure, for people: "a soft reset, ...".
    pub writes: &'static str,
}

/// How `covo doctor` checks that a declared device is there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// A one-byte read at its declared address, never a write. `hint` says where its chip can
    /// answer, for the fix of a probe nobody answered (" (always 0x38)").
    I2cRead {
        /// Appended to "check ... the address".
        hint: &'static str,
    },
    /// Nothing beyond the board's device nodes (GPIO chip, PWM chip, serial ports).
    None,
}

/// A bundled documentation page (`docs/hardware/ID.md`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocPage {
    /// What `docs_read` takes (`bme280`).
    pub id: &'static str,
    /// The Markdown.
    pub text: &'static str,
}

/// Everything a driver implies: its entry in [`Driver::info`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DriverInfo {
    /// The name board files and tool output use (`bme280`).
    pub name: &'static str,
    /// What kind of device it is.
    pub kind: Kind,
    /// What a sensor measures, in the order a reading gives it; empty for other kinds.
    pub quantities: &'static [QuantityInfo],
    /// What one reading puts on the bus (sensors only).
    pub footprint: Option<Footprint>,
    /// How `covo doctor` checks the device.
    pub probe: Probe,
    /// Its page in `docs/hardware/`, bundled for `docs_read`.
    pub docs: Option<DocPage>,
    /// How Home Assistant discovery announces it; `None` when it is not announced.
    pub ha_component: Option<HaComponent>,
    /// The `[[device]]` keys it needs.
    pub requires: &'static [Key],
}

macro_rules! page {
    ($id:literal) => {
        Some(DocPage {
            id: $id,
            text: include_str!(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../docs/hardware/",
                $id,
                ".md"
            )),
        })
    };
}

const fn q(
    name: &'static str,
    unit: &'static str,
    ha_class: &'static str,
    ha_unit: &'static str,
) -> QuantityInfo {
    QuantityInfo {
        name,
        unit,
        ha_class: Some(ha_class),
        ha_unit,
    }
}

const TEMPERATURE: QuantityInfo = q("temperature", "degC", "temperature", "°C");
const HUMIDITY: QuantityInfo = q("humidity", "%RH", "humidity", "%");
const PRESSURE: QuantityInfo = q("pressure", "hPa", "pressure", "hPa");
const ILLUMINANCE: QuantityInfo = q("illuminance", "lux", "illuminance", "lx");
const CO2: QuantityInfo = q("co2", "ppm", "carbon_dioxide", "ppm");
const VOLTAGE_A0: QuantityInfo = q("voltage_a0", "V", "voltage", "V");
const VOLTAGE_A1: QuantityInfo = q("voltage_a1", "V", "voltage", "V");
const VOLTAGE_A2: QuantityInfo = q("voltage_a2", "V", "voltage", "V");
const VOLTAGE_A3: QuantityInfo = q("voltage_a3", "V", "voltage", "V");

const fn sensor(
    name: &'static str,
    quantities: &'static [QuantityInfo],
    footprint: Footprint,
    hint: &'static str,
    docs: Option<DocPage>,
) -> DriverInfo {
    DriverInfo {
        name,
        kind: Kind::Sensor,
        quantities,
        footprint: Some(footprint),
        probe: Probe::I2cRead { hint },
        docs,
        ha_component: Some(HaComponent::Sensor),
        requires: &[Key::Address],
    }
}

const fn other(
    name: &'static str,
    kind: Kind,
    docs: Option<DocPage>,
    requires: &'static [Key],
) -> DriverInfo {
    DriverInfo {
        name,
        kind,
        quantities: &[],
        footprint: None,
        probe: Probe::None,
        docs,
        ha_component: None,
        requires,
    }
}

const fn fp(write: usize, read: usize, writes: &'static str) -> Footprint {
    Footprint {
        write,
        read,
        writes,
    }
}

// Register writes are (register, value); calibration is one 26-byte read.
const BME280_FOOTPRINT: Footprint = fp(
    2,
    26,
    "a soft reset, its oversampling and filter settings and a forced-mode conversion",
);
const BME280_HINT: &str = " (its SDO pin selects 0x76 or 0x77)";

impl Driver {
    /// The driver's entry: the one place its facts are written.
    pub const fn info(self) -> DriverInfo {
        use Driver as D;
        match self {
            D::Bme280 => sensor(
                "bme280",
                &[TEMPERATURE, HUMIDITY, PRESSURE],
                BME280_FOOTPRINT,
                BME280_HINT,
                page!("bme280"),
            ),
            // The same page and crate: the chip id tells them apart.
            D::Bmp280 => sensor(
                "bmp280",
                &[TEMPERATURE, PRESSURE],
                BME280_FOOTPRINT,
                BME280_HINT,
                page!("bme280"),
            ),
            D::Bh1750 => sensor(
                "bh1750",
                &[ILLUMINANCE],
                fp(1, 2, "power-on and a one-time measurement command"),
                " (its ADDR pin selects 0x23 when low or 0x5c when high)",
                page!("bh1750"),
            ),
            D::Sht4x => sensor(
                "sht4x",
                &[TEMPERATURE, HUMIDITY],
                fp(1, 6, "a single-shot measurement command"),
                " (0x44 for most SHT40/41/45 parts; -B and -C variants answer at 0x45 and 0x46)",
                page!("sht4x"),
            ),
            D::Sht3x => sensor(
                "sht3x",
                &[TEMPERATURE, HUMIDITY],
                fp(2, 6, "a soft reset and a single-shot measurement command"),
                " (its ADDR pin selects 0x44 or 0x45)",
                page!("sht3x"),
            ),
            D::Aht20 => sensor(
                "aht20",
                &[TEMPERATURE, HUMIDITY],
                fp(3, 7, "calibration and measurement-trigger commands"),
                " (always 0x38)",
                page!("aht20"),
            ),
            D::Scd4x => sensor(
                "scd4x",
                &[CO2, TEMPERATURE, HUMIDITY],
                fp(
                    2,
                    9,
                    "stop and start periodic measurement and read-out commands",
                ),
                " (always 0x62)",
                page!("scd4x"),
            ),
            D::Ads1115 => sensor(
                "ads1115",
                &[VOLTAGE_A0, VOLTAGE_A1, VOLTAGE_A2, VOLTAGE_A3],
                fp(
                    3,
                    2,
                    "its full-scale setting and a one-shot conversion per input (config register writes)",
                ),
                " (its ADDR pin to GND, VDD, SDA or SCL selects 0x48, 0x49, 0x4a or 0x4b)",
                page!("ads1115"),
            ),
            D::Ssd1306 => DriverInfo {
                probe: Probe::I2cRead {
                    hint: " (0x3c or 0x3d, set by a jumper or its SA0 pin)",
                },
                ..other("ssd1306", Kind::Display, page!("ssd1306"), &[Key::Address])
            },
            D::GpioOut => DriverInfo {
                ha_component: Some(HaComponent::Switch),
                ..other("gpio_out", Kind::GpioOut, page!("gpio_out"), &[Key::Pin])
            },
            // No page of its own: the gpio tools' descriptions and the sim page cover it.
            D::GpioIn => other("gpio_in", Kind::GpioIn, None, &[Key::Pin]),
            D::Pwm => other("pwm", Kind::Pwm, page!("pwm"), &[Key::Channel]),
            D::Serial => other("serial", Kind::Serial, page!("serial-basics"), &[Key::Port]),
            D::Mcu => other("mcu", Kind::Mcu, page!("mcu"), &[Key::Port]),
        }
    }

    /// The name board files and tool output use (`bme280`).
    pub const fn as_str(self) -> &'static str {
        self.info().name
    }

    /// The driver a board file names, if covo has it.
    pub fn parse(name: &str) -> Option<Driver> {
        Driver::ALL.iter().copied().find(|d| d.as_str() == name)
    }

    /// Every driver's name, comma-separated, for errors.
    pub fn known() -> String {
        Driver::ALL
            .iter()
            .map(|d| d.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What kind of device it drives.
    pub const fn kind(self) -> Kind {
        self.info().kind
    }

    /// Whether it is an I2C sensor `sensor_read` reads.
    pub const fn is_sensor(self) -> bool {
        matches!(self.kind(), Kind::Sensor)
    }

    /// What it measures; empty unless it is a sensor.
    pub const fn quantities(self) -> &'static [QuantityInfo] {
        self.info().quantities
    }

    /// What one reading puts on the bus; `None` unless it is a sensor.
    pub const fn footprint(self) -> Option<Footprint> {
        self.info().footprint
    }

    /// How `covo doctor` checks it.
    pub const fn probe(self) -> Probe {
        self.info().probe
    }

    /// Its bundled documentation page.
    pub const fn docs(self) -> Option<DocPage> {
        self.info().docs
    }

    /// Whether a `[[device]]` of this driver needs `key`.
    pub fn requires(self, key: Key) -> bool {
        self.info().requires.contains(&key)
    }

    /// The drivers' documentation pages, each once, in [`Driver::ALL`] order.
    pub fn doc_pages() -> Vec<DocPage> {
        let mut out: Vec<DocPage> = Vec::new();
        for p in Driver::ALL.iter().filter_map(|d| d.docs()) {
            if !out.iter().any(|o| o.id == p.id) {
                out.push(p);
            }
        }
        out
    }
}

impl fmt::Display for Driver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not a driver covo knows.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`driver = \"{0}\"` is not a driver covo knows (known: {known})", known = Driver::known())]
pub struct UnknownDriver(pub String);

impl std::str::FromStr for Driver {
    type Err = UnknownDriver;
    fn from_str(s: &str) -> Result<Driver, UnknownDriver> {
        Driver::parse(s).ok_or_else(|| UnknownDriver(s.to_string()))
    }
}

impl Serialize for Driver {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Driver {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Driver, D::Error> {
        let name = std::borrow::Cow::<'de, str>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_driver_round_trips_through_its_name() {
        for &d in Driver::ALL {
            assert_eq!(Driver::parse(d.as_str()), Some(d));
            assert_eq!(d.to_string(), d.as_str());
            assert_eq!(d.as_str().parse::<Driver>(), Ok(d));
            let json = serde_json::to_value(d).unwrap();
            assert_eq!(json, serde_json::json!(d.as_str()));
            assert_eq!(serde_json::from_value::<Driver>(json).unwrap(), d);
        }
        let names: Vec<&str> = Driver::ALL.iter().map(|d| d.as_str()).collect();
        let mut unique = names.clone();
        unique.sort();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "names are unique: {names:?}");
        let e = "dht22".parse::<Driver>().unwrap_err();
        assert!(e.to_string().contains("dht22") && e.to_string().contains("bme280, bmp280"));
        assert!(serde_json::from_value::<Driver>(serde_json::json!("dht22")).is_err());
    }

    #[test]
    fn every_docs_page_exists_and_documents_its_driver() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/hardware");
        for &d in Driver::ALL {
            let Some(p) = d.docs() else {
                assert_eq!(d, Driver::GpioIn, "only gpio_in has no page of its own");
                continue;
            };
            let file = dir.join(format!("{}.md", p.id));
            let on_disk = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{d}: {}: {e}", file.display()));
            assert_eq!(on_disk, p.text, "{d}");
            assert!(p.text.starts_with("# "), "{d}: {} has a title", p.id);
            assert!(p.text.contains(d.as_str()), "{d}: {} names it", p.id);
        }
    }

    #[test]
    fn every_sensor_has_quantities_with_units_ha_classes_a_footprint_and_a_probe() {
        for &d in Driver::ALL {
            let i = d.info();
            assert_eq!(d.is_sensor(), i.kind == Kind::Sensor, "{d}");
            if !d.is_sensor() {
                assert!(d.quantities().is_empty() && d.footprint().is_none(), "{d}");
                continue;
            }
            assert!(!d.quantities().is_empty(), "{d}");
            for q in d.quantities() {
                assert!(!q.name.is_empty() && !q.unit.is_empty(), "{d}: {q:?}");
                assert!(q.ha_class.is_some() && !q.ha_unit.is_empty(), "{d}: {q:?}");
            }
            let fp = d
                .footprint()
                .unwrap_or_else(|| panic!("{d} has no footprint"));
            assert!(fp.write > 0 && fp.read > 0 && !fp.writes.is_empty(), "{d}");
            assert!(
                matches!(d.probe(), Probe::I2cRead { hint } if !hint.is_empty()),
                "{d}"
            );
            assert!(d.requires(Key::Address), "{d}");
            assert_eq!(i.ha_component, Some(HaComponent::Sensor), "{d}");
        }
    }

    #[test]
    fn keys_follow_the_kind() {
        for &d in Driver::ALL {
            let want = match d.kind() {
                Kind::Sensor | Kind::Display => Key::Address,
                Kind::GpioOut | Kind::GpioIn => Key::Pin,
                Kind::Pwm => Key::Channel,
                Kind::Serial | Kind::Mcu => Key::Port,
            };
            assert_eq!(d.info().requires, &[want], "{d}");
        }
    }
}
