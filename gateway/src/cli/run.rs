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
    // Sockets must never take the descriptors the store and the buses need (`crate::fds`).
    let nofile = crate::fds::raise();
    tracing::debug!(?nofile, "open-file limit");
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
    let web = web_settings(&rt)?;
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
        let samples = serve_web(web, &rt, &model, &stop).await?;
        let telegram = start_telegram(&rt, &model, &stop);
        let served = crate::daemon::serve_with(rt, model, stop, samples).await;
        if let Some(t) = telegram {
            // It stops with `stop`, letting turns in flight send what they have.
            let _ = tokio::time::timeout(std::time::Duration::from_secs(8), t).await;
        }
        served
    });
    // A tool still running on the blocking pool (a long wait) does not hold the exit up for
    // more than a few seconds.
    runtime.shutdown_timeout(std::time::Duration::from_secs(3));
    served?;
    Ok(ExitCode::SUCCESS)
}

/// Starts the Telegram bot beside the daemon's loop when `[telegram]` is set.
#[cfg(feature = "telegram")]
fn start_telegram(
    rt: &Arc<Runtime>,
    model: &Option<Arc<dyn crate::llm::ChatModel>>,
    stop: &CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    rt.config().telegram.as_ref()?;
    let (rt, model, stop) = (rt.clone(), model.clone(), stop.clone());
    Some(tokio::spawn(async move {
        if let Err(e) = crate::telegram::serve(rt, model, stop).await {
            eprintln!("covo run: Telegram is off: {e}");
        }
    }))
}

/// This build has no Telegram bot: say so when `[telegram]` asks for one.
#[cfg(not(feature = "telegram"))]
fn start_telegram(
    rt: &Arc<Runtime>,
    _model: &Option<Arc<dyn crate::llm::ChatModel>>,
    _stop: &CancellationToken,
) -> Option<tokio::task::JoinHandle<()>> {
    if rt.config().telegram.is_some() {
        eprintln!(
            "covo run: [telegram] is set, but this covo was built without the `telegram` feature"
        );
    }
    None
}

/// The dashboard's settings (`[web]`), checked before anything starts: a non-loopback bind
/// without a token refuses to start `covo run`.
#[cfg(feature = "web")]
fn web_settings(rt: &Runtime) -> anyhow::Result<Option<crate::web::Settings>> {
    let idle = std::time::Duration::from_secs(
        rt.config()
            .run
            .session_idle_secs
            .unwrap_or(crate::daemon::DEFAULT_SESSION_IDLE_SECS),
    );
    let env = std::env::var("COVO_WEB_TOKEN").ok();
    Ok(crate::web::Settings::from_config(
        &rt.config().web,
        env,
        idle,
    )?)
}

#[cfg(not(feature = "web"))]
fn web_settings(rt: &Runtime) -> anyhow::Result<Option<()>> {
    if rt.config().web.bind.is_some() {
        eprintln!("covo run: [web] is set, but this covo was built without the `web` feature");
    }
    Ok(None)
}

/// Starts the dashboard beside the daemon's loop; returns where the sampler sends samples.
#[cfg(feature = "web")]
async fn serve_web(
    web: Option<crate::web::Settings>,
    rt: &Arc<Runtime>,
    model: &Option<Arc<dyn crate::llm::ChatModel>>,
    stop: &CancellationToken,
) -> anyhow::Result<Option<crate::daemon::SampleTap>> {
    let Some(settings) = web else {
        return Ok(None);
    };
    let auth = if settings.token.is_some() {
        "token required"
    } else {
        "no token: loopback only"
    };
    let d = crate::web::Dashboard::bind(settings, rt.clone(), model.clone(), stop.clone()).await?;
    if let Some(a) = d.local_addr() {
        eprintln!("covo run: dashboard on http://{a}/ ({auth})");
    }
    let samples = d.samples();
    tokio::spawn(d.serve());
    Ok(Some(samples))
}

#[cfg(not(feature = "web"))]
async fn serve_web(
    _: Option<()>,
    _: &Arc<Runtime>,
    _: &Option<Arc<dyn crate::llm::ChatModel>>,
    _: &CancellationToken,
) -> anyhow::Result<Option<crate::daemon::SampleTap>> {
    Ok(None)
}
