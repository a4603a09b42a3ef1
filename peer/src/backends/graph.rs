//! `code_graph`: a symbol and call graph of the source tree under the peer's configured root,
//! built with tree-sitter for Rust (`.rs`), Python (`.py`) and C (`.c`, `.h`).
//!
//! Each file is parsed and matched against a tags-style query per language (below) that marks
//! definitions (with their kind) and call sites. Resolution is **by identifier name**, like
//! ctags: a method call `x.foo()` or `Foo::foo()` is a call of `foo`, every function named
//! `foo` is "the" `foo`, and calls through function pointers, trait objects or callbacks are
//! not seen. Rust calls inside macro arguments (`assert_eq!(foo(x), 1)`) are found from the
//! macro's token tree (`name (...)`).
//!
//! The walk skips hidden entries, `target`, `node_modules` and `__pycache__`, never follows
//! symlinks, and stops at the configured file and byte caps or near the deadline; the result
//! then says `truncated` and which limit was hit.

use covo_core::catalog;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Component, Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Map, Value};
use tree_sitter::{Language, Node, Parser, Query, QueryCursor, StreamingIterator};

use super::CodeGraphConfig;
use covo_core::error::ToolError;

pub(super) const TOOL: &str = catalog::code_exec::CODE_GRAPH.name;

const DEFAULT_MAX_FILES: usize = 5_000;
const DEFAULT_MAX_TOTAL_BYTES: u64 = 20 * 1024 * 1024;
const DEFAULT_MAX_FILE_BYTES: u64 = 1024 * 1024;
const DEFAULT_MAX_MATCHES: usize = 200;
/// Directories never entered (besides hidden ones): build output and vendored packages.
const SKIPPED_DIRS: [&str; 3] = ["target", "node_modules", "__pycache__"];
/// Source lines quoted in matches are cut to this many characters.
const MAX_LINE_CHARS: usize = 160;

/// Rust: `@name` is the defined or called identifier; the outer capture names the kind.
const RUST_TAGS: &str = r#"
(function_item name: (identifier) @name) @definition.function
(function_signature_item name: (identifier) @name) @definition.function
(struct_item name: (type_identifier) @name) @definition.struct
(enum_item name: (type_identifier) @name) @definition.enum
(union_item name: (type_identifier) @name) @definition.union
(trait_item name: (type_identifier) @name) @definition.trait
(type_item name: (type_identifier) @name) @definition.type
(mod_item name: (identifier) @name) @definition.module
(macro_definition name: (identifier) @name) @definition.macro
(const_item name: (identifier) @name) @definition.constant
(static_item name: (identifier) @name) @definition.static

(call_expression
  function: [
    (identifier) @name
    (scoped_identifier name: (identifier) @name)
    (field_expression field: (field_identifier) @name)
    (generic_function
      function: [
        (identifier) @name
        (scoped_identifier name: (identifier) @name)
        (field_expression field: (field_identifier) @name)
      ])
  ]) @call
(macro_invocation
  macro: [
    (identifier) @name
    (scoped_identifier name: (identifier) @name)
  ]) @call.macro
(token_tree (identifier) @name . (token_tree) @args) @call.in_macro
"#;

const PYTHON_TAGS: &str = r#"
(function_definition name: (identifier) @name) @definition.function
(class_definition name: (identifier) @name) @definition.class

(call
  function: [
    (identifier) @name
    (attribute attribute: (identifier) @name)
  ]) @call
"#;

/// C: a function's name sits under nested declarators (`char **f(void)`), so `@decl` is
/// unwrapped in code ([`c_function_name`]).
const C_TAGS: &str = r#"
(function_definition declarator: (_) @decl) @definition.function
(declaration declarator: (_) @decl) @definition.prototype
(struct_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.struct
(union_specifier name: (type_identifier) @name body: (field_declaration_list)) @definition.union
(enum_specifier name: (type_identifier) @name body: (enumerator_list)) @definition.enum
(type_definition declarator: (type_identifier) @name) @definition.typedef
(preproc_function_def name: (identifier) @name) @definition.macro
(preproc_def name: (identifier) @name) @definition.macro

(call_expression
  function: [
    (identifier) @name
    (field_expression field: (field_identifier) @name)
  ]) @call
"#;

const RUST_IDENTS: &str = "[(identifier) (type_identifier) (field_identifier)] @id";
const PYTHON_IDENTS: &str = "(identifier) @id";
const C_IDENTS: &str = "[(identifier) (type_identifier) (field_identifier)] @id";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lang {
    Rust,
    Python,
    C,
}

impl Lang {
    fn of(path: &Path) -> Option<Lang> {
        match path.extension()?.to_str()? {
            "rs" => Some(Lang::Rust),
            "py" => Some(Lang::Python),
            "c" | "h" => Some(Lang::C),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Lang::Rust => "rust",
            Lang::Python => "python",
            Lang::C => "c",
        }
    }

    /// The node kind of a function with a body, whose name is a call's `caller`.
    fn function_kind(self) -> &'static str {
        match self {
            Lang::Rust => "function_item",
            Lang::Python | Lang::C => "function_definition",
        }
    }
}

/// One language's parser table and compiled queries.
struct Grammar {
    language: Language,
    tags: Query,
    idents: Query,
}

impl std::fmt::Debug for Grammar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Grammar").finish_non_exhaustive()
    }
}

impl Grammar {
    fn new(language: Language, tags: &str, idents: &str) -> Result<Grammar, String> {
        let tags = Query::new(&language, tags).map_err(|e| format!("tags query: {e}"))?;
        let idents = Query::new(&language, idents).map_err(|e| format!("identifier query: {e}"))?;
        Ok(Grammar {
            language,
            tags,
            idents,
        })
    }
}

