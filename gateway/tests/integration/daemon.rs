//! `covo run` over months: switch state in Home Assistant from every path and across restarts,
//! refusals reported, slow work kept off the loop, chat sessions bounded. The real binary,
//! a real mosquitto, the scripted LLM server and SQLite on disk.

use covo_tests::broker::{raw, Mosquitto, Raw};
use covo_tests::llm_server::{Reply, ScriptedLlm};
use covo_tests::rumqttc::v5::mqttbytes::QoS;
use serde_json::{json, Value};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn covo(dir: &Path, cfg: &str, llm: Option<&ScriptedLlm>) -> Command {
    let path = dir.join("covo.toml");
    std::fs::write(&path, cfg).unwrap();
    let mut c = Command::new(env!("CARGO_BIN_EXE_covo"));
    c.arg("--config")
        .arg(&path)
        .current_dir(dir)
        .env("COVO_HOME", dir.join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("COVO_LLM_BASE_URL")
        .env_remove("COVO_LLM_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("OPENAI_API_KEY")
        .env_remove("COVO_LOG");
    if let Some(srv) = llm {
        c.env("COVO_LLM_BASE_URL", srv.openai_base_url())
            .env("COVO_LLM_MODEL", "scripted")
            .env("OPENAI_API_KEY", "sk-test");
    }
    c
}

/// A running `covo run`, killed if a test fails before [`terminate`].
struct Daemon(Option<Child>);

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.0.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn start(dir: &Path, cfg: &str, llm: Option<&ScriptedLlm>, status: &Raw) -> Daemon {
    let child = Daemon(Some(
        covo(dir, cfg, llm)
            .args(["run", "--profile", "full"])
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    ));
    let end = Instant::now() + Duration::from_secs(15);
    loop {
        let (birth, _) = status
            .next_on(
                "covo/gateways/gw1/status",
                end.saturating_duration_since(Instant::now()),
            )
            .expect("the daemon's birth");
        if birth["status"] == "online" {
            break;
        }
    }
    // The birth goes out on connect; give the daemon a moment to subscribe.
    std::thread::sleep(Duration::from_millis(500));
    child
}

/// Sends SIGTERM and waits: the daemon must exit 0 on its own. Returns its stderr.
fn terminate(mut daemon: Daemon) -> String {
    let (code, err) = covo_tests::bins::terminate(daemon.0.take().unwrap());
    assert_eq!(code, Some(0), "stderr: {err}");
    err
}

/// Waits for `payload` on `topic`; returns whether it came retained.
fn wait_for(r: &Raw, topic: &str, payload: &str, max: Duration) -> bool {
    let end = Instant::now() + max;
    let mut seen = Vec::new();
    while let Ok(m) =
        r.rx.recv_timeout(end.saturating_duration_since(Instant::now()))
    {
        if m.topic == topic && m.payload == payload.as_bytes() {
            return m.retain;
        }
        seen.push((m.topic, String::from_utf8_lossy(&m.payload).into_owned()));
    }
    panic!("no {payload} on {topic} within {max:?}; saw {seen:?}");
}

/// What a new subscriber gets as the retained state of the relay.
fn retained_relay(port: u16) -> String {
    let r = raw(port, "covo/gw1/ha/relay/state");
    let m =
        r.rx.recv_timeout(Duration::from_secs(3))
            .expect("a retained relay state");
    assert!(m.retain);
    String::from_utf8(m.payload).unwrap()
}

#[test]
fn switch_states_are_retained_from_the_start_across_restarts_and_after_agent_writes() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let states = raw(broker.port(), "covo/gw1/ha/#");
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n[run]\napprove = true\n",
        broker.url()
    );
    let srv = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("gpio_write", r#"{"pin":"relay","level":1}"#)]),
        Reply::text("The relay is on."),
    ]);

    // First start: Home Assistant sees OFF at once, not `unknown`.
    let child = start(dir.path(), &cfg, Some(&srv), &status);
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "OFF",
        Duration::from_secs(5),
    );
    assert_eq!(retained_relay(broker.port()), "OFF");

    // Home Assistant switches it on.
    states
        .client
        .publish("covo/gw1/ha/relay/set", QoS::AtLeastOnce, false, "ON")
        .unwrap();
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "ON",
        Duration::from_secs(5),
    );
    assert_eq!(retained_relay(broker.port()), "ON");

    // A refused command is reported on the error topic and in plain words in the log.
    states
        .client
        .publish("covo/gw1/ha/button/set", QoS::AtLeastOnce, false, "ON")
        .unwrap();
    let end = Instant::now() + Duration::from_secs(5);
    let error = loop {
        let m = states
            .rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
            .expect("an error report");
        if m.topic == "covo/gw1/ha/button/error" {
            break serde_json::from_slice::<Value>(&m.payload).unwrap();
        }
    };
    assert_eq!(error["error"]["rule"], "gpio.outputs", "{error}");
    let err = terminate(child);
    assert!(
        err.contains("Home Assistant command ON for button was not carried out: refused by policy rule 'gpio.outputs'"),
        "{err}"
    );
    assert!(!err.contains("Respond("), "no Rust Debug text: {err}");

    // The process that drove the relay is gone and the relay is low again (a new process's
    // sim board; on a Pi the released line): the retained ON must not stay.
    assert_eq!(
        retained_relay(broker.port()),
        "ON",
        "stale until the restart"
    );
    let child = start(dir.path(), &cfg, Some(&srv), &status);
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "OFF",
        Duration::from_secs(5),
    );
    assert_eq!(retained_relay(broker.port()), "OFF");

    // The agent switches the relay from a chat: Home Assistant hears of it.
    states
        .client
        .publish(
            "covo/gw1/chat/in",
            QoS::AtLeastOnce,
            false,
            json!({"text": "turn the relay on", "session": "s1"}).to_string(),
        )
        .unwrap();
    // The state follows the write (checked every SWITCH_CHECK); the turn's closing model call
    // comes after the tool ran, so it is waited for, not assumed (a busy machine once saw the
    // ON before the second request).
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "ON",
        Duration::from_secs(10),
    );
    assert_eq!(retained_relay(broker.port()), "ON");
    let end = Instant::now() + Duration::from_secs(30);
    while srv.requests().len() < 2 && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(srv.requests().len(), 2, "the chat turn ran to its reply");
    terminate(child);
}

