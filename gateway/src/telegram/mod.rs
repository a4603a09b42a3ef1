//! Chat from Telegram (`[telegram]`, cargo feature `telegram`): `covo run` long-polls the Bot
//! API and answers each allowed chat through the same agent, pipeline, policy and audit as
//! every other path (tool calls as `Via::Telegram`).
//!
//! - **Updates, exactly once.** `getUpdates` with a timeout and an offset; each batch is
//!   written to the store's inbox and the offset advanced in one transaction before the next
//!   poll confirms it to Telegram. A message is claimed before it reaches the agent and removed
//!   when its answer is out; a restart finds unclaimed rows and runs them, and tells the chat of
//!   a claimed one that the restart cut it short (never running it twice). See
//!   `store::telegram`.
//! - **Who.** Only users or chats in `allow`, or paired with `covo telegram pair CODE`, reach the
//!   agent. An unknown user gets a one-time code in covo's log (bounded, expiring) and one
//!   polite refusal; nothing of theirs reaches the model.
//! - **Chats.** One agent per chat (`daemon::Sessions`, bounded by `[run] max_sessions` and
//!   evicted when idle), turns of a chat in order (the agent's lock is fair), chats side by
//!   side; at most [`CHAT_QUEUE`] messages per chat are in hand (the one being answered and those
//!   waiting).
//! - **Answers** stream into one message edited at most every `edit_every_ms`, split at
//!   4,096 characters, in plain text (nothing to escape). Image artifacts that tools made
//!   (plots, camera snapshots) follow as photos.
//! - **Approvals**: inline Approve / Deny buttons (`approve.rs`).
//! - **Faults**: a 429 waits `retry_after`; network errors back off with jitter up to
//!   [`MAX_BACKOFF`]; a 401 is reported once and polling stops (the rest of `covo run` goes on).

pub mod api;
pub mod approve;
pub mod text;

use crate::agent::{self, Agent, Observer, Outcome, ToolResult};
use crate::config::TelegramConfig;
use crate::daemon::Sessions;
use crate::exec::Session;
use crate::llm::{ChatModel, ToolCall};
use crate::policy::Via;
use crate::runtime::Runtime;
use crate::store::telegram::{InboxRow, PairingCode};
pub use api::{backoff, MAX_BACKOFF};
use api::{Api, ApiError, CALL_TIMEOUT};
use approve::{Approvals, At, ChatApprover, Press};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Where the token comes from.
pub const TOKEN_ENV: &str = "COVO_TELEGRAM_TOKEN";
/// The Bot API unless `api_base` says otherwise.
pub const DEFAULT_API_BASE: &str = "https://api.telegram.org";
/// Messages of one chat in hand at once (the one being answered and those waiting behind it);
/// more are refused with a note.
pub const CHAT_QUEUE: usize = 8;
/// The longest text (in characters) taken from a user; longer is refused with a note.
pub const MAX_INPUT_CHARS: usize = 4096;
/// The most answer text kept while it streams (the final answer is sent whole).
pub const MAX_STREAM_BYTES: usize = 64 << 10;
/// Photos sent after one turn at most.
pub const MAX_PHOTOS: usize = 4;
/// The largest photo uploaded (Telegram's limit for photos is 10 MB).
pub const MAX_PHOTO_BYTES: u64 = 10 << 20;
/// The largest voice message downloaded for transcription.
pub const MAX_VOICE_BYTES: usize = 10 << 20;
/// Updates asked for per poll (Telegram's maximum is 100).
pub const POLL_LIMIT: u32 = 100;
/// How long a pairing code stays valid.
pub const PAIRING_TTL_SECS: i64 = 3600;
/// Unknown users remembered as already refused; beyond it the longest-remembered is forgotten
/// (only that one could be refused a second time).
pub const MAX_REFUSED: usize = 1024;
/// How long a refusal to an unknown user is retried (429s and network errors).
pub const REFUSAL_DEADLINE: Duration = Duration::from_secs(120);

/// The unknown users already sent a refusal.
type Refused = Arc<Mutex<RefusedSet>>;

/// The users already refused, at most [`MAX_REFUSED`], forgetting the oldest first.
#[derive(Default)]
struct RefusedSet {
    set: HashSet<i64>,
    order: std::collections::VecDeque<i64>,
}