#[derive(Debug)]
pub(super) struct CodeGraph {
    /// Canonical: every scanned path is checked to lie under it.
    root: PathBuf,
    rust: Grammar,
    python: Grammar,
    c: Grammar,
    max_files: usize,
    max_total_bytes: u64,
    max_file_bytes: u64,
    max_matches: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ask {
    Definition,
    Callers,
    Callees,
    References,
}

impl Ask {
    fn name(self) -> &'static str {
        match self {
            Ask::Definition => "definition",
            Ask::Callers => "callers",
            Ask::Callees => "callees",
            Ask::References => "references",
        }
    }
}

/// What one call collects while walking: only what the query needs, plus the names seen (for
/// "did you mean" and for marking callees defined in the tree).
struct Scan<'a> {
    symbol: &'a str,
    ask: Ask,
    max_matches: usize,
    matches: Vec<Value>,
    match_count: usize,
    /// Distinct caller (for `callers`) or callee (for `callees`) names.
    distinct: BTreeSet<String>,
    defined: BTreeSet<String>,
    called: BTreeSet<String>,
    /// Definitions of the symbol that are functions (for a `callees` note).
    symbol_functions: usize,
    /// Definitions and calls of the symbol (for notes when a query comes back empty).
    symbol_definitions: usize,
    symbol_calls: usize,
    definitions: usize,
    calls: usize,
    files_scanned: usize,
    files_with_syntax_errors: usize,
    bytes_scanned: u64,
    languages: BTreeMap<&'static str, usize>,
    skipped_large: usize,
    /// Why the walk stopped early, if it did.
    stopped: Option<String>,
}

