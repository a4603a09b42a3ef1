//! The index behind `tool_search`: BM25 (the `bm25` crate, with our own tokenizer: Snowball
//! stemming, a stop list that keeps the words a request needs) over each owned tool's name,
//! description, parameter docs and search-only keywords.
//!
//! A query is prepared before scoring:
//! - phrasal verbs and idioms become the word they mean ("call off" cancels, "get rid of"
//!   removes, "out loud" is aloud);
//! - quoted text, text after a short label and a colon, and the word after "mention",
//!   "containing", "the string"… are content, not words about the tool, and are dropped (a verb
//!   opening the content is kept: "my list: add milk");
//! - web addresses, file names, paths and MQTT topics become "web url", "file", "folder" and
//!   "topic";
//! - a clock time, delay, day or repetition adds "schedule" (not a deadline: "by friday"), a
//!   condition on a number adds "watch";
//! - telling a person something later ("let him know when…") adds "send message", asking them
//!   ("ask them which…") adds "ask clarification", asking what covo was told ("what's my
//!   favourite colour") adds "memory recall";
//! - cue words that occur together say what the query is about where single words cannot: a
//!   file with a size or a date is its metadata, a background job with what it printed is its
//!   output, the Pi with a temperature is the system (`CUES`);
//! - long words one typo away from a document word are corrected; synonyms are added.
//!
//! Small priors then rerank: a question favours tools that only read; a verb that removes,
//! creates, edits or lists favours the tools whose names do that, more when it opens the
//! request; a plural of a name word favours that family's list; a named file favours the file
//! tools; a time in a request favours `schedule_create`; the microcontroller and semantic
//! variants weigh less unless asked for.
//!
//! The index only ever holds the tools the profile owns, so no query can surface a pruned tool.

use crate::spec::{Effect, ToolSpec};
use bm25::{Embedder, EmbedderBuilder, Tokenizer};
use rust_stemmers::{Algorithm, Stemmer};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

/// How many times each field is repeated in a tool's document: a cheap, transparent field boost.
const NAME_WEIGHT: usize = 3;
const KEYWORD_WEIGHT: usize = 2;

/// Stop words: NLTK's English list (the `bm25` crate's default) less the words that carry
/// meaning in a tool request: directions and states (`on`, `off`, `up`, `out`, `above`, `below`),
/// quantifiers (`each`, `other`, `more`) and order (`before`, `after`, `again`); plus `called`
/// ("a file called x" names, it does not call). Sorted.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "against",
    "ain",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "aren",
    "as",
    "at",
    "be",
    "because",
    "been",
    "being",
    "between",
    "both",
    "but",
    "by",
    "called",
    "can",
    "couldn",
    "d",
    "did",
    "didn",
    "do",
    "does",
    "doesn",
    "doing",
    "don",
    "during",
    "for",
    "from",
    "further",
    "had",
    "hadn",
    "has",
    "hasn",
    "have",
    "haven",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "isn",
    "it",
    "its",
    "itself",
    "just",
    "ll",
    "m",
    "ma",
    "me",
    "mightn",
    "most",
    "mustn",
    "my",
    "myself",
    "needn",
    "nor",
    "now",
    "o",
    "of",
    "or",
    "our",
    "ours",
    "ourselves",
    "own",
    "re",
    "s",
    "same",
    "shan",
    "she",
    "should",
    "shouldn",
    "so",
    "some",
    "still",
    "such",
    "t",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "until",
    "ve",
    "very",
    "was",
    "wasn",
    "we",
    "were",
    "weren",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "won",
    "wouldn",
    "y",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// How much a question ("what is…", "is the…", "show…") favours tools that only read: asking
/// about state is far more often a read than a change.
const QUESTION_READ_BOOST: f32 = 1.3;

/// Query verbs grouped by the action they ask for, each with the name words of the tools that
/// perform it: a query asking to remove something favours `*_delete`, `*_cancel`, `*_kill`,
/// `memory_forget` over the tools that create the same kind of thing.
const VERB_CLASSES: &[(&[&str], &[&str])] = &[
    (
        &[
            "abort",
            "axe",
            "cancel",
            "clear",
            "delete",
            "disable",
            "discard",
            "ditch",
            "drop",
            "empty",
            "end",
            "erase",
            "forget",
            "kill",
            "nix",
            "remove",
            "scrap",
            "scratch",
            "stop",
            "strike",
            "terminate",
            "trash",
            "unschedule",
            "unset",
            "wipe",
        ],
        // A tool that writes a whole thing (`todo_write`) also removes from it and edits it.
        &["cancel", "clear", "delete", "forget", "kill", "write"],
    ),
    (
        &[
            "add", "append", "create", "design", "draw", "generate", "insert", "jot", "launch",
            "make", "new", "paint", "pop", "put", "record", "remind", "run", "save", "set",
            "spawn", "stick", "start",
        ],
        &[
            "add", "create", "spawn", "start", "store", "generate", "write",
        ],
    ),
    (
        &["list", "show", "view", "which"],
        &["list", "read", "status", "info"],
    ),
    (&["ask", "clarify", "confirm"], &["ask", "clarification"]),
    (&["exec", "execute"], &["exec", "run"]),
    (&["outline", "plan", "sketch"], &["update"]),
    (
        &["chart", "graph", "plot", "visualise", "visualize"],
        &["plot"],
    ),
    (
        &[
            "achieved",
            "adjust",
            "amend",
            "change",
            "completed",
            "finished",
            "correct",
            "edit",
            "fix",
            "modify",
            "replace",
            "substitute",
            "swap",
            "tweak",
            "update",
        ],
        &["edit", "update", "write"],
    ),
];

/// The toolsets that act on workspace files, favoured when the query names a file or path.
const FILE_TOOLSETS: &[&str] = &["fs", "patch", "search"];

/// How much a file tool is favoured when the query names a file or a path.
const FILE_BOOST: f32 = 1.15;

/// Tool families that are a qualified variant of another (`mcu_gpio_read` of `gpio_read`,
/// `semantic_memory_search` of `memory_recall`), with the words that ask for the variant: without
/// one of them, the plain tool is meant.
const QUALIFIED: &[(&str, &[&str])] = &[
    (
        "mcu_",
        &[
            "arduino",
            "esp",
            "esp32",
            "esp8266",
            "firmware",
            "mcu",
            "mcus",
            "microcontroller",
            "microcontrollers",
            "nrf52",
            "pico",
            "rp2040",
            "stm32",
            "teensy",
            "uno",
            "nano",
        ],
    ),
    (
        "semantic_",
        &[
            "embed",
            "embedding",
            "embeddings",
            "meaning",
            "semantic",
            "semantically",
            "similar",
            "similarity",
            "vector",
            "vectors",
        ],
    ),
];

/// How much a qualified variant is disfavoured when the query does not ask for it.
const UNQUALIFIED_PENALTY: f32 = 0.85;

/// How much `schedule_create` is favoured when a request names a time to act ("at 11pm switch
/// the pump off"): whatever the action, doing it later is a schedule.
const LATER_BOOST: f32 = 1.3;

/// The tool-name words of the action `w` asks for (`VERB_CLASSES`), looked up in a map built once.
fn verb_class(w: &str) -> Option<&'static [&'static str]> {
    static MAP: OnceLock<HashMap<&'static str, &'static [&'static str]>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut m = HashMap::new();
        for (verbs, names) in VERB_CLASSES {
            for v in *verbs {
                m.entry(*v).or_insert(*names);
            }
        }
        m
    })
    .get(w)
    .copied()
}

/// How much a tool whose name performs the query's action is favoured.
const VERB_BOOST: f32 = 1.2;

/// How much more a tool is favoured when the verb of its action opens the request ("add…",
/// "cancel…"): an imperative says what to do more surely than a verb further on.
const OPENING_VERB_BOOST: f32 = 1.1;

/// How much the plural of a tool-name word ("skills", "goals") favours that family's `*_list`.
const PLURAL_LIST_BOOST: f32 = 1.2;

/// Words that ask how a tool is used, beside a tool's exact name.
const USAGE_WORDS: &[&str] = &[
    "arguments",
    "call",
    "definition",
    "describe",
    "expect",
    "expects",
    "invoke",
    "parameters",
    "params",
    "schema",
    "signature",
    "take",
    "takes",
    "usage",
    "use",
];

/// Words that open a question about state.
const QUESTION_OPENERS: &[&str] = &[
    "any", "are", "did", "do", "does", "has", "have", "how", "is", "show", "was", "were", "what",
    "whats", "when", "where", "which", "who", "why",
];

