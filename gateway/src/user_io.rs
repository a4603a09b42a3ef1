//! The terminal as the user's channel: messages go to stderr (stdout is kept for results),
//! questions are read from stdin.

use crate::exec::UserIo;
use std::io::{BufRead, Write};

/// The local terminal: channel `cli`.
pub struct Terminal;

impl UserIo for Terminal {
    fn send(&self, channel: &str, text: &str) -> Result<(), String> {
        if channel != "cli" {
            return Err(format!(
                "channel '{channel}' is not connected (connected: cli)"
            ));
        }
        let mut err = std::io::stderr().lock();
        writeln!(err, "{text}").map_err(|e| e.to_string())
    }

    fn ask(&self, question: &str, choices: &[String]) -> Option<String> {
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "? {question}");
        for (i, c) in choices.iter().enumerate() {
            let _ = writeln!(err, "  {}. {c}", i + 1);
        }
        let _ = err.flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => {
                let answer = line.trim();
                // A number picks a listed choice; anything else is the answer itself.
                let picked = answer
                    .parse::<usize>()
                    .ok()
                    .and_then(|n| n.checked_sub(1))
                    .and_then(|i| choices.get(i));
                Some(picked.cloned().unwrap_or_else(|| answer.to_string()))
            }
        }
    }

    fn channels(&self) -> Vec<(String, bool)> {
        vec![("cli".into(), true)]
    }
}
