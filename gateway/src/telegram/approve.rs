//! Approvals as inline keyboard buttons. A chat's [`ChatApprover`] is its session's approver
//! (`Session::with_approver`): asked by the pipeline's approval hook on the blocking thread
//! that runs the tool, it posts the question with Approve / Deny buttons, registers it in
//! [`Approvals`] (bounded) and blocks that thread on a channel until a press or the deadline.
//! The bot's loop answers the `callback_query` of a press through [`Approvals::answer`]: only
//! the user who asked (or an admin) may press; no answer in time is a denial.
//!
//! An approval's id is 128 random bits, never reused, and a press counts only from the chat
//! and message that asked: a button from before a restart, or one copied into another chat,
//! matches nothing and changes nothing. Questions with live buttons are remembered in the
//! store until they are closed, so the next start closes what a crash left open
//! ([`close_left_open`]).

use super::api::{Api, CALL_TIMEOUT};
use super::text::clip;
use crate::policy::Approver;
use crate::runtime::Runtime;
use crate::store::telegram::OpenApproval;
use covo_core::spec::{Effect, ToolSpec};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Approvals waiting for a press at once, over all chats; one more is denied at once. Each
/// holds one thread of `covo run`'s blocking pool (16 threads, 8 of which swarm calls may
/// take) while it waits, so this stays well below what is left.
pub const MAX_PENDING: usize = 4;

struct Waiting {
    asker: i64,
    chat: i64,
    /// The question's message, once sent.
    message: Option<i64>,
    reply: mpsc::SyncSender<(bool, String)>,
}

/// The approvals waiting for a button press.
#[derive(Default)]
pub struct Approvals {
    waiting: Mutex<HashMap<String, Waiting>>,
    admins: Vec<i64>,
}

/// What a press did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// It answered the approval.
    Answered,
    /// No approval with this id is waiting (answered, timed out, or from before a restart).
    Gone,
    /// The button was pressed somewhere other than the question it belongs to.
    Elsewhere,
    /// This user may not answer it.
    NotAllowed,
}

/// Where a button was pressed: the chat and the message carrying it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// The chat.
    pub chat: i64,
    /// The message with the buttons.
    pub message: i64,
}

