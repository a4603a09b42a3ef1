//! Text on an SSD1306 128×64 OLED through the `ssd1306` crate (buffered graphics mode) and
//! `embedded-graphics`' 6×10 font: up to 6 lines of 21 characters; longer lines are cut.

use crate::bus::BusError;
use embedded_graphics::mono_font::{ascii::FONT_6X10, MonoTextStyle};
use embedded_graphics::pixelcolor::BinaryColor;
use embedded_graphics::prelude::*;
use embedded_graphics::text::{Baseline, Text};
use embedded_hal::i2c::{ErrorType, I2c, Operation};
use ssd1306::mode::BufferedGraphicsMode;
use ssd1306::prelude::*;
use ssd1306::{I2CDisplayInterface, Ssd1306};

/// Lines that fit: 64 px / 10 px.
pub const MAX_LINES: usize = 6;
/// Characters per line that fit: 128 px / 6 px.
pub const MAX_COLUMNS: usize = 21;

/// Bytes in the largest single transfer a draw or clear makes: a control byte and 16 bytes of
/// GDDRAM (the `ssd1306` crate's chunk); the gateway's policy judges display calls by it.
pub const MAX_TRANSFER: usize = 17;

/// Why the display could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DisplayError {
    /// The bus failed (a NACK means no display at that address).
    #[error(transparent)]
    Bus(BusError),
    /// The driver failed otherwise.
    #[error("display driver: {0}")]
    Driver(String),
}

/// Keeps the first bus error, which the display interface would flatten into
/// `BusWriteError`.
struct Keep<I> {
    i2c: I,
    error: Option<BusError>,
}

impl<I: I2c<Error = BusError>> ErrorType for Keep<I> {
    type Error = BusError;
}

impl<I> Keep<I> {
    fn keep<T>(&mut self, r: Result<T, BusError>) -> Result<T, BusError> {
        r.inspect_err(|e| {
            self.error.get_or_insert_with(|| e.clone());
        })
    }
}

// Every method forwards, so the bus sees the same calls as without the wrapper.
impl<I: I2c<Error = BusError>> I2c for Keep<I> {
    fn read(&mut self, address: u8, buf: &mut [u8]) -> Result<(), BusError> {
        let r = self.i2c.read(address, buf);
        self.keep(r)
    }

    fn write(&mut self, address: u8, bytes: &[u8]) -> Result<(), BusError> {
        let r = self.i2c.write(address, bytes);
        self.keep(r)
    }

    fn write_read(&mut self, address: u8, bytes: &[u8], buf: &mut [u8]) -> Result<(), BusError> {
        let r = self.i2c.write_read(address, bytes, buf);
        self.keep(r)
    }

