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
    /// The file parses but a value does not make sense (an unknown platform or profile, a
    /// profile or toolset cycle): where it is, in the style of toml's own messages.
    #[error(
        "invalid config {path}: error at line {line}, column {column}\n{excerpt}`{key}`: {message}"
    )]
    Invalid {
        /// The file.
        path: PathBuf,
        /// 1-based line of the offending key or entry.
        line: usize,
        /// 1-based column.
        column: usize,
        /// The key, dotted (`profiles.lab.base`).
        key: String,
        /// What is wrong.
        message: String,
        /// The line of the file with the offending part underlined (may be empty).
        excerpt: String,
    },
    /// The file is not UTF-8.
    #[error(
        "invalid config {path}: not valid UTF-8 at line {line}, column {column} (byte {offset})"
    )]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// 1-based line of the first bad byte.
        line: usize,
        /// 1-based column (in characters) of the first bad byte.
        column: usize,
        /// Byte offset of the first bad byte.
        offset: usize,
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
    /// The most one model call may take, seconds, streamed or not (default 600).
    pub timeout_secs: Option<u64>,
    /// The longest silence while waiting for the answer's first byte or its next streamed chunk,
    /// seconds (default 180: a cold prompt on a Pi-class CPU takes minutes).
    pub idle_timeout_secs: Option<u64>,
    /// Retries on 429/5xx and connection errors (default 3).
    pub max_retries: Option<u32>,
    /// First retry backoff in milliseconds (default 500), doubled per retry.
    pub retry_base_ms: Option<u64>,
    /// Output token limit per call, sent on every provider (default 4096).
    pub max_tokens: Option<u32>,
    /// How tools reach the model and calls come back (default `auto`).
    pub tool_calls: Option<ToolCallMode>,
}

/// How tools reach the model and how its calls come back (`[llm] tool_calls`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolCallMode {
    /// `native`, unless the server turns out to drop the tools: then `constrained` on a
    /// llama.cpp server and `text` elsewhere.
    #[default]
    Auto,
    /// The API's own `tools` and `tool_calls` fields.
    Native,
    /// The tools in the system prompt and the reply held to a JSON schema (llama.cpp's grammar,
    /// Ollama's `format`): an answer, or one call to a tool sent this turn with valid arguments.
    Constrained,
    /// The tools in the system prompt; calls read back from the text (`<tool_call>` and the like).
    Text,
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
    /// The most a conversation's history may hold before a turn, in estimated tokens (about
    /// four bytes each; default 12,000). Older exchanges are dropped whole, oldest first.
    pub history_tokens: Option<usize>,
    /// Tool calls per turn that may fail validation (unknown tool, unreadable or invalid
    /// arguments) and go back to the model to be fixed; one more ends the turn (default 3).
    pub max_repairs: Option<usize>,
}

/// The MQTT link to the cloud peer (`[mqtt]`). Without this section nothing connects.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MqttConfig {
    /// Broker URL, `mqtt://HOST:PORT` (default `mqtt://127.0.0.1:1883`), or `mqtts://HOST:PORT`
    /// for TLS (default port 8883); several, separated by commas, are tried in turn whenever a
    /// connection fails or is lost. `$COVO_MQTT_URL` wins.
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

    /// The broker URL(s) as the log and `covo doctor` show them: each with its secrets masked.
    pub fn url_shown(&self) -> String {
        covo_wire::mqtt::split_urls(&self.url())
            .into_iter()
            .map(crate::secrets::redact_url)
            .collect::<Vec<_>>()
            .join(",")
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
    /// With MQTT or the dashboard on, declared sensors without `sample_interval_secs` are
    /// sampled (and their telemetry published) this often, in seconds (default 60).
    pub telemetry_secs: Option<u64>,
    /// Chat sessions kept in memory at once (default 32). A new session beyond it evicts the
    /// least recently used idle one; when every one is busy it is refused.
    pub max_sessions: Option<usize>,
    /// A chat session unused this long is evicted, in seconds (default 1800). Its conversation
    /// stays in the store; a later message on it starts a new one.
    pub session_idle_secs: Option<u64>,
}

