//! `web_fetch`: an HTTP(S) GET whose body is size-capped and, when it is HTML, reduced to
//! readable text with `html2text`.
//!
//! The peer may sit inside a network the model must not reach through it: loopback, private
//! ranges, link-local (the cloud metadata service at 169.254.169.254), unique-local, CGNAT,
//! multicast and the like are refused unless the URL's host is listed in
//! `[peer.backends.web_fetch] allow_hosts`. A host name is resolved here and every address it
//! resolves to is checked; the connection then goes only to those checked addresses (no second
//! lookup that could rebind). Redirects are not followed by the HTTP client: each hop is
//! checked the same way, at most [`MAX_REDIRECTS`] of them. Proxies from the environment are
//! not used (a proxy would reach the address on the peer's behalf, unchecked).

use covo_core::catalog;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::guard::{self, Allow};
use super::WebFetchConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::web::WEB_FETCH.name;

/// Bytes of body read at most unless configured otherwise.
const DEFAULT_MAX_BYTES: u64 = 2 * 1024 * 1024;
/// Line width html2text wraps to.
const TEXT_WIDTH: usize = 100;
/// Redirects followed at most; each hop is checked like the first URL.
const MAX_REDIRECTS: usize = guard::MAX_REDIRECTS;
/// Where a refused host can be allowed.
const ALLOW_HINT: &str = "[peer.backends.web_fetch] allow_hosts";

