//! A Solomon SSD1306 128×64 OLED controller modelled at command level, with its GDDRAM.
//!
//! Each I2C write begins with a control byte: Co (bit 7) and D/C# (bit 6). Co = 0 means the
//! rest of the write is one stream (commands for 0x00, GDDRAM data for 0x40); Co = 1 means one
//! byte follows and then another control byte. Commands take their datasheet argument counts,
//! also across writes; those that only tune the panel are accepted and ignored.

use super::i2c::{Ctx, I2cModel};

/// Panel width in pixels (GDDRAM columns).
pub const WIDTH: usize = 128;
/// Panel height in pixels (8 pages of 8 rows).
pub const HEIGHT: usize = 64;
const PAGES: usize = HEIGHT / 8;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AddressMode {
    Horizontal,
    Vertical,
    Page,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    Control,
    /// One byte, then a control byte again.
    Single {
        data: bool,
    },
    Stream {
        data: bool,
    },
}

/// The command-level model.
#[derive(Debug, Clone)]
pub struct Ssd1306Model {
    gddram: [[u8; WIDTH]; PAGES],
    expect: Expect,
    /// A command waiting for its arguments.
    pending: Vec<u8>,
    mode: AddressMode,
    columns: (u8, u8),
    pages: (u8, u8),
    column: u8,
    page: u8,
    display_on: bool,
    contrast: u8,
    inverted: bool,
    segment_remap: bool,
    com_reversed: bool,
}

/// What the panel is set to, apart from its pixels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OledStatus {
    /// Display ON (0xAF) rather than sleep (0xAE).
    pub display_on: bool,
    /// Contrast (0x81).
    pub contrast: u8,
    /// Inverse display (0xA7).
    pub inverted: bool,
}

impl Ssd1306Model {
    /// Control byte: a command stream follows.
    pub const CONTROL_COMMANDS: u8 = 0b0000_0000;
    /// Control byte: a GDDRAM data stream follows.
    pub const CONTROL_DATA: u8 = 0b0100_0000;
    /// Control byte bit: one byte follows, then another control byte.
    pub const CONTROL_CONTINUATION: u8 = 0b1000_0000;
    /// Set memory addressing mode (1 argument).
    pub const SET_ADDRESSING_MODE: u8 = 0x20;
    /// Set column start and end (2 arguments).
    pub const SET_COLUMN_ADDRESS: u8 = 0x21;
    /// Set page start and end (2 arguments).
    pub const SET_PAGE_ADDRESS: u8 = 0x22;
    /// Set contrast (1 argument).
    pub const SET_CONTRAST: u8 = 0x81;
    /// Display off (sleep); 0xAF is on.
    pub const DISPLAY_OFF: u8 = 0xAE;

    /// A controller just reset: page addressing, display off, GDDRAM blank.
    pub fn new() -> Ssd1306Model {
        Ssd1306Model {
            gddram: [[0; WIDTH]; PAGES],
            expect: Expect::Control,
            pending: Vec::new(),
            mode: AddressMode::Page,
            columns: (0, WIDTH as u8 - 1),
            pages: (0, PAGES as u8 - 1),
            column: 0,
            page: 0,
            display_on: false,
            contrast: 0x7F,
            inverted: false,
            segment_remap: false,
            com_reversed: false,
        }
    }

    /// Bytes of arguments a command takes (datasheet section 9).
    fn arguments(cmd: u8) -> usize {
        match cmd {
            0x20 | 0x81 | 0x8D | 0xA8 | 0xAD | 0xD3 | 0xD5 | 0xD6 | 0xD9 | 0xDA | 0xDB => 1,
            0x21 | 0x22 | 0xA3 => 2,
            0x29 | 0x2A => 5,
            0x26 | 0x27 => 6,
            _ => 0,
        }
    }

    fn command_byte(&mut self, byte: u8) {
        self.pending.push(byte);
        if self.pending.len() <= Self::arguments(self.pending[0]) {
            return;
        }
        let c = std::mem::take(&mut self.pending);
        match c[0] {
            Self::SET_ADDRESSING_MODE => {
                self.mode = match c[1] & 0b11 {
                    0b00 => AddressMode::Horizontal,
                    0b01 => AddressMode::Vertical,
                    _ => AddressMode::Page,
                }
            }
            Self::SET_COLUMN_ADDRESS => {
                self.columns = (c[1] & 0x7F, c[2] & 0x7F);
                self.column = self.columns.0;
            }
            Self::SET_PAGE_ADDRESS => {
                self.pages = (c[1] & 0x07, c[2] & 0x07);
                self.page = self.pages.0;
            }
            Self::SET_CONTRAST => self.contrast = c[1],
            0x00..=0x0F => self.column = (self.column & 0xF0) | c[0],
            0x10..=0x1F => self.column = (self.column & 0x0F) | ((c[0] & 0x07) << 4),
            0xB0..=0xB7 => self.page = c[0] & 0x07,
            0xA0 | 0xA1 => self.segment_remap = c[0] == 0xA1,
            0xC0 => self.com_reversed = false,
            0xC8 => self.com_reversed = true,
            0xA6 | 0xA7 => self.inverted = c[0] == 0xA7,
            0xAE | 0xAF => self.display_on = c[0] == 0xAF,
            // Timing, charge pump, multiplex, offset, start line, scrolling: accepted.
            _ => {}
        }
    }

