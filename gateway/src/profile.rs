//! Profiles: which tools the agent owns. Pruning happens once, at registration, as a whitelist.

use crate::config::ProfileConfig;
use crate::spec::{Profiles, ToolDef};
use std::collections::BTreeMap;
use wildmatch::WildMatch;

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
    /// User profiles whose `base` chain loops.
    #[error("profile cycle: {0}")]
    Cycle(String),
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
    pub tools: Vec<&'static ToolDef>,
}

impl Owned {
    /// The owned tool with this name.
    pub fn get(&self, name: &str) -> Option<&'static ToolDef> {
        self.tools.iter().copied().find(|t| t.spec.name == name)
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
    catalog: &[&'static ToolDef],
    name: &str,
    user: &BTreeMap<String, ProfileConfig>,
) -> Result<Owned, ProfileError> {
    let mut chain = Vec::new();
    let tools = resolve_inner(catalog, name, user, &mut chain)?;
    Ok(Owned {
        profile: name.to_string(),
        tools,
    })
}

fn resolve_inner(
    catalog: &[&'static ToolDef],
    name: &str,
    user: &BTreeMap<String, ProfileConfig>,
    chain: &mut Vec<String>,
) -> Result<Vec<&'static ToolDef>, ProfileError> {
    if chain.iter().any(|c| c == name) {
        chain.push(name.to_string());
        return Err(ProfileError::Cycle(chain.join(" -> ")));
    }
    // A user profile may shadow nothing built in: built-ins are the fixed vocabulary.
    if let Some(mask) = builtin_mask(name) {
        return Ok(catalog
            .iter()
            .copied()
            .filter(|t| mask.is_none_or(|m| t.spec.profiles.contains(m)))
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
    let mut owned = resolve_inner(catalog, base, user, chain)?;
    chain.pop();
    let patterns = |list: &[String]| -> Result<Vec<WildMatch>, ProfileError> {
        list.iter()
            .map(|p| {
                let m = WildMatch::new(p);
                if catalog.iter().any(|t| m.matches(t.spec.name)) {
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
        if allow.iter().any(|m| m.matches(t.spec.name))
            && !owned.iter().any(|o| o.spec.name == t.spec.name)
        {
            owned.push(t);
        }
    }
    owned.retain(|t| !deny.iter().any(|m| m.matches(t.spec.name)));
    // Keep catalog order whatever the base/allow order was, so payloads stay byte-stable.
    owned.sort_by_key(|t| catalog.iter().position(|c| c.spec.name == t.spec.name));
    Ok(owned)
}