impl RefusedSet {
    /// Remembers `user`; true when they were not remembered yet.
    fn insert(&mut self, user: i64) -> bool {
        if !self.set.insert(user) {
            return false;
        }
        self.order.push_back(user);
        while self.order.len() > MAX_REFUSED {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
        true
    }

    /// Forgets `user` (their refusal could not be sent).
    fn remove(&mut self, user: &i64) {
        if self.set.remove(user) {
            self.order.retain(|u| u != user);
        }
    }
}

/// Why the bot did not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    /// No token in the environment.
    #[error("[telegram] is configured but ${TOKEN_ENV} is not set (get a token from @BotFather)")]
    NoToken,
    /// The Bot API client could not be made.
    #[error("{0}")]
    Api(#[from] ApiError),
    /// The store failed.
    #[error("the store failed: {0}")]
    Store(String),
}

/// What the inbox keeps of one message (its own shape, not Telegram's).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
struct Incoming {
    user: i64,
    name: String,
    #[serde(default)]
    text: String,
    /// A voice message's `file_id`, and its size when Telegram gave one.
    #[serde(default)]
    voice: Option<(String, Option<u64>)>,
}

struct Settings {
    allow: Vec<i64>,
    poll_timeout: u64,
    edit_every: Duration,
    approval_timeout: Duration,
    confirm_actuate: bool,
}

impl Settings {
    fn from(c: &TelegramConfig) -> Self {
        Settings {
            allow: c.allow.clone(),
            poll_timeout: c.poll_timeout_secs.unwrap_or(30).clamp(1, 600),
            edit_every: Duration::from_millis(c.edit_every_ms.unwrap_or(1000).max(50)),
            approval_timeout: Duration::from_secs(c.approval_timeout_secs.unwrap_or(120).max(1)),
            confirm_actuate: c.confirm_actuate,
        }
    }
}

/// What every chat task shares.
struct Bot {
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    api: Arc<Api>,
    approvals: Arc<Approvals>,
    settings: Settings,
    /// Messages waiting per chat (behind its running turn).
    queued: Mutex<HashMap<i64, usize>>,
    /// The user each chat's current turn answers, for its approver.
    askers: Mutex<HashMap<i64, Arc<AtomicI64>>>,
    stop: CancellationToken,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn now_secs() -> i64 {
    chrono::Utc::now().timestamp()
}

/// A user's display name: `@username`, else the first name, else the id.
fn display_name(user: &Value) -> String {
    if let Some(u) = user["username"].as_str() {
        format!("@{u}")
    } else if let Some(f) = user["first_name"].as_str() {
        text::clip(f, 64)
    } else {
        user["id"].to_string()
    }
}

/// A user as log lines name them: the id first, then the username or, without one, the first
/// name quoted and escaped, so a first name "@alice" never reads like the user @alice, and a
/// name cannot forge a log line.
fn log_user(user: &Value) -> String {
    let id = user["id"].as_i64().unwrap_or(0);
    match (user["username"].as_str(), user["first_name"].as_str()) {
        (Some(u), _) => format!("id {id} (username @{u})"),
        (None, Some(f)) => format!("id {id} (no username; first name {:?})", text::clip(f, 64)),
        (None, None) => format!("id {id} (no username, no name)"),
    }
}

/// Runs the bot until `stop` (or a 401). Started by `covo run` when `[telegram]` is set.
pub async fn serve(
    rt: Arc<Runtime>,
    model: Option<Arc<dyn ChatModel>>,
    stop: CancellationToken,
) -> Result<(), TelegramError> {
    let Some(cfg) = rt.config().telegram.clone() else {
        return Ok(());
    };
    let token = std::env::var(TOKEN_ENV)
        .ok()
        .filter(|t| !t.trim().is_empty())
        .ok_or(TelegramError::NoToken)?;
    let base = cfg.api_base.as_deref().unwrap_or(DEFAULT_API_BASE);
    let api = Arc::new(Api::new(base, token.trim().to_string())?);
    let run = &rt.config().run;
    let mut chats = Sessions::new(
        run.max_sessions
            .unwrap_or(crate::daemon::DEFAULT_MAX_SESSIONS),
        Duration::from_secs(
            run.session_idle_secs
                .unwrap_or(crate::daemon::DEFAULT_SESSION_IDLE_SECS),
        ),
    );
    let bot = Arc::new(Bot {
        rt: rt.clone(),
        model,
        api: api.clone(),
        approvals: Arc::new(Approvals::new(cfg.admins.clone())),
        settings: Settings::from(&cfg),
        queued: Mutex::default(),
        askers: Mutex::default(),
        stop: stop.clone(),
    });
    let mut tasks = tokio::task::JoinSet::new();
    let refused: Refused = Arc::default();
    // Approval questions a crash or restart left with live buttons: closed, saying why.
    {
        let (rt, api) = (rt.clone(), api.clone());
        tasks.spawn(async move { approve::close_left_open(&rt, &api).await });
    }

    // What a crash or restart left in the inbox.
    let inbox = blocking(&rt, |s| s.telegram_inbox()).await?;
    for row in inbox {
        if row.claimed {
            tasks.spawn(interrupted(bot.clone(), row));
        } else {
            dispatch(&bot, &mut chats, &mut tasks, row);
        }
    }
    let mut offset = blocking(&rt, |s| s.telegram_offset()).await?.map(|o| o + 1);
    eprintln!(
        "covo run: Telegram on ({}), {} allowed id(s)",
        crate::secrets::redact_url(base),
        cfg.allow.len()
    );
    let mut failures: u32 = 0;
    let poll_timeout = bot.settings.poll_timeout;
    loop {
        let mut body = json!({"timeout": poll_timeout, "limit": POLL_LIMIT,
            "allowed_updates": ["message", "callback_query"]});
        if let Some(o) = offset {
            body["offset"] = o.into();
        }
        let got = tokio::select! {
            _ = stop.cancelled() => break,
            r = api.call_once("getUpdates", &body, Duration::from_secs(poll_timeout + 15)) => r,
        };
        while tasks.try_join_next().is_some() {}
        chats.evict_idle(Instant::now());
        let wait = match got {
            Ok(updates) => {
                failures = 0;
                let updates = updates.as_array().cloned().unwrap_or_default();
                match accept(&bot, &mut chats, &mut tasks, &refused, updates).await {
                    Ok(Some(last)) => {
                        offset = Some(last + 1);
                        continue;
                    }
                    Ok(None) => continue,
                    Err(e) => {
                        // Not stored: the same updates come again on the next poll.
                        tracing::warn!(error = %e, "could not store Telegram updates; polling again shortly");
                        Duration::from_secs(1)
                    }
                }
            }
            Err(ApiError::Unauthorized) => {
                let e = ApiError::Unauthorized;
                tracing::error!("{e}; Telegram polling stopped");
                eprintln!("covo run: {e}; Telegram polling stopped");
                break;
            }
            Err(ApiError::RetryAfter(s)) => {
                tracing::warn!(seconds = s, "Telegram asked to wait (429)");
                Duration::from_secs(s.min(3600))
            }
            Err(e) => {
                failures = failures.saturating_add(1);
                let wait = backoff(failures);
                tracing::warn!(error = %e, wait_ms = wait.as_millis() as u64, "Telegram poll failed; backing off");
                wait
            }
        };
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(wait) => {}
        }
    }
    // Turns in flight were cancelled with `stop`; let them send what they have.
    let _ = tokio::time::timeout(Duration::from_secs(5), async {
        while tasks.join_next().await.is_some() {}
    })
    .await;
    Ok(())
}

/// Runs `f` on the store on the blocking pool.
async fn blocking<T: Send + 'static>(
    rt: &Arc<Runtime>,
    f: impl FnOnce(&crate::store::Store) -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, TelegramError> {
    let rt = rt.clone();
    tokio::task::spawn_blocking(move || rt.store().and_then(f))
        .await
        .map_err(|e| TelegramError::Store(e.to_string()))?
        .map_err(|e| TelegramError::Store(e.to_string()))
}

/// Handles one batch: approvals' presses at once, messages of allowed users into the inbox
/// (stored, then dispatched), unknown users refused. Returns the batch's last `update_id`.
async fn accept(
    bot: &Arc<Bot>,
    chats: &mut Sessions,
    tasks: &mut tokio::task::JoinSet<()>,
    refused: &Refused,
    updates: Vec<Value>,
) -> Result<Option<i64>, TelegramError> {
    let mut last = None;
    let mut rows: Vec<(i64, i64, String)> = Vec::new();
    for u in updates {
        let Some(id) = u["update_id"].as_i64() else {
            continue;
        };
        last = Some(last.map_or(id, |l: i64| l.max(id)));
        if let Some(cq) = u.get("callback_query") {
            tasks.spawn(press(bot.clone(), cq.clone()));
            continue;
        }
        let Some(m) = u.get("message") else { continue };
        let (Some(chat), Some(user)) = (m["chat"]["id"].as_i64(), m["from"]["id"].as_i64()) else {
            continue;
        };
        let name = display_name(&m["from"]);
        let allowed = bot.settings.allow.contains(&user) || bot.settings.allow.contains(&chat) || {
            blocking(&bot.rt, move |s| s.telegram_paired(user)).await?
        };
        if !allowed {
            stranger(bot, tasks, refused, chat, &m["from"], &name).await;
            continue;
        }
        let text = m["text"]
            .as_str()
            .or_else(|| m["caption"].as_str())
            .unwrap_or("");
        let incoming = Incoming {
            user,
            name,
            // Kept one character over the limit at most: enough to refuse it in words.
            text: match text.char_indices().nth(MAX_INPUT_CHARS + 1) {
                Some((i, _)) => text[..i].to_string(),
                None => text.to_string(),
            },
            voice: m["voice"]["file_id"]
                .as_str()
                .map(|f| (f.to_string(), m["voice"]["file_size"].as_u64())),
        };
        if incoming.text.is_empty() && incoming.voice.is_none() {
            continue;
        }
        rows.push((
            id,
            chat,
            serde_json::to_string(&incoming).unwrap_or_default(),
        ));
    }
    let Some(last) = last else { return Ok(None) };
    let stored = rows.clone();
    blocking(&bot.rt, move |s| s.telegram_accept(&stored, last)).await?;
    for (update_id, chat_id, body) in rows {
        dispatch(
            bot,
            chats,
            tasks,
            InboxRow {
                update_id,
                chat_id,
                body,
                claimed: false,
            },
        );
    }
    Ok(Some(last))
}

/// An unknown user: a pairing code in the log, one polite refusal.
async fn stranger(
    bot: &Arc<Bot>,
    tasks: &mut tokio::task::JoinSet<()>,
    refused: &Refused,
    chat: i64,
    from: &Value,
    name: &str,
) {
    let user = from["id"].as_i64().unwrap_or(0);
    let who = log_user(from);
    let stored = name.to_string();
    let code = blocking(&bot.rt, move |s| {
        s.telegram_pairing_code(user, chat, &stored, now_secs(), PAIRING_TTL_SECS)
    })
    .await;
    match code {
        Ok(PairingCode::New(code)) => tracing::warn!(
            "Telegram user {who}, chat {chat}, is not allowed; to let them in, run: {}{code}  (valid for {} min), or: covo telegram allow {user}",
            crate::secrets::PAIRING_HINT,
            PAIRING_TTL_SECS / 60
        ),
        Ok(PairingCode::Pending) => tracing::warn!(
            "Telegram user {who} is not allowed (a pairing code is already in the log; or: covo telegram allow {user})"
        ),
        Err(e) => tracing::warn!(error = %e, "Telegram user {who} is not allowed; no pairing code (covo telegram allow {user} lets them in)"),
    }
    let first = lock(refused).insert(user);
    if first {
        let (api, refused) = (bot.api.clone(), refused.clone());
        tasks.spawn(async move {
            let text = "Hello! This bot is private, so I cannot chat with you yet. \
                        If you know its owner, ask them to let you in: covo's log has a pairing code for you.";
            // Waits out a 429 or a network error for a while; if it still fails, the user is
            // not remembered as refused, so their next message tries again.
            if let Err(e) = api
                .call("sendMessage", &json!({"chat_id": chat, "text": text}), REFUSAL_DEADLINE)
                .await
            {
                lock(&refused).remove(&user);
                tracing::warn!(error = %e, "could not send the refusal; the next message from this user tries again");
            }
        });
    }
}

/// A press of an approval button.
async fn press(bot: Arc<Bot>, cq: Value) {
    let id = cq["id"].as_str().unwrap_or("").to_string();
    let by = cq["from"]["id"].as_i64().unwrap_or(0);
    let name = display_name(&cq["from"]);
    // The message the button is on (absent for buttons of inline messages, which covo never
    // sends: then nothing matches).
    let at = At {
        chat: cq["message"]["chat"]["id"].as_i64().unwrap_or(0),
        message: cq["message"]["message_id"].as_i64().unwrap_or(0),
    };
    let (note, alert) = match approve::parse_data(cq["data"].as_str().unwrap_or("")) {
        None => ("This button is not one of mine.", true),
        Some((ap, yes)) => match bot.approvals.answer(ap, at, by, &name, yes) {
            Press::Answered if yes => ("Approved.", false),
            Press::Answered => ("Denied.", false),
            Press::Gone => ("This approval is no longer waiting.", true),
            Press::Elsewhere => {
                tracing::warn!(
                    user = by,
                    "a Telegram approval button was pressed away from its question"
                );
                (
                    "This button does not belong to this question; nothing was changed.",
                    true,
                )
            }
            Press::NotAllowed => {
                tracing::warn!(
                    user = by,
                    "a Telegram user pressed another user's approval button"
                );
                (
                    "Only the person who asked, or an admin, can answer this.",
                    true,
                )
            }
        },
    };
    let body = json!({"callback_query_id": id, "text": note, "show_alert": alert});
    if let Err(e) = bot
        .api
        .call("answerCallbackQuery", &body, CALL_TIMEOUT)
        .await
    {
        tracing::warn!(error = %e, "could not answer the button press");
    }
}

/// Hands an inbox row to its chat's agent, in order; refuses it when the chat's queue or the
/// session table is full.
fn dispatch(
    bot: &Arc<Bot>,
    chats: &mut Sessions,
    tasks: &mut tokio::task::JoinSet<()>,
    row: InboxRow,
) {
    let chat = row.chat_id;
    let waiting = *lock(&bot.queued).get(&chat).unwrap_or(&0);
    if waiting >= CHAT_QUEUE {
        tasks.spawn(refuse_row(
            bot.clone(),
            row,
            format!("{CHAT_QUEUE} of your messages are already waiting; this one was dropped. Send it again when I have answered."),
        ));
        return;
    }
    let asker = {
        let mut askers = lock(&bot.askers);
        // Bounded with the sessions: drop the chats whose agent (and so approver, which holds
        // the other reference) was evicted.
        if askers.len() > 2 * chats.len() + 8 {
            askers.retain(|_, a| Arc::strong_count(a) > 1);
        }
        askers.entry(chat).or_default().clone()
    };
    let made = chats.get_or_make(&chat.to_string(), Instant::now(), || {
        let approver = ChatApprover {
            chat,
            asker,
            approvals: bot.approvals.clone(),
            api: bot.api.clone(),
            rt: bot.rt.clone(),
            handle: tokio::runtime::Handle::current(),
            timeout: bot.settings.approval_timeout,
            confirm_actuate: bot.settings.confirm_actuate,
        };
        Agent::new(
            bot.rt.clone(),
            bot.model.clone(),
            Session::new(String::new(), "telegram").with_approver(Arc::new(approver)),
        )
        .with_via(Via::Telegram)
    });
    let Some(agent) = made else {
        tasks.spawn(refuse_row(
            bot.clone(),
            row,
            format!(
                "I am busy with {} other chats; send your message again in a moment.",
                chats.len()
            ),
        ));
        return;
    };
    *lock(&bot.queued).entry(chat).or_default() += 1;
    tasks.spawn(run_row(bot.clone(), agent, row));
}

/// Answers a row with `note` instead of running it, and removes it.
async fn refuse_row(bot: Arc<Bot>, row: InboxRow, note: String) {
    match blocking(&bot.rt, move |s| s.telegram_claim(row.update_id)).await {
        Ok(true) => send_text(&bot.api, row.chat_id, &note).await,
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "could not claim a Telegram message to refuse it"),
    }
    let id = row.update_id;
    let _ = blocking(&bot.rt, move |s| s.telegram_done(id)).await;
}