    fn data_byte(&mut self, byte: u8) {
        self.gddram[self.page as usize][self.column as usize] = byte;
        match self.mode {
            AddressMode::Horizontal => {
                if self.column >= self.columns.1 {
                    self.column = self.columns.0;
                    self.page = if self.page >= self.pages.1 {
                        self.pages.0
                    } else {
                        self.page + 1
                    };
                } else {
                    self.column += 1;
                }
            }
            AddressMode::Vertical => {
                if self.page >= self.pages.1 {
                    self.page = self.pages.0;
                    self.column = if self.column >= self.columns.1 {
                        self.columns.0
                    } else {
                        self.column + 1
                    };
                } else {
                    self.page += 1;
                }
            }
            AddressMode::Page => {
                self.column = if self.column as usize >= WIDTH - 1 {
                    0
                } else {
                    self.column + 1
                };
            }
        }
    }

    /// Whether the pixel a viewer sees at (x, y) is lit in GDDRAM. Modules are wired so that
    /// segment remap (0xA1) plus reversed COM scan (0xC8) shows column 0, page 0 at the top
    /// left; the other settings mirror the picture, as they do on the glass.
    pub fn pixel(&self, x: usize, y: usize) -> bool {
        let col = if self.segment_remap { x } else { WIDTH - 1 - x };
        let row = if self.com_reversed { y } else { HEIGHT - 1 - y };
        self.gddram[row / 8][col] >> (row % 8) & 1 == 1
    }

    /// The panel state apart from pixels.
    pub fn status(&self) -> OledStatus {
        OledStatus {
            display_on: self.display_on,
            contrast: self.contrast,
            inverted: self.inverted,
        }
    }

    /// 64 lines of 128 characters, `#` lit and `.` dark, each ending in `\n`.
    pub fn text(&self) -> String {
        let mut s = String::with_capacity((WIDTH + 1) * HEIGHT);
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                s.push(if self.pixel(x, y) { '#' } else { '.' });
            }
            s.push('\n');
        }
        s
    }

    /// An 8-bit grayscale PNG of the picture (lit = 255).
    pub fn png(&self) -> Vec<u8> {
        let mut pixels = Vec::with_capacity(WIDTH * HEIGHT);
        for y in 0..HEIGHT {
            for x in 0..WIDTH {
                pixels.push(if self.pixel(x, y) { 0xFF } else { 0x00 });
            }
        }
        let mut out = Vec::new();
        let mut encoder = png::Encoder::new(&mut out, WIDTH as u32, HEIGHT as u32);
        encoder.set_color(png::ColorType::Grayscale);
        encoder.set_depth(png::BitDepth::Eight);
        // Writing into a Vec cannot fail once the header is valid, which it is by construction.
        let mut writer = encoder.write_header().expect("valid PNG header");
        writer.write_image_data(&pixels).expect("in-memory PNG");
        writer.finish().expect("in-memory PNG");
        out
    }
}

impl Default for Ssd1306Model {
    fn default() -> Self {
        Self::new()
    }
}

impl I2cModel for Ssd1306Model {
    fn start(&mut self, read: bool, _ctx: &Ctx) {
        if !read {
            self.expect = Expect::Control;
        }
    }

    fn write(&mut self, byte: u8, _ctx: &Ctx) {
        match self.expect {
            Expect::Control => {
                let data = byte & Self::CONTROL_DATA != 0;
                self.expect = if byte & Self::CONTROL_CONTINUATION != 0 {
                    Expect::Single { data }
                } else {
                    Expect::Stream { data }
                };
            }
            Expect::Single { data } => {
                if data {
                    self.data_byte(byte)
                } else {
                    self.command_byte(byte)
                }
                self.expect = Expect::Control;
            }
            Expect::Stream { data: true } => self.data_byte(byte),
            Expect::Stream { data: false } => self.command_byte(byte),
        }
    }

    /// The status byte: bit 6 set while the display is off.
    fn read(&mut self, _ctx: &Ctx) -> u8 {
        if self.display_on {
            0x00
        } else {
            0x40
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::env::Environment;
    use std::time::Instant;

    fn send(m: &mut Ssd1306Model, bytes: &[u8]) {
        let ctx = Ctx {
            now: Instant::now(),
            env: Environment::drifting(0.0),
        };
        m.start(false, &ctx);
        bytes.iter().for_each(|b| m.write(*b, &ctx));
    }

    #[test]
    fn horizontal_mode_wraps_within_the_column_and_page_window() {
        let mut m = Ssd1306Model::new();
        send(
            &mut m,
            &[0x00, 0xA1, 0xC8, 0x20, 0x00, 0x21, 10, 11, 0x22, 2, 3],
        );
        send(&mut m, &[0x40, 1, 2, 3, 4]);
        assert_eq!(m.gddram[2][10..12], [1, 2]);
        assert_eq!(m.gddram[3][10..12], [3, 4]);
        assert_eq!(m.gddram[2][9], 0);
        // wrapped back to the window's first column and page
        send(&mut m, &[0x40, 9]);
        assert_eq!(m.gddram[2][10..12], [9, 2]);
        assert!(m.pixel(10, 16));
        assert!(!m.pixel(10, 17));
    }

    #[test]
    fn arguments_split_across_writes_still_belong_to_their_command() {
        let mut m = Ssd1306Model::new();
        send(&mut m, &[0x00, 0x81]);
        send(&mut m, &[0x00, 0x20]);
        assert_eq!(m.contrast, 0x20);
        send(&mut m, &[0x80, 0xAF, 0x00, 0xD5, 0x80, 0xA7]);
        assert_eq!(
            m.status(),
            OledStatus {
                display_on: true,
                contrast: 0x20,
                inverted: true
            }
        );
    }

    #[test]
    fn page_mode_sets_the_column_from_two_nibbles() {
        let mut m = Ssd1306Model::new();
        send(&mut m, &[0x00, 0xB5, 0x03, 0x12]);
        send(&mut m, &[0x40, 0xFF]);
        assert_eq!(m.gddram[5][0x23], 0xFF);
    }
}
