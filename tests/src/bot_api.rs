//! A fake Telegram Bot API on 127.0.0.1 for `covo run`'s Telegram tests.
//!
//! It speaks the shapes of <https://core.telegram.org/bots/api>: every answer is
//! `{"ok": true, "result": …}` or `{"ok": false, "error_code", "description", "parameters"?}`;
//! methods live at `/bot<TOKEN>/<method>` and files at `/file/bot<TOKEN>/<path>`; a wrong token
//! gets `401 Unauthorized`. `getUpdates` is a real long poll: it confirms every update below
//! `offset` (they are gone for good, as on Telegram), then waits up to `timeout` seconds for
//! one at or above it. `sendMessage`, `editMessageText` and `sendPhoto` answer with a
//! `Message`, `answerCallbackQuery` with `true`, `getFile` with a `File` for the files the test
//! put. Each request is recorded when it arrives, before it is answered; one error can be
//! scripted for the next call of a method ([`FakeBotApi::fail_next`]).

use serde_json::{json, Value};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The fake bot's own user id.
pub const BOT_ID: i64 = 7_000_000_001;

/// One request as the fake saw it.
#[derive(Debug, Clone)]
pub struct Request {
    /// The method (`getUpdates`, …) or `file` for a download.
    pub method: String,
    /// The `Content-Type` header.
    pub content_type: String,
    /// The raw body.
    pub body: Vec<u8>,
    /// The body as JSON (`Null` when it is not JSON, e.g. multipart).
    pub json: Value,
    /// When it arrived.
    pub at: Instant,
}

#[derive(Default)]
struct State {
    updates: Vec<Value>,
    next_update: i64,
    next_message: i64,
    requests: Vec<Request>,
    failures: HashMap<String, VecDeque<(u16, Value)>>,
    files: HashMap<String, Vec<u8>>,
    /// Every text message as it reads now: id → (chat, text).
    messages: std::collections::BTreeMap<i64, (i64, String)>,
    stopped: bool,
}

struct Shared {
    token: String,
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A running fake; dropping it stops the server.
pub struct FakeBotApi {
    port: u16,
    shared: Arc<Shared>,
    server: Arc<tiny_http::Server>,
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// A `User`.
pub fn user(id: i64, first_name: &str) -> Value {
    json!({"id": id, "is_bot": false, "first_name": first_name,
           "username": first_name.to_lowercase(), "language_code": "en"})
}

/// A private chat's text `Message` from `user_id` (its chat id is the user id).
pub fn text_message(user_id: i64, name: &str, text: &str) -> Value {
    json!({"message": {
        "message_id": 1000 + (text.len() as i64),
        "from": user(user_id, name),
        "chat": {"id": user_id, "type": "private", "first_name": name},
        "date": now(),
        "text": text,
    }})
}

/// A voice `Message` (an OGG/Opus file the test put with [`FakeBotApi::put_file`]).
pub fn voice_message(user_id: i64, name: &str, file_id: &str, size: u64) -> Value {
    json!({"message": {
        "message_id": 2000,
        "from": user(user_id, name),
        "chat": {"id": user_id, "type": "private", "first_name": name},
        "date": now(),
        "voice": {"file_id": file_id, "file_unique_id": format!("u-{file_id}"),
                  "duration": 2, "mime_type": "audio/ogg", "file_size": size},
    }})
}

/// A `CallbackQuery` update: `from` pressed a button with `data` under the bot's `message`.
pub fn callback_query(from: i64, name: &str, message: &Value, data: &str) -> Value {
    json!({"callback_query": {
        "id": format!("cq-{from}-{}", fastrand_id()),
        "from": user(from, name),
        "message": message,
        "chat_instance": "-42",
        "data": data,
    }})
}

fn fastrand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(1);
    N.fetch_add(1, Ordering::Relaxed)
}

impl FakeBotApi {
    /// Binds 127.0.0.1 on a free port for a bot with `token`.
    pub fn start(token: &str) -> FakeBotApi {
        Self::start_on(token, 0)
    }

    /// Binds 127.0.0.1:`port` (0: a free one), e.g. a port a test first saw refused.
    pub fn start_on(token: &str, port: u16) -> FakeBotApi {
        let server =
            Arc::new(tiny_http::Server::http(("127.0.0.1", port)).expect("bind 127.0.0.1"));
        let port = server.server_addr().to_ip().expect("an IP address").port();
        let shared = Arc::new(Shared {
            token: token.to_string(),
            state: Mutex::new(State {
                next_update: 1,
                next_message: 1,
                ..Default::default()
            }),
            changed: Condvar::new(),
        });
        let (srv, sh) = (server.clone(), shared.clone());
        std::thread::spawn(move || {
            for req in srv.incoming_requests() {
                let sh = sh.clone();
                // A long poll holds its request: each one on its own thread.
                std::thread::spawn(move || handle(&sh, req));
            }
        });
        FakeBotApi {
            port,
            shared,
            server,
        }
    }

