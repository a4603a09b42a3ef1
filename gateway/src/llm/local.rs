//! Model servers on this machine, found when no model is configured: Ollama (11434) and
//! llama.cpp's server (8080), or whatever `$COVO_LLM_LOCAL` lists (`host:port,…`).

use std::time::Duration;

/// The addresses tried unless `$COVO_LLM_LOCAL` says otherwise.
pub const DEFAULT_ADDRS: &str = "127.0.0.1:11434,127.0.0.1:8080";

/// A model server that answered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// `Ollama`, `llama.cpp` or `OpenAI-compatible`.
    pub kind: &'static str,
    /// The base URL to configure (`…/v1`).
    pub base_url: String,
    /// The models it offers, as it names them.
    pub models: Vec<String>,
}

impl Found {
    /// The settings that use it.
    pub fn settings(&self) -> String {
        format!(
            "COVO_LLM_BASE_URL={} COVO_LLM_MODEL={}",
            self.base_url,
            self.models.first().map_or("<model>", String::as_str)
        )
    }
}

impl std::fmt::Display for Found {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {}", self.kind, self.base_url)?;
        match self.models.len() {
            0 => write!(f, " (no model loaded)"),
            _ => write!(f, " with {}", self.models.join(", ")),
        }
    }
}

/// Asks each address (`host:port`, comma-separated) what it serves, one second each at most.
pub async fn discover(addrs: &str) -> Vec<Found> {
    super::tls();
    let Ok(http) = reqwest::Client::builder()
        .timeout(Duration::from_secs(1))
        .build()
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for addr in addrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let root = format!("http://{addr}");
        let get = |path: &str| {
            let req = http.get(format!("{root}{path}"));
            async move {
                let r = req.send().await.ok()?;
                if !r.status().is_success() {
                    return None;
                }
                serde_json::from_str::<serde_json::Value>(&r.text().await.ok()?).ok()
            }
        };
        if let Some(v) = get("/api/tags").await {
            let models = v["models"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["name"].as_str().map(str::to_string))
                .collect();
            out.push(Found {
                kind: "Ollama",
                base_url: format!("{root}/v1"),
                models,
            });
        } else if let Some(v) = get("/v1/models").await {
            let models = v["data"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|m| m["id"].as_str().map(str::to_string))
                .collect();
            let kind = if get("/props").await.is_some() {
                "llama.cpp"
            } else {
                "OpenAI-compatible"
            };
            out.push(Found {
                kind,
                base_url: format!("{root}/v1"),
                models,
            });
        }
    }
    out
}

/// The addresses to try: `$COVO_LLM_LOCAL`, else [`DEFAULT_ADDRS`].
pub fn addrs() -> String {
    std::env::var("COVO_LLM_LOCAL")
        .ok()
        .filter(|v| !v.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_ADDRS.to_string())
}