#[test]
fn a_slow_scheduled_tool_does_not_hold_up_telemetry() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    // A job already due at start: wait 6 s for an edge on the button that never comes.
    {
        let store = covo::store::Store::open_in(&dir.path().join("home")).unwrap();
        store
            .create_schedule(
                Some("slow"),
                "sched",
                "mqtt",
                &covo::store::ScheduleTrigger::At(chrono::Utc::now()),
                &covo::store::ScheduleAction::Tool {
                    name: "gpio_wait_edge".into(),
                    arguments: json!({"pin": "button", "timeout_ms": 6000}),
                },
                chrono::Utc::now() - chrono::Duration::seconds(5),
            )
            .unwrap();
    }
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let telemetry = raw(broker.port(), "covo/gw1/sensors/climate");
    let states = raw(broker.port(), "covo/gw1/ha/relay/state");
    // The sim board with its climate sensor sampled at the telemetry interval (1 s).
    let board = dir.path().join("board.toml");
    let sim = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../boards/sim.toml"))
        .unwrap()
        .replace("sample_interval_secs = 60\n", "");
    std::fs::write(&board, sim).unwrap();
    let cfg = format!(
        "board = \"{}\"\n[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n[run]\ntelemetry_secs = 1\n\
         [agent]\nschedule_poll_secs = 1\n",
        board.display(),
        broker.url()
    );
    let child = start(dir.path(), &cfg, None, &status);
    // Telemetry over 7 s, while the job waits for its 6 s; half way, Home Assistant switches
    // the relay, and its state must follow at once.
    let t0 = Instant::now();
    let mut arrivals = Vec::new();
    let mut switched: Option<Instant> = None;
    let mut state_after: Option<Duration> = None;
    while t0.elapsed() < Duration::from_secs(7) {
        if let Ok(m) = telemetry.rx.recv_timeout(Duration::from_millis(100)) {
            if !m.retain {
                arrivals.push(t0.elapsed());
            }
        }
        if switched.is_none() && t0.elapsed() > Duration::from_secs(3) {
            states
                .client
                .publish("covo/gw1/ha/relay/set", QoS::AtLeastOnce, false, "ON")
                .unwrap();
            switched = Some(Instant::now());
        }
        while let Ok(m) = states.rx.try_recv() {
            if let (Some(t), b"ON") = (switched, m.payload.as_slice()) {
                state_after.get_or_insert(t.elapsed());
            }
        }
    }
    let state_after = state_after.expect("the relay's state while the job waits");
    assert!(
        state_after < Duration::from_millis(1500),
        "Home Assistant waited {state_after:?} for the switch"
    );
    let gaps: Vec<Duration> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    let worst = gaps.iter().max().copied().unwrap_or(Duration::MAX);
    assert!(
        arrivals.len() >= 5 && worst < Duration::from_millis(2500),
        "telemetry every second must go on while the job waits: arrivals {arrivals:?}"
    );
    // The job did run, and took its 6 s, while telemetry went on.
    let end = Instant::now() + Duration::from_secs(5);
    let (n, micros) = loop {
        let store = covo::store::Store::open_in(&dir.path().join("home")).unwrap();
        let row: (i64, i64) = store
            .conn()
            .query_row(
                "SELECT count(*), coalesce(max(micros), 0) FROM audit
                 WHERE tool = 'gpio_wait_edge' AND via = 'schedule'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .unwrap();
        if row.0 > 0 || Instant::now() > end {
            break row;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(n, 1, "the scheduled call ran once");
    assert!(micros >= 5_900_000, "it waited its 6 s: {micros} µs");
    terminate(child);
}

#[test]
fn chat_sessions_are_capped_and_idle_ones_evicted() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let out = raw(broker.port(), "covo/gw1/chat/out");
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n[run]\nmax_sessions = 2\nsession_idle_secs = 2\n",
        broker.url()
    );
    let srv = ScriptedLlm::start(vec![
        Reply::delay(Duration::from_secs(2), Reply::text("slow one")),
        Reply::delay(Duration::from_secs(2), Reply::text("slow two")),
        Reply::text("third"),
        Reply::text("again"),
    ]);
    let child = start(dir.path(), &cfg, Some(&srv), &status);
    let say = |session: &str, text: &str| {
        out.client
            .publish(
                "covo/gw1/chat/in",
                QoS::AtLeastOnce,
                false,
                json!({"text": text, "session": session}).to_string(),
            )
            .unwrap();
    };
    let next = || {
        out.next_on("covo/gw1/chat/out", Duration::from_secs(10))
            .expect("an answer")
            .0
    };
    say("a", "first question of a");
    say("b", "first question of b");
    assert!(srv.wait_for_requests(2, Duration::from_secs(5)));
    // Both sessions are busy with the model: a third is refused, not queued without bound.
    say("c", "hello from c");
    let refused = next();
    assert_eq!(refused["session"], "c", "{refused}");
    assert_eq!(refused["error"], true, "{refused}");
    assert!(
        refused["text"]
            .as_str()
            .unwrap()
            .contains("too many chat sessions"),
        "{refused}"
    );
    let mut answered: Vec<String> = (0..2)
        .map(|_| next()["session"].as_str().unwrap().into())
        .collect();
    answered.sort();
    assert_eq!(answered, ["a", "b"]);
    // Now a and b are idle: c gets a place (the least recently used is evicted).
    say("c", "hello again from c");
    let v = next();
    assert_eq!(
        (v["session"].as_str(), v["text"].as_str()),
        (Some("c"), Some("third")),
        "{v}"
    );
    // After the idle time, a's history is gone from memory: its next turn starts afresh.
    std::thread::sleep(Duration::from_millis(3000));
    say("a", "second question of a");
    let v = next();
    assert_eq!(v["text"], "again", "{v}");
    let last = srv.requests().last().unwrap().body.to_string();
    assert!(last.contains("second question of a"));
    assert!(!last.contains("first question of a"), "evicted: {last}");
    terminate(child);
}

