//! MCU events through the real client (`McuLink`) against the host simulation of the firmware
//! on a pty: subscribe, receive pin changes and ADC samples, and a queue that holds at most
//! `EVENT_QUEUE` events. (The subscription surviving a restart of the device is in
//! `gateway/tests/qemu.rs`.)

use covo_hal_tools::mcu::{McuLink, EVENT_QUEUE};
use covo_mcu_protocol::{Event, EventMask, PinMode, RequestBody};
use std::time::{Duration, Instant};

const DEADLINE: Duration = Duration::from_secs(2);

fn connect(path: &str) -> McuLink {
    let path = path.to_string();
    McuLink::connect(
        Box::new(move || {
            covo_hal_tools::backend::open_serial(&path, 115_200, Duration::from_millis(20))
        }),
        Duration::from_secs(3),
    )
    .unwrap()
}

/// Polls until `pred` holds for an event or `within` passes.
fn wait_for(link: &mut McuLink, within: Duration, pred: impl Fn(&Event) -> bool) -> Vec<Event> {
    let until = Instant::now() + within;
    let mut seen = Vec::new();
    while Instant::now() < until {
        seen.extend(link.poll_events(Duration::from_millis(50)).unwrap());
        if seen.iter().any(&pred) {
            return seen;
        }
    }
    panic!("no matching event within {within:?}; saw {seen:?}");
}

#[test]
fn events_arrive_after_a_subscription_and_queue_boundedly() {
    let (path, sim) = covo_mcu_core::spawn_pty_sim().unwrap();
    let mut link = connect(&path);
    link.call(
        RequestBody::GpioMode {
            pin: 3,
            mode: PinMode::Input,
        },
        true,
        DEADLINE,
    )
    .unwrap();
    // Nothing is streamed before a subscription.
    assert_eq!(
        link.poll_events(Duration::from_millis(100)).unwrap(),
        vec![]
    );

    let mask = EventMask {
        pin_change: 1 << 3,
        adc_period_ms: 0,
        adc_channels: 0,
    };
    link.subscribe(mask, DEADLINE).unwrap();
    std::thread::sleep(Duration::from_millis(50)); // the device records the baseline level
    sim.with_device(|d| d.board().set_input(3, Some(true)));
    let seen = wait_for(&mut link, DEADLINE, |e| {
        matches!(
            e,
            Event::PinChange {
                pin: 3,
                high: true,
                ..
            }
        )
    });
    assert!(
        seen.iter()
            .all(|e| matches!(e, Event::PinChange { pin: 3, .. })),
        "{seen:?}"
    );

    // A flood of ADC samples (every channel each millisecond) while nobody reads: the events
    // read while a request waits for its answer are queued, at most EVENT_QUEUE of them.
    link.subscribe(
        EventMask {
            pin_change: 0,
            adc_period_ms: 1,
            adc_channels: 0b1_1111,
        },
        DEADLINE,
    )
    .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    link.call(RequestBody::Ping, true, DEADLINE).unwrap();
    let before = link.stats();
    assert!(before.events_dropped > 0, "{before:?}");
    let queued = link.poll_events(Duration::ZERO).unwrap();
    assert_eq!(queued.len(), EVENT_QUEUE, "{before:?}");
    assert!(queued.iter().all(|e| matches!(e, Event::Adc { .. })));
}

/// A device on an in-memory port that answers each request and, in the same read, sends an
/// event right behind the answer (as a firmware does when a pin changes while it answers).
struct EventAfterAnswer {
    reader: covo_mcu_protocol::FrameReader<{ covo_mcu_protocol::MAX_FRAME }>,
    out: std::collections::VecDeque<u8>,
}

impl std::io::Write for EventAfterAnswer {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        use covo_mcu_protocol::*;
        let mut requests = Vec::new();
        self.reader
            .feed::<Request>(buf, |r| requests.push(r.unwrap()));
        for r in requests {
            let body = match r.body {
                RequestBody::Hello { .. } => ResponseBody::Hello {
                    version: PROTOCOL_VERSION,
                    schema_hash: SCHEMA_HASH,
                    info: DeviceInfo::default(),
                },
                _ => ResponseBody::Done,
            };
            let mut frame = [0u8; MAX_FRAME];
            let answer = DeviceMessage::Response(Response {
                seq: r.seq,
                body: Ok(body),
            });
            self.out.extend(encode(&answer, &mut frame).unwrap().iter());
            let event = DeviceMessage::Event(Event::PinChange {
                pin: 7,
                high: true,
                at_ms: u32::from(r.seq),
            });
            self.out.extend(encode(&event, &mut frame).unwrap().iter());
        }
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl std::io::Read for EventAfterAnswer {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = buf.len().min(self.out.len());
        for (b, x) in buf.iter_mut().zip(self.out.drain(..n)) {
            *b = x;
        }
        Ok(n)
    }
}

#[test]
fn an_event_in_the_same_read_as_an_answer_is_kept() {
    let mut link = McuLink::connect(
        Box::new(|| {
            Ok(Box::new(EventAfterAnswer {
                reader: covo_mcu_protocol::FrameReader::new(),
                out: Default::default(),
            }) as Box<dyn covo_hal_tools::backend::SerialIo>)
        }),
        DEADLINE,
    )
    .unwrap();
    link.call(RequestBody::Ping, true, DEADLINE).unwrap();
    let events = link.poll_events(Duration::ZERO).unwrap();
    // One event behind the Hello answer, one behind the Ping answer; none lost.
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(link.stats().bad_frames, 0);
}
