//! Profiles: which tools the agent owns. Pruning happens once, at registration, as a whitelist.

use crate::spec::{Profiles, ToolSpec};
use serde::Deserialize;
use std::collections::BTreeMap;
use wildmatch::WildMatch;

/// A user profile: a base profile, plus tools allowed, minus tools denied (deny wins).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProfileConfig {
    /// The profile this one starts from.
    pub base: Option<String>,
    /// Tool names or wildcard patterns (`mqtt_*`) to add.
    #[serde(default)]
    pub allow: Vec<String>,
    /// Tool names or wildcard patterns to remove; wins over `allow` and the base.
    #[serde(default)]
    pub deny: Vec<String>,
}

/// The built-in profile names.
pub const BUILTIN: &[&str] = &["minimal", "coding", "messaging", "edge", "full"];

/// Errors resolving a profile.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ProfileError {
    /// No such profile, built in or configured.
    #[error("unknown profile '{name}' (known: {known})")]
    Unknown {
        /// The name asked for.
        name: String,
        /// Every known profile, comma-separated.
        known: String,
    },
    /// User profiles whose `base` chain loops: the chain from the profile asked for, ending
    /// with the name that repeats.
    #[error("profile cycle: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// An allow/deny entry that matches no tool: almost always a typo.
    #[error("profile '{profile}': '{pattern}' matches no tool")]
    NoMatch {
        /// The profile.
        profile: String,
        /// The pattern.
        pattern: String,
    },
}

/// The tools one profile owns, in catalog order.
#[derive(Debug, Clone)]
pub struct Owned {
    /// The profile's name.
    pub profile: String,
    /// The owned tools.
    pub tools: Vec<&'static ToolSpec>,
}

impl Owned {
    /// The owned tool with this name.
    pub fn get(&self, name: &str) -> Option<&'static ToolSpec> {
        self.tools.iter().copied().find(|t| t.name == name)
    }

    /// Whether the profile owns the tool.
    pub fn owns(&self, name: &str) -> bool {
        self.get(name).is_some()
    }
}

fn builtin_mask(name: &str) -> Option<Option<Profiles>> {
    Some(match name {
        "minimal" => Some(Profiles::MINIMAL),
        "coding" => Some(Profiles::CODING),
        "messaging" => Some(Profiles::MESSAGING),
        "edge" => Some(Profiles::EDGE),
        "full" => None,
        _ => return None,
    })
}

