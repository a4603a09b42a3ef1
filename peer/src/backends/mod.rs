//! The peer-side tool backends: what `covo-peer` runs when the gateway forwards a call.
//!
//! Arguments arrive already validated against the tool's parameter schema: by the gateway's
//! pipeline, and again by the server (`crate::validate`) for a request from the broker.
//! A tool is listed by [`Backends::tools`] only when its backend is configured and usable on
//! this machine; nothing is ever faked:
//! - `plot_series`, `web_fetch`: always (pure Rust). `web_fetch` refuses internal addresses
//!   unless `[peer.backends.web_fetch] allow_hosts` lists the host.
//! - `code_run`: when a `sh` exists (Python snippets additionally need `python3`; without it
//!   they fail with a hint). Network isolation is reported per run, never assumed.
//! - `image_generate`, `image_describe`, `tts_synthesize`, `transcribe_audio`: each when
//!   `[peer.backends.openai]` has a `base_url` and that tool's model; `tts_synthesize` also
//!   when `[peer.backends.tts] engine = "espeak-ng"` and `espeak-ng` runs here.
//! - `semantic_memory_store`, `semantic_memory_search`: when `[peer.backends.openai]` has a
//!   `base_url` and an `embedding_model` and the SQLite vector store opens.
//! - `web_search`: when `[peer.backends.web_search]` names a SearXNG instance or a Brave key.
//! - `test_generate`, `subagent_spawn`, `subagent_status`, `subagent_result`: when the peer has
//!   a model (`[llm]` of the peer's config, `COVO_LLM_*` overriding it, as for `covo chat`); the
//!   `subagent_*` tools also need the peer's SQLite store (`$COVO_HOME/covo.db`) to open.
//!
//! - `code_graph`: when built with the `code-graph` feature (a default) and
//!   `[peer.backends.code_graph] root` names an existing directory.
//!
//! A sub-agent's own peer tools run through [`Local`], this process's backends without the
//! `subagent_*` tools (sub-agents do not nest).

use std::sync::Arc;
use std::time::Instant;

use serde_json::Value;

use crate::config::PeerConfig;
use covo::config::Config;
use covo::llm::ChatModel;
use covo_core::error::ToolError;

mod code;
#[cfg(feature = "code-graph")]
mod graph;
mod guard;
mod http;
mod model;
mod openai;
mod plot;
mod search;
mod semantic;
mod subagent;
mod testgen;
mod web;

pub use model::PeerModel;
pub use subagent::{
    DEFAULT_MAX_CONCURRENT, DEFAULT_MAX_STEPS, DEFAULT_TIMEOUT_SECS, DEFAULT_TOOLSETS,
};
pub use testgen::MAX_SOURCE_BYTES;

/// Per-backend settings of the peer, all optional (`[peer.backends]` in the peer's config).
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct BackendsConfig {
    /// `plot_series`: chart size.
    #[serde(default)]
    pub plot_series: PlotConfig,
    /// `web_fetch`: body cap, user agent and the internal hosts it may reach.
    #[serde(default)]
    pub web_fetch: WebFetchConfig,
    /// `code_run`: interpreters and limits.
    #[serde(default)]
    pub code_run: CodeRunConfig,
    /// `web_search`: which search service.
    #[serde(default)]
    pub web_search: WebSearchConfig,
    /// An OpenAI-compatible API for the media tools and embeddings.
    #[serde(default)]
    pub openai: OpenAiConfig,
    /// `tts_synthesize`: the speech engine.
    #[serde(default)]
    pub tts: TtsConfig,
    /// `semantic_memory_*`: where the vectors live.
    #[serde(default)]
    pub semantic_memory: SemanticMemoryConfig,
    /// `subagent_*`: budgets and the default toolsets.
    #[serde(default)]
    pub subagents: SubAgentsConfig,
    /// `code_graph`: the source tree it may read, and its caps.
    #[serde(default)]
    pub code_graph: CodeGraphConfig,
}

