//! A GBNF grammar (llama.cpp's `grammar` field) for a constrained reply, written by covo.
//!
//! llama.cpp turns a JSON schema into a grammar itself, but its converter holds only integers to
//! `minimum`/`maximum`: a `number` in [0, 1] can come back as `10`, which validation then
//! refuses, and a small model spends its turn repairing. The grammar written here holds numbers
//! and integers to their ranges exactly, strings to their lengths, arrays to their item counts,
//! objects to their declared properties (required ones always, in the schema's order), enums and
//! consts to their values. The rule is that the grammar may be narrower than the schema, never
//! wider, for the keywords the catalog uses: every reply it admits is a call whose arguments
//! validate (a property test walks the grammar and validates what it writes). Keywords it does
//! not model (`pattern`, `format`, `multipleOf`, `uniqueItems`, `allOf` of several) leave the
//! value as loose as its type; validation still judges the call.
//!
//! Numbers are written without exponents, with at most 15 integer digits and 6 decimals; a range
//! with a non-integer bound is narrowed to whole-number bounds.

use covo_core::spec::ToolSpec;
use serde_json::Value;
use std::collections::HashMap;

/// The largest magnitude a number in a reply may have: 15 digits.
const LIMIT: i64 = 999_999_999_999_999;

/// One grammar expression.
#[derive(Debug, Clone, PartialEq)]
enum G {
    /// A literal string.
    Lit(String),
    /// A character class: negated or not, inclusive ranges.
    Class(bool, Vec<(char, char)>),
    Seq(Vec<G>),
    Alt(Vec<G>),
    /// The expression repeated between min and max (none: unbounded) times.
    Rep(Box<G>, u32, Option<u32>),
    /// A named rule.
    Ref(String),
}

fn lit(s: &str) -> G {
    G::Lit(s.to_string())
}

fn rule(name: &str) -> G {
    G::Ref(name.to_string())
}

fn opt(g: G) -> G {
    G::Rep(Box::new(g), 0, Some(1))
}

fn digits(min: u32, max: Option<u32>) -> G {
    G::Rep(Box::new(G::Class(false, vec![('0', '9')])), min, max)
}

fn class(lo: u8, hi: u8) -> G {
    G::Class(false, vec![(lo as char, hi as char)])
}

/// The rules of a grammar, in the order they were made; `root` first.
#[derive(Default)]
struct Grammar {
    rules: Vec<(String, G)>,
    /// A rendered body to the rule that has it, so equal schemas share a rule.
    by_body: HashMap<String, String>,
}

