//! The wire contract between the covo gateway (host) and an attached microcontroller (device).
//!
//! This crate holds only the contract: message types, the framing helpers and the transport
//! errors. It does no I/O and compiles without `std`; the host enables feature `std`.
//!
//! # Layout
//! - [`Request`] / [`RequestBody`]: host → device, each carrying a `seq` the device echoes.
//! - [`DeviceMessage`]: device → host, either a [`Response`] (same `seq`) or an unsolicited
//!   [`Event`] (pin changes, periodic ADC samples) enabled by [`RequestBody::Subscribe`].
//! - [`DeviceError`]: what a request can fail with on the device. It travels inside a
//!   successfully delivered [`Response`]; transport failures are [`FrameError`] and never
//!   cross the wire.
//! - [`encode`] / [`decode`] / [`FrameReader`]: framing.
//!
//! # Versioning
//! Changing any message is a wire break: bump [`PROTOCOL_VERSION`] for changes of meaning.
//! Layout changes need no bookkeeping: [`SCHEMA_HASH`] is derived at compile time from the
//! message types (`#[derive(Schema)]`, the `postcard-schema` crate) and the capacities. The
//! host sends both in [`RequestBody::Hello`]; the device refuses a mismatch with
//! [`DeviceError::VersionMismatch`] or [`DeviceError::SchemaMismatch`], and the host checks the
//! device's answer the same way. The test `golden_frames_pin_every_message_kind` pins the hash
//! and one frame of every request, response, error and event, so any change shows in review.
//!
//! # Frame layout
//! ```text
//! | COBS( postcard(msg) ++ CRC-16/IBM-SDLC(postcard(msg)) little-endian ) | 0x00 |
//! ```
//! - `postcard(msg)`: the message serialized with postcard (varints, enum tags as varints).
//!   For a [`Request`] it starts with `seq` (varint `u16`: 1–3 bytes) followed by the body.
//! - CRC-16/IBM-SDLC (the X.25 CRC, the `crc` crate's `CRC_16_IBM_SDLC`) over the postcard
//!   bytes, 2 bytes little-endian, appended *inside* the COBS frame by postcard's CRC flavor.
//! - COBS (postcard's `Cobs` flavor / the `cobs` crate) removes every 0x00, costing 1 byte per
//!   started 254 bytes: exactly 1 byte for frames up to [`MAX_FRAME`].
//! - A 0x00 ends the frame. Empty frames (repeated 0x00) are ignored, so a sender may prefix a
//!   0x00 to flush a receiver's half-received garbage.
//!
//! Overhead over the postcard encoding of the body: `seq` (1–3) + CRC (2) + COBS (1) + delimiter
//! (1) = **5 to 7 bytes**, ≤ 8 as promised. Measured (see the `overhead` tests):
//!
//! | message | body | frame | overhead |
//! |---|---|---|---|
//! | `Request { seq: 7, Ping }` | 1 | 6 | 5 |
//! | `Request { seq: 300, I2cTransfer { 0x48, write: [0], read_len: 8 } }` | 5 | 11 | 6 |
//! | `Request { seq: u16::MAX, I2cTransfer { 0x48, write: [0], read_len: 8 } }` | 5 | 12 | 7 |
//! | `DeviceMessage::Response(Response { seq: 7, Ok(I2c { read: [8 bytes] }) })` | 11 | 17 | 6 |
//!
//! (`body` counts `RequestBody` / `Result<ResponseBody, DeviceError>` alone; device → host
//! frames carry one more byte, the [`DeviceMessage`] tag.)
//!
//! Every frame is at most [`MAX_FRAME`] bytes including the delimiter; [`encode`] refuses
//! longer ones with [`FrameError::TooLong`]. The largest message is a `Hello` response with a
//! full [`DeviceInfo`]: with every field at its maximum (16-byte strings, largest varints) it
//! fits for up to 30 pins (exactly 128 bytes), so a board describing more must shorten its strings; the device
//! answers [`DeviceError::TooLong`] instead of sending a frame too long to read.
#![no_std]
#![deny(unsafe_code, missing_docs)]

