//! The token budget of the gateway's tool payload: the 40 `edge` tools, rendered exactly as one
//! model call carries them, must fit in 3,000 o200k_base tokens. Prints the figures, and the
//! payload of each platform's default toolsets (tests/bench/report.sh puts them in
//! docs/benchmarks.md).

use covo::plan::{plan, render, Format};
use covo::spec::Availability;
use covo::toolset::Toolsets;
use std::collections::BTreeMap;

fn edge_payload(format: Format) -> (usize, String) {
    let reg: Vec<_> = covo_core::catalog::all().collect();
    let owned = covo::profile::resolve(&reg, "full", &BTreeMap::new()).unwrap();
    let ts = Toolsets::new(&reg, &BTreeMap::new()).unwrap();
    // Every edge tool as if its executor had landed: the budget is for the finished product.
    let p = plan(&owned, &ts, &["edge".to_string()], &|_| Availability::yes()).unwrap();
    (p.visible.len(), render(&p.visible, format).to_string())
}

#[test]
fn the_gateway_payload_of_forty_one_edge_tools_fits_in_3000_tokens() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let (n, openai) = edge_payload(Format::Openai);
    let (_, anthropic) = edge_payload(Format::Anthropic);
    let t_openai = bpe.encode_with_special_tokens(&openai).len();
    let t_anthropic = bpe.encode_with_special_tokens(&anthropic).len();
    println!("edge payload: {n} tools, {t_openai} o200k tokens (openai), {t_anthropic} (anthropic), {} bytes", openai.len());
    assert_eq!(n, 41);
    assert!(t_openai <= 3000, "{t_openai} tokens");
    assert!(t_anthropic <= 3000, "{t_anthropic} tokens");
}

#[test]
fn per_tool_token_costs_are_printed_for_tuning() {
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let reg: Vec<_> = covo_core::catalog::all().collect();
    let mut rows: Vec<(usize, &str)> = reg
        .iter()
        .map(|t| {
            let one = render(&[t], Format::Openai).to_string();
            (bpe.encode_with_special_tokens(&one).len(), t.name)
        })
        .collect();
    rows.sort();
    for (n, name) in rows.iter().rev().take(10) {
        println!("{n:>5}  {name}");
    }
    assert!(rows.iter().all(|(n, _)| *n > 10));
}

#[test]
fn prompt_tokens_per_platform_are_printed() {
    use covo::toolset::{OTHER_PLATFORMS, PLATFORM_DEFAULTS};
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let reg: Vec<_> = covo_core::catalog::all().collect();
    let owned = covo::profile::resolve(&reg, "full", &BTreeMap::new()).unwrap();
    let ts = Toolsets::new(&reg, &BTreeMap::new()).unwrap();
    let mut platforms: Vec<(&str, &[&str])> = PLATFORM_DEFAULTS.to_vec();
    platforms.push(("any other", OTHER_PLATFORMS));
    let mut rows = Vec::new();
    for (platform, sets) in platforms {
        let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
        let p = plan(&owned, &ts, &sets, &|_| Availability::yes()).unwrap();
        let openai = render(&p.visible, Format::Openai).to_string();
        let anthropic = render(&p.visible, Format::Anthropic).to_string();
        let (t_o, t_a) = (
            bpe.encode_with_special_tokens(&openai).len(),
            bpe.encode_with_special_tokens(&anthropic).len(),
        );
        println!(
            "platform {platform} ({}): {} tools, {t_o} o200k tokens (openai), {t_a} (anthropic), {} bytes",
            sets.join("+"),
            p.visible.len(),
            openai.len()
        );
        rows.push((platform, p.visible.len(), t_o));
    }
    let full = rows.last().unwrap().2;
    assert!(
        rows.iter().all(|(_, n, t)| *n > 0 && *t > 0 && *t <= full),
        "{rows:?}"
    );
    assert_eq!(rows[0], ("gateway", 41, rows[0].2), "{rows:?}");
}

/// `tools/list` of the default MCP server (`covo mcp`: the `edge` profile, the `gateway`
/// platform's toolsets, the discovery tools; on the sim board) as the wire carries it, with
/// titles, schemas and annotations: within the same 3,000 o200k tokens as the gateway payload.
#[test]
fn the_default_mcp_tools_list_fits_in_3000_tokens() {
    use covo::plan::Selection;
    let home = tempfile_home();
    let mut opts = covo::tools::options(covo::config::Config::default());
    opts.profile = Some("edge".into());
    opts.home = Some(home.clone());
    let selection = Selection::Platform("gateway".into());
    opts.selection = Some(selection.clone());
    let rt = std::sync::Arc::new(covo::runtime::Runtime::new(opts).unwrap());
    let shared = covo::mcp::Shared::new(rt, selection, Vec::new());
    let tools = shared.tools();
    let wire = serde_json::json!({ "tools": tools }).to_string();
    let bpe = tiktoken_rs::o200k_base().unwrap();
    let n = bpe.encode_with_special_tokens(&wire).len();
    println!(
        "MCP tools/list: {} tools, {n} o200k tokens, {} bytes",
        tools.len(),
        wire.len()
    );
    assert!(wire.contains("\"readOnlyHint\":true") && wire.contains("tool_search"));
    assert!(n <= 3000, "{n} tokens");
    let _ = std::fs::remove_dir_all(home);
}

fn tempfile_home() -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("covo-mcp-budget-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}
