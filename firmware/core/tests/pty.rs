//! The pty simulation, end to end through a real serial port. One test function: ptys are not
//! safe to exercise from parallel tests.

use std::io::Write;
use std::time::{Duration, Instant};

use covo_mcu_core::protocol::*;
use covo_mcu_core::spawn_pty_sim;

fn request(
    port: &mut dyn serialport::SerialPort,
    reader: &mut FrameReader<MAX_FRAME>,
    req: Request,
) -> Response {
    let mut buf = [0u8; MAX_FRAME];
    port.write_all(encode(&req, &mut buf).unwrap()).unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
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
                    return r;
                }
            }
        }
    }
    panic!("no response to {req:?}");
}

#[test]
fn pty_sim_answers_hello_and_gpio_over_a_serial_port_and_stops_on_drop() {
    let (path, handle) = spawn_pty_sim().unwrap();
    assert_eq!(handle.path(), path);
    let mut port = serialport::new(&path, 115_200)
        .timeout(Duration::from_millis(50))
        .open()
        .unwrap();
    let mut reader = FrameReader::<MAX_FRAME>::new();

    let hello = request(&mut *port, &mut reader, Request::hello(1));
    let Ok(ResponseBody::Hello {
        version,
        schema_hash,
        info,
    }) = hello.body
    else {
        panic!("{hello:?}")
    };
    assert_eq!((version, schema_hash), (PROTOCOL_VERSION, SCHEMA_HASH));
    assert_eq!(info.board.as_str(), "sim-rp2040");

    let r = request(
        &mut *port,
        &mut reader,
        Request {
            seq: 2,
            body: RequestBody::GpioMode {
                pin: 25,
                mode: PinMode::Output,
            },
        },
    );
    assert_eq!(r.body, Ok(ResponseBody::Done));
    let r = request(
        &mut *port,
        &mut reader,
        Request {
            seq: 3,
            body: RequestBody::GpioWrite {
                pin: 25,
                high: true,
            },
        },
    );
    assert_eq!(r.body, Ok(ResponseBody::Done));
    let r = request(
        &mut *port,
        &mut reader,
        Request {
            seq: 4,
            body: RequestBody::GpioRead { pin: 25 },
        },
    );
    assert_eq!(r.body, Ok(ResponseBody::Level { high: true }));
    assert!(handle.with_device(|d| d.board().led()));

    // Garbage on the line is skipped; the next request is still answered.
    port.write_all(&[0x13, 0x37, 0xff, 0x00]).unwrap();
    let r = request(
        &mut *port,
        &mut reader,
        Request {
            seq: 5,
            body: RequestBody::Ping,
        },
    );
    assert_eq!(r.body, Ok(ResponseBody::Pong));

    // A second client session after the first closes.
    drop(port);
    let mut port = serialport::new(&path, 115_200)
        .timeout(Duration::from_millis(50))
        .open()
        .unwrap();
    let r = request(
        &mut *port,
        &mut FrameReader::new(),
        Request {
            seq: 6,
            body: RequestBody::GpioRead { pin: 25 },
        },
    );
    assert_eq!(r.body, Ok(ResponseBody::Level { high: true }));
    drop(port);

    let started = Instant::now();
    drop(handle);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the sim thread stops promptly"
    );
}
