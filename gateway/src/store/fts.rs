//! Free text turned into a bounded FTS5 query: the one way the store searches its full-text
//! indexes (memory recall, memory forget by query, conversation search).
//!
//! FTS5's cost grows faster than linearly with the number of terms in a MATCH expression (a
//! 60,000-word query took over 10 s), so text never reaches FTS5 as it is. [`FtsQuery::new`]:
//!
//! 1. splits the text into words, the runs of letters and digits; anything else separates words,
//!    so FTS5 syntax in the text (quotes, `OR`, `NEAR`, `*`, `:`) is never interpreted;
//! 2. lowercases the words and keeps the first occurrence of each (FTS5 folds case itself);
//! 3. drops words longer than [`MAX_TERM_CHARS`] characters: no word is that long, they are
//!    blobs (base64, hex, URLs without separators);
//! 4. keeps at most [`MAX_TERMS`] distinct words, in the order they first appear. With
//!    [`Match::Any`] (ranked search: recall, conversation search) the words after those are
//!    ignored, which can only narrow the results. With [`Match::All`] (what `memory_forget`
//!    deletes) ignoring a word would widen the match, so more distinct words than that is
//!    [`QueryError::TooManyWords`];
//! 5. quotes each word and joins them with `OR` or `AND`.
//!
//! Text with no word left is [`QueryError::NoWords`]. The work is linear in the text, and the
//! scan stops as soon as the outcome is known.

use std::collections::HashSet;

/// The most distinct words a full-text query keeps.
pub const MAX_TERMS: usize = 32;
/// The longest word, in characters, a full-text query keeps.
pub const MAX_TERM_CHARS: usize = 64;

/// How a query's words combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Match {
    /// Any word matches (`OR`); bm25 ranks rows matching more of them first.
    Any,
    /// Every word must match (`AND`).
    All,
}

/// Why a text cannot be a full-text query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// No word of letters or digits (of at most [`MAX_TERM_CHARS`] characters) is left.
    #[error(
        "the query has no searchable word (letters or digits, at most {MAX_TERM_CHARS} characters)"
    )]
    NoWords,
    /// More distinct words than [`MAX_TERMS`] where every word must match.
    #[error("the query has more than {max} distinct words; use at most {max}", max = MAX_TERMS)]
    TooManyWords,
}

/// A normalised full-text query: at most [`MAX_TERMS`] distinct, quoted words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FtsQuery {
    terms: Vec<String>,
    op: Match,
}

impl FtsQuery {
    /// Normalises `text` as the module documentation describes.
    pub fn new(text: &str, op: Match) -> Result<FtsQuery, QueryError> {
        let mut seen = HashSet::new();
        let mut terms = Vec::new();
        let words = text
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty() && w.chars().count() <= MAX_TERM_CHARS);
        for w in words {
            let w = w.to_lowercase();
            if seen.contains(&w) {
                continue;
            }
            if terms.len() == MAX_TERMS {
                match op {
                    Match::Any => break,
                    Match::All => return Err(QueryError::TooManyWords),
                }
            }
            seen.insert(w.clone());
            terms.push(w);
        }
        if terms.is_empty() {
            return Err(QueryError::NoWords);
        }
        Ok(FtsQuery { terms, op })
    }

    /// The words kept, lowercased, in order.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// The FTS5 MATCH expression: the quoted words joined by `OR` or `AND`.
    pub fn expression(&self) -> String {
        let op = match self.op {
            Match::Any => " OR ",
            Match::All => " AND ",
        };
        let quoted: Vec<String> = self.terms.iter().map(|t| format!("\"{t}\"")).collect();
        quoted.join(op)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_lowercased_deduplicated_and_quoted() {
        let q = FtsQuery::new("Basil, basil; BASIL sun-light \"OR\" NEAR(x*)", Match::Any).unwrap();
        assert_eq!(q.terms(), ["basil", "sun", "light", "or", "near", "x"]);
        assert_eq!(
            q.expression(),
            "\"basil\" OR \"sun\" OR \"light\" OR \"or\" OR \"near\" OR \"x\""
        );
        let q = FtsQuery::new("wifi password", Match::All).unwrap();
        assert_eq!(q.expression(), "\"wifi\" AND \"password\"");
    }

    #[test]
    fn long_words_are_dropped_and_text_without_words_is_an_error() {
        let blob = "a".repeat(MAX_TERM_CHARS + 1);
        let q = FtsQuery::new(&format!("{blob} basil"), Match::Any).unwrap();
        assert_eq!(q.terms(), ["basil"]);
        let word = "é".repeat(MAX_TERM_CHARS);
        assert_eq!(FtsQuery::new(&word, Match::Any).unwrap().terms(), [word]);
        for noise in ["", "  ", "!!! ... ???", "\"\" *:()", &blob] {
            assert_eq!(
                FtsQuery::new(noise, Match::Any),
                Err(QueryError::NoWords),
                "{noise}"
            );
        }
    }

    #[test]
    fn at_most_max_terms_are_kept_and_all_refuses_more() {
        let text: Vec<String> = (0..1000).map(|i| format!("w{i} w0")).collect();
        let text = text.join(" ");
        let q = FtsQuery::new(&text, Match::Any).unwrap();
        assert_eq!(q.terms().len(), MAX_TERMS);
        assert_eq!(q.terms()[MAX_TERMS - 1], format!("w{}", MAX_TERMS - 1));
        assert_eq!(
            FtsQuery::new(&text, Match::All),
            Err(QueryError::TooManyWords)
        );
        let exactly: Vec<String> = (0..MAX_TERMS).map(|i| format!("w{i}")).collect();
        let q = FtsQuery::new(&format!("{} ", exactly.join(" ")).repeat(3), Match::All);
        assert!(q.is_ok(), "{q:?}");
    }
}
