//! The device side of the covo microcontroller link: a request dispatcher generic over the
//! board, so every firmware shares it and the host can test it.
//!
//! # Layout
//! - [`Board`]: what a firmware provides (GPIO, ADC, PWM, I2C, a clock).
//! - [`Device`]: owns a board and a frame reader; turns received bytes into response frames
//!   and, from [`Device::poll`], event frames. It does no I/O itself: the firmware moves bytes.
//! - `sim` (feature `std`): `SimBoard`, an in-memory RP2040-like board.
//! - `spawn_pty_sim` (feature `std`): a `Device<SimBoard>` serving a pseudo-terminal, the host
//!   simulation of a microcontroller on a serial port.
//!
//! Corrupt frames are dropped without an answer: the host times out and retries with the same
//! request. Every well-formed request gets exactly one response with its `seq`.
#![no_std]
#![deny(unsafe_code, missing_docs)]

#[cfg(feature = "std")]
extern crate std;

#[cfg(feature = "std")]
mod pty;
#[cfg(feature = "std")]
pub mod sim;
#[cfg(feature = "std")]
pub use pty::{spawn_pty_sim, spawn_pty_sim_with_bootsel, SimHandle};

pub use covo_mcu_protocol as protocol;
use covo_mcu_protocol::{
    encode, heapless::Vec, DeviceError, DeviceInfo, DeviceMessage, Event, EventMask, FrameReader,
    PinMode, Request, RequestBody, Response, ResponseBody, MAX_FRAME, MAX_I2C, PROTOCOL_VERSION,
    SCHEMA_HASH,
};

/// What a firmware provides. Errors are reported to the host as they are.
pub trait Board {
    /// Static capabilities; `uptime_ms` is filled in by [`Device`].
    fn info(&self) -> DeviceInfo;
    /// Milliseconds since boot, wrapping.
    fn uptime_ms(&self) -> u32;
    /// Configure a pin.
    fn gpio_mode(&mut self, pin: u8, mode: PinMode) -> Result<(), DeviceError>;
    /// Read a pin's level.
    fn gpio_read(&mut self, pin: u8) -> Result<bool, DeviceError>;
    /// Drive an output pin.
    fn gpio_write(&mut self, pin: u8, high: bool) -> Result<(), DeviceError>;
    /// One raw conversion of an ADC channel.
    fn adc_read(&mut self, channel: u8) -> Result<u16, DeviceError>;
    /// Set PWM on a pin; returns the frequency and duty actually achieved.
    fn pwm_set(
        &mut self,
        pin: u8,
        frequency_hz: u32,
        duty_permille: u16,
    ) -> Result<(u32, u16), DeviceError>;
    /// Write `write`, then read `read.len()` bytes (either may be empty).
    fn i2c_transfer(
        &mut self,
        address: u8,
        write: &[u8],
        read: &mut [u8],
    ) -> Result<(), DeviceError>;
    /// Whether this board can reboot into a bootloader that takes a new firmware (the RP2040's
    /// BOOTSEL drive). The reboot itself is the firmware's: it asks
    /// [`Device::take_bootloader_request`] after each [`Device::step`], once the answer is out.
    fn bootloader(&self) -> bool {
        false
    }
}

/// The byte transport a firmware's main loop drives: USB CDC-ACM on the RP2040, a UART on the
/// QEMU image. [`Device::step`] is the loop body both share.
pub trait Link {
    /// Services the transport (e.g. the USB stack); `false` when nothing can have arrived.
    fn poll(&mut self) -> bool;
    /// Moves received bytes into `buf`; 0 when there are none.
    fn read(&mut self, buf: &mut [u8]) -> usize;
    /// Sends one whole frame. A transport whose host stopped reading may drop it after a
    /// bounded wait rather than block the loop.
    fn write(&mut self, frame: &[u8]);
}

/// Bytes [`Device::step`] reads from its [`Link`] per pass.
pub const STEP_READ: usize = 64;

/// A board plus the protocol state: frame reassembly and event subscriptions.
pub struct Device<B: Board> {
    board: B,
    reader: FrameReader<MAX_FRAME>,
    events: EventMask,
    /// Last levels seen of subscribed pins, and which of them are known yet.
    levels: u32,
    levels_known: u32,
    next_adc_ms: u32,
    adc_bits: u8,
    adc_vref_mv: u16,
    bootloader: bool,
}

impl<B: Board> Device<B> {
    /// Wraps a board; nothing is streamed until the host subscribes.
    pub fn new(board: B) -> Self {
        let info = board.info();
        Device {
            board,
            reader: FrameReader::new(),
            events: EventMask::default(),
            levels: 0,
            levels_known: 0,
            next_adc_ms: 0,
            adc_bits: info.adc_bits,
            adc_vref_mv: info.adc_vref_mv,
            bootloader: false,
        }
    }

