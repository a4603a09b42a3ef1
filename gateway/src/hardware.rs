//! The board, as the gateway sees it: its definition (loaded at start-up, cheap), the board
//! policy (a `Policy` in the one pipeline), and the hardware itself (opened on first use).

use crate::error::ToolError;
use crate::runtime::{Policy, Refusal};
use crate::spec::ToolSpec;
use covo_hal_tools::board::{BoardDef, BoardError};
use covo_hal_tools::hw::{Hardware, HwError};
use covo_hal_tools::policy::BoardPolicy;
use covo_hal_tools::values::{self, PinRef};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, OnceLock};

/// A board definition with its policy, and its hardware once opened.
pub struct Board {
    def: BoardDef,
    policy: BoardPolicy,
    hw: OnceLock<Result<Arc<Hardware>, String>>,
}

impl Board {
    /// The board named in config: a path to a TOML file, or `sim` (the default).
    pub fn load(spec: Option<&str>) -> Result<Board, BoardError> {
        let def = match spec {
            None | Some("sim") => BoardDef::sim(),
            Some(path) => BoardDef::load(Path::new(path))?,
        };
        Ok(Self::from_def(def))
    }

    /// A board from a parsed definition.
    pub fn from_def(def: BoardDef) -> Board {
        Board {
            policy: BoardPolicy::new(&def),
            def,
            hw: OnceLock::new(),
        }
    }

    /// A board whose hardware is already open (tests that script the sim).
    pub fn with_hardware(hw: Hardware) -> Board {
        let b = Self::from_def(hw.def().clone());
        let _ = b.hw.set(Ok(Arc::new(hw)));
        b
    }

    /// The definition.
    pub fn def(&self) -> &BoardDef {
        &self.def
    }

    /// The policy.
    pub fn policy(&self) -> &BoardPolicy {
        &self.policy
    }

    /// The hardware, opened on first use. An open failure is remembered and reported each time.
    pub fn hardware(&self) -> Result<Arc<Hardware>, String> {
        self.hw
            .get_or_init(|| {
                Hardware::open(self.def.clone())
                    .map(Arc::new)
                    .map_err(|e| e.to_string())
            })
            .clone()
    }

    /// Why a hardware toolset cannot work on this board, if it cannot.
    pub fn missing(&self, toolset: &str) -> Option<String> {
        let d = &self.def;
        let has_driver = |f: &dyn Fn(&str) -> bool| d.device.iter().any(|x| f(&x.driver));
        match toolset {
            "i2c" if d.i2c.is_empty() => Some("this board declares no I2C bus".into()),
            "spi" if d.spi.is_empty() => Some("this board declares no SPI bus".into()),
            "serial" if d.serial.is_empty() => Some("this board declares no serial port".into()),
            "display" if !has_driver(&|x| x == "ssd1306") => {
                Some("this board declares no display".into())
            }
            "sensors" if !has_driver(&|x| !covo_hal_tools::sensors::quantities(x).is_empty()) => {
                Some("this board declares no sensor".into())
            }
            _ => None,
        }
    }
}

/// Maps a hardware error to what the model sees.
pub fn tool_error(tool: &str, e: HwError) -> ToolError {
    match e {
        HwError::NotFound(m) => ToolError::Failed {
            tool: tool.into(),
            message: m,
            hint: Some("board_info and device_list show what this board has".into()),
        },
        HwError::Bus(b) => ToolError::Failed {
            tool: tool.into(),
            message: b.to_string(),
            hint: Some(match b {
                covo_hal_tools::bus::BusError::Nack(_) => {
                    "check the address with i2c_scan, and the wiring and power".into()
                }
                _ => "the bus may recover; retry once, then check the wiring".into(),
            }),
        },
        other => ToolError::failed(tool, other.to_string()),
    }
}

/// The board policy as a pipeline `Policy`: every hardware tool's arguments are checked here,
/// whichever path the call came by.
pub struct BoardPolicyCheck {
    /// The board.
    pub board: Arc<Board>,
}

fn refusal(r: covo_hal_tools::policy::Refusal) -> Refusal {
    Refusal {
        rule: r.rule.to_string(),
        detail: r.detail,
    }
}

impl BoardPolicyCheck {
    fn bus(&self, args: &Value) -> Option<u8> {
        match args.get("bus") {
            Some(v) => values::bounded("bus", v, 255).ok().map(|b| b as u8),
            None => self.board.def.default_i2c_bus(),
        }
    }

    fn pin(&self, v: Option<&Value>) -> Option<u32> {
        let p = values::pin("pin", v?).ok()?;
        match p {
            PinRef::Number(n) => Some(n),
            PinRef::Name(name) => self.board.def.device(&name)?.pin,
        }
    }

    fn channel(&self, v: Option<&Value>) -> Option<u32> {
        match values::pin("channel", v?).ok()? {
            PinRef::Number(n) => Some(n),
            PinRef::Name(name) => self.board.def.device(&name)?.channel,
        }
    }

    /// The MCU a call names, or the board's only one.
    fn mcu_device(&self, args: &Value) -> Option<String> {
        if let Some(d) = args.get("device").and_then(Value::as_str) {
            return Some(d.to_string());
        }
        let mut mcus = self.board.def.device.iter().filter(|d| d.driver == "mcu");
        match (mcus.next(), mcus.next()) {
            (Some(one), None) => Some(one.name.clone()),
            _ => None,
        }
    }

    fn len(args: &Value, key: &str) -> usize {
        args.get(key)
            .and_then(|v| values::bytes(key, v).ok())
            .map_or(0, |b| b.len())
    }
}

