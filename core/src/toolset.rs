//! Toolsets: named groups of tools. Basic toolsets come from the specs; composites `include`
//! others and expand depth-first, de-duplicated, in a deterministic order. Cycles and unknown
//! names are errors that name the path, never a silent empty set.

use crate::spec::ToolSpec;
use serde::Deserialize;
use serde::Serialize;
use std::collections::BTreeMap;

/// A user toolset: tools and/or other toolsets it includes.
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ToolsetConfig {
    /// Tool names.
    #[serde(default)]
    pub tools: Vec<String>,
    /// Names of toolsets to include.
    #[serde(default)]
    pub includes: Vec<String>,
}

/// The prefix of an external (MCP) server's basic toolset: `mcp_SERVER`.
pub const MCP_TOOLSET_PREFIX: &str = "mcp_";

/// The composite of the board's toolsets (`board`, `i2c`, … `display`).
pub const HARDWARE: &str = "hardware";

/// The built-in composite toolsets and what they include, in order.
pub const COMPOSITES: &[(&str, &[&str])] = &[
    (
        HARDWARE,
        &[
            "board", "i2c", "spi", "serial", "gpio", "sensors", "mcu", "display",
        ],
    ),
    (
        "coding",
        &["fs", "search", "shell", "git", "patch", "docs", "code_exec"],
    ),
    ("creative", &["media", "voice", "web"]),
    ("edge", &["core", "discovery", "hardware"]),
    (
        "full",
        &[
            "core",
            "discovery",
            "memory",
            "productivity",
            "automation",
            "coding",
            "creative",
            "messaging",
            "delegation",
            "skills",
            "mqtt",
            "system",
            "hardware",
        ],
    ),
];

/// The built-in platform defaults: the toolsets the filter applies before each model call.
pub const PLATFORM_DEFAULTS: &[(&str, &[&str])] = &[
    ("gateway", &["edge"]),
    (
        "code",
        &["coding", "web", "memory", "skills", "productivity"],
    ),
    ("minimal", &["fs", "search", "shell"]),
];

/// The default for every platform not in [`PLATFORM_DEFAULTS`].
pub const OTHER_PLATFORMS: &[&str] = &["full"];

/// Errors resolving toolsets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ToolsetError {
    /// An include chain loops back on itself: the loop, starting and ending with the same name.
    #[error("toolset cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// A toolset name that does not exist; `path` shows where it was included from.
    #[error("unknown toolset '{name}'{}", via(path))]
    Unknown {
        /// The missing name.
        name: String,
        /// The include chain that led to it (empty at top level).
        path: String,
    },
    /// A user toolset lists a tool that is not in the catalog.
    #[error("toolset '{toolset}' lists unknown tool '{tool}'")]
    UnknownTool {
        /// The toolset.
        toolset: String,
        /// The tool.
        tool: String,
    },
    /// A user toolset reuses a built-in name.
    #[error("toolset '{0}' is built in and cannot be redefined")]
    Redefined(String),
}

fn via(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" (included by {path})")
    }
}

/// What kind of toolset a name is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Holds tools directly; every tool is in exactly one.
    Basic,
    /// Includes other toolsets.
    Composite,
    /// Defined in config.
    User,
}

/// One toolset's definition.
#[derive(Debug, Clone, Serialize)]
pub struct Toolset {
    /// Its name.
    pub name: String,
    /// Basic, composite or user.
    pub kind: Kind,
    /// Tools listed directly.
    pub tools: Vec<String>,
    /// Toolsets included, in order.
    pub includes: Vec<String>,
}

/// Every toolset known: built-in basic and composite, and the user's.
#[derive(Debug, Clone)]
pub struct Toolsets {
    sets: BTreeMap<String, Toolset>,
    order: Vec<String>,
}