/// A row a restart cut short: say so, never run it again.
async fn interrupted(bot: Arc<Bot>, row: InboxRow) {
    let what = serde_json::from_str::<Incoming>(&row.body)
        .map(|m| {
            if m.text.is_empty() {
                "your voice message".to_string()
            } else {
                format!("\"{}\"", text::clip(&m.text, 80))
            }
        })
        .unwrap_or_else(|_| "your last message".into());
    send_text(
        &bot.api,
        row.chat_id,
        &format!("covo restarted before it finished answering {what}; please send it again if you still need it."),
    )
    .await;
    let id = row.update_id;
    let _ = blocking(&bot.rt, move |s| s.telegram_done(id)).await;
}

/// One message of a chat, run under its agent's lock (so in order).
async fn run_row(bot: Arc<Bot>, agent: Arc<tokio::sync::Mutex<Agent>>, row: InboxRow) {
    let chat = row.chat_id;
    // The row counts against its chat's bound until it is answered, not only while it waits:
    // the bound does not depend on how soon the first one starts.
    let _in_hand = InHand {
        bot: bot.clone(),
        chat,
    };
    let mut agent = agent.lock().await;
    let id = row.update_id;
    match blocking(&bot.rt, move |s| s.telegram_claim(id)).await {
        Ok(true) => {}
        Ok(false) => return,
        Err(e) => {
            // Without a claim there is no exactly-once: it stays in the inbox, unclaimed, and
            // runs at the next start.
            tracing::warn!(error = %e, "could not claim a Telegram message; it waits in the inbox for the next start");
            return;
        }
    }
    let Ok(msg) = serde_json::from_str::<Incoming>(&row.body) else {
        let _ = blocking(&bot.rt, move |s| s.telegram_done(id)).await;
        return;
    };
    if let Some(a) = lock(&bot.askers).get(&chat) {
        a.store(msg.user, Ordering::Relaxed);
    }
    if agent.session().id.is_empty() {
        new_conversation(&bot, &mut agent, chat).await;
    }
    handle(&bot, &mut agent, chat, msg).await;
    let _ = blocking(&bot.rt, move |s| s.telegram_done(id)).await;
}