    /// `http://127.0.0.1:PORT`, for `[telegram] api_base`.
    pub fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Queues an update (without `update_id`: the fake numbers them); returns its id.
    pub fn push(&self, mut update: Value) -> i64 {
        let mut st = self.shared.lock();
        let id = st.next_update;
        st.next_update += 1;
        update["update_id"] = id.into();
        st.updates.push(update);
        self.shared.changed.notify_all();
        id
    }

    /// The next call of `method` fails with this status and error body (`error_code` and
    /// `description`, maybe `parameters`).
    pub fn fail_next(&self, method: &str, status: u16, body: Value) {
        self.shared
            .lock()
            .failures
            .entry(method.to_string())
            .or_default()
            .push_back((status, body));
    }

    /// A file `getFile` and the download serve.
    pub fn put_file(&self, file_id: &str, bytes: Vec<u8>) {
        self.shared.lock().files.insert(file_id.to_string(), bytes);
    }

    /// Every request so far.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.lock().requests.clone()
    }

    /// The requests of one method.
    pub fn calls(&self, method: &str) -> Vec<Request> {
        self.requests()
            .into_iter()
            .filter(|r| r.method == method)
            .collect()
    }

    /// Every text the bot sent or edited into `chat`, in order.
    pub fn texts_to(&self, chat: i64) -> Vec<String> {
        self.requests()
            .iter()
            .filter(|r| matches!(r.method.as_str(), "sendMessage" | "editMessageText"))
            .filter(|r| r.json["chat_id"].as_i64() == Some(chat))
            .filter_map(|r| r.json["text"].as_str().map(String::from))
            .collect()
    }

