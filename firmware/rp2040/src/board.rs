//! The Pico's peripherals behind `covo_mcu_core::Board`.
//!
//! - GPIO 0..=22 and 25 (the LED), configured at run time through the HAL's dynamic pins.
//!   GPIO 4 (SDA) and 5 (SCL) belong to I2C0 and are listed with no modes.
//! - ADC: channels 0..=2 on GPIO 26..=28, channel 4 the temperature sensor; 12 bits, 3300 mV.
//! - PWM on every listed pin: slice `(pin / 2) % 8`, channel A for even pins and B for odd ones,
//!   so the two pins of a slice share one frequency.
//! - I2C0 at 100 kHz with the internal pull-ups (add 4.7 kΩ externals for real buses).

use covo_mcu_core::Board;
use covo_mcu_protocol::{DeviceError, DeviceInfo, PinCaps, PinMode};
use embedded_hal::digital::InputPin;
use embedded_hal::i2c::{Error as _, ErrorKind, I2c};
use embedded_hal_0_2::adc::OneShot;
use rp2040_hal::{
    adc::{Adc, AdcPin, TempSense},
    fugit::RateExtU32,
    gpio::{
        bank0::{Gpio26, Gpio27, Gpio28, Gpio4, Gpio5},
        DynFunction, DynPinId, DynPullType, DynSioConfig, FunctionI2C, FunctionNull, Pin, Pins,
        PullNone, PullUp,
    },
    i2c::I2C,
    pac, Timer,
};

type DynPin = Pin<DynPinId, DynFunction, DynPullType>;
/// An ADC input, typed by its pin: rp2040-hal 0.11 reads only typed ADC pins.
type Analog<I> = AdcPin<Pin<I, FunctionNull, PullNone>>;
type I2c0 = I2C<
    pac::I2C0,
    (
        Pin<Gpio4, FunctionI2C, PullUp>,
        Pin<Gpio5, FunctionI2C, PullUp>,
    ),
>;

/// Pin numbers in the order `DeviceInfo` lists them.
const LISTED: [u8; 24] = [
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 25,
];
const I2C_PINS: [u8; 2] = [4, 5];
const TEMPERATURE_CHANNEL: u8 = 4;
const PWM_MIN_HZ: u32 = 8;
/// Keeps at least 100 duty steps.
const PWM_MAX_HZ: u32 = 1_000_000;

const fn bit(mode: PinMode) -> u8 {
    1 << mode as u8
}

const GPIO_MODES: u8 = bit(PinMode::Input)
    | bit(PinMode::InputPullUp)
    | bit(PinMode::InputPullDown)
    | bit(PinMode::Output)
    | bit(PinMode::Pwm);

/// The Raspberry Pi Pico.
pub struct Pico {
    gpio: [Option<DynPin>; 26],
    adc: Adc,
    analog: (Analog<Gpio26>, Analog<Gpio27>, Analog<Gpio28>),
    temperature: TempSense,
    pwm: pac::PWM,
    i2c: I2c0,
    timer: Timer,
    sys_hz: u32,
}

