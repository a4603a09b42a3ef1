//! What `covo --version` prints beyond the crate version: the commit it was built from
//! (`git describe`), the target triple and the enabled cargo features. Only std and the `git`
//! command; a build outside a git checkout (a source tarball) says `unknown`.
//!
//! It also links the static edge build with its hot code first (`link_order`).

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// The edge build of `covo` on x86_64 musl is linked by rust-lld (the toolchain's own, through
/// its `gcc-ld` wrapper) with `link/<target>.order`: the functions `covo run` and the cold CLI
/// paths execute, as `tests/bench/link-order.sh` recorded them under callgrind, placed first,
/// `covo run`'s idle ahead of its start-up. A static binary's code is file-backed memory that
/// the kernel maps in 64 KiB windows around each page touched; with the hot code packed together
/// `covo run` keeps far less of it resident (`tests/bench/run-rss.sh`), and once it has unmapped
/// its start-up's code (`src/trim.rs`) only the idle's few windows come back. A name the file
/// lists that the build lacks is skipped, so a stale file costs memory, never correctness. `COVO_LINK_ORDER=off` links without the file and
/// `COVO_LINK_MAP=path` writes the linker's map (both for link-order.sh).
///
/// The edge profile (the one with opt-level "z") is stripped here, by the linker, not by the
/// profile's `strip`: that setting changes every Rust symbol's hash, so a build with symbols for
/// callgrind would name other functions than the shipped one. `COVO_LINK_KEEP_SYMBOLS=1` keeps
/// them (link-order.sh) in an otherwise identical build.
fn link_order() {
    let target = std::env::var("TARGET").unwrap_or_default();
    let order = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default())
        .join("link")
        .join(format!("{target}.order"));
    // Cargo reruns a build script every time a rerun-if-changed path is missing, which made
    // every Pi build (no order file) relink from scratch at each `cargo build`; watch the
    // folder instead, which also notices a new order file.
    if order.exists() {
        println!("cargo:rerun-if-changed={}", order.display());
    } else if let Some(dir) = order.parent() {
        println!("cargo:rerun-if-changed={}", dir.display());
    }
    println!("cargo:rerun-if-env-changed=COVO_LINK_ORDER");
    println!("cargo:rerun-if-env-changed=COVO_LINK_MAP");
    println!("cargo:rerun-if-env-changed=COVO_LINK_KEEP_SYMBOLS");
    if std::env::var("OPT_LEVEL").as_deref() == Ok("z")
        && std::env::var("COVO_LINK_KEEP_SYMBOLS").as_deref() != Ok("1")
    {
        println!("cargo:rustc-link-arg-bin=covo=-Wl,--strip-all");
    }
    if !order.exists() {
        return;
    }
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let host = std::env::var("HOST").unwrap_or_default();
    let sysroot = Command::new(rustc)
        .args(["--print", "sysroot"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| PathBuf::from(s.trim()));
    let Some(gcc_ld) = sysroot.map(|s| s.join("lib/rustlib").join(host).join("bin/gcc-ld")) else {
        println!(
            "cargo:warning=no rustc sysroot: {} not applied",
            order.display()
        );
        return;
    };
    if !gcc_ld.join("ld.lld").exists() {
        println!(
            "cargo:warning=rust-lld is missing from {}: {} not applied",
            gcc_ld.display(),
            order.display()
        );
        return;
    }
    let mut args = vec![format!("-B{}", gcc_ld.display()), "-fuse-ld=lld".into()];
    if std::env::var("COVO_LINK_ORDER").as_deref() != Ok("off") {
        args.push(format!("-Wl,--symbol-ordering-file={}", order.display()));
        args.push("-Wl,--no-warn-symbol-ordering".into());
    }
    if let Ok(map) = std::env::var("COVO_LINK_MAP") {
        args.push(format!("-Wl,-Map={map}"));
    }
    for arg in args {
        println!("cargo:rustc-link-arg-bin=covo={arg}");
    }
}

/// The edge build's linker script (only zig's `-T` reaches the Pi builds' linker, and zig keeps
/// the last `-T` it is given, so it is one script).
///
/// The edge build (opt-level "z", `panic = "abort"`) carries no unwind tables: nothing in it
/// unwinds, and `.eh_frame` with its index were 1.6 MB of the aarch64 binary (a sixth of it).
/// rustc keeps them even with `-C force-unwind-tables=no`, because the precompiled standard
/// library asks for them, so the linker drops them: a `/DISCARD/` script inserted into its
/// default layout, and no `.eh_frame_hdr`. The cost: a panic prints its message and location
/// but no backtrace (`RUST_BACKTRACE` finds no frames). `COVO_LINK_KEEP_UNWIND=1` keeps them.
/// The script also places the hot code first where `link_order` cannot (`hot_text_by_script`).
fn edge_link_script() {
    println!("cargo:rerun-if-env-changed=COVO_LINK_KEEP_UNWIND");
    // The edge profile is the one with opt-level "z" (a build script sees the profile's
    // opt-level, but not its panic strategy: CARGO_CFG_PANIC is the target's default).
    if std::env::var("OPT_LEVEL").as_deref() != Ok("z") {
        return;
    }
    let Ok(out) = std::env::var("OUT_DIR") else {
        return;
    };
    let script = PathBuf::from(out).join("edge-link.ld");
    let mut text = String::new();
    let discard = std::env::var("COVO_LINK_KEEP_UNWIND").as_deref() != Ok("1");
    if discard {
        // 32-bit ARM unwinds through its own tables (EHABI): `.ARM.exidx`, an entry for every
        // function, and `.ARM.extab`; 185 KB of the ARMv6 binary.
        let arm = if std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() == Ok("arm") {
            " *(.ARM.exidx*) *(.ARM.extab*)"
        } else {
            ""
        };
        text.push_str(&format!(
            "SECTIONS {{ /DISCARD/ : {{ *(.eh_frame) *(.eh_frame_hdr){arm} }} }} INSERT AFTER .text;\n"
        ));
    }
    text.push_str(&hot_text_by_script());
    if text.is_empty() {
        return;
    }
    if std::fs::write(&script, text).is_err() {
        println!("cargo:warning=could not write {}", script.display());
        return;
    }
    if discard {
        println!("cargo:rustc-link-arg-bin=covo=-Wl,--no-eh-frame-hdr");
    }
    println!("cargo:rustc-link-arg-bin=covo=-Wl,-T,{}", script.display());
}

