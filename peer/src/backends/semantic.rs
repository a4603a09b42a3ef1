//! `semantic_memory_store` / `semantic_memory_search`: texts embedded through the
//! OpenAI-compatible `POST {base}/embeddings` and kept in a SQLite vector store on the peer
//! (`[peer.backends.semantic_memory] store_path`, default `$COVO_HOME/peer/vectors.db`).
//! Search is an exact cosine-similarity scan over the vectors of the configured model.

use covo_core::catalog;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Instant;

use rusqlite::{params, Connection};
use serde_json::{json, Value};

use super::http::{self, Request};
use super::{OpenAiConfig, SemanticMemoryConfig};
use covo_core::error::ToolError;

pub(super) const STORE: &str = catalog::memory::SEMANTIC_MEMORY_STORE.name;
pub(super) const SEARCH: &str = catalog::memory::SEMANTIC_MEMORY_SEARCH.name;

#[derive(Debug)]
pub(super) struct Semantic {
    base_url: String,
    api_key: Option<String>,
    model: String,
    db: Mutex<Connection>,
}

/// The store's default file.
fn default_path() -> PathBuf {
    covo::config::Config::default()
        .home_dir()
        .join("peer")
        .join("vectors.db")
}

impl Semantic {
    /// `None` unless an embedding model is configured and the store opens.
    pub(super) fn new(ai: &OpenAiConfig, cfg: &SemanticMemoryConfig) -> Option<Semantic> {
        let base_url = ai.base_url.clone().filter(|u| !u.is_empty())?;
        let model = ai.embedding_model.clone().filter(|m| !m.is_empty())?;
        let path = cfg.store_path.clone().unwrap_or_else(default_path);
        match open(&path) {
            Ok(db) => Some(Semantic {
                base_url,
                api_key: ai.api_key.clone(),
                model,
                db: Mutex::new(db),
            }),
            Err(e) => {
                tracing::warn!("semantic memory store {}: {e}", path.display());
                None
            }
        }
    }

    pub(super) fn run(
        &self,
        tool: &str,
        args: &Value,
        deadline: Instant,
    ) -> Result<Value, ToolError> {
        let text_of = |key: &str| {
            args.get(key)
                .and_then(Value::as_str)
                .ok_or_else(|| ToolError::invalid(tool, &format!("/{key}"), "expected a string"))
        };
        if tool == STORE {
            let text = text_of("text")?;
            let metadata = args.get("metadata").cloned().unwrap_or(json!({}));
            let v = self.embed(STORE, text, deadline)?;
            let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
            db.execute(
                "INSERT INTO vectors (text, metadata, model, dim, embedding, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, strftime('%Y-%m-%dT%H:%M:%SZ','now'))",
                params![
                    text,
                    metadata.to_string(),
                    self.model,
                    v.len() as i64,
                    to_blob(&v)
                ],
            )
            .map_err(|e| ToolError::failed(STORE, format!("the vector store: {e}")))?;
            Ok(json!({"id": db.last_insert_rowid(), "dimensions": v.len(), "model": self.model}))
        } else {
            let query = text_of("query")?;
            let limit = args
                .get("limit")
                .and_then(Value::as_u64)
                .unwrap_or(5)
                .clamp(1, 50) as usize;
            let q = self.embed(SEARCH, query, deadline)?;
            let db = self.db.lock().unwrap_or_else(|p| p.into_inner());
            let fail =
                |e: rusqlite::Error| ToolError::failed(SEARCH, format!("the vector store: {e}"));
            let mut stmt = db
                .prepare("SELECT id, text, metadata, embedding FROM vectors WHERE model = ?1 AND dim = ?2")
                .map_err(fail)?;
            let rows = stmt
                .query_map(params![self.model, q.len() as i64], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, Vec<u8>>(3)?,
                    ))
                })
                .map_err(fail)?;
            let mut hits = Vec::new();
            for row in rows {
                let (id, text, meta, blob) = row.map_err(fail)?;
                hits.push((cosine(&q, &from_blob(&blob)), id, text, meta));
            }
            hits.sort_by(|a, b| b.0.total_cmp(&a.0));
            let results: Vec<Value> = hits
                .into_iter()
                .take(limit)
                .map(|(score, id, text, meta)| {
                    let metadata: Value = serde_json::from_str(&meta).unwrap_or(json!({}));
                    json!({"id": id, "text": text, "metadata": metadata, "score": score})
                })
                .collect();
            Ok(json!({"results": results, "model": self.model}))
        }
    }

    fn embed(
        &self,
        tool: &'static str,
        text: &str,
        deadline: Instant,
    ) -> Result<Vec<f32>, ToolError> {
        let url = http::endpoint(tool, &self.base_url, "embeddings")?;
        let req = Request::post_json(url, &json!({"model": self.model, "input": text}))
            .bearer(self.api_key.as_deref());
        let v = http::json(tool, req, deadline)?;
        let vec: Option<Vec<f32>> = v["data"][0]["embedding"]
            .as_array()
            .and_then(|a| a.iter().map(|x| x.as_f64().map(|f| f as f32)).collect());
        match vec {
            Some(v) if !v.is_empty() => Ok(v),
            _ => Err(ToolError::failed(
                tool,
                "the answer has no data[0].embedding numbers",
            )),
        }
    }
}