impl CodeGraph {
    /// `None` unless a root is configured and is a directory (logged when it is not).
    pub(super) fn new(cfg: &CodeGraphConfig) -> Option<CodeGraph> {
        let configured = cfg.root.as_ref()?;
        let root = match std::fs::canonicalize(configured) {
            Ok(root) if root.is_dir() => root,
            Ok(_) => {
                tracing::warn!(root = %configured.display(), "code_graph root is not a directory; code_graph is not served");
                return None;
            }
            Err(e) => {
                tracing::warn!(root = %configured.display(), error = %e, "code_graph root is unusable; code_graph is not served");
                return None;
            }
        };
        let grammars = (|| {
            Ok::<_, String>((
                Grammar::new(tree_sitter_rust::LANGUAGE.into(), RUST_TAGS, RUST_IDENTS)?,
                Grammar::new(
                    tree_sitter_python::LANGUAGE.into(),
                    PYTHON_TAGS,
                    PYTHON_IDENTS,
                )?,
                Grammar::new(tree_sitter_c::LANGUAGE.into(), C_TAGS, C_IDENTS)?,
            ))
        })();
        let (rust, python, c) = match grammars {
            Ok(g) => g,
            Err(e) => {
                tracing::error!(error = %e, "code_graph queries do not compile; code_graph is not served");
                return None;
            }
        };
        Some(CodeGraph {
            root,
            rust,
            python,
            c,
            max_files: cfg.max_files.unwrap_or(DEFAULT_MAX_FILES).max(1),
            max_total_bytes: cfg
                .max_total_bytes
                .unwrap_or(DEFAULT_MAX_TOTAL_BYTES)
                .max(1),
            max_file_bytes: cfg.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES).max(1),
            max_matches: cfg.max_matches.unwrap_or(DEFAULT_MAX_MATCHES).max(1),
        })
    }

    fn grammar(&self, lang: Lang) -> &Grammar {
        match lang {
            Lang::Rust => &self.rust,
            Lang::Python => &self.python,
            Lang::C => &self.c,
        }
    }

    pub(super) fn run(&self, args: &Value, deadline: Instant) -> Result<Value, ToolError> {
        let started = Instant::now();
        let raw_symbol = args
            .get("symbol")
            .and_then(Value::as_str)
            .ok_or_else(|| ToolError::invalid(TOOL, "/symbol", "expected an identifier"))?;
        let (symbol, stripped) = normalize_symbol(raw_symbol)?;
        let ask = match args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or("definition")
        {
            "definition" => Ask::Definition,
            "callers" => Ask::Callers,
            "callees" => Ask::Callees,
            "references" => Ask::References,
            other => {
                return Err(ToolError::invalid(
                    TOOL,
                    "/query",
                    format!(
                        "unknown query '{other}': use definition, callers, callees or references"
                    ),
                ))
            }
        };
        let rel = args.get("path").and_then(Value::as_str).unwrap_or("");
        let start = self.resolve(rel)?;

        // Leave a little of the budget for the answer to travel back.
        let remaining = deadline.saturating_duration_since(started);
        let soft_deadline = deadline - (remaining / 10).min(Duration::from_secs(1));

        let mut scan = Scan {
            symbol: &symbol,
            ask,
            max_matches: self.max_matches,
            matches: Vec::new(),
            match_count: 0,
            distinct: BTreeSet::new(),
            defined: BTreeSet::new(),
            called: BTreeSet::new(),
            symbol_functions: 0,
            symbol_definitions: 0,
            symbol_calls: 0,
            definitions: 0,
            calls: 0,
            files_scanned: 0,
            files_with_syntax_errors: 0,
            bytes_scanned: 0,
            languages: BTreeMap::new(),
            skipped_large: 0,
            stopped: None,
        };
        let mut parser = Parser::new();
        if start.is_dir() {
            self.walk(&start, &mut parser, &mut scan, soft_deadline);
        } else {
            let lang = Lang::of(&start).ok_or_else(|| {
                ToolError::invalid(
                    TOOL,
                    "/path",
                    "not a Rust, Python or C file (.rs, .py, .c, .h); give a directory or one of those",
                )
            })?;
            if Instant::now() >= soft_deadline {
                scan.stopped = Some("the deadline passed".into());
            } else {
                self.file(&start, lang, &mut parser, &mut scan);
            }
        }
        if scan.files_scanned == 0 && scan.stopped.as_deref() == Some("the deadline passed") {
            return Err(ToolError::Failed {
                tool: TOOL.into(),
                message: "the deadline passed before any file was parsed".into(),
                hint: Some("retry with a longer timeout or a narrower `path`".into()),
            });
        }
        tracing::debug!(
            symbol = %symbol,
            query = ask.name(),
            files = scan.files_scanned,
            matches = scan.match_count,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "code_graph scanned"
        );
        Ok(self.answer(scan, rel, raw_symbol, stripped))
    }

    /// `rel` (relative to the root; empty = the root) as a canonical path inside the root.
    fn resolve(&self, rel: &str) -> Result<PathBuf, ToolError> {
        let rel_path = Path::new(rel);
        if rel_path.is_absolute() {
            return Err(ToolError::invalid(
                TOOL,
                "/path",
                "must be relative to the peer's code root, not absolute",
            ));
        }
        if rel_path
            .components()
            .any(|c| matches!(c, Component::ParentDir | Component::Prefix(_)))
        {
            return Err(ToolError::invalid(
                TOOL,
                "/path",
                "must stay inside the peer's code root ('..' is not allowed)",
            ));
        }
        let joined = self.root.join(rel_path);
        let real = std::fs::canonicalize(&joined).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => ToolError::NotFound {
                what: "path under the code root".into(),
                id: rel.to_string(),
            },
            _ => ToolError::failed(TOOL, format!("cannot open '{rel}': {e}")),
        })?;
        if !real.starts_with(&self.root) {
            return Err(ToolError::invalid(
                TOOL,
                "/path",
                "resolves (through a symlink) outside the peer's code root",
            ));
        }
        Ok(real)
    }

    /// Depth-first in name order; never follows symlinks.
    fn walk(&self, dir: &Path, parser: &mut Parser, scan: &mut Scan, soft_deadline: Instant) {
        let mut entries: Vec<_> = match std::fs::read_dir(dir) {
            Ok(rd) => rd.filter_map(Result::ok).collect(),
            Err(e) => {
                tracing::debug!(dir = %dir.display(), error = %e, "code_graph: unreadable directory skipped");
                return;
            }
        };
        entries.sort_by_key(|e| e.file_name());
        for entry in entries {
            if scan.stopped.is_some() {
                return;
            }
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if kind.is_dir() {
                if !SKIPPED_DIRS.contains(&name.as_ref()) {
                    self.walk(&path, parser, scan, soft_deadline);
                }
                continue;
            }
            if !kind.is_file() {
                continue; // symlinks, sockets, devices
            }
            let Some(lang) = Lang::of(&path) else {
                continue;
            };
            if Instant::now() >= soft_deadline {
                scan.stopped = Some("the deadline passed".into());
                return;
            }
            if scan.files_scanned >= self.max_files {
                scan.stopped = Some(format!(
                    "stopped at {} files (max_files); give a narrower `path`",
                    self.max_files
                ));
                return;
            }
            let Ok(len) = entry.metadata().map(|m| m.len()) else {
                continue;
            };
            if len > self.max_file_bytes {
                scan.skipped_large += 1;
                continue;
            }
            if scan.bytes_scanned + len > self.max_total_bytes {
                scan.stopped = Some(format!(
                    "stopped at {} bytes of source (max_total_bytes); give a narrower `path`",
                    scan.bytes_scanned
                ));
                return;
            }
            self.file(&path, lang, parser, scan);
        }
    }

    fn file(&self, path: &Path, lang: Lang, parser: &mut Parser, scan: &mut Scan) {
        let src = match std::fs::read(path) {
            Ok(src) if src.len() as u64 <= self.max_file_bytes => src,
            Ok(_) => {
                scan.skipped_large += 1;
                return;
            }
            Err(e) => {
                tracing::debug!(file = %path.display(), error = %e, "code_graph: unreadable file skipped");
                return;
            }
        };
        let grammar = self.grammar(lang);
        if let Err(e) = parser.set_language(&grammar.language) {
            tracing::error!(error = %e, language = lang.name(), "code_graph: grammar rejected");
            return;
        }
        let Some(tree) = parser.parse(&src, None) else {
            return;
        };
        scan.files_scanned += 1;
        scan.bytes_scanned += src.len() as u64;
        *scan.languages.entry(lang.name()).or_default() += 1;
        let root = tree.root_node();
        if root.has_error() {
            scan.files_with_syntax_errors += 1;
        }
        let file = path
            .strip_prefix(&self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/");
        let file = if file.is_empty() {
            path.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        } else {
            file
        };
        let symbol = scan.symbol.as_bytes();
        // Roles of the symbol's own name nodes in this file, for `references`.
        let mut roles: HashMap<usize, &'static str> = HashMap::new();
        // This file's matches with their byte offsets: query matches are not strictly in
        // document order, so they are sorted before they are kept.
        let mut hits: Vec<(usize, Map<String, Value>)> = Vec::new();

        // Definitions first, so a call can be checked against the symbol's functions.
        let tags = &grammar.tags;
        let names = tags.capture_names();
        let mut found: Vec<(&str, Node, Node)> = Vec::new();
        let mut cursor = QueryCursor::new();
        let mut it = cursor.matches(tags, root, src.as_slice());
        while let Some(m) = it.next() {
            let (mut outer, mut name, mut decl, mut args) = (None, None, None, None);
            for c in m.captures {
                match names[c.index as usize] {
                    "name" => name = Some(c.node),
                    "decl" => decl = Some(c.node),
                    "args" => args = Some(c.node),
                    other => outer = Some((other, c.node)),
                }
            }
            let Some((tag, node)) = outer else { continue };
            if let Some(d) = decl {
                name = c_function_name(d);
            }
            let Some(name) = name else { continue };
            if let Some(args) = args {
                // `name (...)` in a macro's tokens: only a call when the group is parenthesised
                // and follows the name directly.
                let between = &src[name.end_byte()..args.start_byte()];
                if !between.iter().all(u8::is_ascii_whitespace) || src[args.start_byte()] != b'(' {
                    continue;
                }
            }
            found.push((tag, node, name));
        }
        found.sort_by_key(|(tag, _, _)| !tag.starts_with("definition."));
        // Byte ranges of the functions named like the symbol (for `callees`).
        let mut symbol_functions: Vec<std::ops::Range<usize>> = Vec::new();

        for (tag, node, name) in found {
            let text = String::from_utf8_lossy(&src[name.byte_range()]);
            let is_symbol = text.as_bytes() == symbol;
            if let Some(kind) = tag.strip_prefix("definition.") {
                scan.definitions += 1;
                let scope = scope_of(node, lang, &src);
                let in_type = scope.as_ref().is_some_and(|(container, _)| {
                    matches!(*container, "impl_item" | "trait_item" | "class_definition")
                });
                let kind = if kind == "function" && in_type {
                    "method"
                } else {
                    kind_name(kind)
                };
                if !scan.defined.contains(text.as_ref()) {
                    scan.defined.insert(text.to_string());
                }
                if !is_symbol {
                    continue;
                }
                scan.symbol_definitions += 1;
                if matches!(kind, "function" | "method") {
                    scan.symbol_functions += 1;
                    symbol_functions.push(node.byte_range());
                }
                roles.insert(name.start_byte(), kind);
                if scan.ask == Ask::Definition {
                    let mut hit = site(&file, lang, name, kind, &src);
                    if let Some((_, scope)) = scope {
                        hit.insert("scope".into(), scope.into());
                    }
                    hits.push((name.start_byte(), hit));
                }
            } else {
                scan.calls += 1;
                if !scan.called.contains(text.as_ref()) {
                    scan.called.insert(text.to_string());
                }
                let kind = if tag == "call.macro" {
                    "macro_call"
                } else {
                    "call"
                };
                if is_symbol {
                    scan.symbol_calls += 1;
                    roles.insert(name.start_byte(), kind);
                }
                let wanted = match scan.ask {
                    Ask::Callers => is_symbol,
                    // Inside one of the symbol's functions (the innermost is checked below).
                    Ask::Callees => symbol_functions
                        .iter()
                        .any(|r| r.contains(&node.start_byte())),
                    Ask::Definition | Ask::References => false,
                };
                if !wanted {
                    continue;
                }
                let caller = enclosing_function(node, lang);
                let caller_name = caller.and_then(|f| function_name(f, lang));
                let caller_text =
                    caller_name.map(|n| String::from_utf8_lossy(&src[n.byte_range()]).into_owned());
                if scan.ask == Ask::Callees && caller_text.as_deref() != Some(scan.symbol) {
                    continue;
                }
                let mut hit = site(&file, lang, name, kind, &src);
                let scope = scope_of(caller.unwrap_or(node), lang, &src).map(|(_, s)| s);
                match scan.ask {
                    Ask::Callers => {
                        hit.insert(
                            "caller".into(),
                            caller_text.clone().map_or(Value::Null, Value::String),
                        );
                        if let Some(c) = caller_text {
                            scan.distinct.insert(c);
                        }
                    }
                    _ => {
                        hit.insert("callee".into(), text.to_string().into());
                        scan.distinct.insert(text.to_string());
                    }
                }
                if let Some(scope) = scope {
                    hit.insert("scope".into(), scope.into());
                }
                hit.insert(
                    "expr".into(),
                    clip(&String::from_utf8_lossy(
                        &src[callee_expr(node, name).byte_range()],
                    ))
                    .into(),
                );
                hits.push((name.start_byte(), hit));
            }
        }

        if scan.ask == Ask::References {
            let idents = &grammar.idents;
            let mut cursor = QueryCursor::new();
            let mut it = cursor.captures(idents, root, src.as_slice());
            while let Some((m, i)) = it.next() {
                let node = m.captures[*i].node;
                if &src[node.byte_range()] != symbol {
                    continue;
                }
                let role = roles
                    .get(&node.start_byte())
                    .copied()
                    .unwrap_or("reference");
                let mut hit = site(&file, lang, node, role, &src);
                let role_name = match role {
                    "call" | "macro_call" => "call",
                    "reference" => "reference",
                    _ => "definition",
                };
                hit.insert("role".into(), role_name.into());
                hits.push((node.start_byte(), hit));
            }
        }
        hits.sort_by_key(|(at, _)| *at);
        for (_, hit) in hits {
            scan.push(Value::Object(hit));
        }
    }

    fn answer(&self, mut scan: Scan, rel: &str, raw_symbol: &str, stripped: bool) -> Value {
        if scan.ask == Ask::Callees {
            for hit in &mut scan.matches {
                let defined = hit["callee"]
                    .as_str()
                    .is_some_and(|c| scan.defined.contains(c));
                hit["defined"] = defined.into();
            }
        }
        let mut limits = Vec::new();
        if let Some(why) = &scan.stopped {
            limits.push(why.clone());
        }
        if scan.skipped_large > 0 {
            limits.push(format!(
                "{} file(s) over {} bytes (max_file_bytes) were skipped",
                scan.skipped_large, self.max_file_bytes
            ));
        }
        if scan.match_count > scan.matches.len() {
            limits.push(format!(
                "only the first {} of {} matches are listed",
                scan.matches.len(),
                scan.match_count
            ));
        }
        let mut out = Map::new();
        out.insert("symbol".into(), scan.symbol.into());
        out.insert("query".into(), scan.ask.name().into());
        out.insert("path".into(), if rel.is_empty() { "." } else { rel }.into());
        out.insert("match_count".into(), scan.match_count.into());
        if matches!(scan.ask, Ask::Callers | Ask::Callees) && !scan.distinct.is_empty() {
            let key = if scan.ask == Ask::Callers {
                "callers"
            } else {
                "callees"
            };
            let names: Vec<&String> = scan.distinct.iter().take(self.max_matches).collect();
            out.insert(key.into(), json!(names));
        }
        out.insert("files_scanned".into(), scan.files_scanned.into());
        out.insert("languages".into(), json!(scan.languages));
        out.insert("definitions".into(), scan.definitions.into());
        out.insert("calls".into(), scan.calls.into());
        if scan.files_with_syntax_errors > 0 {
            out.insert(
                "files_with_syntax_errors".into(),
                scan.files_with_syntax_errors.into(),
            );
        }
        out.insert("truncated".into(), (!limits.is_empty()).into());
        if !limits.is_empty() {
            out.insert("limits".into(), json!(limits));
        }
        let mut notes = Vec::new();
        if stripped {
            notes.push(format!(
                "'{raw_symbol}' was matched by its last name '{}': resolution is by name",
                scan.symbol
            ));
        }
        if scan.match_count == 0 {
            notes.push(self.empty_note(&scan));
            let close = did_you_mean(scan.symbol, scan.defined.iter().chain(&scan.called));
            if !close.is_empty() {
                out.insert("did_you_mean".into(), json!(close));
            }
        }
        if !notes.is_empty() {
            out.insert("note".into(), notes.join("; ").into());
        }
        out.insert("matches".into(), Value::Array(scan.matches));
        Value::Object(out)
    }

    fn empty_note(&self, scan: &Scan) -> String {
        let (s, n) = (scan.symbol, scan.files_scanned);
        match scan.ask {
            Ask::Definition if scan.symbol_calls > 0 => format!(
                "'{s}' is called {} time(s) but not defined in the {n} file(s) scanned (a library, builtin or generated name?)",
                scan.symbol_calls
            ),
            Ask::Definition => format!("no definition of '{s}' in the {n} file(s) scanned"),
            Ask::Callers if scan.symbol_definitions > 0 => format!(
                "'{s}' is defined but no call of it was found by name; calls through function pointers, trait objects or callbacks are not seen"
            ),
            Ask::Callers => format!("no call of '{s}' in the {n} file(s) scanned"),
            Ask::Callees if scan.symbol_functions > 0 => {
                format!("the function(s) named '{s}' call nothing")
            }
            Ask::Callees => format!("no function named '{s}' in the {n} file(s) scanned"),
            Ask::References => format!("'{s}' does not occur in the {n} file(s) scanned"),
        }
    }
}