impl Pico {
    /// Takes the pins and peripherals it drives; every GPIO starts as a floating input.
    pub fn new(
        pins: Pins,
        adc: pac::ADC,
        pwm: pac::PWM,
        i2c0: pac::I2C0,
        timer: Timer,
        resets: &mut pac::RESETS,
        sys_hz: u32,
    ) -> Self {
        fn dynamic<P: rp2040_hal::gpio::AnyPin>(pin: P) -> Option<DynPin>
        where
            P: Into<rp2040_hal::gpio::Pin<P::Id, P::Function, P::Pull>>,
            P::Id: rp2040_hal::gpio::ValidFunction<DynFunction>,
        {
            let mut p = pin
                .into()
                .reconfigure::<DynFunction, DynPullType>()
                .into_dyn_pin();
            p.set_pull_type(DynPullType::None);
            p.try_set_function(DynFunction::Sio(DynSioConfig::Input))
                .ok()?;
            Some(p)
        }

        let i2c = I2C::i2c0(
            i2c0,
            pins.gpio4.reconfigure(),
            pins.gpio5.reconfigure(),
            100.kHz(),
            resets,
            sys_hz.Hz(),
        );
        let gpio = [
            dynamic(pins.gpio0),
            dynamic(pins.gpio1),
            dynamic(pins.gpio2),
            dynamic(pins.gpio3),
            None,
            None,
            dynamic(pins.gpio6),
            dynamic(pins.gpio7),
            dynamic(pins.gpio8),
            dynamic(pins.gpio9),
            dynamic(pins.gpio10),
            dynamic(pins.gpio11),
            dynamic(pins.gpio12),
            dynamic(pins.gpio13),
            dynamic(pins.gpio14),
            dynamic(pins.gpio15),
            dynamic(pins.gpio16),
            dynamic(pins.gpio17),
            dynamic(pins.gpio18),
            dynamic(pins.gpio19),
            dynamic(pins.gpio20),
            dynamic(pins.gpio21),
            dynamic(pins.gpio22),
            None,
            None,
            dynamic(pins.gpio25),
        ];
        // GPIO 26..=28 are ADC inputs by construction.
        let analog = (
            AdcPin::new(pins.gpio26.reconfigure()).ok().unwrap(),
            AdcPin::new(pins.gpio27.reconfigure()).ok().unwrap(),
            AdcPin::new(pins.gpio28.reconfigure()).ok().unwrap(),
        );
        let mut adc = Adc::new(adc, resets);
        let temperature = adc.take_temp_sensor().unwrap();

        resets.reset().modify(|_, w| w.pwm().clear_bit());
        while resets.reset_done().read().pwm().bit_is_clear() {}

        Self {
            gpio,
            adc,
            analog,
            temperature,
            pwm,
            i2c,
            timer,
            sys_hz,
        }
    }

    fn gpio(&mut self, pin: u8) -> Result<&mut DynPin, DeviceError> {
        self.gpio
            .get_mut(pin as usize)
            .and_then(Option::as_mut)
            .ok_or(if I2C_PINS.contains(&pin) {
                DeviceError::UnsupportedMode
            } else {
                DeviceError::UnknownPin(pin)
            })
    }
}

impl Board for Pico {
    /// The boot ROM's USB mass-storage bootloader (`main` reboots into it).
    fn bootloader(&self) -> bool {
        true
    }

    fn info(&self) -> DeviceInfo {
        let mut info = DeviceInfo {
            firmware: Default::default(),
            board: Default::default(),
            uptime_ms: self.uptime_ms(),
            pins: Default::default(),
            adc_channels: TEMPERATURE_CHANNEL + 1,
            adc_bits: 12,
            adc_vref_mv: 3300,
            pwm: true,
            i2c: true,
        };
        // The name stored in the image's stamp, so what the device reports is what the gateway
        // read from the file before it flashed it.
        let _ = info
            .firmware
            .push_str(covo_mcu_protocol::stamped_name(&crate::STAMP));
        let _ = info.board.push_str("rp2040-pico");
        for pin in LISTED {
            let modes = if I2C_PINS.contains(&pin) {
                0
            } else {
                GPIO_MODES
            };
            let _ = info.pins.push(PinCaps { pin, modes });
        }
        info
    }

    fn uptime_ms(&self) -> u32 {
        (self.timer.get_counter().ticks() / 1000) as u32
    }

    fn gpio_mode(&mut self, pin: u8, mode: PinMode) -> Result<(), DeviceError> {
        let p = self.gpio(pin)?;
        let (function, pull) = match mode {
            PinMode::Input => (DynSioConfig::Input, DynPullType::None),
            PinMode::InputPullUp => (DynSioConfig::Input, DynPullType::Up),
            PinMode::InputPullDown => (DynSioConfig::Input, DynPullType::Down),
            PinMode::Output => (DynSioConfig::Output, DynPullType::None),
            PinMode::Pwm => {
                p.set_pull_type(DynPullType::None);
                return p
                    .try_set_function(DynFunction::Pwm)
                    .map_err(|_| DeviceError::UnsupportedMode);
            }
            PinMode::Analog => return Err(DeviceError::UnsupportedMode),
        };
        p.set_pull_type(pull);
        p.try_set_function(DynFunction::Sio(function))
            .map_err(|_| DeviceError::UnsupportedMode)
    }

