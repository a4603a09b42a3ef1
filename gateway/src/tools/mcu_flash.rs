//! `mcu_flash`: writes a firmware image from `$COVO_HOME/firmware/` to an attached
//! microcontroller, then reconnects and reports the version it runs.
//!
//! Everything about the image is checked before anything happens to the device: the file is a
//! plain name in the firmware folder, at most [`MAX_IMAGE`] bytes, and carries a covo firmware
//! stamp (`covo_mcu_protocol::stamp`) of this gateway's protocol version and schema hash, so
//! the device will answer again afterwards. A UF2 must also be one the RP2040 boot ROM takes:
//! well-formed blocks in order, every block of the RP2040 family, 256 bytes each at a 256-byte
//! aligned address in flash.
//!
//! How the image reaches the device is the board file's `flash` on the device:
//! - `uf2`: a `Bootloader` request over the covo link (sent once, never retried), then the
//!   `RPI-RP2` drive is awaited (the configured `drive`, else the first under `/media/*` or
//!   `/run/media/*`; a Pico already held in BOOTSEL is used as it is) and the UF2 written to it
//!   and synced. The boot ROM reboots into the image once the last block is in.
//! - `probe-rs`: `probe-rs download --chip CHIP IMAGE`, then `probe-rs reset --chip CHIP`.
//! - `command`: the configured program, `{image}` and `{port}` substituted in its arguments.
//!
//! Every wait is bounded ([`DRIVE_WAIT`], [`RECONNECT_WAIT`], [`TOOL_WAIT`]). The tool is
//! `destructive`: the pipeline asks for approval before it runs, and a read-only board policy
//! refuses it (`Access::McuFlash`).

use super::command::Cmd;
use super::hwargs;
use crate::error::{CallError, ToolError};
use crate::exec::Cx;
use crate::hardware::Access;
use crate::spec::{Parse, ToolArgs};
use covo_board::board::FlashMethod;
use covo_hal_tools::hw::FlashTarget;
use covo_hal_tools::mcu::McuError;
use covo_mcu_protocol::{find_stamp, DeviceError, RequestBody, ResponseBody, SCHEMA_HASH};
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The largest image read: a UF2 of the RP2040's largest flash (16 MiB) is 32 MiB.
pub const MAX_IMAGE: u64 = 32 << 20;
/// How long the BOOTSEL drive may take to appear after the bootloader request.
pub const DRIVE_WAIT: Duration = Duration::from_secs(15);
/// How long the device may take to answer a handshake after the image is written.
pub const RECONNECT_WAIT: Duration = Duration::from_secs(20);
/// How long `probe-rs` or a configured command may run.
pub const TOOL_WAIT: Duration = Duration::from_secs(180);
/// The folder under `$COVO_HOME` images are read from.
pub const FIRMWARE_DIR: &str = "firmware";

/// The RP2040's UF2 family id.
const RP2040_FAMILY: u32 = 0xe48b_ff56;
/// The RP2040's XIP flash: where a UF2's blocks may land.
const FLASH_START: u32 = 0x1000_0000;
const FLASH_END: u32 = 0x1100_0000;
/// The file written to the BOOTSEL drive.
const DRIVE_FILE: &str = "covo.uf2";

/// `mcu_flash`'s arguments: which microcontroller, and the image's file name.
pub struct Flash {
    device: String,
    image: String,
}

impl ToolArgs for Flash {
    fn parse(p: &Parse<'_>) -> Result<Self, ToolError> {
        let device = super::mcu::device(p)?;
        let image = p.str("image")?.ok_or_else(|| p.missing("image"))?;
        let plain = !image.is_empty()
            && image.len() <= 128
            && !image.starts_with('.')
            && !image.contains(['/', '\\', '\0']);
        if !plain {
            return Err(p.invalid(
                "image",
                format!(
                    "a file name in $COVO_HOME/{FIRMWARE_DIR}/ (no folders), e.g. covo-0.2.0.uf2"
                ),
            ));
        }
        Ok(Flash { device, image })
    }

    /// It rewrites the device's flash.
    fn access(&self) -> Vec<Access> {
        vec![Access::McuFlash {
            device: self.device.clone(),
        }]
    }
}

/// What the checks found in an image.
struct Checked {
    /// The name in its stamp: what the device should report afterwards.
    firmware: String,
    /// UF2 blocks (0 for other formats).
    blocks: usize,
}