#[cfg(feature = "std")]
extern crate std;

mod frame;
mod stamp;

pub use frame::{decode, encode, FrameError, FrameReader};
/// The `heapless` this contract is written with, so firmware and host name the same types.
pub use heapless;
pub use stamp::{find_stamp, stamp, stamped_name, Stamp, STAMP_LEN, STAMP_MAGIC};

use heapless::{String, Vec};
use postcard_schema::key::hash::fnv1a64::hash_ty_path;
use postcard_schema::Schema;
use serde::{Deserialize, Serialize};

/// Protocol version; bump on any incompatible change of message meaning.
pub const PROTOCOL_VERSION: u8 = 1;

/// Maximum encoded frame, including COBS overhead, CRC and the 0x00 delimiter.
pub const MAX_FRAME: usize = 128;

/// Maximum bytes per I2C write or read.
pub const MAX_I2C: usize = 32;

/// Maximum number of pins a [`DeviceInfo`] can describe.
pub const MAX_PINS: usize = 32;

/// Capacity of the strings in [`DeviceInfo`].
pub const NAME_LEN: usize = 16;

/// How frames are built; part of [`SCHEMA_HASH`], since the type schema cannot see it.
const FRAMING: &str = "cobs(postcard++crc16_ibm_sdlc_le)00";

/// A hash of the whole wire contract, derived from the message types: both ends compare it at
/// the handshake.
///
/// It is the FNV-1a (64-bit) of the `postcard-schema` keys of everything the host sends
/// ([`Request`]) and everything the device sends ([`DeviceMessage`]: every [`Response`],
/// [`DeviceInfo`], [`DeviceError`] and [`Event`]), then of what the schema does not describe:
/// [`PROTOCOL_VERSION`], the capacities ([`MAX_FRAME`], [`MAX_I2C`], [`MAX_PINS`],
/// [`NAME_LEN`]) and the framing. Any change of a field, variant, name, order or type of any
/// wire type changes it, with nothing to edit by hand.
pub const SCHEMA_HASH: u64 = schema_hash();

const fn schema_hash() -> u64 {
    let host = hash_ty_path::<Request>("covo-mcu/host");
    let device = hash_ty_path::<DeviceMessage>("covo-mcu/device");
    let mut h = fnv1a_64(0xcbf2_9ce4_8422_2325, &host);
    h = fnv1a_64(h, &device);
    h = fnv1a_64(h, &[PROTOCOL_VERSION]);
    h = fnv1a_64(h, &(MAX_FRAME as u32).to_le_bytes());
    h = fnv1a_64(h, &(MAX_I2C as u32).to_le_bytes());
    h = fnv1a_64(h, &(MAX_PINS as u32).to_le_bytes());
    h = fnv1a_64(h, &(NAME_LEN as u32).to_le_bytes());
    fnv1a_64(h, FRAMING.as_bytes())
}

