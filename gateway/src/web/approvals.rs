//! The dashboard's pending approvals: a destructive call asked for in a dashboard chat waits
//! here (on its blocking thread) until someone presses Approve or Deny on the page, or its
//! deadline passes, which declines it. The table is bounded: a call that finds it full is
//! declined at once.

use crate::policy::Approver;
use covo_core::spec::ToolSpec;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::mpsc::{sync_channel, RecvTimeoutError, SyncSender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Approvals waiting at once. Each holds a thread of `covo run`'s blocking pool while it waits
/// (`daemon::BLOCKING_THREADS`, 16), so at most half of them.
pub const MAX_PENDING: usize = 8;

struct Entry {
    /// The id pages answer by (`secrets::approval_id`): never reused, so a page from before a
    /// restart cannot answer a newer request.
    id: String,
    tool: String,
    args: Value,
    session: String,
    asked: String,
    deadline: Instant,
    answer: SyncSender<bool>,
}

/// The bounded table of calls waiting for an answer on the dashboard.
pub struct Pending {
    entries: Mutex<BTreeMap<u64, Entry>>,
    next: Mutex<u64>,
    max: usize,
    wait: Duration,
    changed: Box<dyn Fn() + Send + Sync>,
}

/// Why an answer could not be given.
#[derive(Debug, PartialEq, Eq)]
pub enum AnswerError {
    /// No such request is waiting (answered already, or its deadline passed).
    NotPending,
}

impl Pending {
    /// At most `max` waiting at once, each for at most `wait`; `changed` runs whenever the
    /// table changes (the dashboard pushes the new list).
    pub fn new(max: usize, wait: Duration, changed: impl Fn() + Send + Sync + 'static) -> Self {
        Pending {
            entries: Mutex::new(BTreeMap::new()),
            next: Mutex::new(1),
            max: max.max(1),
            wait,
            changed: Box::new(changed),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Entry>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The waiting requests, oldest first: `[{id, tool, args, session, asked, expires_in_ms}]`
    /// (`id` a string of 32 hex digits).
    pub fn list(&self) -> Value {
        let now = Instant::now();
        Value::Array(
            self.lock()
                .values()
                .map(|e| {
                    json!({
                        "id": e.id,
                        "tool": e.tool,
                        "args": e.args,
                        "session": e.session,
                        "asked": e.asked,
                        "expires_in_ms": e.deadline.saturating_duration_since(now).as_millis() as u64,
                    })
                })
                .collect(),
        )
    }

    /// How many wait.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Answers request `id`.
    pub fn answer(&self, id: &str, approve: bool) -> Result<(), AnswerError> {
        let e = {
            let mut entries = self.lock();
            let seq = entries
                .iter()
                .find(|(_, e)| e.id == id)
                .map(|(seq, _)| *seq)
                .ok_or(AnswerError::NotPending)?;
            entries.remove(&seq).ok_or(AnswerError::NotPending)?
        };
        // The asking thread may have timed out in the meantime; then the answer is moot.
        let _ = e.answer.try_send(approve);
        (self.changed)();
        Ok(())
    }

    /// Parks a request and blocks until it is answered or its deadline passes. `Err` says why
    /// it is declined.
    pub fn ask(&self, session: &str, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        let (tx, rx) = sync_channel(1);
        let seq = {
            let mut entries = self.lock();
            if entries.len() >= self.max {
                return Err(format!(
                    "{} approvals are already waiting on the dashboard (the most it holds); \
                     declined",
                    self.max
                ));
            }
            let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
            let seq = *next;
            *next += 1;
            let id = crate::secrets::approval_id();
            entries.insert(
                seq,
                Entry {
                    id: id.clone(),
                    tool: spec.name.to_string(),
                    args: args.clone(),
                    session: session.to_string(),
                    asked: crate::store::now_rfc3339(),
                    deadline: Instant::now() + self.wait,
                    answer: tx,
                },
            );
            seq
        };
        (self.changed)();
        tracing::info!(
            seq,
            tool = spec.name,
            "waiting for approval on the dashboard"
        );
        let r = match rx.recv_timeout(self.wait) {
            Ok(true) => Ok(()),
            Ok(false) => Err("denied on the dashboard".to_string()),
            Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => Err(format!(
                "nobody answered on the dashboard within {} s",
                self.wait.as_secs()
            )),
        };
        if self.lock().remove(&seq).is_some() {
            (self.changed)();
        }
        r
    }
}

/// A dashboard session's approver: parks its destructive calls in the [`Pending`] table.
pub struct WebApprover {
    /// The table.
    pub pending: Arc<Pending>,
    /// The browser session, shown beside the request.
    pub session: String,
}

impl Approver for WebApprover {
    fn approve(&self, spec: &ToolSpec, args: &Value) -> Result<(), String> {
        self.pending.ask(&self.session, spec, args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covo_core::catalog::fs::FS_DELETE;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn approve_deny_timeout_and_the_bound() {
        let changes = Arc::new(AtomicUsize::new(0));
        let c = changes.clone();
        let p = Arc::new(Pending::new(2, Duration::from_secs(5), move || {
            c.fetch_add(1, Ordering::SeqCst);
        }));
        let args = json!({"path": "a.txt"});
        // Two wait (the bound), a third is declined at once.
        let mut waiting = Vec::new();
        for _ in 0..2 {
            let (p, a) = (p.clone(), args.clone());
            waiting.push(std::thread::spawn(move || p.ask("s", &FS_DELETE, &a)));
        }
        let end = Instant::now() + Duration::from_secs(5);
        while p.len() < 2 && Instant::now() < end {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(p.len(), 2);
        let t = Instant::now();
        let third = p.ask("s", &FS_DELETE, &args).unwrap_err();
        assert!(third.contains("already waiting"), "{third}");
        assert!(t.elapsed() < Duration::from_millis(100), "declined at once");
        let list = p.list();
        let ids: Vec<String> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect();
        assert!(ids.iter().all(|id| id.len() == 32), "{ids:?}");
        assert_ne!(ids[0], ids[1]);
        assert_eq!(list[0]["tool"], "fs_delete");
        p.answer(&ids[0], true).unwrap();
        p.answer(&ids[1], false).unwrap();
        assert_eq!(p.answer(&ids[1], true), Err(AnswerError::NotPending));
        let results: Vec<_> = waiting.into_iter().map(|h| h.join().unwrap()).collect();
        assert!(results.contains(&Ok(())), "{results:?}");
        assert!(
            results.contains(&Err("denied on the dashboard".into())),
            "{results:?}"
        );
        assert!(p.is_empty());
        assert!(changes.load(Ordering::SeqCst) >= 4);

        // No answer within the deadline declines.
        let p = Pending::new(2, Duration::from_millis(100), || {});
        let e = p.ask("s", &FS_DELETE, &args).unwrap_err();
        assert!(e.contains("nobody answered"), "{e}");
        assert!(p.is_empty(), "the expired request left the table");
    }

    /// Issue 24 defect 1, on the dashboard: ids came from a per-process counter, so after a
    /// restart a page still showing request 1 answered the new request 1. Two tables stand
    /// for the process before and after the restart.
    #[test]
    fn a_page_from_before_a_restart_answers_nothing() {
        let args = json!({"path": "a.txt"});
        let ask_one = |p: &Arc<Pending>| {
            let (q, a) = (p.clone(), args.clone());
            let t = std::thread::spawn(move || q.ask("s", &FS_DELETE, &a));
            let end = Instant::now() + Duration::from_secs(5);
            while p.is_empty() && Instant::now() < end {
                std::thread::sleep(Duration::from_millis(5));
            }
            let id = p.list()[0]["id"].as_str().unwrap().to_string();
            (t, id)
        };
        let before = Arc::new(Pending::new(2, Duration::from_secs(5), || {}));
        let (t, old) = ask_one(&before);
        drop(before.answer(&old, false));
        assert!(t.join().unwrap().is_err());
        let after = Arc::new(Pending::new(2, Duration::from_secs(5), || {}));
        let (t, new) = ask_one(&after);
        assert_ne!(old, new, "an id was reused across tables");
        assert_eq!(after.answer(&old, true), Err(AnswerError::NotPending));
        assert_eq!(
            after.len(),
            1,
            "the old page's press changed the new request"
        );
        assert_eq!(after.answer("1", true), Err(AnswerError::NotPending));
        after.answer(&new, false).unwrap();
        assert_eq!(
            t.join().unwrap(),
            Err("denied on the dashboard".to_string())
        );
    }
}