/// Phrasal verbs and idioms, rewritten to the one word that says what they ask before anything
/// else reads the query ("call off the reminder" removes, it calls nothing).
const REWRITES: &[(&str, &str)] = &[
    ("call off", "cancel"),
    ("get rid of", "remove"),
    ("do away with", "remove"),
    ("push back", "postpone"),
    ("look through", "search"),
    ("dig up", "search"),
    ("keep an eye on", "watch"),
    ("keep tabs on", "watch"),
    ("heads up", "notify message"),
    ("spin up", "start"),
    ("fire up", "start"),
    ("boot up", "start"),
    ("shut down", "stop"),
    ("power cycle", "reboot"),
    ("off and on again", "reboot"),
    ("write back", "reply"),
    ("did i say", "did we discuss"),
    ("did we say", "did we discuss"),
    ("did you say", "did you mention"),
    ("free memory", "free ram"),
    ("memory usage", "ram usage"),
    ("memory left", "ram left"),
    ("much memory", "much ram"),
    ("been up", "uptime"),
    ("stop remembering", "forget"),
    ("add a note to", "update"),
    ("add a comment to", "update"),
    ("out loud", "aloud"),
    ("on my plate", "on my todo list"),
    ("get word to", "tell"),
    ("send word to", "tell"),
    ("pass on to", "tell"),
    ("who can write", "permissions"),
    ("who can read", "permissions"),
    ("who can access", "permissions"),
    ("don't need", "remove"),
    ("do not need", "remove"),
    ("no longer need", "remove"),
    ("come back with", "result"),
    ("came back with", "result"),
    ("fire off", "send"),
    ("note on", "update"),
    ("stop planning", "exit plan mode"),
    ("check it off", "check off"),
    ("tick it off", "tick off"),
    ("cross it off", "cross off"),
    ("drop me a", "send me a"),
    ("drop us a", "send us a"),
    ("drop the user a", "send the user a"),
    ("drop them a", "send them a"),
    ("drop him a", "send him a"),
    ("drop her a", "send her a"),
    ("keep me posted", "let me know"),
    ("keep me updated", "let me know"),
    ("keep me in the loop", "let me know"),
    ("no more", "stop"),
    ("read-only", "readonly"),
    ("lay out", "outline"),
    ("set out", "outline"),
    ("going to be like", "forecast"),
    ("going to rain", "forecast"),
    ("on and off again", "reboot"),
    ("write down", "write"),
    ("jot down", "jot"),
    ("print out", "print"),
];

/// The query in lower case with its phrasal verbs rewritten (`REWRITES`).
fn normalise(query: &str) -> String {
    let mut q = query.to_lowercase();
    let present: HashSet<String> = words(&q).collect();
    for (phrase, word) in REWRITES {
        // Only phrases whose first word is in the query are searched for.
        if starts_with_a_word_of(phrase, &present) && contains_phrase(&q, phrase) {
            q = q.replace(phrase, word);
        }
    }
    q
}

/// Whether the first word of `phrase` is one of `present`: a cheap test before a substring
/// search.
fn starts_with_a_word_of(phrase: &str, present: &HashSet<String>) -> bool {
    // Phrases are written in lower case.
    phrase
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .is_some_and(|w| present.contains(w))
}

/// Whether the query opens with a question word.
fn is_question(query: &str) -> bool {
    // The first word, without splitting the whole query (this is asked several times a search).
    query
        .split(|c: char| !c.is_alphanumeric())
        .find(|w| !w.is_empty())
        .is_some_and(|w| QUESTION_OPENERS.iter().any(|o| o.eq_ignore_ascii_case(w)))
}

/// Phrases whose words mean little alone but much together, with what they add to the query.
const PHRASES: &[(&[&str], &str)] = &[
    (
        &[
            "is there something",
            "is there anything",
            "is there a way",
            "any way to",
        ],
        "tool search",
    ),
    (
        &[
            "save that",
            "note that",
            "remember that",
            "record that",
            "keep in mind",
        ],
        "memory store",
    ),
    (
        &[
            "my list",
            "on the list",
            "to the list",
            "from the list",
            "off the list",
            "shopping list",
            "task list",
            "todo list",
            "my todo",
            "the todo",
            "my tasks",
            "your tasks",
        ],
        "todo",
    ),
    (
        &[
            "reach me",
            "contact me",
            "get hold of me",
            "message me on",
            "where can you send",
            "where can you message",
        ],
        "channels",
    ),
    (
        &["your notes", "my notes", "any notes", "notes do you"],
        "memory",
    ),
    (
        &[
            "need to do",
            "need to get done",
            "left to do",
            "still to do",
            "have to do",
            "to get done",
        ],
        "todo",
    ),
    (
        &["we covered", "have we covered", "we've covered"],
        "summary",
    ),
    (
        &[
            "my ok",
            "my okay",
            "my approval",
            "sign off",
            "for approval",
            "my go ahead",
        ],
        "approve accept plan",
    ),
    (
        &[
            "what do you know",
            "do you know about",
            "what you know",
            "what have i told you",
            "do you remember",
        ],
        "memory recall",
    ),
    (
        &[
            "did we",
            "we decided",
            "we said",
            "we talked",
            "we agreed",
            "we discussed",
            "we chatted",
            "we spoke",
            "we were talking",
            "we used",
            "we ran",
            "we tried",
            "we did",
            "we found",
            "last time we",
        ],
        "conversation",
    ),
];

/// Whether the query asks to pass something on to a person: a verb of telling followed closely
/// by the person ("tell them…", "give the user an update", "report back to me").
fn addresses_the_user(query: &str) -> bool {
    const TELL: &[&str] = &[
        "answer", "drop", "give", "inform", "let", "message", "msg", "ping", "reply", "report",
        "say", "send", "shoot", "tell", "text", "update", "write",
    ];
    let ws: Vec<String> = words(query).collect();
    // "reply: ok, see you at 5" (a label, its content dropped) answers the person who wrote.
    if ws.len() <= 2 && ws.first().is_some_and(|w| w == "reply" || w == "respond") {
        return true;
    }
    ws.iter().enumerate().any(|(i, w)| {
        let person = ws[i + 1..]
            .iter()
            .take(4)
            .find(|p| PEOPLE.contains(&p.as_str()));
        match person {
            // "give me the readings" asks for something; "give me a heads up" is told something.
            Some(p) if w == "give" && (p == "me" || p == "us") => ws[i + 1..]
                .iter()
                .take(4)
                .any(|n| ["heads", "shout", "ping", "update", "word"].contains(&n.as_str())),
            // "tell me the temperature" asks for an answer now; "tell me when it's done" asks to
            // be messaged later.
            Some(p) if ASK_NOW.contains(&w.as_str()) && (p == "me" || p == "us") => {
                ws[i + 1..].iter().any(|n| LATER.contains(&n.as_str()))
            }
            Some(_) => TELL.contains(&w.as_str()),
            None => false,
        }
    })
}

/// Verbs of telling that, addressed to the asker ("tell me…", "let me know…"), ask for an answer
/// now unless a word of `LATER` follows.
const ASK_NOW: &[&str] = &["answer", "inform", "let", "report", "say", "tell", "update"];

/// Words that put a message off until something happens.
const LATER: &[&str] = &[
    "after", "as", "done", "finished", "finishes", "if", "once", "soon", "when", "whenever",
];

/// Words naming the person covo talks to, or someone on their side.
const PEOPLE: &[&str] = &[
    "everybody",
    "everyone",
    "family",
    "friend",
    "her",
    "him",
    "household",
    "human",
    "husband",
    "me",
    "owner",
    "partner",
    "people",
    "person",
    "team",
    "them",
    "us",
    "user",
    "users",
    "whoever",
    "wife",
];

/// Whether the query asks to put a question to a person: "ask them", "ask the user which…",
/// "check with me".
fn asks_the_user(query: &str) -> bool {
    let ws: Vec<String> = words(query).collect();
    ws.iter().enumerate().any(|(i, w)| {
        (w == "ask" || (w == "check" && ws.get(i + 1).is_some_and(|n| n == "with")))
            && ws[i + 1..]
                .iter()
                .take(3)
                .any(|p| PEOPLE.contains(&p.as_str()))
    })
}

/// Words that name a file or folder (a file name or path in the query counts too).
const FILE_WORDS: &[&str] = &[
    "archive",
    "backup",
    "dir",
    "directory",
    "file",
    "files",
    "folder",
    "folders",
    "makefile",
    "readme",
];