impl Scan<'_> {
    fn push(&mut self, hit: Value) {
        self.match_count += 1;
        if self.matches.len() < self.max_matches {
            self.matches.push(hit);
        }
    }
}

fn kind_name(kind: &str) -> &'static str {
    match kind {
        "function" => "function",
        "struct" => "struct",
        "enum" => "enum",
        "union" => "union",
        "trait" => "trait",
        "type" => "type",
        "module" => "module",
        "macro" => "macro",
        "constant" => "constant",
        "static" => "static",
        "class" => "class",
        "prototype" => "prototype",
        "typedef" => "typedef",
        _ => "definition",
    }
}

/// The symbol as a bare identifier: `Foo::bar`, `foo.bar`, `p->bar`, `bar()` and `bar!` give
/// `bar` (`true` when something was stripped).
fn normalize_symbol(raw: &str) -> Result<(String, bool), ToolError> {
    let trimmed = raw.trim();
    let bare = trimmed.trim_end_matches("()").trim_end_matches('!');
    let last = bare.rsplit(['.', ':', '>']).next().unwrap_or(bare);
    if last.is_empty() || !last.chars().all(|c| c.is_alphanumeric() || c == '_') {
        return Err(ToolError::invalid(
            TOOL,
            "/symbol",
            format!("'{raw}' is not an identifier; give a function, method or type name such as parse_config"),
        ));
    }
    let stripped = last != bare;
    Ok((last.to_string(), stripped))
}