    /// Whether the host asked for the bootloader since the last call; the answer has been sent
    /// by then, so the firmware flushes its link and reboots.
    pub fn take_bootloader_request(&mut self) -> bool {
        core::mem::take(&mut self.bootloader)
    }

    /// Feed received bytes; every complete response/event frame to send goes to `tx`.
    pub fn on_bytes(&mut self, rx: &[u8], tx: &mut impl FnMut(&[u8])) {
        let mut rx = rx;
        while let Some(frame) = self.reader.push::<Request>(&mut rx) {
            // Corrupt frames get no answer: the host retries on timeout.
            if let Ok(request) = frame {
                let response = Response {
                    seq: request.seq,
                    body: self.handle(request.body),
                };
                send_response(response, tx);
            }
        }
    }

    /// One pass of a firmware's main loop: service the link, answer what arrived, then look for
    /// events. Events are polled on every pass, also when the link had nothing to read: an idle
    /// host is exactly when a subscribed pin change or ADC sample has to go out. Returns how
    /// many bytes were read, so a firmware can sleep when it was 0.
    pub fn step(&mut self, link: &mut impl Link) -> usize {
        let mut rx = [0u8; STEP_READ];
        let n = if link.poll() { link.read(&mut rx) } else { 0 };
        let mut tx = |frame: &[u8]| link.write(frame);
        if n > 0 {
            self.on_bytes(&rx[..n], &mut tx);
        }
        self.poll(&mut tx);
        n
    }

    /// Call periodically (e.g. every ms) for event streaming (pin changes, periodic ADC).
    pub fn poll(&mut self, tx: &mut impl FnMut(&[u8])) {
        let now = self.board.uptime_ms();
        let mut pins = self.events.pin_change;
        while pins != 0 {
            let pin = pins.trailing_zeros() as u8;
            pins &= pins - 1;
            let bit = 1u32 << pin;
            let Ok(high) = self.board.gpio_read(pin) else {
                continue;
            };
            let changed = (self.levels & bit != 0) != high;
            if self.levels_known & bit != 0 && changed {
                send(
                    &DeviceMessage::Event(Event::PinChange {
                        pin,
                        high,
                        at_ms: now,
                    }),
                    tx,
                );
            }
            self.levels = (self.levels & !bit) | if high { bit } else { 0 };
            self.levels_known |= bit;
        }

        let period = self.events.adc_period_ms;
        if period != 0 && now.wrapping_sub(self.next_adc_ms) as i32 >= 0 {
            self.next_adc_ms = now.wrapping_add(period as u32);
            let mut channels = self.events.adc_channels;
            while channels != 0 {
                let channel = channels.trailing_zeros() as u8;
                channels &= channels - 1;
                if let Ok(raw) = self.board.adc_read(channel) {
                    send(
                        &DeviceMessage::Event(Event::Adc {
                            channel,
                            raw,
                            at_ms: now,
                        }),
                        tx,
                    );
                }
            }
        }
    }

    /// The board, e.g. to drive a simulated input or blink a status LED.
    pub fn board(&mut self) -> &mut B {
        &mut self.board
    }

    /// The current subscription.
    pub fn subscription(&self) -> EventMask {
        self.events
    }

    fn info(&self) -> DeviceInfo {
        DeviceInfo {
            uptime_ms: self.board.uptime_ms(),
            ..self.board.info()
        }
    }