/// Checks an image for `method`; the error says what is wrong with it.
fn check_image(method: FlashMethod, name: &str, bytes: &[u8]) -> Result<Checked, String> {
    let is_uf2 = name.to_ascii_lowercase().ends_with(".uf2");
    let (flash_bytes, blocks) =
        match method {
            FlashMethod::Uf2 if !is_uf2 => return Err(
                "the uf2 method writes .uf2 files (elf2uf2-rs or picotool make one from an ELF)"
                    .into(),
            ),
            FlashMethod::Uf2 => {
                let (image, blocks) = rp2040_uf2(bytes)?;
                (image, blocks)
            }
            FlashMethod::ProbeRs if is_uf2 => {
                return Err("probe-rs loads an ELF (or .bin/.hex), not a UF2".into())
            }
            _ => (bytes.to_vec(), 0),
        };
    let stamp = find_stamp(&flash_bytes).ok_or(
        "it carries no covo firmware stamp: it is not a covo firmware, and the gateway could not \
         talk to the device after flashing it",
    )?;
    if !stamp.compatible() {
        return Err(format!(
            "it is '{}', built for covo protocol {} (schema {:#018x}); this gateway speaks \
             protocol {} (schema {SCHEMA_HASH:#018x}): flash the firmware of this gateway's version",
            stamp.firmware,
            stamp.version,
            stamp.schema_hash,
            covo_mcu_protocol::PROTOCOL_VERSION
        ));
    }
    Ok(Checked {
        firmware: stamp.firmware.to_string(),
        blocks,
    })
}

/// The flash contents of a UF2 the RP2040 boot ROM would take, and its block count.
fn rp2040_uf2(bytes: &[u8]) -> Result<(Vec<u8>, usize), String> {
    let file = uftwo::reader::from_bytes(bytes).map_err(|e| format!("not a UF2 file: {e}"))?;
    uftwo::reader::verify(&file).map_err(|e| format!("a damaged UF2 file: {e}"))?;
    let blocks = file.blocks();
    if blocks.is_empty() {
        return Err("an empty UF2 file".into());
    }
    let mut image = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        match b.board_family_id() {
            Some(RP2040_FAMILY) => {}
            Some(other) => {
                return Err(format!(
                    "block {i} is for UF2 family {other:#010x}, not the RP2040 ({RP2040_FAMILY:#010x}): \
                     an image for another chip"
                ))
            }
            None => {
                return Err(format!(
                    "block {i} names no UF2 family; the RP2040 boot ROM ignores such blocks"
                ))
            }
        }
        let addr = b.target_addr;
        if b.data_len != 256 || addr % 256 != 0 || !(FLASH_START..FLASH_END).contains(&addr) {
            return Err(format!(
                "block {i} writes {} bytes at {addr:#010x}; the RP2040 takes 256-byte blocks at \
                 256-byte aligned addresses in flash ({FLASH_START:#010x}..{FLASH_END:#010x})",
                b.data_len
            ));
        }
        let at = (addr - FLASH_START) as usize;
        if image.len() < at + 256 {
            image.resize(at + 256, 0xff);
        }
        image[at..at + 256].copy_from_slice(b.data());
    }
    Ok((image, blocks.len()))
}

/// The `RPI-RP2` drive: the configured one, or the first under `/media/*` or `/run/media/*`.
fn find_drive(configured: Option<&Path>) -> Option<PathBuf> {
    let mounted = |d: &Path| d.join("INFO_UF2.TXT").is_file();
    if let Some(d) = configured {
        return mounted(d).then(|| d.to_path_buf());
    }
    for root in ["/media", "/run/media"] {
        let Ok(users) = std::fs::read_dir(root) else {
            continue;
        };
        for user in users.flatten().take(64) {
            let d = user.path().join("RPI-RP2");
            if mounted(&d) {
                return Some(d);
            }
        }
    }
    None
}

