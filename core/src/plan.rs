//! The visibility plan: which tools the model sees on one call. A pure function of the owned
//! tools (catalog after profile pruning), the active toolsets, the platform and availability.
//! No I/O, no clock: the same inputs give the same plan, byte for byte.

use crate::profile::Owned;
use crate::spec::{Availability, ToolSpec};
use crate::toolset::{platform_default, ToolsetError, Toolsets};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Which toolsets are active for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// The platform's default toolsets (`gateway` → `edge`, ...).
    Platform(String),
    /// These toolsets, explicitly.
    Toolsets(Vec<String>),
}

impl Selection {
    /// The toolset names this selection stands for.
    pub fn toolsets(&self, platforms: &BTreeMap<String, Vec<String>>) -> Vec<String> {
        match self {
            Selection::Platform(p) => platform_default(p, platforms),
            Selection::Toolsets(t) => t.clone(),
        }
    }
}

/// The tools one model call carries, in a deterministic order.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Visible tools, in toolset-expansion order.
    pub visible: Vec<&'static ToolSpec>,
}

/// Builds the plan: the active toolsets expanded, restricted to the owned tools, and to those
/// `available` says can run. The order is the toolsets' depth-first expansion order.
pub fn plan(
    owned: &Owned,
    toolsets: &Toolsets,
    active: &[String],
    available: &dyn Fn(&ToolSpec) -> Availability,
) -> Result<Plan, ToolsetError> {
    let names = toolsets.resolve(active)?;
    let visible = names
        .iter()
        .filter_map(|n| owned.get(n))
        .filter(|t| available(t).available)
        .collect();
    Ok(Plan { visible })
}

/// The fail-closed plan: the owned, available `core` tools and nothing else.
pub fn core_only(owned: &Owned, available: &dyn Fn(&ToolSpec) -> Availability) -> Plan {
    Plan {
        visible: owned
            .tools
            .iter()
            .copied()
            .filter(|t| t.toolset == "core" && available(t).available)
            .collect(),
    }
}

/// The wire format of a `tools` array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// OpenAI Chat Completions: `{"type":"function","function":{name,description,parameters}}`.
    Openai,
    /// Anthropic Messages: `{name,description,input_schema}`.
    Anthropic,
}

impl Format {
    /// The lowercase name (`openai`, `anthropic`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Openai => "openai",
            Format::Anthropic => "anthropic",
        }
    }
}

impl std::str::FromStr for Format {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "openai" => Ok(Format::Openai),
            "anthropic" => Ok(Format::Anthropic),
            other => Err(format!("unknown format '{other}' (openai, anthropic)")),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many distinct tool lists [`render_raw`] keeps rendered.
pub const RENDER_CACHE: usize = 8;

/// A rendered `tools` array with the tool list and format it was rendered from.
type Rendered = (Format, Vec<usize>, Arc<str>);

/// The rendered lists, most recently used last.
static RENDERED: OnceLock<Mutex<Vec<Rendered>>> = OnceLock::new();

/// The `tools` array of one model request as JSON text, rendered once per distinct tool list
/// and format and shared after that. A gateway sends the same few lists before every model call,
/// and rendering them anew (parsing nothing, but copying every schema twice) was 40% of a turn's
/// overhead with an instant model (issue 27). The last [`RENDER_CACHE`] lists are kept; a list
/// is known by its tools' addresses, which are `'static`.
pub fn render_raw(tools: &[&'static ToolSpec], format: Format) -> Arc<str> {
    let cache = RENDERED.get_or_init(Default::default);
    let key: Vec<usize> = tools
        .iter()
        .map(|t| *t as *const ToolSpec as usize)
        .collect();
    {
        let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(i) = c.iter().position(|(f, k, _)| *f == format && *k == key) {
            // Most recently used last, so the oldest is the one dropped.
            let hit = c.remove(i);
            let raw = hit.2.clone();
            c.push(hit);
            return raw;
        }
    }
    let raw: Arc<str> = render(tools, format).to_string().into();
    let mut c = cache.lock().unwrap_or_else(|p| p.into_inner());
    c.push((format, key, raw.clone()));
    if c.len() > RENDER_CACHE {
        c.remove(0);
    }
    raw
}

/// Renders tools as the `tools` array of one model request.
pub fn render(tools: &[&ToolSpec], format: Format) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| match format {
                Format::Openai => json!({
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.params_json(),
                    }
                }),
                Format::Anthropic => json!({
                    "name": t.name,
                    "description": t.description,
                    "input_schema": t.params_json(),
                }),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profile;
    use crate::spec::Runs;

    fn setup(profile_name: &str) -> (Owned, Toolsets) {
        let cat: Vec<&'static ToolSpec> = crate::catalog::all().collect();
        let owned = profile::resolve(&cat, profile_name, &BTreeMap::new()).unwrap();
        let ts = Toolsets::new(&cat, &BTreeMap::new()).unwrap();
        (owned, ts)
    }

    fn names(p: &Plan) -> Vec<&'static str> {
        p.visible.iter().map(|t| t.name).collect()
    }

    /// Availability as on a gateway with no peer online: peer tools cannot run.
    fn local_only(t: &ToolSpec) -> Availability {
        if t.runs == Runs::Peer {
            Availability::no("no peer online")
        } else {
            Availability::yes()
        }
    }

    fn everything(_: &ToolSpec) -> Availability {
        Availability::yes()
    }