/// What the query is about when words of each group occur in it together, with what that adds
/// to the query: an object and an aspect of it that the tools' words alone do not tell apart
/// ("how big is the log file" asks for a file's metadata, not the log).
const CUES: &[(&[&[&str]], &str)] = &[
    // A file's metadata.
    (
        &[
            FILE_WORDS,
            &[
                "age",
                "big",
                "bigger",
                "bytes",
                "executable",
                "gb",
                "heavy",
                "huge",
                "kb",
                "large",
                "larger",
                "mb",
                "metadata",
                "mtime",
                "owned",
                "owner",
                "owns",
                "permission",
                "newer",
                "older",
                "permissions",
                "perms",
                "details",
                "info",
                "empty",
                "date",
                "dates",
                "symlink",
                "attributes",
                "properties",
                "readable",
                "readonly",
                "size",
                "space",
                "timestamp",
                "writable",
                "writeable",
            ],
        ],
        "stat metadata size",
    ),
    (
        &[FILE_WORDS, &["how"], &["old", "recent", "new"]],
        "stat metadata modified",
    ),
    (
        &[
            FILE_WORDS,
            &[
                "date",
                "last",
                "lately",
                "recently",
                "since",
                "time",
                "today",
                "when",
                "yesterday",
            ],
            &[
                "change", "changed", "created", "edit", "edited", "modified", "modify", "saved",
                "touched", "updated", "written",
            ],
        ],
        "stat metadata modified",
    ),
    // How something running is getting on.
    (
        &[
            &["has", "have", "how", "is", "are"],
            &[
                "alive",
                "complete",
                "completed",
                "doing",
                "done",
                "finished",
                "going",
                "progressing",
                "ready",
                "running",
                "yet",
            ],
        ],
        "status",
    ),
    // Looking through files.
    (
        &[
            &["find", "grep", "locate", "look", "search"],
            &[
                "code",
                "codebase",
                "files",
                "project",
                "repo",
                "source",
                "workspace",
            ],
        ],
        "file search",
    ),
    // Looking something up on the web.
    (
        &[
            &["browse", "find", "google", "look", "lookup", "search"],
            &["internet", "net", "online", "web"],
        ],
        "web search",
    ),
    // Waiting for a line or a contact to change.
    (
        &[
            &["if", "once", "until", "when", "whenever"],
            &[
                "closes",
                "falling",
                "goes",
                "high",
                "low",
                "opens",
                "pressed",
                "released",
                "rising",
                "triggered",
                "triggers",
            ],
            &[
                "button", "contact", "door", "gpio", "input", "pin", "reed", "switch",
            ],
        ],
        "wait edge",
    ),
    // The board's own temperature.
    (
        &[
            &[
                "board",
                "chip",
                "cpu",
                "gateway",
                "pi",
                "processor",
                "raspberry",
                "soc",
            ],
            &[
                "cool",
                "heat",
                "hot",
                "overheating",
                "temp",
                "temperature",
                "throttled",
                "throttling",
                "warm",
            ],
        ],
        "system cpu",
    ),
    // Saying something in a chat.
    (
        &[
            &["drop", "post", "put", "say", "send", "write"],
            &["channel", "chat", "group", "telegram"],
        ],
        "send message",
    ),
    // How a quantity changed over time.
    (
        &[
            &[
                "co2",
                "humidity",
                "light",
                "moisture",
                "pressure",
                "readings",
                "temperature",
                "voltage",
            ],
            &[
                "change",
                "changed",
                "changes",
                "days",
                "hours",
                "overnight",
                "since",
                "today",
                "trend",
                "week",
                "yesterday",
            ],
            &[
                "compare", "did", "give", "has", "how", "list", "show", "trend", "was", "were",
                "what",
            ],
        ],
        "history",
    ),
    // Files that use or hold something.
    (
        &[
            &["what", "which"],
            &["files"],
            &[
                "call",
                "calls",
                "contain",
                "contains",
                "import",
                "imports",
                "mention",
                "mentions",
                "reference",
                "references",
                "use",
                "uses",
            ],
        ],
        "file search",
    ),
    // Keeping something running.
    (
        &[&["keep", "leave"], &["alive", "going", "running"]],
        "start background",
    ),
    // Where code is defined or called.
    (
        &[&[
            "callers",
            "defined",
            "definition",
            "implemented",
            "references",
        ]],
        "symbol code",
    ),
    // Running a shell program.
    (
        &[
            &["exec", "execute", "run"],
            &[
                "cat", "df", "du", "free", "grep", "ls", "make", "ps", "top", "uname", "uptime",
                "whoami",
            ],
        ],
        "shell command",
    ),
    // Every gateway at once.
    (
        &[
            &["all", "each", "every"],
            &["boards", "gateway", "gateways", "node", "nodes"],
        ],
        "swarm broadcast",
    ),
    // An audio file made from text.
    (
        &[
            &["audio", "mp3", "ogg", "sound", "speech", "wav"],
            &["file", "clip", "recording"],
            &[
                "make", "create", "generate", "into", "turn", "saying", "convert",
            ],
        ],
        "tts synthesize",
    ),
    // What an image shows.
    (
        &[
            &[
                "describe",
                "identify",
                "recognise",
                "recognize",
                "see",
                "what",
                "whats",
                "who",
            ],
            &[
                "image", "images", "photo", "photos", "pic", "picture", "pictures", "snapshot",
            ],
        ],
        "describe",
    ),
    // What a background process printed.
    (
        &[
            &[
                "background",
                "build",
                "compile",
                "compiler",
                "daemon",
                "job",
                "launched",
                "logger",
                "process",
                "processes",
                "program",
                "script",
                "server",
                "started",
                "task",
                "test",
                "tests",
                "worker",
            ],
            &[
                "console",
                "crash",
                "crashed",
                "error",
                "errors",
                "exception",
                "exceptions",
                "lines",
                "output",
                "outputs",
                "print",
                "printed",
                "printing",
                "prints",
                "said",
                "saying",
                "spat",
                "spit",
                "stderr",
                "stdout",
                "traceback",
                "warnings",
                "written",
                "wrote",
            ],
        ],
        "process output stdout print",
    ),
    (
        &[
            &[
                "background",
                "build",
                "compile",
                "daemon",
                "job",
                "logger",
                "process",
                "script",
                "task",
                "tests",
                "worker",
            ],
            &["log", "logged", "logging", "logs"],
        ],
        "process output",
    ),
];

/// What the query's co-occurring cue words add to it (`CUES`).
/// A named file stands for the word "file". Each word is looked up once, in a map built once
/// from every cue word to the (cue, group) pairs it satisfies.
fn cue_words(ws: &[String], names_a_file: bool) -> String {
    static MAP: OnceLock<HashMap<&'static str, Vec<(usize, usize)>>> = OnceLock::new();
    let map = MAP.get_or_init(|| {
        let mut m: HashMap<&'static str, Vec<(usize, usize)>> = HashMap::new();
        for (c, (groups, _)) in CUES.iter().enumerate() {
            for (g, group) in groups.iter().enumerate() {
                for w in *group {
                    m.entry(*w).or_default().push((c, g));
                }
            }
        }
        m
    });
    // Which groups of each cue the query satisfies, as bits.
    let mut met = vec![0u32; CUES.len()];
    let file = [String::from("file")];
    let file: &[String] = if names_a_file { &file } else { &[] };
    for w in ws.iter().chain(file) {
        for &(c, g) in map.get(w.as_str()).map(Vec::as_slice).unwrap_or(&[]) {
            met[c] |= 1 << g;
        }
    }
    let mut out = String::new();
    for ((groups, more), met) in CUES.iter().zip(met) {
        if met == (1u32 << groups.len()) - 1 {
            out.push(' ');
            out.push_str(more);
        }
    }
    out
}

/// Whether the query asks about the user's own things or past words ("what's my favourite
/// colour", "what was my neighbour's name again", "did I ever mention…"): what covo was told.
/// "My" must be followed by a word no tool document knows ("what's my ip address" is about the
/// network).
fn asks_about_the_user(query: &str, known: &HashSet<String>) -> bool {
    let ws: Vec<String> = words(query).collect();
    let told = ["mention", "mentioned", "tell", "told", "say", "said"];
    let about_mine = is_question(query)
        && !ws.iter().any(|w| FILE_WORDS.contains(&w.as_str()))
        && ws
            .windows(2)
            .take(4)
            .any(|p| p[0] == "my" && !known.contains(&p[1]));
    let did_i_tell = ws.windows(2).any(|p| p[0] == "did" && p[1] == "i")
        && ws.iter().any(|w| told.contains(&w.as_str()));
    about_mine || did_i_tell || (is_question(query) && ws.last().is_some_and(|w| w == "again"))
}