/// The name inside a C declarator when it declares a function: `f` in `f(void)`, `*f(void)`,
/// `(f)(void)`; `None` for variables, including function pointers (`(*fp)(int)`).
fn c_function_name(mut node: Node) -> Option<Node> {
    let mut parent_is_function = false;
    loop {
        match node.kind() {
            "identifier" => return parent_is_function.then_some(node),
            "function_declarator" => {
                parent_is_function = true;
                node = node.child_by_field_name("declarator")?;
            }
            "pointer_declarator" | "attributed_declarator" => {
                parent_is_function = false;
                node = node.child_by_field_name("declarator")?;
            }
            "parenthesized_declarator" => {
                parent_is_function = false;
                node = node.named_child(0)?;
            }
            _ => return None,
        }
    }
}

/// The name node of a function definition node.
fn function_name(f: Node, lang: Lang) -> Option<Node> {
    match lang {
        Lang::Rust | Lang::Python => f.child_by_field_name("name"),
        Lang::C => c_function_name(f.child_by_field_name("declarator")?),
    }
}

/// The innermost function with a body around `node` (not `node` itself).
fn enclosing_function(node: Node, lang: Lang) -> Option<Node> {
    let kind = lang.function_kind();
    let mut cur = node.parent();
    while let Some(n) = cur {
        if n.kind() == kind {
            return Some(n);
        }
        cur = n.parent();
    }
    None
}

/// The innermost named container around `node`: its node kind and a label such as
/// `impl Parser`, `impl Display for Parser`, `trait Shape`, `mod net`, `class Greeter`,
/// `fn outer` or `def outer`.
fn scope_of(node: Node, lang: Lang, src: &[u8]) -> Option<(&'static str, String)> {
    let text = |n: Node| String::from_utf8_lossy(&src[n.byte_range()]).into_owned();
    let mut cur = node.parent();
    while let Some(n) = cur {
        let label = match (lang, n.kind()) {
            (Lang::Rust, "impl_item") => {
                n.child_by_field_name("type")
                    .map(|ty| match n.child_by_field_name("trait") {
                        Some(tr) => format!("impl {} for {}", text(tr), text(ty)),
                        None => format!("impl {}", text(ty)),
                    })
            }
            (Lang::Rust, "trait_item") => n
                .child_by_field_name("name")
                .map(|x| format!("trait {}", text(x))),
            (Lang::Rust, "mod_item") => n
                .child_by_field_name("name")
                .map(|x| format!("mod {}", text(x))),
            (Lang::Rust, "function_item") => n
                .child_by_field_name("name")
                .map(|x| format!("fn {}", text(x))),
            (Lang::Python, "class_definition") => n
                .child_by_field_name("name")
                .map(|x| format!("class {}", text(x))),
            (Lang::Python, "function_definition") => n
                .child_by_field_name("name")
                .map(|x| format!("def {}", text(x))),
            _ => None,
        };
        if let Some(label) = label {
            return Some((n.kind(), label));
        }
        cur = n.parent();
    }
    None
}