impl Toolsets {
    /// The built-in toolsets over `catalog`, plus the user's from config.
    pub fn new(
        catalog: &[&'static ToolSpec],
        user: &BTreeMap<String, ToolsetConfig>,
    ) -> Result<Toolsets, ToolsetError> {
        Self::new_with(catalog, user, &[])
    }

    /// Like [`Toolsets::new`], with the external (MCP) servers of the configuration: each has a
    /// basic toolset `mcp_SERVER` (empty while its tools are unknown), and a user toolset may
    /// list a tool `SERVER__name` whether or not it is known yet.
    pub fn new_with(
        catalog: &[&'static ToolSpec],
        user: &BTreeMap<String, ToolsetConfig>,
        external: &[String],
    ) -> Result<Toolsets, ToolsetError> {
        let mut ts = Toolsets {
            sets: BTreeMap::new(),
            order: Vec::new(),
        };
        for t in catalog {
            let name = t.toolset;
            if !ts.sets.contains_key(name) {
                ts.insert(Toolset {
                    name: name.to_string(),
                    kind: Kind::Basic,
                    tools: Vec::new(),
                    includes: Vec::new(),
                });
            }
            if let Some(set) = ts.sets.get_mut(name) {
                set.tools.push(t.name.to_string());
            }
        }
        for server in external {
            let name = format!("{MCP_TOOLSET_PREFIX}{server}");
            if !ts.sets.contains_key(&name) {
                ts.insert(Toolset {
                    name,
                    kind: Kind::Basic,
                    tools: Vec::new(),
                    includes: Vec::new(),
                });
            }
        }
        for (name, includes) in COMPOSITES {
            ts.insert(Toolset {
                name: name.to_string(),
                kind: Kind::Composite,
                tools: Vec::new(),
                includes: includes.iter().map(|s| s.to_string()).collect(),
            });
        }
        for (name, cfg) in user {
            if ts.sets.contains_key(name) {
                return Err(ToolsetError::Redefined(name.clone()));
            }
            let external_tool = |n: &str| {
                external.iter().any(|s| {
                    n.strip_prefix(s.as_str())
                        .is_some_and(|r| r.starts_with("__"))
                })
            };
            if let Some(bad) = cfg
                .tools
                .iter()
                .find(|n| !catalog.iter().any(|t| t.name == n.as_str()) && !external_tool(n))
            {
                return Err(ToolsetError::UnknownTool {
                    toolset: name.clone(),
                    tool: bad.clone(),
                });
            }
            ts.insert(Toolset {
                name: name.clone(),
                kind: Kind::User,
                tools: cfg.tools.clone(),
                includes: cfg.includes.clone(),
            });
        }
        Ok(ts)
    }

    fn insert(&mut self, t: Toolset) {
        self.order.push(t.name.clone());
        self.sets.insert(t.name.clone(), t);
    }

    /// Every toolset in definition order: basic (catalog order), composite, user.
    pub fn iter(&self) -> impl Iterator<Item = &Toolset> {
        self.order.iter().filter_map(|n| self.sets.get(n))
    }

    /// The toolset with this name.
    pub fn get(&self, name: &str) -> Option<&Toolset> {
        self.sets.get(name)
    }

    /// The tool names of `names`, expanded depth-first: a toolset's own tools, then each include
    /// in order. The first occurrence of a tool wins.
    pub fn resolve(&self, names: &[impl AsRef<str>]) -> Result<Vec<String>, ToolsetError> {
        let mut out = Vec::new();
        let mut stack = Vec::new();
        for n in names {
            self.expand(n.as_ref(), &mut stack, &mut out)?;
        }
        Ok(out)
    }

    fn expand(
        &self,
        name: &str,
        stack: &mut Vec<String>,
        out: &mut Vec<String>,
    ) -> Result<(), ToolsetError> {
        if stack.iter().any(|s| s == name) {
            let mut path = stack.clone();
            path.push(name.to_string());
            let start = path.iter().position(|s| s == name).unwrap_or(0);
            return Err(ToolsetError::Cycle(path[start..].to_vec()));
        }
        let Some(set) = self.sets.get(name) else {
            return Err(ToolsetError::Unknown {
                name: name.to_string(),
                path: stack.join(" -> "),
            });
        };
        for t in &set.tools {
            if !out.contains(t) {
                out.push(t.clone());
            }
        }
        stack.push(name.to_string());
        for inc in &set.includes {
            self.expand(inc, stack, out)?;
        }
        stack.pop();
        Ok(())
    }

    /// Checks that every toolset resolves (no cycles, no unknown includes).
    pub fn validate(&self) -> Result<(), ToolsetError> {
        for name in &self.order {
            self.resolve(&[name])?;
        }
        Ok(())
    }
}

/// The default toolsets of a platform, with config overrides applied.
pub fn platform_default(platform: &str, overrides: &BTreeMap<String, Vec<String>>) -> Vec<String> {
    if let Some(v) = overrides.get(platform) {
        return v.clone();
    }
    PLATFORM_DEFAULTS
        .iter()
        .find(|(p, _)| *p == platform)
        .map(|(_, sets)| *sets)
        .unwrap_or(OTHER_PLATFORMS)
        .iter()
        .map(|s| s.to_string())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<&'static ToolSpec> {
        crate::catalog::all().collect()
    }

    fn user(defs: &[(&str, &[&str], &[&str])]) -> BTreeMap<String, ToolsetConfig> {
        defs.iter()
            .map(|(n, tools, inc)| {
                (
                    n.to_string(),
                    ToolsetConfig {
                        tools: tools.iter().map(|s| s.to_string()).collect(),
                        includes: inc.iter().map(|s| s.to_string()).collect(),
                    },
                )
            })
            .collect()
    }

    #[test]
    fn a_cycle_is_an_error_that_names_the_path() {
        let ts =
            Toolsets::new(&catalog(), &user(&[("a", &[], &["b"]), ("b", &[], &["a"])])).unwrap();
        let err = ts.resolve(&["a"]).unwrap_err();
        assert_eq!(err.to_string(), "toolset cycle: a -> b -> a");
        assert!(ts.validate().is_err());
    }

    #[test]
    fn a_self_include_is_a_cycle() {
        let ts = Toolsets::new(&catalog(), &user(&[("loop", &["gpio_read"], &["loop"])])).unwrap();
        assert_eq!(
            ts.resolve(&["loop"]).unwrap_err().to_string(),
            "toolset cycle: loop -> loop"
        );
    }

    #[test]
    fn an_unknown_include_names_where_it_was_included_from() {
        let ts = Toolsets::new(
            &catalog(),
            &user(&[("outer", &[], &["inner"]), ("inner", &[], &["nope"])]),
        )
        .unwrap();
        let err = ts.resolve(&["outer"]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown toolset 'nope' (included by outer -> inner)"
        );
        assert_eq!(
            ts.resolve(&["missing"]).unwrap_err().to_string(),
            "unknown toolset 'missing'"
        );
    }

    #[test]
    fn expansion_is_depth_first_deduplicated_and_deterministic() {
        let ts = Toolsets::new(
            &catalog(),
            &user(&[("bench", &["sensor_read", "gpio_read"], &["gpio", "sensors"])]),
        )
        .unwrap();
        let got = ts.resolve(&["bench"]).unwrap();
        assert_eq!(
            got,
            [
                "sensor_read",
                "gpio_read",
                "gpio_write",
                "gpio_wait_edge",
                "pwm_set",
                "sensor_list",
                "sensor_history",
                "sensor_export_csv"
            ]
        );
        assert_eq!(got, ts.resolve(&["bench"]).unwrap());
        // Overlapping composites do not duplicate: edge already includes core.
        let both = ts.resolve(&["edge", "core"]).unwrap();
        assert_eq!(both.len(), 41);
    }

    #[test]
    fn an_external_server_has_its_basic_toolset_even_before_its_tools_are_known() {
        let ext = ["time".to_string()];
        let ts = Toolsets::new_with(
            &catalog(),
            &user(&[("clock", &["time__now"], &["mcp_time", "core"])]),
            &ext,
        )
        .unwrap();
        assert_eq!(ts.get("mcp_time").unwrap().kind, Kind::Basic);
        assert!(ts
            .resolve(&["clock"])
            .unwrap()
            .contains(&"time__now".to_string()));
        assert!(
            Toolsets::new(&catalog(), &user(&[("c", &[], &["mcp_time"])]))
                .unwrap()
                .validate()
                .is_err()
        );
    }

    #[test]
    fn a_user_toolset_cannot_list_an_unknown_tool_or_redefine_a_builtin() {
        let err = Toolsets::new(&catalog(), &user(&[("x", &["gpio_reed"], &[])])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "toolset 'x' lists unknown tool 'gpio_reed'"
        );
        let err = Toolsets::new(&catalog(), &user(&[("edge", &["gpio_read"], &[])])).unwrap_err();
        assert!(matches!(err, ToolsetError::Redefined(n) if n == "edge"));
    }

    #[test]
    fn platform_defaults_follow_the_catalog_and_config_overrides_them() {
        let none = BTreeMap::new();
        assert_eq!(platform_default("gateway", &none), ["edge"]);
        assert_eq!(
            platform_default("code", &none),
            ["coding", "web", "memory", "skills", "productivity"]
        );
        assert_eq!(
            platform_default("minimal", &none),
            ["fs", "search", "shell"]
        );
        assert_eq!(platform_default("discord", &none), ["full"]);
        let mut o = BTreeMap::new();
        o.insert(
            "gateway".to_string(),
            vec!["core".to_string(), "gpio".to_string()],
        );
        assert_eq!(platform_default("gateway", &o), ["core", "gpio"]);
    }
}
