use covo_mcu_core::protocol::heapless::Vec;
use covo_mcu_core::protocol::*;
use covo_mcu_core::sim::{SimBoard, LED_PIN, SIM_I2C_ADDRESS, TEMP_CHANNEL};
use covo_mcu_core::Device;

fn device() -> Device<SimBoard> {
    Device::new(SimBoard::with_manual_clock())
}

fn frame(req: &Request) -> std::vec::Vec<u8> {
    let mut buf = [0u8; MAX_FRAME];
    encode(req, &mut buf).unwrap().to_vec()
}

/// Everything the device sends in answer to `rx`, decoded.
fn exchange(dev: &mut Device<SimBoard>, rx: &[u8]) -> std::vec::Vec<DeviceMessage> {
    let mut out = std::vec::Vec::new();
    dev.on_bytes(rx, &mut |f: &[u8]| out.push(f.to_vec()));
    out.into_iter()
        .map(|mut f| decode(&mut f).unwrap())
        .collect()
}

fn ask(
    dev: &mut Device<SimBoard>,
    seq: u16,
    body: RequestBody,
) -> Result<ResponseBody, DeviceError> {
    match exchange(dev, &frame(&Request { seq, body })).as_slice() {
        [DeviceMessage::Response(r)] => {
            assert_eq!(r.seq, seq, "the response carries the request's seq");
            r.body.clone()
        }
        other => panic!("expected one response, got {other:?}"),
    }
}

fn polled(dev: &mut Device<SimBoard>) -> std::vec::Vec<Event> {
    let mut out = std::vec::Vec::new();
    dev.poll(&mut |f: &[u8]| out.push(f.to_vec()));
    out.into_iter()
        .map(|mut f| match decode(&mut f).unwrap() {
            DeviceMessage::Event(e) => e,
            other => panic!("poll sent {other:?}"),
        })
        .collect()
}

