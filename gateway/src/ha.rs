//! Home Assistant MQTT discovery (device-based configs, retained) for the declared devices:
//! each sensor quantity becomes a `sensor` reading the gateway's telemetry topic, each `gpio_out`
//! device a `switch` whose commands `covo run` turns into `gpio_write` calls through the pipeline.
//!
//! Config topics: `homeassistant/<component>/covo_<G>/<device>[_<quantity>]/config`.
//! Availability follows the gateway status topic (`{"status":"online"|"offline"}`).

use covo_board::board::{BoardDef, DeviceDef};
use covo_board::driver::HaComponent;
use serde_json::{json, Value};

/// The discovery prefix Home Assistant listens on.
pub const DISCOVERY_PREFIX: &str = "homeassistant";
/// Home Assistant's birth/death topic; `online` there asks for a re-announce.
pub const HA_STATUS: &str = "homeassistant/status";

/// Where a gateway's topics live.
#[derive(Debug, Clone)]
pub struct HaTopics {
    /// The MQTT topic prefix (`[mqtt] prefix`).
    pub prefix: String,
    /// The gateway id.
    pub gateway: String,
}

impl HaTopics {
    /// The node id: `covo_<gateway>` made safe for discovery topics.
    pub fn node_id(&self) -> String {
        safe(&format!("covo_{}", self.gateway))
    }
    /// The gateway status topic (the availability topic).
    pub fn status(&self) -> String {
        format!("{}/gateways/{}/status", self.prefix, self.gateway)
    }
    /// A sensor's telemetry topic.
    pub fn sensor(&self, device: &str) -> String {
        format!("{}/{}/sensors/{device}", self.prefix, self.gateway)
    }
    /// A switch's command topic.
    pub fn set(&self, device: &str) -> String {
        format!("{}/{}/ha/{device}/set", self.prefix, self.gateway)
    }
    /// A switch's state topic.
    pub fn state(&self, device: &str) -> String {
        format!("{}/{}/ha/{device}/state", self.prefix, self.gateway)
    }
    /// Where a switch's refused or failed commands are reported.
    pub fn error(&self, device: &str) -> String {
        format!("{}/{}/ha/{device}/error", self.prefix, self.gateway)
    }
    /// The filter for every switch command.
    pub fn set_filter(&self) -> String {
        format!("{}/{}/ha/+/set", self.prefix, self.gateway)
    }
    /// The device a command topic addresses.
    pub fn device_of_set<'a>(&self, topic: &'a str) -> Option<&'a str> {
        topic
            .strip_prefix(&format!("{}/{}/ha/", self.prefix, self.gateway))?
            .strip_suffix("/set")
            .filter(|d| !d.is_empty() && !d.contains('/'))
    }
}