/// Settings of `code_graph` (a symbol and call graph of Rust, Python and C sources). Parsed
/// in every build; served only by builds with the `code-graph` feature.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodeGraphConfig {
    /// The source tree (e.g. `/srv/code`); the tool's `path` is relative to it and cannot leave
    /// it. Unset or missing: `code_graph` is not served.
    pub root: Option<std::path::PathBuf>,
    /// At most this many source files are parsed per call (default 5000).
    pub max_files: Option<usize>,
    /// At most this many source bytes are parsed per call (default 20 MiB).
    pub max_total_bytes: Option<u64>,
    /// Larger files are skipped (default 1 MiB).
    pub max_file_bytes: Option<u64>,
    /// At most this many matches are returned (default 200); the result still counts them all.
    pub max_matches: Option<usize>,
}

/// The sub-agents the peer runs for `subagent_spawn` (with the model of the peer's `[llm]`).
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SubAgentsConfig {
    /// Model calls one sub-agent may make (default 12).
    pub max_steps: Option<usize>,
    /// Wall-clock limit of one sub-agent, in seconds (default 600).
    pub timeout_secs: Option<u64>,
    /// Sub-agents running at once (default 4); a spawn beyond is refused.
    pub max_concurrent: Option<usize>,
    /// Toolsets of a sub-agent whose request names none (default `["web", "code_exec"]`).
    pub default_toolsets: Option<Vec<String>>,
    /// The profile whose tools a sub-agent may own at most (default `full`); hardware, voice
    /// and the `subagent_*` tools are always left out.
    pub profile: Option<String>,
}

/// The vector store of `semantic_memory_store` / `semantic_memory_search`.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SemanticMemoryConfig {
    /// The SQLite file (default `$COVO_HOME/peer/vectors.db`, i.e. under the data folder).
    pub store_path: Option<std::path::PathBuf>,
}

/// An OpenAI-compatible API (OpenAI, or a local server such as Ollama or LocalAI). Each tool
/// is served only when `base_url` and its model are set.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OpenAiConfig {
    /// e.g. `https://api.openai.com/v1`.
    pub base_url: Option<String>,
    /// Sent as `Authorization: Bearer`; omitted when unset.
    pub api_key: Option<String>,
    /// `image_generate`.
    pub image_model: Option<String>,
    /// `tts_synthesize` (unless `[peer.backends.tts] engine = "espeak-ng"`).
    pub speech_model: Option<String>,
    /// `transcribe_audio`.
    pub transcription_model: Option<String>,
    /// `image_describe`.
    pub vision_model: Option<String>,
    /// `semantic_memory_store` / `semantic_memory_search`.
    pub embedding_model: Option<String>,
}

/// The speech engine of `tts_synthesize`.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TtsConfig {
    /// `espeak-ng` (local, WAV) or unset for the API's `speech_model`.
    pub engine: Option<String>,
    /// The `espeak-ng` executable (default: on `PATH`).
    pub espeak_path: Option<std::path::PathBuf>,
}

/// Settings of `web_search`: a SearXNG instance (preferred when both are set) or Brave.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebSearchConfig {
    /// Base URL of a SearXNG instance with the `json` output format enabled.
    pub searxng_url: Option<String>,
    /// A Brave Search API key (`X-Subscription-Token`).
    pub brave_api_key: Option<String>,
    /// The Brave endpoint (default `https://api.search.brave.com/res/v1/web/search`).
    pub brave_url: Option<String>,
}

