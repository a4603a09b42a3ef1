//! `docs/config.md` cannot drift from the configuration types: every field serde knows for each
//! section (read from the types' own `Deserialize` impls, not retyped) has a row in that
//! section's table, every row names a real field, and the example at the end parses.

use covo::config::{
    AgentConfig, Config, FsConfig, LlmConfig, McpConfig, McpServerConfig, MqttConfig, NotifyConfig,
    PolicyConfig, ProfileConfig, RunConfig, SwarmConfig, TelegramConfig, ToolsetConfig, WebConfig,
};
use serde::de::{self, Deserialize, Deserializer, Visitor};
use std::collections::BTreeSet;
use std::path::Path;

/// The field names a derived `Deserialize` passes to `deserialize_struct`.
fn fields<'de, T: Deserialize<'de>>() -> Vec<&'static str> {
    struct Names(std::cell::Cell<&'static [&'static str]>);
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    impl<'de> Deserializer<'de> for &Names {
        type Error = Stop;
        fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _: &'static str,
            fields: &'static [&'static str],
            _: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let names = Names(std::cell::Cell::new(&[]));
    let _ = T::deserialize(&names);
    let f = names.0.get().to_vec();
    assert!(
        !f.is_empty(),
        "{} is not a struct",
        std::any::type_name::<T>()
    );
    f
}

/// The keys in the first column of the table under the `## {heading}` heading.
fn documented(doc: &str, heading: &str) -> BTreeSet<String> {
    let start = doc
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("docs/config.md has no `## {heading}` section"));
    let body = &doc[start + heading.len() + 5..];
    let body = &body[..body.find("\n## ").unwrap_or(body.len())];
    body.lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split_once('`').map(|(k, _)| k.to_string()))
        .collect()
}

fn doc() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/config.md"))
        .expect("docs/config.md")
}

#[test]
fn every_config_key_is_documented_and_every_documented_key_exists() {
    let doc = doc();
    let sections: Vec<(&str, Vec<&'static str>)> = vec![
        ("Top level", fields::<Config>()),
        ("`[profiles.NAME]`", fields::<ProfileConfig>()),
        ("`[toolsets.NAME]`", fields::<ToolsetConfig>()),
        ("`[policy]`", fields::<PolicyConfig>()),
        ("`[fs]`", fields::<FsConfig>()),
        ("`[llm]`", fields::<LlmConfig>()),
        ("`[agent]`", fields::<AgentConfig>()),
        ("`[mqtt]`", fields::<MqttConfig>()),
        ("`[run]`", fields::<RunConfig>()),
        ("`[notify]`", fields::<NotifyConfig>()),
        ("`[swarm]`", fields::<SwarmConfig>()),
        ("`[mcp]`", fields::<McpConfig>()),
        ("`[mcp.servers.NAME]`", fields::<McpServerConfig>()),
        ("`[telegram]`", fields::<TelegramConfig>()),
        ("`[web]`", fields::<WebConfig>()),
    ];
    let mut problems = Vec::new();
    for (heading, keys) in &sections {
        let keys: BTreeSet<String> = keys.iter().map(|k| k.to_string()).collect();
        let rows = documented(&doc, heading);
        for k in keys.difference(&rows) {
            problems.push(format!("{heading}: `{k}` is a config key but has no row"));
        }
        for k in rows.difference(&keys) {
            problems.push(format!(
                "{heading}: `{k}` is documented but is no config key"
            ));
        }
    }
    // Every table section of Config is one of the sections above (a new `[section]` type
    // needs its own table and a line here).
    let top = fields::<Config>();
    for t in [
        "policy", "fs", "llm", "agent", "mqtt", "run", "notify", "swarm", "profiles", "toolsets",
        "mcp", "telegram",
    ] {
        assert!(top.contains(&t), "Config lost `{t}`: update this test");
    }
    assert!(
        problems.is_empty(),
        "docs/config.md:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_documented_example_parses_and_sets_every_section() {
    let doc = doc();
    let start = doc.find("```toml\n").expect("an example block") + 8;
    let text = &doc[start..start + doc[start..].find("```").unwrap()];
    let c = Config::parse(text, Path::new("docs/config.md")).unwrap_or_else(|e| panic!("{e}"));
    // Not the defaults: each section in the example arrived.
    assert_eq!(c.llm.max_tokens, Some(4096));
    assert_eq!(c.mqtt.as_ref().and_then(|m| m.call_timeout_ms), Some(30000));
    assert_eq!(c.run.telemetry_secs, Some(60));
    assert_eq!(c.swarm.expose, Some(vec!["sensor_*".to_string()]));
    assert_eq!(c.web.bind.as_deref(), Some("127.0.0.1:8080"));
    assert_eq!(c.mcp.bind.as_deref(), Some("127.0.0.1:8765"));
    assert_eq!(c.profiles["lab"].deny, vec!["gpio_write".to_string()]);
    assert_eq!(c.toolsets["greenhouse"].includes, vec!["core".to_string()]);
    // A stdio and an HTTP MCP server: between them, every key of a server.
    let servers = &c.mcp.servers;
    assert_eq!(servers["time"].command.as_deref(), Some("uvx"));
    assert!(servers["notes"].headers.contains_key("Authorization"));
    let example: toml::Table = toml::from_str(text).unwrap();
    let mut keys: BTreeSet<String> = BTreeSet::new();
    for server in example["mcp"]["servers"].as_table().unwrap().values() {
        keys.extend(server.as_table().unwrap().keys().cloned());
    }
    for k in fields::<McpServerConfig>() {
        assert!(keys.contains(k), "the example lacks [mcp.servers.*] `{k}`");
    }
    // And every key of every section appears in it.
    for (section, keys) in [
        ("", fields::<Config>()),
        ("[profiles.lab]", fields::<ProfileConfig>()),
        ("[toolsets.greenhouse]", fields::<ToolsetConfig>()),
        ("[policy]", fields::<PolicyConfig>()),
        ("[fs]", fields::<FsConfig>()),
        ("[llm]", fields::<LlmConfig>()),
        ("[agent]", fields::<AgentConfig>()),
        ("[mqtt]", fields::<MqttConfig>()),
        ("[run]", fields::<RunConfig>()),
        ("[notify]", fields::<NotifyConfig>()),
        ("[swarm]", fields::<SwarmConfig>()),
        ("[telegram]", fields::<TelegramConfig>()),
        ("[web]", fields::<WebConfig>()),
        ("[mcp]", fields::<McpConfig>()),
    ] {
        let value: toml::Table = toml::from_str(text).unwrap();
        let table = if section.is_empty() {
            value
        } else {
            let path = section.trim_matches(['[', ']']);
            let mut t = &value;
            for part in path.split('.') {
                t = t[part].as_table().unwrap_or_else(|| panic!("{section}"));
            }
            t.clone()
        };
        for k in keys {
            assert!(table.contains_key(k), "the example lacks {section} `{k}`");
        }
    }
}

#[test]
fn the_packaged_example_config_parses() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/covo.toml");
    let text = std::fs::read_to_string(&path).expect("packaging/covo.toml");
    let c = Config::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(c.board.as_deref(), Some("sim"));
    // It points to the board files where the package installs them, and those load.
    assert!(text.contains("/usr/share/covo/boards/rpi4.toml"));
    for b in ["rpi3.toml", "rpi4.toml", "rpi5.toml", "rpi-zero2w.toml"] {
        let p = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../boards")
            .join(b);
        covo_board::board::BoardDef::load(&p).unwrap_or_else(|e| panic!("{e}"));
    }
}
