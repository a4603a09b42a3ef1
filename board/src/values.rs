//! How tool arguments name hardware, and how bytes are shown back.
//!
//! Addresses and registers are integers or hex strings (`118`, `"0x76"`, `"76h"`); byte strings
//! are arrays of those, or one hex string (`"d0 01"`, `"0xd001"`); pins are BCM numbers or the
//! names a board declares.

use serde_json::{json, Value};

/// A bad argument: which one, and what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {problem}")]
pub struct ValueError {
    /// The argument, as a JSON pointer (`/address`).
    pub field: String,
    /// What was wrong and what was expected.
    pub problem: String,
}

fn bad(field: &str, problem: impl Into<String>) -> ValueError {
    ValueError {
        field: format!("/{field}"),
        problem: problem.into(),
    }
}

/// Parses one number: a JSON integer, or a string in decimal, `0x..`, `0b..` or `..h` form.
pub fn number(field: &str, v: &Value) -> Result<u64, ValueError> {
    match v {
        Value::Number(n) => n
            .as_u64()
            .ok_or_else(|| bad(field, format!("{n} is not a non-negative integer"))),
        Value::String(s) => parse_number(s).ok_or_else(|| {
            bad(
                field,
                format!("'{s}' is not a number; use 118, \"0x76\" or \"0b1110110\""),
            )
        }),
        other => Err(bad(
            field,
            format!("expected an integer or a hex string, got {other}"),
        )),
    }
}

fn parse_number(s: &str) -> Option<u64> {
    let t = s.trim().to_ascii_lowercase().replace('_', "");
    if let Some(h) = t.strip_prefix("0x") {
        u64::from_str_radix(h, 16).ok()
    } else if let Some(b) = t.strip_prefix("0b") {
        u64::from_str_radix(b, 2).ok()
    } else if let Some(h) = t.strip_suffix('h') {
        u64::from_str_radix(h, 16).ok()
    } else {
        t.parse().ok()
    }
}

/// A 7-bit I2C address.
pub fn address(field: &str, v: &Value) -> Result<u8, ValueError> {
    let n = number(field, v)?;
    if n > 0x7f {
        return Err(bad(
            field,
            format!("0x{n:x} is not a 7-bit address (0x00–0x7f)"),
        ));
    }
    Ok(n as u8)
}

/// A number that must fit in `max`.
pub fn bounded(field: &str, v: &Value, max: u64) -> Result<u64, ValueError> {
    let n = number(field, v)?;
    if n > max {
        return Err(bad(field, format!("{n} is larger than {max}")));
    }
    Ok(n)
}

/// Bytes: an array of integers or hex strings, or one hex string (spaces, commas and a `0x`
/// prefix allowed).
pub fn bytes(field: &str, v: &Value) -> Result<Vec<u8>, ValueError> {
    match v {
        Value::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, x)| {
                let n = number(&format!("{field}/{i}"), x)?;
                u8::try_from(n).map_err(|_| {
                    bad(
                        &format!("{field}/{i}"),
                        format!("{n} is not a byte (0–255)"),
                    )
                })
            })
            .collect(),
        Value::String(s) => {
            let cleaned: String = s
                .split(|c: char| c.is_whitespace() || c == ',' || c == ':')
                .map(|p| p.trim_start_matches("0x").trim_start_matches("0X"))
                .collect();
            if !cleaned.len().is_multiple_of(2) || !cleaned.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(bad(
                    field,
                    format!("'{s}' is not hex bytes; use \"d0 01\" or [208, 1]"),
                ));
            }
            (0..cleaned.len())
                .step_by(2)
                .map(|i| {
                    u8::from_str_radix(&cleaned[i..i + 2], 16)
                        .map_err(|e| bad(field, e.to_string()))
                })
                .collect()
        }
        other => Err(bad(
            field,
            format!("expected bytes as [208, \"0x01\"] or \"d0 01\", got {other}"),
        )),
    }
}

/// A pin: a BCM number, or a name the caller resolves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PinRef {
    /// A BCM (line) number.
    Number(u32),
    /// A declared name such as `relay`.
    Name(String),
}

/// Parses a pin argument.
pub fn pin(field: &str, v: &Value) -> Result<PinRef, ValueError> {
    match v {
        Value::Number(_) => Ok(PinRef::Number(bounded(field, v, u32::MAX as u64)? as u32)),
        Value::String(s) => match s.trim().parse::<u32>() {
            Ok(n) => Ok(PinRef::Number(n)),
            Err(_) if !s.trim().is_empty() => Ok(PinRef::Name(s.trim().to_string())),
            Err(_) => Err(bad(field, "empty pin name")),
        },
        other => Err(bad(
            field,
            format!("expected a BCM number or a declared name, got {other}"),
        )),
    }
}

/// Bytes as the tools show them: a hex string and the integers.
pub fn show_bytes(b: &[u8]) -> Value {
    json!({
        "hex": b.iter().map(|x| format!("{x:02x}")).collect::<Vec<_>>().join(" "),
        "bytes": b,
    })
}

/// An address as shown: `0x76`.
pub fn show_address(a: u8) -> String {
    format!("0x{a:02x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_accept_integers_and_hex_strings_and_reject_ten_bit_values() {
        assert_eq!(address("address", &json!(118)).unwrap(), 0x76);
        assert_eq!(address("address", &json!("0x76")).unwrap(), 0x76);
        assert_eq!(address("address", &json!("76h")).unwrap(), 0x76);
        let e = address("address", &json!("0x176")).unwrap_err();
        assert_eq!(e.field, "/address");
        assert!(e.problem.contains("7-bit"));
        assert!(address("address", &json!("nope")).is_err());
        assert!(address("address", &json!(-1)).is_err());
    }

    #[test]
    fn bytes_accept_arrays_and_hex_strings() {
        assert_eq!(
            bytes("data", &json!([208, "0x01", "ff"]))
                .unwrap_err()
                .field,
            "/data/2"
        );
        assert_eq!(
            bytes("data", &json!([208, "0x01"])).unwrap(),
            vec![0xd0, 0x01]
        );
        assert_eq!(bytes("data", &json!("d0 01")).unwrap(), vec![0xd0, 0x01]);
        assert_eq!(bytes("data", &json!("0xd001")).unwrap(), vec![0xd0, 0x01]);
        assert_eq!(
            bytes("data", &json!("0xd0, 0x01")).unwrap(),
            vec![0xd0, 0x01]
        );
        assert!(bytes("data", &json!("d0 1")).is_err());
        assert!(bytes("data", &json!([256])).is_err());
        assert_eq!(show_bytes(&[0xd0, 1])["hex"], "d0 01");
    }

    #[test]
    fn pins_are_numbers_or_names() {
        assert_eq!(pin("pin", &json!(17)).unwrap(), PinRef::Number(17));
        assert_eq!(pin("pin", &json!("17")).unwrap(), PinRef::Number(17));
        assert_eq!(
            pin("pin", &json!("relay")).unwrap(),
            PinRef::Name("relay".into())
        );
        assert!(pin("pin", &json!(true)).is_err());
    }
}