    fn gpio_read(&mut self, pin: u8) -> Result<bool, DeviceError> {
        let p = self.gpio(pin)?;
        Ok(p.as_input().is_high().unwrap_or(false))
    }

    fn gpio_write(&mut self, pin: u8, high: bool) -> Result<(), DeviceError> {
        let p = self.gpio(pin)?;
        if p.function() != DynFunction::Sio(DynSioConfig::Output) {
            return Err(DeviceError::UnsupportedMode);
        }
        let mask = 1u32 << pin;
        // SAFETY: GPIO_OUT_SET/CLR are write-only alias registers that touch only the bits
        // written, and this pin is owned by `self`; the HAL's own `set_high` writes them the
        // same way (its typed API cannot drive a pin whose function is chosen at run time).
        let sio = unsafe { &*pac::SIO::ptr() };
        if high {
            sio.gpio_out_set().write(|w| unsafe { w.bits(mask) });
        } else {
            sio.gpio_out_clr().write(|w| unsafe { w.bits(mask) });
        }
        Ok(())
    }

    fn adc_read(&mut self, channel: u8) -> Result<u16, DeviceError> {
        let r = match channel {
            0 => OneShot::<_, u16, _>::read(&mut self.adc, &mut self.analog.0),
            1 => OneShot::<_, u16, _>::read(&mut self.adc, &mut self.analog.1),
            2 => OneShot::<_, u16, _>::read(&mut self.adc, &mut self.analog.2),
            TEMPERATURE_CHANNEL => OneShot::<_, u16, _>::read(&mut self.adc, &mut self.temperature),
            _ => return Err(DeviceError::AdcChannel(channel)),
        };
        r.map_err(|_| DeviceError::Internal)
    }

    fn pwm_set(
        &mut self,
        pin: u8,
        frequency_hz: u32,
        duty_permille: u16,
    ) -> Result<(u32, u16), DeviceError> {
        if !(PWM_MIN_HZ..=PWM_MAX_HZ).contains(&frequency_hz) || duty_permille > 1000 {
            return Err(DeviceError::PwmRange);
        }
        self.gpio_mode(pin, PinMode::Pwm)?;

        let sys = self.sys_hz as u64;
        let f = frequency_hz as u64;
        // Divider in 1/16ths (8.4 fixed point), the smallest that fits the period in 16 bits.
        let div16 = (sys * 16).div_ceil(f * 65_535).clamp(16, 255 * 16 + 15);
        let wrap = ((sys * 16) / (div16 * f)).clamp(2, 65_535);
        let top = (wrap - 1) as u16;
        let level = (duty_permille as u64 * wrap + 500) / 1000;
        let level = level.min(wrap) as u16;

        let ch = self.pwm.ch(((pin >> 1) & 7) as usize);
        ch.div().write(|w| unsafe {
            w.int()
                .bits((div16 >> 4) as u8)
                .frac()
                .bits((div16 & 15) as u8)
        });
        ch.top().write(|w| unsafe { w.top().bits(top) });
        if pin & 1 == 0 {
            ch.cc().modify(|_, w| unsafe { w.a().bits(level) });
        } else {
            ch.cc().modify(|_, w| unsafe { w.b().bits(level) });
        }
        ch.csr().modify(|_, w| w.en().set_bit());

        let actual_hz = ((sys * 16) / (div16 * wrap)) as u32;
        let actual_duty = ((level as u64 * 1000 + wrap / 2) / wrap) as u16;
        Ok((actual_hz, actual_duty))
    }

    fn i2c_transfer(
        &mut self,
        address: u8,
        write: &[u8],
        read: &mut [u8],
    ) -> Result<(), DeviceError> {
        if address > 0x7f {
            return Err(DeviceError::I2cNack(address));
        }
        let r = match (write.is_empty(), read.is_empty()) {
            // A probe: the controller cannot send a bare address, so read one byte instead.
            (true, true) => self.i2c.read(address, &mut [0u8]),
            (false, true) => self.i2c.write(address, write),
            (true, false) => self.i2c.read(address, read),
            (false, false) => self.i2c.write_read(address, write, read),
        };
        r.map_err(|e| match e.kind() {
            ErrorKind::NoAcknowledge(_) => DeviceError::I2cNack(address),
            _ => DeviceError::I2cBus,
        })
    }
}
