//! The pty simulation's BOOTSEL drive, end to end through a real serial port and a real
//! directory: a bootloader request, then UF2 files as the RP2040's boot ROM takes them. One
//! test function: ptys are not safe to exercise from parallel tests.

use std::path::Path;
use std::time::{Duration, Instant};

use covo_mcu_core::protocol::*;
use covo_mcu_core::{spawn_pty_sim, spawn_pty_sim_with_bootsel};

const RP2040: u32 = 0xe48b_ff56;

/// The answer to `req`, or `None` when none came within `wait`.
fn request(
    port: &mut dyn serialport::SerialPort,
    req: Request,
    wait: Duration,
) -> Option<Result<ResponseBody, DeviceError>> {
    let mut reader = FrameReader::<MAX_FRAME>::new();
    let mut buf = [0u8; MAX_FRAME];
    port.write_all(encode(&req, &mut buf).unwrap()).unwrap();
    let deadline = Instant::now() + wait;
    let mut rx = [0u8; 64];
    while Instant::now() < deadline {
        let n = match port.read(&mut rx) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => continue,
            Err(e) => panic!("read: {e}"),
        };
        let mut input = &rx[..n];
        while let Some(msg) = reader.push::<DeviceMessage>(&mut input) {
            if let Ok(DeviceMessage::Response(r)) = msg {
                if r.seq == req.seq {
                    return Some(r.body);
                }
            }
        }
    }
    None
}

fn firmware(port: &mut dyn serialport::SerialPort, seq: u16) -> Option<String> {
    match request(port, Request::hello(seq), Duration::from_secs(3))? {
        Ok(ResponseBody::Hello { info, .. }) => Some(info.firmware.as_str().to_string()),
        other => panic!("{other:?}"),
    }
}

/// A UF2 of `image` at the start of flash: 256-byte blocks of `family`, as elf2uf2 writes.
fn uf2(image: &[u8], family: u32) -> Vec<u8> {
    let chunks: Vec<&[u8]> = image.chunks(256).collect();
    let blocks: Vec<uftwo::Block> = chunks
        .iter()
        .enumerate()
        .map(|(i, chunk)| {
            let mut data = [0u8; 256];
            data[..chunk.len()].copy_from_slice(chunk);
            let mut block = uftwo::Block::new(i, chunks.len(), &data, 0x1000_0000 + i * 256);
            block.flags |= uftwo::Flags::FamilyId;
            block.board_family_id_or_file_size = family;
            block
        })
        .collect();
    uftwo::Uf2File::from_blocks(&blocks).to_bytes()
}

/// A 1 KiB image with `name`'s stamp somewhere past the vector table.
fn image(name: &str) -> Vec<u8> {
    let mut image = vec![0xa5u8; 1024];
    image[600..600 + STAMP_LEN].copy_from_slice(&stamp(name));
    image
}

/// The simulated board's serial port at `path`.
fn open(path: &str) -> Box<dyn serialport::SerialPort> {
    serialport::new(path, 115_200)
        .timeout(Duration::from_millis(20))
        .open()
        .unwrap()
}

/// The answer to a `Bootloader` request with sequence number `seq`.
fn bootloader(
    port: &mut dyn serialport::SerialPort,
    seq: u16,
) -> Option<Result<ResponseBody, DeviceError>> {
    let req = Request {
        seq,
        body: RequestBody::Bootloader,
    };
    request(port, req, Duration::from_secs(3))
}

fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn info_shown(drive: &Path) -> bool {
    drive.join("INFO_UF2.TXT").exists()
}

#[test]
fn a_bootsel_drive_takes_only_a_complete_rp2040_uf2_and_boots_what_its_stamp_names() {
    // Without a drive the board has no bootloader and says so.
    let (path, _plain) = spawn_pty_sim().unwrap();
    let mut port = open(&path);
    let body = bootloader(&mut *port, 1);
    assert_eq!(body, Some(Err(DeviceError::Unsupported)));
    drop(port);

    let dir = tempfile::tempdir().unwrap();
    let drive = dir.path().join("RPI-RP2");
    let (path, handle) = spawn_pty_sim_with_bootsel(&drive).unwrap();
    assert_eq!(handle.bootsel_drive(), Some(drive.as_path()));
    assert!(!drive.exists(), "no drive before the bootloader runs");
    let mut port = open(&path);
    let first = firmware(&mut *port, 1).unwrap();
    assert!(first.starts_with("covo-sim "), "{first}");
    assert!(!info_shown(&drive));

    let body = bootloader(&mut *port, 2);
    assert_eq!(body, Some(Ok(ResponseBody::Done)));
    wait_for("the drive", || info_shown(&drive));
    // In the bootloader the port is silent.
    assert_eq!(firmware(&mut *port, 3), None);

    // Another family's blocks are ignored, as the boot ROM ignores them.
    std::fs::write(
        drive.join("esp.uf2"),
        uf2(&image("covo other"), 0x1c5f_21b0),
    )
    .unwrap();
    // Half of a good file is not a reboot yet.
    let good = uf2(&image("covo 9.9.9"), RP2040);
    std::fs::write(drive.join("covo.uf2"), &good[..good.len() / 2]).unwrap();
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        info_shown(&drive),
        "the drive went away before the image was complete"
    );
    assert_eq!(firmware(&mut *port, 4), None);

    std::fs::write(drive.join("covo.uf2"), &good).unwrap();
    wait_for("the drive to go away", || !info_shown(&drive));
    assert!(!drive.exists(), "the drive's mount point is gone with it");
    assert_eq!(firmware(&mut *port, 5).as_deref(), Some("covo 9.9.9"));

    // Flash an image without a covo stamp: it boots, and never answers.
    let body = bootloader(&mut *port, 6);
    assert_eq!(body, Some(Ok(ResponseBody::Done)));
    wait_for("the drive", || info_shown(&drive));
    std::fs::write(drive.join("blink.uf2"), uf2(&[0x11; 700], RP2040)).unwrap();
    wait_for("the drive to go away", || !info_shown(&drive));
    assert_eq!(firmware(&mut *port, 7), None);
    drop(port);
    drop(handle);

    // A simulation stopped in BOOTSEL takes its drive with it.
    let (path, handle) = spawn_pty_sim_with_bootsel(&drive).unwrap();
    let mut port = open(&path);
    let body = bootloader(&mut *port, 1);
    assert_eq!(body, Some(Ok(ResponseBody::Done)));
    wait_for("the drive", || info_shown(&drive));
    drop(handle);
    assert!(!drive.exists());
}