/// Keeps `[a-zA-Z0-9_-]`, the characters discovery ids allow.
pub fn safe(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn common(t: &HaTopics, board: &BoardDef) -> (Value, Value) {
    let device = json!({
        "identifiers": [t.node_id()],
        "name": format!("covo {}", t.gateway),
        "model": board.board.name,
        "manufacturer": "covo",
        "sw_version": env!("CARGO_PKG_VERSION"),
    });
    let origin = json!({"name": "covo", "sw_version": env!("CARGO_PKG_VERSION")});
    (device, origin)
}

fn availability(v: &mut Value, t: &HaTopics) {
    v["availability_topic"] = json!(t.status());
    v["availability_template"] = json!("{{ value_json.status }}");
    v["payload_available"] = json!("online");
    v["payload_not_available"] = json!("offline");
}

/// The discovery configs (topic, payload) for one declared device; empty when it has nothing
/// Home Assistant can show. `name` overrides the friendly name.
pub fn configs_for(
    t: &HaTopics,
    board: &BoardDef,
    d: &DeviceDef,
    name: Option<&str>,
) -> Vec<(String, Value)> {
    let (device, origin) = common(t, board);
    let node = t.node_id();
    let mut out = Vec::new();
    let Some(component) = d.driver.info().ha_component else {
        return out;
    };
    if component == HaComponent::Switch {
        let object = safe(&d.name);
        let mut v = json!({
            "name": name.unwrap_or(&d.name),
            "unique_id": format!("{node}_{object}"),
            "command_topic": t.set(&d.name),
            "state_topic": t.state(&d.name),
            "payload_on": "ON",
            "payload_off": "OFF",
            "state_on": "ON",
            "state_off": "OFF",
            "device": device,
            "origin": origin,
        });
        availability(&mut v, t);
        out.push((
            format!("{DISCOVERY_PREFIX}/switch/{node}/{object}/config"),
            v,
        ));
        return out;
    }
    // The driver's entry gives each quantity's Home Assistant class and unit.
    let quantities = d.driver.quantities();
    let single = quantities.len() == 1;
    for quantity in quantities {
        let (q, class, unit) = (quantity.name, quantity.ha_class, quantity.ha_unit);
        let object = safe(&format!("{}_{q}", d.name));
        // A device with one quantity is named by itself ("co2", not "co2 co2").
        let base = name.unwrap_or(&d.name);
        let friendly = if single || base == q {
            base.to_string()
        } else {
            format!("{base} {q}")
        };
        let mut v = json!({
            "name": friendly,
            "unique_id": format!("{node}_{object}"),
            "state_topic": t.sensor(&d.name),
            "value_template": format!("{{{{ value_json.{q}.value }}}}"),
            "unit_of_measurement": unit,
            "state_class": "measurement",
            "device": device.clone(),
            "origin": origin.clone(),
        });
        if let Some(c) = class {
            v["device_class"] = json!(c);
        }
        availability(&mut v, t);
        out.push((
            format!("{DISCOVERY_PREFIX}/sensor/{node}/{object}/config"),
            v,
        ));
    }
    out
}

/// Every declared device's configs.
pub fn all_configs(t: &HaTopics, board: &BoardDef) -> Vec<(String, Value)> {
    board
        .device
        .iter()
        .flat_map(|d| configs_for(t, board, d, None))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_safe_and_units_map_to_home_assistant_through_the_driver_table() {
        assert_eq!(safe("gw.1/x"), "gw_1_x");
        let board = BoardDef::sim();
        let t = HaTopics {
            prefix: "covo".into(),
            gateway: "gw1".into(),
        };
        let shown = |name: &str| -> Vec<(Value, Value)> {
            configs_for(&t, &board, board.device(name).unwrap(), None)
                .into_iter()
                .map(|(_, v)| (v["device_class"].clone(), v["unit_of_measurement"].clone()))
                .collect()
        };
        assert_eq!(
            shown("climate"),
            [
                (json!("temperature"), json!("°C")),
                (json!("humidity"), json!("%")),
                (json!("pressure"), json!("hPa"))
            ]
        );
        assert_eq!(shown("light"), [(json!("illuminance"), json!("lx"))]);
        assert!(shown("oled").is_empty(), "a display is not announced");
        assert_eq!(t.device_of_set("covo/gw1/ha/relay/set"), Some("relay"));
        assert_eq!(t.device_of_set("covo/gw1/ha/a/b/set"), None);
    }

    #[test]
    fn a_single_quantity_device_is_named_by_itself_and_the_device_has_a_version() {
        let t = HaTopics {
            prefix: "covo".into(),
            gateway: "gw1".into(),
        };
        let mut board = BoardDef::sim();
        let light = board
            .device
            .iter()
            .find(|d| d.name == "light")
            .unwrap()
            .clone();
        let v = &configs_for(&t, &board, &light, None)[0].1;
        assert_eq!(v["name"], "light");
        assert_eq!(v["device"]["sw_version"], env!("CARGO_PKG_VERSION"));
        let climate = board
            .device
            .iter()
            .find(|d| d.name == "climate")
            .unwrap()
            .clone();
        let names: Vec<Value> = configs_for(&t, &board, &climate, None)
            .into_iter()
            .map(|(_, v)| v["name"].clone())
            .collect();
        assert_eq!(
            names,
            [
                "climate temperature",
                "climate humidity",
                "climate pressure"
            ]
        );
        // An SCD4x named after its main quantity: "co2", not "co2 co2".
        let mut co2 = climate.clone();
        co2.name = "co2".into();
        co2.driver = covo_board::driver::Driver::Scd4x;
        board.device.push(co2.clone());
        let names: Vec<Value> = configs_for(&t, &board, &co2, None)
            .into_iter()
            .map(|(_, v)| v["name"].clone())
            .collect();
        assert_eq!(names, ["co2", "co2 temperature", "co2 humidity"]);
        let v = &configs_for(&t, &board, &light, Some("Desk lamp"))[0].1;
        assert_eq!(v["name"], "Desk lamp");
    }
}