/// Whether the query runs quoted text: `run "make test"`, `execute 'ls -la'`.
fn runs_a_quoted_command(query: &str) -> bool {
    let ws: Vec<&str> = query.split_whitespace().collect();
    ws.windows(2).any(|p| {
        matches!(p[0], "run" | "execute" | "exec") && p[1].starts_with(['"', '\'', '`', '\u{201c}'])
    })
}

/// Whether `text` holds `phrase` as whole words.
fn contains_phrase(text: &str, phrase: &str) -> bool {
    text.match_indices(phrase).any(|(i, _)| {
        let before = text[..i].chars().next_back();
        let after = text[i + phrase.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

/// Query words that mean the same as words the tool documents use. Applied to queries only, so
/// the model-facing descriptions stay short.
const QUERY_SYNONYMS: &[(&str, &str)] = &[
    ("warm", "temperature"),
    ("hot", "temperature"),
    ("cold", "temperature"),
    ("temp", "temperature"),
    ("warmer", "temperature"),
    ("hotter", "temperature"),
    ("colder", "temperature"),
    ("cooler", "temperature"),
    ("degrees", "temperature"),
    ("damp", "humidity"),
    ("humid", "humidity"),
    ("bright", "light lux"),
    ("dark", "light lux"),
    ("lux", "light"),
    ("led", "gpio output"),
    ("lamp", "gpio relay"),
    ("switch", "gpio relay"),
    ("pin", "gpio"),
    ("pins", "gpio"),
    ("uart", "serial"),
    ("tty", "serial"),
    ("modem", "serial"),
    ("oled", "display"),
    ("lcd", "display"),
    ("screen", "display"),
    ("pico", "microcontroller mcu"),
    ("arduino", "microcontroller mcu"),
    ("esp32", "microcontroller mcu"),
    ("firmware", "microcontroller mcu"),
    ("adc", "analog"),
    ("analogue", "analog"),
    ("dimmer", "pwm"),
    ("servo", "pwm"),
    ("motor", "pwm"),
    ("photo", "camera snapshot image"),
    ("picture", "image camera"),
    ("chart", "plot"),
    ("graph", "plot chart"),
    ("remind", "schedule"),
    ("reminder", "schedule"),
    ("cron", "schedule"),
    ("alert", "notify watch"),
    ("remember", "memory store"),
    ("forget", "memory delete"),
    ("command", "shell"),
    ("terminal", "shell"),
    ("directory", "folder"),
    ("grep", "search regex"),
    ("http", "web url"),
    ("online", "internet"),
    ("internet", "web"),
    ("google", "web search"),
    ("talked", "conversation"),
    ("chat", "conversation"),
    ("discussed", "conversation"),
    ("url", "web fetch"),
    ("website", "web"),
    ("speak", "voice speech"),
    ("say", "voice speech"),
    ("restart", "reboot"),
    ("ha", "home assistant"),
    ("msg", "message"),
    ("flip", "toggle"),
    ("gateways", "swarm"),
    ("pic", "photo picture"),
    ("pics", "photo picture"),
    ("repo", "repository"),
    ("cfg", "config"),
    ("addr", "address"),
    ("big", "size"),
    ("large", "size"),
    ("huge", "size"),
    ("sd", "disk storage"),
    ("sdcard", "disk storage"),
    ("ssd", "disk storage"),
    ("settings", "config"),
    ("spreadsheet", "csv export"),
    ("excel", "csv export"),
    ("checklist", "todo"),
    ("chores", "todo"),
    ("errands", "todo"),
    ("note", "memory"),
    ("lowest", "min"),
    ("highest", "max"),
    ("coldest", "min temperature"),
    ("hottest", "max temperature"),
    ("peak", "max"),
    ("forecast", "web search"),
    ("permissions", "stat metadata"),
    ("perms", "stat metadata"),
    ("chmod", "stat metadata permissions"),
    ("ctrl", "keys"),
    ("esc", "keys"),
    ("keystroke", "keys"),
    ("keypress", "keys"),
    ("microcontroller", "mcu"),
    ("microcontrollers", "mcu"),
    ("mcus", "mcu"),
    ("arduinos", "arduino microcontroller mcu"),
    ("picos", "pico microcontroller mcu"),
    ("kilobytes", "size"),
    ("megabytes", "size"),
    ("gigabytes", "size"),
    ("shift", "move"),
    ("ticked", "todo done"),
    ("st", "status"),
    ("sub", "subscribe"),
    ("pub", "publish"),
    ("bg", "background"),
    ("net", "network"),
    ("mention", "contain"),
    ("mentions", "contain"),
    ("mentioning", "contain"),
];

/// What `QUERY_SYNONYMS` adds for `w`, looked up in a map built once.
fn synonym(w: &str) -> Option<&'static str> {
    static MAP: OnceLock<HashMap<&'static str, &'static str>> = OnceLock::new();
    MAP.get_or_init(|| {
        let mut m = HashMap::new();
        for (k, more) in QUERY_SYNONYMS {
            m.entry(*k).or_insert(*more);
        }
        m
    })
    .get(w)
    .copied()
}

/// One search result.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    /// The tool.
    pub tool: &'static ToolSpec,
    /// Its BM25 score (higher is better).
    pub score: f32,
}

/// Splits text into lowercase alphanumeric words ("to-do" is one word, "todo").
fn words(text: &str) -> impl Iterator<Item = String> {
    let mut lower = text.to_lowercase();
    // A byte scan first: a substring search per call showed in profiles.
    if lower.as_bytes().windows(5).any(|w| w == b"to-do") {
        lower = lower.replace("to-do", "todo");
    }
    lower
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect::<Vec<_>>()
        .into_iter()
}

fn is_stop_word(w: &str) -> bool {
    STOP_WORDS.binary_search(&w).is_ok()
}

/// The tokenizer for documents and queries: lowercase words, less stop words, Snowball-stemmed.
struct Analyzer {
    stemmer: Stemmer,
}

impl Tokenizer for Analyzer {
    fn tokenize(&self, text: &str) -> Vec<String> {
        words(text)
            .filter(|w| !is_stop_word(w))
            .map(|w| self.stemmer.stem(&w).into_owned())
            .collect()
    }
}

/// Corrects a long query word with one typo (a letter missing, a letter too many, two letters
/// swapped) to a word of the documents, as a symmetric-delete lookup (SymSpell at distance 1),
/// so a query costs a few hash probes per unknown word. Substitutions are not corrected, nor
/// edits to the first letter or the last two: against a small vocabulary those mostly turn one
/// real word into another ("printer" to "pointer", "plants" to "plans").
struct Speller {
    known: HashSet<String>,
    /// Each known word with one inner letter deleted, mapped to the word.
    deletes: HashMap<String, String>,
}

/// Words shorter than this are left alone: short words are too close to each other.
const MIN_CORRECTED_LEN: usize = 7;

/// Words longer than this are left alone too: no document word is that long, and each probe
/// copies the word once per letter (a 64 KiB "word" from a hostile call would take minutes).
const MAX_CORRECTED_LEN: usize = 40;

/// `w` (ASCII) with one letter deleted at each position that may hold a typo.
fn inner_deletes(w: &str) -> impl Iterator<Item = String> + '_ {
    (1..w.len().saturating_sub(2)).map(move |i| format!("{}{}", &w[..i], &w[i + 1..]))
}

/// `w` (ASCII) with two adjacent letters swapped at each position that may hold a typo.
fn inner_swaps(w: &str) -> impl Iterator<Item = String> + '_ {
    (1..w.len().saturating_sub(3)).map(move |i| {
        let b = w.as_bytes();
        format!(
            "{}{}{}{}",
            &w[..i],
            b[i + 1] as char,
            b[i] as char,
            &w[i + 2..]
        )
    })
}

impl Speller {
    fn build<'a>(texts: impl Iterator<Item = &'a str>) -> Speller {
        let mut known = HashSet::new();
        let mut deletes = HashMap::new();
        for text in texts {
            for w in words(text) {
                if w.len() > MIN_CORRECTED_LEN && w.bytes().all(|c| c.is_ascii_lowercase()) {
                    for d in inner_deletes(&w) {
                        deletes.entry(d).or_insert_with(|| w.clone());
                    }
                }
                known.insert(w);
            }
        }
        Speller { known, deletes }
    }

    /// The known word `w` is most likely a typo of, if it is unknown and one such edit away.
    fn correct(&self, w: &str) -> Option<&str> {
        if w.len() < MIN_CORRECTED_LEN
            || w.len() > MAX_CORRECTED_LEN
            || self.known.contains(w)
            || !w.bytes().all(|c| c.is_ascii_lowercase())
        {
            return None;
        }
        // A letter missing.
        if let Some(k) = self.deletes.get(w) {
            return Some(k);
        }
        // A letter too many, or two swapped.
        inner_deletes(w)
            .chain(inner_swaps(w))
            .find_map(|d| self.known.get(&d))
            .map(String::as_str)
    }
}