impl Grammar {
    fn base() -> Grammar {
        let mut g = Grammar::default();
        let hex = G::Class(false, vec![('0', '9'), ('a', 'f'), ('A', 'F')]);
        let defs = [
            // Bounded whitespace: a small model must not wander in it.
            (
                "ws",
                G::Alt(vec![
                    lit(""),
                    lit(" "),
                    G::Seq(vec![
                        lit("\n"),
                        G::Rep(
                            Box::new(G::Class(false, vec![(' ', ' '), ('\t', '\t')])),
                            0,
                            Some(16),
                        ),
                    ]),
                ]),
            ),
            (
                "char",
                G::Alt(vec![
                    G::Class(
                        true,
                        vec![('"', '"'), ('\\', '\\'), ('\x7f', '\x7f'), ('\0', '\x1f')],
                    ),
                    G::Seq(vec![
                        lit("\\"),
                        G::Alt(vec![
                            G::Class(false, "\"\\/bfnrt".chars().map(|c| (c, c)).collect()),
                            // \u escapes outside the surrogates (D800 to DFFF): a lone one
                            // is not text; a character beyond them is written as itself.
                            G::Seq(vec![
                                lit("u"),
                                G::Alt(vec![
                                    G::Seq(vec![
                                        G::Class(
                                            false,
                                            vec![
                                                ('0', '9'),
                                                ('a', 'c'),
                                                ('A', 'C'),
                                                ('e', 'f'),
                                                ('E', 'F'),
                                            ],
                                        ),
                                        G::Rep(Box::new(hex.clone()), 3, Some(3)),
                                    ]),
                                    G::Seq(vec![
                                        G::Class(false, vec![('d', 'd'), ('D', 'D')]),
                                        class(b'0', b'7'),
                                        G::Rep(Box::new(hex), 2, Some(2)),
                                    ]),
                                ]),
                            ]),
                        ]),
                    ]),
                ]),
            ),
            (
                "string",
                G::Seq(vec![
                    lit("\""),
                    G::Rep(Box::new(rule("char")), 0, None),
                    lit("\""),
                ]),
            ),
            (
                "number",
                G::Seq(vec![
                    opt(lit("-")),
                    G::Alt(vec![
                        lit("0"),
                        G::Seq(vec![class(b'1', b'9'), digits(0, Some(14))]),
                    ]),
                    opt(G::Seq(vec![lit("."), digits(1, Some(6))])),
                ]),
            ),
            ("boolean", G::Alt(vec![lit("true"), lit("false")])),
            // Any JSON value; terminals first (the tests' sampler takes the first when deep).
            (
                "value",
                G::Alt(vec![
                    rule("string"),
                    rule("number"),
                    rule("boolean"),
                    lit("null"),
                    rule("object"),
                    rule("array"),
                ]),
            ),
            (
                "object",
                G::Seq(vec![
                    lit("{"),
                    rule("ws"),
                    opt(G::Seq(vec![
                        rule("member"),
                        G::Rep(
                            Box::new(G::Seq(vec![
                                rule("ws"),
                                lit(","),
                                rule("ws"),
                                rule("member"),
                            ])),
                            0,
                            None,
                        ),
                    ])),
                    rule("ws"),
                    lit("}"),
                ]),
            ),
            (
                "member",
                G::Seq(vec![
                    rule("string"),
                    rule("ws"),
                    lit(":"),
                    rule("ws"),
                    rule("value"),
                ]),
            ),
            (
                "array",
                G::Seq(vec![
                    lit("["),
                    rule("ws"),
                    opt(G::Seq(vec![
                        rule("value"),
                        G::Rep(
                            Box::new(G::Seq(vec![
                                rule("ws"),
                                lit(","),
                                rule("ws"),
                                rule("value"),
                            ])),
                            0,
                            None,
                        ),
                    ])),
                    rule("ws"),
                    lit("]"),
                ]),
            ),
        ];
        g.rules.push(("root".into(), lit("")));
        for (name, body) in defs {
            g.rules.push((name.into(), body));
        }
        g
    }

    /// A rule named after `hint` with this body, or the rule that already has it.
    fn define(&mut self, hint: &str, body: G) -> G {
        let rendered = render(&body);
        if let Some(name) = self.by_body.get(&rendered) {
            return G::Ref(name.clone());
        }
        let base: String = hint
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let mut name = base.clone();
        let mut n = 1;
        while self.rules.iter().any(|(r, _)| *r == name) {
            n += 1;
            name = format!("{base}-{n}");
        }
        self.by_body.insert(rendered, name.clone());
        self.rules.push((name.clone(), body));
        G::Ref(name)
    }

    /// The expression for values of `schema`; `hint` names the rules it makes.
    fn schema(&mut self, s: &Value, hint: &str) -> G {
        let Some(o) = s.as_object() else {
            return rule("value"); // `true` or anything that is not a schema: any value
        };
        if let Some(c) = o.get("const") {
            return G::Lit(c.to_string());
        }
        if let Some(Value::Array(vals)) = o.get("enum") {
            return G::Alt(vals.iter().map(|v| G::Lit(v.to_string())).collect());
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(Value::Array(alts)) = o.get(key) {
                let alts = alts
                    .iter()
                    .enumerate()
                    .map(|(i, a)| self.schema(a, &format!("{hint}-{i}")))
                    .collect();
                return G::Alt(alts);
            }
        }
        if let Some(Value::Array(all)) = o.get("allOf") {
            if let [one] = all.as_slice() {
                return self.schema(one, hint);
            }
        }
        match o.get("type") {
            Some(Value::String(t)) => self.typed(t, s, hint),
            Some(Value::Array(ts)) => G::Alt(
                ts.iter()
                    .filter_map(Value::as_str)
                    .map(|t| self.typed(t, s, hint))
                    .collect(),
            ),
            _ if o.contains_key("properties") => self.typed("object", s, hint),
            _ => rule("value"),
        }
    }