    /// Waits until `pred` holds for the requests so far; false after `timeout`.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&[Request]) -> bool) -> bool {
        let end = Instant::now() + timeout;
        let mut st = self.shared.lock();
        loop {
            if pred(&st.requests) {
                return true;
            }
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            st = self
                .shared
                .changed
                .wait_timeout(st, left.min(Duration::from_millis(100)))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Waits until a text to `chat` contains `needle`.
    pub fn wait_text(&self, chat: i64, needle: &str, timeout: Duration) -> bool {
        self.wait_for(timeout, |reqs| {
            reqs.iter().any(|r| {
                matches!(r.method.as_str(), "sendMessage" | "editMessageText")
                    && r.json["chat_id"].as_i64() == Some(chat)
                    && r.json["text"].as_str().is_some_and(|t| t.contains(needle))
            })
        })
    }

    /// The chat's text messages from the bot as they read now (edits applied), oldest first.
    pub fn chat_view(&self, chat: i64) -> Vec<String> {
        self.shared
            .lock()
            .messages
            .values()
            .filter(|(c, _)| *c == chat)
            .map(|(_, t)| t.clone())
            .collect()
    }

    /// The id of the newest message in `chat` that reads `text` now.
    pub fn message_id(&self, chat: i64, text: &str) -> Option<i64> {
        self.shared
            .lock()
            .messages
            .iter()
            .rev()
            .find(|(_, (c, t))| *c == chat && t == text)
            .map(|(id, _)| *id)
    }

    /// Updates not yet confirmed by an offset.
    pub fn unconfirmed(&self) -> usize {
        self.shared.lock().updates.len()
    }
}

impl Drop for FakeBotApi {
    fn drop(&mut self) {
        self.shared.lock().stopped = true;
        self.shared.changed.notify_all();
        self.server.unblock();
    }
}

fn answer(req: tiny_http::Request, status: u16, body: &Value) {
    let resp = tiny_http::Response::from_data(body.to_string().into_bytes())
        .with_status_code(status)
        .with_header(
            tiny_http::Header::from_bytes("Content-Type", "application/json").expect("a header"),
        );
    let _ = req.respond(resp);
}

fn ok(result: Value) -> Value {
    json!({"ok": true, "result": result})
}

fn handle(sh: &Shared, mut req: tiny_http::Request) {
    let url = req.url().to_string();
    let path = url.split('?').next().unwrap_or("").to_string();
    let content_type = req
        .headers()
        .iter()
        .find(|h| h.field.equiv("Content-Type"))
        .map(|h| h.value.to_string())
        .unwrap_or_default();
    let mut body = Vec::new();
    let _ = req.as_reader().read_to_end(&mut body);
    let json: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let bot_prefix = format!("/bot{}/", sh.token);
    let file_prefix = format!("/file/bot{}/", sh.token);
    let (method, file) = if let Some(m) = path.strip_prefix(&bot_prefix) {
        (m.to_string(), None)
    } else if let Some(f) = path.strip_prefix(&file_prefix) {
        ("file".to_string(), Some(f.to_string()))
    } else {
        let method = path.rsplit('/').next().unwrap_or("").to_string();
        record(sh, &method, &content_type, body, json);
        return answer(
            req,
            401,
            &json!({"ok": false, "error_code": 401, "description": "Unauthorized"}),
        );
    };
    record(sh, &method, &content_type, body.clone(), json.clone());
    let failure = sh
        .lock()
        .failures
        .get_mut(&method)
        .and_then(VecDeque::pop_front);
    if let Some((status, body)) = failure {
        return answer(req, status, &body);
    }
    if let Some(f) = file {
        let bytes = sh
            .lock()
            .files
            .iter()
            .find(|(id, _)| f.ends_with(&format!("{id}.oga")))
            .map(|(_, b)| b.clone());
        let _ = match bytes {
            Some(b) => req.respond(tiny_http::Response::from_data(b)),
            None => {
                req.respond(tiny_http::Response::from_string("Not Found").with_status_code(404))
            }
        };
        return;
    }
    let reply = match method.as_str() {
        "getUpdates" => ok(get_updates(sh, &json)),
        "getMe" => ok(
            json!({"id": BOT_ID, "is_bot": true, "first_name": "covo", "username": "covo_test_bot"}),
        ),
        "sendMessage" | "editMessageText" | "sendPhoto" => {
            let mut st = sh.lock();
            let (chat, text, caption) = if method == "sendPhoto" {
                let form = String::from_utf8_lossy(&body).into_owned();
                (
                    field(&form, "chat_id")
                        .and_then(|c| c.parse().ok())
                        .unwrap_or(0),
                    None,
                    field(&form, "caption"),
                )
            } else {
                (
                    json["chat_id"].as_i64().unwrap_or(0),
                    json["text"].as_str().map(String::from),
                    None,
                )
            };
            let id = match json["message_id"].as_i64() {
                Some(id) if method == "editMessageText" => id,
                _ => {
                    let id = st.next_message;
                    st.next_message += 1;
                    id
                }
            };
            let mut m = json!({
                "message_id": id,
                "from": {"id": BOT_ID, "is_bot": true, "first_name": "covo", "username": "covo_test_bot"},
                "chat": {"id": chat, "type": "private"},
                "date": now(),
            });
            if let Some(t) = text {
                st.messages.insert(id, (chat, t.clone()));
                m["text"] = t.into();
            }
            if let Some(markup) = json.get("reply_markup") {
                m["reply_markup"] = markup.clone();
            }
            if method == "editMessageText" {
                m["edit_date"] = now().into();
            }
            if method == "sendPhoto" {
                m["photo"] = json!([{"file_id": format!("photo-{id}"), "file_unique_id": format!("p{id}"),
                                     "width": 1, "height": 1, "file_size": 1}]);
                if let Some(c) = caption {
                    m["caption"] = c.into();
                }
            }
            ok(m)
        }
        "answerCallbackQuery" => ok(json!(true)),
        "getFile" => {
            let id = json["file_id"].as_str().unwrap_or("");
            let st = sh.lock();
            match st.files.get(id) {
                Some(b) => ok(json!({"file_id": id, "file_unique_id": format!("u-{id}"),
                                     "file_size": b.len(), "file_path": format!("voice/{id}.oga")})),
                None => {
                    drop(st);
                    return answer(
                        req,
                        400,
                        &json!({"ok": false, "error_code": 400,
                        "description": "Bad Request: invalid file_id"}),
                    );
                }
            }
        }
        _ => {
            return answer(
                req,
                404,
                &json!({"ok": false, "error_code": 404, "description": "Not Found"}),
            )
        }
    };
    answer(req, 200, &reply);
}

/// A text field of a multipart form (good enough for the fake's own bookkeeping).
fn field(form: &str, name: &str) -> Option<String> {
    let key = format!("name=\"{name}\"\r\n\r\n");
    let start = form.find(&key)? + key.len();
    let end = form[start..].find("\r\n")?;
    Some(form[start..start + end].to_string())
}

fn record(sh: &Shared, method: &str, content_type: &str, body: Vec<u8>, json: Value) {
    let mut st = sh.lock();
    st.requests.push(Request {
        method: method.to_string(),
        content_type: content_type.to_string(),
        body,
        json,
        at: Instant::now(),
    });
    sh.changed.notify_all();
}

fn get_updates(sh: &Shared, params: &Value) -> Value {
    let offset = params["offset"].as_i64();
    let limit = params["limit"].as_u64().unwrap_or(100).clamp(1, 100) as usize;
    let timeout = Duration::from_secs(params["timeout"].as_u64().unwrap_or(0).min(50));
    let end = Instant::now() + timeout;
    let mut st = sh.lock();
    if let Some(o) = offset {
        // Confirmed: gone for good.
        st.updates
            .retain(|u| u["update_id"].as_i64().unwrap_or(0) >= o);
    }
    loop {
        if !st.updates.is_empty() || st.stopped {
            break;
        }
        let left = end.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        st = sh
            .changed
            .wait_timeout(st, left)
            .unwrap_or_else(|p| p.into_inner())
            .0;
    }
    Value::Array(st.updates.iter().take(limit).cloned().collect())
}