/// One of a chat's messages in hand (waiting or being answered); dropping it frees its place.
struct InHand {
    bot: Arc<Bot>,
    chat: i64,
}

impl Drop for InHand {
    fn drop(&mut self) {
        let mut q = lock(&self.bot.queued);
        if let Some(n) = q.get_mut(&self.chat) {
            *n -= 1;
            if *n == 0 {
                q.remove(&self.chat);
            }
        }
    }
}

/// Starts a new conversation for the chat's agent, keeping its approver.
async fn new_conversation(bot: &Arc<Bot>, agent: &mut Agent, chat: i64) {
    let approver = agent.session().approver.clone();
    let rt = bot.rt.clone();
    let title = format!("telegram chat {chat}");
    let session = tokio::task::spawn_blocking(move || agent::new_session(&rt, "telegram", &title))
        .await
        .unwrap_or_else(|_| Session::new(format!("transient-telegram-{chat}"), "telegram"));
    agent.reset(match approver {
        Some(a) => session.with_approver(a),
        None => session,
    });
}

const HELP: &str = "Hello! I am covo, the agent on this board. Ask me anything: I can read its sensors, \
switch its outputs (asking you first when it matters), remember and plan.\n\n\
/new starts a new conversation\n/tools lists what I can use\n/usage shows the tokens this conversation used\n\
/status shows the board, broker, peer and model";