/// `[mcp]`: covo as an MCP server (`covo mcp` serves over stdio; `covo run` also serves
/// streamable HTTP when `bind` is set), and the external MCP servers whose tools covo owns
/// (`[mcp.servers.NAME]`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// `covo run` serves MCP over streamable HTTP at `http://BIND/mcp` (e.g. `127.0.0.1:8765`);
    /// default off. Anything but a loopback address needs `token`.
    pub bind: Option<String>,
    /// The bearer token HTTP clients must send (`Authorization: Bearer TOKEN`); `$COVO_MCP_TOKEN`
    /// overrides it.
    pub token: Option<String>,
    /// Browser origins (`https://app.example.com:443`, `http://localhost:*`) whose pages may call
    /// the HTTP endpoint. A request carrying any other `Origin` is refused (403), as the MCP
    /// transport requires of servers; requests without one (MCP clients are not browsers) pass.
    pub allowed_origins: Vec<String>,
    /// Destructive tools (names or wildcards) MCP clients may run without being asked through
    /// elicitation. Any other destructive call is confirmed by the client's user, or refused
    /// when the client cannot ask.
    pub approve: Vec<String>,
    /// The profile whose tools MCP clients may use (default `edge`).
    pub profile: Option<String>,
    /// The toolsets whose tools are listed (default: the `gateway` platform's); the rest of the
    /// profile is found through `tool_search` and called through `tool_call`.
    pub toolset: Vec<String>,
    /// External MCP servers by name (`[a-z0-9_-]`, no `__`): their tools become `NAME__tool`
    /// in the basic toolset `mcp_NAME`.
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `[store]`: how much of the growing tables the database keeps. Each table is pruned by age
/// and by row count, whichever bites first, in small batches while `covo run` runs (and by
/// `covo store prune`). `0` turns a limit off.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StoreConfig {
    /// Days of sensor readings kept (default 400).
    pub readings_days: Option<u64>,
    /// Sensor reading rows kept (default 2,200,000: a year of 4 quantities a minute).
    pub readings_rows: Option<u64>,
    /// Days of audit-log entries kept (default 90).
    pub audit_days: Option<u64>,
    /// Audit-log rows kept (default 200,000).
    pub audit_rows: Option<u64>,
    /// Days of conversation turns kept (default 180).
    pub turns_days: Option<u64>,
    /// Conversation turns kept (default 50,000).
    pub turns_rows: Option<u64>,
    /// How often `covo run` prunes, in seconds (default 600).
    pub prune_every_secs: Option<u64>,
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

/// `[voice]`: the speaker and microphone of `voice_say` and `voice_record`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VoiceConfig {
    /// The ALSA device (`aplay -L` lists them; default `default`). `null` is ALSA's silent
    /// device: recordings of silence, playback to nowhere.
    pub device: Option<String>,
    /// Where `voice_say` speaks: `speaker` (the default) or `artifact` (a WAV file returned
    /// as an artifact, for a board without a speaker).
    pub say_to: Option<String>,
}

/// `[camera]`: how `camera_snapshot` captures a still.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CameraConfig {
    /// The capture command as a list of arguments, with `{output}`, `{width}`, `{height}` and
    /// `{device}` filled in; it must write a PNG or JPEG to `{output}`. Default: `rpicam-still`
    /// on a Pi camera, else `ffmpeg` from the first `/dev/video*`.
    pub command: Option<Vec<String>>,
}