    #[test]
    fn visible_tools_are_owned_selected_and_available_for_every_profile_and_platform() {
        for profile_name in crate::profile::BUILTIN {
            let (owned, ts) = setup(profile_name);
            for platform in ["gateway", "code", "minimal", "web", "mqtt"] {
                let active = platform_default(platform, &BTreeMap::new());
                let selected = ts.resolve(&active).unwrap();
                let p = plan(&owned, &ts, &active, &local_only).unwrap();
                for t in &p.visible {
                    assert!(
                        owned.owns(t.name),
                        "{profile_name}/{platform}: {} not owned",
                        t.name
                    );
                    assert!(selected.iter().any(|s| s == t.name));
                    assert!(t.runs == Runs::Gateway, "unavailable {} shown", t.name);
                }
                // Everything owned, selected and available is shown: nothing is lost either.
                let expected = selected
                    .iter()
                    .filter(|n| owned.get(n).is_some_and(|t| local_only(t).available))
                    .count();
                assert_eq!(p.visible.len(), expected, "{profile_name}/{platform}");
            }
        }
    }

    #[test]
    fn the_gateway_platform_under_full_selects_the_forty_one_edge_tools() {
        let (owned, ts) = setup("full");
        let p = plan(
            &owned,
            &ts,
            &platform_default("gateway", &BTreeMap::new()),
            &everything,
        )
        .unwrap();
        assert_eq!(p.visible.len(), 41);
        assert_eq!(
            names(&p)[..7],
            [
                "conversation_search",
                "send_message",
                "todo_write",
                "plan_update",
                "exit_plan_mode",
                "ask_clarification",
                "structured_output"
            ]
        );
    }

    #[test]
    fn profile_pruning_beats_toolset_selection() {
        let (owned, ts) = setup("minimal");
        let p = plan(&owned, &ts, &["full".to_string()], &everything).unwrap();
        assert_eq!(
            p.visible.len(),
            7,
            "minimal owns 7 tools whatever toolsets are active"
        );
        let (owned, ts) = setup("coding");
        let p = plan(&owned, &ts, &["hardware".to_string()], &everything).unwrap();
        assert!(p.visible.is_empty(), "coding owns no hardware tools");
    }

    #[test]
    fn unavailable_tools_are_never_visible() {
        let (owned, ts) = setup("edge");
        let p = plan(&owned, &ts, &["edge".to_string()], &|t: &ToolSpec| {
            if t.toolset == "i2c" {
                Availability::no("bus down")
            } else {
                Availability::yes()
            }
        })
        .unwrap();
        assert_eq!(p.visible.len(), 36);
        assert!(p.visible.iter().all(|t| t.toolset != "i2c"));
    }

    #[test]
    fn the_payload_is_byte_stable_across_calls() {
        let (owned, ts) = setup("full");
        let active = platform_default("gateway", &BTreeMap::new());
        let a = render(
            &plan(&owned, &ts, &active, &everything).unwrap().visible,
            Format::Openai,
        )
        .to_string();
        let b = render(
            &plan(&owned, &ts, &active, &everything).unwrap().visible,
            Format::Openai,
        )
        .to_string();
        assert_eq!(a, b);
        let anthropic = render(
            &plan(&owned, &ts, &active, &everything).unwrap().visible,
            Format::Anthropic,
        );
        assert_eq!(anthropic[0]["name"], "conversation_search");
        assert!(anthropic[0]["input_schema"].is_object());
        let openai: Value = serde_json::from_str(&a).unwrap();
        assert_eq!(openai[0]["type"], "function");
        assert!(openai[0]["function"]["parameters"].is_object());
    }

    #[test]
    fn the_cached_payload_is_the_rendered_one_for_each_list_and_format() {
        let (owned, ts) = setup("full");
        let full = plan(&owned, &ts, &["full".to_string()], &everything)
            .unwrap()
            .visible;
        let core = plan(&owned, &ts, &["core".to_string()], &everything)
            .unwrap()
            .visible;
        assert_ne!(full.len(), core.len());
        for _ in 0..2 {
            for tools in [&full, &core] {
                for f in [Format::Openai, Format::Anthropic] {
                    let raw = render_raw(tools, f);
                    assert_eq!(*raw, render(tools, f).to_string());
                }
            }
        }
        // A list in another order is another payload.
        let mut reversed = core.clone();
        reversed.reverse();
        assert_eq!(
            *render_raw(&reversed, Format::Openai),
            render(&reversed, Format::Openai).to_string()
        );
        // More lists than the cache keeps: each still comes back right, and the cache stays
        // bounded (the oldest lists are dropped, then rendered again when asked for).
        let lists: Vec<Vec<&'static ToolSpec>> = (1..=RENDER_CACHE + 4)
            .map(|n| full.iter().copied().take(n).collect())
            .collect();
        for _ in 0..2 {
            for l in &lists {
                assert_eq!(
                    *render_raw(l, Format::Openai),
                    render(l, Format::Openai).to_string()
                );
                let kept = RENDERED.get().unwrap().lock().unwrap().len();
                assert!(kept <= RENDER_CACHE, "{kept} lists kept");
            }
        }
    }

    #[test]
    fn an_unknown_toolset_is_an_error_not_an_empty_plan() {
        let (owned, ts) = setup("full");
        let err = plan(&owned, &ts, &["hardwear".to_string()], &everything).unwrap_err();
        assert_eq!(err.to_string(), "unknown toolset 'hardwear'");
    }

    #[test]
    fn the_fail_closed_plan_is_the_owned_available_core_tools() {
        let (owned, _) = setup("edge");
        let p = core_only(&owned, &everything);
        assert_eq!(p.visible.len(), 7);
        assert!(p.visible.iter().all(|t| t.toolset == "core"));
    }
}