async fn handle(bot: &Arc<Bot>, agent: &mut Agent, chat: i64, msg: Incoming) {
    let text = msg.text.trim();
    if text.chars().count() > MAX_INPUT_CHARS {
        send_text(
            &bot.api,
            chat,
            &format!("That message is too long for me: {MAX_INPUT_CHARS} characters at most."),
        )
        .await;
        return;
    }
    if let Some(cmd) = text.strip_prefix('/') {
        let word = cmd.split_whitespace().next().unwrap_or("");
        let word = word.split('@').next().unwrap_or("");
        let reply = match word {
            "start" | "help" => Some(HELP.to_string()),
            "new" => {
                new_conversation(bot, agent, chat).await;
                Some("Started a new conversation.".into())
            }
            "tools" => Some(tools_text(&bot.rt)),
            "usage" => Some(usage_text(&bot.rt, agent.session().id.clone()).await),
            "status" => Some(status_text(bot).await),
            _ => None,
        };
        if let Some(r) = reply {
            send_text(&bot.api, chat, &r).await;
            return;
        }
    }
    let text = match &msg.voice {
        Some((file_id, size)) => match transcribe(bot, agent.session(), file_id, *size).await {
            Ok(t) => {
                send_text(&bot.api, chat, &format!("(heard) {}", text::clip(&t, 500))).await;
                t
            }
            Err(why) => {
                send_text(&bot.api, chat, &why).await;
                return;
            }
        },
        None => text.to_string(),
    };
    chat_turn(bot, agent, chat, &text).await;
}