    fn transaction(
        &mut self,
        address: u8,
        operations: &mut [Operation<'_>],
    ) -> Result<(), BusError> {
        let r = self.i2c.transaction(address, operations);
        self.keep(r)
    }
}

type Display<'a, I> = Ssd1306<
    ssd1306::prelude::I2CInterface<&'a mut Keep<I>>,
    DisplaySize128x64,
    BufferedGraphicsMode<DisplaySize128x64>,
>;

fn with_display<I: I2c<Error = BusError>>(
    i2c: I,
    address: u8,
    draw: impl FnOnce(&mut Display<'_, I>),
) -> Result<(), DisplayError> {
    let mut keep = Keep { i2c, error: None };
    let result = {
        let interface = I2CDisplayInterface::new_custom_address(&mut keep, address);
        let mut display = Ssd1306::new(interface, DisplaySize128x64, DisplayRotation::Rotate0)
            .into_buffered_graphics_mode();
        display.init().and_then(|()| {
            draw(&mut display);
            display.flush()
        })
    };
    result.map_err(|e| match keep.error.take() {
        Some(bus) => DisplayError::Bus(bus),
        None => DisplayError::Driver(format!("{e:?}")),
    })
}

/// Clears the display and writes `lines` from the top (at most [`MAX_LINES`], each cut to
/// [`MAX_COLUMNS`] characters).
pub fn show_text<I: I2c<Error = BusError>>(
    i2c: I,
    address: u8,
    lines: &[String],
) -> Result<(), DisplayError> {
    with_display(i2c, address, |display| {
        let style = MonoTextStyle::new(&FONT_6X10, BinaryColor::On);
        for (row, line) in lines.iter().take(MAX_LINES).enumerate() {
            let cut: String = line.chars().take(MAX_COLUMNS).collect();
            let at = Point::new(0, (row * 10) as i32);
            // Drawing into the RAM buffer cannot fail.
            let _ = Text::with_baseline(&cut, at, style, Baseline::Top).draw(display);
        }
    })
}

/// Blanks the display.
pub fn clear<I: I2c<Error = BusError>>(i2c: I, address: u8) -> Result<(), DisplayError> {
    with_display(i2c, address, |display| display.clear_buffer())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sensors::tests::{MockBus, Sizes};
    use embedded_hal_mock::eh1::i2c::{Mock, Transaction as T};

    const OLED: u8 = 0x3C;
    /// Control bytes (SSD1306 datasheet 8.1.5.2): Co = 0, D/C# selects commands or GDDRAM.
    const COMMANDS: u8 = 0x00;
    const DATA: u8 = 0x40;

    fn cmd(bytes: &[u8]) -> T {
        let mut w = vec![COMMANDS];
        w.extend_from_slice(bytes);
        T::write(OLED, w)
    }

    #[test]
    fn clearing_initialises_the_panel_then_sends_the_whole_blank_gddram_in_sixteen_byte_chunks() {
        let mut expected = vec![
            cmd(&[0xAE]),       // display off
            cmd(&[0xD5, 0x80]), // clock divide / oscillator
            cmd(&[0xA8, 63]),   // multiplex ratio: 64 rows
            cmd(&[0xD3, 0]),    // display offset
            cmd(&[0x40]),       // start line 0
            cmd(&[0x8D, 0x14]), // charge pump on
            cmd(&[0x20, 0x00]), // horizontal addressing
            cmd(&[0xDA, 0x12]), // COM pins: alternative, no remap
            cmd(&[0xA1]),       // segment remap (rotation 0)
            cmd(&[0xC8]),       // COM scan reversed (rotation 0)
            cmd(&[0xD9, 0x21]), // precharge
            cmd(&[0x81, 0x5F]), // contrast
            cmd(&[0xDB, 0x40]), // VCOMH deselect: auto
            cmd(&[0xA4]),       // follow RAM
            cmd(&[0xA6]),       // not inverted
            cmd(&[0x2E]),       // scrolling off
            cmd(&[0xAF]),       // display on
            cmd(&[0x21, 0, 127]),
            cmd(&[0x22, 0, 7]),
        ];
        let mut chunk = vec![DATA];
        chunk.extend([0u8; 16]);
        expected.extend((0..128 * 64 / 8 / 16).map(|_| T::write(OLED, chunk.clone())));
        let mut mock = Mock::new(&expected);
        let (bus, largest) = Sizes::new(MockBus(mock.clone()));
        clear(bus, OLED).unwrap();
        mock.done();
        assert_eq!(largest.get(), (MAX_TRANSFER, 0));
    }

    #[test]
    fn a_nack_from_the_display_keeps_its_bus_error() {
        let mut mock = Mock::new(&[T::write(OLED, vec![COMMANDS, 0xAE]).with_error(
            embedded_hal::i2c::ErrorKind::NoAcknowledge(
                embedded_hal::i2c::NoAcknowledgeSource::Address,
            ),
        )]);
        let e = show_text(MockBus(mock.clone()), OLED, &["hi".into()]).unwrap_err();
        mock.done();
        assert_eq!(e, DisplayError::Bus(BusError::Nack(OLED)));
    }
}
