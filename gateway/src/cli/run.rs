//! `covo run`: the gateway daemon (see `covo::daemon`). Ctrl-C or SIGTERM stop it cleanly: it
//! publishes `offline` on its status topic and disconnects, so the broker does not send the Will.

use covo::runtime::Runtime;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Runs `covo run` until Ctrl-C or SIGTERM.
pub fn run(rt: Runtime) -> anyhow::Result<ExitCode> {
    let rt = Arc::new(rt);
    let model = super::chat::model(&rt);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        let stop = CancellationToken::new();
        let s = stop.clone();
        tokio::spawn(async move {
            let mut term =
                tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = async {
                    match term.as_mut() {
                        Some(t) => { t.recv().await; }
                        None => std::future::pending::<()>().await,
                    }
                } => {}
            }
            eprintln!("covo run: stopping");
            s.cancel();
        });
        covo::daemon::serve(rt, model, stop).await
    })?;
    Ok(ExitCode::SUCCESS)
}