/// The callee expression of a call (`self.parse`, `Parser::new`, `ops->read`, `println`).
fn callee_expr<'t>(call: Node<'t>, name: Node<'t>) -> Node<'t> {
    call.child_by_field_name("function")
        .or_else(|| call.child_by_field_name("macro"))
        .unwrap_or(name)
}

/// `{file, line, column, kind, language, text}` of one site.
fn site(file: &str, lang: Lang, node: Node, kind: &str, src: &[u8]) -> Map<String, Value> {
    let pos = node.start_position();
    let line_start = node.start_byte() - pos.column.min(node.start_byte());
    let line_end = src[line_start..]
        .iter()
        .position(|&b| b == b'\n')
        .map_or(src.len(), |i| line_start + i);
    let line = String::from_utf8_lossy(&src[line_start..line_end]);
    let mut m = Map::new();
    m.insert("file".into(), file.into());
    m.insert("line".into(), (pos.row + 1).into());
    m.insert("column".into(), (pos.column + 1).into());
    m.insert("kind".into(), kind.into());
    m.insert("language".into(), lang.name().into());
    m.insert("text".into(), clip(line.trim()).into());
    m
}

fn clip(s: &str) -> String {
    if s.chars().count() <= MAX_LINE_CHARS {
        s.to_string()
    } else {
        let mut out: String = s.chars().take(MAX_LINE_CHARS).collect();
        out.push('…');
        out
    }
}

