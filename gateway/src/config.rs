//! `covo.toml`: read from `--config FILE`, then `$COVO_CONFIG`, then `./covo.toml`, then the
//! built-in defaults. Unknown keys are errors, so a typo never silently changes behaviour.

pub use covo_core::profile::ProfileConfig;
pub use covo_core::toolset::ToolsetConfig;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Errors loading the configuration.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid for this schema; the message names the line and the key.
    #[error("invalid config {path}: {message}")]
    Parse {
        /// The file.
        path: PathBuf,
        /// toml's message, with line, column and what was expected.
        message: String,
    },
}

/// Gateway-wide policy switches that do not depend on the board.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// Refuse every tool whose effect is not `read`.
    #[serde(default)]
    pub read_only: bool,
}

/// The file tools' sandbox.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    /// Folders the `fs_*` tools may touch (default: `$COVO_HOME/workspace`).
    #[serde(default)]
    pub roots: Vec<PathBuf>,
}

/// The model provider. Environment variables override every field (see `llm::Provider`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LlmConfig {
    /// `openai` (any OpenAI-compatible server) or `anthropic`.
    pub provider: Option<ProviderKind>,
    /// Base URL, e.g. `http://localhost:11434/v1` for Ollama.
    pub base_url: Option<String>,
    /// Model name; without one, covo runs with no model.
    pub model: Option<String>,
    /// API key (prefer the environment).
    pub api_key: Option<String>,
    /// Whole-request timeout in seconds (default 120).
    pub timeout_secs: Option<u64>,
    /// Retries on 429/5xx and connection errors (default 3).
    pub max_retries: Option<u32>,
    /// First retry backoff in milliseconds (default 500), doubled per retry.
    pub retry_base_ms: Option<u64>,
    /// Output token limit per call (default 4096).
    pub max_tokens: Option<u32>,
}

/// The provider wire format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI-compatible Chat Completions.
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// The agent loop.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// Model calls allowed per user turn (default 16).
    pub max_steps: Option<usize>,
    /// Replaces the built-in system prompt.
    pub system_prompt: Option<String>,
    /// How often due schedules are checked, in seconds (default 15).
    pub schedule_poll_secs: Option<u64>,
}

/// The MQTT link to the cloud peer (`[mqtt]`). Without this section nothing connects.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// Broker URL, `mqtt://HOST:PORT` (default `mqtt://127.0.0.1:1883`), or `mqtts://HOST:PORT`
    /// for TLS (default port 8883); `$COVO_MQTT_URL` wins.
    pub url: Option<String>,
    /// User name for the broker's password authentication.
    pub username: Option<String>,
    /// Password for `username`; `$COVO_MQTT_PASSWORD` wins (keep secrets out of the file).
    pub password: Option<String>,
    /// With `mqtts://`: PEM file of the CA(s) that signed the broker's certificate. Default:
    /// the system's trusted roots.
    pub ca_file: Option<PathBuf>,
    /// With `mqtts://`: PEM client certificate chain, for brokers that require one.
    pub client_cert_file: Option<PathBuf>,
    /// With `mqtts://`: PEM private key of `client_cert_file`.
    pub client_key_file: Option<PathBuf>,
    /// This gateway's id in topics (default: the host name).
    pub gateway_id: Option<String>,
    /// Topic prefix (default `covo`).
    pub prefix: Option<String>,
    /// How long a peer call waits for its answer, in milliseconds (default 30000).
    pub call_timeout_ms: Option<u64>,
    /// Topic filters `mqtt_publish` may publish to (`+`/`#` wildcards); empty allows nothing.
    #[serde(default)]
    pub publish_allow: Vec<String>,
}

impl MqttConfig {
    /// The broker URL: `$COVO_MQTT_URL`, else `url`, else `mqtt://127.0.0.1:1883`.
    pub fn url(&self) -> String {
        std::env::var("COVO_MQTT_URL")
            .ok()
            .filter(|v| !v.is_empty())
            .or_else(|| self.url.clone())
            .unwrap_or_else(|| "mqtt://127.0.0.1:1883".into())
    }

    /// How to authenticate and encrypt: credentials (`$COVO_MQTT_PASSWORD` wins) and TLS files.
    pub fn auth(&self) -> covo_wire::mqtt::BrokerAuth {
        covo_wire::mqtt::BrokerAuth {
            username: self.username.clone(),
            password: std::env::var("COVO_MQTT_PASSWORD")
                .ok()
                .filter(|v| !v.is_empty())
                .or_else(|| self.password.clone()),
            ca_file: self.ca_file.clone(),
            client_cert_file: self.client_cert_file.clone(),
            client_key_file: self.client_key_file.clone(),
        }
    }

    /// The topic prefix.
    pub fn prefix(&self) -> String {
        self.prefix.clone().unwrap_or_else(|| "covo".into())
    }

    /// The gateway id: `gateway_id`, else the host name, else `gateway`.
    pub fn gateway_id(&self) -> String {
        self.gateway_id.clone().unwrap_or_else(host_name)
    }
}

/// The host name, made safe for a topic level (`gateway` when unknown).
pub fn host_name() -> String {
    let h = std::fs::read_to_string("/etc/hostname").unwrap_or_default();
    let h: String = h
        .trim()
        .chars()
        .filter(|c| !matches!(c, '/' | '+' | '#' | '$') && !c.is_whitespace())
        .collect();
    if h.is_empty() {
        "gateway".into()
    } else {
        h
    }
}

/// `covo run` (`[run]`): the gateway daemon.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RunConfig {
    /// Approve destructive tools asked for over MQTT chat (default `false`: nobody is there to
    /// ask, so they are declined).
    #[serde(default)]
    pub approve: bool,
    /// With MQTT on, declared sensors without `sample_interval_secs` are sampled (and their
    /// telemetry published) this often, in seconds (default 60).
    pub telemetry_secs: Option<u64>,
}