/// Resolves `name` against the catalog and the user profiles from config.
pub fn resolve(
    catalog: &[&'static ToolSpec],
    name: &str,
    user: &BTreeMap<String, ProfileConfig>,
) -> Result<Owned, ProfileError> {
    resolve_with(catalog, name, user, &[])
}

/// Like [`resolve`], for a catalog that also holds the tools of these external (MCP) servers,
/// named `SERVER__tool`. Their tool lists may not be known yet (a server that never started),
/// so a pattern for a server's tools (`SERVER__*`, `SERVER__name`) is never a dead pattern.
pub fn resolve_with(
    catalog: &[&'static ToolSpec],
    name: &str,
    user: &BTreeMap<String, ProfileConfig>,
    external: &[String],
) -> Result<Owned, ProfileError> {
    let mut chain = Vec::new();
    let tools = resolve_inner(catalog, name, user, external, &mut chain)?;
    Ok(Owned {
        profile: name.to_string(),
        tools,
    })
}

fn resolve_inner(
    catalog: &[&'static ToolSpec],
    name: &str,
    user: &BTreeMap<String, ProfileConfig>,
    external: &[String],
    chain: &mut Vec<String>,
) -> Result<Vec<&'static ToolSpec>, ProfileError> {
    if chain.iter().any(|c| c == name) {
        chain.push(name.to_string());
        return Err(ProfileError::Cycle(chain.clone()));
    }
    // A user profile may shadow nothing built in: built-ins are the fixed vocabulary.
    if let Some(mask) = builtin_mask(name) {
        return Ok(catalog
            .iter()
            .copied()
            .filter(|t| mask.is_none_or(|m| t.profiles.contains(m)))
            .collect());
    }
    let Some(cfg) = user.get(name) else {
        let mut known: Vec<String> = BUILTIN.iter().map(|s| s.to_string()).collect();
        known.extend(user.keys().cloned());
        return Err(ProfileError::Unknown {
            name: name.to_string(),
            known: known.join(", "),
        });
    };
    chain.push(name.to_string());
    let base = cfg.base.as_deref().unwrap_or("minimal");
    let mut owned = resolve_inner(catalog, base, user, external, chain)?;
    chain.pop();
    let patterns = |list: &[String]| -> Result<Vec<WildMatch>, ProfileError> {
        list.iter()
            .map(|p| {
                let m = WildMatch::new(p);
                let external_match = external.iter().any(|s| {
                    let prefix = format!("{s}__");
                    p.starts_with(&prefix) || m.matches(&prefix)
                });
                if external_match || catalog.iter().any(|t| m.matches(t.name)) {
                    Ok(m)
                } else {
                    Err(ProfileError::NoMatch {
                        profile: name.to_string(),
                        pattern: p.clone(),
                    })
                }
            })
            .collect()
    };
    let allow = patterns(&cfg.allow)?;
    let deny = patterns(&cfg.deny)?;
    for t in catalog {
        if allow.iter().any(|m| m.matches(t.name)) && !owned.iter().any(|o| o.name == t.name) {
            owned.push(t);
        }
    }
    owned.retain(|t| !deny.iter().any(|m| m.matches(t.name)));
    // Keep catalog order whatever the base/allow order was, so payloads stay byte-stable.
    owned.sort_by_key(|t| catalog.iter().position(|c| c.name == t.name));
    Ok(owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Vec<&'static ToolSpec> {
        crate::catalog::all().collect()
    }

    fn names(o: &Owned) -> Vec<&'static str> {
        o.tools.iter().map(|t| t.name).collect()
    }

    fn profile(base: &str, allow: &[&str], deny: &[&str]) -> ProfileConfig {
        ProfileConfig {
            base: Some(base.into()),
            allow: allow.iter().map(|s| s.to_string()).collect(),
            deny: deny.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn builtin_profiles_own_their_whitelists() {
        let cat = catalog();
        let none = BTreeMap::new();
        let count = |p: &str| resolve(&cat, p, &none).unwrap().tools.len();
        assert_eq!(count("minimal"), 7);
        assert_eq!(count("full"), 116);
        let edge = resolve(&cat, "edge", &none).unwrap();
        assert!(edge.owns("i2c_scan") && edge.owns("tool_search"));
        assert!(!edge.owns("shell_exec"), "edge must not own coding tools");
        let coding = resolve(&cat, "coding", &none).unwrap();
        assert!(coding.owns("shell_exec") && !coding.owns("gpio_write"));
        let messaging = resolve(&cat, "messaging", &none).unwrap();
        assert!(messaging.owns("kanban_add") && !messaging.owns("fs_read"));
    }

    #[test]
    fn a_user_profile_adds_allowed_wildcards_and_deny_wins() {
        let cat = catalog();
        let mut user = BTreeMap::new();
        user.insert(
            "lab".into(),
            profile("edge", &["mqtt_*", "i2c_write"], &["i2c_write", "mcu_*"]),
        );
        let lab = resolve(&cat, "lab", &user).unwrap();
        assert!(lab.owns("mqtt_publish") && lab.owns("mqtt_retained_get"));
        assert!(!lab.owns("i2c_write"), "deny wins over allow and base");
        assert!(!lab.owns("mcu_info"));
        assert!(lab.owns("i2c_scan"));
        // Catalog order is kept whatever order the patterns came in.
        let order: Vec<_> = names(&lab);
        let mut sorted = order.clone();
        sorted.sort_by_key(|n| cat.iter().position(|t| t.name == *n));
        assert_eq!(order, sorted);
    }

    #[test]
    fn a_user_profile_can_build_on_another_user_profile() {
        let cat = catalog();
        let mut user = BTreeMap::new();
        user.insert("a".into(), profile("minimal", &["gpio_*"], &[]));
        user.insert("b".into(), profile("a", &[], &["gpio_write"]));
        let b = resolve(&cat, "b", &user).unwrap();
        assert!(b.owns("gpio_read") && !b.owns("gpio_write") && b.owns("todo_write"));
    }

    #[test]
    fn a_pattern_for_an_external_servers_tools_is_never_dead() {
        let cat = catalog();
        let mut user = BTreeMap::new();
        user.insert("t".into(), profile("edge", &[], &["time__*"]));
        assert!(resolve(&cat, "t", &user).is_err());
        let ext = ["time".to_string()];
        let t = resolve_with(&cat, "t", &user, &ext).unwrap();
        assert!(t.owns("i2c_scan"));
        user.insert("u".into(), profile("edge", &["timer__*"], &[]));
        assert!(resolve_with(&cat, "u", &user, &ext).is_err());
    }

    #[test]
    fn unknown_profiles_cycles_and_dead_patterns_are_errors() {
        let cat = catalog();
        let none = BTreeMap::new();
        let err = resolve(&cat, "edgy", &none).unwrap_err();
        assert!(
            err.to_string().starts_with("unknown profile 'edgy'"),
            "{err}"
        );
        let mut user = BTreeMap::new();
        user.insert("x".into(), profile("y", &[], &[]));
        user.insert("y".into(), profile("x", &[], &[]));
        assert_eq!(
            resolve(&cat, "x", &user).unwrap_err().to_string(),
            "profile cycle: x -> y -> x"
        );
        let mut user = BTreeMap::new();
        user.insert("t".into(), profile("edge", &["gpoi_*"], &[]));
        assert!(matches!(
            resolve(&cat, "t", &user).unwrap_err(),
            ProfileError::NoMatch { .. }
        ));
    }
}
