//! The firmware stamp: a few bytes every covo firmware image carries, so the gateway can tell
//! from the file alone, before it flashes anything, which contract the firmware speaks.
//!
//! ```text
//! | "covoFWid" (8) | PROTOCOL_VERSION (1) | SCHEMA_HASH (8, little-endian) | name length (1) | name (16, zero padded) |
//! ```
//!
//! A firmware defines it as a `static` built by [`stamp`] and reads its own name from it with
//! [`stamped_name`], so the linker keeps it and the name the device reports is the name in the
//! image. The gateway finds it with [`find_stamp`] in the image's bytes (a UF2's payload, an
//! ELF or a raw binary: the stamp lies in flash as it is).

use crate::{NAME_LEN, PROTOCOL_VERSION, SCHEMA_HASH};

/// The first bytes of a stamp.
pub const STAMP_MAGIC: [u8; 8] = *b"covoFWid";

/// Bytes in a stamp.
pub const STAMP_LEN: usize = 8 + 1 + 8 + 1 + NAME_LEN;

/// What a stamp says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp<'a> {
    /// The firmware's [`PROTOCOL_VERSION`].
    pub version: u8,
    /// The firmware's [`SCHEMA_HASH`].
    pub schema_hash: u64,
    /// The firmware's name and version, as [`crate::DeviceInfo::firmware`] reports it.
    pub firmware: &'a str,
}

impl Stamp<'_> {
    /// Whether a host built from this crate can speak to the stamped firmware.
    pub fn compatible(&self) -> bool {
        self.version == PROTOCOL_VERSION && self.schema_hash == SCHEMA_HASH
    }
}

/// The stamp of a firmware named `firmware` (at most [`NAME_LEN`] bytes; longer does not
/// compile where it is used in a `static`), built from this crate's version and schema hash.
pub const fn stamp(firmware: &str) -> [u8; STAMP_LEN] {
    let name = firmware.as_bytes();
    assert!(
        name.len() <= NAME_LEN,
        "a firmware name has at most NAME_LEN bytes"
    );
    let mut out = [0u8; STAMP_LEN];
    let mut i = 0;
    while i < 8 {
        out[i] = STAMP_MAGIC[i];
        i += 1;
    }
    out[8] = PROTOCOL_VERSION;
    let hash = SCHEMA_HASH.to_le_bytes();
    i = 0;
    while i < 8 {
        out[9 + i] = hash[i];
        i += 1;
    }
    out[17] = name.len() as u8;
    i = 0;
    while i < name.len() {
        out[18 + i] = name[i];
        i += 1;
    }
    out
}

/// Reads one stamp; `None` when the bytes are not a well-formed stamp.
fn parse(bytes: &[u8]) -> Option<Stamp<'_>> {
    if bytes.len() < STAMP_LEN || bytes[..8] != STAMP_MAGIC {
        return None;
    }
    let len = bytes[17] as usize;
    if len > NAME_LEN || bytes[18 + len..STAMP_LEN].iter().any(|&b| b != 0) {
        return None;
    }
    let mut hash = [0u8; 8];
    hash.copy_from_slice(&bytes[9..17]);
    Some(Stamp {
        version: bytes[8],
        schema_hash: u64::from_le_bytes(hash),
        firmware: core::str::from_utf8(&bytes[18..18 + len]).ok()?,
    })
}

/// The first well-formed stamp in a firmware image's bytes.
pub fn find_stamp(image: &[u8]) -> Option<Stamp<'_>> {
    let mut from = 0;
    while from + STAMP_LEN <= image.len() {
        let at = image[from..].windows(8).position(|w| w == STAMP_MAGIC)? + from;
        if let Some(s) = image.get(at..).and_then(parse) {
            return Some(s);
        }
        from = at + 1;
    }
    None
}

/// The name in a firmware's own stamp. The stamp is read through [`core::hint::black_box`], so
/// the linker keeps it in the image and the name reported is the one stored there.
pub fn stamped_name(stamp: &'static [u8; STAMP_LEN]) -> &'static str {
    let stamp: &'static [u8; STAMP_LEN] = core::hint::black_box(stamp);
    parse(stamp).map_or("covo", |s| s.firmware)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stamp_is_found_anywhere_in_an_image_and_read_back() {
        let s = stamp("covo 1.2.3");
        let mut image = [0xffu8; 300];
        // A false start of the magic first, then the real stamp at an odd offset.
        image[10..18].copy_from_slice(&STAMP_MAGIC);
        image[101..101 + STAMP_LEN].copy_from_slice(&s);
        let found = find_stamp(&image).unwrap();
        assert_eq!(found.firmware, "covo 1.2.3");
        assert_eq!(found.version, PROTOCOL_VERSION);
        assert_eq!(found.schema_hash, SCHEMA_HASH);
        assert!(found.compatible());
    }

    #[test]
    fn another_hash_is_read_as_incompatible_and_garbage_is_no_stamp() {
        let mut s = stamp("covo 9");
        s[9] ^= 1;
        assert!(!find_stamp(&s).unwrap().compatible());
        let mut bad_len = stamp("covo 9");
        bad_len[17] = 17;
        assert_eq!(find_stamp(&bad_len), None);
        let mut trailing = stamp("covo 9");
        trailing[STAMP_LEN - 1] = b'x';
        assert_eq!(find_stamp(&trailing), None);
        assert_eq!(find_stamp(&STAMP_MAGIC), None);
        assert_eq!(find_stamp(&[]), None);
    }

    #[test]
    fn a_full_length_name_fits() {
        let s = stamp("covo-sim 0.10.20");
        assert_eq!(find_stamp(&s).unwrap().firmware, "covo-sim 0.10.20");
    }
}
