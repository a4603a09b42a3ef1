//! A fake HTTP server on 127.0.0.1 that records each request and answers from a closure: the
//! web services (SearXNG, OpenAI-compatible APIs, web pages) behind the peer's backends.

use std::sync::{Arc, Mutex};

/// One request as the fake server saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
    pub fn path(&self) -> &str {
        self.url.split('?').next().unwrap_or("")
    }
    /// The decoded query pairs.
    pub fn query(&self, key: &str) -> Option<String> {
        let url = url::Url::parse(&format!("http://x{}", self.url)).ok()?;
        url.query_pairs()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).expect("a JSON body")
    }
}

/// The answer: status, content type, body.
pub type Answer = (u16, &'static str, Vec<u8>);

/// Serves until the test ends; returns the base URL and the requests seen so far.
pub fn serve(answer: impl Fn(&Seen) -> Answer + Send + 'static) -> (String, Arc<Mutex<Vec<Seen>>>) {
    serve_with_headers(move |s| {
        let (status, ct, body) = answer(s);
        (status, vec![("Content-Type", ct.to_string())], body)
    })
}

/// An answer with any headers: status, headers, body.
pub type FullAnswer = (u16, Vec<(&'static str, String)>, Vec<u8>);

/// [`serve`] with the headers of each answer chosen by the closure (e.g. a redirect's
/// `Location`).
pub fn serve_with_headers(
    answer: impl Fn(&Seen) -> FullAnswer + Send + 'static,
) -> (String, Arc<Mutex<Vec<Seen>>>) {
    let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
    let port = server.server_addr().to_ip().unwrap().port();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for mut req in server.incoming_requests() {
            let mut body = Vec::new();
            let _ = req.as_reader().read_to_end(&mut body);
            let s = Seen {
                method: req.method().to_string(),
                url: req.url().to_string(),
                headers: req
                    .headers()
                    .iter()
                    .map(|h| (h.field.to_string(), h.value.to_string()))
                    .collect(),
                body,
            };
            let (status, headers, data) = answer(&s);
            log.lock().unwrap().push(s);
            let mut resp = tiny_http::Response::from_data(data).with_status_code(status);
            for (k, v) in headers {
                resp = resp.with_header(tiny_http::Header::from_bytes(k, v).unwrap());
            }
            let _ = req.respond(resp);
        }
    });
    (format!("http://127.0.0.1:{port}"), seen)
}
