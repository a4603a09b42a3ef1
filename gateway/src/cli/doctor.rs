//! `covo doctor`: prints each check of `crate::doctor` as a line and exits 1 when one failed.

use crate::config::{Config, ConfigError};
use crate::doctor::{model_check, Check, Doctor, Status};
use crate::llm::{ChatModel, HttpModel, Provider};
use std::path::Path;
use std::process::ExitCode;

/// Runs the checks; `offline` skips the broker and the model.
pub fn run(
    config: Result<Config, ConfigError>,
    root: &Path,
    offline: bool,
) -> anyhow::Result<ExitCode> {
    let mut checks = Vec::new();
    let config = match config {
        Ok(c) => {
            let from = c
                .source
                .as_ref()
                .map_or("built-in defaults (no covo.toml)".to_string(), |p| {
                    p.display().to_string()
                });
            checks.push(Check {
                status: Status::Ok,
                topic: "config".into(),
                message: from,
                fix: None,
            });
            c
        }
        Err(e) => {
            checks.push(Check {
                status: Status::Fail,
                topic: "config".into(),
                message: e.to_string(),
                fix: Some("correct the file (docs/config.md lists every key); the checks below use the defaults".into()),
            });
            Config::default()
        }
    };
    let d = Doctor {
        root: root.to_path_buf(),
        config: &config,
        now: std::time::SystemTime::now(),
    };
    checks.extend(d.local_checks());
    if !offline {
        checks.push(d.broker());
        let env = |k: &str| std::env::var(k).ok();
        let model: Option<Box<dyn ChatModel>> = Provider::resolve(&config.llm, &env)
            .and_then(|p| HttpModel::new(p).ok())
            .map(|m| Box::new(m) as Box<dyn ChatModel>);
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?;
        checks.push(rt.block_on(model_check(model.as_deref(), &crate::llm::local::addrs())));
    }
    let mut failed = 0;
    for c in &checks {
        println!("{c}");
        failed += usize::from(c.status == Status::Fail);
    }
    let warned = checks.iter().filter(|c| c.status == Status::Warn).count();
    println!(
        "{} checks: {failed} failed, {warned} warnings",
        checks.len()
    );
    Ok(if failed > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