/// Settings of `code_run`.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CodeRunConfig {
    /// The Python interpreter (default `python3` on `PATH`, resolved to the real executable).
    pub python: Option<std::path::PathBuf>,
    /// The shell for shell snippets and the limit wrapper (default `sh` on `PATH`).
    pub shell: Option<std::path::PathBuf>,
    /// Address-space limit per run in MiB (`ulimit -v`; default 512).
    pub memory_mb: Option<u64>,
    /// Cap on each of stdout and stderr in bytes (default 64 KiB).
    pub max_output_bytes: Option<usize>,
    /// Without bwrap: run without network through `unshare -rn` (default: when it works
    /// here). `false` turns that off; results then say `"network": "not isolated"`.
    pub isolate_network: Option<bool>,
    /// Run snippets in a bubblewrap sandbox (default: when `bwrap` works here). `false` turns
    /// it off; every result's `isolation` says what was applied.
    pub sandbox: Option<bool>,
    /// The `bwrap` executable (default `bwrap` on `PATH`).
    pub bwrap: Option<std::path::PathBuf>,
    /// At most this many processes per run, where a pids cgroup is writable (default 64).
    pub max_processes: Option<u64>,
    /// covo's own paths (the config file, `COVO_HOME`), covered inside the sandbox; set by the
    /// peer, not the file.
    #[serde(skip)]
    pub hide: Vec<std::path::PathBuf>,
}

/// Settings of `web_fetch`. Internal addresses (loopback, private, link-local, …) are refused
/// unless their host is in `allow_hosts`.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct WebFetchConfig {
    /// At most this many body bytes are read (default 2 MiB); the rest is dropped and the
    /// result says `truncated`.
    pub max_bytes: Option<u64>,
    /// The `User-Agent` header (default `covo-peer/<version>`).
    pub user_agent: Option<String>,
    /// Hosts that may be fetched although they are (or resolve to) loopback, private,
    /// link-local or other internal addresses, which are refused otherwise: names or address
    /// literals, matched against the URL's host as written (e.g. `["nas.local", "10.0.0.5"]`).
    pub allow_hosts: Option<Vec<String>>,
}

/// Settings of `plot_series`.
#[derive(Debug, Clone, Default, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PlotConfig {
    /// Chart width in pixels (default 800, clamped to 64..=4096).
    pub width: Option<u32>,
    /// Chart height in pixels (default 480, clamped to 64..=4096).
    pub height: Option<u32>,
}

/// The backends that run in this process: every tool but the `subagent_*` ones. It is also
/// what a sub-agent's `runs = "peer"` tools call.
#[derive(Debug)]
struct Local {
    plot: plot::Plot,
    web: web::WebFetch,
    code: code::CodeRun,
    search: search::WebSearch,
    media: openai::Media,
    semantic: Option<semantic::Semantic>,
    tests: Option<testgen::TestGen>,
    #[cfg(feature = "code-graph")]
    graph: Option<graph::CodeGraph>,
}

impl Local {
    fn tools(&self) -> Vec<&'static str> {
        let mut tools = vec![plot::TOOL, web::TOOL];
        if self.code.available() {
            tools.push(code::TOOL);
        }
        if self.search.available() {
            tools.push(search::TOOL);
        }
        tools.extend(self.media.tools());
        if self.semantic.is_some() {
            tools.extend([semantic::STORE, semantic::SEARCH]);
        }
        if self.tests.is_some() {
            tools.push(testgen::TOOL);
        }
        #[cfg(feature = "code-graph")]
        if self.graph.is_some() {
            tools.push(graph::TOOL);
        }
        tools
    }

    fn call(&self, tool: &str, args: Value, deadline: Instant) -> Result<Value, ToolError> {
        match tool {
            plot::TOOL => self.plot.run(&args),
            web::TOOL => self.web.run(&args, deadline),
            code::TOOL => self.code.run(&args, deadline),
            search::TOOL => self.search.run(&args, deadline),
            openai::IMAGE_GENERATE | openai::IMAGE_DESCRIBE | openai::TTS | openai::TRANSCRIBE => {
                self.media.run(tool, &args, deadline)
            }
            semantic::STORE | semantic::SEARCH => match &self.semantic {
                Some(s) => s.run(tool, &args, deadline),
                None => unreachable!("listed only with a store"),
            },
            #[cfg(feature = "code-graph")]
            graph::TOOL => match &self.graph {
                Some(g) => g.run(&args, deadline),
                None => unreachable!("listed only with a root"),
            },
            testgen::TOOL => match &self.tests {
                Some(t) => t.run(&args, deadline),
                None => unreachable!("listed only with a model"),
            },
            _ => unreachable!("tools() lists only implemented backends"),
        }
    }

    /// `call` for a tool `tools()` lists, checked first.
    fn checked(&self, tool: &str, args: Value, deadline: Instant) -> Result<Value, ToolError> {
        check(&self.tools(), tool, deadline)?;
        self.call(tool, args, deadline)
    }
}

