//! Approvals as inline keyboard buttons. A chat's [`ChatApprover`] is its session's approver
//! (`Session::with_approver`): asked by the pipeline's approval hook on the blocking thread
//! that runs the tool, it posts the question with Approve / Deny buttons, registers it in
//! [`Approvals`] (bounded) and blocks that thread on a channel until a press or the deadline.
//! The bot's loop answers the `callback_query` of a press through [`Approvals::answer`]: only
//! the user who asked (or an admin) may press; no answer in time is a denial.

use super::api::Api;
use super::text::clip;
use crate::policy::Approver;
use covo_core::spec::{Effect, ToolSpec};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

/// Approvals waiting for a press at once, over all chats; one more is denied at once. Each
/// holds one thread of `covo run`'s blocking pool (16 threads, 8 of which swarm calls may
/// take) while it waits, so this stays well below what is left.
pub const MAX_PENDING: usize = 4;

struct Waiting {
    asker: i64,
    reply: mpsc::SyncSender<(bool, String)>,
}

/// The approvals waiting for a button press.
#[derive(Default)]
pub struct Approvals {
    waiting: Mutex<HashMap<u64, Waiting>>,
    next: AtomicU64,
    admins: Vec<i64>,
}

/// What a press did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Press {
    /// It answered the approval.
    Answered,
    /// The approval is no longer waiting (answered, timed out, or from before a restart).
    Gone,
    /// This user may not answer it.
    NotAllowed,
}

impl Approvals {
    /// With the users who may answer anyone's approvals.
    pub fn new(admins: Vec<i64>) -> Self {
        Approvals {
            admins,
            ..Default::default()
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Waiting>> {
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

    fn register(&self, asker: i64) -> Option<(u64, mpsc::Receiver<(bool, String)>)> {
        let mut w = self.lock();
        if w.len() >= MAX_PENDING {
            return None;
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        let (tx, rx) = mpsc::sync_channel(1);
        w.insert(id, Waiting { asker, reply: tx });
        Some((id, rx))
    }

    fn forget(&self, id: u64) {
        self.lock().remove(&id);
    }

    /// A press of Approve (`yes`) or Deny on approval `id` by user `by` (shown as `name`).
    pub fn answer(&self, id: u64, by: i64, name: &str, yes: bool) -> Press {
        let mut w = self.lock();
        let Some(waiting) = w.get(&id) else {
            return Press::Gone;
        };
        if waiting.asker != by && !self.admins.contains(&by) {
            return Press::NotAllowed;
        }
        let Some(waiting) = w.remove(&id) else {
            return Press::Gone;
        };
        // The approver may have just timed out; then the answer goes nowhere.
        let _ = waiting.reply.try_send((yes, name.to_string()));
        Press::Answered
    }
}

/// `callback_data` of a button: `a:<id>:1` approves, `a:<id>:0` denies (at most 64 bytes).
pub fn parse_data(data: &str) -> Option<(u64, bool)> {
    let rest = data.strip_prefix("a:")?;
    let (id, yes) = rest.split_once(':')?;
    let yes = match yes {
        "1" => true,
        "0" => false,
        _ => return None,
    };
    Some((id.parse().ok()?, yes))
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
    /// The bot's runtime, to make Bot API calls from the blocking thread.
    pub handle: tokio::runtime::Handle,
    /// How long a question waits.
    pub timeout: Duration,
    /// Ask about `actuate` calls too.
    pub confirm_actuate: bool,
}

impl ChatApprover {
    fn edit(&self, message_id: Option<i64>, text: String) {
        let Some(message_id) = message_id else { return };
        let body = json!({"chat_id": self.chat, "message_id": message_id, "text": text});
        if let Err(e) = self.handle.block_on(self.api.call(
            "editMessageText",
            &body,
            super::api::CALL_TIMEOUT,
        )) {
            tracing::warn!(error = %e, "could not update the approval message");
        }
    }
}

impl Approver for ChatApprover {
    fn asks(&self, spec: &ToolSpec) -> bool {
        spec.effect == Effect::Destructive
            || (self.confirm_actuate && spec.effect == Effect::Actuate)
    }

    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        let asker = self.asker.load(Ordering::Relaxed);
        let Some((id, rx)) = self.approvals.register(asker) else {
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
        let sent = self.handle.block_on(self.api.call(
            "sendMessage",
            &body,
            super::api::CALL_TIMEOUT,
        ));
        let message_id = match sent {
            Ok(m) => m["message_id"].as_i64(),
            Err(e) => {
                self.approvals.forget(id);
                return Err(format!("could not ask on Telegram: {e}"));
            }
        };
        let (result, note) = match rx.recv_timeout(self.timeout) {
            Ok((true, by)) => (Ok(()), format!("Approved by {by}.")),
            Ok((false, by)) => (
                Err(format!("denied on Telegram by {by}")),
                format!("Denied by {by}."),
            ),
            Err(_) => {
                self.approvals.forget(id);
                (
                    Err(format!(
                        "no answer on Telegram within {secs} s, so it was denied"
                    )),
                    format!("No answer within {secs} s: denied."),
                )
            }
        };
        self.edit(message_id, format!("{}\n\n{note}", clip(&question, 1200)));
        tracing::info!(tool = spec.name, chat = self.chat, outcome = %note, "telegram approval");
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_asker_or_an_admin_answers_and_the_table_is_bounded() {
        let a = Approvals::new(vec![9]);
        let (id, rx) = a.register(1).unwrap();
        assert_eq!(a.answer(id, 2, "eve", true), Press::NotAllowed);
        assert_eq!(a.answer(id, 1, "ann", false), Press::Answered);
        assert_eq!(rx.recv().unwrap(), (false, "ann".to_string()));
        assert_eq!(a.answer(id, 1, "ann", true), Press::Gone);
        let (id2, rx2) = a.register(1).unwrap();
        assert_eq!(a.answer(id2, 9, "admin", true), Press::Answered);
        assert!(rx2.recv().unwrap().0);
        let held: Vec<_> = (0..MAX_PENDING).map(|_| a.register(1).unwrap()).collect();
        assert!(a.register(1).is_none(), "bounded");
        assert_eq!(a.len(), MAX_PENDING);
        drop(held);
        assert_eq!(parse_data("a:12:1"), Some((12, true)));
        assert_eq!(parse_data("a:12:0"), Some((12, false)));
        assert_eq!(parse_data("a:x:1"), None);
        assert_eq!(parse_data("b:1:1"), None);
    }
}
