//! The fleet as the broker's retained messages describe it, for the fleet page
//! (`fleet_page`): each gateway's birth or Will on `P/gateways/G/status` and its last readings
//! on `P/G/sensors/<device>`. Nothing is polled: the peer subscribes to both filters on its
//! own connection ([`Fleet::filters`]) and the broker sends the retained messages, then every
//! change, as it happens.
//!
//! Every part is bounded, so a broker with more gateways than expected (or a client publishing
//! junk under the prefix) cannot grow the peer's memory without limit:
//! - at most [`MAX_GATEWAYS`] gateways. A new id beyond them replaces the member that has been
//!   offline longest; when every member is online it is not kept, and counted ([`Fleet::dropped`]);
//! - ids and device names of at most [`MAX_NAME`] bytes, software and board names cut to
//!   [`MAX_NAME`] bytes, at most [`MAX_TOOLS`] tool names per gateway;
//! - at most [`MAX_SENSORS`] devices per gateway, each reading at most [`MAX_READING`] bytes,
//!   and at most [`MAX_READINGS_BYTES`] of readings across the fleet (counted by payload size);
//!   a reading beyond a bound is not kept, and counted ([`Fleet::readings_dropped`]).
//!
//! A reading is kept only for a gateway already known from its status: births come first, and a
//! reading that arrives before its gateway's birth (a gateway that publishes readings without a
//! birth, or a retained reading the broker happens to send before the birth) is dropped; the
//! gateway's next reading is kept.

use covo_wire::protocol::Status;
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The most gateways kept.
pub const MAX_GATEWAYS: usize = 10_000;
/// The most sensor devices whose last reading is kept per gateway (as `covo fleet`).
pub const MAX_SENSORS: usize = 32;
/// The largest reading kept, in bytes (as `covo fleet`).
pub const MAX_READING: usize = 4096;
/// The most bytes of readings kept across the fleet.
pub const MAX_READINGS_BYTES: usize = 64 << 20;
/// The most tool names kept per gateway.
pub const MAX_TOOLS: usize = 256;
/// The longest id, device, tool, software or board name kept, in bytes.
pub const MAX_NAME: usize = 128;
/// The largest status payload read; a larger one is ignored.
pub const MAX_STATUS: usize = 64 << 10;

/// One gateway, as its latest retained status and readings describe it.
#[derive(Debug, Clone, PartialEq)]
pub struct Gateway {
    /// Whether its latest status is `online` (a Will or a clean shutdown says `offline`).
    pub online: bool,
    /// The protocol version of its last birth.
    pub version: Option<u32>,
    /// The tools its birth lists (empty while offline).
    pub tools: Vec<String>,
    /// The software its last birth names (kept while offline).
    pub software: Option<String>,
    /// The board its last birth names (kept while offline).
    pub board: Option<String>,
    /// When, by its last birth, its connection came up (Unix seconds).
    pub since: Option<u64>,
    /// When this peer saw its status change (Unix seconds).
    pub last_change: u64,
    /// Device → its last reading.
    pub readings: BTreeMap<String, Reading>,
    /// The order of status changes, for eviction (larger is later).
    seq: u64,
    /// The payload bytes of `readings`.
    reading_bytes: usize,
}

/// A device's last reading: the JSON object the gateway published (with an `at` time when it
/// sent one), serialized as that object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Reading {
    /// The reading.
    pub value: Value,
    /// Its payload's size, as counted against [`MAX_READINGS_BYTES`].
    #[serde(skip)]
    bytes: usize,
}

/// The gateways on the broker, bounded (see the module docs).
#[derive(Debug)]
pub struct Fleet {
    prefix: String,
    gateways: HashMap<String, Gateway>,
    dropped: u64,
    readings_dropped: u64,
    reading_bytes: usize,
    seq: u64,
}

/// A fleet shared by the MQTT handler, which feeds it, and the fleet page, which reads it.
pub type SharedFleet = Arc<Mutex<Fleet>>;

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// `t` cut to at most [`MAX_NAME`] bytes, on a character boundary.
fn cut(mut t: String) -> String {
    let mut end = t.len().min(MAX_NAME);
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    t.truncate(end);
    t
}

