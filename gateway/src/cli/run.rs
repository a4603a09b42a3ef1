//! `covo run`: the gateway daemon (see `crate::daemon`). Ctrl-C or SIGTERM stop it cleanly: it
//! publishes `offline` on its status topic and disconnects, so the broker does not send the Will.

use crate::runtime::Runtime;
use std::process::ExitCode;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// `covo run`'s MCP endpoint (`[mcp] bind`).
#[cfg(feature = "mcp")]
pub use super::mcp::Http as McpHttp;
/// Without the `mcp` feature there is no MCP endpoint.
#[cfg(not(feature = "mcp"))]
pub type McpHttp = std::convert::Infallible;

/// Runs `covo run` until Ctrl-C or SIGTERM, with MCP over HTTP when `mcp` is given.
pub fn run(rt: Runtime, mcp: Option<McpHttp>) -> anyhow::Result<ExitCode> {
    let rt = Arc::new(rt);
    let model = super::chat::model(&rt);
    // One thread runs the loop; blocking work (tools, SQLite, the peer link) goes to a pool of
    // at most BLOCKING_THREADS threads, which exit after 2 s idle (the periodic sampling and
    // checks wake idle threads in turn, so a longer keep-alive kept a burst's threads for
    // minutes), so an idle daemon keeps only the loop's and the MQTT driver's threads.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(crate::daemon::BLOCKING_THREADS)
        .thread_keep_alive(std::time::Duration::from_secs(2))
        .build()?;
    let served = runtime.block_on(async move {
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
        #[cfg(feature = "mcp")]
        if let Some(http) = mcp {
            http.start(stop.clone()).await?;
        }
        #[cfg(not(feature = "mcp"))]
        let _ = mcp;
        crate::daemon::serve(rt, model, stop).await
    });
    // A tool still running on the blocking pool (a long wait) does not hold the exit up for
    // more than a few seconds.
    runtime.shutdown_timeout(std::time::Duration::from_secs(3));
    served?;
    Ok(ExitCode::SUCCESS)
}