/// `[telegram]`: chat with the agent from Telegram (`covo run`, cargo feature `telegram`). The
/// bot token comes from `$COVO_TELEGRAM_TOKEN` only, never from this file.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TelegramConfig {
    /// The Bot API base URL (default `https://api.telegram.org`; tests point it at a fake).
    pub api_base: Option<String>,
    /// Telegram user or chat ids whose messages reach the agent (paired users are added by
    /// `covo telegram pair CODE`).
    #[serde(default)]
    pub allow: Vec<i64>,
    /// User ids that may also answer other users' approval buttons.
    #[serde(default)]
    pub admins: Vec<i64>,
    /// Ask on Telegram before any `actuate` call too, not only destructive ones (default false).
    #[serde(default)]
    pub confirm_actuate: bool,
    /// Seconds an approval waits for a button press before it is denied (default 120).
    pub approval_timeout_secs: Option<u64>,
    /// Seconds one `getUpdates` long poll waits for news (default 30).
    pub poll_timeout_secs: Option<u64>,
    /// The least time between two edits of a streaming answer, in milliseconds (default 1000).
    pub edit_every_ms: Option<u64>,
}

/// One external MCP server (`[mcp.servers.NAME]`): a command run as a child process over
/// stdio, or a streamable HTTP `url`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run (stdio transport).
    pub command: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables added to covo's for the program.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory (default: covo's).
    pub cwd: Option<PathBuf>,
    /// The server's streamable HTTP endpoint (instead of `command`).
    pub url: Option<String>,
    /// HTTP headers sent with every request to `url` (`Authorization = "Bearer …"`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// A call's deadline in seconds (default 30), from when the server is ready; its start
    /// may take this long and at least 30 s.
    pub timeout_secs: Option<u64>,
    /// The most text a call returns to the model, in bytes (default 65536); more is cut and
    /// marked `truncated`.
    pub max_output_bytes: Option<usize>,
}

impl McpServerConfig {
    /// The call deadline.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs.unwrap_or(30))
    }

    /// The output cap in bytes.
    pub fn max_output_bytes(&self) -> usize {
        self.max_output_bytes.unwrap_or(64 * 1024)
    }
}

/// What is wrong with an MCP server's name or table, if anything.
pub fn mcp_server_problem(name: &str, s: &McpServerConfig) -> Option<(&'static str, String)> {
    if name.is_empty()
        || name.len() > 32
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
        || name.contains("__")
    {
        return Some((
            "",
            format!("MCP server name '{name}': use 1 to 32 of a-z, 0-9, _ and -, without '__'"),
        ));
    }
    match (&s.command, &s.url) {
        (Some(_), Some(_)) => {
            return Some((
                "url",
                "give either `command` (stdio) or `url` (HTTP), not both".into(),
            ))
        }
        (None, None) => {
            return Some((
                "",
                "give `command` (stdio) or `url` (streamable HTTP)".into(),
            ))
        }
        (Some(c), None) if c.trim().is_empty() => {
            return Some(("command", "`command` is empty".into()))
        }
        (Some(_), None) if !s.headers.is_empty() => {
            return Some(("headers", "`headers` go with `url`, not `command`".into()))
        }
        (None, Some(u)) if !(u.starts_with("http://") || u.starts_with("https://")) => {
            return Some(("url", "`url` must start with http:// or https://".into()))
        }
        (None, Some(_)) if !s.args.is_empty() || !s.env.is_empty() || s.cwd.is_some() => {
            return Some((
                "url",
                "`args`, `env` and `cwd` go with `command`, not `url`".into(),
            ))
        }
        _ => {}
    }
    if matches!(s.timeout_secs, Some(0) | Some(3601..)) {
        return Some(("timeout_secs", "between 1 and 3600 seconds".into()));
    }
    if matches!(s.max_output_bytes, Some(0..=255) | Some(16_777_217..)) {
        return Some(("max_output_bytes", "between 256 and 16777216 bytes".into()));
    }
    None
}

