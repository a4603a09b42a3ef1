//! The gateway's MQTT client keeps its queues bounded: a local subscriber that stops reading
//! holds at most `SUB_QUEUE` messages, and an async queue that subscriptions share (`covo run`'s
//! loop, `subscribe_into`) at most its capacity; the rest are dropped, and other subscribers and
//! the link itself go on working (a real mosquitto on 127.0.0.1).

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
    // Two subscriptions into one async queue of 40 that nobody reads: each message arrives twice.
    let (shared_tx, mut shared) = tokio::sync::mpsc::channel(40);
    let into_a = link.subscribe_into("flood/#", shared_tx.clone()).unwrap();
    let into_b = link.subscribe_into("flood/+", shared_tx).unwrap();
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
    let mut queued = Vec::new();
    while let Ok(m) = shared.try_recv() {
        queued.push(m.topic);
    }
    assert_eq!(
        queued.len(),
        40,
        "the shared queue holds exactly its capacity"
    );
    // Each message once per subscription, in order (the broker may also send a copy per
    // matching subscription, which the link hands to every local one).
    let n: Vec<usize> = queued
        .iter()
        .map(|t| t.strip_prefix("flood/").unwrap().parse().unwrap())
        .collect();
    assert!(n.windows(2).all(|w| w[0] <= w[1]), "{queued:?}");
    assert_eq!((n[0], n[1]), (0, 0), "{queued:?}");
    // Once both subscriptions are gone, nothing more arrives there.
    link.unsubscribe(into_a);
    link.unsubscribe(into_b);
    publisher
        .client
        .publish("flood/late", QoS::AtLeastOnce, false, b"x".to_vec())
        .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    assert!(matches!(
        shared.try_recv(),
        Err(tokio::sync::mpsc::error::TryRecvError::Disconnected)
    ));
    // The link is still up and delivering.
    let (_id, after) = link.subscribe("after/x").unwrap();
    std::thread::sleep(Duration::from_millis(300));
    publisher
        .client
        .publish("after/x", QoS::AtLeastOnce, false, b"ok".to_vec())
        .unwrap();
    assert!(after.recv_timeout(Duration::from_secs(5)).is_ok());
}
