//! `test_generate`: one call to the peer's model (no tools) that drafts unit tests for code the
//! gateway sends (`source`: the peer does not share the gateway's files). The language and the
//! default framework come from `path`'s extension; the answer's fenced code block is returned.

use covo_core::catalog;
use std::sync::Arc;
use std::time::Instant;

use serde_json::{json, Value};

use super::model::PeerModel;
use covo::llm::{ChatRequest, Message, StopReason};
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::code_exec::TEST_GENERATE.name;

/// The largest `source` accepted, in bytes.
pub const MAX_SOURCE_BYTES: usize = 64 * 1024;

const SYSTEM: &str = "You write unit tests. You are given source code and what to test. Reply \
with exactly one fenced code block holding a complete test file or test module for the requested \
framework, and nothing else: no explanation before or after it. Test observable behaviour: \
ordinary cases, edge cases and error cases. Do not repeat or change the code under test; import \
or reference it. Use only functions the source defines or the language's standard library.";

/// A language covo knows by extension: its name, default framework and code-fence tag.
struct Lang {
    name: &'static str,
    framework: &'static str,
    fence: &'static str,
}

const LANGS: &[(&[&str], Lang)] = &[
    (
        &["rs"],
        Lang {
            name: "rust",
            framework: "cargo test",
            fence: "rust",
        },
    ),
    (
        &["py"],
        Lang {
            name: "python",
            framework: "pytest",
            fence: "python",
        },
    ),
    (
        &["js", "mjs", "cjs", "jsx"],
        Lang {
            name: "javascript",
            framework: "jest",
            fence: "javascript",
        },
    ),
    (
        &["ts", "tsx", "mts"],
        Lang {
            name: "typescript",
            framework: "jest",
            fence: "typescript",
        },
    ),
    (
        &["go"],
        Lang {
            name: "go",
            framework: "go test",
            fence: "go",
        },
    ),
    (
        &["c", "h"],
        Lang {
            name: "c",
            framework: "Unity",
            fence: "c",
        },
    ),
    (
        &["cc", "cpp", "cxx", "hpp", "hh"],
        Lang {
            name: "cpp",
            framework: "GoogleTest",
            fence: "cpp",
        },
    ),
    (
        &["java"],
        Lang {
            name: "java",
            framework: "JUnit 5",
            fence: "java",
        },
    ),
    (
        &["kt"],
        Lang {
            name: "kotlin",
            framework: "JUnit 5",
            fence: "kotlin",
        },
    ),
    (
        &["rb"],
        Lang {
            name: "ruby",
            framework: "RSpec",
            fence: "ruby",
        },
    ),
    (
        &["sh", "bash"],
        Lang {
            name: "shell",
            framework: "bats",
            fence: "bash",
        },
    ),
    (
        &["cs"],
        Lang {
            name: "csharp",
            framework: "xUnit",
            fence: "csharp",
        },
    ),
    (
        &["php"],
        Lang {
            name: "php",
            framework: "PHPUnit",
            fence: "php",
        },
    ),
    (
        &["swift"],
        Lang {
            name: "swift",
            framework: "XCTest",
            fence: "swift",
        },
    ),
    (
        &["lua"],
        Lang {
            name: "lua",
            framework: "busted",
            fence: "lua",
        },
    ),
];

fn lang_of(path: &str) -> Option<&'static Lang> {
    let ext = std::path::Path::new(path)
        .extension()?
        .to_str()?
        .to_ascii_lowercase();
    LANGS
        .iter()
        .find(|(exts, _)| exts.contains(&ext.as_str()))
        .map(|(_, l)| l)
}

/// Where the tests go and how they reach the code, from the file's path.
fn placement(lang: &str, path: &str) -> String {
    let p = path.trim_start_matches("./");
    let stem = std::path::Path::new(p)
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("module");
    match lang {
        "rust" => {
            let inner = p.rsplit_once("src/").map(|(_, r)| r).unwrap_or(p);
            let inner = inner.trim_end_matches(".rs");
            let parts: Vec<&str> = inner
                .split('/')
                .filter(|s| !matches!(*s, "lib" | "main" | "mod" | ""))
                .collect();
            let module = if parts.is_empty() {
                "crate".to_string()
            } else {
                format!("crate::{}", parts.join("::"))
            };
            format!(
                "The file is the module `{module}`. Write a `#[cfg(test)] mod tests {{ use super::*; … }}` block to append to it."
            )
        }
        "python" => {
            let module = p
                .trim_start_matches("src/")
                .trim_end_matches(".py")
                .replace('/', ".");
            format!("Import the code under test from the module `{module}`; name the file `test_{stem}.py`.")
        }
        "go" => "Use the same package as the source, in a `_test.go` file.".into(),
        "javascript" | "typescript" => {
            format!("Import the code under test from `./{stem}`.")
        }
        _ => format!("The code under test is in `{p}`."),
    }
}

/// The fenced code blocks of `text`, in order: (info string, body, closed).
fn code_blocks(text: &str) -> Vec<(String, String, bool)> {
    let mut blocks = Vec::new();
    let mut open: Option<(String, String, String)> = None; // (fence, info, body)
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let indent_ok = line.len() - t.len() <= 3;
        match &mut open {
            None => {
                if indent_ok && (t.starts_with("```") || t.starts_with("~~~")) {
                    let ch = t.as_bytes()[0] as char;
                    let n = t.chars().take_while(|c| *c == ch).count();
                    let fence: String = std::iter::repeat_n(ch, n).collect();
                    let info = t[n..].trim().to_string();
                    open = Some((fence, info, String::new()));
                }
            }
            Some((fence, _, body)) => {
                let closing = t.trim_end();
                if indent_ok
                    && closing.starts_with(fence.as_str())
                    && closing.chars().all(|c| c == fence.as_bytes()[0] as char)
                {
                    if let Some((_, info, body)) = open.take() {
                        blocks.push((info, body, true));
                    }
                } else {
                    body.push_str(line);
                }
            }
        }
    }
    if let Some((_, info, body)) = open {
        blocks.push((info, body, false));
    }
    blocks
}

