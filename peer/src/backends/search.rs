//! `web_search`: a SearXNG-compatible JSON endpoint, or the Brave Search API.
//!
//! SearXNG: `GET {searxng_url}/search?q=…&format=json` → `results[] {title, url, content}`
//! (the instance must have the `json` format enabled). Brave: `GET {brave_url}?q=…&count=…`
//! with `X-Subscription-Token` → `web.results[] {title, url, description}`. When both are
//! configured, SearXNG is used.

use covo_core::catalog;
use std::time::Instant;

use serde_json::{json, Value};

use super::http::{self, Request};
use super::WebSearchConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::web::WEB_SEARCH.name;

/// The Brave Search API endpoint unless `brave_url` says otherwise.
const BRAVE_URL: &str = "https://api.search.brave.com/res/v1/web/search";
/// The schema's `limit` maximum and default.
const MAX_LIMIT: u64 = 20;
const DEFAULT_LIMIT: u64 = 5;

#[derive(Debug)]
enum Engine {
    Searxng { url: String },
    Brave { url: String, key: String },
}

#[derive(Debug)]
pub(super) struct WebSearch {
    engine: Option<Engine>,
}

impl WebSearch {
    pub(super) fn new(cfg: &WebSearchConfig) -> WebSearch {
        let engine = if let Some(url) = cfg.searxng_url.clone().filter(|u| !u.is_empty()) {
            Some(Engine::Searxng { url })
        } else {
            cfg.brave_api_key
                .clone()
                .filter(|k| !k.is_empty())
                .map(|key| Engine::Brave {
                    url: cfg.brave_url.clone().unwrap_or_else(|| BRAVE_URL.into()),
                    key,
                })
        };
        WebSearch { engine }
    }

    pub(super) fn available(&self) -> bool {
        self.engine.is_some()
    }

    pub(super) fn run(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::invalid(TOOL, "/query", "expected a string"))?;
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .unwrap_or(DEFAULT_LIMIT)
            .clamp(1, MAX_LIMIT) as usize;
        let (engine, results) = match &self.engine {
            None => {
                return Err(ToolError::Unavailable {
                    tool: TOOL.into(),
                    reason: "no search backend configured".into(),
                })
            }
            Some(Engine::Searxng { url }) => {
                let mut u = http::endpoint(TOOL, url, "search")?;
                u.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                let v = http::json(
                    TOOL,
                    Request::get(u).header("Accept", "application/json"),
                    deadline,
                )?;
                ("searxng", collect(&v["results"], "content", limit))
            }
            Some(Engine::Brave { url, key }) => {
                let mut u = reqwest::Url::parse(url).map_err(|e| ToolError::Failed {
                    tool: TOOL.into(),
                    message: format!("brave_url {url} is not a URL: {e}"),
                    hint: Some("fix [peer.backends.web_search] brave_url".into()),
                })?;
                u.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &limit.to_string());
                let req = Request::get(u)
                    .header("Accept", "application/json")
                    .header("X-Subscription-Token", key.as_str());
                let v = http::json(TOOL, req, deadline)?;
                ("brave", collect(&v["web"]["results"], "description", limit))
            }
        };
        Ok(json!({"engine": engine, "results": results}))
    }
}

/// `{title, url, snippet}` from each hit that has a URL, at most `limit`.
fn collect(hits: &Value, snippet_field: &str, limit: usize) -> Vec<Value> {
    hits.as_array()
        .into_iter()
        .flatten()
        .filter_map(|h| {
            let url = h.get("url")?.as_str()?;
            let text = |f: &str| plain(h.get(f).and_then(Value::as_str).unwrap_or(""));
            Some(json!({"title": text("title"), "url": url, "snippet": text(snippet_field)}))
        })
        .take(limit)
        .collect()
}

