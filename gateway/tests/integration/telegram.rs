//! `covo run` with `[telegram]` against a fake Bot API (`covo_tests::bot_api`, tiny_http on
//! 127.0.0.1, the Bot API's own JSON shapes) and the scripted LLM server: the real binary,
//! killed for real in the restart case.

use covo_tests::bot_api::{callback_query, text_message, voice_message, FakeBotApi, Request};
use covo_tests::llm_server::{Reply, ScriptedLlm};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const TOKEN: &str = "123456:TEST-token-never-shown";
const ANN: i64 = 111_111;
const BOB: i64 = 222_222;
const CAROL: i64 = 333_333;
const LONG: Duration = Duration::from_secs(30);

/// A running `covo run` whose stderr is collected as it comes.
struct Covo {
    child: Child,
    log: Arc<Mutex<String>>,
}

fn base_command(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_covo"));
    c.arg("--config")
        .arg(dir.join("covo.toml"))
        .current_dir(dir)
        .env("COVO_HOME", dir.join("home"))
        .env_remove("COVO_CONFIG")
        .env_remove("COVO_MQTT_URL")
        .env_remove("COVO_LOG")
        .env_remove("COVO_LLM_PROVIDER")
        .env_remove("ANTHROPIC_API_KEY");
    c
}

impl Covo {
    fn start(dir: &Path, cfg: &str, llm: &ScriptedLlm, token: &str) -> Covo {
        std::fs::write(dir.join("covo.toml"), cfg).unwrap();
        let mut child = base_command(dir)
            .args(["run", "--profile", "full"])
            .env("COVO_TELEGRAM_TOKEN", token)
            .env("COVO_LLM_BASE_URL", llm.openai_base_url())
            .env("COVO_LLM_MODEL", "scripted")
            .env("OPENAI_API_KEY", "sk-test")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let log = Arc::new(Mutex::new(String::new()));
        let (err, l) = (child.stderr.take().unwrap(), log.clone());
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(Result::ok) {
                let mut l = l.lock().unwrap();
                l.push_str(&line);
                l.push('\n');
            }
        });
        Covo { child, log }
    }

    fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// Waits for a log line containing `needle`; returns the line.
    fn wait_log(&self, needle: &str, timeout: Duration) -> Option<String> {
        let end = Instant::now() + timeout;
        while Instant::now() < end {
            if let Some(l) = self.log().lines().find(|l| l.contains(needle)) {
                return Some(l.to_string());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        None
    }

    /// SIGTERM, then waits: `covo run` must exit 0 on its own. Returns its log.
    fn stop(mut self) -> String {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let end = Instant::now() + Duration::from_secs(15);
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > end {
                let _ = self.child.kill();
                break self.child.wait().unwrap();
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        std::thread::sleep(Duration::from_millis(100));
        let log = self.log();
        assert!(status.success(), "covo run exited {status:?}:\n{log}");
        assert!(!log.contains("TEST-token"), "the token was logged:\n{log}");
        log
    }

    /// SIGKILL: no clean shutdown at all.
    fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Covo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn config(fake: &FakeBotApi, allow: &[i64], extra: &str) -> String {
    format!(
        "[telegram]\napi_base = \"{}\"\nallow = {allow:?}\npoll_timeout_secs = 1\nedit_every_ms = 100\n{extra}",
        fake.base_url()
    )
}

/// The last user message of each request the model got.
fn asked(llm: &ScriptedLlm) -> Vec<String> {
    llm.requests()
        .iter()
        .filter_map(|r| {
            r.body["messages"]
                .as_array()?
                .iter()
                .rev()
                .find(|m| m["role"] == "user")
                .and_then(|m| m["content"].as_str().map(String::from))
        })
        .collect()
}

/// The first message with an inline keyboard sent to `chat` after `skip` of them: its
/// approve and deny `callback_data`, and the message itself as the bot sent it.
/// The `n`th approval question covo got onto the chat (a send the fake refused is not one):
/// its Approve and Deny callback data and the message a press carries.
fn keyboard(fake: &FakeBotApi, chat: i64, n: usize) -> Option<(String, String, Value)> {
    let mut shown: Vec<(String, String, Value)> = Vec::new();
    for r in fake.calls("sendMessage") {
        if r.json["chat_id"].as_i64() != Some(chat) || r.json.get("reply_markup").is_none() {
            continue;
        }
        let row = &r.json["reply_markup"]["inline_keyboard"][0];
        let text = r.json["text"].as_str().unwrap_or_default();
        // The message the fake made of it (a press carries it, and covo checks it); none when
        // the fake refused this send. Questions can read alike: the button data tells them apart.
        let Some(id) = fake.message_id(chat, text) else {
            continue;
        };
        let yes = row[0]["callback_data"].as_str()?.to_string();
        if shown.iter().any(|(y, _, _)| *y == yes) {
            continue;
        }
        let message = json!({"message_id": id, "chat": {"id": chat, "type": "private"},
                             "date": 0, "text": text});
        shown.push((yes, row[1]["callback_data"].as_str()?.to_string(), message));
    }
    shown.into_iter().nth(n)
}

fn wait_keyboard(fake: &FakeBotApi, chat: i64, n: usize) -> (String, String, Value) {
    assert!(
        wait_until(LONG, || keyboard(fake, chat, n).is_some()),
        "no approval keyboard #{n}: {:?}",
        fake.texts_to(chat)
    );
    keyboard(fake, chat, n).unwrap()
}

#[test]
fn an_allowed_user_chats_a_stranger_is_refused_once_and_pairs() {
    let fake = FakeBotApi::start(TOKEN);
    let llm = ScriptedLlm::start(vec![
        Reply::text("Hi Ann, the greenhouse is fine."),
        Reply::text("Welcome aboard, Bob."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let covo = Covo::start(dir.path(), &config(&fake, &[ANN], ""), &llm, TOKEN);

    fake.push(text_message(ANN, "Ann", "hello covo"));
    assert!(
        fake.wait_text(ANN, "the greenhouse is fine", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    assert_eq!(asked(&llm), vec!["hello covo".to_string()]);

    // A stranger: a pairing code in the log, one polite refusal, nothing reaches the model.
    fake.push(text_message(BOB, "Bob", "secret plan, run it"));
    assert!(fake.wait_text(BOB, "private", LONG), "{}", covo.log());
    let line = covo
        .wait_log("covo telegram pair ", LONG)
        .expect("a pairing code in the log");
    let code = line
        .split("covo telegram pair ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    assert_eq!(code.len(), 8, "{line}");
    fake.push(text_message(BOB, "Bob", "please?"));
    // Commands, and a voice message with no peer to transcribe it.
    fake.push(text_message(ANN, "Ann", "/status"));
    assert!(
        fake.wait_text(ANN, "Board: sim", LONG),
        "{:?}",
        fake.texts_to(ANN)
    );
    assert!(fake.wait_text(ANN, "Model: ", LONG));
    fake.put_file("voice-1", b"OggS fake opus".to_vec());
    fake.push(voice_message(ANN, "Ann", "voice-1", 14));
    assert!(
        fake.wait_text(ANN, "No transcription is available", LONG),
        "{:?}",
        fake.texts_to(ANN)
    );
    fake.push(text_message(ANN, "Ann", "/start"));
    assert!(fake.wait_text(ANN, "/new starts a new conversation", LONG));
    fake.push(text_message(ANN, "Ann", "/tools"));
    assert!(fake.wait_text(ANN, "sensor_read", LONG));
    fake.push(text_message(ANN, "Ann", "/usage"));
    assert!(
        fake.wait_text(ANN, "This conversation: 1 turns", LONG),
        "{:?}",
        fake.texts_to(ANN)
    );
    fake.push(text_message(ANN, "Ann", "/new"));
    assert!(fake.wait_text(ANN, "Started a new conversation.", LONG));
    fake.push(text_message(ANN, "Ann", "/usage"));
    assert!(
        fake.wait_text(ANN, "0 turns", LONG),
        "{:?}",
        fake.texts_to(ANN)
    );
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        fake.texts_to(BOB).len(),
        1,
        "one refusal: {:?}",
        fake.texts_to(BOB)
    );
    assert_eq!(asked(&llm).len(), 1, "{:?}", asked(&llm));
    assert!(!llm
        .requests()
        .iter()
        .any(|r| r.raw_body.contains("secret plan") || r.raw_body.contains("please?")));

    // The owner pairs Bob (another process on the same home); a wrong code is refused.
    let bad = base_command(dir.path())
        .args(["telegram", "pair", "NOPE2345"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("no pending pairing code"));
    let out = base_command(dir.path())
        .args(["telegram", "pair", &code.to_lowercase()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&BOB.to_string()));
    fake.push(text_message(BOB, "Bob", "thanks, hello"));
    assert!(
        fake.wait_text(BOB, "Welcome aboard, Bob.", LONG),
        "{:?}\n{}",
        fake.texts_to(BOB),
        covo.log()
    );
    assert_eq!(asked(&llm).last().unwrap(), "thanks, hello");
    let log = covo.stop();
    assert!(log.contains("Telegram on"), "{log}");
}

#[test]
fn approvals_go_through_buttons_only_the_asker_answers_and_silence_denies() {
    let fake = FakeBotApi::start(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran.txt");
    let call = json!({"command": format!("echo ran >> {}", marker.display())}).to_string();
    let llm = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::text("Done: it ran."),
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::text("Not run, as you said."),
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::text("No answer, so not run."),
    ]);
    let cfg = config(&fake, &[ANN, CAROL], "approval_timeout_secs = 2\n");
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    let runs = || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count()
    };

    fake.push(text_message(ANN, "Ann", "please run the job"));
    let (yes, no, message) = wait_keyboard(&fake, ANN, 0);
    assert!(yes.ends_with(":1") && no.ends_with(":0"), "{yes} {no}");
    // Carol is allowed to chat, but it is not her question and she is no admin.
    fake.push(callback_query(CAROL, "Carol", &message, &yes));
    assert!(fake.wait_for(LONG, |reqs| reqs.iter().any(|r| r.method
        == "answerCallbackQuery"
        && r.json["show_alert"] == true
        && r.json["text"]
            .as_str()
            .unwrap_or("")
            .contains("Only the person who asked"))));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(runs(), 0, "Carol's press ran it");
    fake.push(callback_query(ANN, "Ann", &message, &yes));
    assert!(
        fake.wait_text(ANN, "Done: it ran.", LONG),
        "{:?}",
        fake.texts_to(ANN)
    );
    assert_eq!(runs(), 1);
    assert!(fake.wait_text(ANN, "Approved by @ann.", LONG));
    // The same button again: the approval is gone, nothing runs twice.
    fake.push(callback_query(ANN, "Ann", &message, &yes));
    assert!(fake.wait_for(LONG, |reqs| reqs.iter().any(|r| r.method
        == "answerCallbackQuery"
        && r.json["text"]
            .as_str()
            .unwrap_or("")
            .contains("no longer waiting"))));

    fake.push(text_message(ANN, "Ann", "once more"));
    let (_, no, message) = wait_keyboard(&fake, ANN, 1);
    fake.push(callback_query(ANN, "Ann", &message, &no));
    assert!(fake.wait_text(ANN, "Not run, as you said.", LONG));
    assert_eq!(runs(), 1, "a denied call ran");
    assert!(llm.requests()[3]
        .raw_body
        .contains("denied on Telegram by @ann"));

    fake.push(text_message(ANN, "Ann", "and again"));
    wait_keyboard(&fake, ANN, 2);
    assert!(fake.wait_text(ANN, "No answer, so not run.", LONG));
    assert!(fake.wait_text(ANN, "No answer within 2 s: denied.", LONG));
    assert_eq!(runs(), 1, "an unanswered call ran");
    covo.stop();

    // The audit log has each call, from Telegram.
    let rows = audit(dir.path(), "shell_exec");
    assert_eq!(rows.len(), 3, "{rows:?}");
    assert!(rows.iter().all(|(via, _)| via == "telegram"), "{rows:?}");
    assert_eq!(rows[0].1, "ok", "{rows:?}");
    assert!(rows[1..].iter().all(|(_, o)| o != "ok"), "{rows:?}");
}

fn flood(s: u64) -> Value {
    json!({"ok": false, "error_code": 429,
           "description": format!("Too Many Requests: retry after {s}"),
           "parameters": {"retry_after": s}})
}

/// The answers covo gave to button presses, in order.
fn press_notes(fake: &FakeBotApi) -> Vec<String> {
    fake.calls("answerCallbackQuery")
        .iter()
        .filter_map(|r| r.json["text"].as_str().map(String::from))
        .collect()
}

/// Issue 24, defect 1: an Approve button from before a restart approved the newer request
/// (ids came from a counter that restarted at 1, and a press was matched on id and user only).
#[test]
fn an_old_button_after_a_restart_matches_nothing_and_the_restart_closes_it() {
    let fake = FakeBotApi::start(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran.txt");
    let call = json!({"command": format!("echo ran >> {}", marker.display())}).to_string();
    let llm = ScriptedLlm::start(vec![
        // Asked before the kill: never answered.
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::text("Done: it ran."),
    ]);
    let cfg = config(&fake, &[ANN], "approval_timeout_secs = 60\n");
    let runs = || {
        std::fs::read_to_string(&marker)
            .unwrap_or_default()
            .lines()
            .count()
    };
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    fake.push(text_message(ANN, "Ann", "please run the job"));
    let (old_yes, old_no, old_message) = wait_keyboard(&fake, ANN, 0);
    let id = |data: &str| data.split(':').nth(1).unwrap_or_default().to_string();
    assert_eq!(id(&old_yes).len(), 32, "{old_yes}");
    assert!(id(&old_yes).bytes().all(|b| b.is_ascii_hexdigit()));
    assert_eq!(id(&old_yes), id(&old_no));
    // The question is recorded once Telegram has answered with its message id, a moment after
    // the keyboard is sent: a kill inside that moment leaves buttons that match nothing (the
    // ids are random) but nothing to close. This test is about closing, so it kills after.
    let home = dir.path().join("home");
    assert!(
        wait_until(LONG, || covo::store::Store::open_in(&home)
            .and_then(|s| s.telegram_approvals_open())
            .is_ok_and(|open| !open.is_empty())),
        "the approval was never recorded:\n{}",
        covo.log()
    );
    covo.kill();

    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    // The question the kill left open is closed: its text says why, its buttons are gone.
    let old_id = old_message["message_id"].as_i64().unwrap();
    assert!(
        fake.wait_for(LONG, |reqs| reqs.iter().any(|r| r.method
            == "editMessageText"
            && r.json["message_id"].as_i64() == Some(old_id)
            && r.json["text"]
                .as_str()
                .unwrap_or("")
                .contains("covo restarted before this was answered")
            && r.json.get("reply_markup").is_none())),
        "{:?}\n{}",
        fake.chat_view(ANN),
        covo.log()
    );
    fake.push(text_message(ANN, "Ann", "run the job again"));
    let (new_yes, _, new_message) = wait_keyboard(&fake, ANN, 1);
    assert_ne!(id(&new_yes), id(&old_yes), "an approval id came again");
    // The old Approve, on the old message, and the old data forged onto the new message.
    fake.push(callback_query(ANN, "Ann", &old_message, &old_yes));
    fake.push(callback_query(ANN, "Ann", &new_message, &old_yes));
    // The new data pressed on the old message (another question of the same chat).
    fake.push(callback_query(ANN, "Ann", &old_message, &new_yes));
    assert!(
        wait_until(LONG, || press_notes(&fake).len() >= 3),
        "{:?}",
        press_notes(&fake)
    );
    // Presses are answered concurrently, so in any order: two for an id that is not waiting,
    // one for the live id pressed on the wrong message.
    let notes = press_notes(&fake);
    let count = |needle: &str| notes.iter().filter(|n| n.contains(needle)).count();
    assert_eq!(notes.len(), 3, "{notes:?}");
    assert_eq!(count("no longer waiting"), 2, "{notes:?}");
    assert_eq!(count("does not belong to this question"), 1, "{notes:?}");
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(runs(), 0, "an old or misplaced button ran the call");
    // The real button still works: none of the above ended the approval.
    fake.push(callback_query(ANN, "Ann", &new_message, &new_yes));
    assert!(
        fake.wait_text(ANN, "Done: it ran.", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    assert_eq!(runs(), 1);
    covo.stop();
}

/// Issue 24, defects 2 and 3: a 429 on the approval question denied the call at once, and the
/// one-shot answers to a press and the closing edit were dropped on a 429.
#[test]
fn every_approval_call_waits_out_a_429() {
    let fake = FakeBotApi::start(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("ran.txt");
    let call = json!({"command": format!("echo ran >> {}", marker.display())}).to_string();
    let llm = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::text("Done: it ran."),
        Reply::tool_calls(vec![("shell_exec", call.as_str())]),
        Reply::text("Not asked."),
    ]);
    let cfg = config(&fake, &[ANN], "approval_timeout_secs = 20\n");
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    fake.fail_next("sendMessage", 429, flood(2));
    fake.push(text_message(ANN, "Ann", "please run the job"));
    let (yes, _, message) = wait_keyboard(&fake, ANN, 0);
    let asks: Vec<_> = fake
        .calls("sendMessage")
        .into_iter()
        .filter(|r| r.json.get("reply_markup").is_some())
        .collect();
    assert_eq!(
        asks.len(),
        2,
        "the question was not sent again after the 429"
    );
    let gap = asks[1].at - asks[0].at;
    assert!(
        gap >= Duration::from_millis(1900),
        "asked again {gap:?} after a 429 with retry_after 2"
    );
    fake.fail_next("answerCallbackQuery", 429, flood(1));
    fake.fail_next("editMessageText", 429, flood(1));
    fake.push(callback_query(ANN, "Ann", &message, &yes));
    assert!(
        fake.wait_text(ANN, "Done: it ran.", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    assert!(
        wait_until(LONG, || fake.calls("answerCallbackQuery").len() == 2),
        "the press was not answered again after a 429"
    );
    assert_eq!(press_notes(&fake), ["Approved.", "Approved."]);
    let id = message["message_id"].as_i64().unwrap();
    assert!(
        fake.wait_for(LONG, |reqs| reqs.iter().any(|r| r.method
            == "editMessageText"
            && r.json["message_id"].as_i64() == Some(id)
            && r.json["text"]
                .as_str()
                .unwrap_or("")
                .contains("Approved by @ann."))),
        "the question was not closed after a 429: {:?}",
        fake.chat_view(ANN)
    );
    assert!(!llm.requests()[1].raw_body.contains("denied"));

    // A 429 longer than the approval's deadline is a denial that says why; nothing runs.
    fake.fail_next("sendMessage", 429, flood(60));
    fake.push(text_message(ANN, "Ann", "once more"));
    assert!(
        fake.wait_text(ANN, "Not asked.", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    let told = &llm.requests()[3].raw_body;
    assert!(
        told.contains("could not ask on Telegram within 20 s"),
        "{told}"
    );
    assert_eq!(std::fs::read_to_string(&marker).unwrap().lines().count(), 1);
    covo.stop();
}

/// Issue 24, defect 3: a 429 on a stranger's refusal dropped it for good (the user was
/// remembered as refused, so no refusal ever came until a restart).
#[test]
fn a_strangers_refusal_survives_a_429_and_a_failed_one_is_tried_again() {
    let fake = FakeBotApi::start(TOKEN);
    let llm = ScriptedLlm::start(vec![]);
    let dir = tempfile::tempdir().unwrap();
    let covo = Covo::start(dir.path(), &config(&fake, &[ANN], ""), &llm, TOKEN);
    fake.fail_next("sendMessage", 429, flood(1));
    fake.push(text_message(BOB, "Bob", "hi"));
    let refused = |chat: i64| {
        fake.chat_view(chat)
            .iter()
            .filter(|t| t.contains("This bot is private"))
            .count()
    };
    let attempts = |chat: i64| {
        fake.calls("sendMessage")
            .iter()
            .filter(|r| r.json["chat_id"].as_i64() == Some(chat))
            .count()
    };
    assert!(
        wait_until(LONG, || refused(BOB) == 1),
        "{:?}\n{}",
        fake.texts_to(BOB),
        covo.log()
    );
    assert_eq!(attempts(BOB), 2, "the refused send and the one after it");
    // A refusal Telegram refuses outright (400) is not remembered as sent.
    fake.fail_next(
        "sendMessage",
        400,
        json!({"ok": false, "error_code": 400, "description": "Bad Request: chat not found"}),
    );
    fake.push(text_message(CAROL, "Carol", "hello"));
    assert!(wait_until(LONG, || attempts(CAROL) == 1));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(refused(CAROL), 0);
    fake.push(text_message(CAROL, "Carol", "hello?"));
    assert!(
        wait_until(LONG, || refused(CAROL) == 1),
        "the second message got no refusal: {}",
        covo.log()
    );
    // Bob, refused once, is not refused again.
    fake.push(text_message(BOB, "Bob", "hi again"));
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(attempts(BOB), 2);
    covo.stop();
}

/// A 1×1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
    0x89, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0,
    0x1f, 0x00, 0x05, 0x00, 0x01, 0xff, 0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45,
    0x4e, 0x44, 0xae, 0x42, 0x60, 0x82,
];

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn a_camera_snapshot_goes_out_as_a_multipart_photo() {
    let fake = FakeBotApi::start(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let png: PathBuf = dir.path().join("still.png");
    std::fs::write(&png, PNG).unwrap();
    let llm = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("camera_snapshot", "{}")]),
        Reply::text("Here is the greenhouse."),
    ]);
    let extra = format!(
        "[camera]\ncommand = [\"cp\", \"{}\", \"{{output}}\"]\n",
        png.display()
    );
    let covo = Covo::start(dir.path(), &config(&fake, &[ANN], &extra), &llm, TOKEN);
    fake.push(text_message(ANN, "Ann", "show me the greenhouse"));
    assert!(
        fake.wait_text(ANN, "Here is the greenhouse.", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    assert!(fake.wait_for(LONG, |reqs| reqs.iter().any(|r| r.method == "sendPhoto")));
    let photo: Request = fake.calls("sendPhoto").remove(0);
    let boundary = photo
        .content_type
        .strip_prefix("multipart/form-data; boundary=")
        .unwrap_or_else(|| panic!("{}", photo.content_type))
        .to_string();
    let body = &photo.body;
    let text = String::from_utf8_lossy(body);
    assert!(text.starts_with(&format!("--{boundary}\r\n")), "{text}");
    assert!(text.ends_with(&format!("\r\n--{boundary}--\r\n")), "{text}");
    assert!(
        text.contains(&format!(
            "Content-Disposition: form-data; name=\"chat_id\"\r\n\r\n{ANN}\r\n"
        )),
        "{text}"
    );
    assert!(
        text.contains("Content-Disposition: form-data; name=\"caption\"\r\n\r\nart-"),
        "{text}"
    );
    assert!(
        text.contains("Content-Disposition: form-data; name=\"photo\"; filename=\"art-"),
        "{text}"
    );
    let mut part = b".png\"\r\nContent-Type: image/png\r\n\r\n".to_vec();
    part.extend_from_slice(PNG);
    part.extend_from_slice(format!("\r\n--{boundary}--").as_bytes());
    assert!(
        contains(body, &part),
        "the photo part carries the PNG: {text}"
    );
    covo.stop();
}

#[test]
fn flood_control_waits_retry_after_and_a_bad_token_stops_polling_once() {
    let fake = FakeBotApi::start(TOKEN);
    let llm = ScriptedLlm::start(vec![Reply::text("All fine here.")]);
    let dir = tempfile::tempdir().unwrap();
    let flood = |s: u64| {
        json!({"ok": false, "error_code": 429,
               "description": format!("Too Many Requests: retry after {s}"),
               "parameters": {"retry_after": s}})
    };
    fake.fail_next("getUpdates", 429, flood(2));
    fake.fail_next("sendMessage", 429, flood(1));
    fake.push(text_message(ANN, "Ann", "how are things"));
    let covo = Covo::start(dir.path(), &config(&fake, &[ANN], ""), &llm, TOKEN);
    // Recorded on arrival: the refused send and the one after it.
    assert!(
        fake.wait_for(LONG, |reqs| reqs
            .iter()
            .filter(|r| r.method == "sendMessage" && r.json["text"] == "All fine here.")
            .count()
            == 2),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    let polls = fake.calls("getUpdates");
    let gap = polls[1].at - polls[0].at;
    assert!(
        gap >= Duration::from_millis(1900) && gap < Duration::from_secs(5),
        "the second poll came {gap:?} after a 429 with retry_after 2"
    );
    let sends = fake.calls("sendMessage");
    let gap = sends[1].at - sends[0].at;
    assert!(
        gap >= Duration::from_millis(900),
        "the answer was sent again {gap:?} after a 429 with retry_after 1"
    );
    covo.stop();

    // A revoked token: said once, clearly, and no more polling; the daemon goes on.
    let fake = FakeBotApi::start(TOKEN);
    let dir = tempfile::tempdir().unwrap();
    let covo = Covo::start(dir.path(), &config(&fake, &[ANN], ""), &llm, "999:wrong");
    assert!(
        covo.wait_log("401 Unauthorized", LONG).is_some(),
        "{}",
        covo.log()
    );
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        fake.calls("getUpdates").len(),
        1,
        "polling went on after a 401"
    );
    let log = covo.stop();
    assert_eq!(
        log.matches("401 Unauthorized").count(),
        2,
        "reported once (log and console): {log}"
    );
    assert!(log.contains("COVO_TELEGRAM_TOKEN"), "{log}");
    assert!(!log.contains("999:wrong"), "{log}");
}

#[test]
fn a_restart_mid_answer_handles_each_update_exactly_once() {
    let fake = FakeBotApi::start(TOKEN);
    let llm = ScriptedLlm::start(vec![
        // The first answer never comes: covo is killed while it waits.
        Reply::delay(Duration::from_secs(60), Reply::text("too late")),
        Reply::text("answer two"),
        Reply::text("answer three"),
        Reply::text("answer four"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&fake, &[ANN], "");
    for m in ["message one", "message two", "message three"] {
        fake.push(text_message(ANN, "Ann", m));
    }
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    assert!(llm.wait_for_requests(1, LONG), "{}", covo.log());
    std::thread::sleep(Duration::from_millis(300));
    covo.kill();
    // Sent while covo was down.
    fake.push(text_message(ANN, "Ann", "message four"));
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    assert!(
        fake.wait_text(ANN, "answer four", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    assert!(fake.wait_text(
        ANN,
        "restarted before it finished answering \"message one\"",
        LONG
    ));
    std::thread::sleep(Duration::from_millis(500));
    covo.stop();
    let asked = asked(&llm);
    assert_eq!(
        asked,
        [
            "message one",
            "message two",
            "message three",
            "message four"
        ],
        "each message reached the model exactly once, in order"
    );
    let texts = fake.texts_to(ANN);
    let pos = |t: &str| {
        texts
            .iter()
            .position(|x| x == t)
            .unwrap_or_else(|| panic!("{t}: {texts:?}"))
    };
    assert!(pos("answer two") < pos("answer three") && pos("answer three") < pos("answer four"));
    assert!(!texts.iter().any(|t| t.contains("too late")));
    assert_eq!(fake.unconfirmed(), 0, "every update was confirmed");
}

#[test]
fn queues_chats_and_message_sizes_are_bounded() {
    let fake = FakeBotApi::start(TOKEN);
    let mut script = vec![Reply::delay(
        Duration::from_secs(3),
        Reply::text("answer 1"),
    )];
    script.extend((2..=8).map(|i| Reply::text(format!("answer {i}"))));
    let llm = ScriptedLlm::start(script);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&fake, &[ANN, BOB], "[run]\nmax_sessions = 1\n");
    // One batch: eleven messages from Ann, then one from Bob while Ann's chat holds the only
    // session.
    for i in 1..=11 {
        fake.push(text_message(ANN, "Ann", &format!("question {i}")));
    }
    fake.push(text_message(BOB, "Bob", "hello from bob"));
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    assert!(
        fake.wait_text(BOB, "busy with 1 other chats", 2 * LONG),
        "{:?}\n{}",
        fake.texts_to(BOB),
        covo.log()
    );
    assert!(
        fake.wait_text(ANN, "answer 8", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    // The refusals go out from their own tasks, so the last may come after "answer 8".
    let dropped = || {
        fake.texts_to(ANN)
            .iter()
            .filter(|t| t.contains("already waiting"))
            .count()
    };
    wait_until(LONG, || dropped() >= 3);
    assert_eq!(dropped(), 3, "8 wait at most: {:?}", fake.texts_to(ANN));
    // Too long for one message: refused before the model.
    fake.push(text_message(ANN, "Ann", &"x".repeat(5000)));
    assert!(fake.wait_text(ANN, "too long", LONG));
    covo.stop();
    let asked = asked(&llm);
    let want: Vec<String> = (1..=8).map(|i| format!("question {i}")).collect();
    assert_eq!(asked, want);
}

#[test]
fn a_long_answer_streams_into_edited_messages_split_at_4096() {
    let fake = FakeBotApi::start(TOKEN);
    let answer: String = (0..250)
        .map(|i| format!("line {i:03} of a long answer, streamed piece by piece.\n"))
        .collect();
    assert!(answer.len() > 3 * 4096);
    // Streamed in 4-character pieces, a millisecond apart: about three seconds.
    let llm = ScriptedLlm::start(vec![Reply::text(answer.clone())]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&fake, &[ANN], "").replace("edit_every_ms = 100", "edit_every_ms = 200");
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    fake.push(text_message(ANN, "Ann", "tell me everything"));
    assert!(
        wait_until(LONG, || fake.chat_view(ANN).concat() == answer),
        "{:?}\n{}",
        fake.chat_view(ANN),
        covo.log()
    );
    let view = fake.chat_view(ANN);
    assert_eq!(view.len(), 4, "{view:?}");
    assert!(view.iter().all(|m| m.encode_utf16().count() <= 4096));
    assert!(
        view[..3].iter().all(|m| m.ends_with('\n')),
        "split at line ends"
    );
    // It streamed: messages were edited as the text grew, each about once per interval at most.
    let calls: Vec<Request> = fake
        .requests()
        .into_iter()
        .filter(|r| matches!(r.method.as_str(), "sendMessage" | "editMessageText"))
        .collect();
    let edits: Vec<&Request> = calls
        .iter()
        .filter(|r| r.method == "editMessageText")
        .collect();
    assert!(edits.len() >= 3, "{} edits", edits.len());
    assert!(
        calls.len() < 60,
        "{} calls for 3,000 streamed pieces",
        calls.len()
    );
    let mut by_message: std::collections::BTreeMap<i64, Vec<Instant>> = Default::default();
    for e in &edits {
        by_message
            .entry(e.json["message_id"].as_i64().unwrap())
            .or_default()
            .push(e.at);
    }
    // Timed where the fake receives them, so single gaps jitter with the machine's load; the
    // count over each message's editing time shows the bound.
    for times in by_message.values() {
        let span = *times.last().unwrap() - times[0];
        let most = span.as_millis() / 200 + 2;
        assert!(
            times.len() as u128 <= most,
            "{} edits of one message in {span:?}",
            times.len()
        );
    }
    covo.stop();
}

/// Polls `f` until it holds; false after `timeout`.
fn wait_until(timeout: Duration, f: impl Fn() -> bool) -> bool {
    let end = Instant::now() + timeout;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

#[test]
fn network_errors_back_off_with_jitter_and_polling_resumes() {
    // A port nothing listens on: every poll is refused at once.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let llm = ScriptedLlm::start(vec![Reply::text("Back online.")]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[telegram]\napi_base = \"http://127.0.0.1:{port}\"\nallow = [{ANN}]\npoll_timeout_secs = 1\n"
    );
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    std::thread::sleep(Duration::from_secs(6));
    let failed = covo.log().matches("Telegram poll failed").count();
    // Waits of 1, 2, 4 s (each 50-100 %): between 2 and 5 attempts in 6 s, not hundreds.
    assert!(
        (2..=5).contains(&failed),
        "{failed} failed polls in 6 s:\n{}",
        covo.log()
    );
    let waits: Vec<u64> = covo
        .log()
        .lines()
        .filter(|l| l.contains("Telegram poll failed"))
        .filter_map(|l| {
            l.split("wait_ms=")
                .nth(1)?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .collect();
    assert!(waits.windows(2).all(|w| w[1] > w[0] / 2), "{waits:?}");
    assert!(waits[0] >= 500 && waits[0] <= 1000, "{waits:?}");
    assert!(!covo.log().contains("TEST-token"));
    // The API comes back on the same port: polling resumes and the message is answered.
    let fake = FakeBotApi::start_on(TOKEN, port);
    fake.push(text_message(ANN, "Ann", "are you there?"));
    assert!(fake.wait_text(ANN, "Back online.", LONG), "{}", covo.log());
    covo.stop();
}

#[test]
fn confirm_actuate_asks_before_a_relay_switches() {
    let fake = FakeBotApi::start(TOKEN);
    let llm = ScriptedLlm::start(vec![
        Reply::tool_calls(vec![("gpio_write", r#"{"pin":"relay","level":1}"#)]),
        Reply::text("The relay is on."),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(&fake, &[ANN], "confirm_actuate = true\nadmins = [999]\n");
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    fake.push(text_message(ANN, "Ann", "switch the relay on"));
    let (yes, _, message) = wait_keyboard(&fake, ANN, 0);
    assert!(
        fake.calls("sendMessage").iter().any(|r| r.json["text"]
            .as_str()
            .unwrap_or("")
            .contains("Approve gpio_write (actuate)?")),
        "{:?}",
        fake.texts_to(ANN)
    );
    // An admin may answer someone else's question.
    fake.push(callback_query(999, "Root", &message, &yes));
    assert!(
        fake.wait_text(ANN, "The relay is on.", LONG),
        "{:?}",
        fake.texts_to(ANN)
    );
    assert!(fake.wait_text(ANN, "Approved by @root.", LONG));
    assert!(!llm.requests()[1].raw_body.contains("approval_denied"));
    covo.stop();
    assert_eq!(
        audit(dir.path(), "gpio_write"),
        [("telegram".to_string(), "ok".to_string())]
    );
}

/// `(via, outcome)` of each audited call of `tool`, oldest first.
fn audit(dir: &Path, tool: &str) -> Vec<(String, String)> {
    let store = covo::store::Store::open_in(&dir.join("home")).unwrap();
    let conn = store.conn();
    let mut st = conn
        .prepare("SELECT via, outcome FROM audit WHERE tool = ?1 ORDER BY id")
        .unwrap();
    let rows = st
        .query_map([tool], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows
}

#[test]
fn a_voice_message_is_transcribed_by_the_peer_and_answered() {
    use covo_tests::broker::{raw, Mosquitto};
    use covo_tests::rumqttc::v5::mqttbytes::v5::PublishProperties;
    use covo_tests::rumqttc::v5::mqttbytes::QoS;
    let broker = Mosquitto::start();
    // A peer that serves transcribe_audio: its retained birth, and answers on the response
    // topic with the request's correlation data (docs/peer-protocol.md).
    let peer = raw(broker.port(), "covo/+/peer/req");
    peer.client
        .publish(
            "covo/peers/fake/status",
            QoS::AtLeastOnce,
            true,
            json!({"status": "online", "version": 1, "tools": ["transcribe_audio"]}).to_string(),
        )
        .unwrap();
    let voice = b"OggS\x00\x02 a short voice note".to_vec();
    let heard = Arc::new(Mutex::new(Vec::<Vec<u8>>::new()));
    {
        let (client, rx, heard) = (peer.client.clone(), peer.rx, heard.clone());
        std::thread::spawn(move || {
            use base64::Engine as _;
            while let Ok(m) = rx.recv() {
                let req: Value = serde_json::from_slice(&m.payload).unwrap_or(Value::Null);
                let audio = req["args"]["audio"].as_str().unwrap_or("");
                let bytes = audio
                    .strip_prefix("data:audio/ogg;base64,")
                    .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
                    .unwrap_or_default();
                heard.lock().unwrap().push(bytes);
                let res = m.topic.replace("/peer/req", "/peer/res");
                let props = PublishProperties {
                    correlation_data: m.correlation.clone().map(Into::into),
                    ..Default::default()
                };
                let body = json!({"call_id": req["call_id"], "ok": true,
                                  "result": {"text": "is the fan running?", "language": "en"}});
                let _ = client.publish_with_properties(
                    res,
                    QoS::AtLeastOnce,
                    false,
                    body.to_string(),
                    props,
                );
            }
        });
    }
    let fake = FakeBotApi::start(TOKEN);
    fake.put_file("voice-7", voice.clone());
    let llm = ScriptedLlm::start(vec![Reply::text("The fan is off.")]);
    let dir = tempfile::tempdir().unwrap();
    let cfg = format!(
        "[mqtt]\nurl = \"{}\"\ngateway_id = \"gw1\"\n{}",
        broker.url(),
        config(&fake, &[ANN], "")
    );
    let status = raw(broker.port(), "covo/gateways/gw1/status");
    let covo = Covo::start(dir.path(), &cfg, &llm, TOKEN);
    status
        .next_on("covo/gateways/gw1/status", LONG)
        .expect("the gateway's birth");
    std::thread::sleep(Duration::from_millis(500));
    fake.push(voice_message(ANN, "Ann", "voice-7", voice.len() as u64));
    assert!(
        fake.wait_text(ANN, "The fan is off.", LONG),
        "{:?}\n{}",
        fake.texts_to(ANN),
        covo.log()
    );
    assert!(fake.wait_text(ANN, "(heard) is the fan running?", LONG));
    assert_eq!(
        *heard.lock().unwrap(),
        vec![voice],
        "the peer got the voice file's bytes"
    );
    assert!(fake.calls("getFile").len() == 1 && fake.calls("file").len() == 1);
    assert_eq!(asked(&llm), ["is the fan running?"]);
    covo.stop();
    assert_eq!(
        audit(dir.path(), "transcribe_audio"),
        [("telegram".to_string(), "ok".to_string())]
    );
}

/// Issue 24 defect 14: a stranger named "@alice" logged like the user @alice, and `log_tail`
/// handed pairing codes to any tool caller; the owner can let anyone in by id.
#[test]
fn strangers_are_logged_by_id_log_tail_hides_codes_and_the_owner_allows_by_id() {
    let fake = FakeBotApi::start(TOKEN);
    let llm = ScriptedLlm::start(vec![Reply::text("Hello, Carol.")]);
    let dir = tempfile::tempdir().unwrap();
    let covo = Covo::start(dir.path(), &config(&fake, &[ANN], ""), &llm, TOKEN);
    // A stranger whose first name is "@alice" and who has no username.
    let mut m = text_message(CAROL, "@alice", "let me in");
    m["message"]["from"]
        .as_object_mut()
        .unwrap()
        .remove("username");
    fake.push(m);
    let line = covo
        .wait_log("covo telegram pair ", LONG)
        .expect("a pairing code in the log");
    assert!(
        line.contains(&format!("id {CAROL} (no username; first name \"@alice\")")),
        "{line}"
    );
    assert!(!line.contains("user @alice"), "{line}");
    assert!(
        line.contains(&format!("covo telegram allow {CAROL}")),
        "{line}"
    );
    let code = line
        .split("covo telegram pair ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap()
        .to_string();
    // The service's log as log_tail reads it (a file under covo's home stands in for the
    // journal): the line is there, its code is not, and a grep for the code finds nothing.
    std::fs::write(dir.path().join("home/covo.log"), covo.log()).unwrap();
    let file = dir.path().join("home/covo.log").display().to_string();
    for args in [
        json!({"file": file, "lines": 1000}),
        json!({"file": file, "grep": code.clone()}),
        json!({"file": file, "grep": "pair [A-Z0-9]{8}"}),
    ] {
        let out = base_command(dir.path())
            .args(["tools", "call", "log_tail", &args.to_string()])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "{text}");
        assert!(!text.contains(&code), "log_tail returned the code: {text}");
        if args.get("grep").is_none() {
            assert!(text.contains("covo telegram pair ***"), "{text}");
        }
    }
    // The owner lets Carol in by the id the log shows, without the code.
    let out = base_command(dir.path())
        .args(["telegram", "allow", &CAROL.to_string()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    fake.push(text_message(CAROL, "@alice", "hello again"));
    assert!(
        fake.wait_text(CAROL, "Hello, Carol.", LONG),
        "{:?}\n{}",
        fake.texts_to(CAROL),
        covo.log()
    );
}