/// A voice message as text, through the peer's `transcribe_audio`; `Err` is what to tell the user.
async fn transcribe(
    bot: &Arc<Bot>,
    session: &Session,
    file_id: &str,
    size: Option<u64>,
) -> Result<String, String> {
    let tool = &covo_core::catalog::media::TRANSCRIBE_AUDIO;
    let available = bot
        .rt
        .owned()
        .get(tool.name)
        .is_some_and(|s| bot.rt.availability(s).available);
    if !available {
        return Err("No transcription is available (no connected peer serves transcribe_audio), so I cannot listen to voice messages here. Please type it.".into());
    }
    if size.is_some_and(|s| s > MAX_VOICE_BYTES as u64) {
        return Err(format!(
            "That voice message is too long for me ({} MiB at most).",
            MAX_VOICE_BYTES >> 20
        ));
    }
    let file = bot
        .api
        .call("getFile", &json!({"file_id": file_id}), CALL_TIMEOUT)
        .await
        .map_err(|e| format!("I could not fetch the voice message: {e}"))?;
    let path = file["file_path"]
        .as_str()
        .ok_or("I could not fetch the voice message: Telegram gave no file path")?;
    let bytes = bot
        .api
        .download(path, MAX_VOICE_BYTES)
        .await
        .map_err(|e| format!("I could not fetch the voice message: {e}"))?;
    let (rt, session) = (bot.rt.clone(), session.clone());
    let out = tokio::task::spawn_blocking(move || {
        let (id, _) = crate::artifacts::save(rt.home(), &bytes, "audio/ogg")
            .map_err(|e| format!("I could not keep the voice message: {e}"))?;
        rt.call(&session, Via::Telegram, tool.name, json!({"audio": id}))
            .map_err(|e| format!("Transcription failed: {e}"))
    })
    .await
    .map_err(|e| format!("Transcription failed: {e}"))??;
    match out["text"].as_str() {
        Some(t) if !t.trim().is_empty() => Ok(t.trim().to_string()),
        _ => Err("I heard nothing I could make out in that voice message.".into()),
    }
}

fn tools_text(rt: &Runtime) -> String {
    let names: Vec<&str> = rt
        .owned()
        .tools
        .iter()
        .filter(|s| rt.availability(s).available)
        .map(|s| s.name)
        .collect();
    format!(
        "{} tools are available to me now:\n{}",
        names.len(),
        names.join(", ")
    )
}

async fn usage_text(rt: &Arc<Runtime>, session: String) -> String {
    if session.is_empty() {
        return "This conversation has used no tokens yet.".into();
    }
    match blocking(rt, move |s| s.usage(&session)).await {
        Ok(turns) => {
            let (i, o) = turns.iter().fold((0, 0), |(i, o), t| {
                (i + t.usage.input_tokens, o + t.usage.output_tokens)
            });
            format!(
                "This conversation: {} turns, {i} input and {o} output tokens.",
                turns.len()
            )
        }
        Err(e) => format!("I cannot read the usage: {e}"),
    }
}

async fn status_text(bot: &Arc<Bot>) -> String {
    let rt = bot.rt.clone();
    let (broker, peer) = tokio::task::spawn_blocking(move || match rt.config().mqtt {
        None => (
            "off (no [mqtt])".to_string(),
            "none (no [mqtt])".to_string(),
        ),
        Some(_) => match rt.peer_link() {
            None => ("did not start (see the log)".into(), "unknown".into()),
            Some(l) => {
                let broker = if l.is_connected() {
                    "connected".to_string()
                } else {
                    "not connected".to_string()
                };
                let peers = l.peers();
                let peer = if peers.is_empty() {
                    "none online".to_string()
                } else {
                    peers
                        .iter()
                        .map(|(p, tools)| format!("{p} ({} tools)", tools.len()))
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                (broker, peer)
            }
        },
    })
    .await
    .unwrap_or_else(|_| ("unknown".into(), "unknown".into()));
    let def = bot.rt.board().def();
    format!(
        "Board: {} ({} devices)\nBroker: {broker}\nPeer: {peer}\nModel: {}",
        def.board.name,
        def.device.len(),
        bot.model
            .as_ref()
            .map_or("none configured".to_string(), |m| {
                crate::secrets::redact_urls_in(&m.describe())
            })
    )
}

/// What a turn's observer shares with the task that edits the message.
#[derive(Default)]
struct Streamed {
    text: String,
    status: Option<String>,
    changed: bool,
}

struct TurnObserver {
    shared: Arc<Mutex<Streamed>>,
    photos: Vec<String>,
}

impl Observer for TurnObserver {
    fn on_text(&mut self, delta: &str) {
        let mut s = lock(&self.shared);
        if s.text.len() + delta.len() <= MAX_STREAM_BYTES {
            s.text.push_str(delta);
            s.changed = true;
        }
    }

    fn on_tool_call(&mut self, call: &ToolCall) {
        let mut s = lock(&self.shared);
        // The next model step writes anew; show what runs meanwhile.
        s.text.clear();
        s.status = Some(format!("… {}", call.name));
        s.changed = true;
    }

    fn on_tool_result(&mut self, _call: &ToolCall, r: &ToolResult) {
        if !r.is_error {
            collect_artifacts(&agent::result_json(r), &mut self.photos);
        }
    }
}

/// Artifact ids in a tool result (`"artifact": "art-…"` or `{"artifact": {"id": "art-…"}}`).
fn collect_artifacts(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                match x {
                    Value::String(s)
                        if (k == "artifact" || k == "id") && crate::artifacts::is_id(s) =>
                    {
                        if out.len() < MAX_PHOTOS && !out.contains(s) {
                            out.push(s.clone());
                        }
                    }
                    _ => collect_artifacts(x, out),
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|x| collect_artifacts(x, out)),
        _ => {}
    }
}

