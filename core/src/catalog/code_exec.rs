//! The `code_exec` toolset: its tools' specs, in catalog order.

use crate::spec::{Effect, Profiles, Runs, ToolSpec};

/// This toolset's name: what code elsewhere uses to name it.
pub const TOOLSET: &str = "code_exec";

/// `code_run`.
pub static CODE_RUN: ToolSpec = ToolSpec {
        name: "code_run",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Peer,
        effect: Effect::Write,
        description: "Run a Python or shell snippet on the peer: a time limit (all it started is killed), memory and CPU limits, no network unless asked; sandboxed (read-only system, none of the peer's files) where the peer has bubblewrap. Returns stdout, stderr, exit code and the isolation applied.",
 params: r#"{"type":"object","properties":{"language":{"enum":["python","shell"]},"code":{"type":"string"},"timeout_s":{"type":"integer","minimum":1,"maximum":300,"default":30},"network":{"type":"boolean","default":false}},"required":["language","code"],"additionalProperties":false}"#,
 keywords: "run code python script snippet sandbox execute compute calculate interpreter jupyter cloud",
};

/// `code_graph`.
pub static CODE_GRAPH: ToolSpec = ToolSpec {
        name: "code_graph",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Peer,
        effect: Effect::Read,
        description: "Symbol and call graph of the peer's source tree (Rust, Python, C), matched by name like ctags: where a symbol is defined, who calls it, what it calls, or every reference. Returns file:line matches with kind and enclosing scope.",
 params: r#"{"type":"object","properties":{"symbol":{"type":"string","minLength":1,"description":"identifier, e.g. parse_config or Parser; Foo::bar and x.bar match bar"},"query":{"enum":["definition","callers","callees","references"],"default":"definition"},"path":{"type":"string","description":"file or directory relative to the peer's code root (default: all of it)"}},"required":["symbol"],"additionalProperties":false}"#,
 keywords: "code graph symbols call graph callers callees who calls definition references navigate functions defined where function symbol",
};

/// `test_generate`.
pub static TEST_GENERATE: ToolSpec = ToolSpec {
        name: "test_generate",
        toolset: TOOLSET,
        profiles: Profiles::CODING,
        runs: Runs::Peer,
        effect: Effect::Read,
        description: "Draft unit tests for a function or file with the peer's larger model. The peer cannot read this machine's files: send the code in source. Returns the test code to review and run.",
 params: r#"{"type":"object","properties":{"source":{"type":"string","description":"the code under test (file text, at most 64 KiB)"},"path":{"type":"string","description":"its file path, e.g. src/util.py; gives the language and import path"},"symbol":{"type":"string","description":"function to test, default: whole file"},"framework":{"type":"string","description":"default from the language: cargo test, pytest, jest, go test…"}},"required":["source","path"],"additionalProperties":false}"#,
 keywords: "tests generate unit test write draft coverage testing",
};

/// The specs of this toolset, in catalog order.
pub static SPECS: &[&ToolSpec] = &[&CODE_RUN, &CODE_GRAPH, &TEST_GENERATE];