/// Waits for the drive, at most [`DRIVE_WAIT`].
fn wait_for_drive(configured: Option<&Path>) -> Option<PathBuf> {
    let deadline = Instant::now() + DRIVE_WAIT;
    loop {
        if let Some(d) = find_drive(configured) {
            return Some(d);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Writes the UF2 to the drive and syncs it. The boot ROM may reboot (and the drive vanish)
/// as the last block lands, so a failed sync after a complete write is not an error.
fn write_uf2(drive: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::File::create(drive.join(DRIVE_FILE))?;
    f.write_all(bytes)?;
    if let Err(e) = f.sync_all() {
        tracing::debug!(error = %e, "sync after the last UF2 block (the drive may be gone)");
    }
    Ok(())
}

pub(crate) fn mcu_flash(cx: &Cx<'_>, args: Flash) -> Result<Value, CallError> {
    let started = Instant::now();
    let hw = hwargs::hw(cx)?;
    let target = hw
        .mcu_flash_target(&args.device)
        .map_err(|e| hwargs::fail(cx, e))?;
    let method = target.flash.method;
    let path = cx.home().join(FIRMWARE_DIR).join(&args.image);
    let bad_image = |problem: String| -> CallError {
        ToolError::invalid(cx.tool.name, "image", format!("{}: {problem}", args.image)).into()
    };
    let meta = std::fs::metadata(&path).map_err(|_| {
        bad_image(format!(
            "no such file in {} (copy the image there first)",
            cx.home().join(FIRMWARE_DIR).display()
        ))
    })?;
    if !meta.is_file() || meta.len() > MAX_IMAGE {
        return Err(bad_image(format!(
            "not a file of at most {} MiB",
            MAX_IMAGE >> 20
        )));
    }
    let bytes = std::fs::read(&path).map_err(|e| bad_image(format!("cannot read it: {e}")))?;
    let checked = check_image(method, &args.image, &bytes).map_err(bad_image)?;
    let before = hw
        .mcu_status(&args.device)
        .and_then(|(info, _)| info)
        .map(|i| i.firmware.as_str().to_string());

    match method {
        FlashMethod::Uf2 => flash_uf2(cx, &hw, &args.device, &target, &bytes)?,
        FlashMethod::ProbeRs => {
            if super::command::find_program("probe-rs").is_none() {
                return Err(ToolError::Failed {
                    tool: cx.tool.name.into(),
                    message: "probe-rs is not installed on this gateway".into(),
                    hint: Some(
                        "cargo install probe-rs-tools (then plug in the debug probe)".into(),
                    ),
                }
                .into());
            }
            hw.mcu_forget(&args.device);
            let chip = target.flash.chip.clone().unwrap_or_default();
            let image = path.to_string_lossy().into_owned();
            Cmd::new("probe-rs", TOOL_WAIT).run(cx, &["download", "--chip", &chip, &image])?;
            Cmd::new("probe-rs", TOOL_WAIT).run(cx, &["reset", "--chip", &chip])?;
        }
        FlashMethod::Command => {
            hw.mcu_forget(&args.device);
            let argv = command_line(&target, &path);
            let (program, rest) = argv.split_first().ok_or_else(|| cx.fail("empty command"))?;
            let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
            Cmd::new(program.clone(), TOOL_WAIT).run(cx, &rest)?;
        }
    }

    let info = reconnect(&hw, &args.device).map_err(|e| {
        CallError::from(ToolError::Failed {
            tool: cx.tool.name.into(),
            message: format!(
                "the image was written, but '{}' did not answer within {} s: {e}",
                args.device,
                RECONNECT_WAIT.as_secs()
            ),
            hint: Some(
                "check the cable; mcu_list shows the link, and a Pico can be put back in \
                 BOOTSEL by holding its button while plugging it in"
                    .into(),
            ),
        })
    })?;
    let running = info.firmware.as_str().to_string();
    Ok(json!({
        "device": args.device,
        "method": method.as_str(),
        "image": args.image,
        "bytes": bytes.len(),
        "uf2_blocks": checked.blocks,
        "firmware_before": before,
        "firmware": running,
        "expected": checked.firmware,
        "running_expected": running == checked.firmware,
        "board": info.board.as_str(),
        // The handshake that answered checked it: the device speaks this schema.
        "schema_hash": format!("{SCHEMA_HASH:#018x}"),
        "protocol_version": covo_mcu_protocol::PROTOCOL_VERSION,
        "elapsed_ms": started.elapsed().as_millis() as u64,
    }))
}

/// The uf2 method: into BOOTSEL (unless already there), then the file onto the drive.
fn flash_uf2(
    cx: &Cx<'_>,
    hw: &covo_hal_tools::hw::Hardware,
    device: &str,
    target: &FlashTarget,
    bytes: &[u8],
) -> Result<(), CallError> {
    let configured = target.drive.as_deref();
    if find_drive(configured).is_none() {
        // Sent once: a reboot is not repeated on a lost answer.
        let answer = hw
            .with_mcu(device, |link| {
                link.call(RequestBody::Bootloader, false, Duration::from_secs(2))
            })
            .map_err(|e| hwargs::fail(cx, e))?;
        match answer {
            Ok(ResponseBody::Done) => {}
            Err(McuError::Device(DeviceError::Unsupported)) => {
                return Err(ToolError::Failed {
                    tool: cx.tool.name.into(),
                    message: format!("'{device}' has no USB bootloader to reboot into"),
                    hint: Some(
                        "use flash = { method = \"probe-rs\", chip = \"…\" } for an SWD probe, \
                         or a command"
                            .into(),
                    ),
                }
                .into())
            }
            Ok(other) => return Err(cx.fail(format!("unexpected answer: {other:?}"))),
            // The answer may be lost as the device drops off USB: the drive decides.
            Err(e) => tracing::debug!(device, error = %e, "no answer to the bootloader request"),
        }
    }
    hw.mcu_forget(device);
    let drive = wait_for_drive(configured).ok_or_else(|| ToolError::Failed {
        tool: cx.tool.name.into(),
        message: format!(
            "no RPI-RP2 drive appeared within {} s{}",
            DRIVE_WAIT.as_secs(),
            configured.map_or(" under /media or /run/media".into(), |d| format!(
                " at {}",
                d.display()
            ))
        ),
        hint: Some(
            "is the drive mounted (udisks or an fstab entry)? Set `drive` in the device's \
             flash to its mount point"
                .into(),
        ),
    })?;
    write_uf2(&drive, bytes).map_err(|e| {
        cx.fail(format!(
            "writing to {} failed: {e}; the device stays in BOOTSEL, so it is safe to try again",
            drive.display()
        ))
    })?;
    Ok(())
}

/// The configured command with `{image}` and `{port}` filled in.
fn command_line(target: &FlashTarget, image: &Path) -> Vec<String> {
    let image = image.to_string_lossy();
    let port = target.port.clone().unwrap_or_default();
    target
        .flash
        .command
        .iter()
        .flatten()
        .map(|a| a.replace("{image}", &image).replace("{port}", &port))
        .collect()
}

/// Connects afresh until the device shakes hands, at most [`RECONNECT_WAIT`].
fn reconnect(
    hw: &covo_hal_tools::hw::Hardware,
    device: &str,
) -> Result<covo_mcu_protocol::DeviceInfo, String> {
    let deadline = Instant::now() + RECONNECT_WAIT;
    loop {
        hw.mcu_forget(device);
        let last = match hw.with_mcu(device, |link| link.info().cloned()) {
            Ok(Some(info)) => return Ok(info),
            Ok(None) => "no handshake".to_string(),
            Err(e) => e.to_string(),
        };
        if Instant::now() >= deadline {
            return Err(last);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covo_mcu_protocol::{stamp, STAMP_LEN};

    fn uf2(image: &[u8], family: u32, size: usize, base: u32) -> Vec<u8> {
        let chunks: Vec<&[u8]> = image.chunks(size).collect();
        let blocks: Vec<uftwo::Block> = chunks
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut b = uftwo::Block::new(i, chunks.len(), c, base as usize + i * size);
                b.flags |= uftwo::Flags::FamilyId;
                b.board_family_id_or_file_size = family;
                b
            })
            .collect();
        uftwo::Uf2File::from_blocks(&blocks).to_bytes()
    }

    fn image(name: &str) -> Vec<u8> {
        let mut i = vec![0u8; 1024];
        i[300..300 + STAMP_LEN].copy_from_slice(&stamp(name));
        i
    }

    #[test]
    fn a_good_rp2040_uf2_passes_and_names_its_firmware() {
        let c = check_image(
            FlashMethod::Uf2,
            "a.UF2",
            &uf2(&image("covo 1.0"), RP2040_FAMILY, 256, FLASH_START),
        )
        .unwrap();
        assert_eq!((c.firmware.as_str(), c.blocks), ("covo 1.0", 4));
    }

    #[test]
    fn images_the_boot_rom_would_not_take_or_covo_could_not_talk_to_are_refused() {
        let good = image("covo 1.0");
        let cases: Vec<(&str, Vec<u8>, &str)> = vec![
            ("a.uf2", uf2(&good, 0x1c5f_21b0, 256, FLASH_START), "family"),
            (
                "a.uf2",
                uf2(&good, RP2040_FAMILY, 476, FLASH_START),
                "256-byte",
            ),
            (
                "a.uf2",
                uf2(&good, RP2040_FAMILY, 256, 0x2000_0000),
                "in flash",
            ),
            (
                "a.uf2",
                uf2(&[7u8; 512], RP2040_FAMILY, 256, FLASH_START),
                "no covo firmware stamp",
            ),
            ("a.uf2", vec![0u8; 700], "not a UF2"),
            ("a.bin", good.clone(), ".uf2 files"),
        ];
        for (name, bytes, want) in cases {
            let e = check_image(FlashMethod::Uf2, name, &bytes).err().unwrap();
            assert!(e.contains(want), "{want}: {e}");
        }
        let mut other = good.clone();
        other[300 + 9] ^= 0xff;
        let e = check_image(FlashMethod::Command, "a.elf", &other)
            .err()
            .unwrap();
        assert!(e.contains("this gateway speaks"), "{e}");
        assert!(check_image(FlashMethod::ProbeRs, "a.uf2", &good).is_err());
        assert_eq!(
            check_image(FlashMethod::ProbeRs, "a.elf", &good)
                .unwrap()
                .firmware,
            "covo 1.0"
        );
    }
}