#[test]
fn a_chat_flood_and_a_home_assistant_storm_stay_bounded_and_the_loop_answers() {
    let broker = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let out = raw(broker.port(), "covo/gw1/chat/out");
    let states = raw(broker.port(), "covo/gw1/ha/relay/state");
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n[run]\ntelemetry_secs = 1\n",
        broker.url()
    );
    // The first turn's model answer takes 8 s: the session's later messages queue behind it.
    let mut script = vec![Reply::delay(Duration::from_secs(8), Reply::text("slow"))];
    script.extend((0..12).map(|_| Reply::text("ok")));
    let srv = ScriptedLlm::start(script);
    let child = start(dir.path(), &cfg, Some(&srv), &status);
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "OFF",
        Duration::from_secs(5),
    );

    // 12 messages for one session at once: 1 runs, 3 wait, 8 are answered busy at once.
    let sent = Instant::now();
    for i in 0..12 {
        out.client
            .publish(
                "covo/gw1/chat/in",
                QoS::AtLeastOnce,
                false,
                json!({"session": "s1", "text": format!("hello {i}")}).to_string(),
            )
            .unwrap();
    }
    let mut busy = 0;
    while busy < 12 - covo::daemon::TURNS_PER_SESSION {
        let (v, _) = out
            .next_on("covo/gw1/chat/out", Duration::from_secs(6))
            .unwrap_or_else(|| panic!("only {busy} busy answers"));
        assert_eq!(
            v["error"], true,
            "an answer before the slow turn ended: {v}"
        );
        let text = v["text"].as_str().unwrap();
        assert!(
            text.starts_with("busy: ")
                && text.contains(&format!("{} messages", covo::daemon::TURNS_PER_SESSION)),
            "{text}"
        );
        busy += 1;
    }
    assert!(
        sent.elapsed() < Duration::from_secs(7),
        "the busy answers waited for the slow turn: {:?}",
        sent.elapsed()
    );

    // Meanwhile Home Assistant sends 200 commands in a burst: bounded, never queued without
    // end; and afterwards one command is carried out as usual.
    for i in 0..200 {
        let p = if i % 2 == 0 { "ON" } else { "OFF" };
        states
            .client
            .publish("covo/gw1/ha/relay/set", QoS::AtMostOnce, false, p)
            .unwrap();
    }
    std::thread::sleep(Duration::from_millis(1500));
    while states.rx.try_recv().is_ok() {}
    states
        .client
        .publish("covo/gw1/ha/relay/set", QoS::AtLeastOnce, false, "ON")
        .unwrap();
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "ON",
        Duration::from_secs(5),
    );

    // The four queued turns are all answered, in order, once the slow one ends.
    let mut answers = 0;
    while answers < covo::daemon::TURNS_PER_SESSION {
        let (v, _) = out
            .next_on("covo/gw1/chat/out", Duration::from_secs(20))
            .unwrap_or_else(|| panic!("only {answers} queued turns answered"));
        assert_ne!(v["error"], true, "{v}");
        answers += 1;
    }
    let err = terminate(child);
    // Drops are warned once per power of two (how many drop depends on the machine's speed).
    let dropped = err.matches("Home Assistant commands arrive faster").count();
    assert!(
        dropped <= 9,
        "{dropped} drop warnings for 200 commands: {err}"
    );
    eprintln!("{dropped} drop warnings for 200 Home Assistant commands");
}