/// `[web]`: the dashboard `covo run` serves (cargo feature `web`).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WebConfig {
    /// The address and port to listen on (`127.0.0.1:8080`); unset, no dashboard.
    pub bind: Option<String>,
    /// The token every page and API call needs (else `$COVO_WEB_TOKEN`). Required when `bind`
    /// is not a loopback address; `covo run` refuses to start without one then.
    pub token: Option<String>,
    /// Dashboard chat sessions (one per browser) held at once (default 8).
    pub max_sessions: Option<usize>,
    /// Live event streams (open dashboard pages) at once (default 16).
    pub max_streams: Option<usize>,
    /// How long a destructive call waits on the dashboard for Approve or Deny, in seconds
    /// (default 120); no answer declines it.
    pub approval_secs: Option<u64>,
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
    /// The speaker and microphone.
    #[serde(default)]
    pub voice: VoiceConfig,
    /// The camera.
    #[serde(default)]
    pub camera: CameraConfig,
    /// Retention of the growing tables.
    #[serde(default)]
    pub store: StoreConfig,
    /// `[mcp]`: covo as an MCP server (`covo mcp`, `covo run`'s streamable HTTP endpoint) and
    /// external MCP servers as tools (`[mcp.servers.NAME]`).
    #[serde(default)]
    pub mcp: McpConfig,
    /// Telegram chat; `None` means no bot.
    pub telegram: Option<TelegramConfig>,
    /// The web dashboard.
    #[serde(default)]
    pub web: WebConfig,
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
        c.check().map_err(|(at, key, message)| {
            let span = locate(text, &at);
            let (line, column) = line_col(text, span.start);
            ConfigError::Invalid {
                path: path.to_path_buf(),
                line,
                column,
                key,
                message,
                excerpt: excerpt(text, span),
            }
        })?;
        Ok(c)
    }

    /// What the schema cannot check: the platform and the profile are known, and every user
    /// profile and toolset resolves against the catalog (no cycle, unknown name or dead
    /// pattern), whether in use or not. An error is where it is (a path into the document),
    /// the dotted key, and the message.
    fn check(&self) -> Result<(), (Vec<Seg>, String, String)> {
        use covo_core::profile::{self as prof, ProfileError};
        use covo_core::toolset::{ToolsetError, Toolsets, PLATFORM_DEFAULTS};
        let key = |k: &str| Seg::Key(k.to_string());
        let dotted = |path: &[Seg]| {
            path.iter()
                .filter_map(|s| match s {
                    Seg::Key(k) => Some(k.as_str()),
                    Seg::Index(_) => None,
                })
                .collect::<Vec<_>>()
                .join(".")
        };
        let fail = |path: Vec<Seg>, message: String| Err((path.clone(), dotted(&path), message));
        let catalog: Vec<&'static covo_core::spec::ToolSpec> = covo_core::catalog::all().collect();
        let index_of = |list: &[String], item: &str| list.iter().position(|x| x == item);
        let servers: Vec<String> = self.mcp.servers.keys().cloned().collect();
        for (name, server) in &self.mcp.servers {
            if let Some((field, message)) = mcp_server_problem(name, server) {
                let mut path = vec![key("mcp"), key("servers"), key(name)];
                if !field.is_empty() {
                    path.push(key(field));
                }
                return fail(path, message);
            }
        }

        if let Some(p) = &self.platform {
            let builtin = PLATFORM_DEFAULTS.iter().any(|(name, _)| name == p);
            if !builtin && !self.platforms.contains_key(p) {
                let known: Vec<&str> = PLATFORM_DEFAULTS
                    .iter()
                    .map(|(name, _)| *name)
                    .chain(self.platforms.keys().map(String::as_str))
                    .collect();
                return fail(
                    vec![key("platform")],
                    format!(
                        "unknown platform '{p}' (known: {}; define your own under [platforms])",
                        known.join(", ")
                    ),
                );
            }
        }

        let is_profile =
            |name: &str| prof::BUILTIN.contains(&name) || self.profiles.contains_key(name);
        if let Some(p) = &self.profile {
            if !is_profile(p) {
                let e = prof::resolve_with(&catalog, p, &self.profiles, &servers).err();
                return fail(
                    vec![key("profile")],
                    e.map_or_else(|| format!("unknown profile '{p}'"), |e| e.to_string()),
                );
            }
        }
        for (name, cfg) in &self.profiles {
            let here = |rest: &[Seg]| {
                let mut p = vec![key("profiles"), key(name)];
                p.extend_from_slice(rest);
                p
            };
            if let Some(base) = cfg.base.as_deref().filter(|b| !is_profile(b)) {
                let e = prof::resolve_with(&catalog, base, &self.profiles, &servers).err();
                return fail(
                    here(&[key("base")]),
                    e.map_or_else(|| format!("unknown profile '{base}'"), |e| e.to_string()),
                );
            }
            match prof::resolve_with(&catalog, name, &self.profiles, &servers) {
                Ok(_) => {}
                Err(e @ ProfileError::Cycle(_)) => {
                    // The chain ends with the name that repeats: its `base` starts the loop.
                    let ProfileError::Cycle(chain) = &e else {
                        unreachable!()
                    };
                    let at = chain.last().cloned().unwrap_or_else(|| name.clone());
                    return fail(vec![key("profiles"), key(&at), key("base")], e.to_string());
                }
                Err(e @ ProfileError::NoMatch { .. }) => {
                    let ProfileError::NoMatch { profile, pattern } = &e else {
                        unreachable!()
                    };
                    let cfg = self.profiles.get(profile).unwrap_or(cfg);
                    let path = match index_of(&cfg.allow, pattern) {
                        Some(i) => vec![key("profiles"), key(profile), key("allow"), Seg::Index(i)],
                        None => vec![
                            key("profiles"),
                            key(profile),
                            key("deny"),
                            Seg::Index(index_of(&cfg.deny, pattern).unwrap_or(0)),
                        ],
                    };
                    return fail(path, e.to_string());
                }
                Err(e) => return fail(here(&[]), e.to_string()),
            }
        }

        let toolsets = match Toolsets::new_with(&catalog, &self.toolsets, &servers) {
            Ok(t) => t,
            Err(e) => {
                let path = match &e {
                    ToolsetError::Redefined(name) => vec![key("toolsets"), key(name)],
                    ToolsetError::UnknownTool { toolset, tool } => vec![
                        key("toolsets"),
                        key(toolset),
                        key("tools"),
                        Seg::Index(
                            self.toolsets
                                .get(toolset)
                                .and_then(|t| index_of(&t.tools, tool))
                                .unwrap_or(0),
                        ),
                    ],
                    _ => vec![key("toolsets")],
                };
                return fail(path, e.to_string());
            }
        };
        for (name, cfg) in &self.toolsets {
            if let Some(i) = cfg.includes.iter().position(|n| toolsets.get(n).is_none()) {
                let e = ToolsetError::Unknown {
                    name: cfg.includes[i].clone(),
                    path: name.clone(),
                };
                return fail(
                    vec![key("toolsets"), key(name), key("includes"), Seg::Index(i)],
                    e.to_string(),
                );
            }
        }
        if let Err(e) = toolsets.validate() {
            let path = match &e {
                // `a -> b -> a`: a's include of b starts the loop.
                ToolsetError::Cycle(cycle) if cycle.len() >= 2 => {
                    let (from, to) = (&cycle[0], &cycle[1]);
                    let i = self
                        .toolsets
                        .get(from)
                        .and_then(|t| index_of(&t.includes, to))
                        .unwrap_or(0);
                    vec![key("toolsets"), key(from), key("includes"), Seg::Index(i)]
                }
                _ => vec![key("toolsets")],
            };
            return fail(path, e.to_string());
        }
        Ok(())
    }

    /// Reads one file.
    pub fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let bytes = std::fs::read(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = String::from_utf8(bytes).map_err(|e| {
            let offset = e.utf8_error().valid_up_to();
            let valid = String::from_utf8_lossy(&e.as_bytes()[..offset]);
            let (line, column) = line_col(&valid, offset);
            ConfigError::NotUtf8 {
                path: path.to_path_buf(),
                line,
                column,
                offset,
            }
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

/// One step of a path into the TOML document.
#[derive(Debug, Clone)]
enum Seg {
    /// A key of a table.
    Key(String),
    /// An element of an array.
    Index(usize),
}

/// The span of what `path` leads to: a table's key (for a table, so its header), else the
/// value or the array element. When the path stops early, the deepest thing found; the start of
/// the file when nothing is.
fn locate(text: &str, path: &[Seg]) -> std::ops::Range<usize> {
    use toml::de::{DeTable, DeValue};
    let Ok(root) = DeTable::parse(text) else {
        return 0..0;
    };
    let whole = DeValue::Table(root.get_ref().clone());
    let mut value = &whole;
    let mut best = 0..0;
    for seg in path {
        match (seg, value) {
            (Seg::Key(key), DeValue::Table(t)) => {
                let Some((k, v)) = t.iter().find(|(k, _)| k.get_ref() == key) else {
                    break;
                };
                best = match v.get_ref() {
                    DeValue::Table(_) | DeValue::Array(_) => k.span(),
                    _ => v.span(),
                };
                value = v.get_ref();
            }
            (Seg::Index(i), DeValue::Array(a)) => {
                let Some(v) = a.get(*i) else {
                    break;
                };
                best = v.span();
                value = v.get_ref();
            }
            _ => break,
        }
    }
    best
}

/// 1-based line and column (in characters) of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

/// The line holding `span`, with the span underlined, as toml shows its errors.
fn excerpt(text: &str, span: std::ops::Range<usize>) -> String {
    let (line, column) = line_col(text, span.start);
    let Some(content) = text.split('\n').nth(line - 1) else {
        return String::new();
    };
    let content = content.trim_end_matches('\r');
    let gutter = " ".repeat(line.to_string().len());
    let rest = content.chars().count().saturating_sub(column - 1);
    let width = text
        .get(span.clone())
        .map_or(1, |s| s.lines().next().unwrap_or("").chars().count())
        .clamp(1, rest.max(1));
    format!(
        "{gutter} |\n{line} | {content}\n{gutter} | {}{}\n",
        " ".repeat(column - 1),
        "^".repeat(width)
    )
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
    fn the_readme_mcp_example_is_a_valid_config() {
        let readme = include_str!("../../README.md");
        let section = &readme[readme.find("## Add an MCP server").unwrap()..];
        let body = &section[section.find("```toml\n").unwrap() + "```toml\n".len()..];
        let body = &body[..body.find("```").unwrap()];
        let c = Config::parse(body, Path::new("README.md")).unwrap();
        assert_eq!(c.mcp.servers.len(), 3);
        assert!(c.mcp.servers["notes"].url.is_some());
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

    /// The error for `text` as shown, checked to name the file, `line N` and `key`.
    fn refused(text: &str, line: usize, key: &str) -> String {
        let msg = Config::parse(text, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(msg.contains("x.toml"), "{msg}");
        assert!(msg.contains(&format!("line {line},")), "line {line}: {msg}");
        assert!(msg.contains(key), "names `{key}`: {msg}");
        msg
    }

    #[test]
    fn an_unknown_platform_is_an_error_at_its_line() {
        let msg = refused(
            "profile = \"edge\"\nplatform = \"nonexistent\"\n",
            2,
            "`platform`",
        );
        assert!(msg.contains("unknown platform 'nonexistent'"), "{msg}");
        assert!(
            msg.contains("gateway, code, minimal"),
            "lists the known: {msg}"
        );
        for ok in ["gateway", "code", "minimal"] {
            Config::parse(&format!("platform = \"{ok}\"\n"), Path::new("x.toml")).unwrap();
        }
        // A platform of the user's own is known once [platforms] gives its toolsets.
        let c = Config::parse(
            "platform = \"kiosk\"\n[platforms]\nkiosk = [\"core\"]\n",
            Path::new("x.toml"),
        )
        .unwrap();
        assert_eq!(c.platform.as_deref(), Some("kiosk"));
    }

    #[test]
    fn an_unknown_profile_is_an_error_at_its_line() {
        let msg = refused("# mine\n\nprofile = \"nope\"\n", 3, "`profile`");
        assert!(msg.contains("unknown profile 'nope'"), "{msg}");
        // And an unknown base, at the base.
        let msg = refused(
            "profile = \"lab\"\n[profiles.lab]\nallow = [\"mqtt_*\"]\nbase = \"edgy\"\n",
            4,
            "`profiles.lab.base`",
        );
        assert!(msg.contains("unknown profile 'edgy'"), "{msg}");
    }

    #[test]
    fn a_profile_cycle_is_an_error_at_the_base_that_starts_it() {
        let text = "profile = \"x\"\n\n[profiles.x]\nbase = \"y\"\n\n[profiles.y]\nbase = \"x\"\n";
        let msg = refused(text, 4, "`profiles.x.base`");
        assert!(msg.contains("profile cycle: x -> y -> x"), "{msg}");
        // Even when no profile in the loop is the one in use.
        let msg = refused(&text.replace("profile = \"x\"", ""), 4, "`profiles.x.base`");
        assert!(msg.contains("profile cycle"), "{msg}");
    }

    #[test]
    fn a_toolset_cycle_is_an_error_at_the_include_that_starts_it() {
        let text = "[toolsets.a]\ntools = [\"gpio_read\"]\nincludes = [\n  \"gpio\",\n  \"b\",\n]\n[toolsets.b]\nincludes = [\"a\"]\n";
        let msg = refused(text, 5, "`toolsets.a.includes`");
        assert!(msg.contains("toolset cycle: a -> b -> a"), "{msg}");
        // Unknown includes and tools, and redefined built-ins, are placed the same way.
        refused(
            "[toolsets.a]\nincludes = [\"nope\"]\n",
            2,
            "`toolsets.a.includes`",
        );
        refused(
            "[toolsets.a]\ntools = [\"gpio_reed\"]\n",
            2,
            "`toolsets.a.tools`",
        );
        refused(
            "\n[toolsets.edge]\ntools = [\"gpio_read\"]\n",
            2,
            "`toolsets.edge`",
        );
    }

    #[test]
    fn mcp_servers_are_checked_and_their_tools_may_be_named_before_they_are_known() {
        let c = Config::parse(
            "profile = \"lab\"\n[profiles.lab]\nbase = \"edge\"\nallow = [\"time__*\"]\n\
             [toolsets.clock]\nincludes = [\"mcp_time\"]\n\
             [mcp.servers.time]\ncommand = \"python3\"\nargs = [\"-m\", \"mcp_server_time\"]\n",
            Path::new("x.toml"),
        )
        .unwrap();
        assert_eq!(c.mcp.servers["time"].args, ["-m", "mcp_server_time"]);
        assert_eq!(c.mcp.servers["time"].timeout().as_secs(), 30);
        let msg = refused(
            "[mcp.servers.a__b]\ncommand = \"x\"\n",
            1,
            "`mcp.servers.a__b`",
        );
        assert!(msg.contains("without '__'"), "{msg}");
        refused(
            "[mcp.servers.t]\ncommand = \"x\"\nurl = \"http://h/mcp\"\n",
            3,
            "`mcp.servers.t.url`",
        );
        refused("[mcp.servers.t]\nargs = [\"x\"]\n", 1, "`mcp.servers.t`");
        refused(
            "[mcp.servers.t]\ncommand = \"x\"\ntimeout_secs = 0\n",
            3,
            "`mcp.servers.t.timeout_secs`",
        );
    }

    #[test]
    fn a_dead_pattern_in_a_profile_is_an_error_at_its_line() {
        refused(
            "[profiles.t]\nbase = \"edge\"\ndeny = [\"i2c_write\", \"gpoi_*\"]\n",
            3,
            "`profiles.t.deny`",
        );
    }

    #[test]
    fn a_file_that_is_not_utf8_names_the_line_and_the_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("covo.toml");
        std::fs::write(&path, b"profile = \"edge\"\nboard = \"b\xffd\"\n").unwrap();
        let msg = Config::from_file(&path).unwrap_err().to_string();
        assert!(msg.contains(&path.display().to_string()), "{msg}");
        assert!(msg.contains("line 2, column 11"), "{msg}");
        assert!(msg.contains("byte 27"), "{msg}");
        assert!(msg.contains("UTF-8"), "{msg}");
    }
}
