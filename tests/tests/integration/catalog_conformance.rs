//! The registry matches the catalog (`tests/fixtures/catalog.toml`, a copy of the product spec)
//! exactly: names, toolsets, profiles, runs, effects, composites and platform defaults.

use covo::spec::ToolSpec;
use covo::toolset::{Kind, Toolsets, COMPOSITES, OTHER_PLATFORMS, PLATFORM_DEFAULTS};
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Deserialize)]
struct Catalog {
    tool: Vec<CatalogTool>,
    composite: BTreeMap<String, Composite>,
    platform: BTreeMap<String, Vec<String>>,
}

#[derive(Deserialize)]
struct CatalogTool {
    name: String,
    toolset: String,
    profiles: Vec<String>,
    runs: String,
    effect: String,
}

#[derive(Deserialize)]
struct Composite {
    includes: Vec<String>,
}

fn catalog() -> Catalog {
    let text = include_str!("../../fixtures/catalog.toml");
    toml::from_str(text).expect("catalog fixture parses")
}

/// The catalog as the pure core holds it: every spec, in catalog order.
fn registry() -> Vec<&'static ToolSpec> {
    covo_core::catalog::all().collect()
}

#[test]
fn the_gateway_binds_exactly_one_executor_to_every_catalog_spec_in_order() {
    let bound: Vec<&'static ToolSpec> = covo::tools::all().map(|d| d.spec).collect();
    let specs = registry();
    assert_eq!(bound.len(), specs.len());
    for (b, s) in bound.iter().zip(&specs) {
        // The same static: the gateway refers to the catalog entry, it does not copy it.
        assert!(
            std::ptr::eq(*b, *s),
            "{} is bound out of order or copied",
            s.name
        );
    }
}

#[test]
fn registry_has_exactly_the_catalog_tools_in_catalog_order() {
    let cat = catalog();
    let names: Vec<&str> = registry().iter().map(|t| t.name).collect();
    let expected: Vec<&str> = cat.tool.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names.len(), 116);
    assert_eq!(names, expected);
}

#[test]
fn every_tool_matches_its_catalog_line() {
    let cat = catalog();
    for (def, line) in registry().iter().zip(&cat.tool) {
        let s = *def;
        assert_eq!(s.toolset, line.toolset, "{}: toolset", s.name);
        assert_eq!(s.runs.as_str(), line.runs, "{}: runs", s.name);
        assert_eq!(s.effect.as_str(), line.effect, "{}: effect", s.name);
        assert_eq!(s.profiles.names(), line.profiles, "{}: profiles", s.name);
    }
}

#[test]
fn tool_names_are_unique() {
    let names: BTreeSet<&str> = registry().iter().map(|t| t.name).collect();
    assert_eq!(names.len(), registry().len());
}

#[test]
fn every_tool_is_in_exactly_one_basic_toolset_and_none_is_orphaned() {
    let reg = registry();
    let ts = Toolsets::new(&reg, &BTreeMap::new()).unwrap();
    let basics: Vec<_> = ts.iter().filter(|t| t.kind == Kind::Basic).collect();
    assert_eq!(basics.len(), 28);
    for def in &reg {
        let homes: Vec<_> = basics
            .iter()
            .filter(|b| b.tools.iter().any(|n| n == def.name))
            .map(|b| b.name.as_str())
            .collect();
        assert_eq!(homes, vec![def.toolset], "{}", def.name);
    }
    // Nothing is orphaned: `full` reaches every tool, and every basic toolset is reached by it.
    let full = ts.resolve(&["full"]).unwrap();
    assert_eq!(full.len(), 116);
    for b in &basics {
        assert!(
            b.tools.iter().all(|t| full.contains(t)),
            "basic toolset {} is not reachable from full",
            b.name
        );
    }
}

#[test]
fn composites_match_the_catalog_and_all_resolve() {
    let cat = catalog();
    let ours: BTreeMap<&str, Vec<&str>> = COMPOSITES
        .iter()
        .map(|(n, inc)| (*n, inc.to_vec()))
        .collect();
    let theirs: BTreeMap<&str, Vec<&str>> = cat
        .composite
        .iter()
        .map(|(n, c)| (n.as_str(), c.includes.iter().map(String::as_str).collect()))
        .collect();
    assert_eq!(ours, theirs);
    let reg = registry();
    let ts = Toolsets::new(&reg, &BTreeMap::new()).unwrap();
    ts.validate().unwrap();
    assert_eq!(ts.resolve(&["edge"]).unwrap().len(), 41);
    assert_eq!(ts.resolve(&["hardware"]).unwrap().len(), 31);
}

#[test]
fn platform_defaults_match_the_catalog() {
    let cat = catalog();
    for (platform, sets) in &cat.platform {
        let ours: Vec<&str> = if platform == "default" {
            OTHER_PLATFORMS.to_vec()
        } else {
            PLATFORM_DEFAULTS
                .iter()
                .find(|(p, _)| p == platform)
                .map(|(_, s)| s.to_vec())
                .unwrap_or_else(|| panic!("platform {platform} missing"))
        };
        assert_eq!(ours, *sets, "platform {platform}");
    }
}

#[test]
fn every_schema_is_a_compilable_object_schema_and_every_description_is_written() {
    for def in registry() {
        let s = def;
        let schema: serde_json::Value = serde_json::from_str(s.params)
            .unwrap_or_else(|e| panic!("{}: schema is not JSON: {e}", s.name));
        assert_eq!(schema["type"], "object", "{}: not an object schema", s.name);
        jsonschema::validator_for(&schema)
            .unwrap_or_else(|e| panic!("{}: schema does not compile: {e}", s.name));
        assert!(!s.description.is_empty(), "{}: no description", s.name);
        assert!(
            s.description.len() <= 300,
            "{}: description too long for the prompt",
            s.name
        );
    }
}

#[test]
fn minimal_is_exactly_the_seven_core_tools() {
    let reg = registry();
    let owned = covo::profile::resolve(&reg, "minimal", &BTreeMap::new()).unwrap();
    let names: Vec<&str> = owned.tools.iter().map(|t| t.name).collect();
    assert_eq!(
        names,
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