/// A BM25 index over a fixed set of text documents, with the query expansion `tool_search`
/// uses: the engine behind `tool_search`, and behind `docs_search` over documentation pages.
pub struct TextIndex {
    embedder: Embedder<u32, Analyzer>,
    /// For each token, its IDF and the documents holding it with its BM25 weight there: the
    /// crate's `Scorer` scores the same sum, but finds each query token in a document by a
    /// linear scan, which an expanded query over long tool documents made the bulk of a search.
    postings: HashMap<u32, (f32, Vec<(usize, f32)>)>,
    documents: usize,
    speller: Speller,
    /// Every word of the documents, as written (not stemmed).
    vocabulary: HashSet<String>,
}

impl TextIndex {
    /// Indexes `docs`; results name them by position.
    pub fn build(docs: &[String]) -> TextIndex {
        let corpus: Vec<&str> = docs.iter().map(String::as_str).collect();
        let analyzer = Analyzer {
            stemmer: Stemmer::create(Algorithm::English),
        };
        let embedder = EmbedderBuilder::with_tokenizer_and_fit_to_corpus(analyzer, &corpus)
            .b(0.5)
            .build();
        let mut postings: HashMap<u32, (f32, Vec<(usize, f32)>)> = HashMap::new();
        for (i, d) in docs.iter().enumerate() {
            let mut seen = HashSet::new();
            for t in embedder.embed(d).0 {
                if seen.insert(t.index) {
                    postings.entry(t.index).or_default().1.push((i, t.value));
                }
            }
        }
        let n = docs.len() as f32;
        for (idf, holders) in postings.values_mut() {
            // BM25's IDF, as the `bm25` crate computes it.
            let df = holders.len() as f32;
            *idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
        }
        let speller = Speller::build(
            corpus
                .iter()
                .copied()
                .chain(QUERY_SYNONYMS.iter().map(|(k, _)| *k)),
        );
        let vocabulary = corpus.iter().flat_map(|d| words(d)).collect();
        TextIndex {
            embedder,
            postings,
            documents: docs.len(),
            speller,
            vocabulary,
        }
    }

    /// Every document matching `query` as (position, BM25 score), in document order.
    fn scores(&self, query: &str) -> Vec<(usize, f32)> {
        let q = self.expand_query(query);
        let mut score = vec![0f32; self.documents];
        let mut matched = vec![false; self.documents];
        // Each occurrence of a query token counts, as in the crate's scorer.
        for t in self.embedder.embed(&q).0 {
            if let Some((idf, holders)) = self.postings.get(&t.index) {
                for &(d, value) in holders {
                    score[d] += idf * value;
                    matched[d] = true;
                }
            }
        }
        (0..self.documents)
            .filter(|&d| matched[d])
            .map(|d| (d, score[d]))
            .collect()
    }

    /// The best `limit` documents for `query` as (position, BM25 score), best first; ties keep
    /// document order, so the result is deterministic.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f32)> {
        best(self.scores(query), limit)
    }

    /// The query with typos corrected, file names, topics, percentages and shell snippets
    /// marked, and synonyms added.
    fn expand_query(&self, query: &str) -> String {
        let mut query = query.to_lowercase().replace("to-do", "todo");
        if query.as_bytes().windows(5).any(|w| w == b"to do") {
            for (from, to) in [
                ("the to do", "the todo"),
                ("my to do", "my todo"),
                ("your to do", "your todo"),
                ("a to do", "a todo"),
            ] {
                query = query.replace(from, to);
            }
        }
        let runs_quoted = runs_a_quoted_command(&query);
        let query = without_payload(&query);
        let mut q = String::with_capacity(query.len() * 2);
        let mut extra = String::new();
        let mut names_a_file = false;
        if names_a_time(&query) {
            // A time asks for a schedule; to create one unless the query removes or lists.
            extra.push_str(" schedule schedule");
            let other_action = words(&query)
                .any(|w| verb_class(&w).is_some_and(|names| !names.contains(&"create")));
            if !other_action && !is_question(&query) {
                extra.push_str(" create");
            }
        }
        if names_a_threshold(&query) {
            extra.push_str(" watch threshold");
        }
        if addresses_the_user(&query) {
            extra.push_str(" send message user");
        }
        if asks_about_the_user(&query, &self.vocabulary) {
            extra.push_str(" memory recall");
        }
        if runs_quoted {
            extra.push_str(" shell command");
        }
        if asks_the_user(&query) {
            extra.push_str(" ask clarification question");
        }
        let present: HashSet<String> = words(&query).collect();
        for (phrases, more) in PHRASES {
            if phrases
                .iter()
                .any(|p| starts_with_a_word_of(p, &present) && contains_phrase(&query, p))
            {
                extra.push(' ');
                extra.push_str(more);
            }
        }
        for raw in query.split_whitespace() {
            if matches!(
                raw.trim_matches(|c: char| !c.is_alphanumeric()),
                "tool" | "tools"
            ) {
                // Asking about tools themselves ("is there a tool for…") is a search for one.
                extra.push_str(" tool search");
            }
            if raw.starts_with('`') {
                extra.push_str(" shell command");
            }
            if raw.ends_with('%') {
                extra.push_str(" percent");
            }
            let bare = raw.trim_matches(|c: char| !c.is_alphanumeric() && !"/~#+".contains(c));
            if looks_like_url(bare) {
                // A web address is an argument; that it is one tells the web tools apart.
                q.push_str(" web url ");
                continue;
            }
            if looks_like_file(bare) {
                // The name is an argument; that it names a file is what tells the tool apart.
                q.push_str(" file ");
                names_a_file = true;
                continue;
            }
            if looks_like_path(bare) {
                q.push_str(" file folder ");
                names_a_file = true;
                continue;
            }
            if looks_like_topic(bare) {
                extra.push_str(" topic mqtt");
            } else if raw.len() > 1 && raw.ends_with('/') {
                extra.push_str(" folder");
            }
            q.push_str(raw);
            q.push(' ');
        }
        let mut q = q.replace(['_', '-', '/'], " ");
        let query_words: Vec<String> = words(&query).collect();
        q.push_str(&cue_words(&query_words, names_a_file));
        q.push_str(&extra);
        let ws: Vec<String> = words(&q).collect();
        for w in &ws {
            let w = match self.speller.correct(w) {
                Some(k) => {
                    q.push(' ');
                    q.push_str(k);
                    k
                }
                None => w.as_str(),
            };
            if let Some(more) = synonym(w) {
                q.push(' ');
                q.push_str(more);
            }
        }
        q
    }
}

/// The query less the content it carries: quoted spans, and what follows a colon after a
/// short instruction ("note: the code is 4411").
fn without_payload(query: &str) -> String {
    let q = without_content_after_markers(&without_quoted(query));
    match q.split_once(": ") {
        Some((head, tail))
            if head.split_whitespace().count() <= 6 && words(head).any(|w| !is_stop_word(&w)) =>
        {
            // "my shopping list: add batteries": the verb that opens the content is the request.
            let verb = words(tail).next().filter(|w| verb_class(w).is_some());
            if let Some(verb) = verb {
                format!("{head} {verb}")
            } else if head.split_whitespace().count() <= 2 && !words(head).any(|w| w == "new") {
                // "goal: ship v2", "todo: buy milk": a label, then what to record under it.
                format!("{head} new")
            } else {
                head.to_string()
            }
        }
        _ => q,
    }
}

/// Words after which the next word is content to look for, not a word about the tool: "files
/// that mention TODO", "the string panic", "lines containing error".
const CONTENT_MARKERS: &[&str] = &[
    "contain",
    "containing",
    "contains",
    "mention",
    "mentioning",
    "mentions",
    "phrase",
    "string",
    "word",
];

/// The query less the word that follows a content marker (`CONTENT_MARKERS`).
fn without_content_after_markers(query: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    let mut skip = false;
    for raw in query.split_whitespace() {
        let w = raw
            .trim_matches(|c: char| !c.is_alphanumeric())
            .to_lowercase();
        if skip && !w.is_empty() && !is_stop_word(&w) {
            skip = false;
            continue;
        }
        if CONTENT_MARKERS.contains(&w.as_str()) {
            skip = true;
        }
        out.push(raw);
    }
    out.join(" ")
}

