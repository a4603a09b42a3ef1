//! `[peer]` in `covo.toml`: the peer's id and its backends' settings.
//!
//! The peer reads the same file as the gateway (`[mqtt]` and `[llm]` are shared); the gateway
//! keeps `[peer]` as an opaque table and never interprets it, so the gateway binary carries none
//! of the backends' configuration types. Unknown keys under `[peer]` are errors here.

use crate::backends::BackendsConfig;
use covo::config::Config;
use serde::Deserialize;

/// `covo-peer` (`[peer]`): the cloud side that runs `runs = "peer"` tools.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    /// This peer's id in topics (default: `peer-` and the host name).
    pub id: Option<String>,
    /// What the tool backends need.
    #[serde(default)]
    pub backends: BackendsConfig,
    /// Where the fleet page listens (`"127.0.0.1:8090"`); absent, there is no page. Anything
    /// but a loopback address needs `fleet_token` (`crate::fleet_page`).
    pub fleet_bind: Option<String>,
    /// The fleet page's bearer token (`$COVO_PEER_FLEET_TOKEN` wins), at least 16 characters.
    pub fleet_token: Option<String>,
}

/// `[peer]` is not valid: the message names the key and what was expected.
#[derive(Debug, thiserror::Error)]
#[error("invalid [peer] in {source_name}: {message}")]
pub struct PeerConfigError {
    /// The config file (or `defaults`).
    pub source_name: String,
    /// toml's message.
    pub message: String,
}

impl PeerConfig {
    /// The `[peer]` table of a loaded configuration, typed.
    pub fn from_config(cfg: &Config) -> Result<PeerConfig, PeerConfigError> {
        PeerConfig::deserialize(toml::Value::Table(cfg.peer.clone())).map_err(|e| PeerConfigError {
            source_name: cfg
                .source
                .as_ref()
                .map_or_else(|| "defaults".into(), |p| p.display().to_string()),
            message: e.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn the_peer_table_is_typed_here_and_its_unknown_keys_are_errors() {
        let c = Config::parse(
            "[peer]\nid = \"p1\"\n[peer.backends.web_fetch]\nmax_bytes = 1000\n",
            Path::new("covo.toml"),
        )
        .unwrap();
        assert_eq!(
            PeerConfig::from_config(&c).unwrap().id.as_deref(),
            Some("p1")
        );
        let bad = Config::parse("[peer]\nidd = \"p1\"\n", Path::new("covo.toml")).unwrap();
        let msg = PeerConfig::from_config(&bad).unwrap_err().to_string();
        assert!(msg.contains("idd") && msg.contains("covo.toml"), "{msg}");
        assert_eq!(
            PeerConfig::from_config(&Config::default()).unwrap(),
            PeerConfig::default()
        );
    }

    /// The package's /etc/covo/covo-peer.toml parses as it is, and so does every example key
    /// its comments offer once uncommented.
    #[test]
    fn the_packaged_example_config_parses_with_and_without_its_comments() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../packaging/covo-peer.toml");
        let text = std::fs::read_to_string(&path).expect("packaging/covo-peer.toml");
        let c = Config::parse(&text, &path).unwrap_or_else(|e| panic!("{e}"));
        assert!(c.mqtt.is_some(), "the example connects to a broker");
        PeerConfig::from_config(&c).unwrap_or_else(|e| panic!("{e}"));
        let uncommented: String = text
            .lines()
            .map(|l| match l.strip_prefix("# ") {
                Some(rest)
                    if rest.starts_with('[')
                        || rest.split_once(" = ").is_some_and(|(k, _)| {
                            k.chars().all(|c| c.is_ascii_lowercase() || c == '_')
                        }) =>
                {
                    rest
                }
                _ => l,
            })
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(
            uncommented.contains("\nroot = \"/srv/code\"\n"),
            "{uncommented}"
        );
        let c = Config::parse(&uncommented, &path).unwrap_or_else(|e| panic!("{e}\n{uncommented}"));
        let p = PeerConfig::from_config(&c).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.id.as_deref(), Some("cloud"));
        assert!(c.llm.model.is_some(), "[llm] model");
    }
}
