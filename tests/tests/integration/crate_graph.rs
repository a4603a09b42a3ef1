//! The crate boundaries are the architecture (ARCHITECTURE.md, "Crates and layers"): what each
//! crate may link is checked here against the resolved dependency graph (`cargo tree`), so a
//! new dependency that crosses a boundary fails CI instead of growing the Pi's binary.

use std::collections::BTreeSet;
use std::process::Command;

/// Every crate `package` links in a normal (non-dev, non-build) build, by name.
fn normal_deps(package: &str) -> BTreeSet<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-e",
            "normal",
            "--prefix",
            "none",
            "-f",
            "{p}",
            "-p",
        ])
        .arg(package)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let deps: BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        deps.contains(package),
        "{package} missing from its own tree"
    );
    deps
}

fn assert_none(package: &str, deps: &BTreeSet<String>, forbidden: &[&str], why: &str) {
    let found: Vec<&String> = deps
        .iter()
        .filter(|d| {
            forbidden
                .iter()
                .any(|f| d.as_str() == *f || (f.ends_with('*') && d.starts_with(&f[..f.len() - 1])))
        })
        .collect();
    assert!(found.is_empty(), "{package} links {found:?}: {why}");
}

#[test]
fn the_gateway_links_none_of_the_peer_or_its_backends() {
    let deps = normal_deps("covo-gateway");
    assert_none(
        "covo-gateway",
        &deps,
        &[
            "covo-peer",
            "tree-sitter*",
            "plotters*",
            "html2text",
            "image",
        ],
        "the peer's backends run in the cloud, not on a Pi Zero",
    );
    // It does speak the shared contract and the pure core.
    assert!(deps.contains("covo-wire") && deps.contains("covo-core"));
}

#[test]
fn the_core_is_pure_no_runtime_store_mqtt_or_hardware() {
    let deps = normal_deps("covo-core");
    assert_none(
        "covo-core",
        &deps,
        &[
            "covo-gateway",
            "covo-wire",
            "covo-peer",
            "covo-hal-tools",
            "rusqlite",
            "rumqttc",
            "tokio",
            "reqwest",
            "linux-embedded-hal",
            "gpiocdev",
            "jsonschema",
        ],
        "the core decides what the model sees without I/O",
    );
}

#[test]
fn the_wire_contract_depends_on_neither_side() {
    let deps = normal_deps("covo-wire");
    assert_none(
        "covo-wire",
        &deps,
        &[
            "covo-gateway",
            "covo-peer",
            "covo-hal-tools",
            "rusqlite",
            "reqwest",
        ],
        "both sides depend on the contract, never the other way",
    );
}

#[test]
fn the_peer_is_where_the_backends_live() {
    let deps = normal_deps("covo-peer");
    // With its default features the peer has the code graph, plots and HTML reduction.
    for d in [
        "tree-sitter",
        "plotters",
        "html2text",
        "covo-wire",
        "covo-core",
    ] {
        assert!(deps.contains(d), "covo-peer should link {d}");
    }
}