#[derive(Debug, Clone)]
pub(super) struct WebFetch {
    max_bytes: u64,
    user_agent: String,
    /// `allow_hosts`.
    allow: Allow,
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
            allow: Allow::new(cfg.allow_hosts.iter().flatten()),
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
        if deadline <= Instant::now() {
            return Err(ToolError::failed(
                TOOL,
                "the deadline passed before the request",
            ));
        }
        let this = self.clone();
        // Own thread and runtime: the caller may or may not be inside a tokio runtime.
        let fetched = std::thread::spawn(move || -> Result<Fetched, ToolError> {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| ToolError::failed(TOOL, format!("no async runtime: {e}")))?;
            let fetched = rt.block_on(this.fetch(url, deadline));
            // A name lookup still hanging past the deadline must not hold up the answer.
            rt.shutdown_background();
            fetched
        })
        .join()
        .map_err(|_| ToolError::failed(TOOL, "the fetch thread panicked"))??;
        to_text(fetched, max_chars)
    }

    async fn fetch(&self, first: reqwest::Url, deadline: Instant) -> Result<Fetched, ToolError> {
        let mut url = first;
        let mut hops = 0;
        loop {
            let timeout = deadline.saturating_duration_since(Instant::now());
            let shown = url.to_string();
            if timeout.is_zero() {
                return Err(ToolError::Failed {
                    tool: TOOL.into(),
                    message: format!("{shown}: timed out"),
                    hint: Some("retry later or with a longer deadline".into()),
                });
            }
            let pinned = guard::check(TOOL, &self.allow, &url, deadline, ALLOW_HINT).await?;
            let mut builder = super::http::builder(timeout, self.user_agent.clone())
                .redirect(reqwest::redirect::Policy::none())
                .no_proxy();
            if let Some((name, addrs)) = &pinned {
                builder = builder.resolve_to_addrs(name, addrs);
            }
            let client = builder
                .build()
                .map_err(|e| ToolError::failed(TOOL, format!("HTTP client: {e}")))?;
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
            let resp = client.get(url.clone()).send().await.map_err(transport)?;
            let location = resp
                .status()
                .is_redirection()
                .then(|| resp.headers().get(reqwest::header::LOCATION))
                .flatten();
            let Some(location) = location else {
                return self.read(resp, &shown, timeout).await;
            };
            if hops == MAX_REDIRECTS {
                return Err(ToolError::Failed {
                    tool: TOOL.into(),
                    message: format!("{shown}: more than {MAX_REDIRECTS} redirects"),
                    hint: Some("fetch the final URL directly".into()),
                });
            }
            let next = location
                .to_str()
                .ok()
                .and_then(|l| url.join(l).ok())
                .ok_or_else(|| {
                    ToolError::failed(TOOL, format!("{shown}: redirects to an invalid URL"))
                })?;
            if !matches!(next.scheme(), "http" | "https") {
                return Err(ToolError::failed(
                    TOOL,
                    format!("{shown}: redirects to {next}, which is not http or https"),
                ));
            }
            url = next;
            hops += 1;
        }
    }

    /// Reads a final answer's body up to the byte cap.
    async fn read(
        &self,
        mut resp: reqwest::Response,
        shown: &str,
        timeout: Duration,
    ) -> Result<Fetched, ToolError> {
        let transport = |e: reqwest::Error| {
            super::http::transport_error(
                TOOL,
                shown,
                timeout,
                e,
                "check that the site is up",
                "check the URL",
            )
        };
        let max_bytes = self.max_bytes;
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
    use super::guard::forbidden;
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

    /// The fake servers listen on 127.0.0.1, which is refused unless allowed.
    fn local() -> Option<Vec<String>> {
        Some(vec!["127.0.0.1".into()])
    }

    fn fetcher() -> WebFetch {
        WebFetch::new(&WebFetchConfig {
            allow_hosts: local(),
            ..Default::default()
        })
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
            allow_hosts: local(),
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
            allow_hosts: local(),
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

    /// The refusal every test below expects: a `Failed` whose hint says how to allow the host.
    fn assert_refused(err: &ToolError, what: &str) {
        match err {
            ToolError::Failed {
                message,
                hint: Some(hint),
                ..
            } => {
                assert!(message.contains("refused"), "{err:?}");
                assert!(message.contains(what), "{what} not in {err:?}");
                assert!(hint.contains("allow_hosts"), "{err:?}");
                assert!(hint.contains("[peer.backends.web_fetch]"), "{err:?}");
            }
            other => panic!("not a refusal with a hint: {other:?}"),
        }
    }

    #[test]
    fn loopback_is_refused_by_default_and_nothing_is_sent() {
        let (base, seen) =
            covo_tests::http_fake::serve(|_| (200, "text/plain", b"secret".to_vec()));
        let port = base.rsplit(':').next().unwrap().to_string();
        let default = WebFetch::new(&WebFetchConfig::default());
        for url in [
            format!("{base}/"),
            // A name is judged by what it resolves to.
            format!("http://localhost:{port}/"),
            // IPv4-mapped IPv6 and other spellings of loopback.
            format!("http://[::ffff:127.0.0.1]:{port}/"),
            format!("http://[::1]:{port}/"),
            format!("http://2130706433:{port}/"),
        ] {
            let err = default.run(&json!({ "url": url }), soon()).unwrap_err();
            assert_refused(&err, "loopback");
        }
        assert!(
            seen.lock().unwrap().is_empty(),
            "a request reached the server"
        );
    }

    #[test]
    fn an_allowed_host_is_fetched_and_every_redirect_hop_is_checked_again() {
        let (base, seen) = covo_tests::http_fake::serve_with_headers(|req| {
            let port = req
                .header("Host")
                .and_then(|h| h.rsplit(':').next())
                .unwrap_or("0")
                .to_string();
            let to = |loc: String| (302, vec![("Location", loc)], Vec::new());
            match req.path() {
                "/hop" => to("/page".into()),
                "/to-mapped" => to(format!("http://[::ffff:127.0.0.1]:{port}/page")),
                "/to-localhost" => to(format!("http://localhost:{port}/page")),
                "/loop" => to("/loop".into()),
                _ => (
                    200,
                    vec![("Content-Type", "text/plain".to_string())],
                    b"inside".to_vec(),
                ),
            }
        });
        let f = fetcher();
        // A redirect within the allowed host is followed.
        let out = f
            .run(&json!({"url": format!("{base}/hop")}), soon())
            .unwrap();
        assert_eq!(out["text"], "inside");
        assert_eq!(out["url"], format!("{base}/page"));
        // A redirect to loopback under another spelling is refused before it is followed.
        let err = f
            .run(&json!({"url": format!("{base}/to-mapped")}), soon())
            .unwrap_err();
        assert_refused(&err, "loopback");
        let err = f
            .run(&json!({"url": format!("{base}/to-localhost")}), soon())
            .unwrap_err();
        assert_refused(&err, "loopback");
        let paths: Vec<String> = seen
            .lock()
            .unwrap()
            .iter()
            .map(|s| s.path().to_string())
            .collect();
        assert_eq!(paths, ["/hop", "/page", "/to-mapped", "/to-localhost"]);
        // Redirects are followed a few times only.
        let err = f
            .run(&json!({"url": format!("{base}/loop")}), soon())
            .unwrap_err();
        assert!(
            matches!(err, ToolError::Failed { ref message, .. } if message.contains("redirect")),
            "{err:?}"
        );
        let loops = seen
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.path() == "/loop")
            .count();
        assert_eq!(loops, MAX_REDIRECTS + 1);
    }

    #[test]
    fn private_link_local_and_other_internal_addresses_are_refused() {
        let refused = [
            "127.0.0.1",
            "127.1.2.3",
            "10.0.0.5",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.254",
            "0.0.0.0",
            "224.0.0.251",
            "255.255.255.255",
            "::1",
            "::",
            "fe80::1",
            "fc00::1",
            "fd12:3456::1",
            "ff02::1",
            "::ffff:169.254.169.254",
            "::ffff:10.0.0.1",
            "::ffff:127.0.0.1",
            "::127.0.0.1",
            "::8.8.8.8",
            "64:ff9b::10.1.2.3",
        ];
        for a in refused {
            let ip: std::net::IpAddr = a.parse().unwrap();
            assert!(forbidden(ip).is_some(), "{a} is allowed");
        }
        for a in [
            "93.184.216.34",
            "172.32.0.1",
            "100.128.0.1",
            "192.169.0.1",
            "2606:4700::1111",
            "::ffff:93.184.216.34",
            "64:ff9b::93.184.216.34",
        ] {
            let ip: std::net::IpAddr = a.parse().unwrap();
            assert_eq!(forbidden(ip), None, "{a} is refused");
        }
        assert_eq!(
            forbidden("169.254.169.254".parse().unwrap()),
            Some("link-local")
        );
    }

    #[test]
    fn allow_hosts_match_the_urls_host_as_written() {
        let f = WebFetch::new(&WebFetchConfig {
            allow_hosts: Some(vec![
                "NAS.local".into(),
                "10.0.0.5".into(),
                "[fd00::5]".into(),
            ]),
            ..Default::default()
        });
        let host = |u: &str| reqwest::Url::parse(u).unwrap();
        assert!(f.allow.allows(&host("http://nas.local/x")));
        assert!(f.allow.allows(&host("http://nas.local./x")));
        assert!(f.allow.allows(&host("http://10.0.0.5:8080/")));
        assert!(f.allow.allows(&host("http://[fd00::5]/")));
        assert!(!f.allow.allows(&host("http://10.0.0.6/")));
        assert!(!f.allow.allows(&host("http://nas.local.evil.example/")));
        assert!(!f.allow.allows(&host("http://[::ffff:10.0.0.5]/")));
    }
}