/// Whether the query sets a condition on a value: "when it goes under 11.5", "if humidity
/// drops below 30%".
fn names_a_threshold(query: &str) -> bool {
    const CONDITIONS: &[&str] = &["if", "when", "whenever", "once"];
    const COMPARISONS: &[&str] = &[
        "above", "below", "over", "under", "exceeds", "exceed", "higher", "lower", "more", "less",
        "drops", "falls", "rises", "hits", "passes", "reaches", "crosses", "tops",
    ];
    let ws: Vec<String> = query
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '.' && c != '-'))
        .map(str::to_lowercase)
        .collect();
    let number = |w: &str| {
        let w = w.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == '%');
        !w.is_empty() && w.trim_start_matches('-').parse::<f64>().is_ok()
    };
    let cond = ws.iter().position(|w| CONDITIONS.contains(&w.as_str()));
    cond.is_some_and(|c| {
        ws[c..].iter().enumerate().any(|(i, w)| {
            COMPARISONS.contains(&w.as_str()) && ws[c + i + 1..].iter().take(3).any(|n| number(n))
        })
    })
}

/// An MQTT topic or filter: `home/lamp`, `sensors/+/temp`, `home/#`.
fn looks_like_topic(w: &str) -> bool {
    let parts: Vec<&str> = w.split('/').collect();
    parts.len() >= 2
        && !w.starts_with(['/', '~', '.'])
        && parts
            .iter()
            .all(|p| !p.is_empty() && p.chars().all(|c| c.is_alphanumeric() || "_-+#".contains(c)))
        && parts.iter().filter(|p| !is_stop_word(p)).count() >= 2
}

/// An absolute or home-relative path that is not a device: `/etc/hosts`, `~/notes`.
fn looks_like_path(w: &str) -> bool {
    (w.starts_with('/') || w.starts_with("~/") || w.starts_with("./"))
        && !w.starts_with("/dev/")
        && w.len() > 2
}

/// The query less its quoted spans ("…", '…'), which are content to act on ("add 'buy milk' to
/// the list"), not words about the tool; the query itself when nothing else would be left.
fn without_quoted(query: &str) -> String {
    let mut out = String::with_capacity(query.len());
    let mut chars = query.char_indices().peekable();
    let mut prev = ' ';
    while let Some((i, c)) = chars.next() {
        let closing = match c {
            '"' => Some('"'),
            '\u{201c}' => Some('\u{201d}'),
            '\'' if !prev.is_alphanumeric() => Some('\''),
            _ => None,
        };
        let end = closing.and_then(|close| {
            query[i + c.len_utf8()..]
                .char_indices()
                .find(|&(j, d)| {
                    d == close
                        && (close != '\''
                            || !query[i + c.len_utf8() + j + 1..]
                                .starts_with(|n: char| n.is_alphanumeric()))
                })
                .map(|(j, d)| i + c.len_utf8() + j + d.len_utf8())
        });
        match end {
            Some(end) => {
                out.push(' ');
                while chars.peek().is_some_and(|&(k, _)| k < end) {
                    chars.next();
                }
                prev = ' ';
            }
            None => {
                out.push(c);
                prev = c;
            }
        }
    }
    if words(&out).any(|w| !is_stop_word(&w)) {
        out
    } else {
        query.to_string()
    }
}

/// Whether the query names a clock time or a delay: "6am", "7:30", "at 7", "in 20 minutes",
/// "every hour".
fn names_a_time(query: &str) -> bool {
    let ws: Vec<String> = words(&query.replace(':', "h")).collect();
    let number = |w: &str| !w.is_empty() && w.chars().all(|c| c.is_ascii_digit());
    // "at 7", "at 0730"; not "at 192.168.1.1".
    let hour = |w: &str| {
        number(w) && (w.parse::<u32>().is_ok_and(|h| h <= 24) || (w.len() == 4 && w <= "2400"))
    };
    let clock = |w: &str| {
        let digits = w.trim_end_matches(|c: char| c.is_ascii_alphabetic());
        let unit = &w[digits.len()..];
        let am_pm = digits.starts_with(|c: char| c.is_ascii_digit())
            && digits.chars().all(|c| c.is_ascii_digit() || c == 'h')
            && matches!(unit, "am" | "pm");
        // "7:30" arrives as "7h30".
        let hh_mm = w.len() >= 4 && w.contains('h') && w.split('h').all(number);
        am_pm || hh_mm
    };
    const UNITS: &[&str] = &[
        "min", "mins", "minute", "minutes", "hour", "hours", "hr", "hrs", "day", "days", "week",
        "weeks", "sec", "secs", "seconds",
    ];
    // "at six", "at seven".
    const HOURS: &[&str] = &[
        "eight", "eleven", "five", "four", "nine", "one", "seven", "six", "ten", "three", "twelve",
        "two",
    ];
    // "in two hours", "in a few minutes", "in half an hour".
    const NUMBER_WORDS: &[&str] = &[
        "a", "an", "couple", "eight", "few", "five", "four", "half", "nine", "one", "six", "ten",
        "three", "twenty", "two",
    ];
    const PERIODS: &[&str] = &[
        "minute", "hour", "day", "week", "month", "morning", "evening", "night", "weekday",
        "weekend",
    ];
    // Words that name when on their own: a day, or a repetition (in a question they more often
    // ask about the past: "was it colder on monday").
    let question = is_question(query);
    const WHEN: &[&str] = &[
        "daily",
        "fortnightly",
        "friday",
        "fridays",
        "hourly",
        "monday",
        "mondays",
        "monthly",
        "nightly",
        "saturday",
        "saturdays",
        "sunday",
        "sundays",
        "thursday",
        "thursdays",
        "tomorrow",
        "tonight",
        "tuesday",
        "tuesdays",
        "wednesday",
        "wednesdays",
        "weekdays",
        "weekly",
    ];
    ws.iter().enumerate().any(|(i, w)| {
        let next = ws.get(i + 1).map(String::as_str).unwrap_or("");
        let after = ws.get(i + 2).map(String::as_str).unwrap_or("");
        // "by friday", "before 5pm": a deadline, not a time to act.
        // "since monday", "from tuesday", "last friday": a time in the past, to look at.
        let deadline = i > 0
            && matches!(
                ws[i - 1].as_str(),
                "by" | "before" | "until" | "since" | "from" | "last"
            );
        (clock(w) && !deadline)
            || (WHEN.contains(&w.as_str()) && !question && !deadline)
            || (w == "at"
                && (hour(next)
                    || clock(next)
                    || HOURS.contains(&next)
                    || matches!(next, "midnight" | "noon")))
            // "half past six", "ten o'clock".
            || (w == "past"
                && i > 0
                && matches!(ws[i - 1].as_str(), "half" | "quarter" | "ten" | "twenty" | "five"))
            || (w == "clock" && i > 0 && ws[i - 1] == "o")
            || (w == "next" && (PERIODS.contains(&next) || WHEN.contains(&next)) && !question)
            || (w == "in"
                && (number(next) || NUMBER_WORDS.contains(&next))
                && (UNITS.contains(&after)
                    || ws.get(i + 3).is_some_and(|u| UNITS.contains(&u.as_str()))))
            || ((w == "every" || w == "each") && (PERIODS.contains(&next) || number(next)))
    })
}

/// A web address: `https://…`, `www.…`, or a host with a common top-level domain
/// (`example.org/docs`).
fn looks_like_url(w: &str) -> bool {
    const TLDS: &[&str] = &[
        "app", "co", "com", "de", "dev", "edu", "eu", "fr", "gov", "info", "io", "net", "nl",
        "org", "uk",
    ];
    if !w.contains(['.', ':']) {
        return false;
    }
    let lower = w.to_ascii_lowercase();
    if lower.contains("://") || lower.starts_with("www.") {
        return true;
    }
    let host = lower.split('/').next().unwrap_or("");
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() >= 2
        && labels
            .iter()
            .all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'))
        && TLDS.contains(labels.last().unwrap_or(&""))
}

/// A name with a short alphabetic extension, such as `main.rs` or `config.yaml`.
fn looks_like_file(w: &str) -> bool {
    match w.rsplit_once('.') {
        Some((stem, ext)) => {
            !stem.is_empty()
                && (1..=4).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        }
        None => false,
    }
}

/// The best `limit` of `scored` (in document order), best first; ties keep document order.
fn best(mut scored: Vec<(usize, f32)>, limit: usize) -> Vec<(usize, f32)> {
    scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    scored.truncate(limit);
    scored
}

/// A BM25 index over a fixed set of tools.
pub struct SearchIndex {
    text: TextIndex,
    tools: Vec<&'static ToolSpec>,
}