impl covo_wire::host::ToolHost for Local {
    fn tools(&self) -> Vec<String> {
        Local::tools(self).into_iter().map(str::to_string).collect()
    }

    fn call(&self, tool: &str, args: Value, deadline: Instant) -> Result<Value, ToolError> {
        self.checked(tool, args, deadline)
    }
}

fn check(tools: &[&str], tool: &str, deadline: Instant) -> Result<(), ToolError> {
    if !tools.contains(&tool) {
        return Err(ToolError::Unavailable {
            tool: tool.to_string(),
            reason: "not implemented on this peer".into(),
        });
    }
    if Instant::now() >= deadline {
        return Err(ToolError::Failed {
            tool: tool.to_string(),
            message: "the deadline passed before the call started".into(),
            hint: Some("retry with a longer timeout".into()),
        });
    }
    Ok(())
}

/// The usable backends of this peer.
#[derive(Debug)]
pub struct Backends {
    local: Arc<Local>,
    agents: Option<subagent::SubAgents>,
}

impl Backends {
    /// Probes what can run here (interpreters, sandboxing) and keeps the usable backends. No
    /// model: `test_generate` and the `subagent_*` tools are not served.
    pub fn from_config(cfg: &BackendsConfig) -> Backends {
        Backends {
            local: Arc::new(Self::local(cfg, None)),
            agents: None,
        }
    }

    /// The peer's backends from its whole config, with `model` (the peer's `[llm]`, see
    /// [`Backends::model_from_config`]) serving `test_generate` and the sub-agents.
    pub fn for_peer(config: &Config, peer: &PeerConfig, model: Option<Arc<PeerModel>>) -> Backends {
        let mut cfg = peer.backends.clone();
        // Nothing the sandbox runs may see covo's own files.
        cfg.code_run.hide.push(config.home_dir());
        cfg.code_run.hide.extend(config.source.clone());
        let cfg = &cfg;
        let local = Arc::new(Self::local(cfg, model.clone()));
        let agents = model.and_then(|m| {
            match subagent::SubAgents::open(config, &cfg.subagents, m, local.clone()) {
                Ok(a) => Some(a),
                Err(e) => {
                    tracing::warn!(error = %e, "the sub-agent store does not open; subagent_* tools are off");
                    None
                }
            }
        });
        Backends { local, agents }
    }