/// Up to five known names close to `symbol` (same name in another case, or a small edit away).
fn did_you_mean<'a>(symbol: &str, names: impl Iterator<Item = &'a String>) -> Vec<String> {
    let lower = symbol.to_lowercase();
    let budget = (symbol.chars().count() / 3).max(1);
    let mut close: Vec<(usize, &String)> = names
        .filter_map(|n| {
            let d = strsim::levenshtein(&lower, &n.to_lowercase());
            (d <= budget && n != symbol).then_some((d, n))
        })
        .collect();
    close.sort();
    close.dedup_by(|a, b| a.1 == b.1);
    close.into_iter().take(5).map(|(_, n)| n.clone()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const RUST: &str = r#"pub struct Parser {
    pos: usize,
}

impl Parser {
    pub fn new() -> Parser {
        Parser { pos: 0 }
    }

    pub fn parse(&mut self, text: &str) -> usize {
        let n = helper(text);
        self.advance(n);
        n
    }

    fn advance(&mut self, n: usize) {
        self.pos += n;
    }
}

pub fn helper(text: &str) -> usize {
    text.len()
}

pub fn run() {
    let mut p = Parser::new();
    assert_eq!(p.parse("abc"), 3);
}
"#;

    const PYTHON: &str = r#"import os


class Greeter:
    def __init__(self, name):
        self.name = name

    def greet(self):
        return format_greeting(self.name)


def format_greeting(name):
    return "hello " + name.strip()


def main():
    g = Greeter(os.environ.get("USER", "you"))
    print(g.greet())
"#;

    const C_SRC: &str = r#"#include "util.h"

static int square(int x) {
    return x * x;
}

int helper(int a, int b) {
    return square(a) + square(b);
}

int main(void) {
    return helper(1, 2) > 0 ? 0 : 1;
}
"#;

    const C_HEADER: &str = r#"#ifndef UTIL_H
#define UTIL_H
int helper(int a, int b);
char *name_of(int id);
int (*handler)(int);
#endif
"#;

    struct Fixture {
        dir: tempfile::TempDir,
    }

    impl Fixture {
        fn new() -> Fixture {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path().join("code");
            let write = |rel: &str, text: &str| {
                let p = root.join(rel);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(p, text).unwrap();
            };
            write("src/lib.rs", RUST);
            write("tool/app.py", PYTHON);
            write("csrc/util.c", C_SRC);
            write("csrc/util.h", C_HEADER);
            write("README.md", "helper helper helper\n");
            // Never scanned: build output, vendored packages, hidden directories.
            write("target/gen.rs", "fn helper() { helper() }\n");
            write(
                "node_modules/x/a.c",
                "int helper(void) { return helper(); }\n",
            );
            write(".hidden/h.py", "def helper():\n    helper()\n");
            // Outside the root, reachable only through symlinks.
            std::fs::create_dir_all(dir.path().join("outside")).unwrap();
            std::fs::write(
                dir.path().join("outside/evil.rs"),
                "fn helper() { helper() }\n",
            )
            .unwrap();
            std::os::unix::fs::symlink(
                dir.path().join("outside/evil.rs"),
                root.join("src/evil.rs"),
            )
            .unwrap();
            std::os::unix::fs::symlink(dir.path().join("outside"), root.join("escape")).unwrap();
            Fixture { dir }
        }

        fn graph(&self, cfg: &str) -> CodeGraph {
            let mut cfg: CodeGraphConfig = toml::from_str(cfg).unwrap();
            cfg.root = Some(self.dir.path().join("code"));
            CodeGraph::new(&cfg).expect("root exists and the queries compile")
        }
    }

    fn run(g: &CodeGraph, args: Value) -> Value {
        g.run(&args, Instant::now() + Duration::from_secs(30))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// `(file, line, kind)` of every match.
    fn sites(v: &Value) -> Vec<(String, u64, String)> {
        v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap().to_string(),
                    m["line"].as_u64().unwrap(),
                    m["kind"].as_str().unwrap().to_string(),
                )
            })
            .collect()
    }

    fn s(file: &str, line: u64, kind: &str) -> (String, u64, String) {
        (file.to_string(), line, kind.to_string())
    }

    #[test]
    fn definitions_across_rust_python_and_c_with_lines_kinds_and_scopes() {
        let fx = Fixture::new();
        let g = fx.graph("");
        // `definition` is the default query; C prototypes count, skipped dirs and symlinks don't.
        let v = run(&g, json!({"symbol": "helper"}));
        assert_eq!(v["query"], "definition");
        assert_eq!(
            sites(&v),
            [
                s("csrc/util.c", 7, "function"),
                s("csrc/util.h", 3, "prototype"),
                s("src/lib.rs", 21, "function"),
            ],
            "{v:#}"
        );
        assert_eq!(
            v["matches"][2]["text"],
            "pub fn helper(text: &str) -> usize {"
        );
        assert_eq!(v["matches"][2]["column"], 8);
        assert_eq!(v["files_scanned"], 4);
        assert_eq!(v["languages"], json!({"c": 2, "python": 1, "rust": 1}));
        assert_eq!(v["truncated"], false);

        let v = run(&g, json!({"symbol": "parse", "query": "definition"}));
        assert_eq!(sites(&v), [s("src/lib.rs", 10, "method")]);
        assert_eq!(v["matches"][0]["scope"], "impl Parser");

        let v = run(&g, json!({"symbol": "Parser"}));
        assert_eq!(sites(&v), [s("src/lib.rs", 1, "struct")]);

        let v = run(&g, json!({"symbol": "greet"}));
        assert_eq!(sites(&v), [s("tool/app.py", 8, "method")]);
        assert_eq!(v["matches"][0]["scope"], "class Greeter");
        let v = run(&g, json!({"symbol": "Greeter"}));
        assert_eq!(sites(&v), [s("tool/app.py", 4, "class")]);
        let v = run(&g, json!({"symbol": "format_greeting"}));
        assert_eq!(sites(&v), [s("tool/app.py", 12, "function")]);
        assert!(v["matches"][0].get("scope").is_none());

        // Through a pointer declarator; a function pointer variable is not a function.
        let v = run(&g, json!({"symbol": "name_of"}));
        assert_eq!(sites(&v), [s("csrc/util.h", 4, "prototype")]);
        let v = run(&g, json!({"symbol": "handler"}));
        assert!(sites(&v).is_empty(), "{v:#}");
        let v = run(&g, json!({"symbol": "UTIL_H"}));
        assert_eq!(sites(&v), [s("csrc/util.h", 2, "macro")]);
    }

    #[test]
    fn callers_name_the_enclosing_function_in_every_language() {
        let fx = Fixture::new();
        let g = fx.graph("");
        let v = run(&g, json!({"symbol": "helper", "query": "callers"}));
        assert_eq!(
            sites(&v),
            [s("csrc/util.c", 12, "call"), s("src/lib.rs", 11, "call")],
            "{v:#}"
        );
        assert_eq!(v["matches"][0]["caller"], "main");
        assert_eq!(v["matches"][1]["caller"], "parse");
        assert_eq!(v["matches"][1]["scope"], "impl Parser");
        assert_eq!(v["callers"], json!(["main", "parse"]));

        // Two calls on one line are two sites.
        let v = run(&g, json!({"symbol": "square", "query": "callers"}));
        let cols: Vec<u64> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["column"].as_u64().unwrap())
            .collect();
        assert_eq!(
            sites(&v),
            [s("csrc/util.c", 8, "call"), s("csrc/util.c", 8, "call")]
        );
        assert_eq!(cols, [12, 24]);

        // A method call inside a macro's arguments, found from its token tree.
        let v = run(&g, json!({"symbol": "parse", "query": "callers"}));
        assert_eq!(sites(&v), [s("src/lib.rs", 27, "call")], "{v:#}");
        assert_eq!(v["matches"][0]["caller"], "run");

        // Python: a method calling a function, and a qualified symbol matched by its last name.
        let v = run(&g, json!({"symbol": "format_greeting", "query": "callers"}));
        assert_eq!(sites(&v), [s("tool/app.py", 9, "call")]);
        assert_eq!(v["matches"][0]["caller"], "greet");
        assert_eq!(v["matches"][0]["scope"], "class Greeter");
        let v = run(&g, json!({"symbol": "Greeter.greet", "query": "callers"}));
        assert_eq!(sites(&v), [s("tool/app.py", 18, "call")]);
        assert_eq!(v["matches"][0]["expr"], "g.greet");
        assert!(v["note"].as_str().unwrap().contains("by name"), "{v:#}");
    }

    #[test]
    fn callees_list_every_call_site_and_whether_the_callee_is_defined_here() {
        let fx = Fixture::new();
        let g = fx.graph("");
        let v = run(&g, json!({"symbol": "parse", "query": "callees"}));
        assert_eq!(
            sites(&v),
            [s("src/lib.rs", 11, "call"), s("src/lib.rs", 12, "call")]
        );
        assert_eq!(v["callees"], json!(["advance", "helper"]));
        assert_eq!(v["matches"][1]["expr"], "self.advance");
        assert_eq!(v["matches"][1]["defined"], true);

        let v = run(&g, json!({"symbol": "run", "query": "callees"}));
        let got: Vec<(u64, &str, &str, bool)> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["line"].as_u64().unwrap(),
                    m["callee"].as_str().unwrap(),
                    m["kind"].as_str().unwrap(),
                    m["defined"].as_bool().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                (26, "new", "call", true),
                (27, "assert_eq", "macro_call", false),
                (27, "parse", "call", true),
            ],
            "{v:#}"
        );
        assert_eq!(v["matches"][0]["expr"], "Parser::new");

        let v = run(&g, json!({"symbol": "main", "query": "callees"}));
        let callees: Vec<(&str, u64, &str)> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap(),
                    m["line"].as_u64().unwrap(),
                    m["callee"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            callees,
            [
                ("csrc/util.c", 12, "helper"),
                ("tool/app.py", 17, "Greeter"),
                ("tool/app.py", 17, "get"),
                ("tool/app.py", 18, "print"),
                ("tool/app.py", 18, "greet"),
            ],
            "{v:#}"
        );

        let v = run(&g, json!({"symbol": "advance", "query": "callees"}));
        assert!(sites(&v).is_empty(), "{v:#}");
        assert!(
            v["note"].as_str().unwrap().contains("call nothing"),
            "{v:#}"
        );
    }

    #[test]
    fn references_are_every_occurrence_with_its_role() {
        let fx = Fixture::new();
        let g = fx.graph("");
        let v = run(&g, json!({"symbol": "Parser", "query": "references"}));
        let got: Vec<(u64, &str)> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| (m["line"].as_u64().unwrap(), m["role"].as_str().unwrap()))
            .collect();
        assert_eq!(
            got,
            [
                (1, "definition"),
                (5, "reference"),
                (6, "reference"),
                (7, "reference"),
                (26, "reference"),
            ],
            "{v:#}"
        );
        let v = run(&g, json!({"symbol": "helper", "query": "references"}));
        let got: Vec<(&str, u64, &str)> = v["matches"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                (
                    m["file"].as_str().unwrap(),
                    m["line"].as_u64().unwrap(),
                    m["role"].as_str().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            got,
            [
                ("csrc/util.c", 7, "definition"),
                ("csrc/util.c", 12, "call"),
                ("csrc/util.h", 3, "definition"),
                ("src/lib.rs", 11, "call"),
                ("src/lib.rs", 21, "definition"),
            ]
        );
    }

    #[test]
    fn path_narrows_the_scan_and_cannot_leave_the_root() {
        let fx = Fixture::new();
        let g = fx.graph("");
        let v = run(&g, json!({"symbol": "helper", "path": "csrc"}));
        assert_eq!(v["files_scanned"], 2);
        assert_eq!(v["languages"], json!({"c": 2}));
        let v = run(&g, json!({"symbol": "helper", "path": "src/lib.rs"}));
        assert_eq!(sites(&v), [s("src/lib.rs", 21, "function")]);

        let deadline = Instant::now() + Duration::from_secs(30);
        for bad in [
            "/etc",
            "../outside",
            "src/../../outside",
            "escape",
            "escape/evil.rs",
            "src/evil.rs",
        ] {
            match g.run(&json!({"symbol": "helper", "path": bad}), deadline) {
                Err(ToolError::InvalidArguments { problems, .. }) => {
                    assert_eq!(problems[0].path, "/path", "{bad}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(matches!(
            g.run(&json!({"symbol": "helper", "path": "nope"}), deadline),
            Err(ToolError::NotFound { .. })
        ));
        assert!(matches!(
            g.run(&json!({"symbol": "helper", "path": "README.md"}), deadline),
            Err(ToolError::InvalidArguments { .. })
        ));
        for bad in ["", "a b", "foo(x)", "::"] {
            assert!(
                matches!(
                    g.run(&json!({"symbol": bad}), deadline),
                    Err(ToolError::InvalidArguments { .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn caps_truncate_and_say_which_limit_was_hit() {
        let fx = Fixture::new();
        let v = run(&fx.graph("max_files = 2"), json!({"symbol": "helper"}));
        assert_eq!(v["files_scanned"], 2);
        assert_eq!(v["truncated"], true);
        assert!(
            v["limits"][0].as_str().unwrap().contains("max_files"),
            "{v:#}"
        );
        // Only the two C files were reached.
        assert_eq!(v["match_count"], 2);

        let v = run(
            &fx.graph("max_matches = 2"),
            json!({"symbol": "Parser", "query": "references"}),
        );
        assert_eq!(v["matches"].as_array().unwrap().len(), 2);
        assert_eq!(v["match_count"], 5);
        assert_eq!(v["truncated"], true);
        assert!(v["limits"][0].as_str().unwrap().contains("first 2 of 5"));

        // Only the C files are small enough.
        let small = C_SRC.len().max(C_HEADER.len());
        assert!(RUST.len() > small && PYTHON.len() > small);
        let v = run(
            &fx.graph(&format!("max_file_bytes = {small}")),
            json!({"symbol": "helper"}),
        );
        assert_eq!(v["files_scanned"], 2);
        assert_eq!(v["truncated"], true);
        assert!(
            v["limits"][0].as_str().unwrap().contains("2 file(s)"),
            "{v:#}"
        );

        let v = run(
            &fx.graph(&format!("max_total_bytes = {}", C_SRC.len() + 10)),
            json!({"symbol": "helper"}),
        );
        assert_eq!(v["files_scanned"], 1);
        assert!(v["limits"][0].as_str().unwrap().contains("max_total_bytes"));
    }

    #[test]
    fn an_unknown_symbol_gives_an_empty_list_and_close_names() {
        let fx = Fixture::new();
        let g = fx.graph("");
        let v = run(&g, json!({"symbol": "helpr"}));
        assert_eq!(v["matches"], json!([]));
        assert_eq!(v["truncated"], false);
        assert_eq!(v["did_you_mean"][0], "helper");
        assert!(v["note"].as_str().unwrap().contains("no definition"));
        // Called but defined elsewhere.
        let v = run(&g, json!({"symbol": "print"}));
        assert!(v["note"].as_str().unwrap().contains("not defined"), "{v:#}");
    }

    #[test]
    fn a_passed_deadline_stops_the_walk() {
        let fx = Fixture::new();
        let err = fx
            .graph("")
            .run(&json!({"symbol": "helper"}), Instant::now())
            .unwrap_err();
        assert!(matches!(err, ToolError::Failed { .. }), "{err:?}");
    }

    #[test]
    fn no_root_or_a_missing_root_is_not_served() {
        assert!(CodeGraph::new(&CodeGraphConfig::default()).is_none());
        let cfg = CodeGraphConfig {
            root: Some("/nonexistent/covo-code".into()),
            ..Default::default()
        };
        assert!(CodeGraph::new(&cfg).is_none());
    }
}