/// `[mqtt] url` with two brokers (two nodes, say): covo runs on the first; when it dies, covo is
/// back on the second, born there, with Home Assistant's retained state and commands working;
/// when the second restarts, covo goes round the list past the dead first one and is back again.
#[test]
fn with_a_list_of_brokers_the_gateway_moves_to_a_live_one_when_its_broker_dies() {
    let a = Mosquitto::start();
    let mut b = Mosquitto::start();
    let dir = tempfile::tempdir().unwrap();
    let topic = "covo/gateways/gw1/status";
    let on_a = raw(a.port(), topic);
    let on_b = raw(b.port(), topic);
    let cfg = format!(
        "[mqtt]\nurl = \"{}, {}\"\ngateway_id = \"gw1\"\n[run]\napprove = true\n",
        a.url(),
        b.url()
    );
    let daemon = start(dir.path(), &cfg, None, &on_a);
    assert!(
        on_b.next_on(topic, Duration::from_millis(500)).is_none(),
        "on the first broker only"
    );

    let states = raw(b.port(), "covo/gw1/ha/relay/state");
    drop(a); // killed: the gateway's connection drops
    let t0 = Instant::now();
    let online = |r: &Raw, max: Duration| {
        let end = Instant::now() + max;
        while let Some((v, _)) = r.next_on(topic, end.saturating_duration_since(Instant::now())) {
            if v["status"] == "online" {
                return true;
            }
        }
        false
    };
    assert!(
        online(&on_b, Duration::from_secs(20)),
        "not born on the second broker"
    );
    eprintln!(
        "online on the second broker {:?} after the first died",
        t0.elapsed()
    );
    // Home Assistant on the second broker: the switch state (kept there, retained), and a
    // command obeyed.
    wait_for(
        &states,
        "covo/gw1/ha/relay/state",
        "OFF",
        Duration::from_secs(10),
    );
    assert_eq!(retained_relay(b.port()), "OFF");
    std::thread::sleep(Duration::from_millis(300));
    states
        .client
        .publish("covo/gw1/ha/relay/set", QoS::AtLeastOnce, false, "ON")
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        let m = states
            .rx
            .recv_timeout(end.saturating_duration_since(Instant::now()))
            .expect("the relay's ON state on the second broker");
        if m.payload == b"ON" {
            break;
        }
    }

    // The second broker restarts (its retained messages gone): round the list, past the dead
    // first one, and back on the second, born again.
    b.restart();
    let again = raw(b.port(), topic);
    assert!(
        online(&again, Duration::from_secs(30)),
        "not back after the restart"
    );
    terminate(daemon);
}
