//! MCU request→response latency against the host simulation of the firmware on a pty, next to
//! the wire time of the same bytes at 115200 baud (87 µs per byte, 10 bits per byte). Target:
//! latency ≤ 1.2× wire time. A pty moves bytes without a baud rate, so the measured time is the
//! software cost (framing, CRC, dispatch, both kernels' tty layers) that a real UART adds on top
//! of the wire time.

use covo_hal_tools::mcu::McuLink;
use covo_mcu_protocol::{
    encode, DeviceMessage, Request, RequestBody, Response, ResponseBody, MAX_FRAME,
};
use criterion::{criterion_group, criterion_main, Criterion};
use std::time::Duration;

const WIRE_US_PER_BYTE: f64 = 1e6 / 11_520.0;

fn frame_len<T: serde::Serialize>(m: &T) -> usize {
    let mut buf = [0u8; MAX_FRAME];
    encode(m, &mut buf).unwrap().len()
}

fn bench(c: &mut Criterion) {
    let (path, _sim) = covo_mcu_core::spawn_pty_sim().unwrap();
    let open_path = path.clone();
    let mut link = McuLink::connect(
        Box::new(move || {
            covo_hal_tools::backend::open_serial(&open_path, 115_200, Duration::from_millis(20))
        }),
        Duration::from_secs(3),
    )
    .unwrap();
    let req = Request {
        seq: 7,
        body: RequestBody::GpioRead { pin: 25 },
    };
    let resp = DeviceMessage::Response(Response {
        seq: 7,
        body: Ok(ResponseBody::Level { high: true }),
    });
    let bytes = frame_len(&req) + frame_len(&resp);
    let wire_us = bytes as f64 * WIRE_US_PER_BYTE;
    // A median over many round trips, printed as a ratio to the wire time.
    let mut samples: Vec<f64> = (0..2000)
        .map(|_| {
            let t = std::time::Instant::now();
            link.call(
                RequestBody::GpioRead { pin: 25 },
                true,
                Duration::from_secs(1),
            )
            .unwrap();
            t.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    samples.sort_by(|a, b| a.total_cmp(b));
    let p50 = samples[samples.len() / 2];
    println!(
        "mcu GpioRead round trip on a pty: p50 {p50:.0} µs for {bytes} bytes ({} + {}); wire time at 115200 baud {wire_us:.0} µs; \
         software cost / wire time = {:.2}; a UART link would take ≈ {:.2}× wire time",
        frame_len(&req),
        frame_len(&resp),
        p50 / wire_us,
        (wire_us + p50) / wire_us
    );
    c.bench_function("mcu GpioRead round trip (host sim on a pty)", |b| {
        b.iter(|| {
            link.call(
                RequestBody::GpioRead { pin: 25 },
                true,
                Duration::from_secs(1),
            )
            .unwrap()
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
