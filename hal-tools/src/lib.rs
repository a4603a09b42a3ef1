//! Hardware tools for covo, generic over embedded-hal 1.0 traits.
//!
//! # Layout
//! - `values`, `board`, `driver`, `resolve`, `policy`: the board definitions without the HAL
//!   (argument values, the board-file loader, the driver table, name resolution, the board
//!   policy), from the `covo-board` crate and re-exported here under their old paths.
//! - `bus`: the object-safe bus and line traits every backend provides, and their errors.
//! - `sim`: the simulated board, modelled at register level behind the same traits.
//! - `sensors`: reading sensors through their crates.io drivers (bme280, bmp280, bh1750,
//!   sht4x, sht3x, aht20, scd4x, ads1115).
//! - `display`: text on an SSD1306 OLED through the `ssd1306` crate.
//! - `backend`: concrete HALs (Linux kernel interfaces). No concrete HAL type is named outside it.
//!
//! # Testing against a real kernel
//! The sim tests cannot show how i2c-dev, the GPIO character device, spidev and sysfs PWM really
//! behave. `tests/kernel/` (the repository's kernel suite, run by `tests/run-all.sh`) boots
//! Debian's 6.1 kernel in QEMU with small out-of-tree modules (an I2C adapter with register-file
//! chips, `i2c-stub` for SMBus-only, gpio-sim, a GPIO chip without interrupts, an SPI loopback
//! controller under spidev, a PWM chip) and a static `covo`, with the MCU firmware in a second
//! QEMU on the guest's serial port, and compares every tool's answer with what the kernel and
//! the modules' debugfs counters show. `tests/kernel/run.sh --check
//! GROUP covo` runs one group; `--shell` gives a shell in the guest to run one call by hand
//! (`tests/kernel/README.md`).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod backend;
pub mod bus;
pub mod display;
pub mod hw;
pub mod mcu;
pub mod sensors;
pub mod sim;

pub use covo_board::{board, driver, policy, resolve, values};
