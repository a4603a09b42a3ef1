//! Message text for Telegram. Answers are sent as plain text (no `parse_mode`), so nothing
//! the model writes can break a message's markup or be taken for formatting: no escaping is
//! needed, and none is done. Telegram measures its 4,096-character limit in UTF-16 code units,
//! so that is what [`split`] counts.

/// Telegram's limit for one message's text.
pub const MAX_MESSAGE: usize = 4096;

fn units(c: char) -> usize {
    c.len_utf16()
}

/// Splits `text` into pieces of at most `max` UTF-16 units each, at the last line break
/// (else space) in the second half of a window, else exactly at the limit. Never splits a
/// character; no piece is empty; the pieces joined give back the text.
pub fn split(text: &str, max: usize) -> Vec<&str> {
    let max = max.max(2);
    let mut out = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        // The byte offset where `max` units end, or the whole rest.
        let mut used = 0;
        let mut end = rest.len();
        for (i, c) in rest.char_indices() {
            if used + units(c) > max {
                end = i;
                break;
            }
            used += units(c);
        }
        if end == rest.len() {
            out.push(rest);
            break;
        }
        let window = &rest[..end];
        let half = window.len() / 2;
        let cut = window
            .rfind('\n')
            .filter(|&i| i >= half)
            .or_else(|| window.rfind(' ').filter(|&i| i >= half))
            .map_or(end, |i| i + 1);
        out.push(&rest[..cut]);
        rest = &rest[cut..];
    }
    out
}

/// `text` cut to at most `max` characters, with `…` when it was longer.
pub fn clip(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_text_splits_at_lines_within_the_limit() {
        let line = "x".repeat(99) + "\n";
        let text = line.repeat(100); // 10,000 characters
        let parts = split(&text, MAX_MESSAGE);
        assert_eq!(parts.len(), 3);
        assert!(parts
            .iter()
            .all(|p| p.encode_utf16().count() <= MAX_MESSAGE));
        assert!(parts[0].ends_with('\n'));
        assert_eq!(parts.concat(), text);
    }

    #[test]
    fn wide_characters_count_as_telegram_counts_them() {
        // Each emoji is two UTF-16 units: 3,000 of them are 6,000 units.
        let text = "😀".repeat(3000);
        let parts = split(&text, MAX_MESSAGE);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].encode_utf16().count(), 4096);
        assert_eq!(parts.concat(), text);
        // No break anywhere: cut exactly at the limit.
        let solid = "a".repeat(5000);
        let parts = split(&solid, MAX_MESSAGE);
        assert_eq!(parts[0].len(), 4096);
        assert_eq!(parts[1].len(), 904);
        assert!(split("", 10).is_empty());
        assert_eq!(split("short", 10), vec!["short"]);
    }

    #[test]
    fn clip_marks_what_it_cut() {
        assert_eq!(clip("abcdef", 3), "abc…");
        assert_eq!(clip("abc", 3), "abc");
    }
}
