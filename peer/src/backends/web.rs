//! `web_fetch`: an HTTP(S) GET whose body is size-capped and, when it is HTML, reduced to
//! readable text with `html2text`.

use covo_core::catalog;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::WebFetchConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::web::WEB_FETCH.name;

/// Bytes of body read at most unless configured otherwise.
const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// Line width html2text wraps to.
const TEXT_WIDTH: usize = 100;

#[derive(Debug)]
pub(super) struct WebFetch {
    max_bytes: u64,
    user_agent: String,
}

/// What came back over the wire, before any text extraction.
struct Fetched {
    url: String,
    status: u16,
    content_type: String,
    body: Vec<u8>,
    capped: bool,
}

impl WebFetch {
    pub(super) fn new(cfg: &WebFetchConfig) -> WebFetch {
        WebFetch {
            max_bytes: cfg.max_bytes.unwrap_or(DEFAULT_MAX_BYTES).max(1),
            user_agent: cfg
                .user_agent
                .clone()
                .unwrap_or_else(|| format!("covo-peer/{}", env!("CARGO_PKG_VERSION"))),
        }
    }

    pub(super) fn run(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let raw = args
            .get("url")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::invalid(TOOL, "/url", "expected a URL string"))?;
        let url = reqwest::Url::parse(raw)
            .map_err(|e| ToolError::invalid(TOOL, "/url", format!("not a URL: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(ToolError::invalid(
                TOOL,
                "/url",
                "only http and https URLs can be fetched",
            ));
        }
        let max_chars = args
            .get("max_chars")
            .and_then(Value::as_u64)
            .unwrap_or(20_000)
            .max(1) as usize;
        let timeout = deadline.saturating_duration_since(Instant::now());
        if timeout.is_zero() {
            return Err(ToolError::failed(
                TOOL,
                "the deadline passed before the request",
            ));
        }
        let (max_bytes, ua) = (self.max_bytes, self.user_agent.clone());
        // Own thread and runtime: the caller may or may not be inside a tokio runtime.
        let fetched = std::thread::spawn(move || -> Result<Fetched, ToolError> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ToolError::failed(TOOL, format!("no async runtime: {e}")))?;
            rt.block_on(fetch(url, timeout, max_bytes, ua))
        })
        .join()
        .map_err(|_| ToolError::failed(TOOL, "the fetch thread panicked"))??;
        to_text(fetched, max_chars)
    }
}

async fn fetch(
    url: reqwest::Url,
    timeout: Duration,
    max_bytes: u64,
    user_agent: String,
) -> Result<Fetched, ToolError> {
    let client = super::http::client(TOOL, timeout, user_agent)?;
    let shown = url.to_string();
    let transport = |e: reqwest::Error| {
        super::http::transport_error(
            TOOL,
            &shown,
            timeout,
            e,
            "check the host name and that the site is up",
            "check the URL",
        )
    };
    let mut resp = client.get(url.clone()).send().await.map_err(transport)?;
    let status = resp.status().as_u16();
    let final_url = resp.url().to_string();
    let content_type = resp
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut body = Vec::new();
    let mut capped = false;
    while let Some(chunk) = resp.chunk().await.map_err(transport)? {
        let room = max_bytes as usize - body.len();
        if chunk.len() >= room {
            body.extend_from_slice(&chunk[..room]);
            // Past the cap: truncated unless the declared length says the body ended exactly
            // here (reading on to find out could wait on a slow server until the deadline).
            capped = chunk.len() > room || resp.content_length().is_none_or(|n| n > max_bytes);
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        url: final_url,
        status,
        content_type,
        body,
        capped,
    })
}

fn to_text(f: Fetched, max_chars: usize) -> Result<Value, ToolError> {
    let mime = f
        .content_type
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    let sniffed_html = mime.is_empty() && looks_like_html(&f.body);
    let (title, text) = if mime.contains("html") || sniffed_html {
        let text = html2text::config::plain()
            .string_from_read(&f.body[..], TEXT_WIDTH)
            .map_err(|e| ToolError::failed(TOOL, format!("could not read the HTML: {e}")))?;
        (title_of(&f.body), text)
    } else if mime.is_empty()
        || mime.starts_with("text/")
        || mime.ends_with("json")
        || mime.ends_with("xml")
        || mime.ends_with("javascript")
    {
        (None, String::from_utf8_lossy(&f.body).into_owned())
    } else {
        return Err(ToolError::Failed {
            tool: TOOL.into(),
            message: format!("{} is {}, not text", f.url, f.content_type),
            hint: Some("web_fetch returns text only; fetch an HTML or text page".into()),
        });
    };
    let text = text.trim();
    let (text, cut) = match text.char_indices().nth(max_chars) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    };
    let mut out = json!({
        "url": f.url,
        "status": f.status,
        "content_type": f.content_type,
        "text": text,
        "truncated": cut || f.capped,
    });
    if let Some(t) = title {
        out["title"] = Value::String(t);
    }
    Ok(out)
}

fn looks_like_html(body: &[u8]) -> bool {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    head.starts_with("<!doctype html") || head.starts_with("<html")
}

/// The document's `<title>`, entities decoded and whitespace collapsed.
fn title_of(body: &[u8]) -> Option<String> {
    let head = String::from_utf8_lossy(&body[..body.len().min(64 * 1024)]);
    let lower = head.to_ascii_lowercase();
    let open = lower.find("<title")?;
    let start = open + lower[open..].find('>')? + 1;
    let end = start + lower[start..].find("</title")?;
    let decoded = html2text::config::plain()
        .string_from_read(format!("<p>{}</p>", &head[start..end]).as_bytes(), 10_000)
        .ok()?;
    let title = decoded.split_whitespace().collect::<Vec<_>>().join(" ");
    (!title.is_empty()).then_some(title)
}