    fn typed(&mut self, t: &str, s: &Value, hint: &str) -> G {
        let n = |k: &str| s.get(k).and_then(Value::as_f64);
        let count = |k: &str| {
            s.get(k)
                .and_then(Value::as_u64)
                .map(|v| v.min(u32::MAX as u64) as u32)
        };
        match t {
            "string" => match (count("minLength"), count("maxLength")) {
                (None, None) => rule("string"),
                (min, max) => G::Seq(vec![
                    lit("\""),
                    G::Rep(Box::new(rule("char")), min.unwrap_or(0), max),
                    lit("\""),
                ]),
            },
            "integer" => {
                let lo = bound(n("minimum"), n("exclusiveMinimum"), true);
                let hi = bound(n("maximum"), n("exclusiveMaximum"), false);
                let g = int_range(lo, hi).unwrap_or_else(|| G::Lit(lo.to_string()));
                self.define("integer", g)
            }
            "number" => {
                let lo = bound(n("minimum"), n("exclusiveMinimum"), true);
                let hi = bound(n("maximum"), n("exclusiveMaximum"), false);
                self.define("num", number_range(lo, hi))
            }
            "boolean" => rule("boolean"),
            "null" => lit("null"),
            "array" => {
                let item = match s.get("items") {
                    Some(i) if i.is_object() => self.schema(i, &format!("{hint}-item")),
                    _ => rule("value"),
                };
                let (min, max) = (count("minItems").unwrap_or(0), count("maxItems"));
                if max == Some(0) {
                    return G::Seq(vec![lit("["), rule("ws"), lit("]")]);
                }
                let more = G::Rep(
                    Box::new(G::Seq(vec![rule("ws"), lit(","), rule("ws"), item.clone()])),
                    min.saturating_sub(1),
                    max.map(|m| m - 1),
                );
                let items = G::Seq(vec![item, more]);
                let body = G::Seq(vec![
                    lit("["),
                    rule("ws"),
                    if min == 0 { opt(items) } else { items },
                    rule("ws"),
                    lit("]"),
                ]);
                self.define(hint, body)
            }
            "object" => self.object(s, hint),
            _ => rule("value"),
        }
    }

    /// An object with its declared properties only, required ones always, in the schema's
    /// order. With no declared properties and extra ones allowed: any object.
    fn object(&mut self, s: &Value, hint: &str) -> G {
        let empty = serde_json::Map::new();
        let props = s
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let required: Vec<&str> = s
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let closed = s.get("additionalProperties") == Some(&Value::Bool(false));
        if props.is_empty() && required.is_empty() && !closed {
            return rule("object");
        }
        // (key, value expression, required), a required name with no schema taking any value.
        let mut members: Vec<(String, G, bool)> = Vec::new();
        for (k, v) in props {
            let val = self.schema(v, &format!("{hint}-{k}"));
            members.push((k.clone(), val, required.contains(&k.as_str())));
        }
        for r in required.iter().filter(|r| !props.contains_key(**r)) {
            members.push((r.to_string(), rule("value"), true));
        }
        let kv = |(k, v, _): &(String, G, bool)| {
            G::Seq(vec![
                G::Lit(Value::String(k.clone()).to_string()),
                rule("ws"),
                lit(":"),
                rule("ws"),
                v.clone(),
            ])
        };
        // after(i): members i.. once one has been written (each behind a comma).
        let after = |i: usize| {
            G::Seq(
                members[i..]
                    .iter()
                    .map(|m| {
                        let c = G::Seq(vec![rule("ws"), lit(","), rule("ws"), kv(m)]);
                        if m.2 {
                            c
                        } else {
                            opt(c)
                        }
                    })
                    .collect(),
            )
        };
        // first(i): members i.. when none has been written yet; a rule per optional member, so
        // the grammar grows with the square of the members, not exponentially.
        let mut first = lit("");
        for i in (0..members.len()).rev() {
            let this = G::Seq(vec![kv(&members[i]), after(i + 1)]);
            first = if members[i].2 {
                this
            } else {
                let alt = G::Alt(vec![this, first]);
                self.define(&format!("{hint}-from-{}", members[i].0), alt)
            };
        }
        let body = G::Seq(vec![lit("{"), rule("ws"), first, rule("ws"), lit("}")]);
        self.define(hint, body)
    }