#[derive(Debug)]
pub(super) struct TestGen {
    model: Arc<PeerModel>,
}

impl TestGen {
    pub(super) fn new(model: Arc<PeerModel>) -> TestGen {
        TestGen { model }
    }

    pub(super) fn run(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let text = |k: &str| {
            args.get(k)
                .and_then(Value::as_str)
                .filter(|s| !s.trim().is_empty())
        };
        let source = args.get("source").and_then(Value::as_str).unwrap_or("");
        let path = text("path").unwrap_or("");
        if source.trim().is_empty() {
            return Err(ToolError::invalid(
                TOOL,
                "/source",
                "is empty: send the code to test",
            ));
        }
        if source.len() > MAX_SOURCE_BYTES {
            return Err(ToolError::invalid(
                TOOL,
                "/source",
                format!(
                    "is {} bytes; the limit is {MAX_SOURCE_BYTES} (64 KiB): send only the function to test, or a smaller file",
                    source.len()
                ),
            ));
        }
        let symbol = text("symbol");
        let lang = lang_of(path);
        let framework = match (text("framework"), lang) {
            (Some(f), _) => f.to_string(),
            (None, Some(l)) => l.framework.to_string(),
            (None, None) => {
                return Err(ToolError::invalid(
                    TOOL,
                    "/framework",
                    format!("cannot tell the language of '{path}' from its extension; name the test framework"),
                ))
            }
        };
        let (language, fence) = lang.map(|l| (l.name, l.fence)).unwrap_or(("unknown", ""));
        let target = match symbol {
            Some(s) => format!("the function `{s}`"),
            None => "the public functions".to_string(),
        };
        let user = format!(
            "Write {framework} unit tests for {target} in `{path}` ({language}). {}\n\n```{fence}\n{}{}```",
            placement(language, path),
            source,
            if source.ends_with('\n') { "" } else { "\n" },
        );
        let messages = [Message::User(user)];
        let req = ChatRequest {
            system: SYSTEM,
            messages: &messages,
            tools: &[],
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let chat = self.model.chat().clone();
        let answer = self.model.block_on(async move {
            let mut ignore = |_: &str| {};
            tokio::time::timeout(left, chat.chat(req, &mut ignore)).await
        });
        let resp = match answer {
            Err(_) => {
                return Err(ToolError::Failed {
                    tool: TOOL.into(),
                    message: format!(
                        "the peer's model did not answer within the call's {} s deadline",
                        left.as_secs()
                    ),
                    hint: Some("retry with a smaller source or a single symbol".into()),
                })
            }
            Ok(Err(e)) => {
                return Err(ToolError::failed(
                    TOOL,
                    format!("the peer's model failed: {e}"),
                ))
            }
            Ok(Ok(r)) => r,
        };
        let blocks = code_blocks(&resp.text);
        let best = blocks.iter().max_by_key(|(_, body, _)| body.len());
        let mut out = json!({
            "language": language,
            "framework": framework,
            "path": path,
            "model": self.model.name(),
            "usage": {
                "input_tokens": resp.usage.input_tokens,
                "output_tokens": resp.usage.output_tokens,
            },
        });
        if let Some(s) = symbol {
            out["symbol"] = json!(s);
        }
        match best {
            Some((_, body, closed)) => {
                out["tests"] = json!(body);
                out["fenced"] = json!(true);
                if !closed || resp.stop == StopReason::MaxTokens {
                    out["note"] =
                        json!("the model's answer was cut off: the tests are probably incomplete");
                }
            }
            None => {
                out["tests"] = json!(resp.text);
                out["fenced"] = json!(false);
                out["note"] = json!(
                    "the model answered without a fenced code block; 'tests' is its whole answer"
                );
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn code_blocks_are_found_with_their_info_and_an_unclosed_one_is_marked() {
        let b =
            code_blocks("Here:\n```python\ndef test_a():\n    assert 1\n```\nand\n~~~\nx\n~~~\n");
        assert_eq!(b.len(), 2);
        assert_eq!(b[0].0, "python");
        assert_eq!(b[0].1, "def test_a():\n    assert 1\n");
        assert!(b[0].2);
        assert_eq!(b[1].1, "x\n");
        let b = code_blocks("```rust\nfn a() {}\n");
        assert_eq!(b, vec![("rust".into(), "fn a() {}\n".into(), false)]);
        assert!(code_blocks("no code here").is_empty());
        // A longer fence is not closed by a shorter one inside it.
        let b = code_blocks("````md\n```\ninner\n```\n````\n");
        assert_eq!(b[0].1, "```\ninner\n```\n");
    }

    #[test]
    fn the_language_and_framework_come_from_the_extension() {
        assert_eq!(lang_of("src/a.rs").unwrap().framework, "cargo test");
        assert_eq!(lang_of("pkg/util.PY").unwrap().name, "python");
        assert_eq!(lang_of("x.go").unwrap().framework, "go test");
        assert!(lang_of("Makefile").is_none());
        assert!(placement("rust", "gateway/src/peer/backends/mod.rs")
            .contains("`crate::peer::backends`"));
        assert!(placement("rust", "src/lib.rs").contains("`crate`"));
        assert!(placement("python", "src/pkg/util.py").contains("`pkg.util`"));
    }
}