/// Search APIs put light HTML (`<strong>`, entities) in titles and snippets: reduce to text.
fn plain(s: &str) -> String {
    if !s.contains('<') && !s.contains('&') {
        return s.split_whitespace().collect::<Vec<_>>().join(" ");
    }
    let text = html2text::config::plain()
        .string_from_read(format!("<p>{s}</p>").as_bytes(), 10_000)
        .unwrap_or_else(|_| s.to_string());
    text.replace("**", "")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use covo_tests::http_fake as fake;
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn searxng_body(n: usize) -> Vec<u8> {
        let results: Vec<Value> = (0..n)
            .map(|i| {
                json!({
                    "title": format!("Rust result {i}"),
                    "url": format!("https://example.org/{i}"),
                    "content": format!("Snippet number {i} about rust &amp; embedded"),
                    "engine": "duckduckgo",
                    "score": 1.0,
                    "category": "general"
                })
            })
            .collect();
        json!({"query": "rust embedded", "number_of_results": n, "results": results,
               "answers": [], "suggestions": [], "unresponsive_engines": []})
        .to_string()
        .into_bytes()
    }

    #[test]
    fn searxng_is_asked_for_json_and_its_results_come_back_as_title_url_snippet() {
        let (base, seen) = fake::serve(|_| (200, "application/json", searxng_body(3)));
        let s = WebSearch::new(&WebSearchConfig {
            searxng_url: Some(format!("{base}/")),
            ..Default::default()
        });
        assert!(s.available());
        let out = s.run(&json!({"query": "rust embedded"}), soon()).unwrap();
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.method, "GET");
        assert_eq!(req.path(), "/search");
        assert_eq!(req.query("q").as_deref(), Some("rust embedded"));
        assert_eq!(req.query("format").as_deref(), Some("json"));
        assert_eq!(out["engine"], "searxng");
        let results = out["results"].as_array().unwrap();
        assert_eq!(results.len(), 3);
        assert_eq!(results[0]["title"], "Rust result 0");
        assert_eq!(results[0]["url"], "https://example.org/0");
        assert_eq!(
            results[0]["snippet"],
            "Snippet number 0 about rust & embedded"
        );
    }

    #[test]
    fn results_are_capped_at_the_limit() {
        let (base, _) = fake::serve(|_| (200, "application/json", searxng_body(30)));
        let s = WebSearch::new(&WebSearchConfig {
            searxng_url: Some(base),
            ..Default::default()
        });
        let out = s.run(&json!({"query": "x", "limit": 7}), soon()).unwrap();
        assert_eq!(out["results"].as_array().unwrap().len(), 7);
        let out = s.run(&json!({"query": "x"}), soon()).unwrap();
        assert_eq!(out["results"].as_array().unwrap().len(), 5);
    }

    #[test]
    fn brave_gets_the_key_in_its_header_and_its_html_snippets_are_flattened() {
        let body = json!({
            "type": "search",
            "query": {"original": "covo mqtt"},
            "web": {"type": "search", "results": [
                {"title": "MQTT <strong>covo</strong>", "url": "https://mqtt.org/",
                 "description": "The <strong>MQTT</strong> standard &#x27;for IoT&#x27;",
                 "language": "en", "family_friendly": true},
                {"title": "Second", "url": "https://example.com/2", "description": "two"}
            ]}
        });
        let (base, seen) =
            fake::serve(move |_| (200, "application/json", body.to_string().into_bytes()));
        let s = WebSearch::new(&WebSearchConfig {
            brave_api_key: Some("BSA-test-key".into()),
            brave_url: Some(format!("{base}/res/v1/web/search")),
            ..Default::default()
        });
        let out = s
            .run(&json!({"query": "covo mqtt", "limit": 2}), soon())
            .unwrap();
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.path(), "/res/v1/web/search");
        assert_eq!(req.query("q").as_deref(), Some("covo mqtt"));
        assert_eq!(req.query("count").as_deref(), Some("2"));
        assert_eq!(req.header("X-Subscription-Token"), Some("BSA-test-key"));
        assert_eq!(req.header("Accept"), Some("application/json"));
        assert_eq!(out["engine"], "brave");
        assert_eq!(out["results"][0]["title"], "MQTT covo");
        assert_eq!(out["results"][0]["snippet"], "The MQTT standard 'for IoT'");
        assert_eq!(out["results"][1]["url"], "https://example.com/2");
    }

    #[test]
    fn a_rejected_key_fails_with_the_apis_message_and_a_hint() {
        let (base, _) = fake::serve(|_| {
            (401, "application/json",
             br#"{"type":"ErrorResponse","error":{"code":"SUBSCRIPTION_TOKEN_INVALID","detail":"bad","status":401}}"#.to_vec())
        });
        let s = WebSearch::new(&WebSearchConfig {
            brave_api_key: Some("wrong".into()),
            brave_url: Some(base),
            ..Default::default()
        });
        let err = s.run(&json!({"query": "x"}), soon()).unwrap_err();
        assert!(
            matches!(err, ToolError::Failed { ref message, hint: Some(ref h), .. }
                if message.contains("401") && h.contains("API key")),
            "{err:?}"
        );
    }

    #[test]
    fn without_a_backend_the_tool_is_not_available() {
        assert!(!WebSearch::new(&WebSearchConfig::default()).available());
    }
}