/// A topic level usable as an id or device name: non-empty, one level, bounded.
fn level(s: &str) -> bool {
    !s.is_empty() && s.len() <= MAX_NAME && !s.contains(['/', '+', '#'])
}

impl Fleet {
    /// An empty fleet for the topics under `prefix`.
    pub fn new(prefix: &str) -> Fleet {
        Fleet {
            prefix: prefix.trim_end_matches('/').to_string(),
            gateways: HashMap::new(),
            dropped: 0,
            readings_dropped: 0,
            reading_bytes: 0,
            seq: 0,
        }
    }

    /// A new fleet behind a mutex, to share.
    pub fn shared(prefix: &str) -> SharedFleet {
        Arc::new(Mutex::new(Fleet::new(prefix)))
    }

    /// The filters to subscribe to: every gateway's status and every retained reading.
    pub fn filters(&self) -> [String; 2] {
        [
            format!("{}/gateways/+/status", self.prefix),
            format!("{}/+/sensors/+", self.prefix),
        ]
    }

    /// Takes in a message on `topic`. False when the topic is not one of the fleet's (the
    /// caller handles it); true when it is, whether or not it changed anything.
    pub fn message(&mut self, topic: &str, payload: &[u8]) -> bool {
        let Some(rest) = topic
            .strip_prefix(self.prefix.as_str())
            .and_then(|r| r.strip_prefix('/'))
        else {
            return false;
        };
        let levels: Vec<&str> = rest.split('/').collect();
        match levels.as_slice() {
            ["gateways", id, "status"] => self.status(id, payload),
            [id, "sensors", device] => self.reading(id, device, payload),
            _ => return false,
        }
        true
    }

    /// A status message for gateway `id`: a birth, a Will or a clean shutdown's `offline`; an
    /// empty payload (the retained status cleared) forgets the gateway.
    pub fn status(&mut self, id: &str, payload: &[u8]) {
        if !level(id) {
            return;
        }
        if payload.is_empty() {
            if let Some(g) = self.gateways.remove(id) {
                self.reading_bytes -= g.reading_bytes;
            }
            return;
        }
        if payload.len() > MAX_STATUS {
            tracing::debug!(
                gateway = id,
                bytes = payload.len(),
                "fleet: status too large, ignored"
            );
            return;
        }
        let Ok(status) = serde_json::from_slice::<Status>(payload) else {
            tracing::debug!(gateway = id, "fleet: status is not a status, ignored");
            return;
        };
        let online = status.is_online();
        if !online && status.status != "offline" {
            return;
        }
        if !self.gateways.contains_key(id) && !self.make_room(id) {
            return;
        }
        self.seq += 1;
        let g = self.gateways.entry(id.to_string()).or_insert(Gateway {
            online,
            version: None,
            tools: Vec::new(),
            software: None,
            board: None,
            since: None,
            last_change: 0,
            readings: BTreeMap::new(),
            seq: 0,
            reading_bytes: 0,
        });
        g.online = online;
        g.seq = self.seq;
        g.last_change = unix_now();
        if online {
            let mut tools = status.tools;
            tools.retain(|t| t.len() <= MAX_NAME);
            tools.truncate(MAX_TOOLS);
            g.tools = tools;
            g.version = status.version;
            g.software = status.software.map(cut);
            g.board = status.board.map(cut);
            g.since = status.since;
        } else {
            // A Will carries only `offline`: what the last birth said stays, but an offline
            // gateway serves nothing.
            g.tools = Vec::new();
        }
    }

    /// Makes room for new gateway `id`: true when it may be added, after evicting the member
    /// offline longest if the fleet is full; false (and counted) when every member is online.
    fn make_room(&mut self, id: &str) -> bool {
        if self.gateways.len() < MAX_GATEWAYS {
            return true;
        }
        let oldest_offline = self
            .gateways
            .iter()
            .filter(|(_, g)| !g.online)
            .min_by_key(|(_, g)| g.seq)
            .map(|(id, _)| id.clone());
        match oldest_offline {
            Some(old) => {
                if let Some(g) = self.gateways.remove(&old) {
                    self.reading_bytes -= g.reading_bytes;
                }
                true
            }
            None => {
                self.dropped += 1;
                tracing::warn!(
                    gateway = id,
                    max = MAX_GATEWAYS,
                    "fleet page: too many gateways online, this one is not listed"
                );
                false
            }
        }
    }