#[test]
fn hello_with_matching_version_returns_device_info() {
    let mut dev = device();
    dev.board().advance_ms(1234);
    match ask(&mut dev, 1, Request::hello(1).body) {
        Ok(ResponseBody::Hello {
            version,
            schema_hash,
            info,
        }) => {
            assert_eq!((version, schema_hash), (PROTOCOL_VERSION, SCHEMA_HASH));
            assert_eq!(info.board.as_str(), "sim-rp2040");
            assert_eq!(info.uptime_ms, 1234);
            assert_eq!(info.pins.len(), 29);
            assert!(info.pins[26].supports(PinMode::Analog));
            assert!(!info.pins[25].supports(PinMode::Analog));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn hello_with_another_version_or_schema_is_refused() {
    let mut dev = device();
    assert_eq!(
        ask(
            &mut dev,
            2,
            RequestBody::Hello {
                version: PROTOCOL_VERSION + 1,
                schema_hash: SCHEMA_HASH
            }
        ),
        Err(DeviceError::VersionMismatch {
            device: PROTOCOL_VERSION,
            host: PROTOCOL_VERSION + 1
        })
    );
    assert_eq!(
        ask(
            &mut dev,
            3,
            RequestBody::Hello {
                version: PROTOCOL_VERSION,
                schema_hash: SCHEMA_HASH ^ 1
            }
        ),
        Err(DeviceError::SchemaMismatch)
    );
}

#[test]
fn gpio_output_loops_back_and_lights_the_led() {
    let mut dev = device();
    assert_eq!(
        ask(
            &mut dev,
            1,
            RequestBody::GpioWrite {
                pin: LED_PIN,
                high: true
            }
        ),
        Err(DeviceError::UnsupportedMode)
    );
    assert_eq!(
        ask(
            &mut dev,
            2,
            RequestBody::GpioMode {
                pin: LED_PIN,
                mode: PinMode::Output
            }
        ),
        Ok(ResponseBody::Done)
    );
    assert_eq!(
        ask(
            &mut dev,
            3,
            RequestBody::GpioWrite {
                pin: LED_PIN,
                high: true
            }
        ),
        Ok(ResponseBody::Done)
    );
    assert_eq!(
        ask(&mut dev, 4, RequestBody::GpioRead { pin: LED_PIN }),
        Ok(ResponseBody::Level { high: true })
    );
    assert!(dev.board().led());
    assert_eq!(
        ask(&mut dev, 5, RequestBody::GpioRead { pin: 29 }),
        Err(DeviceError::UnknownPin(29))
    );
    assert_eq!(
        ask(
            &mut dev,
            6,
            RequestBody::GpioMode {
                pin: 3,
                mode: PinMode::Analog
            }
        ),
        Err(DeviceError::UnsupportedMode)
    );
}

#[test]
fn inputs_read_their_pull_unless_driven() {
    let mut dev = device();
    ask(
        &mut dev,
        1,
        RequestBody::GpioMode {
            pin: 3,
            mode: PinMode::InputPullUp,
        },
    )
    .unwrap();
    assert_eq!(
        ask(&mut dev, 2, RequestBody::GpioRead { pin: 3 }),
        Ok(ResponseBody::Level { high: true })
    );
    dev.board().set_input(3, Some(false));
    assert_eq!(
        ask(&mut dev, 3, RequestBody::GpioRead { pin: 3 }),
        Ok(ResponseBody::Level { high: false })
    );
}

#[test]
fn adc_reads_scale_to_millivolts_and_temperature_is_plausible() {
    let mut dev = device();
    let Ok(ResponseBody::Adc { raw, millivolts }) =
        ask(&mut dev, 1, RequestBody::AdcRead { channel: 0 })
    else {
        panic!()
    };
    assert_eq!(millivolts as u32, raw as u32 * 3300 / 4095);
    let Ok(ResponseBody::Adc { raw, .. }) = ask(
        &mut dev,
        2,
        RequestBody::AdcRead {
            channel: TEMP_CHANNEL,
        },
    ) else {
        panic!()
    };
    let volts = raw as f32 * 3.3 / 4095.0;
    let celsius = 27.0 - (volts - 0.706) / 0.001721;
    assert!((20.0..35.0).contains(&celsius), "{celsius}");
    assert_eq!(
        ask(&mut dev, 3, RequestBody::AdcRead { channel: 5 }),
        Err(DeviceError::AdcChannel(5))
    );
}

#[test]
fn adc_values_vary_slowly_and_deterministically() {
    let mut a = SimBoard::with_manual_clock();
    let mut b = SimBoard::with_manual_clock();
    use covo_mcu_core::Board;
    let mut last = a.adc_read(1).unwrap();
    for _ in 0..100 {
        a.advance_ms(100);
        b.advance_ms(100);
        let now = a.adc_read(1).unwrap();
        assert_eq!(now, b.adc_read(1).unwrap());
        assert!(now.abs_diff(last) <= 20, "{last} -> {now}");
        last = now;
    }
}

#[test]
fn pwm_needs_pwm_mode_and_a_sane_range() {
    let mut dev = device();
    let set = |duty| RequestBody::PwmSet {
        pin: 15,
        frequency_hz: 1000,
        duty_permille: duty,
    };
    assert_eq!(
        ask(&mut dev, 1, set(250)),
        Err(DeviceError::UnsupportedMode)
    );
    ask(
        &mut dev,
        2,
        RequestBody::GpioMode {
            pin: 15,
            mode: PinMode::Pwm,
        },
    )
    .unwrap();
    assert_eq!(
        ask(&mut dev, 3, set(250)),
        Ok(ResponseBody::Pwm {
            frequency_hz: 1000,
            duty_permille: 250
        })
    );
    assert_eq!(dev.board().pwm(15), Some((1000, 250)));
    assert_eq!(ask(&mut dev, 4, set(1001)), Err(DeviceError::PwmRange));
}

#[test]
fn i2c_device_at_0x48_returns_its_registers_and_others_nack() {
    let mut dev = device();
    let xfer = |address, write: &[u8], read_len| RequestBody::I2cTransfer {
        address,
        write: Vec::from_slice(write).unwrap(),
        read_len,
    };
    assert_eq!(
        ask(&mut dev, 1, xfer(SIM_I2C_ADDRESS, &[0x00], 2)),
        Ok(ResponseBody::I2c {
            read: Vec::from_slice(&[0x19, 0x00]).unwrap()
        })
    );
    ask(&mut dev, 2, xfer(SIM_I2C_ADDRESS, &[0x10, 0xaa, 0xbb], 0)).unwrap();
    assert_eq!(
        ask(&mut dev, 3, xfer(SIM_I2C_ADDRESS, &[0x10], 3)),
        Ok(ResponseBody::I2c {
            read: Vec::from_slice(&[0xaa, 0xbb, 0x12]).unwrap()
        })
    );
    assert_eq!(
        ask(&mut dev, 4, xfer(0x50, &[0], 1)),
        Err(DeviceError::I2cNack(0x50))
    );
    assert_eq!(
        ask(&mut dev, 5, xfer(SIM_I2C_ADDRESS, &[0], MAX_I2C as u8 + 1)),
        Err(DeviceError::TooLong)
    );
}

#[test]
fn corrupt_frames_get_no_answer_and_the_next_request_does() {
    let mut dev = device();
    let mut bad = frame(&Request {
        seq: 1,
        body: RequestBody::Ping,
    });
    bad[2] ^= 0x10;
    let mut stream = bad;
    stream.extend([0x42, 0x13, 0x37, 0x00]);
    stream.extend(vec![0x55; 400]);
    stream.push(0);
    stream.extend(frame(&Request {
        seq: 2,
        body: RequestBody::Ping,
    }));
    let out = exchange(&mut dev, &stream);
    assert_eq!(
        out,
        vec![DeviceMessage::Response(Response {
            seq: 2,
            body: Ok(ResponseBody::Pong)
        })]
    );
}

#[test]
fn requests_split_across_reads_are_answered_once_complete() {
    let mut dev = device();
    let f = frame(&Request {
        seq: 77,
        body: RequestBody::Info,
    });
    let mut got = std::vec::Vec::new();
    for b in &f {
        got.extend(exchange(&mut dev, std::slice::from_ref(b)));
    }
    assert!(matches!(
        got.as_slice(),
        [DeviceMessage::Response(Response {
            seq: 77,
            body: Ok(ResponseBody::Info(_))
        })]
    ));
}

#[test]
fn subscribed_pin_changes_and_periodic_adc_stream_as_events() {
    let mut dev = device();
    ask(
        &mut dev,
        1,
        RequestBody::GpioMode {
            pin: 3,
            mode: PinMode::InputPullUp,
        },
    )
    .unwrap();
    let events = EventMask {
        pin_change: 1 << 3,
        adc_period_ms: 100,
        adc_channels: 0b1_0001,
    };
    assert_eq!(
        ask(&mut dev, 2, RequestBody::Subscribe { events }),
        Ok(ResponseBody::Done)
    );

    // The first poll samples ADC at once and records pin levels without reporting them.
    let first = polled(&mut dev);
    assert_eq!(first.len(), 2, "{first:?}");
    assert!(first.iter().all(|e| matches!(
        e,
        Event::Adc {
            channel: 0 | 4,
            at_ms: 0,
            ..
        }
    )));
    dev.board().advance_ms(50);
    assert_eq!(polled(&mut dev), vec![]);

    dev.board().set_input(3, Some(false));
    dev.board().advance_ms(1);
    assert_eq!(
        polled(&mut dev),
        vec![Event::PinChange {
            pin: 3,
            high: false,
            at_ms: 51
        }]
    );

    dev.board().advance_ms(49);
    assert_eq!(polled(&mut dev).len(), 2, "ADC again after 100 ms");

    assert_eq!(
        ask(
            &mut dev,
            3,
            RequestBody::Subscribe {
                events: EventMask::default()
            }
        ),
        Ok(ResponseBody::Done)
    );
    dev.board().set_input(3, None);
    dev.board().advance_ms(500);
    assert_eq!(polled(&mut dev), vec![]);
}

/// A transport with a host that sends nothing: `poll` never reports data, as `usb.poll`
/// returns false on an idle USB bus.
#[derive(Default)]
struct IdleHost {
    sent: std::vec::Vec<std::vec::Vec<u8>>,
    inbox: std::vec::Vec<u8>,
}

impl covo_mcu_core::Link for IdleHost {
    fn poll(&mut self) -> bool {
        !self.inbox.is_empty()
    }
    fn read(&mut self, buf: &mut [u8]) -> usize {
        let n = buf.len().min(self.inbox.len());
        buf[..n].copy_from_slice(&self.inbox[..n]);
        self.inbox.drain(..n);
        n
    }
    fn write(&mut self, frame: &[u8]) {
        self.sent.push(frame.to_vec());
    }
}

#[test]
fn the_main_loop_sends_events_while_the_host_is_idle() {
    let mut dev = device();
    let mut host = IdleHost::default();
    let events = EventMask {
        pin_change: 1 << 3,
        adc_period_ms: 100,
        adc_channels: 0b1,
    };
    host.inbox = frame(&Request {
        seq: 1,
        body: RequestBody::Subscribe { events },
    });
    while dev.step(&mut host) > 0 {}
    let answers: std::vec::Vec<DeviceMessage> = host
        .sent
        .drain(..)
        .map(|mut f| decode(&mut f).unwrap())
        .collect();
    assert!(answers.contains(&DeviceMessage::Response(Response {
        seq: 1,
        body: Ok(ResponseBody::Done)
    })));

    // From here on the host sends nothing: every `poll` of the link says "no data".
    dev.board().set_input(3, Some(true));
    dev.board().advance_ms(10);
    assert_eq!(dev.step(&mut host), 0);
    dev.board().set_input(3, Some(false));
    dev.board().advance_ms(100);
    assert_eq!(dev.step(&mut host), 0);
    let events: std::vec::Vec<DeviceMessage> = host
        .sent
        .drain(..)
        .map(|mut f| decode(&mut f).unwrap())
        .collect();
    assert!(
        events.contains(&DeviceMessage::Event(Event::PinChange {
            pin: 3,
            high: false,
            at_ms: 110
        })),
        "{events:?}"
    );
    assert!(
        events.iter().any(|e| matches!(
            e,
            DeviceMessage::Event(Event::Adc {
                channel: 0,
                at_ms: 110,
                ..
            })
        )),
        "{events:?}"
    );
}

#[test]
fn the_usb_serial_number_is_the_unique_id_in_hex() {
    let s = covo_mcu_core::serial_number(&[0xE6, 0x60, 0x58, 0x38, 0x83, 0x1A, 0x2B, 0x0F]);
    assert_eq!(std::str::from_utf8(&s).unwrap(), "E6605838831A2B0F");
    let zero = covo_mcu_core::serial_number(&[0; 8]);
    assert_eq!(&zero, b"0000000000000000");
    // Two boards with ids differing in one bit get different serial numbers.
    assert_ne!(
        covo_mcu_core::serial_number(&[0, 0, 0, 0, 0, 0, 0, 1]),
        covo_mcu_core::serial_number(&[0, 0, 0, 0, 0, 0, 0, 0])
    );
}