impl Policy for BoardPolicyCheck {
    fn check(&self, spec: &ToolSpec, args: &Value) -> Result<(), Refusal> {
        // Arguments that do not parse are left to the executor, which uses the same parsers and
        // refuses them as invalid; nothing runs on an interpretation the policy did not see.
        let p = &self.board.policy;
        let address = args
            .get("address")
            .and_then(|v| values::address("address", v).ok());
        let count = args.get("count").and_then(Value::as_u64).unwrap_or(0) as usize;
        let r = match spec.name {
            "i2c_read" | "i2c_write_read" | "i2c_read_register" => address
                .map_or(Ok(()), |a| p.check_address(a))
                .and_then(|_| p.check_transfer(count.max(Self::len(args, "data")))),
            "i2c_write" => match (self.bus(args), address) {
                (Some(b), Some(a)) => p
                    .check_i2c_write(b, a)
                    .and_then(|_| p.check_transfer(Self::len(args, "data"))),
                _ => Ok(()),
            },
            "spi_transfer" | "spi_write" => p
                .check_writable()
                .and_then(|_| p.check_transfer(Self::len(args, "data"))),
            "gpio_write" => self
                .pin(args.get("pin"))
                .map_or(Ok(()), |pin| p.check_output(pin)),
            "pwm_set" => match self.channel(args.get("channel")) {
                Some(ch) => {
                    let duty = args.get("duty").and_then(Value::as_f64).unwrap_or(-1.0);
                    let freq = args
                        .get("frequency_hz")
                        .and_then(Value::as_f64)
                        .unwrap_or(crate::tools::gpio::DEFAULT_PWM_HZ);
                    p.check_pwm(ch, freq, duty)
                }
                None => Ok(()),
            },
            "serial_write" | "serial_request" => {
                args.get("port")
                    .and_then(Value::as_str)
                    .map_or(Ok(()), |port| {
                        // Checked by declared name, whether the call named the port or its path.
                        let name = self
                            .board
                            .def
                            .serial
                            .iter()
                            .find(|s| s.name == port || s.path.as_deref() == Some(port))
                            .map_or(port, |s| s.name.as_str());
                        p.check_serial_write(name)
                    })
            }
            "display_text" | "display_clear" => {
                let name = args
                    .get("display")
                    .and_then(Value::as_str)
                    .map(str::to_string)
                    .or_else(|| {
                        self.board
                            .def
                            .device
                            .iter()
                            .find(|d| d.driver == "ssd1306")
                            .map(|d| d.name.clone())
                    });
                match name.and_then(|n| self.board.def.device(&n).cloned()) {
                    Some(d) => match (d.bus.or(self.board.def.default_i2c_bus()), d.address) {
                        (Some(b), Some(a)) => p.check_i2c_write(b, a),
                        _ => Ok(()),
                    },
                    None => Ok(()),
                }
            }
            "mcu_gpio_write" | "mcu_pwm_set" | "mcu_i2c_transfer" => match self.mcu_device(args) {
                None => Ok(()),
                Some(dev) => {
                    let pin = args
                        .get("pin")
                        .and_then(Value::as_u64)
                        .map(|p| p.min(255) as u8);
                    match spec.name {
                        "mcu_gpio_write" => pin.map_or(Ok(()), |pin| p.check_mcu_output(&dev, pin)),
                        "mcu_pwm_set" => pin.map_or(Ok(()), |pin| {
                            let duty = args.get("duty").and_then(Value::as_f64).unwrap_or(-1.0);
                            let freq = args
                                .get("frequency_hz")
                                .and_then(Value::as_f64)
                                .unwrap_or(crate::tools::gpio::DEFAULT_PWM_HZ);
                            p.check_mcu_pwm(&dev, pin, freq, duty)
                        }),
                        _ => address.map_or(Ok(()), |a| {
                            p.check_mcu_i2c(&dev, a, Self::len(args, "data") > 0)
                                .and_then(|_| p.check_transfer(count.max(Self::len(args, "data"))))
                        }),
                    }
                }
            },
            _ => Ok(()),
        };
        r.map_err(refusal)
    }
}

/// The board's hardware for an executor, or the error the model sees.
pub fn hw(cx: &crate::exec::Cx<'_>) -> Result<Arc<Hardware>, crate::error::CallError> {
    cx.runtime()
        .board()
        .hardware()
        .map_err(|e| cx.fail(format!("the board is unavailable: {e}")))
}

/// A hardware error as a call error for this executor.
pub fn fail(cx: &crate::exec::Cx<'_>, e: HwError) -> crate::error::CallError {
    tool_error(cx.tool.name, e).into()
}

/// A value-parsing error as an invalid-arguments error for this executor.
pub fn invalid(cx: &crate::exec::Cx<'_>, e: values::ValueError) -> crate::error::CallError {
    ToolError::invalid(cx.tool.name, &e.field, e.problem).into()
}

/// Argument `key` parsed with `f`, if present.
pub fn opt<T>(
    cx: &crate::exec::Cx<'_>,
    args: &Value,
    key: &str,
    f: impl Fn(&str, &Value) -> Result<T, values::ValueError>,
) -> Result<Option<T>, crate::error::CallError> {
    args.get(key)
        .map(|v| f(key, v))
        .transpose()
        .map_err(|e| invalid(cx, e))
}

/// Required argument `key` parsed with `f`.
pub fn req<T>(
    cx: &crate::exec::Cx<'_>,
    args: &Value,
    key: &str,
    f: impl Fn(&str, &Value) -> Result<T, values::ValueError>,
) -> Result<T, crate::error::CallError> {
    opt(cx, args, key, f)?
        .ok_or_else(|| ToolError::invalid(cx.tool.name, &format!("/{key}"), "is required").into())
}
