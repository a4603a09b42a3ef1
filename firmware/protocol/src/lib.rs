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
//! Changing any message is a wire break: bump [`PROTOCOL_VERSION`] for incompatible
//! protocol changes and edit [`SCHEMA`] (which [`SCHEMA_HASH`] is computed from) for any
//! layout change. The host sends both in [`RequestBody::Hello`]; the device refuses a mismatch
//! with [`DeviceError::VersionMismatch`] or [`DeviceError::SchemaMismatch`]. The test
//! `golden_frames_pin_the_wire_format` fails when an encoding changes without the schema.
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

pub use frame::{decode, encode, FrameError, FrameReader};
/// The `heapless` this contract is written with, so firmware and host name the same types.
pub use heapless;

use heapless::{String, Vec};
use serde::{Deserialize, Serialize};

/// Protocol version; bump on any incompatible change of message meaning.
pub const PROTOCOL_VERSION: u8 = 1;

/// Maximum encoded frame, including COBS overhead, CRC and the 0x00 delimiter.
pub const MAX_FRAME: usize = 128;

/// Maximum bytes per I2C write or read.
pub const MAX_I2C: usize = 32;

/// Maximum number of pins a [`DeviceInfo`] can describe.
pub const MAX_PINS: usize = 32;

/// A textual description of every message layout; [`SCHEMA_HASH`] is its FNV-1a hash.
///
/// Edit it (in the same commit) whenever a type below changes shape, order or variants.
pub const SCHEMA: &str = "covo-mcu v1;\
Request{seq:u16,body:RequestBody};\
RequestBody{Hello{version:u8,schema_hash:u64},Ping,Info,GpioMode{pin:u8,mode:PinMode},\
GpioRead{pin:u8},GpioWrite{pin:u8,high:bool},AdcRead{channel:u8},\
PwmSet{pin:u8,frequency_hz:u32,duty_permille:u16},\
I2cTransfer{address:u8,write:Vec<u8,32>,read_len:u8},Subscribe{events:EventMask}};\
PinMode{Input,InputPullUp,InputPullDown,Output,Pwm,Analog};\
Response{seq:u16,body:Result<ResponseBody,DeviceError>};\
ResponseBody{Hello{version:u8,schema_hash:u64,info:DeviceInfo},Pong,Info(DeviceInfo),Done,\
Level{high:bool},Adc{raw:u16,millivolts:u16},Pwm{frequency_hz:u32,duty_permille:u16},\
I2c{read:Vec<u8,32>}};\
DeviceInfo{firmware:String<16>,board:String<16>,uptime_ms:u32,pins:Vec<PinCaps,32>,\
adc_channels:u8,adc_bits:u8,adc_vref_mv:u16,pwm:bool,i2c:bool};\
PinCaps{pin:u8,modes:u8};\
DeviceError{UnknownPin(u8),UnsupportedMode,AdcChannel(u8),PwmRange,I2cNack(u8),I2cBus,TooLong,\
VersionMismatch{device:u8,host:u8},SchemaMismatch,Busy,Internal};\
Event{PinChange{pin:u8,high:bool,at_ms:u32},Adc{channel:u8,raw:u16,at_ms:u32}};\
EventMask{pin_change:u32,adc_period_ms:u16,adc_channels:u8};\
DeviceMessage{Response(Response),Event(Event)};\
frame=cobs(postcard++crc16_ibm_sdlc_le)00";

/// FNV-1a (64-bit) of [`SCHEMA`]: both ends compare it at handshake.
pub const SCHEMA_HASH: u64 = fnv1a_64(SCHEMA.as_bytes());

/// 64-bit FNV-1a, usable in const context.
pub const fn fnv1a_64(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut i = 0;
    while i < bytes.len() {
        hash ^= bytes[i] as u64;
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        i += 1;
    }
    hash
}

/// A request from the host; the device answers with a [`Response`] carrying the same `seq`.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Request {
    /// Chosen by the host, echoed by the device.
    pub seq: u16,
    /// What is asked.
    pub body: RequestBody,
}

/// What a [`Request`] asks the device to do.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
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
}

/// How a pin is configured. [`PinCaps::modes`] is a bitmask of [`PinMode::bit`].
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Hash)]
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
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
pub struct Response {
    /// The `seq` of the request answered.
    pub seq: u16,
    /// The result, or why the device could not do it.
    pub body: Result<ResponseBody, DeviceError>,
}

/// A successful answer.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
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
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq, Default)]
pub struct DeviceInfo {
    /// Firmware name and version.
    pub firmware: String<16>,
    /// Board name.
    pub board: String<16>,
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
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
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
}

/// An unsolicited notification enabled by [`RequestBody::Subscribe`].
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Serialize, Deserialize, Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EventMask {
    /// Bit `n` reports level changes of pin `n`.
    pub pin_change: u32,
    /// Period of ADC sampling in ms; 0 turns ADC streaming off.
    pub adc_period_ms: u16,
    /// Bit `n` samples ADC channel `n` every period.
    pub adc_channels: u8,
}

/// What travels device → host: a response or an event.
#[derive(Serialize, Deserialize, Debug, Clone, PartialEq)]
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