/// 64-bit FNV-1a continued from `hash`, usable in const context.
const fn fnv1a_64(mut hash: u64, bytes: &[u8]) -> u64 {
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// A request from the host; the device answers with a [`Response`] carrying the same `seq`.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, PartialEq)]
pub struct Request {
    /// Chosen by the host, echoed by the device.
    pub seq: u16,
    /// What is asked.
    pub body: RequestBody,
}

/// What a [`Request`] asks the device to do.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, PartialEq)]
pub enum RequestBody {
    /// Handshake: the host's protocol version and schema hash, checked by the device.
    Hello {
        /// The host's [`PROTOCOL_VERSION`].
        version: u8,
        /// The host's [`SCHEMA_HASH`].
        schema_hash: u64,
    },
    /// Liveness check, answered with [`ResponseBody::Pong`].
    Ping,
    /// Capabilities and uptime, answered with [`ResponseBody::Info`].
    Info,
    /// Configure a pin.
    GpioMode {
        /// Board pin number.
        pin: u8,
        /// The mode to set.
        mode: PinMode,
    },
    /// Read a pin's level.
    GpioRead {
        /// Board pin number.
        pin: u8,
    },
    /// Drive an output pin.
    GpioWrite {
        /// Board pin number.
        pin: u8,
        /// `true` drives the pin high.
        high: bool,
    },
    /// Sample an ADC channel.
    AdcRead {
        /// ADC channel number.
        channel: u8,
    },
    /// Set a PWM output; the device answers with the values it actually achieved.
    PwmSet {
        /// Board pin number.
        pin: u8,
        /// Requested frequency; 0 turns PWM off.
        frequency_hz: u32,
        /// Duty cycle in 1/1000, at most 1000.
        duty_permille: u16,
    },
    /// Write then read on the I2C bus (a repeated start between them when both are non-empty).
    I2cTransfer {
        /// 7-bit address.
        address: u8,
        /// Bytes to write first.
        write: Vec<u8, MAX_I2C>,
        /// Bytes to read afterwards, at most [`MAX_I2C`].
        read_len: u8,
    },
    /// Turn event streaming on or off; an all-zero mask turns everything off.
    Subscribe {
        /// What to stream.
        events: EventMask,
    },
    /// Reboot into the board's own bootloader so a new firmware can be written (the RP2040's
    /// BOOTSEL mode: a USB drive named `RPI-RP2` that takes a UF2 file). The device answers
    /// [`ResponseBody::Done`] first, then reboots; a board without one answers
    /// [`DeviceError::Unsupported`].
    Bootloader,
}

/// How a pin is configured. [`PinCaps::modes`] is a bitmask of [`PinMode::bit`].
#[derive(Serialize, Deserialize, Schema, Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PinMode {
    /// Floating input.
    Input,
    /// Input with the internal pull-up.
    InputPullUp,
    /// Input with the internal pull-down.
    InputPullDown,
    /// Push-pull output.
    Output,
    /// PWM output.
    Pwm,
    /// Analog input (ADC).
    Analog,
}

impl PinMode {
    /// Every mode, in wire order.
    pub const ALL: [PinMode; 6] = [
        PinMode::Input,
        PinMode::InputPullUp,
        PinMode::InputPullDown,
        PinMode::Output,
        PinMode::Pwm,
        PinMode::Analog,
    ];