impl Approvals {
    /// With the users who may answer anyone's approvals.
    pub fn new(admins: Vec<i64>) -> Self {
        Approvals {
            admins,
            ..Default::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Waiting>> {
        self.waiting.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// How many are waiting.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn register(&self, asker: i64, chat: i64) -> Option<(String, mpsc::Receiver<(bool, String)>)> {
        let mut w = self.lock();
        if w.len() >= MAX_PENDING {
            return None;
        }
        let id = crate::secrets::approval_id();
        let (tx, rx) = mpsc::sync_channel(1);
        w.insert(
            id.clone(),
            Waiting {
                asker,
                chat,
                message: None,
                reply: tx,
            },
        );
        Some((id, rx))
    }

    /// Binds approval `id` to the message that asked.
    fn sent(&self, id: &str, message: i64) {
        if let Some(w) = self.lock().get_mut(id) {
            w.message = Some(message);
        }
    }

    fn forget(&self, id: &str) {
        self.lock().remove(id);
    }

    /// A press of Approve (`yes`) or Deny on approval `id`, at `at`, by user `by` (shown as
    /// `name`).
    pub fn answer(&self, id: &str, at: At, by: i64, name: &str, yes: bool) -> Press {
        let mut w = self.lock();
        let Some(waiting) = w.get(id) else {
            return Press::Gone;
        };
        // The question's message is known once its send returned; a press can only come
        // after Telegram showed it, so before that the chat alone must match.
        if waiting.chat != at.chat || waiting.message.is_some_and(|m| m != at.message) {
            return Press::Elsewhere;
        }
        if waiting.asker != by && !self.admins.contains(&by) {
            return Press::NotAllowed;
        }
        let Some(waiting) = w.remove(id) else {
            return Press::Gone;
        };
        // The approver may have just timed out; then the answer goes nowhere.
        let _ = waiting.reply.try_send((yes, name.to_string()));
        Press::Answered
    }
}

/// The longest approval id in callback data (32 hex digits today).
const MAX_ID_LEN: usize = 60;

/// `callback_data` of a button: `a:<id>:1` approves, `a:<id>:0` denies (at most 64 bytes).
pub fn parse_data(data: &str) -> Option<(&str, bool)> {
    let rest = data.strip_prefix("a:")?;
    let (id, yes) = rest.rsplit_once(':')?;
    let yes = match yes {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    if id.is_empty() || id.len() > MAX_ID_LEN || !id.bytes().all(|b| b.is_ascii_alphanumeric()) {
        return None;
    }
    Some((id, yes))
}

/// The text that replaces a question a restart left open.
pub const RESTARTED: &str = "covo restarted before this was answered, so nothing ran. Ask again.";

/// Closes the approval questions a previous run left with live buttons: each is edited to say
/// covo restarted (which removes its buttons) and forgotten. One that cannot be edited now is
/// kept for the next start; its buttons match nothing meanwhile.
pub async fn close_left_open(rt: &Arc<Runtime>, api: &Api) {
    let open = match super::blocking(rt, |s| s.telegram_approvals_open()).await {
        Ok(open) => open,
        Err(e) => {
            tracing::warn!(error = %e, "could not read the approvals left open");
            return;
        }
    };
    for a in open {
        let body = json!({"chat_id": a.chat_id, "message_id": a.message_id,
            "text": format!("{}\n\n{RESTARTED}", clip(&a.text, 1200))});
        match api.call("editMessageText", &body, CALL_TIMEOUT).await {
            Ok(_) => {}
            // Already edited (a crash after the edit, before forgetting it), or deleted.
            Err(super::api::ApiError::Refused { code: 400, .. }) => {}
            Err(e) => {
                tracing::warn!(error = %e, "could not close an approval a restart left open");
                continue;
            }
        }
        if let Err(e) = super::blocking(rt, move |s| s.telegram_approval_closed(&a.id)).await {
            tracing::warn!(error = %e, "could not forget a closed approval");
        }
    }
}

/// The approver of one chat's session.
pub struct ChatApprover {
    /// The chat the question goes to.
    pub chat: i64,
    /// The user whose message the current turn answers (set before each turn).
    pub asker: Arc<AtomicI64>,
    /// The pending approvals.
    pub approvals: Arc<Approvals>,
    /// The Bot API.
    pub api: Arc<Api>,
    /// Where open questions are remembered across a restart.
    pub rt: Arc<Runtime>,
    /// The bot's runtime, to make Bot API calls from the blocking thread.
    pub handle: tokio::runtime::Handle,
    /// How long a question waits, from the moment it is asked (sending it included).
    pub timeout: Duration,
    /// Ask about `actuate` calls too.
    pub confirm_actuate: bool,
}

impl ChatApprover {
    /// Replaces the question's text (which removes its buttons), then forgets it.
    fn close(&self, id: &str, message_id: i64, text: String) {
        let body = json!({"chat_id": self.chat, "message_id": message_id, "text": text});
        match self
            .handle
            .block_on(self.api.call("editMessageText", &body, CALL_TIMEOUT))
        {
            Ok(_) => {
                if let Err(e) = self.rt.store().and_then(|s| s.telegram_approval_closed(id)) {
                    tracing::warn!(error = %e, "could not forget a closed approval");
                }
            }
            // Kept in the store: the next start closes it. Its buttons match nothing now.
            Err(e) => tracing::warn!(error = %e, "could not close the approval message"),
        }
    }
}

impl Approver for ChatApprover {
    fn asks(&self, spec: &ToolSpec) -> bool {
        spec.effect == Effect::Destructive
            || (self.confirm_actuate && spec.effect == Effect::Actuate)
    }

    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + self.timeout;
        let asker = self.asker.load(Ordering::Relaxed);
        let Some((id, rx)) = self.approvals.register(asker, self.chat) else {
            return Err(format!(
                "{MAX_PENDING} approvals are already waiting on Telegram; try again when they are answered"
            ));
        };
        let secs = self.timeout.as_secs();
        let question = format!(
            "Approve {} ({})?\n{}\n\nOnly the person who asked, or an admin, can answer. No answer within {secs} s means no.",
            spec.name,
            spec.effect.as_str(),
            clip(&args.to_string(), 800)
        );
        let body = json!({
            "chat_id": self.chat,
            "text": question,
            "reply_markup": {"inline_keyboard": [[
                {"text": "Approve", "callback_data": format!("a:{id}:1")},
                {"text": "Deny", "callback_data": format!("a:{id}:0")},
            ]]},
        });
        // A 429 or a network error is waited out, but not past the approval's deadline.
        let sent = self
            .handle
            .block_on(self.api.call_by("sendMessage", &body, deadline));
        let message_id = match sent.map(|m| m["message_id"].as_i64()) {
            Ok(Some(m)) => m,
            Ok(None) => {
                self.approvals.forget(&id);
                return Err(
                    "could not ask on Telegram: its answer had no message id, so it was denied"
                        .into(),
                );
            }
            Err(e) => {
                self.approvals.forget(&id);
                return Err(format!(
                    "could not ask on Telegram within {secs} s, so it was denied: {e}"
                ));
            }
        };
        self.approvals.sent(&id, message_id);
        let open = OpenApproval {
            id: id.clone(),
            chat_id: self.chat,
            message_id,
            text: question.clone(),
        };
        if let Err(e) = self
            .rt
            .store()
            .and_then(|s| s.telegram_approval_open(&open, chrono::Utc::now().timestamp()))
        {
            tracing::warn!(error = %e, "could not remember an open approval");
        }
        let left = deadline.saturating_duration_since(tokio::time::Instant::now());
        let (result, note) = match rx.recv_timeout(left) {
            Ok((true, by)) => (Ok(()), format!("Approved by {by}.")),
            Ok((false, by)) => (
                Err(format!("denied on Telegram by {by}")),
                format!("Denied by {by}."),
            ),
            Err(_) => {
                self.approvals.forget(&id);
                (
                    Err(format!(
                        "no answer on Telegram within {secs} s, so it was denied"
                    )),
                    format!("No answer within {secs} s: denied."),
                )
            }
        };
        self.close(
            &id,
            message_id,
            format!("{}\n\n{note}", clip(&question, 1200)),
        );
        tracing::info!(tool = spec.name, chat = self.chat, outcome = %note, "telegram approval");
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HERE: At = At {
        chat: 5,
        message: 50,
    };

    #[test]
    fn only_the_asker_or_an_admin_answers_and_the_table_is_bounded() {
        let a = Approvals::new(vec![9]);
        let (id, rx) = a.register(1, HERE.chat).unwrap();
        a.sent(&id, HERE.message);
        assert_eq!(a.answer(&id, HERE, 2, "eve", true), Press::NotAllowed);
        assert_eq!(a.answer(&id, HERE, 1, "ann", false), Press::Answered);
        assert_eq!(rx.recv().unwrap(), (false, "ann".to_string()));
        assert_eq!(a.answer(&id, HERE, 1, "ann", true), Press::Gone);
        let (id2, rx2) = a.register(1, HERE.chat).unwrap();
        assert_eq!(a.answer(&id2, HERE, 9, "admin", true), Press::Answered);
        assert!(rx2.recv().unwrap().0);
        let held: Vec<_> = (0..MAX_PENDING)
            .map(|_| a.register(1, HERE.chat).unwrap())
            .collect();
        assert!(a.register(1, HERE.chat).is_none(), "bounded");
        assert_eq!(a.len(), MAX_PENDING);
        drop(held);
    }

    #[test]
    fn ids_are_random_and_never_repeat_and_a_press_counts_only_where_it_was_asked() {
        let a = Approvals::new(vec![]);
        let mut seen = std::collections::HashSet::new();
        for _ in 0..1000 {
            let (id, _rx) = a.register(1, HERE.chat).unwrap();
            assert_eq!(id.len(), 32);
            assert!(seen.insert(id.clone()), "an id came twice");
            a.forget(&id);
        }
        let (id, rx) = a.register(1, HERE.chat).unwrap();
        a.sent(&id, HERE.message);
        // The same button in another chat, or on another message of this chat.
        let other_chat = At { chat: 6, ..HERE };
        let other_message = At {
            message: 51,
            ..HERE
        };
        assert_eq!(a.answer(&id, other_chat, 1, "ann", true), Press::Elsewhere);
        assert_eq!(
            a.answer(&id, other_message, 1, "ann", true),
            Press::Elsewhere
        );
        assert!(rx.try_recv().is_err(), "a press elsewhere answered");
        assert_eq!(a.len(), 1, "a press elsewhere ended the approval");
        // A button of the numbered scheme before this change matches nothing.
        assert_eq!(a.answer("1", HERE, 1, "ann", true), Press::Gone);
        assert_eq!(a.answer(&id, HERE, 1, "ann", true), Press::Answered);
        assert!(rx.recv().unwrap().0);
    }

    #[test]
    fn callback_data_is_read_strictly() {
        let id = "0123456789abcdef0123456789abcdef";
        assert_eq!(parse_data(&format!("a:{id}:1")), Some((id, true)));
        assert_eq!(parse_data(&format!("a:{id}:0")), Some((id, false)));
        assert!(
            format!("a:{id}:1").len() <= 64,
            "Telegram's callback_data limit"
        );
        assert_eq!(parse_data("a:12:1"), Some(("12", true)));
        assert_eq!(parse_data("a::1"), None);
        assert_eq!(parse_data("a:x y:1"), None);
        assert_eq!(parse_data(&format!("a:{}:1", "f".repeat(61))), None);
        assert_eq!(parse_data("a:12:2"), None);
        assert_eq!(parse_data("b:1:1"), None);
    }
}