/// The messages one answer occupies, kept in step with its text.
struct Reply {
    chat: i64,
    sent: Vec<(i64, String)>,
    /// After a 429: no call before this.
    quiet_until: Option<Instant>,
}

impl Reply {
    /// Makes the chat show `text`: edits the messages that differ, sends the pieces that are
    /// new. Stops at the first failed call (the next sync goes on from there).
    async fn sync(&mut self, api: &Api, text: &str) -> Result<(), ApiError> {
        if let Some(left) = self
            .quiet_until
            .map(|q| q.saturating_duration_since(Instant::now()))
            .filter(|l| !l.is_zero())
        {
            return Err(ApiError::RetryAfter(left.as_secs_f64().ceil() as u64));
        }
        let r = self.sync_now(api, text).await;
        if let Err(ApiError::RetryAfter(s)) = &r {
            self.quiet_until = Some(Instant::now() + Duration::from_secs(*s));
        }
        r
    }

    async fn sync_now(&mut self, api: &Api, text: &str) -> Result<(), ApiError> {
        for (i, piece) in text::split(text, text::MAX_MESSAGE).into_iter().enumerate() {
            if let Some((id, shown)) = self.sent.get(i) {
                if shown == piece {
                    continue;
                }
                let body = json!({"chat_id": self.chat, "message_id": id, "text": piece});
                match api.call_once("editMessageText", &body, CALL_TIMEOUT).await {
                    Ok(_) => {}
                    Err(ApiError::Refused { description, .. })
                        if description.contains("not modified") => {}
                    Err(e) => return Err(e),
                }
                self.sent[i].1 = piece.to_string();
            } else {
                let body = json!({"chat_id": self.chat, "text": piece});
                let m = api.call_once("sendMessage", &body, CALL_TIMEOUT).await?;
                let id = m["message_id"]
                    .as_i64()
                    .ok_or_else(|| ApiError::Malformed {
                        method: "sendMessage".into(),
                        detail: "no message_id".into(),
                    })?;
                self.sent.push((id, piece.to_string()));
            }
        }
        Ok(())
    }
}

/// Sends a text, split as needed.
async fn send_text(api: &Api, chat: i64, text: &str) {
    let mut r = Reply {
        chat,
        sent: Vec::new(),
        quiet_until: None,
    };
    finish(api, &mut r, text).await;
}

/// Syncs the final text, waiting out a 429's `retry_after` (30 s at most) or a second after
/// another failure, four tries in all.
async fn finish(api: &Api, r: &mut Reply, text: &str) {
    let text = if text.trim().is_empty() {
        "(no answer)"
    } else {
        text
    };
    for _ in 0..4 {
        let wait = match r.sync(api, text).await {
            Ok(()) => return,
            Err(ApiError::Unauthorized) => break,
            Err(ApiError::RetryAfter(s)) => Duration::from_secs(s.min(30)),
            Err(e) => {
                tracing::debug!(error = %e, "could not send the answer; trying again");
                Duration::from_secs(1)
            }
        };
        tokio::time::sleep(wait).await;
    }
    tracing::warn!(chat = r.chat, "could not deliver an answer to Telegram");
}

