//! Deduplication by call id, shared by the peer and by the swarm side of `covo run`.
//!
//! QoS 1 may deliver a request twice. Recent call ids are remembered (at most
//! [`DEDUP_CAPACITY`], oldest evicted first): a duplicate of a finished call gets the kept
//! answer again, a duplicate of a running call is dropped (its answer is on the way), so a tool
//! never runs twice.

use crate::protocol::{Request, Response};
use std::collections::{HashMap, VecDeque};

/// How many recent call ids a server remembers.
pub const DEDUP_CAPACITY: usize = 1024;

enum Seen {
    Running,
    Done(Box<Response>),
}

/// Answers larger than this (serialized) are not kept for duplicates: 1024 of them could hold
/// gigabytes of artifacts. A duplicate gets an error saying the call already ran instead.
const CACHED_ANSWER_MAX: usize = 64 * 1024;

/// Recent call ids → their state, oldest evicted first.
#[derive(Default)]
pub struct Dedup {
    map: HashMap<String, Seen>,
    order: VecDeque<String>,
}

/// What to do with an incoming request ([`Dedup::admit_request`]); shared by `covo peer` and
/// the swarm side of `covo run`.
pub enum Admit {
    /// A new call, now marked running: run it, then [`Dedup::finish`].
    Run(Request),
    /// Answer at once without running anything: a malformed request (`bad_request`, its id
    /// taken from the correlation data) or a duplicate of a finished call (the kept answer).
    Answer(Response),
    /// A duplicate of a running call: its answer is on the way.
    Drop,
}

/// Parses a request payload; a malformed one gives the `bad_request` answer instead, its call
/// id taken from the correlation data.
pub fn parse_request(payload: &[u8], correlation: Option<&[u8]>) -> Result<Request, Box<Response>> {
    serde_json::from_slice(payload).map_err(|e| {
        let id = correlation
            .map(|c| String::from_utf8_lossy(c).into_owned())
            .unwrap_or_default();
        Box::new(Response::err(
            &id,
            "bad_request",
            format!("not a request: {e}"),
        ))
    })
}

impl Dedup {
    /// Parses a request payload and checks its call id against the recent ones.
    pub fn admit_request(&mut self, payload: &[u8], correlation: Option<&[u8]>) -> Admit {
        match parse_request(payload, correlation) {
            Ok(req) => self.admit_parsed(req),
            Err(bad) => Admit::Answer(*bad),
        }
    }

    /// Checks a parsed request's call id against the recent ones.
    pub fn admit_parsed(&mut self, req: Request) -> Admit {
        match self.admit(&req.call_id) {
            None => Admit::Run(req),
            Some(Some(kept)) => Admit::Answer(kept),
            Some(None) => Admit::Drop,
        }
    }

    /// `None` for a new call (now marked running); else what is known about it.
    fn admit(&mut self, id: &str) -> Option<Option<Response>> {
        match self.map.get(id) {
            Some(Seen::Running) => Some(None),
            Some(Seen::Done(r)) => Some(Some((**r).clone())),
            None => {
                self.map.insert(id.to_string(), Seen::Running);
                self.order.push_back(id.to_string());
                while self.order.len() > DEDUP_CAPACITY {
                    if let Some(old) = self.order.pop_front() {
                        self.map.remove(&old);
                    }
                }
                None
            }
        }
    }

    /// Marks call `id` finished with answer `r`, which serializes to `size` bytes.
    pub fn finish(&mut self, id: &str, r: &Response, size: usize) {
        if let Some(s) = self.map.get_mut(id) {
            *s = Seen::Done(Box::new(if size <= CACHED_ANSWER_MAX {
                r.clone()
            } else {
                Response::err(
                    id,
                    "already_answered",
                    format!(
                        "this call already ran and its {size}-byte answer was sent once; \
                         large answers are not kept for resending"
                    ),
                )
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dedup_remembers_running_and_finished_calls_and_evicts_the_oldest() {
        let mut d = Dedup::default();
        assert!(d.admit("a").is_none());
        assert!(matches!(d.admit("a"), Some(None)));
        let r = Response::ok("a", serde_json::json!(1));
        d.finish("a", &r, serde_json::to_vec(&r).unwrap().len());
        assert_eq!(d.admit("a"), Some(Some(r)));
        for i in 0..DEDUP_CAPACITY {
            d.admit(&i.to_string());
        }
        assert!(d.admit("a").is_none(), "evicted, so new again");
    }

    #[test]
    fn requests_are_parsed_then_admitted_once_and_large_answers_are_not_kept() {
        let mut d = Dedup::default();
        let req = br#"{"call_id":"c1","tool":"t","args":{},"gateway":"g","deadline_ms":1000}"#;
        assert!(matches!(d.admit_request(req, None), Admit::Run(r) if r.call_id == "c1"));
        assert!(matches!(d.admit_request(req, None), Admit::Drop));
        let big = Response::ok("c1", serde_json::json!("x"));
        d.finish("c1", &big, CACHED_ANSWER_MAX + 1);
        match d.admit_request(req, None) {
            Admit::Answer(r) => assert_eq!(r.error.unwrap().kind, "already_answered"),
            _ => panic!("a finished call is answered, not run"),
        }
        match d.admit_request(b"not json", Some(b"c9")) {
            Admit::Answer(r) => {
                assert_eq!(r.call_id, "c9");
                assert_eq!(r.error.unwrap().kind, "bad_request");
            }
            _ => panic!("a malformed request is answered"),
        }
    }
}