/// A target without its own order file (the Pi builds, linked by zig, which takes no
/// `--symbol-ordering-file`) gets x86_64's order as linker-script input-section patterns, each
/// function's hash wildcarded (`_ZN…17h*E`: the hashes differ by target), in a `.text.hot`
/// output section placed before `.text`. A wildcarded name also takes in every other
/// instantiation of a generic function (the legacy mangling tells them apart by the hash
/// alone), so `.text.hot` is larger than the code that ran (2.2 of 6.4 MB on aarch64); still,
/// the aarch64 build idles in the emulated Pi 3 with 5.7 MiB of its binary mapped instead of
/// 6.5 (tests/pi, `FIGURE rss_idle_kib` minus `anon_kib`). Nothing is ordered with `COVO_LINK_ORDER=off`.
fn hot_text_by_script() -> String {
    let target = std::env::var("TARGET").unwrap_or_default();
    let dir = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join("link");
    if dir.join(format!("{target}.order")).exists()
        || std::env::var("COVO_LINK_ORDER").as_deref() == Ok("off")
    {
        return String::new();
    }
    let Ok(order) = std::fs::read_to_string(dir.join("x86_64-unknown-linux-musl.order")) else {
        return String::new();
    };
    let mut seen = std::collections::HashSet::new();
    let mut out = String::from("SECTIONS { .text.hot : {");
    for name in order.lines() {
        if name.is_empty()
            || name.contains(|c: char| !(c.is_ascii_alphanumeric() || "_$.".contains(c)))
        {
            continue;
        }
        let pattern = match name
            .strip_suffix('E')
            .and_then(|n| n.len().checked_sub(19).map(|i| (n, i)))
        {
            Some((n, i)) if name.starts_with("_ZN") && n[i..].starts_with("17h") => {
                format!("{}17h*E", &n[..i])
            }
            _ => name.to_string(),
        };
        if seen.insert(pattern.clone()) {
            out.push_str(&format!(" *(.text.{pattern})"));
        }
    }
    out.push_str(" } } INSERT BEFORE .text;\n");
    out
}

fn main() {
    link_order();
    edge_link_script();
    let describe = git(&["describe", "--always", "--tags", "--dirty"]);
    println!(
        "cargo:rustc-env=COVO_GIT_DESCRIBE={}",
        describe.as_deref().unwrap_or("unknown")
    );
    // Describe again when HEAD moves: HEAD itself (a branch switch) and the branch's ref (a
    // commit). Not the index: `git status` rewrites it, which would rebuild the gateway.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = PathBuf::from(dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        if let (Some(common), Some(head)) = (
            git(&["rev-parse", "--git-common-dir"]),
            git(&["symbolic-ref", "-q", "HEAD"]),
        ) {
            // A packed ref has no file of its own, and a missing path would rerun this
            // script every time: watch packed-refs then.
            let common = PathBuf::from(common);
            let loose = common.join(&head);
            let watched = if loose.exists() {
                loose
            } else {
                common.join("packed-refs")
            };
            if watched.exists() {
                println!("cargo:rerun-if-changed={}", watched.display());
            }
        }
    }
    // And when our sources change, which --dirty also sees (other crates' edits it misses).
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-changed=build.rs");

    println!(
        "cargo:rustc-env=COVO_TARGET={}",
        std::env::var("TARGET").unwrap_or_else(|_| "unknown".into())
    );
    // The build: optimised or not, static or not. Whether it aborts on a panic (the edge
    // profile) is not visible here (CARGO_CFG_PANIC is the target's default, not the
    // profile's): main.rs asks `cfg!(panic)`.
    let env = |k: &str| std::env::var(k).unwrap_or_default();
    let linking = if env("CARGO_CFG_TARGET_FEATURE")
        .split(',')
        .any(|f| f == "crt-static")
    {
        "static"
    } else {
        "dynamic"
    };
    println!("cargo:rustc-env=COVO_PROFILE={}", env("PROFILE"));
    println!("cargo:rustc-env=COVO_LINKING={linking}");
    let mut features: Vec<String> = std::env::vars()
        .filter_map(|(k, _)| {
            k.strip_prefix("CARGO_FEATURE_")
                .map(|f| f.to_lowercase().replace('_', "-"))
        })
        .collect();
    features.sort();
    println!(
        "cargo:rustc-env=COVO_FEATURES={}",
        if features.is_empty() {
            "none".to_string()
        } else {
            features.join(",")
        }
    );
}