    fn text(&self) -> String {
        let mut out = String::new();
        for (name, body) in &self.rules {
            out.push_str(name);
            out.push_str(" ::= ");
            out.push_str(&render(body));
            out.push('\n');
        }
        out
    }
}

/// A whole-number bound from an inclusive and an exclusive one, clamped to ±[`LIMIT`]; the
/// tighter wins, rounded inward.
fn bound(inclusive: Option<f64>, exclusive: Option<f64>, lower: bool) -> i64 {
    let lim = LIMIT as f64;
    let inc = inclusive.map(|v| if lower { v.ceil() } else { v.floor() });
    let exc = exclusive.map(|v| {
        if lower {
            v.floor() + 1.0
        } else {
            v.ceil() - 1.0
        }
    });
    let b = match (inc, exc) {
        (Some(a), Some(b)) => {
            if lower {
                a.max(b)
            } else {
                a.min(b)
            }
        }
        (Some(a), None) | (None, Some(a)) => a,
        (None, None) => {
            if lower {
                -lim
            } else {
                lim
            }
        }
    };
    b.clamp(-lim, lim) as i64
}

/// Decimal strings, without leading zeros, of the whole numbers in [lo, hi] (0 ≤ lo ≤ hi).
fn uint_range(lo: u64, hi: u64) -> G {
    let mut alts = Vec::new();
    let (la, lb) = (lo.to_string().len(), hi.to_string().len());
    for len in la..=lb {
        let floor = if len == 1 {
            0
        } else {
            10u64.pow(len as u32 - 1)
        };
        let ceil = 10u64.pow(len as u32) - 1;
        let (a, b) = (lo.max(floor), hi.min(ceil));
        if a <= b {
            alts.push(same_len(a.to_string().as_bytes(), b.to_string().as_bytes()));
        }
    }
    alt(alts)
}

/// Digit strings of one length from a to b, inclusive.
fn same_len(a: &[u8], b: &[u8]) -> G {
    let n = a.len();
    if a == b {
        return G::Lit(String::from_utf8_lossy(a).into_owned());
    }
    if n == 1 {
        return class(a[0], b[0]);
    }
    if a[0] == b[0] {
        return G::Seq(vec![
            G::Lit((a[0] as char).to_string()),
            same_len(&a[1..], &b[1..]),
        ]);
    }
    let rest = n as u32 - 1;
    if a[1..].iter().all(|&c| c == b'0') && b[1..].iter().all(|&c| c == b'9') {
        return G::Seq(vec![class(a[0], b[0]), digits(rest, Some(rest))]);
    }
    let nines = vec![b'9'; n - 1];
    let zeros = vec![b'0'; n - 1];
    let mut alts = vec![G::Seq(vec![
        G::Lit((a[0] as char).to_string()),
        same_len(&a[1..], &nines),
    ])];
    if a[0] + 1 < b[0] {
        alts.push(G::Seq(vec![
            class(a[0] + 1, b[0] - 1),
            digits(rest, Some(rest)),
        ]));
    }
    alts.push(G::Seq(vec![
        G::Lit((b[0] as char).to_string()),
        same_len(&zeros, &b[1..]),
    ]));
    G::Alt(alts)
}

