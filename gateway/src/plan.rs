//! The visibility plan: which tools the model sees on one call. A pure function of the owned
//! tools (catalog after profile pruning), the active toolsets, the platform and availability.
//! No I/O, no clock: the same inputs give the same plan, byte for byte.

use crate::profile::Owned;
use crate::spec::{Availability, ToolDef};
use crate::toolset::{platform_default, ToolsetError, Toolsets};
use serde_json::{json, Value};
use std::collections::BTreeMap;

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
    pub visible: Vec<&'static ToolDef>,
}

/// Builds the plan: the active toolsets expanded, restricted to the owned tools, and to those
/// `available` says can run. The order is the toolsets' depth-first expansion order.
pub fn plan(
    owned: &Owned,
    toolsets: &Toolsets,
    active: &[String],
    available: &dyn Fn(&ToolDef) -> Availability,
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
pub fn core_only(owned: &Owned, available: &dyn Fn(&ToolDef) -> Availability) -> Plan {
    Plan {
        visible: owned
            .tools
            .iter()
            .copied()
            .filter(|t| t.spec.toolset == "core" && available(t).available)
            .collect(),
    }
}

/// The wire format of a `tools` array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// OpenAI Chat Completions: `{"type":"function","function":{name,description,parameters}}`.
    Openai,
    /// Anthropic Messages: `{name,description,input_schema}`.
    Anthropic,
}

/// Renders tools as the `tools` array of one model request.
pub fn render(tools: &[&ToolDef], format: Format) -> Value {
    Value::Array(
        tools
            .iter()
            .map(|t| match format {
                Format::Openai => json!({
                    "type": "function",
                    "function": {
                        "name": t.spec.name,
                        "description": t.spec.description,
                        "parameters": t.spec.params_json(),
                    }
                }),
                Format::Anthropic => json!({
                    "name": t.spec.name,
                    "description": t.spec.description,
                    "input_schema": t.spec.params_json(),
                }),
            })
            .collect(),
    )
}
