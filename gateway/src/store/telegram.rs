//! What the Telegram bot keeps across restarts: the updates it accepted (its inbox and the
//! `getUpdates` offset), the users paired with `covo telegram pair CODE`, and the pending
//! pairing codes.
//!
//! Exactly once: a batch of updates is written to the inbox and the offset advanced in one
//! transaction *before* Telegram is told (by the next `getUpdates` offset) that they arrived,
//! so a crash before the commit gets them again from Telegram, and one after it finds them in
//! the inbox. A message is *claimed* ([`Store::telegram_claim`], a conditional update) before it
//! reaches the agent and marked done when its answer is out: a crash between the two leaves a
//! claimed row, which the next start reports to its chat ("interrupted, send it again") instead
//! of running it a second time. Handled rows keep their id (the last [`KEEP_DONE`]), so a batch
//! Telegram sends again is not handled again. So no message reaches the agent twice, and none
//! is dropped without a word.

use super::{write_tx, Store, StoreError};
use rusqlite::{params, OptionalExtension};

/// Migration 13: the Telegram bot's offset, inbox, paired users and pairing codes.
pub(super) const MIGRATION: &str = "CREATE TABLE telegram_state (
    key TEXT PRIMARY KEY,
    value INTEGER NOT NULL
);
CREATE TABLE telegram_inbox (
    update_id INTEGER PRIMARY KEY,
    chat_id INTEGER NOT NULL,
    body TEXT NOT NULL,
    state INTEGER NOT NULL DEFAULT 0,
    done_at INTEGER
);
CREATE TABLE telegram_users (
    user_id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    added_at TEXT NOT NULL
);
CREATE TABLE telegram_pairing (
    code TEXT PRIMARY KEY,
    user_id INTEGER NOT NULL,
    chat_id INTEGER NOT NULL,
    name TEXT NOT NULL,
    expires_at INTEGER NOT NULL
);";

/// Migration 14: the approval questions on screen with live buttons, so a restart closes them.
pub(super) const MIGRATION_APPROVALS: &str = "CREATE TABLE telegram_approvals (
    id TEXT PRIMARY KEY,
    chat_id INTEGER NOT NULL,
    message_id INTEGER NOT NULL,
    text TEXT NOT NULL,
    asked_at INTEGER NOT NULL
);";

/// Approval questions remembered at most (the bot waits on far fewer at once); the oldest go.
pub const MAX_OPEN_APPROVALS: i64 = 64;

/// An approval question left on screen with live buttons.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenApproval {
    /// The approval's id (the buttons' callback data carries it).
    pub id: String,
    /// The chat it was asked in.
    pub chat_id: i64,
    /// The question's message.
    pub message_id: i64,
    /// The question's text.
    pub text: String,
}

/// Handled updates remembered (their ids only matter), so a batch Telegram sends again is
/// not handled again.
pub const KEEP_DONE: i64 = 256;

/// Pending pairing codes kept at once; more unknown users get no code until one expires.
pub const MAX_PAIRING_CODES: i64 = 16;

/// One accepted update waiting in the inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InboxRow {
    /// Telegram's `update_id`.
    pub update_id: i64,
    /// The chat it came from.
    pub chat_id: i64,
    /// What the bot keeps of it (JSON of its own shape).
    pub body: String,
    /// Whether it was handed to the agent (a crash left it half done).
    pub claimed: bool,
}

/// A new pairing code, or why there is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PairingCode {
    /// A fresh code for this user.
    New(String),
    /// The user already has a live code (not printed again).
    Pending,
}

const CODE_ALPHABET: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

