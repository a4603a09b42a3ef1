//! What `covo --version` prints beyond the crate version: the commit it was built from
//! (`git describe`), the target triple and the enabled cargo features. Only std and the `git`
//! command; a build outside a git checkout (a source tarball) says `unknown`.

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

fn main() {
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
            println!(
                "cargo:rerun-if-changed={}",
                PathBuf::from(common).join(head).display()
            );
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