fn alt(mut alts: Vec<G>) -> G {
    if alts.len() == 1 {
        alts.pop().unwrap_or_else(|| lit(""))
    } else {
        G::Alt(alts)
    }
}

/// Whole numbers in [lo, hi] as JSON writes them; `None` when the range is empty.
fn int_range(lo: i64, hi: i64) -> Option<G> {
    if lo > hi {
        return None;
    }
    let mut alts = Vec::new();
    if hi >= 0 {
        alts.push(uint_range(lo.max(0) as u64, hi as u64));
    }
    if lo < 0 {
        let (a, b) = ((-hi).max(1) as u64, lo.unsigned_abs());
        alts.push(G::Seq(vec![lit("-"), uint_range(a, b)]));
    }
    Some(alt(alts))
}

/// Numbers x with lo ≤ x ≤ hi (whole-number bounds), without exponents. A whole part strictly
/// inside the range takes any fraction; a bound itself only `.0`.
fn number_range(lo: i64, hi: i64) -> G {
    let Some(whole) = int_range(lo, hi) else {
        return G::Lit(lo.to_string());
    };
    let frac = || G::Seq(vec![lit("."), digits(1, Some(6))]);
    let mut alts = vec![G::Seq(vec![whole, opt(lit(".0"))])];
    // x = +I.F: lo ≤ I and I + F ≤ hi, so max(lo, 0) ≤ I ≤ hi - 1.
    if lo.max(0) < hi {
        alts.push(G::Seq(vec![
            uint_range(lo.max(0) as u64, (hi - 1) as u64),
            frac(),
        ]));
    }
    // x = -I.F: lo ≤ -(I + F), so I ≤ -lo - 1; -(I + F) ≤ hi, so I ≥ max(-hi, 0).
    if lo < 0 && (-hi).max(0) < -lo {
        alts.push(G::Seq(vec![
            lit("-"),
            uint_range((-hi).max(0) as u64, (-lo - 1) as u64),
            frac(),
        ]));
    }
    alt(alts)
}