    /// This mode's bit in [`PinCaps::modes`].
    pub const fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// The device's answer to one [`Request`].
#[derive(Serialize, Deserialize, Schema, Debug, Clone, PartialEq)]
pub struct Response {
    /// The `seq` of the request answered.
    pub seq: u16,
    /// The result, or why the device could not do it.
    pub body: Result<ResponseBody, DeviceError>,
}

/// A successful answer.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, PartialEq)]
pub enum ResponseBody {
    /// Handshake accepted: the device's version, schema hash and capabilities.
    Hello {
        /// The device's [`PROTOCOL_VERSION`].
        version: u8,
        /// The device's [`SCHEMA_HASH`].
        schema_hash: u64,
        /// The device's capabilities.
        info: DeviceInfo,
    },
    /// Answer to [`RequestBody::Ping`].
    Pong,
    /// Answer to [`RequestBody::Info`].
    Info(DeviceInfo),
    /// The request was carried out and has nothing to report.
    Done,
    /// A pin level.
    Level {
        /// `true` when the pin reads high.
        high: bool,
    },
    /// An ADC sample.
    Adc {
        /// Raw conversion result.
        raw: u16,
        /// `raw` scaled to millivolts with the device's reference.
        millivolts: u16,
    },
    /// The PWM output actually configured.
    Pwm {
        /// Achieved frequency.
        frequency_hz: u32,
        /// Achieved duty cycle in 1/1000.
        duty_permille: u16,
    },
    /// Bytes read by an I2C transfer.
    I2c {
        /// Exactly `read_len` bytes.
        read: Vec<u8, MAX_I2C>,
    },
}

/// Static capabilities of a device, plus its uptime.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, PartialEq, Default)]
pub struct DeviceInfo {
    /// Firmware name and version.
    pub firmware: String<NAME_LEN>,
    /// Board name.
    pub board: String<NAME_LEN>,
    /// Milliseconds since boot (wraps after ~49 days).
    pub uptime_ms: u32,
    /// Usable pins and their modes.
    pub pins: Vec<PinCaps, MAX_PINS>,
    /// Number of ADC channels (0..adc_channels).
    pub adc_channels: u8,
    /// ADC resolution in bits.
    pub adc_bits: u8,
    /// ADC reference in millivolts.
    pub adc_vref_mv: u16,
    /// Whether PWM is available.
    pub pwm: bool,
    /// Whether an I2C bus is available.
    pub i2c: bool,
}

/// One pin and what it can do.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, Copy, PartialEq, Eq)]
pub struct PinCaps {
    /// Board pin number.
    pub pin: u8,
    /// Bitmask of [`PinMode::bit`].
    pub modes: u8,
}

impl PinCaps {
    /// Whether this pin supports `mode`.
    pub const fn supports(&self, mode: PinMode) -> bool {
        self.modes & mode.bit() != 0
    }
}

/// Why the device could not carry out a request. Delivered inside a [`Response`].
#[derive(Serialize, Deserialize, Schema, Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceError {
    /// No such pin on this board.
    UnknownPin(u8),
    /// The pin does not support that mode, or is not in a mode allowing the operation.
    UnsupportedMode,
    /// No such ADC channel.
    AdcChannel(u8),
    /// PWM frequency or duty out of range.
    PwmRange,
    /// The I2C device at this address did not acknowledge.
    I2cNack(u8),
    /// Any other I2C bus failure (arbitration, timeout).
    I2cBus,
    /// A length over [`MAX_I2C`], or a response that would not fit a frame.
    TooLong,
    /// Hello with another [`PROTOCOL_VERSION`].
    VersionMismatch {
        /// The device's version.
        device: u8,
        /// The version the host sent.
        host: u8,
    },
    /// Hello with another [`SCHEMA_HASH`].
    SchemaMismatch,
    /// The device cannot take this request now.
    Busy,
    /// A firmware bug or unexpected hardware state.
    Internal,
    /// This board cannot do that at all (e.g. [`RequestBody::Bootloader`] without a bootloader).
    Unsupported,
}

/// An unsolicited notification enabled by [`RequestBody::Subscribe`].
#[derive(Serialize, Deserialize, Schema, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// A subscribed pin changed level.
    PinChange {
        /// Board pin number.
        pin: u8,
        /// The new level.
        high: bool,
        /// Device uptime at detection.
        at_ms: u32,
    },
    /// A periodic ADC sample.
    Adc {
        /// ADC channel number.
        channel: u8,
        /// Raw conversion result.
        raw: u16,
        /// Device uptime at sampling.
        at_ms: u32,
    },
}

/// What to stream; the default (all zero) streams nothing.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventMask {
    /// Bit `n` reports level changes of pin `n`.
    pub pin_change: u32,
    /// Period of ADC sampling in ms; 0 turns ADC streaming off.
    pub adc_period_ms: u16,
    /// Bit `n` samples ADC channel `n` every period.
    pub adc_channels: u8,
}

/// What travels device → host: a response or an event.
#[derive(Serialize, Deserialize, Schema, Debug, Clone, PartialEq)]
pub enum DeviceMessage {
    /// The answer to a request.
    Response(Response),
    /// An unsolicited event.
    Event(Event),
}

impl Request {
    /// The handshake a host opens with, carrying this crate's version and schema hash.
    pub fn hello(seq: u16) -> Self {
        Request {
            seq,
            body: RequestBody::Hello {
                version: PROTOCOL_VERSION,
                schema_hash: SCHEMA_HASH,
            },
        }
    }
}