    fn handle(&mut self, body: RequestBody) -> Result<ResponseBody, DeviceError> {
        let b = &mut self.board;
        match body {
            RequestBody::Hello {
                version,
                schema_hash,
            } => {
                if version != PROTOCOL_VERSION {
                    return Err(DeviceError::VersionMismatch {
                        device: PROTOCOL_VERSION,
                        host: version,
                    });
                }
                if schema_hash != SCHEMA_HASH {
                    return Err(DeviceError::SchemaMismatch);
                }
                // A new session starts with nothing streamed.
                self.subscribe(EventMask::default());
                Ok(ResponseBody::Hello {
                    version: PROTOCOL_VERSION,
                    schema_hash: SCHEMA_HASH,
                    info: self.info(),
                })
            }
            RequestBody::Ping => Ok(ResponseBody::Pong),
            RequestBody::Info => Ok(ResponseBody::Info(self.info())),
            RequestBody::GpioMode { pin, mode } => {
                b.gpio_mode(pin, mode).map(|()| ResponseBody::Done)
            }
            RequestBody::GpioRead { pin } => {
                b.gpio_read(pin).map(|high| ResponseBody::Level { high })
            }
            RequestBody::GpioWrite { pin, high } => {
                b.gpio_write(pin, high).map(|()| ResponseBody::Done)
            }
            RequestBody::AdcRead { channel } => {
                let raw = b.adc_read(channel)?;
                Ok(ResponseBody::Adc {
                    raw,
                    millivolts: millivolts(raw, self.adc_bits, self.adc_vref_mv),
                })
            }
            RequestBody::PwmSet {
                pin,
                frequency_hz,
                duty_permille,
            } => {
                if duty_permille > 1000 {
                    return Err(DeviceError::PwmRange);
                }
                let (frequency_hz, duty_permille) = b.pwm_set(pin, frequency_hz, duty_permille)?;
                Ok(ResponseBody::Pwm {
                    frequency_hz,
                    duty_permille,
                })
            }
            RequestBody::I2cTransfer {
                address,
                write,
                read_len,
            } => {
                let read_len = read_len as usize;
                if read_len > MAX_I2C {
                    return Err(DeviceError::TooLong);
                }
                let mut read = [0u8; MAX_I2C];
                b.i2c_transfer(address, &write, &mut read[..read_len])?;
                let read = Vec::from_slice(&read[..read_len]).map_err(|_| DeviceError::Internal)?;
                Ok(ResponseBody::I2c { read })
            }
            RequestBody::Subscribe { events } => {
                self.subscribe(events);
                Ok(ResponseBody::Done)
            }
            RequestBody::Bootloader => {
                if !b.bootloader() {
                    return Err(DeviceError::Unsupported);
                }
                self.bootloader = true;
                Ok(ResponseBody::Done)
            }
        }
    }

    fn subscribe(&mut self, events: EventMask) {
        self.events = events;
        // The first poll records a baseline: subscribing reports changes, not current levels.
        self.levels_known = 0;
        self.next_adc_ms = self.board.uptime_ms();
    }
}

/// A device that is a file of 256 byte registers behind a register pointer, the common I2C
/// convention: the first written byte sets the pointer, further bytes are written from it, and
/// reads continue from it, all auto-incrementing. Simulated I2C devices use it.
#[derive(Debug, Clone)]
pub struct RegisterFile {
    /// The registers.
    pub regs: [u8; 256],
    pointer: u8,
}

impl RegisterFile {
    /// A register file with these contents and the pointer at 0.
    pub const fn new(regs: [u8; 256]) -> Self {
        RegisterFile { regs, pointer: 0 }
    }

    /// One I2C transaction: `write` (pointer, then data), then `read`.
    pub fn transfer(&mut self, write: &[u8], read: &mut [u8]) {
        if let Some((&pointer, data)) = write.split_first() {
            self.pointer = pointer;
            for &byte in data {
                self.regs[self.pointer as usize] = byte;
                self.pointer = self.pointer.wrapping_add(1);
            }
        }
        for byte in read {
            *byte = self.regs[self.pointer as usize];
            self.pointer = self.pointer.wrapping_add(1);
        }
    }
}

/// A USB serial number from a 64-bit unique id (the RP2040's QSPI flash id): 16 upper-case hex
/// digits, most significant byte first, as `picotool` and the Pico SDK print the board id.
pub fn serial_number(id: &[u8; 8]) -> [u8; 16] {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = [0u8; 16];
    for (i, byte) in id.iter().enumerate() {
        out[2 * i] = HEX[(byte >> 4) as usize];
        out[2 * i + 1] = HEX[(byte & 0xf) as usize];
    }
    out
}

/// Scales a raw conversion to millivolts, saturating.
pub fn millivolts(raw: u16, bits: u8, vref_mv: u16) -> u16 {
    if bits == 0 || bits > 16 {
        return 0;
    }
    let full = (1u32 << bits) - 1;
    let mv = raw as u32 * vref_mv as u32 / full;
    mv.min(u16::MAX as u32) as u16
}

fn send_response(response: Response, tx: &mut impl FnMut(&[u8])) {
    let seq = response.seq;
    if !send(&DeviceMessage::Response(response), tx) {
        // The answer does not fit a frame (e.g. a DeviceInfo with long names and many pins):
        // say so rather than leave the host waiting.
        let too_long = Response {
            seq,
            body: Err(DeviceError::TooLong),
        };
        send(&DeviceMessage::Response(too_long), tx);
    }
}

fn send(msg: &DeviceMessage, tx: &mut impl FnMut(&[u8])) -> bool {
    let mut buf = [0u8; MAX_FRAME];
    match encode(msg, &mut buf) {
        Ok(frame) => {
            tx(frame);
            true
        }
        Err(_) => false,
    }
}