fn render(g: &G) -> String {
    match g {
        G::Lit(s) => {
            let mut out = String::from("\"");
            for c in s.chars() {
                match c {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if (c as u32) < 0x20 || c == '\x7f' => {
                        out.push_str(&format!("\\x{:02X}", c as u32))
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
            out
        }
        G::Class(neg, ranges) => {
            let esc = |c: char| match c {
                ']' | '[' | '\\' | '-' | '^' => format!("\\{c}"),
                '\n' => "\\n".into(),
                '\t' => "\\t".into(),
                c if (c as u32) < 0x20 || c == '\x7f' => format!("\\x{:02X}", c as u32),
                c => c.to_string(),
            };
            let mut out = String::from(if *neg { "[^" } else { "[" });
            for &(a, b) in ranges {
                out.push_str(&esc(a));
                if a != b {
                    out.push('-');
                    out.push_str(&esc(b));
                }
            }
            out.push(']');
            out
        }
        G::Seq(parts) => {
            let parts: Vec<String> = parts
                .iter()
                .filter(|p| **p != G::Lit(String::new()))
                .map(|p| match p {
                    G::Alt(_) => format!("({})", render(p)),
                    _ => render(p),
                })
                .collect();
            if parts.is_empty() {
                "\"\"".into()
            } else {
                parts.join(" ")
            }
        }
        G::Alt(alts) => alts.iter().map(render).collect::<Vec<_>>().join(" | "),
        G::Rep(inner, min, max) => {
            let r = render(inner);
            let atom = match **inner {
                G::Lit(_) | G::Class(..) | G::Ref(_) => r,
                _ => format!("({r})"),
            };
            let suffix = match (min, max) {
                (0, Some(1)) => "?".to_string(),
                (0, None) => "*".to_string(),
                (1, None) => "+".to_string(),
                (m, None) => format!("{{{m},}}"),
                (m, Some(n)) if m == n => format!("{{{m}}}"),
                (m, Some(n)) => format!("{{{m},{n}}}"),
            };
            format!("{atom}{suffix}")
        }
        G::Ref(name) => name.clone(),
    }
}

/// The grammar of a constrained reply: `{"answer": text}`, or `{"name": tool, "arguments": …}`
/// for one of `tools` with arguments its schema accepts. Byte-stable: the same tools give the
/// same grammar.
pub fn reply_grammar(tools: &[&ToolSpec]) -> String {
    reply(tools).text()
}

fn reply(tools: &[&ToolSpec]) -> Grammar {
    let mut g = Grammar::base();
    let key = |k: &str| {
        G::Seq(vec![
            G::Lit(format!("\"{k}\"")),
            rule("ws"),
            lit(":"),
            rule("ws"),
        ])
    };
    let mut alts = vec![G::Seq(vec![key("answer"), rule("string")])];
    for t in tools {
        let args = g.schema(&t.params_json(), &format!("{}-args", t.name));
        let body = G::Seq(vec![
            key("name"),
            G::Lit(Value::String(t.name.to_string()).to_string()),
            rule("ws"),
            lit(","),
            rule("ws"),
            key("arguments"),
            args,
        ]);
        alts.push(g.define(&format!("call-{}", t.name), body));
    }
    g.rules[0].1 = G::Seq(vec![
        lit("{"),
        rule("ws"),
        G::Alt(alts),
        rule("ws"),
        lit("}"),
    ]);
    g
}

#[cfg(test)]
mod tests {
    use super::*;

    impl Grammar {
        fn body(&self, name: &str) -> &G {
            &self.rules.iter().find(|(n, _)| n == name).expect(name).1
        }

        /// Every end position of a match of `g` in `s` from `at`.
        fn ends(&self, g: &G, s: &[char], at: usize) -> Vec<usize> {
            let mut out = match g {
                G::Lit(l) => {
                    let l: Vec<char> = l.chars().collect();
                    if s[at..].starts_with(&l) {
                        vec![at + l.len()]
                    } else {
                        vec![]
                    }
                }
                G::Class(neg, ranges) => match s.get(at) {
                    Some(c) if ranges.iter().any(|&(a, b)| (a..=b).contains(c)) != *neg => {
                        vec![at + 1]
                    }
                    _ => vec![],
                },
                G::Seq(parts) => parts.iter().fold(vec![at], |pos, p| {
                    pos.iter().flat_map(|&q| self.ends(p, s, q)).collect()
                }),
                G::Alt(alts) => alts.iter().flat_map(|a| self.ends(a, s, at)).collect(),
                G::Rep(inner, min, max) => {
                    // Positions after exactly k repetitions; once k ≥ min, a position seen
                    // before gives nothing new (it had at least as many repetitions left).
                    let (mut out, mut seen) = (Vec::new(), std::collections::HashSet::new());
                    let (mut frontier, mut k) = (vec![at], 0);
                    loop {
                        if k >= *min {
                            frontier.retain(|p| seen.insert(*p));
                            out.extend(&frontier);
                        }
                        if frontier.is_empty() || max.is_some_and(|m| k >= m) {
                            break;
                        }
                        frontier = frontier
                            .iter()
                            .flat_map(|&q| self.ends(inner, s, q))
                            .collect();
                        frontier.sort();
                        frontier.dedup();
                        k += 1;
                    }
                    out
                }
                G::Ref(n) => self.ends(self.body(n), s, at),
            };
            out.sort();
            out.dedup();
            out
        }

        fn accepts(&self, text: &str) -> bool {
            let s: Vec<char> = text.chars().collect();
            self.ends(self.body("root"), &s, 0).contains(&s.len())
        }

        /// A random sentence of `g`: the grammar run forwards.
        fn sample(&self, g: &G, rng: &mut fastrand::Rng, depth: u32, out: &mut String) {
            match g {
                G::Lit(l) => out.push_str(l),
                G::Class(neg, ranges) => {
                    let c = if *neg {
                        let pool = ['a', 'Z', '7', ' ', 'é', '°', '{', '\''];
                        let ok: Vec<char> = pool
                            .into_iter()
                            .filter(|c| !ranges.iter().any(|&(a, b)| (a..=b).contains(c)))
                            .collect();
                        ok[rng.usize(..ok.len())]
                    } else {
                        let (a, b) = ranges[rng.usize(..ranges.len())];
                        char::from_u32(rng.u32(a as u32..=b as u32)).unwrap_or(a)
                    };
                    out.push(c);
                }
                G::Seq(parts) => parts.iter().for_each(|p| self.sample(p, rng, depth, out)),
                G::Alt(alts) => {
                    let i = if depth > 6 {
                        0
                    } else {
                        rng.usize(..alts.len())
                    };
                    self.sample(&alts[i], rng, depth, out)
                }
                G::Rep(inner, min, max) => {
                    let top = max.unwrap_or(min + 3).min(min + 3);
                    for _ in 0..rng.u32(*min..=top) {
                        self.sample(inner, rng, depth, out)
                    }
                }
                G::Ref(n) => self.sample(self.body(n), rng, depth + 1, out),
            }
        }
    }

    fn with_root(g: G) -> Grammar {
        let mut gr = Grammar::base();
        gr.rules[0].1 = g;
        gr
    }

    #[test]
    fn integer_ranges_are_exact() {
        for (lo, hi) in [
            (0, 1),
            (-40, 85),
            (1, 100),
            (7, 7),
            (-300, -12),
            (0, 1023),
            (95, 1205),
        ] {
            let g = with_root(int_range(lo, hi).unwrap());
            for x in -1300..1300 {
                assert_eq!(
                    g.accepts(&x.to_string()),
                    (lo..=hi).contains(&x),
                    "{x} in [{lo},{hi}]"
                );
            }
            assert!(!g.accepts("01") && !g.accepts("-0") && !g.accepts("1.5"));
        }
    }

    #[test]
    fn number_ranges_are_exact() {
        for (lo, hi) in [(0, 1), (-40, 85), (0, 100), (-5, -2), (3, 3)] {
            let g = with_root(number_range(lo, hi));
            for tenths in -600..1000 {
                let x = tenths as f64 / 10.0;
                let text = format!("{x:.1}");
                let inside = (lo as f64..=hi as f64).contains(&x);
                assert_eq!(g.accepts(&text), inside, "{text} in [{lo},{hi}]");
            }
            assert_eq!(g.accepts("0.25"), lo <= 0 && hi >= 1);
            assert!(!g.accepts("1e2") && !g.accepts("1."));
        }
    }

    #[test]
    fn non_integer_bounds_narrow_inward() {
        assert_eq!(bound(Some(0.5), None, true), 1);
        assert_eq!(bound(Some(2.5), None, false), 2);
        assert_eq!(bound(None, Some(0.0), true), 1);
        assert_eq!(bound(Some(0.0), Some(3.0), false), 0);
        assert_eq!(bound(None, None, false), LIMIT);
    }

    fn tool(name: &str) -> &'static ToolSpec {
        covo_core::catalog::all().find(|t| t.name == name).unwrap()
    }

    #[test]
    fn a_reply_is_an_answer_or_a_call_with_arguments_in_range() {
        let g = reply(&[tool("pwm_set"), tool("sensor_read")]);
        assert!(g.accepts(r#"{"answer": "21 \u00b0C, \"warm\""}"#));
        let schema = tool("pwm_set").params_json();
        let duty = &schema["properties"]["duty"];
        assert_eq!(
            duty["maximum"], 1,
            "the test assumes pwm_set's duty is in [0, 1]: {schema}"
        );
        let call = |args: &str| format!(r#"{{"name": "pwm_set", "arguments": {args}}}"#);
        let required: Vec<&str> = schema["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let mut good = serde_json::Map::new();
        for r in &required {
            let v = match *r {
                "duty" => serde_json::json!(0.5),
                _ => serde_json::json!(1),
            };
            good.insert(r.to_string(), v);
        }
        let good_text = Value::Object(good.clone()).to_string();
        assert!(g.accepts(&call(&good_text)), "{good_text}");
        let mut over = good.clone();
        over.insert("duty".into(), serde_json::json!(10));
        assert!(!g.accepts(&call(&Value::Object(over).to_string())));
        let mut extra = good.clone();
        extra.insert("zzz".into(), serde_json::json!(1));
        assert!(!g.accepts(&call(&Value::Object(extra).to_string())));
        assert!(
            !g.accepts(r#"{"name": "gpio_write", "arguments": {}}"#),
            "a tool not sent"
        );
        assert!(!g.accepts("plain text"));
    }

    /// The property that matters: whatever the grammar lets a model write, for every tool of the
    /// catalog, is a JSON call whose arguments validate against that tool's schema.
    #[test]
    fn every_reply_the_grammar_admits_validates_for_every_catalog_tool() {
        let mut rng = fastrand::Rng::with_seed(26);
        for t in covo_core::catalog::all() {
            let g = reply(&[t]);
            let schema = t.params_json();
            let validator = jsonschema::validator_for(&schema).unwrap();
            let call = g
                .body(&format!("call-{}", t.name).replace('_', "-"))
                .clone();
            for _ in 0..60 {
                let mut text = String::from("{");
                g.sample(&call, &mut rng, 0, &mut text);
                text.push('}');
                let v: Value = serde_json::from_str(&text)
                    .unwrap_or_else(|e| panic!("{}: not JSON ({e}): {text}", t.name));
                assert_eq!(v["name"], t.name);
                let errors: Vec<String> = validator
                    .iter_errors(&v["arguments"])
                    .map(|e| e.to_string())
                    .collect();
                assert!(errors.is_empty(), "{}: {text}: {errors:?}", t.name);
                assert!(
                    g.accepts(&text),
                    "{}: the matcher refuses what the grammar wrote: {text}",
                    t.name
                );
            }
        }
    }

    #[test]
    fn the_grammar_is_byte_stable_and_every_rule_it_names_is_defined() {
        let tools: Vec<&ToolSpec> = covo_core::catalog::all().collect();
        let a = reply_grammar(&tools);
        assert_eq!(a, reply_grammar(&tools));
        let defined: Vec<&str> = a
            .lines()
            .map(|l| l.split(" ::= ").next().unwrap())
            .collect();
        let mut sorted = defined.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), defined.len(), "a rule defined twice");
        for name in a.lines().flat_map(|l| {
            let body = l.split_once(" ::= ").unwrap().1;
            // Rule names outside literals and classes.
            let mut names = Vec::new();
            let (mut in_lit, mut in_class, mut esc) = (false, false, false);
            let mut cur = String::new();
            for c in body.chars() {
                if esc {
                    esc = false;
                    continue;
                }
                match c {
                    '\\' if in_lit || in_class => esc = true,
                    '"' if !in_class => in_lit = !in_lit,
                    '[' if !in_lit => in_class = true,
                    ']' if in_class => in_class = false,
                    c if !in_lit && !in_class && (c.is_ascii_alphanumeric() || c == '-') => {
                        cur.push(c)
                    }
                    _ => {
                        if !cur.is_empty() {
                            names.push(std::mem::take(&mut cur));
                        }
                    }
                }
            }
            if !cur.is_empty() {
                names.push(cur);
            }
            names
        }) {
            if name.chars().all(|c| c.is_ascii_digit() || c == ',') {
                continue; // a repetition count
            }
            assert!(
                defined.contains(&name.as_str()),
                "{name} is used, not defined"
            );
        }
        assert!(a.len() < 200_000, "{} bytes", a.len());
    }
}