fn open(path: &Path) -> Result<Connection, String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    }
    let db = Connection::open(path).map_err(|e| e.to_string())?;
    // Wait for another process's lock rather than fail with "database is locked".
    db.busy_timeout(std::time::Duration::from_secs(5))
        .map_err(|e| e.to_string())?;
    db.execute_batch(
        "CREATE TABLE IF NOT EXISTS vectors (
             id INTEGER PRIMARY KEY,
             text TEXT NOT NULL,
             metadata TEXT NOT NULL,
             model TEXT NOT NULL,
             dim INTEGER NOT NULL,
             embedding BLOB NOT NULL,
             created_at TEXT NOT NULL
         );
         CREATE INDEX IF NOT EXISTS vectors_model ON vectors (model, dim);",
    )
    .map_err(|e| e.to_string())?;
    Ok(db)
}

/// Little-endian f32s.
fn to_blob(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_blob(b: &[u8]) -> Vec<f32> {
    b.chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

fn cosine(a: &[f32], b: &[f32]) -> f64 {
    let (mut dot, mut na, mut nb) = (0f64, 0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        let (x, y) = (f64::from(*x), f64::from(*y));
        dot += x * y;
        na += x * x;
        nb += y * y;
    }
    if na == 0.0 || nb == 0.0 {
        0.0
    } else {
        dot / (na.sqrt() * nb.sqrt())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covo_tests::http_fake as fake;
    use std::time::Duration;

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    /// Deterministic 3-d vectors: each topic word points along its own axis.
    fn vector_for(text: &str) -> Vec<f32> {
        let t = text.to_lowercase();
        let w = |k: &str| if t.contains(k) { 1.0 } else { 0.05 };
        vec![w("cat"), w("rust"), w("weather")]
    }

    fn server() -> (String, std::sync::Arc<std::sync::Mutex<Vec<fake::Seen>>>) {
        fake::serve(|req| {
            let input = req.json()["input"].as_str().unwrap_or("").to_string();
            let body = json!({"object": "list", "model": "nomic-embed-text",
                "data": [{"object": "embedding", "index": 0, "embedding": vector_for(&input)}],
                "usage": {"prompt_tokens": 3, "total_tokens": 3}});
            (200, "application/json", body.to_string().into_bytes())
        })
    }

    fn semantic(base: &str, path: &Path) -> Semantic {
        Semantic::new(
            &OpenAiConfig {
                base_url: Some(format!("{base}/v1")),
                api_key: Some("sk-embed".into()),
                embedding_model: Some("nomic-embed-text".into()),
                ..Default::default()
            },
            &SemanticMemoryConfig {
                store_path: Some(path.to_path_buf()),
            },
        )
        .unwrap()
    }

    #[test]
    fn stored_texts_come_back_nearest_first_and_survive_a_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("peer/vectors.db");
        let (base, seen) = server();
        {
            let s = semantic(&base, &path);
            for text in [
                "my cat sleeps all day",
                "rust borrow checker notes",
                "weather in Oslo",
            ] {
                let out = s
                    .run(
                        STORE,
                        &json!({"text": text, "metadata": {"src": "test"}}),
                        soon(),
                    )
                    .unwrap();
                assert_eq!(out["dimensions"], 3);
            }
        }
        let req = seen.lock().unwrap()[0].clone();
        assert_eq!(req.method, "POST");
        assert_eq!(req.path(), "/v1/embeddings");
        assert_eq!(req.header("Authorization"), Some("Bearer sk-embed"));
        assert_eq!(
            req.json(),
            json!({"model": "nomic-embed-text", "input": "my cat sleeps all day"})
        );

        let reopened = semantic(&base, &path);
        let out = reopened
            .run(
                SEARCH,
                &json!({"query": "Rust lifetimes", "limit": 2}),
                soon(),
            )
            .unwrap();
        let results = out["results"].as_array().unwrap();
        assert_eq!(results.len(), 2);
        assert_eq!(results[0]["text"], "rust borrow checker notes");
        assert_eq!(results[0]["metadata"], json!({"src": "test"}));
        assert!(results[0]["score"].as_f64().unwrap() > 0.99);
        assert!(results[0]["score"].as_f64() > results[1]["score"].as_f64());
        assert_eq!(
            seen.lock().unwrap().last().unwrap().json()["input"],
            "Rust lifetimes"
        );
    }

    #[test]
    fn without_an_embedding_model_there_is_no_store() {
        let dir = tempfile::tempdir().unwrap();
        let none = Semantic::new(
            &OpenAiConfig {
                base_url: Some("http://127.0.0.1:1".into()),
                ..Default::default()
            },
            &SemanticMemoryConfig {
                store_path: Some(dir.path().join("v.db")),
            },
        );
        assert!(none.is_none());
        assert!(!dir.path().join("v.db").exists());
    }

    #[test]
    fn cosine_of_parallel_vectors_is_one_and_of_orthogonal_is_zero() {
        assert!((cosine(&[1.0, 2.0], &[2.0, 4.0]) - 1.0).abs() < 1e-9);
        assert_eq!(cosine(&[1.0, 0.0], &[0.0, 3.0]), 0.0);
        assert_eq!(from_blob(&to_blob(&[0.5, -1.25])), vec![0.5, -1.25]);
    }
}