    /// The peer's model from `[llm]` and `COVO_LLM_*` (as `covo chat` resolves it), started on
    /// its own runtime thread; `None` when no model is configured or the client cannot start.
    pub fn model_from_config(
        config: &Config,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Option<Arc<PeerModel>> {
        let provider = covo::llm::Provider::resolve(&config.llm, env)?;
        let name = provider.model.clone();
        let http = match covo::llm::HttpModel::new(provider) {
            Ok(m) => m,
            Err(e) => {
                tracing::warn!(error = %e, "the peer's model client does not start");
                return None;
            }
        };
        let chat: Arc<dyn ChatModel> = Arc::new(http);
        match PeerModel::start(chat, &name) {
            Ok(m) => Some(m),
            Err(e) => {
                tracing::warn!(error = %e, "the peer's model runtime does not start");
                None
            }
        }
    }

    fn local(cfg: &BackendsConfig, model: Option<Arc<PeerModel>>) -> Local {
        #[cfg(not(feature = "code-graph"))]
        if cfg.code_graph.root.is_some() {
            tracing::warn!("code_graph is configured but this build has no code-graph feature");
        }
        Local {
            plot: plot::Plot::new(&cfg.plot_series),
            web: web::WebFetch::new(&cfg.web_fetch),
            code: code::CodeRun::new(&cfg.code_run),
            search: search::WebSearch::new(&cfg.web_search),
            media: openai::Media::new(&cfg.openai, &cfg.tts),
            semantic: semantic::Semantic::new(&cfg.openai, &cfg.semantic_memory),
            tests: model.map(testgen::TestGen::new),
            #[cfg(feature = "code-graph")]
            graph: graph::CodeGraph::new(&cfg.code_graph),
        }
    }

    /// Only tools whose backend is configured and usable here; a tool is never faked.
    pub fn tools(&self) -> Vec<&'static str> {
        let mut tools = self.local.tools();
        if self.agents.is_some() {
            tools.extend([subagent::SPAWN, subagent::STATUS, subagent::RESULT]);
        }
        tools
    }

    /// How many sub-agents are running now.
    pub fn subagents_running(&self) -> usize {
        self.agents.as_ref().map_or(0, |a| a.running())
    }

