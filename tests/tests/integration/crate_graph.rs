//! The crate boundaries are the architecture (ARCHITECTURE.md, "Crates and layers"): what each
//! crate may link is checked here against the resolved dependency graph (`cargo tree`), so a
//! new dependency that crosses a boundary fails CI instead of growing the Pi's binary.

use std::collections::BTreeSet;
use std::process::Command;

/// `cargo tree -p package` with `args`, one line per crate as `format` prints it (no prefix).
fn tree(package: &str, args: &[&str], format: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["tree", "--offline", "--prefix", "none", "-f", format])
        .args(args)
        .arg("-p")
        .arg(package)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree -p {package} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// The crate names in `cargo tree -p package` with `args`.
fn names(package: &str, args: &[&str]) -> BTreeSet<String> {
    let deps: BTreeSet<String> = tree(package, args, "{p}")
        .iter()
        .filter_map(|l| l.split_whitespace().next())
        .map(str::to_string)
        .collect();
    assert!(
        deps.contains(package),
        "{package} missing from its own tree"
    );
    deps
}

/// Every crate `package` links in a normal (non-dev, non-build) build, by name.
fn normal_deps(package: &str) -> BTreeSet<String> {
    names(package, &["-e", "normal"])
}

/// The features of crate `dep` enabled in `package`'s normal build (default features on).
fn features_of(package: &str, dep: &str) -> BTreeSet<String> {
    let lines = tree(package, &["-e", "normal"], "{p}|{f}");
    let mut found = None;
    for l in &lines {
        let Some((p, f)) = l.split_once('|') else {
            continue;
        };
        if p.split_whitespace().next() != Some(dep) {
            continue;
        }
        // A crate printed again is marked " (*)"; its features are the same.
        let f: BTreeSet<String> = f
            .trim_end_matches(" (*)")
            .split(',')
            .map(str::trim)
            .filter(|x| !x.is_empty())
            .map(str::to_string)
            .collect();
        found = Some(found.map_or(f.clone(), |g: BTreeSet<String>| &g | &f));
    }
    found.unwrap_or_else(|| panic!("{dep} is not in {package}'s tree: {lines:?}"))
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

#[test]
fn the_peer_links_none_of_the_gateways_channels() {
    let deps = normal_deps("covo-peer");
    assert_none(
        "covo-peer",
        &deps,
        &["rmcp", "axum", "axum-core", "process-wrap"],
        "the peer runs no MCP server or client and no web dashboard: covo-gateway goes in \
         with default-features = false",
    );
    let features = features_of("covo-peer", "covo-gateway");
    let channels: Vec<&String> = features
        .iter()
        .filter(|f| ["default", "mcp", "telegram", "web"].contains(&f.as_str()))
        .collect();
    assert!(
        channels.is_empty(),
        "covo-peer enables covo-gateway's {channels:?} (all: {features:?}): the peer runs none \
         of the gateway's channels"
    );
}

#[test]
fn the_peer_links_no_hal_drivers_or_linux_backends() {
    let deps = normal_deps("covo-peer");
    assert_none(
        "covo-peer",
        &deps,
        &[
            "covo-hal-tools",
            "covo-mcu-core",
            "embedded-hal*",
            "linux-embedded-hal",
            "gpiocdev*",
            "serialport",
            "i2cdev",
            "spidev",
            "bme280",
            "bh1750",
            "sht4x",
            "embedded-sht3x",
            "aht20-driver",
            "scd4x",
            "ads1x1x",
            "ssd1306",
            "embedded-graphics*",
        ],
        "the peer runs no hardware: covo-gateway goes in without its `hal` feature, and the \
         pipeline's board types come from covo-board",
    );
    let features = features_of("covo-peer", "covo-gateway");
    assert!(
        !features.contains("hal"),
        "covo-peer enables covo-gateway's `hal` feature (all: {features:?})"
    );
    // The board definitions the pipeline parses against are still there, without a HAL.
    assert!(
        deps.contains("covo-board"),
        "covo-peer should link covo-board"
    );
    let board = normal_deps("covo-board");
    assert_none(
        "covo-board",
        &board,
        &[
            "covo-hal-tools",
            "embedded-hal*",
            "linux-embedded-hal",
            "gpiocdev*",
            "serialport",
        ],
        "covo-board is the HAL-free half of the hardware crates",
    );
}

#[test]
fn the_gateway_links_the_hal_by_default() {
    let deps = normal_deps("covo-gateway");
    for d in ["covo-hal-tools", "covo-board", "embedded-hal", "ssd1306"] {
        assert!(
            deps.contains(d),
            "covo-gateway should link {d} with its default features"
        );
    }
}

#[test]
fn rumqttc_is_named_only_by_the_wire() {
    // Direct dependencies of every kind: the gateway and the peer (and their tests) drive MQTT
    // through covo-wire's types.
    for package in ["covo-gateway", "covo-peer"] {
        let direct = names(package, &["--depth", "1", "-e", "normal,build,dev"]);
        assert_none(
            package,
            &direct,
            &["rumqttc"],
            "rumqttc is named only inside covo-wire (covo_wire::mqtt)",
        );
    }
    assert!(names("covo-wire", &["--depth", "1", "-e", "normal"]).contains("rumqttc"));
}

/// Every `rumqttc` entry in `deps` (a `[dependencies]`-like table) is `workspace = true`.
fn rumqttc_entries(manifest: &str, table: &toml::Table, prefix: &str, found: &mut Vec<String>) {
    for kind in ["dependencies", "dev-dependencies", "build-dependencies"] {
        let Some(deps) = table.get(kind).and_then(toml::Value::as_table) else {
            continue;
        };
        for (name, spec) in deps {
            let package = spec
                .get("package")
                .and_then(toml::Value::as_str)
                .unwrap_or(name);
            if package != "rumqttc" {
                continue;
            }
            let inherited = spec.get("workspace").and_then(toml::Value::as_bool) == Some(true);
            assert!(
                inherited,
                "{manifest} [{prefix}{kind}] pins rumqttc itself ({spec}): use \
                 `rumqttc.workspace = true`; the version and features are set once, in the \
                 workspace's Cargo.toml"
            );
            found.push(format!("{manifest} [{prefix}{kind}]"));
        }
    }
}

#[test]
fn the_workspace_pins_rumqttc_in_one_place() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |p: &std::path::Path| -> toml::Table {
        let text = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
        text.parse()
            .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    };
    let workspace = read(&root.join("Cargo.toml"));
    let ws = workspace["workspace"].as_table().expect("[workspace]");
    assert!(
        ws["dependencies"].get("rumqttc").is_some(),
        "the workspace's Cargo.toml pins rumqttc in [workspace.dependencies]"
    );
    let mut found = Vec::new();
    for member in ws["members"].as_array().expect("members") {
        let dir = member.as_str().expect("a member path");
        let manifest = format!("{dir}/Cargo.toml");
        let t = read(&root.join(&manifest));
        rumqttc_entries(&manifest, &t, "", &mut found);
        for (target, spec) in t
            .get("target")
            .and_then(toml::Value::as_table)
            .into_iter()
            .flatten()
        {
            if let Some(spec) = spec.as_table() {
                rumqttc_entries(&manifest, spec, &format!("target.{target}."), &mut found);
            }
        }
    }
    // Only the wire (and the tests crate, for its raw test clients) names it at all.
    let users: BTreeSet<&str> = found.iter().filter_map(|f| f.split('/').next()).collect();
    assert_eq!(
        users,
        BTreeSet::from(["tests", "wire"]),
        "members that depend on rumqttc: {found:?}"
    );
}
