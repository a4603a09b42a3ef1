//! Arbitrary bytes into `decode` and `FrameReader`: nothing may panic, and whatever a reader
//! accepts must survive a re-encode round trip.
#![no_main]

use covo_mcu_protocol::{decode, encode, DeviceMessage, FrameReader, Request, MAX_FRAME};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode::<Request>(&mut data.to_vec());
    let _ = decode::<DeviceMessage>(&mut data.to_vec());

    // The first byte picks a chunk size so split frames are exercised too.
    let chunk = data.first().map_or(1, |&b| b as usize % 16 + 1);
    let mut requests = FrameReader::<MAX_FRAME>::new();
    let mut messages = FrameReader::<MAX_FRAME>::new();
    for part in data.chunks(chunk) {
        requests.feed::<Request>(part, |r| {
            if let Ok(req) = r {
                let mut buf = [0u8; MAX_FRAME];
                let frame = encode(&req, &mut buf).expect("an accepted request re-encodes");
                assert_eq!(decode::<Request>(frame).unwrap(), req);
            }
        });
        messages.feed::<DeviceMessage>(part, |_| {});
    }
});