impl SearchIndex {
    /// Indexes `tools`.
    pub fn build(tools: &[&'static ToolSpec]) -> SearchIndex {
        let docs: Vec<String> = tools.iter().map(|t| document(t)).collect();
        let text = TextIndex::build(&docs);
        SearchIndex {
            text,
            tools: tools.to_vec(),
        }
    }

    /// The query normalised (`normalise`), plus "modem command reply" when it carries an AT
    /// command (`AT`, `AT+CSQ`), whose case is lost once lowercased.
    fn with_modem_words(query: &str) -> String {
        let mut q = normalise(query);
        if query
            .split(|c: char| c.is_whitespace() || "\"'`,;:()?!".contains(c))
            .any(|w| w == "AT" || w.starts_with("AT+"))
        {
            q.push_str(" modem command reply");
        }
        q
    }

    /// A query that names a tool exactly and asks how to use it ("parameters of serial_request")
    /// is about the discovery tools, not the named one: the name becomes the word "tool".
    fn about_a_named_tool(&self, query: &str) -> Option<String> {
        let named = query
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .find(|w| w.contains('_') && self.tools.iter().any(|t| t.name == *w))?;
        let meta = words(query).any(|w| USAGE_WORDS.contains(&w.as_str()));
        if !meta || named.starts_with("tool_") {
            return None;
        }
        let asks_how = is_question(query) || words(query).any(|w| w == "usage" || w == "schema");
        Some(query.replace(named, "tool") + if asks_how { " describe" } else { "" })
    }

    /// The best `limit` tools for `query`, best first; ties keep catalog order, so the result is
    /// deterministic. A question favours tools that only read.
    pub fn search(&self, query: &str, limit: usize) -> Vec<Hit> {
        let names_a_file = query
            .split_whitespace()
            .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && !"/~".contains(c)))
            .any(|w| !looks_like_url(w) && (looks_like_file(w) || looks_like_path(w)));
        let query = &Self::with_modem_words(query);
        let about_a_tool = self.about_a_named_tool(query);
        let query = about_a_tool.as_deref().unwrap_or(query);
        let mut scored = self.text.scores(query);
        if is_question(query) {
            for (i, s) in &mut scored {
                if self.tools[*i].effect == Effect::Read {
                    *s *= QUESTION_READ_BOOST;
                }
            }
        }
        let actions: Vec<&[&str]> = words(query).filter_map(|w| verb_class(&w)).collect();
        // The verb that opens a request is what it asks for.
        let opening: Option<&[&str]> = words(query).next().and_then(|w| verb_class(&w));
        // A time in a request that neither removes nor lists asks to do something later.
        let later = names_a_time(query)
            && !is_question(query)
            && !actions.iter().any(|names| !names.contains(&"create"));
        // A plural of a word in tool names ("skills", "goals", "processes") asks for the list.
        let plural_of: Vec<String> = words(query)
            .filter(|w| w.len() > 3 && w.ends_with('s') && !w.ends_with("ss"))
            .map(|w| w[..w.len() - 1].trim_end_matches("se").to_string())
            .collect();
        let qws: Vec<String> = words(query).collect();
        let unqualified: Vec<&str> = QUALIFIED
            .iter()
            .filter(|(_, qs)| !qws.iter().any(|w| qs.contains(&w.as_str())))
            .map(|(family, _)| *family)
            .collect();
        for (i, s) in &mut scored {
            let name = self.tools[*i].name;
            if unqualified.iter().any(|f| name.starts_with(f)) {
                *s *= UNQUALIFIED_PENALTY;
            }
            if names_a_file && FILE_TOOLSETS.contains(&self.tools[*i].toolset) {
                *s *= FILE_BOOST;
            }
            if name.ends_with("_list") && plural_of.iter().any(|p| name.split('_').any(|t| t == p))
            {
                *s *= PLURAL_LIST_BOOST;
            }
            if actions
                .iter()
                .any(|names| name.split('_').any(|t| names.contains(&t)))
            {
                *s *= VERB_BOOST;
            }
            if opening.is_some_and(|names| name.split('_').any(|t| names.contains(&t))) {
                *s *= OPENING_VERB_BOOST;
            }
            if later && name == "schedule_create" {
                *s *= LATER_BOOST;
            }
        }
        best(scored, limit)
            .into_iter()
            .map(|(i, score)| Hit {
                tool: self.tools[i],
                score,
            })
            .collect()
    }
}

/// The text indexed for one tool.
fn document(t: &ToolSpec) -> String {
    let s = t;
    let name = s.name.replace('_', " ");
    let mut doc = String::new();
    for _ in 0..NAME_WEIGHT {
        doc.push_str(&name);
        doc.push(' ');
    }
    for _ in 0..KEYWORD_WEIGHT {
        doc.push_str(s.keywords);
        doc.push(' ');
    }
    doc.push_str(s.description);
    doc.push(' ');
    doc.push_str(&s.toolset.replace('_', " "));
    if let Ok(schema) = serde_json::from_str::<Value>(s.params) {
        param_docs(&schema, &mut doc);
    }
    doc
}