    /// Runs `tool` with schema-validated `args`, giving up at `deadline`.
    pub fn call(&self, tool: &str, args: Value, deadline: Instant) -> Result<Value, ToolError> {
        check(&self.tools(), tool, deadline)?;
        match (tool, &self.agents) {
            (subagent::SPAWN | subagent::STATUS | subagent::RESULT, Some(a)) => a.run(tool, &args),
            _ => self.local.call(tool, args, deadline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn tools_never_lists_an_unimplemented_tool() {
        let b = Backends::from_config(&BackendsConfig::default());
        for missing in [
            "web_search",
            "image_generate",
            "code_graph",
            "test_generate",
        ] {
            assert!(!b.tools().contains(&missing), "{missing} is listed");
        }
        assert!(b.tools().contains(&"plot_series"));
        assert!(b.tools().contains(&"web_fetch"));
        // `sh` exists on every host these tests run on.
        assert!(b.tools().contains(&"code_run"));
    }

    #[test]
    fn calling_an_unlisted_tool_is_unavailable_not_faked() {
        let b = Backends::from_config(&BackendsConfig::default());
        let err = b
            .call(
                "web_search",
                serde_json::json!({"query": "x"}),
                Instant::now() + Duration::from_secs(5),
            )
            .unwrap_err();
        assert!(matches!(err, ToolError::Unavailable { ref tool, .. } if tool == "web_search"));
    }

    #[test]
    fn a_call_past_its_deadline_fails_without_running() {
        let b = Backends::from_config(&BackendsConfig::default());
        let err = b
            .call(
                "plot_series",
                serde_json::json!({"series": []}),
                Instant::now() - Duration::from_millis(1),
            )
            .unwrap_err();
        assert!(matches!(err, ToolError::Failed { .. }));
    }

    #[test]
    fn configured_backends_are_listed_from_toml() {
        let dir = tempfile::tempdir().unwrap();
        let cfg: BackendsConfig = toml::from_str(&format!(
            "web_search = {{ searxng_url = \"http://127.0.0.1:1\" }}\n\
             openai = {{ base_url = \"http://127.0.0.1:1/v1\", vision_model = \"v\", embedding_model = \"e\" }}\n\
             semantic_memory = {{ store_path = {:?} }}",
            dir.path().join("v.db")
        ))
        .unwrap();
        let tools = Backends::from_config(&cfg).tools();
        for t in [
            "web_search",
            "image_describe",
            "semantic_memory_store",
            "semantic_memory_search",
        ] {
            assert!(tools.contains(&t), "{t} missing from {tools:?}");
        }
        for t in ["image_generate", "tts_synthesize", "transcribe_audio"] {
            assert!(!tools.contains(&t), "{t} listed without its model");
        }
    }

    #[test]
    fn the_readme_peer_model_example_is_a_valid_config() {
        let readme = include_str!("../../../README.md");
        let start = readme
            .find("```toml\n[llm]                             # the peer's model")
            .expect("the README has the peer model example");
        let body = &readme[start + "```toml\n".len()..];
        let body = &body[..body.find("```").unwrap()];
        let c = covo::config::Config::parse(body, std::path::Path::new("README.md")).unwrap();
        let peer = PeerConfig::from_config(&c).unwrap();
        assert_eq!(peer.backends.subagents.max_steps, Some(DEFAULT_MAX_STEPS));
        assert_eq!(
            peer.backends.subagents.max_concurrent,
            Some(DEFAULT_MAX_CONCURRENT)
        );
        assert_eq!(
            peer.backends.subagents.default_toolsets.as_deref(),
            Some(&["web".to_string(), "code_exec".to_string()][..])
        );
        assert!(toml::from_str::<BackendsConfig>("subagents = { max_stepz = 3 }").is_err());
    }

    #[test]
    fn the_readme_web_fetch_example_is_a_valid_config() {
        let readme = include_str!("../../../README.md");
        let start = readme
            .find("```toml\n[peer.backends.web_fetch]")
            .expect("the README has the web_fetch example");
        let body = &readme[start + "```toml\n".len()..];
        let body = &body[..body.find("```").unwrap()];
        let c = covo::config::Config::parse(body, std::path::Path::new("README.md")).unwrap();
        let peer = PeerConfig::from_config(&c).unwrap();
        assert_eq!(
            peer.backends.web_fetch.allow_hosts.as_deref(),
            Some(&["nas.local".to_string(), "10.0.0.5".to_string()][..])
        );
    }

    #[test]
    fn config_rejects_unknown_fields() {
        assert!(toml::from_str::<BackendsConfig>("plot_series = { width = 300 }").is_ok());
        assert!(toml::from_str::<BackendsConfig>("bogus = 1").is_err());
        assert!(toml::from_str::<BackendsConfig>("plot_series = { depth = 3 }").is_err());
    }

    #[test]
    fn code_graph_is_listed_only_with_an_existing_root_and_the_feature() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.py"), "def f():\n    g()\n").unwrap();
        let with_root = |root: &std::path::Path| {
            let cfg: BackendsConfig = toml::from_str(&format!(
                "code_graph = {{ root = {:?}, max_files = 10 }}",
                root
            ))
            .unwrap();
            Backends::from_config(&cfg)
        };
        let missing = with_root(&dir.path().join("nope"));
        assert!(!missing.tools().contains(&"code_graph"));
        let b = with_root(dir.path());
        let deadline = Instant::now() + Duration::from_secs(10);
        #[cfg(feature = "code-graph")]
        {
            assert!(b.tools().contains(&"code_graph"));
            let v = b
                .call(
                    "code_graph",
                    serde_json::json!({"symbol": "g", "query": "callers"}),
                    deadline,
                )
                .unwrap();
            assert_eq!(v["matches"][0]["caller"], "f");
            assert_eq!(v["matches"][0]["line"], 2);
        }
        #[cfg(not(feature = "code-graph"))]
        {
            assert!(!b.tools().contains(&"code_graph"));
            let err = b
                .call("code_graph", serde_json::json!({"symbol": "g"}), deadline)
                .unwrap_err();
            assert!(matches!(err, ToolError::Unavailable { .. }));
        }
        assert!(toml::from_str::<BackendsConfig>("code_graph = { roots = \"/\" }").is_err());
    }
}