async fn chat_turn(bot: &Arc<Bot>, agent: &mut Agent, chat: i64, text: &str) {
    let shared = Arc::new(Mutex::new(Streamed::default()));
    let mut obs = TurnObserver {
        shared: shared.clone(),
        photos: Vec::new(),
    };
    let mut reply = Reply {
        chat,
        sent: Vec::new(),
        quiet_until: None,
    };
    let token = bot.stop.child_token();
    let report = {
        let turn = agent.turn(text, &token, &mut obs);
        tokio::pin!(turn);
        let mut tick = tokio::time::interval(bot.settings.edit_every);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tokio::select! {
                r = &mut turn => break r,
                _ = tick.tick() => {
                    let preview = {
                        let mut s = lock(&shared);
                        if !s.changed {
                            continue;
                        }
                        s.changed = false;
                        if s.text.trim().is_empty() {
                            s.status.clone().unwrap_or_default()
                        } else {
                            s.text.clone()
                        }
                    };
                    if !preview.trim().is_empty() {
                        // A failed edit (a 429 included) waits for the next tick.
                        if let Err(e) = reply.sync(&bot.api, &preview).await {
                            tracing::debug!(error = %e, "could not update the streaming answer");
                        }
                    }
                }
            }
        }
    };
    let text = match report.outcome {
        Outcome::Answer(a) => a,
        Outcome::StepBudget { steps } => {
            format!("I stopped after {steps} model calls (the step budget).")
        }
        Outcome::Cancelled => "Cancelled (covo is stopping).".into(),
        Outcome::Failed(e) => format!("Sorry, that failed: {e}"),
    };
    finish(&bot.api, &mut reply, &text).await;
    // Messages the preview used beyond the answer's own.
    let pieces = text::split(&text, text::MAX_MESSAGE).len();
    for (id, _) in reply.sent.iter().skip(pieces.max(1)) {
        let body = json!({"chat_id": chat, "message_id": id, "text": "(see above)"});
        let _ = bot.api.call("editMessageText", &body, CALL_TIMEOUT).await;
    }
    for id in obs.photos {
        send_photo(bot, chat, &id).await;
    }
}

/// Uploads an image artifact as a photo (`sendPhoto`, multipart).
async fn send_photo(bot: &Arc<Bot>, chat: i64, id: &str) {
    let (home, id2) = (bot.rt.home().to_path_buf(), id.to_string());
    let loaded = tokio::task::spawn_blocking(move || crate::artifacts::load(&home, &id2))
        .await
        .ok()
        .flatten();
    let Some((bytes, ct)) = loaded else { return };
    if !ct.starts_with("image/") {
        return;
    }
    if bytes.len() as u64 > MAX_PHOTO_BYTES {
        send_text(
            &bot.api,
            chat,
            &format!(
                "The image {id} is too large to send ({} MiB at most).",
                MAX_PHOTO_BYTES >> 20
            ),
        )
        .await;
        return;
    }
    let ext = ct.trim_start_matches("image/");
    let filename = format!("{id}.{ext}");
    let fields = [("chat_id", chat.to_string()), ("caption", id.to_string())];
    for _ in 0..3 {
        match bot
            .api
            .upload("sendPhoto", &fields, ("photo", &filename, ct, &bytes))
            .await
        {
            Ok(_) => return,
            Err(ApiError::RetryAfter(s)) if s <= 30 => {
                tokio::time::sleep(Duration::from_secs(s)).await
            }
            Err(e) => {
                tracing::warn!(error = %e, "could not send a photo");
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {

    /// Issue 24 defect 14: the memory was cleared when it reached its bound, so every stranger
    /// seen before was refused again.
    #[test]
    fn the_refused_memory_forgets_only_its_oldest() {
        let mut r = RefusedSet::default();
        for u in 0..(MAX_REFUSED as i64 + 100) {
            assert!(r.insert(u));
        }
        assert_eq!(r.set.len(), MAX_REFUSED);
        assert_eq!(r.order.len(), MAX_REFUSED);
        // The first 100 were forgotten, every later one is still refused.
        assert!(r.insert(0));
        for u in 200..(MAX_REFUSED as i64 + 100) {
            assert!(!r.insert(u), "{u} refused twice");
        }
        r.remove(&500);
        assert!(r.insert(500));
    }

    #[test]
    fn log_lines_name_users_by_id_and_quote_names() {
        let real = log_user(&json!({"id": 1, "username": "alice", "first_name": "Alice"}));
        let fake = log_user(&json!({"id": 2, "first_name": "@alice"}));
        let forged =
            log_user(&json!({"id": 3, "first_name": "x\nTelegram user id 1 (username @alice)"}));
        assert_eq!(real, "id 1 (username @alice)");
        assert_eq!(fake, "id 2 (no username; first name \"@alice\")");
        assert!(!forged.contains('\n'), "{forged}");
        assert!(forged.starts_with("id 3 "), "{forged}");
    }
    use super::*;

    #[test]
    fn artifacts_in_results_are_found() {
        let mut out = Vec::new();
        collect_artifacts(
            &json!({"artifact": "art-00aa", "nested": {"artifact": {"id": "art-00bb", "path": "/x"}},
                    "id": "not-an-artifact"}),
            &mut out,
        );
        out.sort();
        assert_eq!(out, vec!["art-00aa".to_string(), "art-00bb".to_string()]);
    }

    #[test]
    fn backoff_grows_with_jitter_and_is_bounded() {
        for n in 1..40 {
            let d = backoff(n);
            assert!(d <= MAX_BACKOFF, "{d:?}");
            assert!(d >= Duration::from_millis(500), "{d:?}");
        }
        assert!(backoff(1) <= Duration::from_secs(1));
        assert!(backoff(30) >= MAX_BACKOFF / 2);
    }
}