impl Store {
    /// The last `update_id` accepted, if any.
    pub fn telegram_offset(&self) -> Result<Option<i64>, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT value FROM telegram_state WHERE key = 'last_update_id'",
                [],
                |r| r.get(0),
            )
            .optional()?)
    }

    /// Accepts a batch: stores each `(update_id, chat_id, body)` in the inbox and raises the
    /// offset to `last` (the batch's highest `update_id`, messages or not), in one transaction.
    /// An update already in the inbox, or at or below the stored offset, is left as it is.
    pub fn telegram_accept(
        &self,
        rows: &[(i64, i64, String)],
        last: i64,
    ) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        // A row already there (waiting, claimed or handled) stays as it is: Telegram sends a
        // batch again when a crash cut off its confirmation. (Ids are not compared with the
        // offset: after a week without updates Telegram may start from a random, lower id.)
        for (id, chat, body) in rows {
            tx.execute(
                "INSERT OR IGNORE INTO telegram_inbox (update_id, chat_id, body) VALUES (?1, ?2, ?3)",
                params![id, chat, body],
            )?;
        }
        tx.execute(
            "INSERT INTO telegram_state (key, value) VALUES ('last_update_id', ?1)
             ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [last],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Claims an inbox row for the agent: true only for the first claim of a row that exists.
    pub fn telegram_claim(&self, update_id: i64) -> Result<bool, StoreError> {
        Ok(self.conn().execute(
            "UPDATE telegram_inbox SET state = 1 WHERE update_id = ?1 AND state = 0",
            [update_id],
        )? == 1)
    }

    /// Marks a row handled; only the last [`KEEP_DONE`] handled rows are kept (and of them
    /// only their ids matter).
    pub fn telegram_done(&self, update_id: i64) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        tx.execute(
            "UPDATE telegram_inbox SET state = 2, body = '', done_at = ?2 WHERE update_id = ?1",
            params![update_id, chrono::Utc::now().timestamp_micros()],
        )?;
        tx.execute(
            "DELETE FROM telegram_inbox WHERE state = 2 AND update_id NOT IN
               (SELECT update_id FROM telegram_inbox WHERE state = 2
                ORDER BY done_at DESC, update_id DESC LIMIT ?1)",
            [KEEP_DONE],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The rows not yet handled, oldest first (what a restart finds).
    pub fn telegram_inbox(&self) -> Result<Vec<InboxRow>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT update_id, chat_id, body, state FROM telegram_inbox WHERE state < 2
             ORDER BY update_id",
        )?;
        let rows = st.query_map([], |r| {
            Ok(InboxRow {
                update_id: r.get(0)?,
                chat_id: r.get(1)?,
                body: r.get(2)?,
                claimed: r.get::<_, i64>(3)? == 1,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Whether `covo telegram pair` added this user.
    pub fn telegram_paired(&self, user_id: i64) -> Result<bool, StoreError> {
        Ok(self
            .conn()
            .query_row(
                "SELECT 1 FROM telegram_users WHERE user_id = ?1",
                [user_id],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// A one-time pairing code for an unknown user, valid until `now + ttl_secs` (Unix
    /// seconds). Expired codes go first; a user with a live code gets no second one.
    pub fn telegram_pairing_code(
        &self,
        user_id: i64,
        chat_id: i64,
        name: &str,
        now: i64,
        ttl_secs: i64,
    ) -> Result<PairingCode, StoreError> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        tx.execute("DELETE FROM telegram_pairing WHERE expires_at <= ?1", [now])?;
        let live: i64 = tx.query_row(
            "SELECT count(*) FROM telegram_pairing WHERE user_id = ?1",
            [user_id],
            |r| r.get(0),
        )?;
        if live > 0 {
            tx.commit()?;
            return Ok(PairingCode::Pending);
        }
        // Full: the oldest pending code gives way, so strangers can never use up the codes
        // and keep a newcomer out (and the owner can always `covo telegram allow ID`).
        tx.execute(
            "DELETE FROM telegram_pairing WHERE code IN (SELECT code FROM telegram_pairing
             ORDER BY expires_at ASC, rowid ASC LIMIT max(0, (SELECT count(*) FROM telegram_pairing) - ?1 + 1))",
            [MAX_PAIRING_CODES],
        )?;
        let code: String = (0..8)
            .map(|_| CODE_ALPHABET[fastrand::usize(..CODE_ALPHABET.len())] as char)
            .collect();
        tx.execute(
            "INSERT INTO telegram_pairing (code, user_id, chat_id, name, expires_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![code, user_id, chat_id, name, now + ttl_secs],
        )?;
        tx.commit()?;
        Ok(PairingCode::New(code))
    }

    /// Remembers an approval question with live buttons until [`Store::telegram_approval_closed`].
    pub fn telegram_approval_open(&self, a: &OpenApproval, now: i64) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        tx.execute(
            "INSERT OR REPLACE INTO telegram_approvals (id, chat_id, message_id, text, asked_at)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![a.id, a.chat_id, a.message_id, a.text, now],
        )?;
        tx.execute(
            "DELETE FROM telegram_approvals WHERE id NOT IN
             (SELECT id FROM telegram_approvals ORDER BY asked_at DESC, rowid DESC LIMIT ?1)",
            [MAX_OPEN_APPROVALS],
        )?;
        tx.commit()?;
        Ok(())
    }

    /// Forgets an approval question whose buttons are closed.
    pub fn telegram_approval_closed(&self, id: &str) -> Result<(), StoreError> {
        self.conn()
            .execute("DELETE FROM telegram_approvals WHERE id = ?1", [id])?;
        Ok(())
    }

    /// The approval questions a previous run left with live buttons, oldest first.
    pub fn telegram_approvals_open(&self) -> Result<Vec<OpenApproval>, StoreError> {
        let conn = self.conn();
        let mut st = conn.prepare(
            "SELECT id, chat_id, message_id, text FROM telegram_approvals ORDER BY asked_at, rowid",
        )?;
        let rows = st.query_map([], |r| {
            Ok(OpenApproval {
                id: r.get(0)?,
                chat_id: r.get(1)?,
                message_id: r.get(2)?,
                text: r.get(3)?,
            })
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }

    /// Lets Telegram user `user_id` in without a code (`covo telegram allow ID`); drops their
    /// pending code.
    pub fn telegram_allow(&self, user_id: i64, name: &str) -> Result<(), StoreError> {
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        admit(&tx, user_id, name)?;
        tx.commit()?;
        Ok(())
    }

    /// Redeems a pairing code: its user is added and the code is gone. `None` when no live
    /// code matches (case and spaces do not matter).
    pub fn telegram_pair(&self, code: &str, now: i64) -> Result<Option<(i64, String)>, StoreError> {
        let code: String = code
            .chars()
            .filter(|c| !c.is_whitespace() && *c != '-')
            .collect::<String>()
            .to_ascii_uppercase();
        let mut conn = self.conn();
        let tx = write_tx(&mut conn)?;
        let found: Option<(i64, String)> = tx
            .query_row(
                "SELECT user_id, name FROM telegram_pairing WHERE code = ?1 AND expires_at > ?2",
                params![code, now],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if let Some((user, name)) = &found {
            admit(&tx, *user, name)?;
        }
        tx.commit()?;
        Ok(found)
    }
}

/// Adds a Telegram user to the allowed ones and drops their pending pairing code.
fn admit(tx: &rusqlite::Transaction<'_>, user_id: i64, name: &str) -> Result<(), StoreError> {
    tx.execute(
        "INSERT OR REPLACE INTO telegram_users (user_id, name, added_at) VALUES (?1, ?2, ?3)",
        params![user_id, name, super::now_rfc3339()],
    )?;
    tx.execute("DELETE FROM telegram_pairing WHERE user_id = ?1", [user_id])?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_claim_done_and_the_offset() {
        let s = Store::in_memory().unwrap();
        assert_eq!(s.telegram_offset().unwrap(), None);
        s.telegram_accept(&[(5, 1, "a".into()), (6, 2, "b".into())], 7)
            .unwrap();
        // A batch seen again (Telegram resent it) changes nothing.
        s.telegram_accept(&[(5, 1, "a".into()), (6, 2, "b".into())], 7)
            .unwrap();
        assert_eq!(s.telegram_inbox().unwrap().len(), 2);
        assert_eq!(s.telegram_offset().unwrap(), Some(7));
        assert!(s.telegram_claim(5).unwrap());
        assert!(!s.telegram_claim(5).unwrap(), "claimed once only");
        let inbox = s.telegram_inbox().unwrap();
        assert_eq!(inbox.len(), 2);
        assert!(inbox[0].claimed && !inbox[1].claimed);
        s.telegram_done(5).unwrap();
        assert!(
            !s.telegram_claim(5).unwrap(),
            "a done row is not claimed again"
        );
        assert_eq!(s.telegram_inbox().unwrap().len(), 1);
        // Resent after it was handled: not accepted again. A lower id (Telegram's random
        // restart after a quiet week) is new.
        s.telegram_accept(
            &[(5, 1, "a".into()), (8, 1, "c".into()), (2, 1, "d".into())],
            8,
        )
        .unwrap();
        let ids: Vec<i64> = s
            .telegram_inbox()
            .unwrap()
            .iter()
            .map(|r| r.update_id)
            .collect();
        assert_eq!(ids, vec![2, 6, 8]);
        // Handled rows are remembered, but only the last KEEP_DONE.
        for id in 100..100 + KEEP_DONE + 10 {
            s.telegram_accept(&[(id, 1, "x".into())], id).unwrap();
            s.telegram_done(id).unwrap();
        }
        let kept: i64 = s
            .conn()
            .query_row(
                "SELECT count(*) FROM telegram_inbox WHERE state = 2",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kept, KEEP_DONE);
    }

    #[test]
    fn open_approvals_are_kept_bounded_and_closed() {
        let s = Store::in_memory().unwrap();
        let a = |i: i64| OpenApproval {
            id: format!("id{i}"),
            chat_id: 7,
            message_id: 100 + i,
            text: format!("Approve {i}?"),
        };
        for i in 0..MAX_OPEN_APPROVALS + 5 {
            s.telegram_approval_open(&a(i), i).unwrap();
        }
        let open = s.telegram_approvals_open().unwrap();
        assert_eq!(open.len() as i64, MAX_OPEN_APPROVALS);
        assert_eq!(open[0], a(5), "the oldest went first");
        s.telegram_approval_closed("id5").unwrap();
        let open = s.telegram_approvals_open().unwrap();
        assert_eq!(open.len() as i64, MAX_OPEN_APPROVALS - 1);
        assert!(open.iter().all(|x| x.id != "id5"));
    }

    #[test]
    fn pairing_codes_are_bounded_expire_and_pair_once() {
        let s = Store::in_memory().unwrap();
        let PairingCode::New(code) = s.telegram_pairing_code(42, 42, "ann", 100, 600).unwrap()
        else {
            panic!("a code")
        };
        assert_eq!(
            s.telegram_pairing_code(42, 42, "ann", 101, 600).unwrap(),
            PairingCode::Pending
        );
        assert!(!s.telegram_paired(42).unwrap());
        assert_eq!(s.telegram_pair("WRONG123", 200).unwrap(), None);
        let lower = code.to_ascii_lowercase();
        assert_eq!(
            s.telegram_pair(&lower, 200).unwrap(),
            Some((42, "ann".into()))
        );
        assert!(s.telegram_paired(42).unwrap());
        assert_eq!(s.telegram_pair(&code, 200).unwrap(), None, "one time");
        let PairingCode::New(old) = s.telegram_pairing_code(8, 8, "b", 10_000, 600).unwrap() else {
            panic!()
        };
        assert_eq!(s.telegram_pair(&old, 10_600).unwrap(), None, "expired");
    }

    /// Issue 24 defect 14: 16 strangers used up every code and a newcomer got none for an hour.
    #[test]
    fn strangers_cannot_use_up_the_pairing_codes() {
        let s = Store::in_memory().unwrap();
        let PairingCode::New(first) = s.telegram_pairing_code(1, 1, "first", 100, 3600).unwrap()
        else {
            panic!("a code")
        };
        for u in 0..40 {
            assert!(matches!(
                s.telegram_pairing_code(1000 + u, 1, "x", 100 + u, 3600)
                    .unwrap(),
                PairingCode::New(_)
            ));
        }
        let n: i64 = s
            .conn()
            .query_row("SELECT count(*) FROM telegram_pairing", [], |r| r.get(0))
            .unwrap();
        assert_eq!(n, MAX_PAIRING_CODES, "the table stays bounded");
        // The newcomer still gets a code and pairs with it; the oldest code gave way.
        let PairingCode::New(code) = s.telegram_pairing_code(7, 7, "late", 200, 3600).unwrap()
        else {
            panic!("no code for the newcomer")
        };
        assert_eq!(
            s.telegram_pair(&code, 300).unwrap(),
            Some((7, "late".into()))
        );
        assert_eq!(s.telegram_pair(&first, 300).unwrap(), None);
        // And the owner lets anyone in by id, whatever the codes.
        s.telegram_allow(1, "first").unwrap();
        assert!(s.telegram_paired(1).unwrap());
    }
}