    /// A retained reading of gateway `id`'s `device` (a JSON object); an empty payload (the
    /// reading cleared) forgets it. Ignored for a gateway not known from its status.
    pub fn reading(&mut self, id: &str, device: &str, payload: &[u8]) {
        let Some(g) = self.gateways.get_mut(id) else {
            return;
        };
        let old = g.readings.get(device).map_or(0, |r| r.bytes);
        if payload.is_empty() {
            if g.readings.remove(device).is_some() {
                g.reading_bytes -= old;
                self.reading_bytes -= old;
            }
            return;
        }
        let fits = level(device)
            && payload.len() <= MAX_READING
            && (g.readings.len() < MAX_SENSORS || g.readings.contains_key(device))
            && self.reading_bytes - old + payload.len() <= MAX_READINGS_BYTES;
        let value = fits
            .then(|| serde_json::from_slice::<Value>(payload).ok())
            .flatten()
            .filter(Value::is_object);
        let Some(value) = value else {
            self.readings_dropped += 1;
            return;
        };
        let bytes = payload.len();
        g.readings
            .insert(device.to_string(), Reading { value, bytes });
        g.reading_bytes = g.reading_bytes - old + bytes;
        self.reading_bytes = self.reading_bytes - old + bytes;
    }

    /// Gateway `id`, if known.
    pub fn get(&self, id: &str) -> Option<&Gateway> {
        self.gateways.get(id)
    }

    /// How many gateways are known.
    pub fn len(&self) -> usize {
        self.gateways.len()
    }

    /// Whether no gateway is known.
    pub fn is_empty(&self) -> bool {
        self.gateways.is_empty()
    }

    /// How many are online.
    pub fn online(&self) -> usize {
        self.gateways.values().filter(|g| g.online).count()
    }

    /// New gateways not kept because [`MAX_GATEWAYS`] were known and all online.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Readings not kept: beyond a bound, not a JSON object, or a bad device name.
    pub fn readings_dropped(&self) -> u64 {
        self.readings_dropped
    }

    /// The bytes of readings kept across the fleet.
    pub fn reading_bytes(&self) -> usize {
        self.reading_bytes
    }