fn param_docs(schema: &Value, out: &mut String) {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            out.push(' ');
            out.push_str(&k.replace('_', " "));
            if let Some(d) = v.get("description").and_then(Value::as_str) {
                out.push(' ');
                out.push_str(d);
            }
            param_docs(v, out);
        }
    }
    if let Some(items) = schema.get("items") {
        param_docs(items, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn full() -> SearchIndex {
        let catalog: Vec<_> = crate::catalog::all().collect();
        let owned = crate::profile::resolve(&catalog, "full", &BTreeMap::new()).unwrap();
        SearchIndex::build(&owned.tools)
    }

    fn first(index: &SearchIndex, q: &str) -> &'static str {
        index.search(q, 1)[0].tool.name
    }

    #[test]
    fn the_stop_list_is_sorted_for_binary_search() {
        assert!(STOP_WORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stop_word("the") && !is_stop_word("off") && !is_stop_word("below"));
    }

    #[test]
    fn long_words_one_typo_away_are_corrected_and_real_words_are_left_alone() {
        let s = Speller::build(["remember background printed pointer plans"].into_iter());
        assert_eq!(s.correct("remeber"), Some("remember")); // a letter missing
        assert_eq!(s.correct("backgrround"), Some("background")); // one too many
        assert_eq!(s.correct("bakcground"), Some("background")); // two swapped
        assert_eq!(s.correct("printer"), None); // substitution: another word, not a typo
        assert_eq!(s.correct("plants"), None); // too short to guess
        assert_eq!(s.correct("remember"), None); // known
        assert_eq!(s.correct("xemember"), None); // never the first letter

        // A hostile 100,000-letter word is not probed (each probe copies it once per letter).
        assert_eq!(s.correct(&"x".repeat(100_000)), None);
        assert_eq!(s.correct(&format!("remeber{}", "x".repeat(40))), None);
    }

    #[test]
    fn quoted_content_and_text_after_a_label_are_dropped() {
        assert_eq!(
            without_payload("add 'buy milk' to my list")
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["add", "to", "my", "list"]
        );
        assert_eq!(
            without_payload("what's the \"x\" topic"),
            "what's the topic"
        );
        // A verb opening the content is the request; a label saying "new" is not doubled.
        assert_eq!(
            without_payload("my shopping list: add milk"),
            "my shopping list add"
        );
        assert_eq!(without_payload("new card: test the pump"), "new card");
        // The word after a content marker is what to look for.
        assert_eq!(
            without_payload("which files mention TODO"),
            "which files mention"
        );
        assert_eq!(
            without_payload("search for the string panic in src"),
            "search for the string in src"
        );
        assert_eq!(
            without_payload("save a note for later: pump A"),
            "save a note for later"
        );
        assert_eq!(without_payload("goal: ship v2"), "goal new");
        // Nothing but the quote: the query stays as it was.
        assert_eq!(without_payload("'hello'"), "'hello'");
    }

    #[test]
    fn times_thresholds_files_and_topics_are_recognised() {
        for q in [
            "set an alarm for 6am",
            "at 7 water",
            "wake me at 6:30",
            "in 20 minutes",
            "remind me in an hour",
            "every hour check",
        ] {
            assert!(names_a_time(q), "{q}");
        }
        for q in [
            "what's the temperature",
            "read 6 bytes from 0x68",
            "set pin 13 high",
        ] {
            assert!(!names_a_time(q), "{q}");
        }
        assert!(names_a_threshold("tell me if the pressure falls below 990"));
        assert!(names_a_threshold(
            "warn me when the voltage goes under 11.5v"
        ));
        assert!(!names_a_threshold("when was this file modified"));
        assert!(looks_like_file("main.rs") && !looks_like_file("22.5") && !looks_like_file("x."));
        assert!(looks_like_path("/etc/hosts") && !looks_like_path("/dev/ttyUSB0"));
        assert!(looks_like_topic("home/lamp") && looks_like_topic("home/#"));
        assert!(!looks_like_topic("and/or") && !looks_like_topic("/etc/hosts"));
    }

    #[test]
    fn a_question_favours_reading_and_a_removing_verb_favours_removing() {
        let index = full();
        assert_eq!(first(&index, "is pin 4 high or low"), "gpio_read");
        assert_eq!(
            first(&index, "remove the temperature alert"),
            "watch_delete"
        );
        assert_eq!(first(&index, "set an alarm for 6am"), "schedule_create");
        assert_eq!(
            first(&index, "publish 22.5 to sensors/temp"),
            "mqtt_publish"
        );
    }

    #[test]
    fn phrases_telling_the_user_and_named_tools_are_recognised() {
        assert!(addresses_the_user("give the user an update"));
        assert!(addresses_the_user("report back to me when finished"));
        assert!(!addresses_the_user(
            "notify me when a reading crosses a threshold"
        ));
        assert!(!addresses_the_user("send bytes over spi"));
        assert!(contains_phrase("ok, did we agree", "did we"));
        assert!(!contains_phrase("candid wealth", "did we"));
        let index = full();
        assert_eq!(
            index
                .about_a_named_tool("parameters of serial_request")
                .as_deref(),
            Some("parameters of tool")
        );
        // A bare name is a search for that tool; tool_* names are left to match themselves.
        assert_eq!(index.about_a_named_tool("serial_request"), None);
        assert_eq!(index.about_a_named_tool("what does tool_call expect"), None);
        assert_eq!(
            first(&index, "parameters of serial_request"),
            "tool_describe"
        );
        assert_eq!(first(&index, "what skills are there"), "skill_list");
        assert!(index
            .text
            .expand_query("put it on the to do")
            .contains("todo"));
        assert!(index
            .text
            .expand_query("put it on the to-do list")
            .contains("todo"));
    }

    #[test]
    fn phrasal_verbs_are_rewritten_and_web_addresses_recognised() {
        assert_eq!(
            normalise("Call off the 6pm reminder"),
            "cancel the 6pm reminder"
        );
        assert_eq!(normalise("get rid of watch 4"), "remove watch 4");
        // Whole words only.
        assert_eq!(normalise("recall offsets"), "recall offsets");
        for w in [
            "https://example.com",
            "http://localhost:8080",
            "www.example.org",
            "example.org/docs",
        ] {
            assert!(looks_like_url(w), "{w}");
        }
        assert!(!looks_like_url("config.toml") && !looks_like_url("main.rs"));
        assert!(!looks_like_url("home/lamp") && !looks_like_url("22.5"));
    }

    #[test]
    fn deadlines_and_spelled_out_delays_are_told_apart_from_times_to_act() {
        assert!(names_a_time("turn the heater off in two hours"));
        assert!(names_a_time("in a few minutes check the oven"));
        assert!(names_a_time("every sunday water the ferns"));
        assert!(names_a_time("run the backup nightly"));
        assert!(!names_a_time("finish the enclosure by friday"));
        assert!(!names_a_time("be done before 5pm"));
        // An address is not an hour.
        assert!(!names_a_time("the router admin is at 192.168.1.1"));
        assert!(names_a_time("at 0730 open the blinds"));
        // In a question a day more often asks about the past.
        assert!(!names_a_time("was it colder on monday"));
        assert!(names_a_threshold("raise an alarm if the co2 passes 1200"));
    }

    #[test]
    fn telling_asking_and_asking_about_the_user_are_recognised() {
        assert!(addresses_the_user("let him know the pump is off"));
        assert!(addresses_the_user("tell me when the upload is finished"));
        assert!(addresses_the_user("text me"));
        // Asked for an answer now, not a message later.
        assert!(!addresses_the_user("tell me the temperature"));
        assert!(!addresses_the_user("give me the readings"));
        assert!(asks_the_user("not sure which pin, ask them"));
        assert!(asks_the_user("check with me which port to use"));
        assert!(!asks_the_user("ask every node for its uptime"));
        let index = full();
        let known = &index.text.vocabulary;
        assert!(asks_about_the_user("what's my favourite colour", known));
        assert!(asks_about_the_user("did i ever mention my bike", known));
        assert!(asks_about_the_user("what was her name again", known));
        // "ip" is a word the tools know: a question about the network.
        assert!(!asks_about_the_user("what's my ip address", known));
        assert!(!asks_about_the_user("power off and on again", known));
    }

    #[test]
    fn no_verb_is_in_two_classes_and_every_cue_has_few_groups() {
        // `verb_class` keeps a verb's first class: a verb in two would silently lose one.
        let mut seen = HashSet::new();
        for (verbs, _) in VERB_CLASSES {
            for v in *verbs {
                assert!(seen.insert(*v), "{v} is in two verb classes");
            }
        }
        // `cue_words` keeps each cue's met groups as bits of a u32.
        assert!(CUES
            .iter()
            .all(|(groups, _)| !groups.is_empty() && groups.len() < 32));
        assert_eq!(verb_class("cancel"), Some(VERB_CLASSES[0].1));
        assert_eq!(synonym("temp"), Some("temperature"));
        assert_eq!(synonym("nonsense"), None);
    }

    #[test]
    fn cue_words_need_every_group() {
        let ws = |q: &str| words(q).collect::<Vec<_>>();
        assert!(cue_words(&ws("how big is the log file"), false).contains("stat"));
        // A named file stands for the word "file".
        assert!(cue_words(&ws("how big is config"), true).contains("stat"));
        assert!(!cue_words(&ws("how big is config"), false).contains("stat"));
        assert!(cue_words(&ws("what did the build print"), false).contains("process output"));
        assert!(cue_words(&ws("how warm is the pi"), false).contains("system"));
        assert!(cue_words(&ws("search online for sensors"), false).contains("web search"));
        assert!(cue_words(&ws("latest log lines"), false).is_empty());
    }

    #[test]
    fn the_engine_sends_each_cluster_to_its_tool() {
        let index = full();
        for (q, want) in [
            ("how big is config.yaml", "fs_stat"),
            ("what did the build job print", "process_output"),
            ("let him know the pump is off now", "send_message"),
            (
                "not sure which pin they mean, ask them",
                "ask_clarification",
            ),
            ("remove \"buy tape\" from the list", "todo_write"),
            ("call off the 6pm reminder", "schedule_cancel"),
            ("turn the heater off in two hours", "schedule_create"),
            ("what's my favourite colour", "memory_recall"),
            ("download the page at example.org/docs", "web_fetch"),
            ("drive pin 4 high", "gpio_write"),
            ("drive pin 4 high on the arduino", "mcu_gpio_write"),
        ] {
            assert_eq!(first(&index, q), want, "{q}");
        }
    }

    #[test]
    fn odd_queries_never_panic() {
        let index = full();
        for q in [
            "'",
            "\"",
            "'a",
            "a'",
            "é'x'ü",
            "\u{201c}quoted\u{201d} text",
            "\u{201c}open",
            ":",
            ": x",
            "a: ",
            "~/",
            "/",
            "//",
            "6:",
            ":30",
            "at",
            "in an",
            "every",
            "each 5",
            "if below",
            "when over 3",
            "🙂 say 🙂",
            "ÄÖÜ straße",
            "a_b_c",
            "gpio_write",
            "describe gpio_write",
            "x.",
            ".x",
            "0x76/0x77",
            "%",
            "`",
            "``",
            "bakcgroundé",
            "to-do",
            "to do",
            "call off",
            "a: b: c",
            ": add",
            "mention",
            "the string",
            "://",
            "www.",
            ".com/",
            "in two",
            "by",
            "by friday",
            "tell me",
            "ask",
            "what's my",
            "again",
            "via",
        ] {
            let _ = index.search(q, 5);
        }
    }

    #[test]
    fn search_is_deterministic_and_bounded_by_the_limit() {
        let index = full();
        let a: Vec<_> = index
            .search("read the sensor", 5)
            .iter()
            .map(|h| h.tool.name)
            .collect();
        let b: Vec<_> = index
            .search("read the sensor", 5)
            .iter()
            .map(|h| h.tool.name)
            .collect();
        assert_eq!(a, b);
        assert_eq!(a.len(), 5);
        assert!(index.search("", 5).is_empty());
        assert!(index.search("qqqq zzzz", 5).is_empty());
    }
}