#[cfg(test)]
mod tests {
    use super::*;

    const PAGE: &str = "<!DOCTYPE html><html><head><title>Caf&eacute; \n hours</title>\
        <style>body { color: red }</style><script>var secret = 42;</script></head>\
        <body><h1>Opening hours</h1><p>Mon&ndash;Fri: 8&nbsp;to 18.</p>\
        <ul><li>Espresso</li><li>Tea &amp; cake</li></ul></body></html>";

    /// Serves a few fixed paths on 127.0.0.1 from a background thread; returns the base URL.
    fn serve() -> String {
        let (base, _) = covo_tests::http_fake::serve(|req| match req.path() {
            "/page" => (200, "text/html; charset=utf-8", PAGE.into()),
            "/long" => (200, "text/plain", "abcdefghij".repeat(1000).into_bytes()),
            "/image" => (200, "image/png", vec![0x89, b'P', b'N', b'G']),
            "/slow" => {
                std::thread::sleep(Duration::from_secs(3));
                (200, "text/plain", b"late".to_vec())
            }
            _ => (
                404,
                "text/html",
                b"<html><body>nothing here</body></html>".to_vec(),
            ),
        });
        base
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(10)
    }

    fn fetcher() -> WebFetch {
        WebFetch::new(&WebFetchConfig::default())
    }

    #[test]
    fn an_html_page_comes_back_as_readable_text_with_its_title() {
        let base = serve();
        let out = fetcher()
            .run(&json!({"url": format!("{base}/page")}), soon())
            .unwrap();
        assert_eq!(out["status"], 200);
        assert_eq!(out["title"], "Café hours");
        assert_eq!(out["content_type"], "text/html; charset=utf-8");
        assert_eq!(out["truncated"], false);
        let text = out["text"].as_str().unwrap();
        assert!(text.contains("Opening hours"), "{text}");
        assert!(text.contains("Mon–Fri"), "{text}");
        assert!(text.contains("Tea & cake"), "{text}");
        assert!(!text.contains('<'), "tags left in: {text}");
        assert!(!text.contains("secret"), "script left in: {text}");
        assert!(!text.contains("color: red"), "style left in: {text}");
    }

    #[test]
    fn text_is_cut_at_max_chars_and_marked_truncated() {
        let base = serve();
        let out = fetcher()
            .run(
                &json!({"url": format!("{base}/long"), "max_chars": 25}),
                soon(),
            )
            .unwrap();
        assert_eq!(out["text"], "abcdefghijabcdefghijabcde");
        assert_eq!(out["truncated"], true);
    }

    #[test]
    fn the_body_read_stops_at_the_byte_cap_and_says_so() {
        let base = serve();
        let small = WebFetch::new(&WebFetchConfig {
            max_bytes: Some(1000),
            ..Default::default()
        });
        let out = small
            .run(&json!({"url": format!("{base}/long")}), soon())
            .unwrap();
        assert_eq!(out["text"].as_str().unwrap().len(), 1000);
        assert_eq!(out["truncated"], true);
    }

    #[test]
    fn a_body_exactly_at_the_cap_is_not_called_truncated() {
        let base = serve();
        let exact = WebFetch::new(&WebFetchConfig {
            max_bytes: Some(10_000),
            ..Default::default()
        });
        let out = exact
            .run(&json!({"url": format!("{base}/long")}), soon())
            .unwrap();
        assert_eq!(out["text"].as_str().unwrap().len(), 10_000);
        assert_eq!(out["truncated"], false);
    }

    #[test]
    fn an_error_status_is_reported_with_the_page_text() {
        let base = serve();
        let out = fetcher()
            .run(&json!({"url": format!("{base}/missing")}), soon())
            .unwrap();
        assert_eq!(out["status"], 404);
        assert_eq!(out["text"], "nothing here");
    }

    #[test]
    fn binary_content_is_refused_with_a_hint() {
        let base = serve();
        let err = fetcher()
            .run(&json!({"url": format!("{base}/image")}), soon())
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Failed { ref message, hint: Some(_), .. } if message.contains("image/png"))
        );
    }

    #[test]
    fn a_slow_server_fails_at_the_deadline() {
        let base = serve();
        let started = Instant::now();
        let err = fetcher()
            .run(
                &json!({"url": format!("{base}/slow")}),
                Instant::now() + Duration::from_millis(500),
            )
            .unwrap_err();
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "took {:?}",
            started.elapsed()
        );
        assert!(
            matches!(err, ToolError::Failed { ref message, .. } if message.contains("timed out")),
            "{err:?}"
        );
    }

    #[test]
    fn a_closed_port_fails_to_connect() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let err = fetcher()
            .run(&json!({"url": format!("http://127.0.0.1:{port}/")}), soon())
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Failed { ref message, .. } if message.contains("connect")),
            "{err:?}"
        );
    }

    #[test]
    fn only_http_urls_are_accepted() {
        for url in ["file:///etc/passwd", "not a url"] {
            let err = fetcher().run(&json!({ "url": url }), soon()).unwrap_err();
            assert!(
                matches!(err, ToolError::InvalidArguments { .. }),
                "{url}: {err:?}"
            );
        }
    }

    #[test]
    fn an_unlabelled_html_body_is_still_reduced_to_text() {
        let f = Fetched {
            url: "http://x/".into(),
            status: 200,
            content_type: String::new(),
            body: b"<html><body><p>hi <b>there</b></p></body></html>".to_vec(),
            capped: false,
        };
        let out = to_text(f, 100).unwrap();
        // Light Markdown-style emphasis is kept: the model reads it well.
        assert_eq!(out["text"], "hi **there**");
    }
}