    /// The fleet as `/api/fleet` answers it: `{"gateways": [...], "online", "total",
    /// "dropped", "readings_dropped", "max"}`, online gateways first, then by id.
    pub fn to_json(&self) -> Vec<u8> {
        #[derive(Serialize)]
        struct Row<'a> {
            gateway: &'a str,
            status: &'static str,
            online: bool,
            version: Option<u32>,
            software: Option<&'a str>,
            board: Option<&'a str>,
            since: Option<u64>,
            last_change: u64,
            tools: &'a [String],
            last_reading_at: Option<&'a str>,
            readings: &'a BTreeMap<String, Reading>,
        }
        #[derive(Serialize)]
        struct Body<'a> {
            gateways: Vec<Row<'a>>,
            online: usize,
            total: usize,
            dropped: u64,
            readings_dropped: u64,
            max: usize,
        }
        let mut rows: Vec<Row> = self
            .gateways
            .iter()
            .map(|(id, g)| Row {
                gateway: id,
                status: if g.online { "online" } else { "offline" },
                online: g.online,
                version: g.version,
                software: g.software.as_deref(),
                board: g.board.as_deref(),
                since: g.since,
                last_change: g.last_change,
                tools: &g.tools,
                last_reading_at: g
                    .readings
                    .values()
                    .filter_map(|r| r.value["at"].as_str())
                    .max(),
                readings: &g.readings,
            })
            .collect();
        rows.sort_by(|a, b| {
            b.online
                .cmp(&a.online)
                .then_with(|| a.gateway.cmp(b.gateway))
        });
        let body = Body {
            online: rows.iter().filter(|r| r.online).count(),
            total: rows.len(),
            gateways: rows,
            dropped: self.dropped,
            readings_dropped: self.readings_dropped,
            max: MAX_GATEWAYS,
        };
        serde_json::to_vec(&body).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn birth(board: &str) -> Vec<u8> {
        serde_json::to_vec(&json!({
            "status": "online", "version": 1, "tools": ["gpio_read", "i2c_scan"],
            "software": "covo 0.1.0", "board": board, "since": 1_700_000_000u64,
        }))
        .unwrap()
    }

    const OFFLINE: &[u8] = br#"{"status":"offline"}"#;

    fn api(f: &Fleet) -> Value {
        serde_json::from_slice(&f.to_json()).unwrap()
    }

    #[test]
    fn births_wills_readings_and_a_cleared_status_make_the_list() {
        let mut f = Fleet::new("covo/");
        assert!(f.message("covo/gateways/gw-b/status", &birth("pi-zero-2w")));
        assert!(f.message("covo/gateways/gw-a/status", OFFLINE));
        assert!(f.message(
            "covo/gw-b/sensors/bme280",
            br#"{"temperature":{"value":21.5,"unit":"C"},"at":"2026-12-07T17:00:00Z"}"#
        ));
        // Not the fleet's: the peer's own requests, a deeper topic, another prefix.
        assert!(!f.message("covo/gw-b/peer/req", b"{}"));
        assert!(!f.message("covo/gateways/a/b/status", &birth("x")));
        assert!(!f.message("other/gateways/gw-c/status", &birth("x")));
        // A reading for an unknown id, junk, a non-object: ignored.
        f.message("covo/gw-z/sensors/bme280", br#"{"at":"x"}"#);
        f.message("covo/gateways/gw-j/status", b"not json");
        f.message("covo/gw-b/sensors/junk", b"[1]");
        assert_eq!((f.len(), f.online()), (2, 1));
        let v = api(&f);
        assert_eq!(
            (v["total"].clone(), v["online"].clone()),
            (json!(2), json!(1))
        );
        assert_eq!(v["max"], 10_000);
        let b = &v["gateways"][0];
        assert_eq!(b["gateway"], "gw-b", "online first: {v}");
        assert_eq!(b["status"], "online");
        assert_eq!(b["board"], "pi-zero-2w");
        assert_eq!(b["since"], 1_700_000_000u64);
        assert_eq!(b["tools"], json!(["gpio_read", "i2c_scan"]));
        assert_eq!(b["last_reading_at"], "2026-12-07T17:00:00Z");
        assert_eq!(b["readings"]["bme280"]["temperature"]["value"], 21.5);
        assert_eq!(v["gateways"][1]["status"], "offline");
        // Its Will: offline, the birth's board kept, no tools.
        f.message("covo/gateways/gw-b/status", OFFLINE);
        let g = f.get("gw-b").unwrap();
        assert!(!g.online && g.tools.is_empty());
        assert_eq!(g.board.as_deref(), Some("pi-zero-2w"));
        // A cleared retained status forgets it, and its readings' bytes.
        assert!(f.reading_bytes() > 0);
        f.message("covo/gateways/gw-b/status", b"");
        assert!(f.get("gw-b").is_none());
        assert_eq!(f.reading_bytes(), 0);
        assert_eq!(f.len(), 1);
    }

    #[test]
    fn ten_thousand_ids_at_most_the_longest_offline_goes_first_and_readings_are_capped() {
        let mut f = Fleet::new("covo");
        for i in 0..MAX_GATEWAYS + 50 {
            f.status(&format!("gw-{i:05}"), &birth("pi"));
        }
        // All online: the 50 beyond the bound are not kept, and counted.
        assert_eq!(f.len(), MAX_GATEWAYS);
        assert_eq!(f.dropped(), 50);
        assert!(f.get("gw-10000").is_none());
        // Three go offline, gw-00007 first: a new id replaces it, the next one gw-00003.
        for id in ["gw-00007", "gw-00003", "gw-00005"] {
            f.status(id, OFFLINE);
        }
        f.status("new-1", &birth("pi"));
        assert_eq!(f.len(), MAX_GATEWAYS);
        assert!(f.get("gw-00007").is_none() && f.get("new-1").is_some());
        assert!(f.get("gw-00003").is_some());
        f.status("new-2", OFFLINE);
        assert!(f.get("gw-00003").is_none() && f.get("gw-00005").is_some());
        // A known id changes in place, whatever the bound.
        f.status("gw-00001", OFFLINE);
        assert_eq!((f.len(), f.dropped()), (MAX_GATEWAYS, 50));
        let v = api(&f);
        assert_eq!(v["total"], MAX_GATEWAYS);
        assert_eq!(v["dropped"], 50);
        assert_eq!(v["gateways"].as_array().unwrap().len(), MAX_GATEWAYS);

        // Readings: 32 devices, 4 KiB each.
        for d in 0..40 {
            f.reading("gw-00010", &format!("dev{d:02}"), br#"{"v":1,"at":"t"}"#);
        }
        let g = f.get("gw-00010").unwrap();
        assert_eq!(g.readings.len(), MAX_SENSORS);
        assert!(g.readings.contains_key("dev31") && !g.readings.contains_key("dev32"));
        // A known device is still replaced at the bound.
        f.reading("gw-00010", "dev00", br#"{"v":2,"at":"u"}"#);
        assert_eq!(f.get("gw-00010").unwrap().readings["dev00"].value["v"], 2);
        let big = format!(r#"{{"v":"{}"}}"#, "x".repeat(MAX_READING));
        f.reading("gw-00011", "big", big.as_bytes());
        let fits = format!(r#"{{"v":"{}"}}"#, "x".repeat(MAX_READING - 8));
        assert_eq!(fits.len(), MAX_READING);
        f.reading("gw-00011", "fits", fits.as_bytes());
        let g = f.get("gw-00011").unwrap();
        assert!(!g.readings.contains_key("big") && g.readings.contains_key("fits"));
        assert_eq!(f.readings_dropped(), 8 + 1);
        // Cleared readings give their bytes back.
        let before = f.reading_bytes();
        f.reading("gw-00011", "fits", b"");
        assert_eq!(f.reading_bytes(), before - MAX_READING);
    }

    #[test]
    fn the_readings_across_the_fleet_stay_within_their_budget() {
        let mut f = Fleet::new("covo");
        let reading = format!(r#"{{"v":"{}"}}"#, "x".repeat(MAX_READING - 8));
        let per_gateway = MAX_SENSORS * MAX_READING;
        let gateways = MAX_READINGS_BYTES / per_gateway + 2;
        for i in 0..gateways {
            let id = format!("gw-{i}");
            f.status(&id, &birth("pi"));
            for d in 0..MAX_SENSORS {
                f.reading(&id, &format!("d{d}"), reading.as_bytes());
            }
        }
        assert!(f.reading_bytes() <= MAX_READINGS_BYTES);
        assert_eq!(f.reading_bytes(), MAX_READINGS_BYTES);
        assert_eq!(f.readings_dropped(), 2 * MAX_SENSORS as u64);
    }

    #[test]
    fn tools_and_names_are_bounded() {
        let mut f = Fleet::new("covo");
        let tools: Vec<String> = (0..MAX_TOOLS + 10).map(|i| format!("t{i}")).collect();
        let long = "é".repeat(MAX_NAME);
        let body = json!({"status": "online", "tools": tools, "board": long});
        f.status("gw", &serde_json::to_vec(&body).unwrap());
        let g = f.get("gw").unwrap();
        assert_eq!(g.tools.len(), MAX_TOOLS);
        assert!(g.board.as_ref().unwrap().len() <= MAX_NAME);
        f.status(&"x".repeat(MAX_NAME + 1), &birth("pi"));
        f.status("", &birth("pi"));
        assert_eq!(f.len(), 1);
    }
}
