//! The gateway's MQTT client keeps its queues bounded: a local subscriber that stops reading
//! holds at most `SUB_QUEUE` messages, the rest are dropped, and other subscribers and the
//! link itself go on working (a real mosquitto on 127.0.0.1).

use covo::config::MqttConfig;
use covo::link::{PeerLink, SUB_QUEUE};
use covo_tests::broker::{raw, Mosquitto};
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use std::time::{Duration, Instant};

#[test]
fn a_subscriber_that_stops_reading_holds_at_most_its_queue_and_others_keep_receiving() {
    let broker = Mosquitto::start();
    let link = PeerLink::start(&MqttConfig {
        url: Some(broker.url()),
        gateway_id: Some("bounds".into()),
        ..Default::default()
    })
    .unwrap();
    assert!(link.wait_synced(Duration::from_secs(10)), "link up");
    let (_stuck_id, stuck) = link.subscribe("flood/#").unwrap();
    let (_live_id, live) = link.subscribe("flood/#").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let publisher = raw(broker.port(), "unused/#");
    let total = SUB_QUEUE * 4;
    // The live subscriber drains while the flood arrives; the stuck one never reads.
    let drain = std::thread::spawn(move || {
        let mut n = 0;
        let end = Instant::now() + Duration::from_secs(20);
        while n < total && Instant::now() < end {
            if live.recv_timeout(Duration::from_millis(200)).is_ok() {
                n += 1;
            }
        }
        n
    });
    for i in 0..total {
        publisher
            .client
            .publish(format!("flood/{i}"), QoS::AtMostOnce, false, vec![b'x'; 64])
            .unwrap();
        if i % 64 == 63 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let live_got = drain.join().unwrap();
    assert_eq!(live_got, total, "a reading subscriber gets every message");
    let held = stuck.try_iter().count();
    assert_eq!(
        held, SUB_QUEUE,
        "the stuck subscriber holds exactly its queue"
    );
    // The link is still up and delivering.
    let (_id, after) = link.subscribe("after/x").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    publisher
        .client
        .publish("after/x", QoS::AtLeastOnce, false, b"ok".to_vec())
        .unwrap();
    assert!(after.recv_timeout(Duration::from_secs(5)).is_ok());
}