/// `[swarm]`: what this gateway lets other gateways on the broker call (`swarm_call`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SwarmConfig {
    /// Whether `covo run` answers swarm calls at all (default `true` when `[mqtt]` is set).
    pub serve: Option<bool>,
    /// Tool names or globs (`sensor_*`) other gateways may call here. Default: the `read`
    /// tools of the hardware toolsets (board, sensors, gpio, i2c, mcu); never files, memories
    /// or conversations. Calls still pass this gateway's whole pipeline: schema,
    /// board policy, approval. `swarm_*` and `tool_call` are never served.
    pub expose: Option<Vec<String>>,
}

/// `[notify]`: where `notify` sends alerts besides the MQTT topic.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct NotifyConfig {
    /// A URL that receives each alert as a JSON POST.
    pub webhook: Option<String>,
}

/// The whole configuration.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The profile (default `full` for the CLI).
    pub profile: Option<String>,
    /// The platform whose default toolsets apply (default `gateway` for chat).
    pub platform: Option<String>,
    /// Data folder; overrides `$COVO_HOME`.
    pub home: Option<PathBuf>,
    /// The board: a path to a board TOML file, or `sim` (the default).
    pub board: Option<String>,
    /// User profiles.
    #[serde(default)]
    pub profiles: BTreeMap<String, ProfileConfig>,
    /// User toolsets.
    #[serde(default)]
    pub toolsets: BTreeMap<String, ToolsetConfig>,
    /// Per-platform default toolsets, overriding the built-in ones.
    #[serde(default)]
    pub platforms: BTreeMap<String, Vec<String>>,
    /// Gateway-wide policy.
    #[serde(default)]
    pub policy: PolicyConfig,
    /// The file tools' sandbox.
    #[serde(default)]
    pub fs: FsConfig,
    /// The model provider.
    #[serde(default)]
    pub llm: LlmConfig,
    /// The agent loop.
    #[serde(default)]
    pub agent: AgentConfig,
    /// The MQTT link to the cloud peer; `None` means no link.
    pub mqtt: Option<MqttConfig>,
    /// `[peer]`: read by `covo-peer` (its `PeerConfig`), which checks its keys. The gateway
    /// never interprets it, so it carries none of the peer's configuration types.
    #[serde(default)]
    pub peer: toml::Table,
    /// `covo run`.
    #[serde(default)]
    pub run: RunConfig,
    /// The `notify` tool's channels.
    #[serde(default)]
    pub notify: NotifyConfig,
    /// What other gateways may call here.
    #[serde(default)]
    pub swarm: SwarmConfig,
    /// Where the configuration came from, if a file.
    #[serde(skip)]
    pub source: Option<PathBuf>,
}

impl Config {
    /// Parses configuration text; `path` is used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Config, ConfigError> {
        let mut c: Config = toml::from_str(text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.to_string(),
        })?;
        c.source = Some(path.to_path_buf());
        Ok(c)
    }

    /// Reads one file.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text, path)
    }

    /// Loads with the documented precedence: `explicit`, `$COVO_CONFIG`, `./covo.toml`, defaults.
    pub fn load(explicit: Option<&Path>) -> Result<Config, ConfigError> {
        if let Some(p) = explicit {
            return Self::from_file(p);
        }
        if let Some(p) = std::env::var_os("COVO_CONFIG").filter(|v| !v.is_empty()) {
            return Self::from_file(Path::new(&p));
        }
        let local = Path::new("covo.toml");
        if local.is_file() {
            return Self::from_file(local);
        }
        Ok(Config::default())
    }

    /// The data folder: `home` from the file, else `$COVO_HOME`, else `~/.local/share/covo`.
    pub fn home_dir(&self) -> PathBuf {
        if let Some(h) = &self.home {
            return h.clone();
        }
        if let Some(h) = std::env::var_os("COVO_HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(h);
        }
        if let Some(d) = std::env::var_os("XDG_DATA_HOME").filter(|v| !v.is_empty()) {
            return PathBuf::from(d).join("covo");
        }
        let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
        PathBuf::from(home).join(".local/share/covo")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_profiles_and_toolsets_parse() {
        let c = Config::parse(
            r#"
            profile = "lab"
            [profiles.lab]
            base = "edge"
            allow = ["mqtt_*"]
            deny = ["i2c_write"]
            [toolsets.bench]
            tools = ["sensor_read"]
            includes = ["gpio"]
            "#,
            Path::new("covo.toml"),
        )
        .unwrap();
        assert_eq!(c.profiles["lab"].base.as_deref(), Some("edge"));
        assert_eq!(c.toolsets["bench"].includes, vec!["gpio"]);
    }

    #[test]
    fn the_readme_configuration_example_is_a_valid_config() {
        let readme = include_str!("../../README.md");
        let start = readme
            .find("```toml\nprofile =")
            .expect("the README has a covo.toml example");
        let body = &readme[start + "```toml\n".len()..];
        let body = &body[..body.find("```").unwrap()];
        let c = Config::parse(body, Path::new("README.md")).unwrap();
        assert_eq!(c.profiles["greenhouse"].base.as_deref(), Some("edge"));
        assert_eq!(c.board.as_deref(), Some("boards/rpi4.toml"));
    }

    #[test]
    fn an_unknown_key_is_an_error_that_names_the_line() {
        let err =
            Config::parse("profile = \"edge\"\nprofle = 1\n", Path::new("x.toml")).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("x.toml"), "{msg}");
        assert!(msg.contains("line 2"), "{msg}");
        assert!(msg.contains("profle"), "{msg}");
    }
}
